//! The permission layer of a session: builds the policy from the
//! configuration, judges every tool call through a [`PermissionGate`] bound
//! to the calling agent, turns `ask` into an `approval.requested` event
//! answered by an operation (or denies it headless, or allows it with
//! `--yolo`), and records every decision in the store.

mod allow_rule;
mod approvals;
mod audit;
mod elicitations;
mod gate;
mod setup;

pub use allow_rule::AllowRule;
pub use approvals::{ApprovalAnswer, PendingApproval};
pub use elicitations::PendingElicitation;
pub use setup::{PermissionSetup, load_permission_setup, tool_sandbox};

pub(crate) use gate::{Isolation, Permissions};

/// What happens to a call the policy says to ask about, and to an MCP
/// server's request for user input (elicitation) during a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalMode {
    /// An `approval.requested` event; the call waits for the answer.
    /// Elicitations are `elicitation.requested` events answered the same
    /// way.
    Ask,
    /// Nobody can answer (`herald run`, chat completions): the call is
    /// denied with a result that says how a user could allow it;
    /// elicitations are declined at once (`by: "headless"`).
    #[default]
    Headless,
    /// `--yolo`: asks are allowed without a prompt (the floor and deny
    /// rules still hold); elicitations are declined as in `Headless`
    /// (nobody is asked anything).
    Yolo,
}

impl ApprovalMode {
    /// The mode of a front end, the one rule every front end applies:
    /// `--yolo` allows what the policy asks about; otherwise whoever can
    /// answer a question can answer an approval request, and a front end
    /// that cannot (a one-shot run, chat completions, the MCP server)
    /// denies it.
    pub fn for_front_end(can_ask: bool, yolo: bool) -> Self {
        if yolo {
            Self::Yolo
        } else if can_ask {
            Self::Ask
        } else {
            Self::Headless
        }
    }
}

/// Judges one call without running it (`herald permissions check`): the
/// session's policy for `settings` (mode, user, project and approved
/// rules), in the settings' working directory.
pub fn check_permission(
    settings: &crate::Settings,
    tool: &str,
    args: &serde_json::Value,
) -> Result<herald_permissions::Verdict, String> {
    let setup = load_permission_setup(settings)?;
    let registry = crate::build_registry(settings, None).map_err(|e| e.to_string())?;
    let permissions = Permissions::new(
        setup,
        ApprovalMode::Headless,
        settings.cwd.clone(),
        settings.config_path.clone(),
        None,
    )?;
    let call = herald_permissions::CallInfo {
        tool,
        args,
        cwd: &settings.cwd,
        read_only: registry.is_read_only(tool),
    };
    Ok(permissions.judge(&call).0)
}

#[cfg(test)]
mod front_end_tests {
    use super::ApprovalMode;

    #[test]
    fn yolo_wins_then_whoever_can_ask_asks() {
        assert_eq!(ApprovalMode::for_front_end(true, true), ApprovalMode::Yolo);
        assert_eq!(ApprovalMode::for_front_end(false, true), ApprovalMode::Yolo);
        assert_eq!(ApprovalMode::for_front_end(true, false), ApprovalMode::Ask);
        assert_eq!(
            ApprovalMode::for_front_end(false, false),
            ApprovalMode::Headless
        );
    }
}
