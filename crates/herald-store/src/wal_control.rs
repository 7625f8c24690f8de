//! Control over when this connection waits and when it checkpoints, for a
//! caller that writes from a thread that must never block.
//!
//! A commit normally runs SQLite's automatic checkpoint when the write-ahead
//! log has grown past [`CHECKPOINT_PAGES`], and a checkpoint syncs the disk.
//! [`Store::defer_checkpoints`] replaces that with a counter the caller reads
//! after each write, so it can run [`Store::checkpoint`] on a thread of its
//! choosing. [`Store::without_waiting`] makes statements that meet another
//! connection's lock fail at once with [`StoreError::Locked`] instead of
//! sleeping in the busy handler.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::sql;
use crate::{Store, StoreError};

/// The log size, in pages, past which the log is copied back into the
/// database (set as `wal_autocheckpoint` on open; 16 MiB at 4 KiB pages).
pub const CHECKPOINT_PAGES: u32 = 4096;

impl Store {
    /// Stops commits from checkpointing on their own: from now on each
    /// commit stores the log's size in pages into the returned counter, and
    /// the caller runs [`Store::checkpoint`] once it reaches
    /// [`CHECKPOINT_PAGES`].
    pub fn defer_checkpoints(&mut self) -> Result<Arc<AtomicU32>, StoreError> {
        let pages = Arc::new(AtomicU32::new(0));
        let seen = Arc::clone(&pages);
        self.conn
            .wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, log_pages| {
                seen.store(u32::try_from(log_pages).unwrap_or(0), Ordering::Relaxed);
                Ok(())
            }))
            .map_err(sql(&self.path, "deferring checkpoints"))?;
        Ok(pages)
    }

    /// Copies what it can of the write-ahead log back into the database
    /// without waiting for readers (`PASSIVE`), as an automatic checkpoint
    /// does.
    pub fn checkpoint(&mut self) -> Result<(), StoreError> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(sql(&self.path, "checkpointing the write-ahead log"))
    }

    /// Runs `op` with this thread never waiting for another connection's
    /// lock: a statement that meets one fails at once with
    /// [`StoreError::Locked`]. A write transaction takes its lock first
    /// (`BEGIN IMMEDIATE`), so a single-transaction write that fails that
    /// way has changed nothing and can be run again elsewhere.
    pub fn without_waiting<R>(&mut self, op: impl FnOnce(&mut Store) -> R) -> R {
        crate::busy::without_waiting(|| op(self))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::{Duration, Instant};

    use super::*;
    use crate::{NewSession, SessionSource};

    fn session(id: &str) -> NewSession {
        NewSession {
            id: id.into(),
            parent_session_id: None,
            agent_id: None,
            source: SessionSource::Cli,
            cwd: "/w".into(),
            model: "m".into(),
            provider: "openai".into(),
            system_prompt: "sys".into(),
        }
    }

    #[test]
    fn a_locked_database_fails_at_once_without_waiting_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let mut store = Store::open(&db).unwrap();
        let other = rusqlite::Connection::open(&db).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let started = Instant::now();
        let err = store
            .without_waiting(|s| s.create_session(&session("ses_a")))
            .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "waited {:?} for the lock",
            started.elapsed()
        );
        assert!(matches!(err, StoreError::Locked { .. }), "{err}");
        other.execute_batch("ROLLBACK").unwrap();
        assert!(store.get_session("ses_a").unwrap().is_none());
        // Outside `without_waiting` the same write goes through.
        store.create_session(&session("ses_a")).unwrap();
        assert!(store.get_session("ses_a").unwrap().is_some());
    }

    #[test]
    fn deferred_checkpoints_leave_the_log_to_the_caller_and_count_its_pages() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let mut store = Store::open(&db).unwrap();
        let pages = store.defer_checkpoints().unwrap();
        let wal = dir.path().join("state.db-wal");
        // Past the automatic checkpoint's size: nothing copies the log back.
        let text = "x".repeat(64 * 1024);
        store.create_session(&session("ses_big")).unwrap();
        let (mut last, mut appended) = (0, 0);
        while last < CHECKPOINT_PAGES + 64 {
            appended += 1;
            store
                .append_messages("ses_big", &[herald_protocol::Message::user(text.clone())])
                .unwrap();
            let now = pages.load(Ordering::Relaxed);
            assert!(now > last, "the counter did not grow: {last} -> {now}");
            last = now;
        }
        let log_bytes = std::fs::metadata(&wal).unwrap().len();
        assert!(
            log_bytes > u64::from(CHECKPOINT_PAGES) * 4096,
            "{log_bytes}"
        );
        store.checkpoint().unwrap();
        // The next commit starts the log over.
        store
            .append_messages("ses_big", &[herald_protocol::Message::user("small")])
            .unwrap();
        assert!(
            pages.load(Ordering::Relaxed) < 64,
            "{}",
            pages.load(Ordering::Relaxed)
        );
        drop(store);
        let reopened = Store::open(&db).unwrap();
        assert_eq!(
            reopened.load_messages("ses_big").unwrap().len(),
            appended + 1
        );
    }
}
