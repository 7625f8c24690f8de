//! The hook through which every tool call passes before it runs: the
//! permission layer implements [`PermissionGate`], the registry consults it.
//! Calls an `execute_code` script makes go through the same registry, so
//! they meet the same gate.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_sandbox::SandboxPolicy;

use crate::{ElicitAnswer, Elicitation, Tool, ToolContext};

/// What the gate decided for one call.
#[derive(Debug, Clone)]
pub enum GateOutcome {
    /// The call runs; its processes are confined by `sandbox` when set.
    Run { sandbox: Option<Arc<SandboxPolicy>> },
    /// The call does not run; the message is its result for the model
    /// (it begins `denied:`).
    Refuse(String),
}

/// Decides whether a call may run, possibly after asking a human.
pub trait PermissionGate: Send + Sync {
    /// Judges `tool` called with `args` in `ctx`. May wait (for an approval);
    /// must give up when `ctx.cancel` fires.
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        args: &'a serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, GateOutcome>;

    /// Puts a running call's request for input (an MCP server's
    /// elicitation) to the user and waits for the answer; must give up
    /// (cancel) when `ctx.cancel` fires. The default declines at once: a
    /// gate that cannot reach a person has nobody to ask.
    fn elicit<'a>(
        &'a self,
        request: Elicitation,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ElicitAnswer> {
        let _ = (request, ctx);
        Box::pin(std::future::ready(ElicitAnswer::decline()))
    }
}
