//! The audit log of permission decisions: one row per decision,
//! read back by `herald permissions log`.

use crate::write_unit::WriteUnit;
use rusqlite::params;
use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::Serialize;

use crate::error::{StoreError, sql};
use crate::store::{Store, now_ms};

/// What a recorded permission decision came to (an `ask` is never stored:
/// it is recorded once answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ruling {
    Allow,
    Deny,
}

impl Ruling {
    /// The word in the log and in SQLite.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }

    fn parse(word: &str) -> Option<Self> {
        [Self::Allow, Self::Deny]
            .into_iter()
            .find(|r| r.as_str() == word)
    }
}

/// Who (or what) decided a permission question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidedBy {
    /// The permission rules, without asking.
    Policy,
    /// A rule the user approved earlier in the session (or saved).
    Approval,
    /// `--yolo`: everything that would be asked is allowed.
    Yolo,
    /// Nobody can answer in this session: what would be asked is refused.
    Headless,
    /// The turn was stopped while the question waited.
    Interrupt,
    /// A person answered, with this decision.
    User(herald_protocol::ApprovalDecision),
}

impl DecidedBy {
    /// Every value.
    pub const ALL: [DecidedBy; 9] = {
        use herald_protocol::ApprovalDecision as D;
        [
            Self::Policy,
            Self::Approval,
            Self::Yolo,
            Self::Headless,
            Self::Interrupt,
            Self::User(D::Once),
            Self::User(D::Session),
            Self::User(D::Always),
            Self::User(D::Deny),
        ]
    };

    /// The word in the log and in SQLite (`user:once`, ... for a person).
    pub fn as_str(self) -> &'static str {
        use herald_protocol::ApprovalDecision as D;
        match self {
            Self::Policy => "policy",
            Self::Approval => "approval",
            Self::Yolo => "yolo",
            Self::Headless => "headless",
            Self::Interrupt => "interrupt",
            Self::User(D::Once) => "user:once",
            Self::User(D::Session) => "user:session",
            Self::User(D::Always) => "user:always",
            Self::User(D::Deny) => "user:deny",
        }
    }

    /// The value whose word is `word`.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.as_str() == word)
    }
}

impl std::fmt::Display for DecidedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Ruling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DecidedBy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A column holding a word that is not one of the type's words.
fn bad_word(word: &str, what: &str) -> rusqlite::types::FromSqlError {
    rusqlite::types::FromSqlError::Other(format!("'{word}' is not a {what}").into())
}

impl ToSql for Ruling {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl FromSql for Ruling {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let word = value.as_str()?;
        Self::parse(word).ok_or_else(|| bad_word(word, "permission decision"))
    }
}

impl ToSql for DecidedBy {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl FromSql for DecidedBy {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let word = value.as_str()?;
        Self::parse(word).ok_or_else(|| bad_word(word, "decider"))
    }
}

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
    pub decision: Ruling,
    /// The rule that decided, as written, or a built-in name.
    pub rule: Option<String>,
    pub reason: String,
    pub decided_by: DecidedBy,
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
    pub decision: Ruling,
    pub rule: Option<String>,
    pub reason: String,
    pub decided_by: DecidedBy,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
}

impl Store {
    /// Records decisions in one transaction.
    pub fn record_decisions(&mut self, rows: &[NewDecision]) -> Result<(), StoreError> {
        const CTX: &str = "recording permission decisions";
        let now = now_ms();
        let tx = WriteUnit::begin(&self.conn).map_err(sql(&self.path, CTX))?;
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

    fn decision(session: &str, tool: &str, decision: Ruling) -> NewDecision {
        NewDecision {
            session_id: session.to_owned(),
            agent_id: "root".to_owned(),
            tool: tool.to_owned(),
            arguments_digest: "d".to_owned(),
            summary: "ls".to_owned(),
            decision,
            rule: Some("read-only-command".to_owned()),
            reason: "reads only".to_owned(),
            decided_by: DecidedBy::Policy,
        }
    }

    #[test]
    fn decisions_are_read_back_per_session_oldest_first() {
        let mut store = Store::open_in_memory().unwrap();
        store
            .record_decisions(&[
                decision("a", "terminal", Ruling::Allow),
                decision("b", "x", Ruling::Deny),
            ])
            .unwrap();
        store
            .record_decisions(&[decision("a", "write_file", Ruling::Deny)])
            .unwrap();
        let a = store.load_decisions(Some("a"), 100).unwrap();
        let tools: Vec<_> = a.iter().map(|d| d.tool.as_str()).collect();
        assert_eq!(tools, ["terminal", "write_file"]);
        assert_eq!(store.load_decisions(None, 100).unwrap().len(), 3);
        let last = store.load_decisions(None, 1).unwrap();
        assert_eq!(last[0].tool, "write_file");
        assert!(store.load_decisions(Some("zzz"), 100).unwrap().is_empty());
    }

    #[test]
    fn every_decider_is_stored_as_its_word_and_read_back() {
        let mut store = Store::open_in_memory().unwrap();
        let rows: Vec<NewDecision> = DecidedBy::ALL
            .into_iter()
            .map(|by| NewDecision {
                decided_by: by,
                ..decision("a", "terminal", Ruling::Allow)
            })
            .collect();
        store.record_decisions(&rows).unwrap();
        let back: Vec<DecidedBy> = store
            .load_decisions(Some("a"), 100)
            .unwrap()
            .into_iter()
            .map(|d| d.decided_by)
            .collect();
        assert_eq!(back, DecidedBy::ALL);
        assert_eq!(DecidedBy::parse("user:always"), Some(DecidedBy::ALL[7]));
        assert_eq!(DecidedBy::parse("someone"), None);
        let json = serde_json::to_value(&store.load_decisions(None, 1).unwrap()[0]).unwrap();
        assert_eq!(json["decided_by"], "user:deny");
        assert_eq!(json["decision"], "allow");
    }
}
