//! Bounded, curated memory: two small markdown files under
//! `$HERALD_HOME/memories/` whose entries are separated by a line holding `§`.
//! `MEMORY.md` holds the agent's notes, `USER.md` the user's profile.
//!
//! [`MemoryStore`] does every change under a file lock after re-reading the
//! file, then replaces it atomically; [`guard`] refuses content that would
//! smuggle instructions into future system prompts; [`memory_prompt_block`]
//! renders the session-start snapshot; [`MemoryTool`] is the `memory` tool.

mod entries;
pub mod guard;
mod prompt;
mod store;
mod tool;

use schemars::JsonSchema;
use serde::Deserialize;

pub use entries::{Usage, parse_entries, render_entries};
pub use prompt::memory_prompt_block;
pub use store::{MemoryError, MemorySnapshot, MemoryStore, Outcome};
pub use tool::{MemoryAction, MemoryArgs, MemoryTool};

/// Separator line between entries.
pub const ENTRY_SEPARATOR: &str = "§";

/// Which of the two memory files an operation addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(description = "")]
pub enum MemoryTarget {
    // `MEMORY.md`: the agent's own notes. (Plain comments keep the schema a
    // simple string enum.)
    Memory,
    // `USER.md`: what the agent knows about the user.
    User,
}

impl MemoryTarget {
    /// Both targets, in display order.
    pub const ALL: [MemoryTarget; 2] = [MemoryTarget::Memory, MemoryTarget::User];

    /// The file name under `memories/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Memory => "MEMORY.md",
            Self::User => "USER.md",
        }
    }

    /// The heading shown to the model and the user.
    pub fn label(self) -> &'static str {
        match self {
            Self::Memory => "MEMORY (your notes)",
            Self::User => "USER PROFILE (about the user)",
        }
    }

    /// The name used in tool arguments and config.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::User => "user",
        }
    }
}

/// Which memory files are enabled and how large each may grow, in chars.
/// Mirrors `[memory]` of `config.toml`; kept here so this crate does not
/// depend on the configuration crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimits {
    pub memory_enabled: bool,
    pub user_enabled: bool,
    pub memory_chars: usize,
    pub user_chars: usize,
}

impl Default for MemoryLimits {
    fn default() -> Self {
        Self {
            memory_enabled: true,
            user_enabled: true,
            memory_chars: 2200,
            user_chars: 1375,
        }
    }
}

impl MemoryLimits {
    /// Whether `target` may be read and written.
    pub fn enabled(&self, target: MemoryTarget) -> bool {
        match target {
            MemoryTarget::Memory => self.memory_enabled,
            MemoryTarget::User => self.user_enabled,
        }
    }

    /// The character limit of `target`.
    pub fn limit(&self, target: MemoryTarget) -> usize {
        match target {
            MemoryTarget::Memory => self.memory_chars,
            MemoryTarget::User => self.user_chars,
        }
    }

    /// Whether the `memory` tool should exist at all.
    pub fn any_enabled(&self) -> bool {
        self.memory_enabled || self.user_enabled
    }
}
