//! The hook through which every tool call passes before it runs: the
//! permission layer implements [`PermissionGate`], the registry consults it.
//! Calls an `execute_code` script makes go through the same registry, so
//! they meet the same gate.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_sandbox::SandboxPolicy;

use crate::{Tool, ToolContext};

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
}
