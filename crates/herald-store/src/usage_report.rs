//! Usage summed over a delegation tree (`herald sessions show`) and over a
//! period, grouped (`herald usage`): read from the per-request `usage`
//! rows, costs summed in whole micro-dollars so totals carry no float noise,
//! and unknown (`None`) as soon as one request had no price.

use herald_protocol::UsageTotals;
use rusqlite::params;

use crate::error::{StoreError, sql};
use crate::records::SessionRecord;
use crate::sessions::{SESSION_COLUMNS, require_session, session_from_row};
use crate::store::{Store, to_u64};

/// The sessions of a tree: the root's and its descendants' ids.
const TREE: &str = "WITH RECURSIVE tree(id) AS (SELECT ?1 UNION ALL \
     SELECT s.id FROM sessions s JOIN tree t ON s.parent_session_id = t.id)";

/// The sums every grouping reads, in this column order.
const SUMS: &str = "count(*), coalesce(sum(u.input_tokens), 0), coalesce(sum(u.output_tokens), 0), \
     coalesce(sum(u.cached_tokens), 0), coalesce(sum(u.cache_creation_tokens), 0), \
     coalesce(sum(CAST(round(u.cost_usd * 1000000) AS INTEGER)), 0), \
     coalesce(sum(u.cost_usd IS NULL), 0)";

/// How `herald usage` groups its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageGrouping {
    /// UTC calendar day (`2026-11-24`).
    Day,
    Model,
    /// The root session of each tree (subagents count with their root).
    Session,
    /// The working directory of the root session.
    Project,
}

/// One row of a usage report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct UsageRow {
    /// The day, model, session id or project directory.
    pub key: String,
    #[serde(flatten)]
    pub totals: UsageTotals,
}

fn totals_at(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<UsageTotals> {
    let micro: i64 = row.get(first + 5)?;
    let unpriced: i64 = row.get(first + 6)?;
    Ok(UsageTotals {
        requests: to_u64(row.get(first)?),
        input: to_u64(row.get(first + 1)?),
        output: to_u64(row.get(first + 2)?),
        cached: to_u64(row.get(first + 3)?),
        cache_creation: to_u64(row.get(first + 4)?),
        cost_usd: (unpriced == 0).then(|| micro as f64 / 1_000_000.0),
    })
}

impl Store {
    /// Every request of `session_id` and of its subagents' sessions at any
    /// depth.
    pub fn tree_usage(&self, session_id: &str) -> Result<UsageTotals, StoreError> {
        const CTX: &str = "summing a session tree's usage";
        require_session(&self.conn, &self.path, session_id)?;
        self.conn
            .prepare_cached(&format!(
                "{TREE} SELECT {SUMS} FROM usage u WHERE u.session_id IN (SELECT id FROM tree)"
            ))
            .and_then(|mut stmt| stmt.query_row([session_id], |row| totals_at(row, 0)))
            .map_err(sql(&self.path, CTX))
    }

    /// Every request of `session_id` alone (a restarted subagent's earlier
    /// runs, counted into what its journal entry records).
    pub fn session_totals(&self, session_id: &str) -> Result<UsageTotals, StoreError> {
        const CTX: &str = "summing a session's usage";
        require_session(&self.conn, &self.path, session_id)?;
        self.conn
            .prepare_cached(&format!(
                "SELECT {SUMS} FROM usage u WHERE u.session_id = ?1"
            ))
            .and_then(|mut stmt| stmt.query_row([session_id], |row| totals_at(row, 0)))
            .map_err(sql(&self.path, CTX))
    }

    /// The subagent sessions below `session_id` at any depth, oldest first.
    pub fn child_sessions(&self, session_id: &str) -> Result<Vec<SessionRecord>, StoreError> {
        const CTX: &str = "listing child sessions";
        require_session(&self.conn, &self.path, session_id)?;
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "{TREE} SELECT {SESSION_COLUMNS} FROM sessions \
                 WHERE id IN (SELECT id FROM tree) AND id != ?1 ORDER BY started_at, id"
            ))
            .map_err(sql(&self.path, CTX))?;
        let rows: Result<Vec<SessionRecord>, StoreError> = stmt
            .query_map([session_id], session_from_row)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(sql(&self.path, CTX));
        rows
    }

    /// Usage of the requests made at or after `since_ms` (all when `None`),
    /// grouped by `by`, the most expensive first (unknown costs last).
    pub fn usage_report(
        &self,
        since_ms: Option<i64>,
        by: UsageGrouping,
    ) -> Result<Vec<UsageRow>, StoreError> {
        const CTX: &str = "reporting usage";
        // A subagent's requests count with its root session and project.
        let root = "WITH RECURSIVE up(id, root) AS (SELECT id, id FROM sessions \
             WHERE parent_session_id IS NULL UNION ALL SELECT s.id, up.root FROM sessions s \
             JOIN up ON s.parent_session_id = up.id)";
        let key = match by {
            UsageGrouping::Day => "strftime('%Y-%m-%d', u.created_at / 1000, 'unixepoch')",
            UsageGrouping::Model => "u.model",
            UsageGrouping::Session => "coalesce(up.root, u.session_id)",
            UsageGrouping::Project => "coalesce(r.cwd, '')",
        };
        let mut stmt = self
            .conn
            .prepare(&format!(
                "{root} SELECT {key}, {SUMS} FROM usage u \
                 LEFT JOIN up ON up.id = u.session_id \
                 LEFT JOIN sessions r ON r.id = up.root \
                 WHERE u.created_at >= ?1 GROUP BY 1 \
                 ORDER BY sum(u.cost_usd IS NULL) > 0, 7 DESC, 1"
            ))
            .map_err(sql(&self.path, CTX))?;
        let rows: Result<Vec<UsageRow>, StoreError> = stmt
            .query_map(params![since_ms.unwrap_or(i64::MIN)], |row| {
                Ok(UsageRow {
                    key: row.get(0)?,
                    totals: totals_at(row, 1)?,
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
    use herald_protocol::Usage;

    use super::*;
    use crate::records::{NewSession, SessionSource};

    fn session(store: &mut Store, id: &str, parent: Option<&str>, cwd: &str) {
        store
            .create_session(&NewSession {
                id: id.into(),
                parent_session_id: parent.map(str::to_owned),
                agent_id: parent.map(|_| format!("ag_{id}")),
                source: if parent.is_some() {
                    SessionSource::Subagent
                } else {
                    SessionSource::Cli
                },
                cwd: cwd.into(),
                model: "m".into(),
                provider: "openai".into(),
                system_prompt: String::new(),
            })
            .unwrap();
    }

    fn usage(input: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: 10,
            cached_tokens: input / 2,
            cache_creation_tokens: 0,
        }
    }

    fn store() -> Store {
        let mut store = Store::open_in_memory().unwrap();
        session(&mut store, "root", None, "/p/a");
        session(&mut store, "child", Some("root"), "/p/a");
        session(&mut store, "grand", Some("child"), "/p/a");
        session(&mut store, "other", None, "/p/b");
        store
            .record_usage("root", "gpt-4.1", &usage(100), Some(0.1))
            .unwrap();
        store
            .record_usage("child", "gpt-4.1", &usage(200), Some(0.2))
            .unwrap();
        store
            .record_usage("grand", "cheap", &usage(300), Some(0.000_001))
            .unwrap();
        store
            .record_usage("other", "local", &usage(400), None)
            .unwrap();
        store
    }

    #[test]
    fn a_tree_sums_every_descendant_without_float_noise() {
        let store = store();
        let tree = store.tree_usage("root").unwrap();
        assert_eq!((tree.requests, tree.input, tree.cached), (3, 600, 300));
        assert_eq!(tree.cost_usd, Some(0.300_001));
        assert_eq!(store.tree_usage("child").unwrap().input, 500);
        assert_eq!(store.tree_usage("other").unwrap().cost_usd, None);
        let children: Vec<String> = store
            .child_sessions("root")
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(children, ["child", "grand"]);
        assert!(store.tree_usage("nope").is_err());
    }

    #[test]
    fn reports_group_subagents_with_their_root() {
        let store = store();
        let by_session = store.usage_report(None, UsageGrouping::Session).unwrap();
        let keys: Vec<&str> = by_session.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["root", "other"], "priced first, unknown cost last");
        assert_eq!(by_session[0].totals.requests, 3);
        assert_eq!(by_session[1].totals.cost_usd, None);
        let by_project = store.usage_report(None, UsageGrouping::Project).unwrap();
        assert_eq!(by_project[0].key, "/p/a");
        assert_eq!(by_project[0].totals.input, 600);
        let by_model = store.usage_report(None, UsageGrouping::Model).unwrap();
        assert_eq!(by_model.len(), 3);
        assert_eq!(by_model[0].key, "gpt-4.1");
        assert_eq!(by_model[0].totals.cost_usd, Some(0.3));
        let by_day = store.usage_report(None, UsageGrouping::Day).unwrap();
        assert_eq!(by_day.len(), 1);
        assert_eq!(by_day[0].totals.requests, 4);
        assert!(
            store
                .usage_report(Some(i64::MAX), UsageGrouping::Day)
                .unwrap()
                .is_empty()
        );
    }
}
