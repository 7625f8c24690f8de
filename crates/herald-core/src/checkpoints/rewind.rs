//! Rewinding a session to before one of its user turns: the files of the
//! working tree back to the turn's snapshot, the conversation back to the
//! messages that preceded the turn. Planned first (what would change, for
//! the user to confirm), then applied. Nothing is deleted from the store:
//! the conversation before the turn is appended after a rewind record, so
//! resuming continues from there while the left-out turns stay searchable;
//! the files the rewind replaces are kept as a snapshot too.
//!
//! A turn none of whose calls could change files took no snapshot (see
//! [`super::NO_WRITES_NOTE`]). Its files are those of the first snapshot a
//! later live turn took: nothing herald ran between the start of that turn
//! and that snapshot could change a file. With no later snapshot, herald
//! changed no file since the turn began and the files part of a rewind to
//! it restores nothing. Either way, edits the user made by hand after the
//! turn began and before that later snapshot are kept; so are changes a
//! background process made meanwhile. A files rewind records the files it
//! replaces as the snapshot of the trailing turns that had none, so a later
//! rewind to one of them still finds the files it started with.

use std::path::PathBuf;

use herald_protocol::Message;
use herald_store::CheckpointRecord;

use super::shadow::{Action, FileChange, Shadow, ShadowError};
use crate::StoreHandle;

pub use herald_protocol::RewindScope;

/// Why a rewind (or a fork at a turn) cannot be done. Nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error("no session '{0}'; list stored sessions with `herald sessions list`")]
    UnknownSession(String),
    #[error(
        "session {0} has no recorded turns (it ran none, or was stored before herald kept checkpoints)"
    )]
    NoTurns(String),
    #[error(
        "session {session} has no turn {turn}: its turns are {first} to {last} (see `herald checkpoints list {session}`)"
    )]
    BadTurn {
        session: String,
        turn: u32,
        first: u32,
        last: u32,
    },
    #[error(
        "turn {turn} of session {session} has no file snapshot ({reason}); rewind only the conversation with --conversation-only"
    )]
    NoSnapshot {
        session: String,
        turn: u32,
        reason: String,
    },
    #[error(
        "the working directory of session {session}, {cwd}, is gone; recreate it to restore its files, or rewind only the conversation with --conversation-only"
    )]
    WorkTreeGone { session: String, cwd: String },
    #[error("file checkpoint: {0}")]
    Shadow(#[from] ShadowError),
    #[error("{0}")]
    Store(String),
}

/// What a rewind does to the files.
#[derive(Debug, Clone)]
pub struct FilesPlan {
    pub shadow: Shadow,
    /// The snapshot restored: the turn's own, or for a turn that took none
    /// the next later one (see the module doc); the current files when
    /// there is none.
    pub target: String,
    /// A snapshot of the files as they are now, taken for the rewind: what
    /// the rewind replaces stays in it.
    pub current: String,
    /// Every path that differs, with what happens to it.
    pub changes: Vec<FileChange>,
    /// Where `target` comes from when the turn took no snapshot itself,
    /// for the user.
    pub note: Option<String>,
}

/// What a rewind does to the conversation.
#[derive(Debug, Clone)]
pub struct ConversationPlan {
    /// The conversation as the model saw it before the turn.
    pub history: Vec<Message>,
    /// The last turn left out (turns `turn..=last_turn` go).
    pub last_turn: u32,
    /// How many messages the model sees now.
    pub live_now: usize,
}

/// A rewind worked out and ready to apply.
#[derive(Debug, Clone)]
pub struct RewindPlan {
    pub session_id: String,
    pub turn: u32,
    pub checkpoint: CheckpointRecord,
    pub files: Option<FilesPlan>,
    pub conversation: Option<ConversationPlan>,
}

impl RewindPlan {
    /// Whether applying it deletes or overwrites files.
    pub fn changes_files(&self) -> bool {
        self.files
            .as_ref()
            .is_some_and(|f| f.changes.iter().any(|c| c.action != Action::Keep))
    }
}

/// What a rewind did.
#[derive(Debug, Clone)]
pub struct RewindOutcome {
    pub plan: RewindPlan,
    /// The conversation from now on, when it was rewound.
    pub history: Option<Vec<Message>>,
}

impl RewindOutcome {
    /// The `session.rewound` event telling front ends what changed.
    pub fn event(&self, scope: RewindScope) -> herald_protocol::EventKind {
        let files = self.plan.files.as_ref().map(|files| {
            let count = |action| {
                let n = files.changes.iter().filter(|c| c.action == action).count();
                u32::try_from(n).unwrap_or(u32::MAX)
            };
            herald_protocol::RewoundFiles {
                restored: count(Action::Restore),
                deleted: count(Action::Delete),
                recreated: count(Action::Recreate),
                paths: files
                    .changes
                    .iter()
                    .filter(|c| c.action != Action::Keep)
                    .map(|c| c.path.to_string_lossy().into_owned())
                    .collect(),
                note: files.note.clone(),
            }
        });
        herald_protocol::EventKind::SessionRewound {
            turn: self.plan.turn,
            scope,
            files,
            messages: self
                .history
                .as_ref()
                .map(|history| u32::try_from(history.len()).unwrap_or(u32::MAX)),
        }
    }
}

fn store_error(err: impl std::fmt::Display) -> RewindError {
    RewindError::Store(err.to_string())
}

/// The live checkpoint of `turn` in `session_id`, with the session's
/// live checkpoints after it (oldest first).
async fn checkpoint_of(
    store: &StoreHandle,
    session_id: &str,
    turn: u32,
) -> Result<(CheckpointRecord, Vec<CheckpointRecord>), RewindError> {
    let id = session_id.to_owned();
    let found = store
        .call(move |s| -> Result<_, herald_store::StoreError> {
            if s.get_session(&id)?.is_none() {
                return Ok(None);
            }
            Ok(Some(s.checkpoints(&id, false)?))
        })
        .await
        .map_err(store_error)?
        .map_err(store_error)?;
    let Some(list) = found else {
        return Err(RewindError::UnknownSession(session_id.to_owned()));
    };
    let (Some(first), Some(last)) = (list.first(), list.last()) else {
        return Err(RewindError::NoTurns(session_id.to_owned()));
    };
    let (first, last) = (first.turn, last.turn);
    let Some(at) = list.iter().position(|c| c.turn == turn) else {
        return Err(RewindError::BadTurn {
            session: session_id.to_owned(),
            turn,
            first,
            last,
        });
    };
    let mut later = list;
    let checkpoint = later.remove(at);
    later.drain(..at);
    Ok((checkpoint, later))
}

/// The snapshot holding the files at the start of `checkpoint`'s turn,
/// with a note when it is not the turn's own; `None` when herald changed no
/// file since the turn began (see the module doc). `later` are the live
/// checkpoints after it, oldest first.
fn files_source(
    session_id: &str,
    checkpoint: &CheckpointRecord,
    later: &[CheckpointRecord],
) -> Result<Option<(String, Option<String>)>, RewindError> {
    let turn = checkpoint.turn;
    let no_snapshot = |c: &CheckpointRecord, reason: String| RewindError::NoSnapshot {
        session: session_id.to_owned(),
        turn: c.turn,
        reason,
    };
    if let Some(commit) = &checkpoint.commit_id {
        return Ok(Some((commit.clone(), None)));
    }
    if !super::took_no_snapshot_for_reads(checkpoint.note.as_deref()) {
        let reason = checkpoint
            .note
            .clone()
            .unwrap_or_else(|| "none was taken".to_owned());
        return Err(no_snapshot(checkpoint, reason));
    }
    for next in later {
        if let Some(commit) = &next.commit_id {
            return Ok(Some((
                commit.clone(),
                Some(format!(
                    "turn {turn} changed no files: its files are those of the snapshot before turn {} (edits made by hand in between are kept)",
                    next.turn
                )),
            )));
        }
        let note = next.note.as_deref();
        if !super::took_no_snapshot_for_reads(note) && note != Some(super::READ_ONLY_SESSION_NOTE) {
            // A later turn may have changed files without a snapshot.
            return Err(no_snapshot(
                checkpoint,
                format!(
                    "it changed no files, but turn {} after it has no snapshot either ({})",
                    next.turn,
                    note.unwrap_or("none was taken")
                ),
            ));
        }
    }
    Ok(None)
}

/// The conversation of `session_id` as the model saw it before the turn
/// of `checkpoint` (calls left open answered in the copy).
async fn history_before(
    store: &StoreHandle,
    session_id: &str,
    checkpoint: &CheckpointRecord,
) -> Result<Vec<Message>, RewindError> {
    let id = session_id.to_owned();
    let count = checkpoint.message_count;
    let stored = store
        .call(move |s| s.messages_up_to(&id, count))
        .await
        .map_err(store_error)?
        .map_err(store_error)?;
    let mut history = crate::live_history(stored.into_iter().map(|m| m.message).collect());
    crate::answer_dangling_calls(&mut history);
    Ok(history)
}

/// Works out a rewind of `session_id` to before user turn `turn`
/// (1-based) without changing anything the user sees: for the files it
/// takes a snapshot of the tree as it is now and compares. Errors for an
/// unknown session, a turn without a checkpoint, or (for files) a turn
/// without a snapshot.
pub async fn plan_rewind(
    store: &StoreHandle,
    home: &std::path::Path,
    session_id: &str,
    turn: u32,
    scope: RewindScope,
) -> Result<RewindPlan, RewindError> {
    let (checkpoint, later) = checkpoint_of(store, session_id, turn).await?;
    let last_turn = later.last().map_or(turn, |c| c.turn);
    let files = if scope.files() {
        let source = files_source(session_id, &checkpoint, &later)?;
        let cwd = PathBuf::from(&checkpoint.cwd);
        let (home, session) = (home.to_path_buf(), session_id.to_owned());
        let gone = || RewindError::WorkTreeGone {
            session: session_id.to_owned(),
            cwd: checkpoint.cwd.clone(),
        };
        let planned = tokio::task::spawn_blocking(move || {
            if !cwd.is_dir() {
                return Ok(None);
            }
            let shadow = Shadow::for_work_tree(&home, &cwd)?;
            let current = shadow
                .snapshot(
                    &session,
                    &format!("before rewinding session {session} to turn {turn}"),
                )?
                .commit;
            let (target, changes, note) = match source {
                Some((target, note)) => {
                    let changes = shadow.changes(&current, &target)?;
                    (target, changes, note)
                }
                None => (
                    current.clone(),
                    Vec::new(),
                    Some(format!(
                        "herald changed no files since turn {turn} began: there is nothing to restore"
                    )),
                ),
            };
            Ok::<_, ShadowError>(Some(FilesPlan {
                shadow,
                target,
                current,
                changes,
                note,
            }))
        })
        .await
        .map_err(store_error)??;
        Some(planned.ok_or_else(gone)?)
    } else {
        None
    };
    let conversation = if scope.conversation() {
        let history = history_before(store, session_id, &checkpoint).await?;
        let id = session_id.to_owned();
        let live_now = store
            .call(move |s| s.load_messages(&id))
            .await
            .map_err(store_error)?
            .map_err(store_error)
            .map(|all| crate::live_history(all.into_iter().map(|m| m.message).collect()).len())?;
        Some(ConversationPlan {
            history,
            last_turn,
            live_now,
        })
    } else {
        None
    };
    Ok(RewindPlan {
        session_id: session_id.to_owned(),
        turn,
        checkpoint,
        files,
        conversation,
    })
}

/// Applies a plan: files first (deleting what the turns created, writing
/// back what they changed or deleted), then the conversation (the rewind
/// record and the earlier conversation appended; the checkpoints of the
/// left-out turns marked rewound). The caller holds the session's lease.
pub async fn apply_rewind(
    store: &StoreHandle,
    plan: RewindPlan,
) -> Result<RewindOutcome, RewindError> {
    if plan.changes_files()
        && let Some(files) = &plan.files
    {
        keep_start_of_trailing_turns(store, &plan.session_id, &files.current).await?;
    }
    if let Some(files) = &plan.files {
        let files = files.clone();
        tokio::task::spawn_blocking(move || files.shadow.restore(&files.target, &files.changes))
            .await
            .map_err(store_error)??;
    }
    let history = match &plan.conversation {
        Some(conversation) => {
            let record = super::rewind_record(plan.turn, conversation.last_turn);
            let history = conversation.history.clone();
            let (id, turn) = (plan.session_id.clone(), plan.turn);
            let copy = history.clone();
            store
                .call(move |s| s.rewind_conversation(&id, turn, &record, &copy))
                .await
                .map_err(store_error)?
                .map_err(store_error)?;
            Some(history)
        }
        None => None,
    };
    Ok(RewindOutcome { plan, history })
}

/// Before a files rewind replaces the files: the trailing live turns that
/// took no snapshot (none after them did) started with the files as they
/// are now, and no later snapshot will say so once the rewind changed
/// them; `current` (the rewind's snapshot of them) becomes theirs.
async fn keep_start_of_trailing_turns(
    store: &StoreHandle,
    session_id: &str,
    current: &str,
) -> Result<(), RewindError> {
    let (id, current) = (session_id.to_owned(), current.to_owned());
    store
        .call(move |s| -> Result<(), herald_store::StoreError> {
            let live = s.checkpoints(&id, false)?;
            for checkpoint in live.iter().rev() {
                if checkpoint.commit_id.is_some() {
                    break;
                }
                match checkpoint.note.as_deref() {
                    Some(super::READ_ONLY_SESSION_NOTE) => {}
                    note if super::took_no_snapshot_for_reads(note) => {
                        s.set_checkpoint_snapshot(checkpoint.id, Some(&current), note)?;
                    }
                    // A turn that may have changed files without a
                    // snapshot: the turns before it cannot be restored.
                    _ => break,
                }
            }
            Ok(())
        })
        .await
        .map_err(store_error)?
        .map_err(store_error)
}

/// The history a fork of `source` at `turn` starts with: the source's
/// conversation before that user turn (the same messages, so the prompt
/// prefix stays cached), calls left open answered in the copy.
pub async fn fork_history(
    store: &StoreHandle,
    source: &str,
    turn: u32,
) -> Result<Vec<Message>, RewindError> {
    let (checkpoint, _) = checkpoint_of(store, source, turn).await?;
    history_before(store, source, &checkpoint).await
}
