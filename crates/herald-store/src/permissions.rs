//! The audit log of permission decisions: one row per decision,
//! read back by `herald permissions log`.

use rusqlite::params;
use serde::Serialize;

use crate::error::{StoreError, sql};
use crate::store::{Store, now_ms};
use rusqlite::TransactionBehavior;

/// A decision to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDecision {
    pub session_id: String,
    pub agent_id: String,
    pub tool: String,
    /// A digest of the call's arguments (the arguments themselves may hold
    /// secrets or be large).
    pub arguments_digest: String,
    /// A short, redacted preview of the arguments (the command, the path).
    pub summary: String,
    /// `allow`, `ask` (still open: never stored) resolved to `allow` or
    /// `deny`, or `deny`.
    pub decision: String,
    /// The rule that decided, as written, or a built-in name.
    pub rule: Option<String>,
    pub reason: String,
    /// `policy`, `user`, `headless` or `yolo`.
    pub decided_by: String,
}

/// A stored decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredDecision {
    pub id: i64,
    pub session_id: String,
    pub agent_id: String,
    pub tool: String,
    pub arguments_digest: String,
    pub summary: String,
    pub decision: String,
    pub rule: Option<String>,
    pub reason: String,
    pub decided_by: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
}

impl Store {
    /// Records decisions in one transaction.
    pub fn record_decisions(&mut self, rows: &[NewDecision]) -> Result<(), StoreError> {
        const CTX: &str = "recording permission decisions";
        let now = now_ms();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql(&self.path, CTX))?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO permission_decisions (session_id, agent_id, tool, \
                     arguments_digest, summary, decision, rule, reason, decided_by, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(sql(&self.path, CTX))?;
            for row in rows {
                stmt.execute(params![
                    row.session_id,
                    row.agent_id,
                    row.tool,
                    row.arguments_digest,
                    row.summary,
                    row.decision,
                    row.rule,
                    row.reason,
                    row.decided_by,
                    now
                ])
                .map_err(sql(&self.path, CTX))?;
            }
        }
        tx.commit().map_err(sql(&self.path, CTX))
    }

    /// Decisions, oldest first: of one session tree (the session and the
    /// sessions of its subagents) when `session_id` is given, else the
    /// latest `limit` of all.
    pub fn load_decisions(
        &self,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredDecision>, StoreError> {
        const CTX: &str = "reading permission decisions";
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let read = |row: &rusqlite::Row<'_>| {
            Ok(StoredDecision {
                id: row.get(0)?,
                session_id: row.get(1)?,
                agent_id: row.get(2)?,
                tool: row.get(3)?,
                arguments_digest: row.get(4)?,
                summary: row.get(5)?,
                decision: row.get(6)?,
                rule: row.get(7)?,
                reason: row.get(8)?,
                decided_by: row.get(9)?,
                created_at: row.get(10)?,
            })
        };
        const COLUMNS: &str = "id, session_id, agent_id, tool, arguments_digest, summary, \
                               decision, rule, reason, decided_by, created_at";
        let mut rows = match session_id {
            Some(id) => {
                let query = format!(
                    "SELECT {COLUMNS} FROM permission_decisions WHERE session_id = ?1 \
                     OR session_id IN (SELECT session_id FROM agents WHERE root_session_id = ?1) \
                     ORDER BY id DESC LIMIT ?2"
                );
                let mut stmt = self.conn.prepare(&query).map_err(sql(&self.path, CTX))?;
                stmt.query_map(params![id, limit], read)
                    .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                    .map_err(sql(&self.path, CTX))?
            }
            None => {
                let query =
                    format!("SELECT {COLUMNS} FROM permission_decisions ORDER BY id DESC LIMIT ?1");
                let mut stmt = self.conn.prepare(&query).map_err(sql(&self.path, CTX))?;
                stmt.query_map(params![limit], read)
                    .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                    .map_err(sql(&self.path, CTX))?
            }
        };
        rows.reverse();
        Ok(rows)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn decision(session: &str, tool: &str, decision: &str) -> NewDecision {
        NewDecision {
            session_id: session.to_owned(),
            agent_id: "root".to_owned(),
            tool: tool.to_owned(),
            arguments_digest: "d".to_owned(),
            summary: "ls".to_owned(),
            decision: decision.to_owned(),
            rule: Some("read-only-command".to_owned()),
            reason: "reads only".to_owned(),
            decided_by: "policy".to_owned(),
        }
    }

    #[test]
    fn decisions_are_read_back_per_session_oldest_first() {
        let mut store = Store::open_in_memory().unwrap();
        store
            .record_decisions(&[
                decision("a", "terminal", "allow"),
                decision("b", "x", "deny"),
            ])
            .unwrap();
        store
            .record_decisions(&[decision("a", "write_file", "deny")])
            .unwrap();
        let a = store.load_decisions(Some("a"), 100).unwrap();
        let tools: Vec<_> = a.iter().map(|d| d.tool.as_str()).collect();
        assert_eq!(tools, ["terminal", "write_file"]);
        assert_eq!(store.load_decisions(None, 100).unwrap().len(), 3);
        let last = store.load_decisions(None, 1).unwrap();
        assert_eq!(last[0].tool, "write_file");
        assert!(store.load_decisions(Some("zzz"), 100).unwrap().is_empty());
    }
}
