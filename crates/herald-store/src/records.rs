//! Plain data types the store takes and returns. They derive serde so front
//! ends can print them as JSON (`herald sessions show --json`, exports).

use herald_protocol::Message;
use serde::{Deserialize, Serialize};

use rusqlite::ToSql;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};

/// Which front end started a session; lets listings hide subagent sessions
/// and lets `--continue` pick only sessions a person started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionSource {
    /// Started by a person at the terminal (REPL or `herald run`).
    Cli,
    /// Started through the HTTP API.
    Api,
    /// A child session run by `delegate_task` or a background agent.
    Subagent,
    /// A run of a scheduled job (`herald daemon`, `herald cron run-now`).
    Cron,
    /// An item of a batch run or an eval task (`herald batch run`,
    /// `herald eval run`, `herald worker`).
    Batch,
}

impl SessionSource {
    /// The text stored in `sessions.source`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionSource::Cli => "cli",
            SessionSource::Api => "api",
            SessionSource::Subagent => "subagent",
            SessionSource::Cron => "cron",
            SessionSource::Batch => "batch",
        }
    }
}

impl ToSql for SessionSource {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for SessionSource {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value.as_str()? {
            "cli" => Ok(SessionSource::Cli),
            "api" => Ok(SessionSource::Api),
            "subagent" => Ok(SessionSource::Subagent),
            "cron" => Ok(SessionSource::Cron),
            "batch" => Ok(SessionSource::Batch),
            other => Err(FromSqlError::Other(
                format!(
                    "unknown session source '{other}' (expected cli, api, subagent, cron or batch)"
                )
                .into(),
            )),
        }
    }
}

/// What the agent knows when it starts a session. The system prompt is stored
/// verbatim so a resumed session replays it byte for byte (prefix caching).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewSession {
    pub id: String,
    pub parent_session_id: Option<String>,
    pub agent_id: Option<String>,
    pub source: SessionSource,
    pub cwd: String,
    pub model: String,
    pub provider: String,
    pub system_prompt: String,
}

#[cfg(test)]
impl NewSession {
    /// A root CLI session named `id`, for the crate's unit tests.
    pub(crate) fn for_test(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            parent_session_id: None,
            agent_id: Some("root".into()),
            source: SessionSource::Cli,
            cwd: "/w".into(),
            model: "m".into(),
            provider: "openai".into(),
            system_prompt: "sys".into(),
        }
    }
}

/// One row of `sessions`: identity, lineage, prompt, times (Unix ms) and
/// running token/cost totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: String,
    pub parent_session_id: Option<String>,
    pub agent_id: Option<String>,
    pub source: SessionSource,
    pub cwd: String,
    pub model: String,
    pub provider: String,
    /// First line of the first user message (at most 80 characters), if any.
    pub title: Option<String>,
    pub system_prompt: String,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub end_reason: Option<String>,
    /// Last message, usage record or end of this session; drives `--continue` and prune.
    pub last_active_at: i64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub cache_creation_tokens: u64,
    /// USD of the priced requests (written rounded to 1e-6).
    #[serde(serialize_with = "herald_protocol::cost_serde::serialize_amount")]
    pub cost_usd: f64,
    pub message_count: u64,
    /// A short summary stored when the session ended (see
    /// [`crate::Store::set_summary`]); searchable with the title.
    #[serde(default)]
    pub summary: Option<String>,
}

/// A message as stored: its database id (stable handle for search windows),
/// its position in the session, and when it was written (Unix ms).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMessage {
    pub id: i64,
    pub seq: i64,
    pub created_at: i64,
    #[serde(flatten)]
    pub message: Message,
}

/// One row of `usage`: what a single model request cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    pub id: i64,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub cache_creation_tokens: u64,
    /// `None` when the model's price was unknown (written rounded to 1e-6).
    #[serde(default, with = "herald_protocol::cost_serde")]
    pub cost_usd: Option<f64>,
    pub created_at: i64,
}

/// Which sessions `list_sessions` returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only sessions started in this directory.
    pub cwd: Option<String>,
    /// Only direct children of this session (their `include_subagents` is implied).
    pub parent: Option<String>,
    /// At most this many sessions; 0 means no limit.
    pub limit: usize,
    /// Also list sessions that have a parent (subagent runs).
    pub include_subagents: bool,
    /// Skip this many of the newest matches first (paging a long list).
    pub offset: usize,
    /// Only sessions that ran this model.
    pub model: Option<String>,
    /// Only sessions started at or after this time (Unix ms).
    pub started_from: Option<i64>,
    /// Only sessions started before this time (Unix ms).
    pub started_until: Option<i64>,
    /// Only ended sessions (`Some(true)`) or only ones not ended
    /// (`Some(false)`).
    pub ended: Option<bool>,
}

impl ListFilter {
    /// Whether `record` matches the filter's conditions (paging aside), as
    /// `list_sessions` would select it.
    pub fn admits(&self, record: &SessionRecord) -> bool {
        self.cwd.as_ref().is_none_or(|cwd| *cwd == record.cwd)
            && match &self.parent {
                Some(parent) => record.parent_session_id.as_ref() == Some(parent),
                None => self.include_subagents || record.parent_session_id.is_none(),
            }
            && self.model.as_ref().is_none_or(|m| *m == record.model)
            && self.started_from.is_none_or(|t| record.started_at >= t)
            && self.started_until.is_none_or(|t| record.started_at < t)
            && self
                .ended
                .is_none_or(|ended| ended == record.ended_at.is_some())
    }
}

/// Read mode of `session_search`: the start and the end of one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionOverview {
    pub session: SessionRecord,
    /// The first messages (all of them when the session is short).
    pub head: Vec<StoredMessage>,
    /// The last messages; empty when `head` already holds everything.
    pub tail: Vec<StoredMessage>,
    /// How many messages lie between `head` and `tail`.
    pub omitted: u64,
}

/// Scroll mode of `session_search`: one message with its neighbours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageWindow {
    pub session: SessionRecord,
    pub before: Vec<StoredMessage>,
    pub message: StoredMessage,
    pub after: Vec<StoredMessage>,
}
