//! The git worktrees of isolated agents (schema v23). A row is written
//! before the worktree is created and marked removed after it is gone, so
//! a crash in between leaves a row that says where to look: no worktree is
//! ever unaccounted for. Rows outlive the agent records they belong to
//! (those are pruned), until their worktree is removed.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use crate::error::{StoreError, sql};
use crate::store::{Store, now_ms};

/// One agent's worktree as journaled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentWorktree {
    pub agent_id: String,
    /// The repository (its top level) the worktree belongs to.
    pub repo: String,
    /// Where the worktree is checked out.
    pub path: String,
    /// Its branch, `herald/<agent-id>`.
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// Unix ms.
    pub created_at: i64,
    /// When it was removed (merged or pruned); `None` while it exists.
    pub removed_at: Option<i64>,
}

const COLUMNS: &str = "agent_id, repo, path, branch, base, created_at, removed_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<AgentWorktree> {
    Ok(AgentWorktree {
        agent_id: row.get(0)?,
        repo: row.get(1)?,
        path: row.get(2)?,
        branch: row.get(3)?,
        base: row.get(4)?,
        created_at: row.get(5)?,
        removed_at: row.get(6)?,
    })
}

impl Store {
    /// Journals the worktree agent `agent_id` is about to get, or gets
    /// again in the same row: a restarted agent reattaching (same base), or
    /// a follow-up after a merge or prune (a new worktree, a new base).
    pub fn record_worktree(
        &mut self,
        agent_id: &str,
        repo: &str,
        path: &str,
        branch: &str,
        base: &str,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO agent_worktrees (agent_id, repo, path, branch, base, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT(agent_id) DO UPDATE SET removed_at = NULL, repo = excluded.repo, \
                 path = excluded.path, branch = excluded.branch, base = excluded.base",
            )
            .and_then(|mut s| s.execute(params![agent_id, repo, path, branch, base, now_ms()]))
            .map_err(sql(&self.path, "journaling a worktree"))?;
        Ok(())
    }

    /// The worktree of `agent_id`, removed or not.
    pub fn worktree(&self, agent_id: &str) -> Result<Option<AgentWorktree>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM agent_worktrees WHERE agent_id = ?1"
            ))
            .and_then(|mut s| s.query_row([agent_id], from_row).optional())
            .map_err(sql(&self.path, "reading a worktree"))
    }

    /// Worktrees not yet removed, oldest first.
    pub fn present_worktrees(&self) -> Result<Vec<AgentWorktree>, StoreError> {
        const CTX: &str = "listing worktrees";
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM agent_worktrees WHERE removed_at IS NULL \
                 ORDER BY created_at, agent_id"
            ))
            .map_err(sql(&self.path, CTX))?;
        let rows = stmt
            .query_map([], from_row)
            .and_then(Iterator::collect)
            .map_err(sql(&self.path, CTX))?;
        Ok(rows)
    }

    /// Marks the worktree of `agent_id` removed; `false` when none was
    /// present.
    pub fn mark_worktree_removed(&mut self, agent_id: &str) -> Result<bool, StoreError> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE agent_worktrees SET removed_at = ?2 \
                 WHERE agent_id = ?1 AND removed_at IS NULL",
            )
            .and_then(|mut s| s.execute(params![agent_id, now_ms()]))
            .map_err(sql(&self.path, "marking a worktree removed"))?;
        Ok(changed > 0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::Store;

    #[test]
    fn a_worktree_is_present_until_removed_and_reattaches() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path().join("state.db")).unwrap();
        store
            .record_worktree("agt_1", "/repo", "/wt/agt_1", "herald/agt_1", "abc")
            .unwrap();
        store
            .record_worktree("agt_2", "/repo", "/wt/agt_2", "herald/agt_2", "abc")
            .unwrap();
        assert_eq!(store.present_worktrees().unwrap().len(), 2);
        assert!(store.mark_worktree_removed("agt_1").unwrap());
        assert!(!store.mark_worktree_removed("agt_1").unwrap());
        let present = store.present_worktrees().unwrap();
        assert_eq!(present.len(), 1);
        assert_eq!(present[0].agent_id, "agt_2");
        assert!(
            store
                .worktree("agt_1")
                .unwrap()
                .unwrap()
                .removed_at
                .is_some()
        );
        assert!(store.worktree("nope").unwrap().is_none());
        // Recorded again (a follow-up after a merge): present again, one
        // row, with the new worktree's base.
        store
            .record_worktree("agt_1", "/repo", "/wt/agt_1", "herald/agt_1", "def")
            .unwrap();
        let again = store.worktree("agt_1").unwrap().unwrap();
        assert!(again.removed_at.is_none());
        assert_eq!(again.base, "def");
        assert_eq!(store.present_worktrees().unwrap().len(), 2);
    }
}
