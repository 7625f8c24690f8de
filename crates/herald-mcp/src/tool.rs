//! MCP tools as herald tools.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_protocol::ToolSpec;
use herald_tools::{Tool, ToolContext, ToolResult};

use crate::server::McpServer;

struct McpTool {
    server: Arc<McpServer>,
    /// The tool's name on the server.
    tool: String,
    spec: ToolSpec,
    read_only: bool,
}

/// One herald tool per tool of `server` (in [`McpServer::tools`] order):
/// named `mcp__<server>__<tool>`, in toolset `mcp-<server>`, read-only when
/// the server annotates it `readOnlyHint`. Calls go through
/// [`McpServer::call_for`] with the context's call id and cancel token.
pub fn mcp_tools(server: &Arc<McpServer>) -> Vec<Arc<dyn Tool>> {
    server
        .tools()
        .iter()
        .map(|info| {
            let description = if info.description.trim().is_empty() {
                format!("Tool `{}` of MCP server `{}`.", info.name, info.server)
            } else {
                info.description.clone()
            };
            Arc::new(McpTool {
                server: server.clone(),
                tool: info.name.clone(),
                spec: ToolSpec {
                    name: info.exposed_name.clone(),
                    description,
                    parameters: info.input_schema.clone(),
                },
                read_only: info.read_only_hint,
            }) as Arc<dyn Tool>
        })
        .collect()
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn toolset(&self) -> &'static str {
        self.server.toolset()
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn call<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let result = self
                .server
                .call_for(&ctx.call_id, &self.tool, args, &ctx.cancel)
                .await;
            ToolResult {
                content: result.content,
                is_error: result.is_error,
            }
        })
    }
}
