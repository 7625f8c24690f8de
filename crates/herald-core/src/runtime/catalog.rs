//! What front ends show of stored sessions without running one: the
//! sessions, a transcript, the todo list, the agent journal, usage and the
//! prompt history. Each view is read here once, with the runtime's rules
//! applied (an agent nobody runs any more is shown as it really is), so the
//! TUI, `herald serve` and the command line cannot disagree.

use herald_protocol::Message;
use herald_store::{
    AgentFilter, AgentRecord, ListFilter, SearchHit, SearchRequest, SessionRecord, Store,
    StoreError, StoredMessage, UsageGrouping, UsageRow,
};

use super::RuntimeError;
use crate::StoreHandle;

/// The read-only views of the store every front end shows (cheap to clone).
#[derive(Clone, Debug)]
pub struct Catalog {
    store: StoreHandle,
}

impl Catalog {
    /// The catalog of the store `store` holds.
    pub fn new(store: StoreHandle) -> Self {
        Self { store }
    }

    async fn read<R: Send + 'static>(
        &self,
        job: impl FnOnce(&Store) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, RuntimeError> {
        self.store
            .call(move |s| job(s))
            .await
            .map_err(|err| RuntimeError::Store(err.to_string()))?
            .map_err(|err| RuntimeError::Store(err.to_string()))
    }

    /// Stored sessions matching `filter`, the most recent first.
    pub async fn sessions(&self, filter: ListFilter) -> Result<Vec<SessionRecord>, RuntimeError> {
        self.read(move |s| s.list_sessions(&filter)).await
    }

    /// The stored session `id`; [`RuntimeError::UnknownSession`] when there
    /// is none.
    pub async fn session(&self, id: &str) -> Result<SessionRecord, RuntimeError> {
        let key = id.to_owned();
        self.read(move |s| s.get_session(&key))
            .await?
            .ok_or_else(|| RuntimeError::UnknownSession(id.to_owned()))
    }

    /// Full-text search over every stored session.
    pub async fn search(&self, request: SearchRequest) -> Result<Vec<SearchHit>, RuntimeError> {
        self.read(move |s| s.search(&request)).await
    }

    /// Every stored message of session `id` in order, compacted ones
    /// included (what happened, for people to read), with when each was
    /// stored.
    pub async fn transcript(&self, id: &str) -> Result<Vec<StoredMessage>, RuntimeError> {
        let key = id.to_owned();
        self.read(move |s| s.load_messages(&key)).await
    }

    /// The number of the last event stored for the session tree rooted at
    /// `id` (0 when none): a front end that showed the stored transcript
    /// follows the live events from here, missing none.
    pub async fn last_event_seq(&self, id: &str) -> Result<u64, RuntimeError> {
        let key = id.to_owned();
        let seq = self.read(move |s| s.last_tree_event_seq(&key)).await?;
        Ok(u64::try_from(seq).unwrap_or(0))
    }

    /// The conversation of session `id` as the model sees it now: after its
    /// last compaction.
    pub async fn live_transcript(&self, id: &str) -> Result<Vec<Message>, RuntimeError> {
        let stored = self.transcript(id).await?;
        Ok(crate::live_history(
            stored.into_iter().map(|m| m.message).collect(),
        ))
    }

    /// How long each finished tool call of session `id` took (ms), by call
    /// id, from its stored `tool.completed` events.
    pub async fn tool_durations(
        &self,
        id: &str,
    ) -> Result<std::collections::HashMap<String, u64>, RuntimeError> {
        let key = id.to_owned();
        self.read(move |s| s.tool_durations(&key)).await
    }

    /// The todo list of session `id` as stored (a JSON array), if it has one.
    pub async fn todos(&self, id: &str) -> Result<Option<String>, RuntimeError> {
        let key = id.to_owned();
        self.read(move |s| s.load_todos(&key)).await
    }

    /// The journal entry of agent `id`, at its effective status (see
    /// [`super::effective_agent_status`]).
    pub async fn agent(&self, id: &str) -> Result<Option<AgentRecord>, RuntimeError> {
        let key = id.to_owned();
        let Some(record) = self.read(move |s| s.get_agent(&key)).await? else {
            return Ok(None);
        };
        let mut records = [record];
        super::effective_agent_status(&self.store, &mut records).await?;
        let [record] = records;
        Ok(Some(record))
    }

    /// Journal entries matching `filter`, at their effective status.
    pub async fn agents(&self, filter: AgentFilter) -> Result<Vec<AgentRecord>, RuntimeError> {
        let mut records = self.read(move |s| s.list_agents(&filter)).await?;
        super::effective_agent_status(&self.store, &mut records).await?;
        Ok(records)
    }

    /// Usage of the requests made at or after `since_ms` (all when `None`),
    /// grouped by `by`, the most expensive first.
    pub async fn usage(
        &self,
        since_ms: Option<i64>,
        by: UsageGrouping,
    ) -> Result<Vec<UsageRow>, RuntimeError> {
        self.read(move |s| s.usage_report(since_ms, by)).await
    }

    /// The sum of usage `rows` (an unknown cost when any row's is): the
    /// total line of `herald usage` and `GET /api/usage`.
    pub fn usage_total(rows: &[UsageRow]) -> herald_protocol::UsageTotals {
        rows.iter()
            .fold(herald_protocol::UsageTotals::default(), |mut sum, row| {
                let t = &row.totals;
                sum.input += t.input;
                sum.output += t.output;
                sum.cached += t.cached;
                sum.cache_creation += t.cache_creation;
                sum.requests += t.requests;
                sum.cost_usd = herald_protocol::add_cost(sum.cost_usd, t.cost_usd);
                sum
            })
    }

    /// The prompts typed in working directory `cwd`, newest first (the
    /// composer's history).
    pub async fn recent_prompts(
        &self,
        cwd: &str,
        limit: usize,
    ) -> Result<Vec<String>, RuntimeError> {
        let cwd = cwd.to_owned();
        self.read(move |s| s.recent_prompts(&cwd, limit)).await
    }

    /// Adds `text` to the prompt history of `cwd`.
    pub async fn remember_prompt(&self, cwd: &str, text: &str) -> Result<(), RuntimeError> {
        let (cwd, text) = (cwd.to_owned(), text.to_owned());
        self.store
            .call(move |s| s.add_prompt(&cwd, &text))
            .await
            .map_err(|err| RuntimeError::Store(err.to_string()))?
            .map(drop)
            .map_err(|err| RuntimeError::Store(err.to_string()))
    }
}
