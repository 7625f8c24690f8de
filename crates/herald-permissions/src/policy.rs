use std::path::{Path, PathBuf};

use crate::{Decision, Mode, Verdict};

/// Everything a [`Policy`] is built from.
#[derive(Debug, Clone, Default)]
pub struct PolicyConfig {
    pub mode: Mode,
    /// User rules (`~/.herald/config.toml` and approvals saved "always").
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
    /// Project rules (`.herald/permissions.toml`): they may only tighten.
    pub project_ask: Vec<String>,
    pub project_deny: Vec<String>,
    /// Extra directories writable in workspace-write besides the working
    /// directory and temp directories.
    pub writable_roots: Vec<PathBuf>,
    /// The user's home directory (for `~` and credential paths).
    pub home: Option<PathBuf>,
    /// Whether the kernel can confine commands (Landlock). When false, every
    /// non-read-only command asks in workspace-write instead of running
    /// unconfined.
    pub sandbox_available: bool,
    /// Tools (MCP) a configured server marks read-only.
    pub read_only_tools: Vec<String>,
}

/// A rule that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("invalid permission rule '{rule}': {why}")]
pub struct RuleError {
    pub rule: String,
    pub why: String,
}

/// One call to decide on.
#[derive(Debug, Clone, Copy)]
pub struct CallInfo<'a> {
    /// Tool name as the model called it.
    pub tool: &'a str,
    /// Its (already validated) arguments.
    pub args: &'a serde_json::Value,
    /// The calling agent's working directory.
    pub cwd: &'a Path,
    /// Whether the tool declares itself read-only.
    pub read_only: bool,
}

/// The compiled permission policy of one session.
#[derive(Debug, Clone)]
pub struct Policy {
    config: PolicyConfig,
}

impl Policy {
    /// Compiles the rules; fails on the first rule that does not parse.
    pub fn new(config: PolicyConfig) -> Result<Self, RuleError> {
        Ok(Self { config })
    }

    /// The mode this policy applies.
    pub fn mode(&self) -> Mode {
        self.config.mode
    }

    /// Adds an allow rule for the rest of the session (an approval given
    /// "for this session").
    pub fn add_allow(&mut self, rule: &str) -> Result<(), RuleError> {
        self.config.allow.push(rule.to_owned());
        Ok(())
    }

    /// Decides on one call. Pure: touches the filesystem only to resolve
    /// symlinks of the paths it judges.
    pub fn check(&self, call: &CallInfo<'_>) -> Verdict {
        let _ = call;
        Verdict {
            decision: Decision::Ask,
            reason: "not implemented".into(),
            rule: None,
            allow_rule: None,
            confine: false,
        }
    }
}
