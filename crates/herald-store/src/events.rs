//! Session events that are not conversation messages, such as the tool calls
//! an `execute_code` script made (SPEC §12): kept with the transcript for
//! debugging and audit, never replayed to the model.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use crate::error::{StoreError, sql};
use crate::sessions::require_session;
use crate::store::{Store, now_ms};

/// One stored event, oldest first when listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEvent {
    pub id: i64,
    /// What happened, e.g. `sandbox.call`.
    pub kind: String,
    /// The event's JSON, as recorded.
    pub payload: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

impl Store {
    /// Appends an event of `kind` with a JSON `payload` to a session and
    /// returns its id.
    pub fn record_event(
        &mut self,
        session_id: &str,
        kind: &str,
        payload: &str,
    ) -> Result<i64, StoreError> {
        const CTX: &str = "recording an event";
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT INTO events (session_id, kind, payload, created_at) \
                 SELECT id, ?2, ?3, ?4 FROM sessions WHERE id = ?1",
            )
            .and_then(|mut s| s.execute(params![session_id, kind, payload, now_ms()]))
            .map_err(sql(&self.path, CTX))?;
        if inserted == 0 {
            return Err(StoreError::UnknownSession(session_id.to_owned()));
        }
        Ok(self.conn.last_insert_rowid())
    }

    /// Every event of a session in the order they were recorded.
    pub fn load_events(&self, session_id: &str) -> Result<Vec<StoredEvent>, StoreError> {
        const CTX: &str = "reading events";
        require_session(&self.conn, &self.path, session_id)?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, kind, payload, created_at FROM events \
                 WHERE session_id = ?1 ORDER BY id",
            )
            .map_err(sql(&self.path, CTX))?;
        // Bound to a local so the row iterator is dropped before `stmt`.
        let rows: Result<Vec<StoredEvent>, StoreError> = stmt
            .query_map([session_id], |r| {
                Ok(StoredEvent {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    payload: r.get(2)?,
                    created_at: r.get(3)?,
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(sql(&self.path, CTX));
        rows
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{NewSession, SessionSource};

    fn session(store: &mut Store, id: &str) {
        store
            .create_session(&NewSession {
                id: id.to_owned(),
                parent_session_id: None,
                agent_id: Some("root".to_owned()),
                source: SessionSource::Cli,
                cwd: "/w".to_owned(),
                model: "m".to_owned(),
                provider: "openai".to_owned(),
                system_prompt: "s".to_owned(),
            })
            .unwrap();
    }

    #[test]
    fn events_round_trip_in_order_per_session() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "a");
        session(&mut store, "b");
        let first = store
            .record_event("a", "sandbox.call", r#"{"name":"read_file"}"#)
            .unwrap();
        store.record_event("b", "sandbox.call", "{}").unwrap();
        let second = store
            .record_event("a", "sandbox.call", r#"{"name":"terminal"}"#)
            .unwrap();
        let events = store.load_events("a").unwrap();
        assert_eq!(
            events.iter().map(|e| e.id).collect::<Vec<_>>(),
            [first, second]
        );
        assert_eq!(events[1].payload, r#"{"name":"terminal"}"#);
        assert_eq!(events[0].kind, "sandbox.call");
        assert!(events[0].created_at > 0);
        assert_eq!(store.load_events("b").unwrap().len(), 1);
    }

    #[test]
    fn unknown_sessions_are_errors() {
        let mut store = Store::open_in_memory().unwrap();
        assert!(matches!(
            store.record_event("nope", "sandbox.call", "{}"),
            Err(StoreError::UnknownSession(_))
        ));
        assert!(matches!(
            store.load_events("nope"),
            Err(StoreError::UnknownSession(_))
        ));
    }

    #[test]
    fn deleting_a_session_deletes_its_events() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "a");
        store.record_event("a", "sandbox.call", "{}").unwrap();
        assert!(store.delete_session("a").unwrap());
        let left: i64 = store
            .conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }
}
