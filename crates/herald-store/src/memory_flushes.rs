//! Which sessions still owe their end-of-session memory flush. A session
//! is marked when its conversation has enough user turns for the flush at
//! its end, before that flush runs, so the mark survives whatever stops
//! the flush: its time limit, Esc, a signal, or the process being killed
//! before it. A completed (`done`) flush clears the mark; any other
//! outcome keeps it, and a later start of herald runs the flush then
//! (`herald_core`'s deferred flush), at most [`MAX_DEFERRED_ATTEMPTS`]
//! times. Only a new stretch of user turns marks the session again, so the
//! same stretch is never flushed twice.

use rusqlite::{OptionalExtension, params};

use crate::error::{StoreError, sql};
use crate::store::{Store, now_ms};

/// How many later starts try a session's owed flush before giving up on it
/// (a flush that keeps failing is not retried forever).
pub const MAX_DEFERRED_ATTEMPTS: u32 = 3;

/// A session's memory flush state (one row of `memory_flushes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushState {
    pub session_id: String,
    /// A stretch of the conversation still waits for its flush.
    pub due: bool,
    /// The newest message (`seq`) of the stretch when it was marked.
    pub through_seq: i64,
    /// The tool list the session's requests carried (a JSON array of tool
    /// specs), so a deferred flush sends the same prefix.
    pub tools: String,
    /// How the latest flush of the session ended (`done`, `timeout`,
    /// `interrupted`, `failed`), if one ran since the mark.
    pub status: Option<String>,
    /// Deferred flushes tried at later starts.
    pub attempts: u32,
    /// Unix milliseconds of the latest change.
    pub updated_at: i64,
}

fn state(row: &rusqlite::Row<'_>) -> rusqlite::Result<FlushState> {
    Ok(FlushState {
        session_id: row.get(0)?,
        due: row.get::<_, i64>(1)? != 0,
        through_seq: row.get(2)?,
        tools: row.get(3)?,
        status: row.get(4)?,
        attempts: u32::try_from(row.get::<_, i64>(5)?).unwrap_or(u32::MAX),
        updated_at: row.get(6)?,
    })
}

const COLUMNS: &str = "session_id, due, through_seq, tools, status, attempts, updated_at";

impl Store {
    /// Marks `session_id` as owing a flush of its conversation up to its
    /// newest message; `tools` is the JSON tool list its requests carry.
    /// Marking a session that is already due updates the stretch and keeps
    /// its attempts.
    pub fn mark_flush_due(&mut self, session_id: &str, tools: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO memory_flushes (session_id, due, through_seq, tools, status, attempts, updated_at) \
                 VALUES (?1, 1, (SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?1), ?2, NULL, 0, ?3) \
                 ON CONFLICT(session_id) DO UPDATE SET \
                     attempts = CASE WHEN due = 1 THEN attempts ELSE 0 END, \
                     status = CASE WHEN due = 1 THEN status ELSE NULL END, \
                     due = 1, through_seq = excluded.through_seq, tools = excluded.tools, \
                     updated_at = excluded.updated_at",
            )
            .and_then(|mut s| s.execute(params![session_id, tools, now_ms()]))
            .map_err(sql(&self.path, "marking a memory flush as due"))?;
        Ok(())
    }

    /// Records how a flush of `session_id` ended (`status` is the flush
    /// status's word): `done` clears the due mark, anything else keeps it.
    /// A `deferred` flush that did not finish counts as an attempt, unless
    /// it was `interrupted` (its process was leaving): one that fails at
    /// every start is given up after [`MAX_DEFERRED_ATTEMPTS`]. A session
    /// never marked has nothing to record.
    pub fn record_flush(
        &mut self,
        session_id: &str,
        status: &str,
        deferred: bool,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "UPDATE memory_flushes SET status = ?2, \
                     due = CASE WHEN ?2 = 'done' THEN 0 ELSE due END, \
                     attempts = attempts + (CASE WHEN ?3 = 1 AND ?2 != 'interrupted' THEN 1 ELSE 0 END), \
                     updated_at = ?4 \
                 WHERE session_id = ?1",
            )
            .and_then(|mut s| {
                s.execute(params![
                    session_id,
                    status,
                    i64::from(u8::from(deferred)),
                    now_ms()
                ])
            })
            .map_err(sql(&self.path, "recording a memory flush"))?;
        Ok(())
    }

    /// Up to `limit` sessions that still owe a flush and were tried fewer
    /// than [`MAX_DEFERRED_ATTEMPTS`] times, most recently marked first.
    pub fn due_flushes(&self, limit: usize) -> Result<Vec<FlushState>, StoreError> {
        const CTX: &str = "listing the memory flushes still due";
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM memory_flushes WHERE due = 1 AND attempts < ?1 \
                 ORDER BY updated_at DESC LIMIT ?2"
            ))
            .map_err(sql(&self.path, CTX))?;
        let rows = stmt
            .query_map(
                params![
                    i64::from(MAX_DEFERRED_ATTEMPTS),
                    i64::try_from(limit).unwrap_or(i64::MAX)
                ],
                state,
            )
            .map_err(sql(&self.path, CTX))?;
        rows.collect::<Result<_, _>>().map_err(sql(&self.path, CTX))
    }

    /// The flush state of `session_id`; `None` when it never owed one.
    pub fn flush_state(&self, session_id: &str) -> Result<Option<FlushState>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM memory_flushes WHERE session_id = ?1"
            ))
            .and_then(|mut s| s.query_row([session_id], state).optional())
            .map_err(sql(&self.path, "reading the memory flush state"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{NewSession, SessionSource};
    use herald_protocol::Message;

    fn session(store: &mut Store, id: &str) {
        store
            .create_session(&NewSession {
                id: id.to_owned(),
                parent_session_id: None,
                agent_id: Some("root".to_owned()),
                source: SessionSource::Cli,
                cwd: "/tmp".to_owned(),
                model: "m".to_owned(),
                provider: "openai".to_owned(),
                system_prompt: "sys".to_owned(),
            })
            .unwrap();
    }

    #[test]
    fn a_mark_lasts_until_a_flush_is_done() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "s1");
        store
            .append_messages("s1", &[Message::user("a"), Message::assistant("b", vec![])])
            .unwrap();
        assert_eq!(store.flush_state("s1").unwrap(), None);
        // Recording a flush of a session never marked changes nothing.
        store.record_flush("s1", "timeout", false).unwrap();
        assert_eq!(store.flush_state("s1").unwrap(), None);

        store.mark_flush_due("s1", "[]").unwrap();
        let marked = store.flush_state("s1").unwrap().unwrap();
        assert!(marked.due);
        assert_eq!(marked.through_seq, 2);
        store.record_flush("s1", "timeout", false).unwrap();
        store.record_flush("s1", "interrupted", true).unwrap();
        store.record_flush("s1", "timeout", true).unwrap();
        let due = store.due_flushes(10).unwrap();
        assert_eq!(due.len(), 1);
        // Only the deferred try that did not end by leaving counts.
        assert_eq!(
            (due[0].status.as_deref(), due[0].attempts),
            (Some("timeout"), 1)
        );
        // Marking again (a later turn) keeps the attempts.
        store.mark_flush_due("s1", "[]").unwrap();
        assert_eq!(store.flush_state("s1").unwrap().unwrap().attempts, 1);

        store.record_flush("s1", "done", true).unwrap();
        let done = store.flush_state("s1").unwrap().unwrap();
        assert!(!done.due);
        assert_eq!(done.status.as_deref(), Some("done"));
        assert!(store.due_flushes(10).unwrap().is_empty());
        // A new stretch starts over.
        store.mark_flush_due("s1", "[]").unwrap();
        let again = store.flush_state("s1").unwrap().unwrap();
        assert_eq!((again.due, again.attempts, again.status), (true, 0, None));
    }

    #[test]
    fn attempts_run_out_and_deleted_sessions_take_their_mark_along() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "s1");
        session(&mut store, "s2");
        store.mark_flush_due("s1", "[]").unwrap();
        store.mark_flush_due("s2", "[]").unwrap();
        for _ in 0..MAX_DEFERRED_ATTEMPTS {
            store.record_flush("s1", "failed", true).unwrap();
        }
        let due: Vec<String> = store
            .due_flushes(10)
            .unwrap()
            .into_iter()
            .map(|s| s.session_id)
            .collect();
        assert_eq!(due, ["s2"]);
        assert_eq!(store.due_flushes(0).unwrap(), Vec::new());
        assert!(store.delete_session("s2").unwrap());
        assert_eq!(store.flush_state("s2").unwrap(), None);
    }
}
