/// What happens to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Runs without asking.
    Allow,
    /// Runs only after a human approves it.
    Ask,
    /// Never runs.
    Deny,
}

impl Decision {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

/// The outcome of [`crate::Policy::check`], with enough context to explain it
/// to the model, to a human asked for approval, and in the audit log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    pub decision: Decision,
    /// One sentence saying why, naming the command or path that decided it.
    pub reason: String,
    /// The configured rule that decided, as written (`terminal(git push*)`),
    /// or a built-in name (`floor`, `mode:workspace-write`, `safe-list`).
    pub rule: Option<String>,
    /// For `ask`: the narrowest rule that, added to `allow`, lets exactly
    /// this call run (`terminal(rm -rf build/)`): what an "always" answer
    /// saves. `None` when no rule can allow it (a command the check cannot
    /// see through, a call an `ask` rule catches).
    pub allow_rule: Option<String>,
    /// For `allow`: whether tool processes of this call must run confined
    /// (Landlock, network per config). Always false for non-process tools.
    pub confine: bool,
    /// For a confined `allow`: the allow rule that let it run grants the
    /// network (`{rule = "…", network = true}`), so it gets the network
    /// even where confined calls get none.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
}
