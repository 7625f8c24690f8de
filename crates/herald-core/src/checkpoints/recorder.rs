//! The session runtime's part of checkpoints: a row and a snapshot before
//! each user turn, the end snapshot and what the turn changed after it.
//!
//! The snapshot before a turn runs alongside the turn's first model request
//! (which changes no file): [`SnapshotGate`], the first call interceptor of
//! the session tree, holds every tool call until it is taken, so no tool
//! can change a file before the snapshot has it, and the turn does not wait
//! for git. Nothing here can fail a turn: a snapshot that cannot be taken
//! leaves the row without one, and the user is warned once per session.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::future::BoxFuture;
use herald_protocol::{EventKind, ToolCall};
use herald_store::{ChangeStats, NewCheckpoint};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::shadow::{Shadow, ShadowError};
use crate::intercept::{BeforeCall, CallInterceptor, CallSite};
use crate::{EventSink, StoreHandle};

/// Holds tool calls while the snapshot before a turn is being taken.
#[derive(Debug)]
pub struct SnapshotGate {
    /// True while a snapshot runs.
    busy: watch::Sender<bool>,
}

impl Default for SnapshotGate {
    fn default() -> Self {
        Self {
            busy: watch::channel(false).0,
        }
    }
}

impl SnapshotGate {
    /// Closes the gate until the returned guard is dropped.
    fn close(self: &Arc<Self>) -> GateGuard {
        self.busy.send_replace(true);
        GateGuard(Arc::clone(self))
    }

    /// Waits until no snapshot runs.
    async fn wait(&self) {
        let mut rx = self.busy.subscribe();
        let _ = rx.wait_for(|busy| !*busy).await;
    }
}

/// Opens the gate when dropped (also when the snapshot task fails).
struct GateGuard(Arc<SnapshotGate>);

impl Drop for GateGuard {
    fn drop(&mut self) {
        self.0.busy.send_replace(false);
    }
}

impl CallInterceptor for SnapshotGate {
    fn before<'a>(
        &'a self,
        _site: CallSite<'a>,
        _call: &'a mut ToolCall,
    ) -> BoxFuture<'a, BeforeCall> {
        Box::pin(async move {
            self.wait().await;
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
    /// Whether the session can change files (else rows without snapshots).
    files: bool,
    next_turn: u32,
    gate: Arc<SnapshotGate>,
    /// The snapshot before the running turn, while it is being taken.
    pending: Option<JoinHandle<Option<String>>>,
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
        files: bool,
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
            pending: None,
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
        self.files
    }

    /// After a rewind to before `turn`: that turn comes next.
    pub fn rewound_to(&mut self, turn: u32) {
        self.next_turn = turn.max(1);
        self.current = None;
    }

    /// Records the checkpoint of the turn about to start (how many
    /// messages precede it, read now, before the turn stores any) and
    /// starts its snapshot, which tool calls wait for. A failed snapshot is
    /// reported on `events` the first time.
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
            note: (!self.files).then(|| "the session cannot change files (read-only)".to_owned()),
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
        if !self.files {
            return;
        }
        let guard = self.gate.close();
        let (store, session, home, cwd) = (
            self.store.clone(),
            self.session_id.clone(),
            self.home.clone(),
            self.cwd.clone(),
        );
        let (events, warned) = (events.clone(), Arc::clone(&self.warned));
        self.pending = Some(tokio::spawn(async move {
            let _open_when_done = guard;
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
            commit
        }));
    }

    /// Waits for the snapshot before the running turn (the turn's end, or
    /// the next operation, must not overtake it).
    pub async fn settle(&mut self) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let commit = pending.await.ok().flatten();
        if let Some((_, snapshot)) = &mut self.current {
            *snapshot = commit;
        }
    }

    /// Snapshots the tree after the turn and records what the turn changed.
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tool_calls_wait_while_the_gate_is_closed() {
        let gate = Arc::new(SnapshotGate::default());
        let site = CallSite {
            session_id: "s",
            agent_id: "root",
            cwd: std::path::Path::new("/"),
        };
        let mut call = ToolCall {
            id: "c".into(),
            name: "write_file".into(),
            arguments: "{}".into(),
        };
        // Open: a call proceeds at once.
        assert_eq!(gate.before(site, &mut call).await, BeforeCall::Proceed);
        let guard = gate.close();
        let waiting = {
            let gate = Arc::clone(&gate);
            tokio::spawn(async move {
                let mut call = ToolCall {
                    id: "c".into(),
                    name: "write_file".into(),
                    arguments: "{}".into(),
                };
                let site = CallSite {
                    session_id: "s",
                    agent_id: "root",
                    cwd: std::path::Path::new("/"),
                };
                gate.before(site, &mut call).await
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "the call waits for the snapshot");
        drop(guard);
        assert_eq!(waiting.await.unwrap(), BeforeCall::Proceed);
    }
}
