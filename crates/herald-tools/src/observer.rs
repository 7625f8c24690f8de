//! A hook for tool calls that a tool makes on the agent's behalf (the calls
//! an `execute_code` script sends back to herald). They never enter the
//! model's context, so without this hook they would be invisible: the agent
//! loop installs an observer that turns each one into an event and a stored
//! transcript record.

use std::time::Duration;

/// One finished call made from inside another tool call.
#[derive(Debug, Clone, Copy)]
pub struct NestedCall<'a> {
    /// The id of the outer call (the `execute_code` call) that made it.
    pub parent_call_id: &'a str,
    /// The tool that was asked for (also when it was refused).
    pub name: &'a str,
    /// The JSON arguments as sent.
    pub arguments: &'a str,
    /// Whether the call failed or was refused (not allowed, over the limit).
    pub is_error: bool,
    /// Length in bytes of the text returned to the caller.
    pub output_bytes: u64,
    /// Wall time of the call.
    pub duration: Duration,
}

/// Receives every nested call as it finishes. Implementations must be quick
/// and must not block: they run on the async runtime, once per call.
pub trait CallObserver: Send + Sync {
    /// Called once per nested call, after it finished.
    fn nested_call(&self, call: &NestedCall<'_>);

    /// Called when a running call reports progress (an MCP server's
    /// progress notification); the default ignores it.
    fn progress(&self, _update: &CallProgress<'_>) {}
}

/// Progress reported by a call while it runs.
#[derive(Debug, Clone, Copy)]
pub struct CallProgress<'a> {
    /// The id of the call (as the model sent it).
    pub call_id: &'a str,
    /// The tool's name as the model sees it.
    pub name: &'a str,
    /// Work done so far, in the tool's own unit.
    pub progress: f64,
    /// The total, when the tool knows it.
    pub total: Option<f64>,
    /// What the tool is doing now.
    pub message: Option<&'a str>,
}
