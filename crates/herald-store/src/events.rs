//! The event stream of a session, stored so any front end can
//! show or replay it: every event a run emitted, under an id that only grows
//! (per database, never reused, also after deletes), with the tool calls an
//! `execute_code` script made (`sandbox.call`) among them.

use crate::write_unit::WriteUnit;
use rusqlite::params;
use serde::{Deserialize, Serialize};

use crate::error::{StoreError, sql};
use crate::sessions::require_session;
use crate::store::{Store, now_ms};

/// One stored event, oldest first when listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// Monotonic per database: a later event always has a larger id.
    pub id: i64,
    /// The session the event is stored with.
    pub session_id: String,
    /// The agent that emitted it (`root` for the top agent).
    pub agent_id: String,
    /// The event type, e.g. `tool.started` or `sandbox.call`.
    pub kind: String,
    /// The event's JSON, as emitted.
    pub payload: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// The root session of the tree the event belongs to.
    pub root_session_id: Option<String>,
    /// Its place in the tree's event stream (see [`Store::load_tree_events_after`]).
    pub seq: Option<i64>,
}

/// An event to append with [`Store::record_events`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// The agent that emitted it.
    pub agent_id: String,
    /// The event type (`type` of the JSON).
    pub kind: String,
    /// The event's JSON.
    pub payload: String,
    /// Its place in the session tree's stream, when the emitter numbered it.
    pub seq: Option<i64>,
}

/// The columns [`stored_event`] reads, in its order.
const EVENT_COLUMNS: &str =
    "id, session_id, agent_id, kind, payload, created_at, root_session_id, seq";

/// One `events` row selected with [`EVENT_COLUMNS`].
fn stored_event(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredEvent> {
    Ok(StoredEvent {
        id: r.get(0)?,
        session_id: r.get(1)?,
        agent_id: r.get(2)?,
        kind: r.get(3)?,
        payload: r.get(4)?,
        created_at: r.get(5)?,
        root_session_id: r.get(6)?,
        seq: r.get(7)?,
    })
}

impl Store {
    /// Appends one event of `kind` with a JSON `payload` to a session and
    /// returns its id.
    pub fn record_event(
        &mut self,
        session_id: &str,
        agent_id: &str,
        kind: &str,
        payload: &str,
    ) -> Result<i64, StoreError> {
        let ids = self.record_events(
            session_id,
            &[NewEvent {
                agent_id: agent_id.to_owned(),
                kind: kind.to_owned(),
                payload: payload.to_owned(),
                seq: None,
            }],
        )?;
        Ok(ids.first().copied().unwrap_or_default())
    }

    /// Appends `events` to a session in one transaction, in order, and
    /// returns their ids (increasing). An unknown session stores nothing.
    pub fn record_events(
        &mut self,
        session_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<i64>, StoreError> {
        const CTX: &str = "recording events";
        let tx = WriteUnit::begin(&self.conn).map_err(sql(&self.path, CTX))?;
        require_session(&tx, &self.path, session_id)?;
        let now = now_ms();
        let mut ids = Vec::with_capacity(events.len());
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO events (session_id, agent_id, kind, payload, created_at, root_session_id, seq) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?1, ?6)",
                )
                .map_err(sql(&self.path, CTX))?;
            for event in events {
                stmt.execute(params![
                    session_id,
                    event.agent_id,
                    event.kind,
                    event.payload,
                    now,
                    event.seq
                ])
                .map_err(sql(&self.path, CTX))?;
                ids.push(tx.last_insert_rowid());
            }
        }
        tx.commit().map_err(sql(&self.path, CTX))?;
        Ok(ids)
    }

    /// Appends events of several sessions of the tree rooted at `root` in
    /// one transaction, in order (`(session_id, event)` pairs; a session
    /// tree's events share one write). Rows of a session that does not exist
    /// are skipped. Returns how many were stored.
    pub fn record_events_of_sessions(
        &mut self,
        root: &str,
        rows: &[(&str, NewEvent)],
    ) -> Result<usize, StoreError> {
        const CTX: &str = "recording events";
        let tx = WriteUnit::begin(&self.conn).map_err(sql(&self.path, CTX))?;
        let now = now_ms();
        let mut stored = 0;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO events (session_id, agent_id, kind, payload, created_at, root_session_id, seq) \
                     SELECT id, ?2, ?3, ?4, ?5, ?6, ?7 FROM sessions WHERE id = ?1",
                )
                .map_err(sql(&self.path, CTX))?;
            for (session_id, event) in rows {
                stored += stmt
                    .execute(params![
                        session_id,
                        event.agent_id,
                        event.kind,
                        event.payload,
                        now,
                        root,
                        event.seq
                    ])
                    .map_err(sql(&self.path, CTX))?;
            }
        }
        tx.commit().map_err(sql(&self.path, CTX))?;
        Ok(stored)
    }

    /// Every event of a session in the order they were recorded.
    pub fn load_events(&self, session_id: &str) -> Result<Vec<StoredEvent>, StoreError> {
        self.load_events_after(session_id, 0, usize::MAX)
    }

    /// Up to `limit` events of a session whose id is greater than `after`,
    /// oldest first: what a reader that has seen event `after` missed.
    pub fn load_events_after(
        &self,
        session_id: &str,
        after: i64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        const CTX: &str = "reading events";
        require_session(&self.conn, &self.path, session_id)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self
            .conn
            .prepare_cached(
                &format!(
                    "SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3"
                ),
            )
            .map_err(sql(&self.path, CTX))?;
        // Bound to a local so the row iterator is dropped before `stmt`.
        let rows: Result<Vec<StoredEvent>, StoreError> = stmt
            .query_map(params![session_id, after, limit], stored_event)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(sql(&self.path, CTX));
        rows
    }

    /// Up to `limit` events of the session tree rooted at `root` (the root's
    /// own and every subagent's) whose sequence number is greater than
    /// `after`, in sequence order: what a follower of the tree's stream that
    /// has seen event `after` missed. Errors when `root` is not a session.
    pub fn load_tree_events_after(
        &self,
        root: &str,
        after: i64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        const CTX: &str = "reading the events of a session tree";
        require_session(&self.conn, &self.path, root)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self
            .conn
            .prepare_cached(
                &format!(
                    "SELECT {EVENT_COLUMNS} FROM events WHERE root_session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"
                ),
            )
            .map_err(sql(&self.path, CTX))?;
        let rows: Result<Vec<StoredEvent>, StoreError> = stmt
            .query_map(params![root, after, limit], stored_event)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(sql(&self.path, CTX));
        rows
    }

    /// How long each finished tool call of a session took, by call id, from
    /// its stored `tool.completed` events: a stored transcript shows the
    /// durations the live one did. Calls without such an event (a run that
    /// died mid-call, messages imported from elsewhere) are absent.
    pub fn tool_durations(
        &self,
        session_id: &str,
    ) -> Result<std::collections::HashMap<String, u64>, StoreError> {
        const CTX: &str = "reading tool durations";
        /// The fields of a `tool.completed` payload read here.
        #[derive(Deserialize)]
        struct Completed {
            call_id: String,
            duration_ms: u64,
        }
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT payload FROM events WHERE session_id = ?1 AND kind = 'tool.completed'",
            )
            .map_err(sql(&self.path, CTX))?;
        let payloads: Result<Vec<String>, StoreError> = stmt
            .query_map(params![session_id], |r| r.get(0))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(sql(&self.path, CTX));
        // A payload this build cannot read (written by another version) is
        // skipped: the call then shows no duration.
        Ok(payloads?
            .iter()
            .filter_map(|p| serde_json::from_str::<Completed>(p).ok())
            .map(|c| (c.call_id, c.duration_ms))
            .collect())
    }

    /// The highest sequence number stored for the tree rooted at `root` (0
    /// when none): a process continuing the tree numbers on from here.
    pub fn last_tree_event_seq(&self, root: &str) -> Result<i64, StoreError> {
        self.conn
            .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM events WHERE root_session_id = ?1")
            .and_then(|mut stmt| stmt.query_row(params![root], |r| r.get(0)))
            .map_err(sql(
                &self.path,
                "reading the last event number of a session tree",
            ))
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

    fn event(kind: &str, payload: &str) -> NewEvent {
        NewEvent {
            agent_id: "root".to_owned(),
            kind: kind.to_owned(),
            payload: payload.to_owned(),
            seq: None,
        }
    }

    #[test]
    fn tool_durations_come_from_the_sessions_completed_calls() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "s1");
        session(&mut store, "s2");
        store
            .record_events(
                "s1",
                &[
                    event("tool.started", r#"{"type":"tool.started","call_id":"c1"}"#),
                    event(
                        "tool.completed",
                        r#"{"type":"tool.completed","call_id":"c1","duration_ms":1234,"status":"ok"}"#,
                    ),
                    // A payload without the fields is skipped, not an error.
                    event("tool.completed", r#"{"type":"tool.completed"}"#),
                ],
            )
            .unwrap();
        store
            .record_events(
                "s2",
                &[event(
                    "tool.completed",
                    r#"{"type":"tool.completed","call_id":"c9","duration_ms":5}"#,
                )],
            )
            .unwrap();
        let durations = store.tool_durations("s1").unwrap();
        assert_eq!(durations.len(), 1, "{durations:?}");
        assert_eq!(durations.get("c1"), Some(&1234));
        assert!(store.tool_durations("nope").unwrap().is_empty());
    }

    fn numbered(kind: &str, seq: i64) -> NewEvent {
        NewEvent {
            seq: Some(seq),
            ..event(kind, "{}")
        }
    }

    #[test]
    fn a_tree_stream_replays_root_and_child_events_by_sequence() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "root");
        session(&mut store, "child");
        session(&mut store, "other");
        assert_eq!(store.last_tree_event_seq("root").unwrap(), 0);
        let stored = store
            .record_events_of_sessions(
                "root",
                &[
                    ("root", numbered("session.started", 1)),
                    ("child", numbered("subagent.started", 2)),
                    ("root", numbered("tool.started", 3)),
                    ("gone", numbered("usage", 4)),
                ],
            )
            .unwrap();
        assert_eq!(stored, 3, "the row of a missing session is skipped");
        store
            .record_events_of_sessions("other", &[("other", numbered("usage", 9))])
            .unwrap();
        assert_eq!(store.last_tree_event_seq("root").unwrap(), 3);
        let after = store.load_tree_events_after("root", 1, 10).unwrap();
        let seen: Vec<_> = after
            .iter()
            .map(|e| (e.seq, e.session_id.as_str(), e.kind.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                (Some(2), "child", "subagent.started"),
                (Some(3), "root", "tool.started")
            ]
        );
        assert_eq!(after[0].root_session_id.as_deref(), Some("root"));
        assert_eq!(store.load_tree_events_after("root", 1, 1).unwrap().len(), 1);
        assert!(
            store
                .load_tree_events_after("root", 3, 10)
                .unwrap()
                .is_empty()
        );
        assert!(matches!(
            store.load_tree_events_after("nope", 0, 10),
            Err(StoreError::UnknownSession(_))
        ));
    }

    #[test]
    fn events_round_trip_in_order_per_session() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "a");
        session(&mut store, "b");
        let first = store
            .record_event("a", "root", "sandbox.call", r#"{"name":"read_file"}"#)
            .unwrap();
        store
            .record_event("b", "ag_1", "sandbox.call", "{}")
            .unwrap();
        let second = store
            .record_event("a", "root", "sandbox.call", r#"{"name":"terminal"}"#)
            .unwrap();
        let events = store.load_events("a").unwrap();
        assert_eq!(
            events.iter().map(|e| e.id).collect::<Vec<_>>(),
            [first, second]
        );
        assert_eq!(events[1].payload, r#"{"name":"terminal"}"#);
        assert_eq!(events[0].kind, "sandbox.call");
        assert_eq!(events[0].session_id, "a");
        assert!(events[0].created_at > 0);
        let b = store.load_events("b").unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].agent_id, "ag_1");
    }

    #[test]
    fn batches_keep_their_order_and_load_after_an_id() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "a");
        let ids = store
            .record_events(
                "a",
                &[
                    event("session.started", "{}"),
                    event("tool.started", "{}"),
                    event("run.completed", "{}"),
                ],
            )
            .unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        let after = store.load_events_after("a", ids[0], 10).unwrap();
        assert_eq!(
            after.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(),
            ["tool.started", "run.completed"]
        );
        let one = store.load_events_after("a", ids[0], 1).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].id, ids[1]);
        assert!(store.load_events_after("a", ids[2], 10).unwrap().is_empty());
    }

    #[test]
    fn ids_are_never_reused_after_a_delete() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "a");
        let old = store.record_event("a", "root", "usage", "{}").unwrap();
        assert!(store.delete_session("a").unwrap());
        session(&mut store, "b");
        let new = store.record_event("b", "root", "usage", "{}").unwrap();
        assert!(new > old, "{new} after {old}");
    }

    #[test]
    fn unknown_sessions_are_errors() {
        let mut store = Store::open_in_memory().unwrap();
        assert!(matches!(
            store.record_event("nope", "root", "sandbox.call", "{}"),
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
        store
            .record_event("a", "root", "sandbox.call", "{}")
            .unwrap();
        assert!(store.delete_session("a").unwrap());
        let left: i64 = store
            .conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod migration_tests {
    use rusqlite::Connection;

    use crate::migrations::{MIGRATIONS, migrate};

    #[test]
    fn v8_keeps_the_rows_and_ids_of_v6_events() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
        let v8 = MIGRATIONS.iter().position(|m| m.version == 8).unwrap();
        migrate(&mut conn, ":memory:", &MIGRATIONS[..v8]).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (id, source, started_at, last_active_at) VALUES ('s', 'cli', 1, 1);
             INSERT INTO events (id, session_id, kind, payload, created_at)
                 VALUES (7, 's', 'sandbox.call', '{\"name\":\"read_file\"}', 5);",
        )
        .unwrap();
        migrate(&mut conn, ":memory:", MIGRATIONS).unwrap();
        let (id, agent, kind): (i64, String, String) = conn
            .query_row("SELECT id, agent_id, kind FROM events", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!(
            (id, agent.as_str(), kind.as_str()),
            (7, "root", "sandbox.call")
        );
        conn.execute(
            "INSERT INTO events (session_id, kind, payload, created_at) VALUES ('s', 'usage', '{}', 6)",
            [],
        )
        .unwrap();
        assert_eq!(conn.last_insert_rowid(), 8);
    }

    #[test]
    fn v9_numbers_old_events_and_finds_their_tree() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
        let v9 = MIGRATIONS.iter().position(|m| m.version == 9).unwrap();
        migrate(&mut conn, ":memory:", &MIGRATIONS[..v9]).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (id, source, started_at, last_active_at) VALUES ('r', 'cli', 1, 1), ('c', 'cli', 1, 1);
             INSERT INTO agents (id, parent_session_id, root_session_id, session_id, depth, role, goal, status, created_at)
                 VALUES ('ag_1', 'r', 'r', 'c', 1, 'leaf', 'g', 'completed', 1);
             INSERT INTO events (id, session_id, kind, payload, created_at) VALUES
                 (3, 'r', 'usage', '{}', 5), (4, 'c', 'usage', '{}', 6);",
        )
        .unwrap();
        migrate(&mut conn, ":memory:", MIGRATIONS).unwrap();
        let rows: Vec<(i64, String)> = conn
            .prepare("SELECT seq, root_session_id FROM events ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows, [(3, "r".to_owned()), (4, "r".to_owned())]);
    }
}
