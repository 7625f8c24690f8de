use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::builtin::{ProcessTable, TodoState};

/// State one agent's tools share across calls: the terminal's current
/// directory and its background processes. Each agent (and each subagent) has
/// its own, which is what isolates their terminals.
#[derive(Debug)]
pub struct AgentState {
    cwd: Mutex<PathBuf>,
    /// Background processes started by `terminal(background=true)`.
    pub processes: ProcessTable,
    /// Files this agent read and wrote, so a parent can be told when a child
    /// changed a file it had read.
    files: Mutex<FileLog>,
    /// The session's task list (`todo_write`/`todo_read`).
    pub todos: TodoState,
    /// Records the process groups this agent's tools start (see
    /// [`crate::ProcessJournal`]); set once by the session.
    journal: std::sync::OnceLock<Arc<dyn crate::ProcessJournal>>,
    /// Told what the file tools read and write (see
    /// [`crate::FileTracker`]); set once by the session when it watches
    /// files.
    tracker: std::sync::OnceLock<Arc<dyn crate::FileTracker>>,
    /// Where the file tools and foreground commands go when not to this
    /// process (see [`crate::ToolBackends`]); set once by the session.
    backends: std::sync::OnceLock<crate::ToolBackends>,
}

/// Paths touched through the file tools.
#[derive(Debug, Default)]
struct FileLog {
    read: BTreeSet<PathBuf>,
    written: BTreeSet<PathBuf>,
}

impl AgentState {
    /// New state rooted at `cwd`.
    pub fn new(cwd: PathBuf) -> Arc<Self> {
        Arc::new(Self {
            cwd: Mutex::new(cwd),
            processes: ProcessTable::default(),
            files: Mutex::default(),
            todos: TodoState::default(),
            journal: std::sync::OnceLock::new(),
            tracker: std::sync::OnceLock::new(),
            backends: std::sync::OnceLock::new(),
        })
    }

    /// Sets where started process groups are recorded (first call wins).
    pub fn set_process_journal(&self, journal: Arc<dyn crate::ProcessJournal>) {
        let _ = self.journal.set(journal);
    }

    /// Where started process groups are recorded, if anywhere.
    pub fn process_journal(&self) -> Option<Arc<dyn crate::ProcessJournal>> {
        self.journal.get().cloned()
    }

    /// Sets what is told of the file tools' reads and writes (first call
    /// wins).
    pub fn set_file_tracker(&self, tracker: Arc<dyn crate::FileTracker>) {
        let _ = self.tracker.set(tracker);
    }

    /// What is told of the file tools' reads and writes, if anything.
    pub fn file_tracker(&self) -> Option<Arc<dyn crate::FileTracker>> {
        self.tracker.get().cloned()
    }

    /// Sets where the file tools and foreground commands go (first call
    /// wins).
    pub fn set_backends(&self, backends: crate::ToolBackends) {
        let _ = self.backends.set(backends);
    }

    /// The file backend the file tools use instead of the local file
    /// system, if the session has one.
    pub fn file_backend(&self) -> Option<Arc<dyn crate::FileBackend>> {
        self.backends.get().and_then(|b| b.files.clone())
    }

    /// The backend foreground commands run through instead of a local
    /// shell, if the session has one.
    pub fn command_backend(&self) -> Option<Arc<dyn crate::CommandBackend>> {
        self.backends.get().and_then(|b| b.commands.clone())
    }

    /// Notes that `path` was read.
    pub fn note_read(&self, path: &Path) {
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        if !files.read.contains(path) {
            files.read.insert(path.to_path_buf());
        }
    }

    /// Notes that `path` was created or changed.
    pub fn note_written(&self, path: &Path) {
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        if !files.written.contains(path) {
            files.written.insert(path.to_path_buf());
        }
    }

    /// Whether `path` was read through the file tools.
    pub fn has_read(&self, path: &Path) -> bool {
        let files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        files.read.contains(path)
    }

    /// Every path written through the file tools, sorted.
    pub fn files_written(&self) -> Vec<PathBuf> {
        let files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        files.written.iter().cloned().collect()
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
#[derive(Clone)]
pub struct ToolContext {
    pub state: Arc<AgentState>,
    /// Cancelled when the user interrupts; long-running tools must watch it.
    pub cancel: CancellationToken,
    /// The id of the call being run (empty outside the agent loop).
    pub call_id: String,
    /// The registry the call was dispatched from, for tools that run other
    /// tools (`execute_code`) through the same validation and limits.
    pub registry: Option<Arc<crate::ToolRegistry>>,
    /// Told about calls this call makes on the agent's behalf, which never
    /// reach the model's context (see [`crate::CallObserver`]).
    pub observer: Option<Arc<dyn crate::CallObserver>>,
    /// Decides whether each call may run (the permission layer); `None`
    /// runs everything (tests, direct use).
    pub gate: Option<Arc<dyn crate::PermissionGate>>,
    /// Set by the registry when the gate confines this call: processes the
    /// tool starts must run under this policy.
    pub sandbox: Option<Arc<herald_sandbox::SandboxPolicy>>,
    /// Which environment variables processes started by the tool inherit.
    pub env: Arc<herald_sandbox::EnvFilter>,
    /// What every call made in this context passes before and after it
    /// runs (hooks, learnings); `None` runs calls as they are.
    pub interception: Option<Arc<crate::Interception>>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("state", &self.state)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context for one call outside any registry (tests, direct use).
    pub fn new(state: Arc<AgentState>, cancel: CancellationToken) -> Self {
        Self {
            state,
            cancel,
            call_id: String::new(),
            registry: None,
            observer: None,
            gate: None,
            sandbox: None,
            env: Arc::default(),
            interception: None,
        }
    }

    /// Passes every call made in this context (nested ones too) through
    /// `interception`.
    pub fn with_interception(mut self, interception: Option<Arc<crate::Interception>>) -> Self {
        self.interception = interception;
        self
    }

    /// Passes every call made in this context through `gate`.
    pub fn with_gate(mut self, gate: Option<Arc<dyn crate::PermissionGate>>) -> Self {
        self.gate = gate;
        self
    }

    /// Reports nested calls made during this call to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn crate::CallObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Names the call this context belongs to.
    pub fn with_call(mut self, call_id: &str, registry: Arc<crate::ToolRegistry>) -> Self {
        self.call_id = call_id.to_owned();
        self.registry = Some(registry);
        self
    }
}
