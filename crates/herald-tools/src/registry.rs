use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use herald_protocol::{ToolCall, ToolSpec};
use herald_sandbox::{EnvFilter, Redactor};

use crate::{GateOutcome, Tool, ToolContext, ToolResult, truncate_head_tail, validate_args};

/// A `--toolsets` name that matches no registered toolset.
#[derive(Debug, thiserror::Error)]
#[error("unknown toolset '{name}'; available toolsets: {available}")]
pub struct UnknownToolset {
    pub name: String,
    pub available: String,
}

/// The tools one agent may call, keyed (and therefore sorted) by name so the
/// schema list sent to the model is identical on every request.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    output_limit_chars: usize,
    /// Environment given to tool processes (secrets dropped).
    env: Arc<EnvFilter>,
    /// Removes secret values from every result.
    redactor: Arc<Redactor>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry whose results are cut to `output_limit_chars`.
    pub fn new(output_limit_chars: usize) -> Self {
        Self {
            tools: BTreeMap::new(),
            output_limit_chars,
            env: Arc::default(),
            redactor: Arc::default(),
        }
    }

    /// Sets the environment filter for tool processes and the redactor for
    /// tool output; subagent registries cloned from this one keep them.
    pub fn set_secrets(&mut self, env: Arc<EnvFilter>, redactor: Arc<Redactor>) {
        self.env = env;
        self.redactor = redactor;
    }

    /// The redactor applied to results (also for text that leaves tools
    /// another way, such as logs).
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// Adds (or replaces) a tool.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name.clone(), tool);
    }

    /// Looks a tool up by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Tool names in sorted order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Every toolset that has at least one tool.
    pub fn toolsets(&self) -> BTreeSet<&'static str> {
        self.tools.values().map(|t| t.toolset()).collect()
    }

    /// Keeps only the tools of the named toolsets. Fails on a name that no
    /// tool belongs to, so a typo does not silently remove every tool.
    pub fn retain_toolsets(&mut self, names: &[String]) -> Result<(), UnknownToolset> {
        let available = self.toolsets();
        for name in names {
            if !available.contains(name.as_str()) {
                return Err(UnknownToolset {
                    name: name.clone(),
                    available: available.iter().copied().collect::<Vec<_>>().join(", "),
                });
            }
        }
        self.tools
            .retain(|_, tool| names.iter().any(|n| n == tool.toolset()));
        Ok(())
    }

    /// Removes a tool by name (used to scope subagents).
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.remove(name)
    }

    /// Schemas for the request, sorted by name (unlisted tools left out).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .values()
            .filter(|t| t.listed())
            .map(|t| t.spec().clone())
            .collect()
    }

    /// True when the call names a known read-only tool.
    pub fn is_read_only(&self, name: &str) -> bool {
        self.tools.get(name).is_some_and(|t| t.read_only())
    }

    /// Runs one call end to end: unknown names, malformed JSON and schema
    /// violations become error results; output is cut to the limit; images
    /// a provider would refuse (not PNG/JPEG/GIF/WebP, bad base64, too
    /// large) are dropped with a note (`herald_protocol::admit_images`).
    ///
    /// With an interception in `ctx` (see [`crate::intercept`]) the call
    /// passes its interceptors first and last; they may rewrite or block it.
    pub async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> ToolResult {
        let Some(interception) = &ctx.interception else {
            return self.execute_checked(call, ctx).await;
        };
        let cwd = ctx.state.cwd();
        interception
            .around(
                &cwd,
                self.is_read_only(&call.name),
                call,
                |effective| async move {
                    let result = self.execute_checked(&effective, ctx).await;
                    (effective, result)
                },
            )
            .await
    }

    /// [`Self::execute`] without the interceptors.
    async fn execute_checked(&self, call: &ToolCall, ctx: &ToolContext) -> ToolResult {
        let Some(tool) = self.tools.get(&call.name) else {
            return ToolResult::error(format!(
                "unknown tool '{}'. Available tools: {}",
                call.name,
                self.names().collect::<Vec<_>>().join(", ")
            ));
        };
        let raw = call.arguments.trim();
        let args: serde_json::Value = if raw.is_empty() {
            serde_json::Value::Object(Default::default())
        } else {
            match serde_json::from_str(raw) {
                Ok(args) => args,
                Err(err) => {
                    return ToolResult::error(format!(
                        "arguments for {} are not valid JSON ({err}). Send a JSON object. {}",
                        call.name,
                        crate::validate::describe_parameters(&tool.spec().parameters)
                    ));
                }
            }
        };
        if let Err(message) = validate_args(&call.name, &tool.spec().parameters, &args) {
            return ToolResult::error(message);
        }
        let mut scoped = ctx.clone();
        scoped.env = Arc::clone(&self.env);
        if let Some(gate) = &ctx.gate {
            match gate.check(tool.as_ref(), &args, ctx).await {
                GateOutcome::Run { sandbox } => scoped.sandbox = sandbox,
                GateOutcome::Refuse(message) => return ToolResult::error(message),
            }
        }
        let mut result = tool.call(args, &scoped).await;
        if let std::borrow::Cow::Owned(clean) = self.redactor.redact(&result.content) {
            result.content = clean;
        }
        if self.output_limit_chars > 0
            && let std::borrow::Cow::Owned(cut) =
                truncate_head_tail(&result.content, self.output_limit_chars)
        {
            result.content = cut;
        }
        // After the cut, so a note about a dropped image is never cut away.
        herald_protocol::admit_images(&mut result.images, &mut result.content);
        result
    }
}
