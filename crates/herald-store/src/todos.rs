//! The task list of each session, stored as the JSON the todo
//! tools produce so a resumed session continues with the same plan.

use rusqlite::{OptionalExtension, params};

use crate::error::{StoreError, sql};
use crate::sessions::require_session;
use crate::store::{Store, now_ms};

impl Store {
    /// Stores (replacing) the task list of a session. `items_json` is the
    /// list as the todo tools serialise it; the store keeps it opaque.
    pub fn save_todos(&mut self, session_id: &str, items_json: &str) -> Result<(), StoreError> {
        save_todos_in(&self.conn, &self.path, session_id, items_json)
    }

    /// The stored task list of a session, or `None` when it never had one.
    pub fn load_todos(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        const CTX: &str = "reading the task list";
        require_session(&self.conn, &self.path, session_id)?;
        self.conn
            .prepare_cached("SELECT items FROM todos WHERE session_id = ?1")
            .and_then(|mut stmt| stmt.query_row([session_id], |row| row.get(0)).optional())
            .map_err(sql(&self.path, CTX))
    }
}

/// [`Store::save_todos`] on `conn`, inside the caller's transaction if any.
pub(crate) fn save_todos_in(
    conn: &rusqlite::Connection,
    path: &str,
    session_id: &str,
    items_json: &str,
) -> Result<(), StoreError> {
    const CTX: &str = "saving the task list";
    require_session(conn, path, session_id)?;
    conn.prepare_cached(
        "INSERT INTO todos (session_id, items, updated_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT(session_id) DO UPDATE SET items = excluded.items, \
         updated_at = excluded.updated_at",
    )
    .and_then(|mut stmt| stmt.execute(params![session_id, items_json, now_ms()]))
    .map_err(sql(path, CTX))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::{NewSession, SessionSource, Store, StoreError};

    fn session(store: &mut Store, id: &str) {
        store
            .create_session(&NewSession {
                id: id.to_owned(),
                parent_session_id: None,
                agent_id: None,
                source: SessionSource::Cli,
                cwd: "/tmp".to_owned(),
                model: "m".to_owned(),
                provider: "openai".to_owned(),
                system_prompt: "sys".to_owned(),
            })
            .unwrap();
    }

    #[test]
    fn save_replaces_and_load_returns_latest() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "s1");
        session(&mut store, "s2");
        assert_eq!(store.load_todos("s1").unwrap(), None);
        store.save_todos("s1", r#"[{"id":"1"}]"#).unwrap();
        store.save_todos("s1", r#"[{"id":"2"}]"#).unwrap();
        assert_eq!(
            store.load_todos("s1").unwrap().as_deref(),
            Some(r#"[{"id":"2"}]"#)
        );
        assert_eq!(store.load_todos("s2").unwrap(), None);
    }

    #[test]
    fn unknown_session_is_named() {
        let mut store = Store::open_in_memory().unwrap();
        assert!(matches!(
            store.save_todos("nope", "[]"),
            Err(StoreError::UnknownSession(id)) if id == "nope"
        ));
        assert!(matches!(
            store.load_todos("nope"),
            Err(StoreError::UnknownSession(_))
        ));
    }

    #[test]
    fn deleting_the_session_deletes_its_list() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "s1");
        store.save_todos("s1", "[]").unwrap();
        store.delete_session("s1").unwrap();
        let left: i64 = store
            .conn
            .query_row("SELECT count(*) FROM todos", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }
}
