use std::fmt;
use std::str::FromStr;

/// How much the agent may do without asking (config `[permissions] mode`,
/// flag `--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Reads and read-only commands run; anything else asks.
    ReadOnly,
    /// Edits inside the working directory and allowed commands run (confined);
    /// the rest asks.
    #[default]
    WorkspaceWrite,
    /// Everything runs, except the catastrophic floor.
    FullAccess,
}

impl Mode {
    /// The name used in config files and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::FullAccess => "full-access",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is none of the three.
#[derive(Debug, thiserror::Error)]
#[error("unknown permission mode '{0}'; use read-only, workspace-write or full-access")]
pub struct ParseModeError(pub String);

impl FromStr for Mode {
    type Err = ParseModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(Self::ReadOnly),
            "workspace-write" => Ok(Self::WorkspaceWrite),
            "full-access" => Ok(Self::FullAccess),
            other => Err(ParseModeError(other.to_owned())),
        }
    }
}
