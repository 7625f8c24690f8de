//! Pruning in two steps, so `herald sessions prune` can show what it is
//! about to delete and ask first: [`Store::stale_session_trees`] lists the
//! session trees [`Store::prune_older_than`] would remove, and
//! [`Store::delete_session_trees`] removes exactly the ones listed (not
//! whatever else became stale while the person was reading).

use std::time::Duration;

use crate::error::{StoreError, sql};
use crate::records::SessionRecord;
use crate::sessions::{SESSION_COLUMN_COUNT, SESSION_COLUMNS, session_from_row};
use crate::store::{Store, now_ms};
use crate::write_unit::WriteUnit;

/// A top-level session together with the size of its tree.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionTree {
    /// The top-level session.
    pub root: SessionRecord,
    /// Sessions in the tree, the root and every subagent session under it.
    pub sessions: usize,
}

impl Store {
    /// The session trees (a top-level session with all its descendants)
    /// whose last activity anywhere in the tree is older than `age`, newest
    /// first: what [`Store::prune_older_than`] would delete.
    pub fn stale_session_trees(&self, age: Duration) -> Result<Vec<SessionTree>, StoreError> {
        let age_ms = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now_ms().saturating_sub(age_ms);
        // Roots are sessions without a (still existing) parent.
        let query = format!(
            "WITH RECURSIVE tree(root, id) AS ( \
                 SELECT s.id, s.id FROM sessions s \
                 WHERE s.parent_session_id IS NULL \
                    OR NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id) \
                 UNION SELECT t.root, s.id FROM sessions s JOIN tree t ON s.parent_session_id = t.id), \
             stale(root, n) AS ( \
                 SELECT t.root, count(*) FROM tree t JOIN sessions s ON s.id = t.id \
                 GROUP BY t.root HAVING max(s.last_active_at) < ?1) \
             SELECT {SESSION_COLUMNS}, stale.n FROM sessions JOIN stale ON sessions.id = stale.root \
             ORDER BY sessions.started_at DESC, sessions.rowid DESC"
        );
        let mut stmt = self
            .conn
            .prepare(&query)
            .map_err(sql(&self.path, "listing stale sessions"))?;
        let rows = stmt
            .query_map([cutoff], |row| {
                Ok(SessionTree {
                    root: session_from_row(row)?,
                    sessions: usize::try_from(row.get::<_, i64>(SESSION_COLUMN_COUNT)?)
                        .unwrap_or(0),
                })
            })
            .map_err(sql(&self.path, "listing stale sessions"))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(sql(&self.path, "listing stale sessions"))
    }

    /// Deletes each of these sessions with its descendants, in one
    /// transaction. Returns how many sessions were deleted (ids no longer
    /// stored count nothing).
    pub fn delete_session_trees(&mut self, ids: &[String]) -> Result<usize, StoreError> {
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, "deleting sessions"))?;
        let mut deleted = 0;
        {
            let mut stmt = tx
                .prepare(
                    "WITH RECURSIVE tree(id) AS ( \
                         SELECT id FROM sessions WHERE id = ?1 \
                         UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent_session_id = t.id) \
                     DELETE FROM sessions WHERE id IN (SELECT id FROM tree)",
                )
                .map_err(sql(path, "deleting sessions"))?;
            for id in ids {
                deleted += stmt.execute([id]).map_err(sql(path, "deleting sessions"))?;
            }
        }
        tx.commit().map_err(sql(path, "deleting sessions"))?;
        Ok(deleted)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{NewSession, SessionSource};

    fn session(store: &mut Store, id: &str, parent: Option<&str>) {
        store
            .create_session(&NewSession {
                id: id.to_owned(),
                parent_session_id: parent.map(str::to_owned),
                agent_id: Some("root".to_owned()),
                source: SessionSource::Cli,
                cwd: "/w".to_owned(),
                model: "m".to_owned(),
                provider: "openai".to_owned(),
                system_prompt: "s".to_owned(),
            })
            .unwrap();
    }

    fn age(store: &Store, id: &str, days: i64) {
        store
            .conn
            .execute(
                "UPDATE sessions SET last_active_at = ?2, started_at = ?2 WHERE id = ?1",
                rusqlite::params![id, now_ms() - days * 86_400_000],
            )
            .unwrap();
    }

    #[test]
    fn stale_trees_are_what_prune_would_delete_and_only_the_listed_go() {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "old", None);
        session(&mut store, "old_child", Some("old"));
        session(&mut store, "older", None);
        session(&mut store, "kept", None);
        session(&mut store, "kept_child", Some("kept"));
        age(&store, "old", 40);
        age(&store, "old_child", 35);
        age(&store, "older", 50);
        // An old root with a recent subagent session is not stale.
        age(&store, "kept", 60);
        let trees = store
            .stale_session_trees(Duration::from_secs(30 * 86_400))
            .unwrap();
        let listed: Vec<(&str, usize)> = trees
            .iter()
            .map(|t| (t.root.id.as_str(), t.sessions))
            .collect();
        assert_eq!(listed, vec![("old", 2), ("older", 1)]);

        // Only the listed trees go, with their descendants.
        assert_eq!(
            store
                .delete_session_trees(&["old".to_owned(), "gone".to_owned()])
                .unwrap(),
            2
        );
        assert!(store.get_session("old_child").unwrap().is_none());
        assert!(store.get_session("older").unwrap().is_some());
        assert_eq!(
            store
                .prune_older_than(Duration::from_secs(30 * 86_400))
                .unwrap(),
            1
        );
        assert!(store.get_session("kept_child").unwrap().is_some());
    }
}
