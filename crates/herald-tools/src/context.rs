use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::builtin::ProcessTable;

/// State one agent's tools share across calls: the terminal's current
/// directory and its background processes. Each agent (and each subagent) has
/// its own, which is what isolates their terminals.
#[derive(Debug)]
pub struct AgentState {
    cwd: Mutex<PathBuf>,
    /// Background processes started by `terminal(background=true)`.
    pub processes: ProcessTable,
}

impl AgentState {
    /// New state rooted at `cwd`.
    pub fn new(cwd: PathBuf) -> Arc<Self> {
        Arc::new(Self {
            cwd: Mutex::new(cwd),
            processes: ProcessTable::default(),
        })
    }

    /// The directory relative paths and commands resolve against.
    pub fn cwd(&self) -> PathBuf {
        self.cwd
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Moves the terminal to `dir` (after a `cd` in a command).
    pub fn set_cwd(&self, dir: PathBuf) {
        *self.cwd.lock().unwrap_or_else(PoisonError::into_inner) = dir;
    }

    /// Resolves a user-supplied path against the current directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd().join(path)
        }
    }
}

/// Everything a single tool call can see.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub state: Arc<AgentState>,
    /// Cancelled when the user interrupts; long-running tools must watch it.
    pub cancel: CancellationToken,
}

impl ToolContext {
    /// A context for one call.
    pub fn new(state: Arc<AgentState>, cancel: CancellationToken) -> Self {
        Self { state, cancel }
    }
}
