//! Checkpoints and rewind: a row of the store's
//! `checkpoints` table records every user turn and how many stored
//! messages preceded it; before the turn's first call that can change files
//! the working tree is snapshotted into a shadow git repository under
//! `$HERALD_HOME/checkpoints/` ([`shadow`]), and after such a turn its end
//! snapshot gives what it changed. A turn that only reads spawns no `git`.
//! [`rewind`] puts files and conversation back to before a turn;
//! [`Checkpointer`] is the session runtime's part.
//!
//! Not covered: whatever a shell command changed outside the working tree
//! (other directories, databases, services, remote state), ignored files,
//! nested git repositories and files larger than [`MAX_FILE_BYTES`].

mod prune;
mod recorder;
mod rewind;
mod shadow;

use herald_protocol::{Message, Role};
use herald_tools::ToolRegistry;

pub use prune::{PRUNE_INTERVAL, PruneError, PruneReport, Retention, prune, prune_due};
pub use recorder::{
    CHECKPOINTS_OFF_NOTE, Checkpointer, FileSnapshots, NO_WRITES_NOTE, READ_ONLY_SESSION_NOTE,
    SnapshotGate, took_no_snapshot_for_reads,
};
pub use rewind::{
    ConversationPlan, FilesPlan, RewindError, RewindOutcome, RewindPlan, RewindScope, apply_rewind,
    fork_history, plan_rewind,
};
pub use shadow::{Action, FileChange, MAX_FILE_BYTES, Shadow, ShadowError, Snapshot};

/// Starts the stored record (role `system`) after which a rewound
/// conversation continues: [`crate::live_history`] resumes after the last
/// such record, as after a compaction record.
pub const REWIND_RECORD_PREFIX: &str = "[herald:rewind]";

/// What checkpoints cannot undo, for command output and the TUI.
pub const NOT_COVERED: &str = "shell effects outside the working tree (other directories, databases, services, anything remote), ignored files, nested git repositories and files over 5 MiB are not covered";

/// Whether `message` is the stored marker of a rewind.
pub fn is_rewind_record(message: &Message) -> bool {
    message.role == Role::System && message.content.starts_with(REWIND_RECORD_PREFIX)
}

/// The stored marker of a rewind to before `turn` that left turns
/// `turn..=last` out.
pub fn rewind_record(turn: u32, last: u32) -> Message {
    let dropped = if last > turn {
        format!("turns {turn} to {last} are")
    } else {
        format!("turn {turn} is")
    };
    let mut message = Message::user(format!(
        "{REWIND_RECORD_PREFIX} conversation rewound to before turn {turn}: {dropped} left out. \
The messages after this record are the conversation as the model sees it from here on; the ones before are kept for search and export."
    ));
    message.role = Role::System;
    message
}

/// Whether a session with these tools, in this permission mode, can change
/// files: a read-only session never needs a snapshot; otherwise any tool
/// that writes (files, the terminal, `execute_code`, an MCP tool not marked
/// read-only) does. Subagents get subsets of these tools, so they are
/// covered too.
pub fn can_change_files(registry: &ToolRegistry, mode: herald_permissions::Mode) -> bool {
    if mode == herald_permissions::Mode::ReadOnly {
        return false;
    }
    registry.names().any(|name| {
        registry.get(name).is_some_and(|tool| {
            let toolset = tool.toolset();
            !tool.read_only()
                && (matches!(toolset, "file" | "terminal" | "code_execution")
                    || toolset.starts_with("mcp"))
        })
    })
}

#[cfg(test)]
mod tests;
