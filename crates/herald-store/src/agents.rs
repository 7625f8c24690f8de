//! The agents registry: one row per subagent, written when it is
//! spawned and updated when it starts and finishes, so background agents are
//! visible after a restart (`herald agents`) and a resumed parent can restart
//! the unfinished ones from their stored conversations.

use crate::write_unit::WriteUnit;
use herald_protocol::{AgentStatus, ExitReason, TokenTotals, UsageTotals};
use rusqlite::{OptionalExtension, Row, params};

use crate::error::{StoreError, sql};
use crate::store::{Store, now_ms, to_i64, to_u64};

/// Columns read into an [`AgentRecord`], in order.
const AGENT_COLUMNS: &str = "id, parent_agent_id, parent_session_id, root_session_id, session_id, \
    depth, role, goal, context, background, status, exit_reason, result, error, iterations, \
    input_tokens, output_tokens, cached_tokens, cost_usd, model, created_at, started_at, ended_at, \
    delivered, spec, call_id, cache_creation_tokens, requests, own_cost_usd, tree_input_tokens, \
    tree_output_tokens, tree_cached_tokens, tree_cache_creation_tokens, tree_cost_usd, tree_requests";

/// An agent about to be spawned.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAgent {
    pub id: String,
    /// The spawning agent (`root` for the top-level agent).
    pub parent_agent_id: String,
    /// The session of the spawning agent.
    pub parent_session_id: String,
    /// The top-level session of the tree.
    pub root_session_id: String,
    /// The child's own session (created when it starts).
    pub session_id: String,
    pub depth: u32,
    /// `leaf` or `orchestrator`.
    pub role: String,
    pub goal: String,
    pub context: Option<String>,
    pub background: bool,
    pub model: String,
    /// Everything needed to rebuild the child after a restart (JSON).
    pub spec: String,
    /// The parent's `delegate_task` call that spawned it.
    pub call_id: Option<String>,
}

/// How an agent ended.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentFinish {
    pub status: AgentStatus,
    pub exit_reason: ExitReason,
    /// The summary or full result JSON handed to the parent.
    pub result: String,
    pub error: Option<String>,
    pub iterations: u32,
    /// The agent's own requests (its earlier runs included, when restarted).
    pub usage: UsageTotals,
    /// Its own and all its descendants' requests.
    pub tree_usage: UsageTotals,
}

/// One row of the registry.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgentRecord {
    pub id: String,
    pub parent_agent_id: Option<String>,
    pub parent_session_id: String,
    pub root_session_id: String,
    pub session_id: String,
    pub depth: u32,
    pub role: String,
    pub goal: String,
    pub context: Option<String>,
    pub background: bool,
    /// `queued | running | suspended | completed | failed | error | timeout | interrupted | cancelled`.
    pub status: AgentStatus,
    pub exit_reason: Option<ExitReason>,
    pub result: Option<String>,
    pub error: Option<String>,
    pub iterations: u32,
    /// Its own tokens (the `{input, output, cached}` part of `usage`).
    pub tokens: TokenTotals,
    /// Its own cost in USD, rounded to 1e-6; `null` when a request ran on a
    /// model without a price.
    #[serde(with = "herald_protocol::cost_serde")]
    pub cost_usd: Option<f64>,
    /// Its own requests, tokens and cost (zero until it finishes).
    pub usage: UsageTotals,
    /// Its own and all its descendants' requests, tokens and cost; `None`
    /// until it finishes (and for agents journaled before schema v17).
    pub tree_usage: Option<UsageTotals>,
    pub model: String,
    /// Milliseconds since the epoch.
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
    /// Whether the parent has been given the result.
    pub delivered: bool,
    pub spec: Option<String>,
    /// The parent's `delegate_task` call that spawned it.
    pub call_id: Option<String>,
}

impl AgentRecord {
    /// Whether the agent has not ended: queued, running, or suspended (the
    /// interactive loop was left; resuming the session restarts it).
    pub fn is_unfinished(&self) -> bool {
        !self.status.is_finished()
    }
}

/// Which agents [`Store::list_agents`] returns (newest first).
#[derive(Debug, Clone, Default)]
pub struct AgentFilter {
    /// Agents of one tree (its top-level session).
    pub root_session_id: Option<String>,
    /// Agents spawned directly by one session.
    pub parent_session_id: Option<String>,
    pub status: Option<AgentStatus>,
    /// At most this many rows; 0 means 100.
    pub limit: usize,
}

fn record(row: &Row<'_>) -> rusqlite::Result<AgentRecord> {
    let tokens = TokenTotals {
        input: to_u64(row.get(15)?),
        output: to_u64(row.get(16)?),
        cached: to_u64(row.get(17)?),
    };
    let cost_usd: Option<f64> = row.get(28)?;
    let usage = UsageTotals {
        input: tokens.input,
        output: tokens.output,
        cached: tokens.cached,
        cache_creation: to_u64(row.get(26)?),
        cost_usd,
        requests: to_u64(row.get(27)?),
    };
    let tree_requests: Option<i64> = row.get(34)?;
    let tree_usage = match tree_requests {
        Some(requests) => Some(UsageTotals {
            input: to_u64(row.get::<_, Option<i64>>(29)?.unwrap_or(0)),
            output: to_u64(row.get::<_, Option<i64>>(30)?.unwrap_or(0)),
            cached: to_u64(row.get::<_, Option<i64>>(31)?.unwrap_or(0)),
            cache_creation: to_u64(row.get::<_, Option<i64>>(32)?.unwrap_or(0)),
            cost_usd: row.get(33)?,
            requests: to_u64(requests),
        }),
        None => None,
    };
    Ok(AgentRecord {
        id: row.get(0)?,
        parent_agent_id: row.get(1)?,
        parent_session_id: row.get(2)?,
        root_session_id: row.get(3)?,
        session_id: row.get(4)?,
        depth: u32::try_from(row.get::<_, i64>(5)?).unwrap_or(0),
        role: row.get(6)?,
        goal: row.get(7)?,
        context: row.get(8)?,
        background: row.get::<_, i64>(9)? != 0,
        status: row.get(10)?,
        exit_reason: row.get(11)?,
        result: row.get(12)?,
        error: row.get(13)?,
        iterations: u32::try_from(row.get::<_, i64>(14)?).unwrap_or(0),
        tokens,
        cost_usd,
        usage,
        tree_usage,
        model: row.get(19)?,
        created_at: row.get(20)?,
        started_at: row.get(21)?,
        ended_at: row.get(22)?,
        delivered: row.get::<_, i64>(23)? != 0,
        spec: row.get(24)?,
        call_id: row.get(25)?,
    })
}

impl Store {
    /// Registers an agent as `queued`.
    pub fn insert_agent(&mut self, agent: &NewAgent) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO agents (id, parent_agent_id, parent_session_id, root_session_id, \
                 session_id, depth, role, goal, context, background, status, model, created_at, spec, call_id) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'queued', ?11, ?12, ?13, ?14)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    agent.id,
                    agent.parent_agent_id,
                    agent.parent_session_id,
                    agent.root_session_id,
                    agent.session_id,
                    i64::from(agent.depth),
                    agent.role,
                    agent.goal,
                    agent.context,
                    i64::from(agent.background),
                    agent.model,
                    now_ms(),
                    agent.spec,
                    agent.call_id,
                ])
            })
            .map_err(sql(&self.path, "registering an agent"))?;
        Ok(())
    }

    /// Marks an agent as running (again, after a restart).
    pub fn mark_agent_running(&mut self, id: &str) -> Result<(), StoreError> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE agents SET status = 'running', started_at = coalesce(started_at, ?2), \
                 ended_at = NULL WHERE id = ?1",
            )
            .and_then(|mut s| s.execute(params![id, now_ms()]))
            .map_err(sql(&self.path, "updating an agent"))?;
        if changed == 0 {
            return Err(StoreError::UnknownAgent(id.to_owned()));
        }
        Ok(())
    }

    /// Reopens the finished agent `id` for a follow-up turn: running again,
    /// in the background, its result owed (undelivered) to
    /// `parent_agent_id` of `parent_session_id` — the agent that asked —
    /// so a crash before it is delivered restarts it under that agent.
    pub fn reopen_agent(
        &mut self,
        id: &str,
        parent_agent_id: &str,
        parent_session_id: &str,
    ) -> Result<(), StoreError> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE agents SET status = 'running', background = 1, delivered = 0, \
                 exit_reason = NULL, error = NULL, ended_at = NULL, \
                 parent_agent_id = ?2, parent_session_id = ?3 WHERE id = ?1",
            )
            .and_then(|mut s| s.execute(params![id, parent_agent_id, parent_session_id]))
            .map_err(sql(&self.path, "reopening an agent"))?;
        if changed == 0 {
            return Err(StoreError::UnknownAgent(id.to_owned()));
        }
        Ok(())
    }

    /// Records how an agent ended, with its own and its subtree's usage
    /// (costs rounded to 1e-6; the own cost also goes to the v4 `cost_usd`
    /// column, 0 when unknown, as that column cannot hold NULL).
    pub fn finish_agent(&mut self, id: &str, finish: &AgentFinish) -> Result<(), StoreError> {
        let own = &finish.usage;
        let tree = &finish.tree_usage;
        let own_cost = own.cost_usd.map(herald_protocol::round_cost);
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE agents SET status = ?2, exit_reason = ?3, result = ?4, error = ?5, \
                 iterations = ?6, input_tokens = ?7, output_tokens = ?8, cached_tokens = ?9, \
                 cost_usd = ?10, ended_at = ?11, cache_creation_tokens = ?12, requests = ?13, \
                 own_cost_usd = ?14, tree_input_tokens = ?15, tree_output_tokens = ?16, \
                 tree_cached_tokens = ?17, tree_cache_creation_tokens = ?18, \
                 tree_cost_usd = ?19, tree_requests = ?20 WHERE id = ?1",
            )
            .and_then(|mut s| {
                s.execute(params![
                    id,
                    finish.status,
                    finish.exit_reason,
                    finish.result,
                    finish.error,
                    i64::from(finish.iterations),
                    to_i64(own.input),
                    to_i64(own.output),
                    to_i64(own.cached),
                    own_cost.unwrap_or(0.0),
                    now_ms(),
                    to_i64(own.cache_creation),
                    to_i64(own.requests),
                    own_cost,
                    to_i64(tree.input),
                    to_i64(tree.output),
                    to_i64(tree.cached),
                    to_i64(tree.cache_creation),
                    tree.cost_usd.map(herald_protocol::round_cost),
                    to_i64(tree.requests),
                ])
            })
            .map_err(sql(&self.path, "finishing an agent"))?;
        if changed == 0 {
            return Err(StoreError::UnknownAgent(id.to_owned()));
        }
        Ok(())
    }

    /// Marks agents whose results the parent has received. The agent loop
    /// uses [`Store::append_messages_delivering`] instead, which marks them
    /// in the transaction that stores the message carrying the results.
    pub fn mark_agents_delivered(&mut self, ids: &[String]) -> Result<(), StoreError> {
        let tx =
            WriteUnit::begin(&self.conn).map_err(sql(&self.path, "marking agents delivered"))?;
        mark_delivered(&tx, &self.path, ids)?;
        tx.commit()
            .map_err(sql(&self.path, "marking agents delivered"))
    }

    /// The agents a `delegate_task` call of `parent_session_id` spawned, in
    /// the order they were journaled.
    pub fn agents_of_call(
        &self,
        parent_session_id: &str,
        call_id: &str,
    ) -> Result<Vec<AgentRecord>, StoreError> {
        const CTX: &str = "reading the agents of a call";
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {AGENT_COLUMNS} FROM agents WHERE parent_session_id = ?1 AND call_id = ?2 \
                 ORDER BY created_at, rowid"
            ))
            .map_err(sql(&self.path, CTX))?;
        let rows: Result<Vec<AgentRecord>, StoreError> = stmt
            .query_map(params![parent_session_id, call_id], record)
            .map_err(sql(&self.path, CTX))?
            .map(|r| r.map_err(sql(&self.path, CTX)))
            .collect();
        rows
    }

    /// Sets the status of an agent that is not running in this process
    /// (`herald agents cancel`, or a synchronous child found unfinished after
    /// a crash). Finished agents keep their status; returns the record.
    pub fn cancel_agent(
        &mut self,
        id: &str,
        status: AgentStatus,
    ) -> Result<AgentRecord, StoreError> {
        self.conn
            .prepare_cached(
                "UPDATE agents SET status = ?2, exit_reason = 'interrupted', ended_at = ?3 \
                 WHERE id = ?1 AND status IN ('queued', 'running', 'suspended')",
            )
            .and_then(|mut s| s.execute(params![id, status, now_ms()]))
            .map_err(sql(&self.path, "cancelling an agent"))?;
        self.get_agent(id)?
            .ok_or_else(|| StoreError::UnknownAgent(id.to_owned()))
    }

    /// Ends the synchronous agent `id`, which a crash cut short, as
    /// `interrupted` (with every unfinished synchronous agent below it: a
    /// synchronous agent cannot restart, its caller's turn is gone), and
    /// moves the background agents below it that still matter (unfinished,
    /// or finished with a result nobody received) under the agent
    /// `adopter_agent_id` of session `adopter_session_id`, its nearest live
    /// ancestor, which restarts them and receives their results. The walk
    /// goes through synchronous agents only: a background agent's own
    /// subtree is its business once it runs again. One transaction, so a
    /// crash half-way leaves `id` unfinished and the next recovery walks
    /// again. Returns the adopted agents as they are now, oldest first.
    pub fn interrupt_and_adopt(
        &mut self,
        id: &str,
        adopter_agent_id: &str,
        adopter_session_id: &str,
    ) -> Result<Vec<AgentRecord>, StoreError> {
        const CTX: &str = "moving the agents of an interrupted one";
        let path = self.path.clone();
        let tx = WriteUnit::begin(&self.conn).map_err(sql(&path, CTX))?;
        let now = now_ms();
        let interrupt = |id: &str| {
            tx.prepare_cached(
                "UPDATE agents SET status = 'interrupted', exit_reason = 'interrupted', \
                 ended_at = ?2 WHERE id = ?1 AND status IN ('queued', 'running', 'suspended')",
            )
            .and_then(|mut s| s.execute(params![id, now]))
            .map_err(sql(&path, CTX))
        };
        let Some(top) = tx
            .prepare_cached(&format!("SELECT {AGENT_COLUMNS} FROM agents WHERE id = ?1"))
            .and_then(|mut s| s.query_row(params![id], record).optional())
            .map_err(sql(&path, CTX))?
        else {
            return Err(StoreError::UnknownAgent(id.to_owned()));
        };
        let mut adopted = Vec::new();
        let mut pending = vec![top.session_id.clone()];
        interrupt(&top.id)?;
        while let Some(session) = pending.pop() {
            let children: Vec<AgentRecord> = tx
                .prepare_cached(&format!(
                    "SELECT {AGENT_COLUMNS} FROM agents WHERE parent_session_id = ?1 \
                     ORDER BY created_at, rowid"
                ))
                .and_then(|mut s| {
                    s.query_map(params![session], record)?
                        .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(sql(&path, CTX))?;
            for child in children {
                if child.background {
                    if child.is_unfinished() || !child.delivered {
                        tx.prepare_cached(
                            "UPDATE agents SET parent_agent_id = ?2, parent_session_id = ?3, \
                             call_id = NULL WHERE id = ?1",
                        )
                        .and_then(|mut s| {
                            s.execute(params![child.id, adopter_agent_id, adopter_session_id])
                        })
                        .map_err(sql(&path, CTX))?;
                        adopted.push(child.id);
                    }
                } else if child.is_unfinished() {
                    interrupt(&child.id)?;
                    pending.push(child.session_id);
                }
            }
        }
        let mut records = Vec::with_capacity(adopted.len());
        for id in &adopted {
            if let Some(r) = tx
                .prepare_cached(&format!("SELECT {AGENT_COLUMNS} FROM agents WHERE id = ?1"))
                .and_then(|mut s| s.query_row(params![id], record).optional())
                .map_err(sql(&path, CTX))?
            {
                records.push(r);
            }
        }
        tx.commit().map_err(sql(&path, CTX))?;
        Ok(records)
    }

    /// One agent by id.
    pub fn get_agent(&self, id: &str) -> Result<Option<AgentRecord>, StoreError> {
        self.conn
            .prepare_cached(&format!("SELECT {AGENT_COLUMNS} FROM agents WHERE id = ?1"))
            .and_then(|mut s| s.query_row(params![id], record).optional())
            .map_err(sql(&self.path, "reading an agent"))
    }

    /// Agents matching `filter`, newest first.
    pub fn list_agents(&self, filter: &AgentFilter) -> Result<Vec<AgentRecord>, StoreError> {
        let limit = if filter.limit == 0 { 100 } else { filter.limit };
        let mut query = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE 1 = 1");
        let mut values: Vec<String> = Vec::new();
        for (column, value) in [
            ("root_session_id", &filter.root_session_id),
            ("parent_session_id", &filter.parent_session_id),
            ("status", &filter.status.map(|s| s.as_str().to_owned())),
        ] {
            if let Some(value) = value {
                values.push(value.clone());
                query.push_str(&format!(" AND {column} = ?{}", values.len()));
            }
        }
        query.push_str(&format!(
            " ORDER BY created_at DESC, rowid DESC LIMIT {}",
            limit.min(10_000)
        ));
        let mut statement = self
            .conn
            .prepare_cached(&query)
            .map_err(sql(&self.path, "listing agents"))?;
        let rows = statement
            .query_map(rusqlite::params_from_iter(values.iter()), record)
            .map_err(sql(&self.path, "listing agents"))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(sql(&self.path, "listing agents"))
    }

    /// Deletes finished agents that ended before `cutoff_ms`; returns how many.
    pub fn prune_agents(&mut self, cutoff_ms: i64) -> Result<usize, StoreError> {
        self.conn
            .prepare_cached(
                "DELETE FROM agents WHERE status NOT IN ('queued', 'running', 'suspended') \
                 AND ended_at IS NOT NULL AND ended_at < ?1",
            )
            .and_then(|mut s| s.execute(params![cutoff_ms]))
            .map_err(sql(&self.path, "pruning agents"))
    }
}

/// Sets `delivered` on `ids` inside the caller's transaction.
pub(crate) fn mark_delivered(
    conn: &rusqlite::Connection,
    path: &str,
    ids: &[String],
) -> Result<(), StoreError> {
    for id in ids {
        conn.prepare_cached("UPDATE agents SET delivered = 1 WHERE id = ?1")
            .and_then(|mut s| s.execute(params![id]))
            .map_err(sql(path, "marking agents delivered"))?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn agent(id: &str, parent_session: &str, background: bool) -> NewAgent {
        NewAgent {
            id: id.into(),
            parent_agent_id: "root".into(),
            parent_session_id: parent_session.into(),
            root_session_id: "root-session".into(),
            session_id: format!("{id}-session"),
            depth: 1,
            role: "leaf".into(),
            goal: format!("goal of {id}"),
            context: None,
            background,
            model: "m".into(),
            spec: "{}".into(),
            call_id: None,
        }
    }

    fn totals(input: u64, output: u64, cost_usd: Option<f64>) -> UsageTotals {
        UsageTotals {
            input,
            output,
            cached: input / 5,
            cache_creation: input / 10,
            cost_usd,
            requests: input / 10,
        }
    }

    fn finish(usage: UsageTotals, tree_usage: UsageTotals) -> AgentFinish {
        AgentFinish {
            status: AgentStatus::Completed,
            exit_reason: ExitReason::Completed,
            result: "done".into(),
            error: None,
            iterations: 1,
            usage,
            tree_usage,
        }
    }

    #[test]
    fn own_and_subtree_usage_are_journaled_with_unknown_costs_as_null() {
        let mut store = Store::open_in_memory().unwrap();
        store.insert_agent(&agent("a1", "p", false)).unwrap();
        let queued = store.get_agent("a1").unwrap().unwrap();
        assert_eq!(queued.usage, UsageTotals::default());
        assert_eq!(queued.tree_usage, None, "no subtree before it finishes");

        // Priced: costs rounded to 1e-6, every counter kept.
        let own = totals(100, 20, Some(0.014_779_999_999_999_998));
        let tree = totals(300, 60, Some(0.044_000_000_000_000_004));
        store.finish_agent("a1", &finish(own, tree)).unwrap();
        let a1 = store.get_agent("a1").unwrap().unwrap();
        assert_eq!(a1.usage.cost_usd, Some(0.01478));
        assert_eq!(a1.cost_usd, Some(0.01478));
        assert_eq!((a1.usage.cache_creation, a1.usage.requests), (10, 10));
        assert_eq!(a1.tokens, own.tokens());
        let tree_read = a1.tree_usage.unwrap();
        assert_eq!(tree_read.cost_usd, Some(0.044));
        assert_eq!(
            (tree_read.input, tree_read.output, tree_read.cached),
            (300, 60, 60)
        );
        assert_eq!((tree_read.cache_creation, tree_read.requests), (30, 30));
        let json = serde_json::to_value(&a1).unwrap();
        assert_eq!(json["cost_usd"], serde_json::json!(0.01478));
        assert_eq!(json["tree_usage"]["requests"], 30);

        // Unpriced: null, not 0, in the record and its JSON.
        store.insert_agent(&agent("a2", "p", false)).unwrap();
        store
            .finish_agent("a2", &finish(totals(10, 1, None), totals(20, 2, None)))
            .unwrap();
        let a2 = store.get_agent("a2").unwrap().unwrap();
        assert_eq!(a2.cost_usd, None);
        assert_eq!(a2.tree_usage.unwrap().cost_usd, None);
        let json = serde_json::to_value(&a2).unwrap();
        assert!(json["cost_usd"].is_null(), "{json}");
        assert!(json["usage"]["cost_usd"].is_null(), "{json}");
        assert!(json["tree_usage"]["cost_usd"].is_null(), "{json}");
        // A priced own cost under an unpriced subtree stays known.
        store.insert_agent(&agent("a3", "p", false)).unwrap();
        store
            .finish_agent(
                "a3",
                &finish(totals(10, 1, Some(0.25)), totals(20, 2, None)),
            )
            .unwrap();
        let a3 = store.get_agent("a3").unwrap().unwrap();
        assert_eq!(a3.cost_usd, Some(0.25));
        assert_eq!(a3.tree_usage.unwrap().cost_usd, None);
    }

    /// A v16 database (before the journal had usage columns) keeps its
    /// agents: their cost becomes the own cost, their API calls the
    /// requests, and their subtree is unknown, not invented.
    #[test]
    fn a_v16_journal_is_upgraded_with_its_agents() {
        use crate::migrations::{MIGRATIONS, migrate};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        {
            let mut conn = rusqlite::Connection::open(&path).unwrap();
            migrate(&mut conn, "state.db", &MIGRATIONS[..16]).unwrap();
            conn.execute_batch(
                "INSERT INTO agents (id, parent_agent_id, parent_session_id, root_session_id, \
                     session_id, depth, role, goal, status, iterations, input_tokens, \
                     output_tokens, cached_tokens, cost_usd, model, created_at, ended_at) \
                 VALUES ('old', 'root', 'p', 'p', 'old-s', 1, 'leaf', 'g', 'completed', 4, \
                     400, 40, 100, 0.125, 'm', 1, 2), \
                     ('busy', 'root', 'p', 'p', 'busy-s', 1, 'leaf', 'g', 'running', 0, \
                     0, 0, 0, 0, 'm', 3, NULL);",
            )
            .unwrap();
        }
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), crate::SCHEMA_VERSION);
        let old = store.get_agent("old").unwrap().unwrap();
        assert_eq!(old.status, AgentStatus::Completed);
        assert_eq!(old.cost_usd, Some(0.125));
        assert_eq!(
            (old.usage.input, old.usage.output, old.usage.cached),
            (400, 40, 100)
        );
        assert_eq!((old.usage.requests, old.usage.cache_creation), (4, 0));
        assert_eq!(old.tree_usage, None);
        // The running one finishes under the new schema with both totals.
        store
            .finish_agent("busy", &finish(totals(50, 5, None), totals(80, 8, None)))
            .unwrap();
        let busy = store.get_agent("busy").unwrap().unwrap();
        assert_eq!(busy.cost_usd, None);
        assert_eq!(busy.tree_usage.unwrap().input, 80);
        assert_eq!(store.list_agents(&AgentFilter::default()).unwrap().len(), 2);
    }

    #[test]
    fn an_interrupted_synchronous_agent_hands_its_background_agents_up() {
        let mut store = Store::open_in_memory().unwrap();
        let done = |store: &mut Store, id: &str| {
            store
                .finish_agent(
                    id,
                    &AgentFinish {
                        status: AgentStatus::Completed,
                        exit_reason: ExitReason::Completed,
                        result: format!("result of {id}"),
                        error: None,
                        iterations: 1,
                        usage: totals(1, 1, Some(0.0)),
                        tree_usage: totals(1, 1, Some(0.0)),
                    },
                )
                .unwrap();
        };
        // s (sync) below the root: g1 running, g2 finished but never
        // received, g3 finished and received, s2 (sync) with g4 below it,
        // b (background) with its own synchronous child x.
        store
            .insert_agent(&agent("s", "root-session", false))
            .unwrap();
        let mut g1 = agent("g1", "s-session", true);
        g1.call_id = Some("call_0".into());
        store.insert_agent(&g1).unwrap();
        for (id, parent, background) in [
            ("g2", "s-session", true),
            ("g3", "s-session", true),
            ("s2", "s-session", false),
            ("b", "s-session", true),
            ("g4", "s2-session", true),
            ("x", "b-session", false),
        ] {
            store.insert_agent(&agent(id, parent, background)).unwrap();
        }
        for id in ["s", "g1", "s2", "b", "x"] {
            store.mark_agent_running(id).unwrap();
        }
        done(&mut store, "g2");
        done(&mut store, "g3");
        store.mark_agents_delivered(&["g3".into()]).unwrap();

        let adopted = store
            .interrupt_and_adopt("s", "root", "root-session")
            .unwrap();
        let ids: Vec<&str> = adopted.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["g1", "g2", "b", "g4"]);
        for a in &adopted {
            assert_eq!(a.parent_agent_id.as_deref(), Some("root"));
            assert_eq!(a.parent_session_id, "root-session");
            assert_eq!(a.call_id, None, "{}", a.id);
        }
        let status = |store: &Store, id: &str| store.get_agent(id).unwrap().unwrap().status;
        assert_eq!(status(&store, "s"), AgentStatus::Interrupted);
        assert_eq!(status(&store, "s2"), AgentStatus::Interrupted);
        assert_eq!(status(&store, "g1"), AgentStatus::Running);
        assert_eq!(status(&store, "x"), AgentStatus::Running, "b's own");
        assert_eq!(
            store.get_agent("g3").unwrap().unwrap().parent_session_id,
            "s-session"
        );
        // A second walk finds nothing left to move.
        assert!(
            store
                .interrupt_and_adopt("s", "root", "root-session")
                .unwrap()
                .is_empty()
        );
        assert!(matches!(
            store.interrupt_and_adopt("ghost", "root", "root-session"),
            Err(StoreError::UnknownAgent(_))
        ));
    }

    #[test]
    fn lifecycle_list_cancel_and_prune() {
        let mut store = Store::open_in_memory().unwrap();
        store.insert_agent(&agent("a1", "p", true)).unwrap();
        store.insert_agent(&agent("a2", "p", false)).unwrap();
        store.insert_agent(&agent("a3", "other", true)).unwrap();
        store.mark_agent_running("a1").unwrap();
        let a1 = store.get_agent("a1").unwrap().unwrap();
        assert_eq!(a1.status, AgentStatus::Running);
        assert!(a1.started_at.is_some() && a1.is_unfinished());
        store
            .finish_agent(
                "a1",
                &AgentFinish {
                    status: AgentStatus::Completed,
                    exit_reason: ExitReason::Completed,
                    result: "done".into(),
                    error: None,
                    iterations: 3,
                    usage: totals(10, 5, Some(0.5)),
                    tree_usage: totals(30, 15, Some(1.5)),
                },
            )
            .unwrap();
        let a1 = store.get_agent("a1").unwrap().unwrap();
        assert_eq!((a1.status, a1.iterations), (AgentStatus::Completed, 3));
        assert_eq!(a1.tokens.output, 5);
        let listed = store
            .list_agents(&AgentFilter {
                parent_session_id: Some("p".into()),
                ..AgentFilter::default()
            })
            .unwrap();
        assert_eq!(
            listed.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
            ["a2", "a1"]
        );
        let running = store
            .list_agents(&AgentFilter {
                status: Some(AgentStatus::Queued),
                ..AgentFilter::default()
            })
            .unwrap();
        assert_eq!(running.len(), 2);
        // Cancelling a finished agent keeps its status.
        assert_eq!(
            store
                .cancel_agent("a1", AgentStatus::Cancelled)
                .unwrap()
                .status,
            AgentStatus::Completed
        );
        assert_eq!(
            store
                .cancel_agent("a3", AgentStatus::Cancelled)
                .unwrap()
                .status,
            AgentStatus::Cancelled
        );
        assert!(matches!(
            store.cancel_agent("ghost", AgentStatus::Cancelled),
            Err(StoreError::UnknownAgent(_))
        ));
        store.mark_agents_delivered(&["a1".into()]).unwrap();
        assert!(store.get_agent("a1").unwrap().unwrap().delivered);
        // Only finished agents are pruned.
        assert_eq!(store.prune_agents(i64::MAX).unwrap(), 2);
        assert!(store.get_agent("a2").unwrap().is_some());
    }
}
