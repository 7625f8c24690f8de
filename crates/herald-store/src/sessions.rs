//! Session lifecycle and listing: create, read, end, list, delete, prune.

use std::time::Duration;

use crate::write_unit::WriteUnit;
use rusqlite::{OptionalExtension, Row, ToSql, params, params_from_iter};

use crate::error::{StoreError, sql};
use crate::records::{ListFilter, NewSession, SessionRecord};
use crate::store::{Store, now_ms, to_u64};

/// Columns of `sessions` in the order [`session_from_row`] reads them.
pub(crate) const SESSION_COLUMNS: &str = "id, parent_session_id, agent_id, source, cwd, model, \
     provider, title, system_prompt, started_at, ended_at, end_reason, last_active_at, \
     input_tokens, output_tokens, cached_tokens, cache_creation_tokens, cost_usd, message_count, \
     summary";

/// How many columns [`SESSION_COLUMNS`] names: the index of a column a
/// query selects after them.
pub(crate) const SESSION_COLUMN_COUNT: usize = 20;

/// Maps a row selected with [`SESSION_COLUMNS`].
pub(crate) fn session_from_row(row: &Row<'_>) -> rusqlite::Result<SessionRecord> {
    Ok(SessionRecord {
        id: row.get(0)?,
        parent_session_id: row.get(1)?,
        agent_id: row.get(2)?,
        source: row.get(3)?,
        cwd: row.get(4)?,
        model: row.get(5)?,
        provider: row.get(6)?,
        title: row.get(7)?,
        system_prompt: row.get(8)?,
        started_at: row.get(9)?,
        ended_at: row.get(10)?,
        end_reason: row.get(11)?,
        last_active_at: row.get(12)?,
        input_tokens: to_u64(row.get(13)?),
        output_tokens: to_u64(row.get(14)?),
        cached_tokens: to_u64(row.get(15)?),
        cache_creation_tokens: to_u64(row.get(16)?),
        cost_usd: row.get(17)?,
        message_count: to_u64(row.get(18)?),
        summary: row.get(19)?,
    })
}

/// Loads one session or fails with [`StoreError::UnknownSession`]; shared by
/// every method that takes a session id.
pub(crate) fn require_session(
    conn: &rusqlite::Connection,
    path: &str,
    id: &str,
) -> Result<SessionRecord, StoreError> {
    find_session(conn, path, id)?.ok_or_else(|| StoreError::UnknownSession(id.to_owned()))
}

fn find_session(
    conn: &rusqlite::Connection,
    path: &str,
    id: &str,
) -> Result<Option<SessionRecord>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"
    ))
    .and_then(|mut stmt| stmt.query_row([id], session_from_row).optional())
    .map_err(sql(path, "reading a session"))
}

/// Inserts a session row started now; shared by `create_session` and import.
pub(crate) fn insert_session(
    conn: &rusqlite::Connection,
    path: &str,
    new: &NewSession,
) -> Result<(), StoreError> {
    let now = now_ms();
    let inserted = conn
        .prepare_cached(
            "INSERT INTO sessions (id, parent_session_id, agent_id, source, cwd, model, provider, \
             system_prompt, started_at, last_active_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9) ON CONFLICT(id) DO NOTHING",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![
                new.id,
                new.parent_session_id,
                new.agent_id,
                new.source,
                new.cwd,
                new.model,
                new.provider,
                new.system_prompt,
                now
            ])
        })
        .map_err(sql(path, "creating a session"))?;
    if inserted == 0 {
        return Err(StoreError::SessionExists(new.id.clone()));
    }
    Ok(())
}

fn collect_sessions(
    conn: &rusqlite::Connection,
    path: &str,
    query: &str,
    args: &[&dyn ToSql],
) -> Result<Vec<SessionRecord>, StoreError> {
    let mut stmt = conn
        .prepare_cached(query)
        .map_err(sql(path, "listing sessions"))?;
    let rows = stmt
        .query_map(params_from_iter(args.iter()), session_from_row)
        .map_err(sql(path, "listing sessions"))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(sql(path, "listing sessions"))
}

impl Store {
    /// Records a new session, started now. Fails with
    /// [`StoreError::SessionExists`] if the id is taken.
    pub fn create_session(&mut self, new: &NewSession) -> Result<SessionRecord, StoreError> {
        insert_session(&self.conn, &self.path, new)?;
        require_session(&self.conn, &self.path, &new.id)
    }

    /// The session with this id, or `None`.
    pub fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        find_session(&self.conn, &self.path, id)
    }

    /// Marks a session finished (`reason`: completed, interrupted, budget, error, ...).
    pub fn end_session(&mut self, id: &str, reason: &str) -> Result<(), StoreError> {
        let now = now_ms();
        let changed = self
            .conn
            .execute(
                "UPDATE sessions SET ended_at = ?2, end_reason = ?3, last_active_at = ?2 WHERE id = ?1",
                params![id, now, reason],
            )
            .map_err(sql(&self.path, "ending a session"))?;
        if changed == 0 {
            return Err(StoreError::UnknownSession(id.to_owned()));
        }
        Ok(())
    }

    /// Clears `ended_at`/`end_reason` when a finished session is resumed.
    pub fn reopen_session(&mut self, id: &str) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE sessions SET ended_at = NULL, end_reason = NULL, last_active_at = ?2 WHERE id = ?1",
                params![id, now_ms()],
            )
            .map_err(sql(&self.path, "reopening a session"))?;
        if changed == 0 {
            return Err(StoreError::UnknownSession(id.to_owned()));
        }
        Ok(())
    }

    /// Replaces the title derived from the first user message (`/title`).
    pub fn set_title(&mut self, id: &str, title: &str) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE sessions SET title = ?2 WHERE id = ?1",
                params![id, title],
            )
            .map_err(sql(&self.path, "setting a session title"))?;
        if changed == 0 {
            return Err(StoreError::UnknownSession(id.to_owned()));
        }
        Ok(())
    }

    /// Stores the short summary of a session (at its end), replacing an
    /// earlier one; it is searchable with the title (`sessions_fts`).
    pub fn set_summary(&mut self, id: &str, summary: &str) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE sessions SET summary = ?2 WHERE id = ?1",
                params![id, summary],
            )
            .map_err(sql(&self.path, "storing a session summary"))?;
        if changed == 0 {
            return Err(StoreError::UnknownSession(id.to_owned()));
        }
        Ok(())
    }

    /// Sessions matching `filter`, newest first (by `started_at`).
    pub fn list_sessions(&self, filter: &ListFilter) -> Result<Vec<SessionRecord>, StoreError> {
        let mut query = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE 1");
        let mut args: Vec<&dyn ToSql> = Vec::new();
        if let Some(cwd) = &filter.cwd {
            args.push(cwd);
            query.push_str(&format!(" AND cwd = ?{}", args.len()));
        }
        if let Some(parent) = &filter.parent {
            args.push(parent);
            query.push_str(&format!(" AND parent_session_id = ?{}", args.len()));
        } else if !filter.include_subagents {
            query.push_str(" AND parent_session_id IS NULL");
        }
        if let Some(model) = &filter.model {
            args.push(model);
            query.push_str(&format!(" AND model = ?{}", args.len()));
        }
        if let Some(from) = &filter.started_from {
            args.push(from);
            query.push_str(&format!(" AND started_at >= ?{}", args.len()));
        }
        if let Some(until) = &filter.started_until {
            args.push(until);
            query.push_str(&format!(" AND started_at < ?{}", args.len()));
        }
        match filter.ended {
            Some(true) => query.push_str(" AND ended_at IS NOT NULL"),
            Some(false) => query.push_str(" AND ended_at IS NULL"),
            None => {}
        }
        query.push_str(" ORDER BY started_at DESC, rowid DESC");
        let limit = i64::try_from(filter.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(filter.offset).unwrap_or(i64::MAX);
        if limit > 0 {
            args.push(&limit);
            query.push_str(&format!(" LIMIT ?{}", args.len()));
        } else if offset > 0 {
            query.push_str(" LIMIT -1");
        }
        if offset > 0 {
            args.push(&offset);
            query.push_str(&format!(" OFFSET ?{}", args.len()));
        }
        collect_sessions(&self.conn, &self.path, &query, &args)
    }

    /// The most recently active top-level session started in `cwd`; what
    /// `herald --continue` resumes.
    pub fn latest_session_in(&self, cwd: &str) -> Result<Option<SessionRecord>, StoreError> {
        let query = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE cwd = ?1 AND parent_session_id IS NULL \
             ORDER BY last_active_at DESC, started_at DESC, rowid DESC LIMIT 1"
        );
        Ok(collect_sessions(&self.conn, &self.path, &query, &[&cwd])?
            .into_iter()
            .next())
    }

    /// Deletes a session with its messages, usage and, recursively, its child
    /// sessions. Returns `false` if no session had this id.
    pub fn delete_session(&mut self, id: &str) -> Result<bool, StoreError> {
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, "deleting a session"))?;
        let deleted = tx
            .execute(
                "WITH RECURSIVE tree(id) AS ( \
                     SELECT id FROM sessions WHERE id = ?1 \
                     UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent_session_id = t.id) \
                 DELETE FROM sessions WHERE id IN (SELECT id FROM tree)",
                [id],
            )
            .map_err(sql(path, "deleting a session"))?;
        tx.commit().map_err(sql(path, "deleting a session"))?;
        Ok(deleted > 0)
    }

    /// Deletes every session tree (a top-level session with all its
    /// descendants) whose last activity anywhere in the tree is older than
    /// `age`. Returns how many sessions were deleted. Backs
    /// `herald sessions prune --older-than 30d`.
    pub fn prune_older_than(&mut self, age: Duration) -> Result<usize, StoreError> {
        let age_ms = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now_ms().saturating_sub(age_ms);
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, "pruning sessions"))?;
        // Roots are sessions without a (still existing) parent.
        let deleted = tx
            .execute(
                "WITH RECURSIVE tree(root, id) AS ( \
                     SELECT s.id, s.id FROM sessions s \
                     WHERE s.parent_session_id IS NULL \
                        OR NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id) \
                     UNION SELECT t.root, s.id FROM sessions s JOIN tree t ON s.parent_session_id = t.id), \
                 stale(root) AS ( \
                     SELECT t.root FROM tree t JOIN sessions s ON s.id = t.id \
                     GROUP BY t.root HAVING max(s.last_active_at) < ?1) \
                 DELETE FROM sessions \
                 WHERE id IN (SELECT id FROM tree WHERE root IN (SELECT root FROM stale))",
                [cutoff],
            )
            .map_err(sql(path, "pruning sessions"))?;
        tx.commit().map_err(sql(path, "pruning sessions"))?;
        Ok(deleted)
    }
}
