//! Session heartbeats (schema v22): a session with a heartbeat is woken
//! every `every_ms` (within its active hours) with the text of
//! `HEARTBEAT.md` as a new user turn. The store keeps when it is due next
//! and how its last wake ended; when and how to wake is `herald-cron`'s
//! part.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use crate::error::{StoreError, sql};
use crate::store::Store;

/// A session's heartbeat as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Heartbeat {
    /// The session it wakes.
    pub session_id: String,
    /// Milliseconds between wakes.
    pub every_ms: i64,
    /// `HH:MM-HH:MM` in `tz`, or `None`: at any hour.
    pub active_hours: Option<String>,
    /// IANA time zone the active hours are read in.
    pub tz: String,
    /// Unix ms of the next wake.
    pub next_due_at: i64,
    /// When its last wake ended.
    pub last_wake_at: Option<i64>,
    /// How its last wake ended: `ok`, `alert`, `skipped` or `failed`.
    pub last_outcome: Option<String>,
    /// The reply (or error) of its last wake, unless it was `ok`.
    pub last_reply: Option<String>,
    /// Wakes so far (skipped ones included).
    pub wakes: u64,
    /// When it was first set (Unix ms).
    pub created_at: i64,
    /// When it was last set or woke (Unix ms).
    pub updated_at: i64,
}

const COLUMNS: &str = "session_id, every_ms, active_hours, tz, next_due_at, last_wake_at, \
     last_outcome, last_reply, wakes, created_at, updated_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<Heartbeat> {
    Ok(Heartbeat {
        session_id: row.get(0)?,
        every_ms: row.get(1)?,
        active_hours: row.get(2)?,
        tz: row.get(3)?,
        next_due_at: row.get(4)?,
        last_wake_at: row.get(5)?,
        last_outcome: row.get(6)?,
        last_reply: row.get(7)?,
        wakes: u64::try_from(row.get::<_, i64>(8)?).unwrap_or(0),
        created_at: row.get(9)?,
        updated_at: row.get(10)?,
    })
}

impl Store {
    /// Gives `session_id` a heartbeat (or replaces its settings), first due
    /// at `next_due_at`; its history of wakes is kept on a replace.
    pub fn set_heartbeat(
        &mut self,
        session_id: &str,
        every_ms: i64,
        active_hours: Option<&str>,
        tz: &str,
        next_due_at: i64,
        now: i64,
    ) -> Result<Heartbeat, StoreError> {
        const CTX: &str = "setting a heartbeat";
        self.conn
            .prepare_cached(
                "INSERT INTO heartbeats (session_id, every_ms, active_hours, tz, next_due_at, \
                 created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) \
                 ON CONFLICT(session_id) DO UPDATE SET every_ms = ?2, active_hours = ?3, \
                 tz = ?4, next_due_at = ?5, updated_at = ?6",
            )
            .and_then(|mut s| {
                s.execute(params![
                    session_id,
                    every_ms,
                    active_hours,
                    tz,
                    next_due_at,
                    now
                ])
            })
            .map_err(sql(&self.path, CTX))?;
        self.heartbeat(session_id)?
            .ok_or_else(|| StoreError::UnknownSession(session_id.to_owned()))
    }

    /// The heartbeat of `session_id`, if it has one.
    pub fn heartbeat(&self, session_id: &str) -> Result<Option<Heartbeat>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM heartbeats WHERE session_id = ?1"
            ))
            .and_then(|mut s| s.query_row([session_id], from_row).optional())
            .map_err(sql(&self.path, "reading a heartbeat"))
    }

    /// Every heartbeat, the soonest due first.
    pub fn heartbeats(&self) -> Result<Vec<Heartbeat>, StoreError> {
        const CTX: &str = "listing heartbeats";
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM heartbeats ORDER BY next_due_at, session_id"
            ))
            .map_err(sql(&self.path, CTX))?;
        let rows = stmt
            .query_map([], from_row)
            .and_then(Iterator::collect)
            .map_err(sql(&self.path, CTX))?;
        Ok(rows)
    }

    /// Removes the heartbeat of `session_id`; `false` when it had none.
    pub fn remove_heartbeat(&mut self, session_id: &str) -> Result<bool, StoreError> {
        let changed = self
            .conn
            .prepare_cached("DELETE FROM heartbeats WHERE session_id = ?1")
            .and_then(|mut s| s.execute([session_id]))
            .map_err(sql(&self.path, "removing a heartbeat"))?;
        Ok(changed > 0)
    }

    /// Records how a wake ended at `at` and when the next is due;
    /// `false` when the heartbeat was removed meanwhile.
    pub fn record_heartbeat_wake(
        &mut self,
        session_id: &str,
        at: i64,
        outcome: &str,
        reply: Option<&str>,
        next_due_at: i64,
    ) -> Result<bool, StoreError> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE heartbeats SET last_wake_at = ?2, last_outcome = ?3, last_reply = ?4, \
                 next_due_at = ?5, wakes = wakes + 1, updated_at = ?2 WHERE session_id = ?1",
            )
            .and_then(|mut s| s.execute(params![session_id, at, outcome, reply, next_due_at]))
            .map_err(sql(&self.path, "recording a heartbeat wake"))?;
        Ok(changed > 0)
    }

    /// Moves the next wake of `session_id` to `next_due_at` without a wake
    /// (a tick outside its active hours).
    pub fn postpone_heartbeat(
        &mut self,
        session_id: &str,
        next_due_at: i64,
    ) -> Result<bool, StoreError> {
        let changed = self
            .conn
            .prepare_cached("UPDATE heartbeats SET next_due_at = ?2 WHERE session_id = ?1")
            .and_then(|mut s| s.execute(params![session_id, next_due_at]))
            .map_err(sql(&self.path, "postponing a heartbeat"))?;
        Ok(changed > 0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use crate::{NewSession, Store};

    fn store_with_session() -> (Store, String) {
        let mut store = Store::open_in_memory().unwrap();
        let id = "ses_hb".to_owned();
        store.create_session(&NewSession::for_test(&id)).unwrap();
        (store, id)
    }

    #[test]
    fn a_heartbeat_is_set_replaced_recorded_and_removed_with_its_session() {
        let (mut store, id) = store_with_session();
        let set = store
            .set_heartbeat(&id, 1_800_000, Some("08:00-22:00"), "UTC", 10, 1)
            .unwrap();
        assert_eq!(set.every_ms, 1_800_000);
        assert!(
            store
                .record_heartbeat_wake(&id, 20, "alert", Some("disk full"), 30)
                .unwrap()
        );
        let replaced = store
            .set_heartbeat(&id, 60_000, None, "UTC", 40, 21)
            .unwrap();
        assert_eq!(replaced.active_hours, None);
        assert_eq!(replaced.wakes, 1, "a replace keeps the history");
        assert_eq!(replaced.last_outcome.as_deref(), Some("alert"));
        assert_eq!(store.heartbeats().unwrap().len(), 1);
        store.delete_session(&id).unwrap();
        assert!(store.heartbeat(&id).unwrap().is_none());
        assert!(!store.remove_heartbeat(&id).unwrap());
    }
}
