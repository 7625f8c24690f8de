//! The built-in tools: `terminal`, `process`, `read_file`,
//! `write_file`, `patch` and `search_files`.

mod ansi;
mod atomic;
mod fsutil;
mod lines;
mod patch;
mod process;
mod process_tool;
mod read_file;
mod search_files;
mod shell;
mod terminal;
mod todo;
mod write_file;

pub use atomic::{TEMP_FILE_MARKER, remove_stale_temp_files};
pub use patch::{MAX_PATCH_BYTES, Patch, PatchArgs};
pub use process::{BackgroundProcess, Exit, ProcessTable, WaitOutcome};
pub use process_tool::{ProcessAction, ProcessArgs, ProcessTool};
pub use read_file::{ReadFile, ReadFileArgs};
pub use search_files::{SearchFiles, SearchFilesArgs, SearchTarget};
pub use terminal::{Terminal, TerminalArgs, remove_stale_cwd_files};
pub use todo::{
    FAILURE_NUDGE, MAX_TODO_CONTENT_CHARS, MAX_TODO_ITEMS, STALE_PLAN_NUDGE,
    TODO_NUDGE_AFTER_CALLS, TodoCounts, TodoItem, TodoRead, TodoReadArgs, TodoState, TodoStatus,
    TodoWrite, TodoWriteArgs,
};
pub use write_file::{WriteFile, WriteFileArgs};

use crate::{ToolRegistry, typed};

/// A registry holding every built-in tool.
pub fn default_registry(output_limit_chars: usize) -> ToolRegistry {
    let mut registry = ToolRegistry::new(output_limit_chars);
    registry.register(typed(Terminal));
    registry.register(typed(ProcessTool));
    registry.register(typed(ReadFile));
    registry.register(typed(WriteFile));
    registry.register(typed(Patch));
    registry.register(typed(SearchFiles));
    registry
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn registers_every_builtin_with_compact_schemas() {
        let registry = default_registry(1000);
        let names: Vec<&str> = registry.names().collect();
        assert_eq!(
            names,
            [
                "patch",
                "process",
                "read_file",
                "search_files",
                "terminal",
                "write_file"
            ]
        );
        let specs = registry.specs();
        for spec in &specs {
            assert!(spec.description.len() < 500, "{}", spec.name);
        }
        // The whole prompt plus every schema must stay under 16,000 bytes.
        let bytes = serde_json::to_string(&specs).unwrap().len();
        assert!(bytes < 4800, "built-in schemas take {bytes} bytes");
        assert_eq!(
            registry.toolsets().into_iter().collect::<Vec<_>>(),
            ["file", "terminal"]
        );
    }
}
