//! The session runtime's part of checkpoints: a row before each user turn,
//! a snapshot of the files once the turn is about to change them, the end
//! snapshot and what the turn changed after it.
//!
//! Snapshots are lazy: [`Checkpointer::before_turn`] records the row and
//! arms [`SnapshotGate`], the first call interceptor of the session tree.
//! The first call of the turn whose tool is not read-only (from any agent
//! of the tree) starts the snapshot; it and every other such call wait
//! until it is taken, so no tool changes a file before the snapshot has it.
//! Read-only calls never wait, and a turn without a writing call spawns no
//! `git` at all: its row keeps no snapshot and the note [`NO_WRITES_NOTE`]
//! (see [`super::plan_rewind`] for how a rewind to it restores files).
//! Nothing here can fail a turn: a snapshot that cannot be taken leaves the
//! row without one, and the user is warned once per session.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use herald_protocol::{EventKind, ToolCall};
use herald_store::{ChangeStats, NewCheckpoint};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::shadow::{Shadow, ShadowError};
use crate::intercept::{BeforeCall, CallInterceptor, CallSite};
use crate::{EventSink, StoreHandle};

/// The note of a turn that took no snapshot because none of its calls
/// could change files: its files are those of the next later snapshot.
pub const NO_WRITES_NOTE: &str = "no call of this turn could change files";

/// The note of every turn of a session that cannot change files.
pub const READ_ONLY_SESSION_NOTE: &str = "the session cannot change files (read-only)";

/// The note of every turn while file checkpoints are turned off: such a
/// turn may change files without a snapshot, so a rewind cannot restore
/// the files of the turns before it.
pub const CHECKPOINTS_OFF_NOTE: &str =
    "file checkpoints are turned off ([checkpoints] enabled = false)";

/// Whether a session's turns get file snapshots, and why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSnapshots {
    /// Before the first call of a turn that can change files.
    Taken,
    /// Never: nothing in the session can change files.
    ReadOnlySession,
    /// Never: `[checkpoints] enabled = false`.
    TurnedOff,
}

/// Whether a checkpoint's note says its turn took no snapshot only because
/// nothing in it could change files (not a failed snapshot, not a
/// read-only session).
pub fn took_no_snapshot_for_reads(note: Option<&str>) -> bool {
    note == Some(NO_WRITES_NOTE)
}

/// What the snapshot before a turn needs, held by the armed gate until a
/// call that can change files starts it.
struct SnapshotJob {
    store: StoreHandle,
    session: String,
    home: PathBuf,
    cwd: PathBuf,
    /// The turn's checkpoint row.
    id: i64,
    turn: u32,
    events: EventSink,
    /// Whether the user was told that snapshots fail.
    warned: Arc<AtomicBool>,
}

impl SnapshotJob {
    /// Starts the snapshot on its own task (a call that stops waiting does
    /// not stop it); `done` turns true once it is taken and recorded.
    fn start(self) -> Phase {
        let (done_tx, done) = watch::channel(false);
        let task = tokio::spawn(async move {
            let Self {
                store,
                session,
                home,
                cwd,
                id,
                turn,
                events,
                warned,
            } = self;
            let taken = snapshot(&home, &cwd, &session, &format!("before turn {turn}")).await;
            let (commit, note) = match taken {
                Ok(commit) => (Some(commit), None),
                Err(err) => {
                    if !warned.swap(true, Ordering::Relaxed) {
                        events.emit(EventKind::Error {
                            message: format!(
                                "no file checkpoint before turn {turn}: {err}. The turn runs; `herald rewind` can restore the conversation but not the files of turns without one"
                            ),
                            fatal: false,
                        });
                    }
                    (None, Some(err.to_string()))
                }
            };
            let stored = commit.clone();
            let saved = store
                .call(move |s| s.set_checkpoint_snapshot(id, stored.as_deref(), note.as_deref()))
                .await;
            if !matches!(saved, Ok(Ok(()))) {
                tracing::warn!(session_id = %session, turn, "cannot record the checkpoint's snapshot");
            }
            done_tx.send_replace(true);
            commit
        });
        Phase::Running {
            done,
            task: Some(task),
        }
    }
}

/// Where the gate is in the running turn.
enum Phase {
    /// No turn runs (or its snapshot is settled): calls pass.
    Off,
    /// A turn runs and no call has needed its snapshot yet.
    Armed(Box<SnapshotJob>),
    /// The snapshot was started; writing calls wait for `done`. `task` is
    /// taken by whoever settles the turn.
    Running {
        done: watch::Receiver<bool>,
        task: Option<JoinHandle<Option<String>>>,
    },
}

/// Takes the snapshot before a turn when the turn's first call that can
/// change files arrives, and holds such calls until it is taken. Shared by
/// every agent of a session tree (the first call interceptor).
pub struct SnapshotGate {
    phase: Mutex<Phase>,
    /// How many snapshots it started (tests and debugging).
    started: AtomicU64,
}

impl std::fmt::Debug for SnapshotGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let phase = match &*self.lock() {
            Phase::Off => "off",
            Phase::Armed(_) => "armed",
            Phase::Running { .. } => "running",
        };
        f.debug_struct("SnapshotGate")
            .field("phase", &phase)
            .field("started", &self.snapshots_started())
            .finish()
    }
}

impl Default for SnapshotGate {
    fn default() -> Self {
        Self {
            phase: Mutex::new(Phase::Off),
            started: AtomicU64::new(0),
        }
    }
}

impl SnapshotGate {
    fn lock(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many snapshots the gate has started.
    pub fn snapshots_started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// Holds `job` for the turn that starts.
    fn arm(&self, job: SnapshotJob) {
        *self.lock() = Phase::Armed(Box::new(job));
    }

    /// Starts the armed snapshot (once per turn) and waits until it is
    /// taken; returns at once when the gate is off.
    async fn snapshot_taken(&self) {
        let done = {
            let mut phase = self.lock();
            *phase = match std::mem::replace(&mut *phase, Phase::Off) {
                Phase::Armed(job) => {
                    self.started.fetch_add(1, Ordering::Relaxed);
                    job.start()
                }
                other => other,
            };
            match &*phase {
                Phase::Running { done, .. } => Some(done.clone()),
                Phase::Off | Phase::Armed(_) => None,
            }
        };
        if let Some(mut done) = done {
            // An error means the task ended without saying: it failed.
            let _ = done.wait_for(|done| *done).await;
        }
    }

    /// Ends the turn's part: an armed gate is disarmed (no snapshot is
    /// taken any more), a started snapshot is awaited. Returns its commit.
    async fn settle(&self) -> Option<String> {
        let task = match &mut *self.lock() {
            phase @ Phase::Armed(_) => {
                *phase = Phase::Off;
                return None;
            }
            Phase::Running { task, .. } => task.take(),
            Phase::Off => return None,
        };
        let commit = match task {
            Some(task) => task.await.ok().flatten(),
            None => None,
        };
        let mut phase = self.lock();
        if matches!(*phase, Phase::Running { .. }) {
            *phase = Phase::Off;
        }
        commit
    }
}

impl CallInterceptor for SnapshotGate {
    fn before<'a>(
        &'a self,
        site: CallSite<'a>,
        _call: &'a mut ToolCall,
    ) -> BoxFuture<'a, BeforeCall> {
        Box::pin(async move {
            if !site.read_only {
                self.snapshot_taken().await;
            }
            BeforeCall::Proceed
        })
    }
}

/// The running turn's checkpoint row and its snapshot.
type Current = (i64, Option<String>);

/// Takes the checkpoints of one session; owned by its driver task, which
/// runs turns one at a time.
#[derive(Debug)]
pub struct Checkpointer {
    store: StoreHandle,
    session_id: String,
    cwd: PathBuf,
    home: PathBuf,
    /// Whether turns get snapshots (else rows without them).
    files: FileSnapshots,
    next_turn: u32,
    gate: Arc<SnapshotGate>,
    current: Option<Current>,
    /// Whether the user was told that snapshots fail.
    warned: Arc<AtomicBool>,
}

impl Checkpointer {
    /// The checkpointer of `session_id`, whose next turn is the one after
    /// its last live checkpoint, and at least `first_turn` (a fork starts
    /// after the turns it copied). `gate` must be the first call
    /// interceptor of the session tree.
    pub async fn open(
        store: &StoreHandle,
        session_id: &str,
        cwd: PathBuf,
        home: PathBuf,
        files: FileSnapshots,
        first_turn: u32,
        gate: Arc<SnapshotGate>,
    ) -> Self {
        let id = session_id.to_owned();
        let last = match store.call(move |s| s.last_checkpoint_turn(&id)).await {
            Ok(Ok(last)) => last,
            Ok(Err(err)) => {
                tracing::warn!(session_id, "cannot read checkpoints: {err}");
                0
            }
            Err(err) => {
                tracing::warn!(session_id, "cannot read checkpoints: {err}");
                0
            }
        };
        Self {
            store: store.clone(),
            session_id: session_id.to_owned(),
            cwd,
            home,
            files,
            next_turn: (last + 1).max(first_turn.max(1)),
            gate,
            current: None,
            warned: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The number the next user turn gets.
    pub fn next_turn(&self) -> u32 {
        self.next_turn
    }

    /// `$HERALD_HOME`, where the shadow repositories live.
    pub fn home(&self) -> &std::path::Path {
        &self.home
    }

    /// Whether turns of this session get file snapshots.
    pub fn takes_snapshots(&self) -> bool {
        self.files == FileSnapshots::Taken
    }

    /// After a rewind to before `turn`: that turn comes next.
    pub fn rewound_to(&mut self, turn: u32) {
        self.next_turn = turn.max(1);
        self.current = None;
    }

    /// Records the checkpoint of the turn about to start (how many
    /// messages precede it, read now, before the turn stores any) and arms
    /// the gate with its snapshot: the turn's first call that can change
    /// files takes it. Until then the row says [`NO_WRITES_NOTE`] (a
    /// writing call only runs once the snapshot is recorded). A failed
    /// snapshot is reported on `events` the first time.
    pub async fn before_turn(&mut self, events: &EventSink) {
        self.settle().await;
        let turn = self.next_turn;
        self.next_turn += 1;
        let new = NewCheckpoint {
            session_id: self.session_id.clone(),
            turn,
            message_count: 0,
            cwd: self.cwd.display().to_string(),
            commit_id: None,
            note: Some(
                match self.files {
                    FileSnapshots::Taken => NO_WRITES_NOTE,
                    FileSnapshots::ReadOnlySession => READ_ONLY_SESSION_NOTE,
                    FileSnapshots::TurnedOff => CHECKPOINTS_OFF_NOTE,
                }
                .to_owned(),
            ),
        };
        let recorded = self
            .store
            .call(move |s| -> Result<i64, herald_store::StoreError> {
                let message_count = s.stored_message_count(&new.session_id)?;
                s.add_checkpoint(&NewCheckpoint {
                    message_count,
                    ..new
                })
            })
            .await;
        let id = match recorded {
            Ok(Ok(id)) => id,
            Ok(Err(err)) => {
                tracing::warn!(session_id = %self.session_id, turn, "cannot record the checkpoint: {err}");
                return;
            }
            Err(err) => {
                tracing::warn!(session_id = %self.session_id, turn, "cannot record the checkpoint: {err}");
                return;
            }
        };
        self.current = Some((id, None));
        if self.files != FileSnapshots::Taken {
            return;
        }
        self.gate.arm(SnapshotJob {
            store: self.store.clone(),
            session: self.session_id.clone(),
            home: self.home.clone(),
            cwd: self.cwd.clone(),
            id,
            turn,
            events: events.clone(),
            warned: Arc::clone(&self.warned),
        });
    }

    /// Takes the running turn's snapshot now, if it was not yet taken, and
    /// waits for it: for work outside tool calls that may change files (a
    /// hook command, a background process).
    pub async fn snapshot_now(&mut self) {
        self.gate.snapshot_taken().await;
    }

    /// Ends the snapshot part of the running turn: no snapshot is taken
    /// for it any more, and one being taken is awaited (the turn's end, or
    /// the next operation, must not overtake it).
    pub async fn settle(&mut self) {
        let commit = self.gate.settle().await;
        if let (Some(commit), Some((_, snapshot))) = (commit, &mut self.current) {
            *snapshot = Some(commit);
        }
    }

    /// Snapshots the tree after the turn and records what the turn changed,
    /// when the turn took a snapshot before it (else it spawns nothing).
    pub async fn after_turn(&mut self) {
        self.settle().await;
        let Some((id, Some(before))) = self.current.take() else {
            return;
        };
        let turn = self.next_turn.saturating_sub(1);
        let (home, cwd) = (self.home.clone(), self.cwd.clone());
        let session = self.session_id.clone();
        let message = format!("after turn {turn} of session {session}");
        let ended = tokio::task::spawn_blocking(move || {
            let shadow = Shadow::for_work_tree(&home, &cwd)?;
            let after = shadow.snapshot(&session, &message)?;
            let stats = shadow.stats(&before, &after.commit)?;
            Ok::<_, ShadowError>((after.commit, stats))
        })
        .await;
        let (end, stats): (String, ChangeStats) = match ended {
            Ok(Ok(done)) => done,
            Ok(Err(err)) => {
                tracing::warn!(session_id = %self.session_id, "checkpoint after turn {turn}: {err}");
                return;
            }
            Err(err) => {
                tracing::warn!(session_id = %self.session_id, "checkpoint after turn {turn}: {err}");
                return;
            }
        };
        let finished = self
            .store
            .call(move |s| s.finish_checkpoint(id, Some(&end), stats))
            .await;
        if !matches!(finished, Ok(Ok(()))) {
            tracing::warn!(session_id = %self.session_id, "cannot record what turn {turn} changed");
        }
    }
}

/// Takes a snapshot on the blocking pool; returns its commit.
async fn snapshot(
    home: &std::path::Path,
    cwd: &std::path::Path,
    session: &str,
    what: &str,
) -> Result<String, ShadowError> {
    let (home, cwd, session) = (home.to_path_buf(), cwd.to_path_buf(), session.to_owned());
    let message = format!("{what} of session {session}");
    let started = std::time::Instant::now();
    let taken = tokio::task::spawn_blocking(move || {
        Shadow::for_work_tree(&home, &cwd)?.snapshot(&session, &message)
    })
    .await
    .map_err(|err| ShadowError::Io(format!("the snapshot task failed: {err}")))??;
    tracing::debug!(
        created = taken.created,
        too_large = taken.too_large.len(),
        ms = started.elapsed().as_millis() as u64,
        "checkpoint snapshot"
    );
    Ok(taken.commit)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::path::Path;

    use herald_store::{CheckpointRecord, NewSession, SessionSource};

    use super::*;

    /// A store with one session, a working tree and `$HERALD_HOME`.
    struct Setup {
        _tmp: tempfile::TempDir,
        store: StoreHandle,
        home: PathBuf,
        work: PathBuf,
    }

    async fn setup() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let work = tmp.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("a.txt"), "a\n").unwrap();
        let store = StoreHandle::open(&home.join("state.db")).unwrap();
        let cwd = work.display().to_string();
        store
            .call(move |s| {
                s.create_session(&NewSession {
                    id: "ses_t".into(),
                    parent_session_id: None,
                    agent_id: None,
                    source: SessionSource::Cli,
                    cwd,
                    model: "m".into(),
                    provider: "p".into(),
                    system_prompt: "sys".into(),
                })
            })
            .await
            .unwrap()
            .unwrap();
        Setup {
            _tmp: tmp,
            store,
            home,
            work,
        }
    }

    async fn checkpointer(s: &Setup, gate: &Arc<SnapshotGate>) -> Checkpointer {
        Checkpointer::open(
            &s.store,
            "ses_t",
            s.work.clone(),
            s.home.clone(),
            FileSnapshots::Taken,
            1,
            Arc::clone(gate),
        )
        .await
    }

    async fn rows(store: &StoreHandle) -> Vec<CheckpointRecord> {
        store
            .call(|s| s.checkpoints("ses_t", true))
            .await
            .unwrap()
            .unwrap()
    }

    /// Runs a call of `tool` through the gate as an agent of the tree would.
    async fn call(gate: &SnapshotGate, agent: &str, read_only: bool) -> BeforeCall {
        let site = CallSite {
            session_id: "ses_t",
            agent_id: agent,
            cwd: Path::new("/"),
            read_only,
        };
        let mut call = ToolCall {
            id: "c".into(),
            name: if read_only { "read_file" } else { "write_file" }.into(),
            arguments: "{}".into(),
        };
        gate.before(site, &mut call).await
    }

    fn no_shadow_repository(s: &Setup) -> bool {
        !s.home.join("checkpoints").exists()
    }

    #[tokio::test]
    async fn read_only_calls_proceed_without_a_snapshot() {
        let s = setup().await;
        let gate = Arc::new(SnapshotGate::default());
        let mut checkpoints = checkpointer(&s, &gate).await;
        checkpoints.before_turn(&EventSink::discard()).await;
        for agent in ["root", "sub_1"] {
            assert_eq!(call(&gate, agent, true).await, BeforeCall::Proceed);
        }
        checkpoints.settle().await;
        checkpoints.after_turn().await;
        assert_eq!(gate.snapshots_started(), 0);
        assert!(no_shadow_repository(&s), "no git ran");
        let rows = rows(&s.store).await;
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].commit_id, None);
        assert_eq!(rows[0].end_commit_id, None);
        assert_eq!(rows[0].note.as_deref(), Some(NO_WRITES_NOTE));
    }

    #[tokio::test]
    async fn the_first_writing_call_takes_exactly_one_snapshot_before_it_runs() {
        let s = setup().await;
        let gate = Arc::new(SnapshotGate::default());
        let mut checkpoints = checkpointer(&s, &gate).await;
        checkpoints.before_turn(&EventSink::discard()).await;
        assert_eq!(call(&gate, "root", true).await, BeforeCall::Proceed);
        assert_eq!(gate.snapshots_started(), 0, "a read does not start it");
        // Two writing calls at once, one of a subagent: one snapshot, and
        // both run only once it is recorded.
        let (a, b) = tokio::join!(call(&gate, "root", false), call(&gate, "sub_1", false));
        assert_eq!((a, b), (BeforeCall::Proceed, BeforeCall::Proceed));
        assert_eq!(gate.snapshots_started(), 1);
        let recorded = rows(&s.store).await[0].clone();
        let before = recorded.commit_id.expect("recorded before the calls ran");
        assert_eq!(recorded.note, None);
        // The calls change a file; a later call takes no other snapshot.
        std::fs::write(s.work.join("a.txt"), "b\n").unwrap();
        assert_eq!(call(&gate, "root", false).await, BeforeCall::Proceed);
        assert_eq!(gate.snapshots_started(), 1);
        checkpoints.after_turn().await;
        let finished = rows(&s.store).await[0].clone();
        assert_eq!(finished.commit_id.as_deref(), Some(before.as_str()));
        assert!(finished.end_commit_id.is_some());
        assert_eq!(finished.changes.files_changed, 1);
        // The next turn is armed afresh: its first writing call takes its own.
        checkpoints.before_turn(&EventSink::discard()).await;
        assert_eq!(call(&gate, "root", false).await, BeforeCall::Proceed);
        assert_eq!(gate.snapshots_started(), 2);
        checkpoints.after_turn().await;
        assert!(rows(&s.store).await[1].commit_id.is_some());
    }

    #[tokio::test]
    async fn a_settled_turn_takes_no_snapshot_for_later_calls() {
        let s = setup().await;
        let gate = Arc::new(SnapshotGate::default());
        let mut checkpoints = checkpointer(&s, &gate).await;
        // Before any turn the gate is off.
        assert_eq!(call(&gate, "root", false).await, BeforeCall::Proceed);
        checkpoints.before_turn(&EventSink::discard()).await;
        checkpoints.settle().await;
        // A background agent writing after the turn's end.
        assert_eq!(call(&gate, "sub_1", false).await, BeforeCall::Proceed);
        checkpoints.after_turn().await;
        assert_eq!(gate.snapshots_started(), 0);
        assert!(no_shadow_repository(&s));
        assert_eq!(rows(&s.store).await[0].commit_id, None);
    }

    #[tokio::test]
    async fn the_hook_path_takes_the_snapshot_now() {
        let s = setup().await;
        let gate = Arc::new(SnapshotGate::default());
        let mut checkpoints = checkpointer(&s, &gate).await;
        checkpoints.before_turn(&EventSink::discard()).await;
        checkpoints.snapshot_now().await;
        assert_eq!(gate.snapshots_started(), 1);
        assert!(
            rows(&s.store).await[0].commit_id.is_some(),
            "taken and recorded"
        );
        // A writing call after it neither waits for nor takes another.
        assert_eq!(call(&gate, "root", false).await, BeforeCall::Proceed);
        checkpoints.snapshot_now().await;
        checkpoints.after_turn().await;
        assert_eq!(gate.snapshots_started(), 1);
        assert!(rows(&s.store).await[0].end_commit_id.is_some());
    }

    #[tokio::test]
    async fn a_read_only_session_never_arms_the_gate() {
        let s = setup().await;
        let gate = Arc::new(SnapshotGate::default());
        let mut checkpoints = Checkpointer::open(
            &s.store,
            "ses_t",
            s.work.clone(),
            s.home.clone(),
            FileSnapshots::ReadOnlySession,
            1,
            Arc::clone(&gate),
        )
        .await;
        checkpoints.before_turn(&EventSink::discard()).await;
        assert_eq!(call(&gate, "root", false).await, BeforeCall::Proceed);
        checkpoints.snapshot_now().await;
        checkpoints.after_turn().await;
        assert_eq!(gate.snapshots_started(), 0);
        assert_eq!(
            rows(&s.store).await[0].note.as_deref(),
            Some(READ_ONLY_SESSION_NOTE)
        );
    }
}
