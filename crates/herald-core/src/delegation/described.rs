//! A tool whose description is extended at run time: `delegate_task` lists
//! the session's agent definitions after its fixed text. Built once per
//! session, so the tool list sent on every request keeps the same bytes.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_protocol::ToolSpec;
use herald_tools::{Tool, ToolContext, ToolResult};

struct Described {
    inner: Arc<dyn Tool>,
    spec: ToolSpec,
}

/// `tool` with `extra` appended to its description (`tool` itself when
/// `extra` is empty).
pub(crate) fn with_description(tool: Arc<dyn Tool>, extra: &str) -> Arc<dyn Tool> {
    if extra.is_empty() {
        return tool;
    }
    let mut spec = tool.spec().clone();
    spec.description.push_str(extra);
    Arc::new(Described { inner: tool, spec })
}

impl Tool for Described {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn toolset(&self) -> &'static str {
        self.inner.toolset()
    }

    fn read_only(&self) -> bool {
        self.inner.read_only()
    }

    fn listed(&self) -> bool {
        self.inner.listed()
    }

    fn call<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        self.inner.call(args, ctx)
    }
}
