//! The `session_search` tool: full-text recall over every stored
//! session except the current one (its messages, title and end-of-session
//! summary), plus read, scroll and browse modes; search and browse can be
//! limited to sessions active in a period (`since`, `until`).

use herald_protocol::Role;
use herald_store::{SearchRequest, SearchSort, StoredMessage};
use herald_tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::StoreHandle;

/// Longest message text shown in a result; recall needs gist, not bulk.
const MESSAGE_PREVIEW_CHARS: usize = 600;

/// Arguments of `session_search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SessionSearchArgs {
    /// Words to find (FTS).
    #[schemars(description = "")]
    query: Option<String>,
    /// Max 10.
    limit: Option<usize>,
    /// user, assistant, tool.
    #[schemars(description = "")]
    role_filter: Option<Vec<String>>,
    /// Read this session (its start and end), or scroll it with around_message_id.
    #[schemars(description = "")]
    session_id: Option<String>,
    /// Message id to centre a window on (needs session_id).
    #[schemars(description = "")]
    around_message_id: Option<i64>,
    /// Messages each side (max 20).
    window: Option<usize>,
    /// relevance or newest.
    sort: Option<String>,
    /// Active since: a date (2026-11-20) or age (7d).
    since: Option<String>,
    /// Started before: date or age.
    until: Option<String>,
}

/// Searches past sessions through the store thread.
pub struct SessionSearch {
    store: StoreHandle,
    current_session: String,
    /// Live sessions of the agent's own tree (a subagent's ancestors),
    /// never shown either.
    others: Vec<String>,
}

impl SessionSearch {
    /// A tool that never returns `current_session`.
    pub fn new(store: StoreHandle, current_session: String) -> Self {
        Self {
            store,
            current_session,
            others: Vec::new(),
        }
    }

    /// A subagent's tool: `sessions` are its ancestors' sessions, root
    /// first, then its own (the current one); none of them is ever returned.
    pub fn hiding(store: StoreHandle, mut sessions: Vec<String>) -> Self {
        let current_session = sessions.pop().unwrap_or_default();
        Self {
            store,
            current_session,
            others: sessions,
        }
    }

    fn hidden(&self, session_id: &str) -> bool {
        session_id == self.current_session || self.others.iter().any(|s| s == session_id)
    }
}

fn preview(m: &StoredMessage) -> Value {
    let text: String = m
        .message
        .content
        .chars()
        .take(MESSAGE_PREVIEW_CHARS)
        .collect();
    let mut out = json!({
        "id": m.id,
        "role": format!("{:?}", m.message.role).to_lowercase(),
        "text": text,
    });
    if m.message.content.chars().count() > MESSAGE_PREVIEW_CHARS {
        out["truncated"] = json!(true);
    }
    if !m.message.tool_calls.is_empty() {
        out["tool_calls"] = json!(
            m.message
                .tool_calls
                .iter()
                .map(|c| &c.name)
                .collect::<Vec<_>>()
        );
    }
    out
}

/// Now, in Unix milliseconds.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn roles(names: &[String]) -> Result<Vec<Role>, ToolError> {
    names
        .iter()
        .map(|n| match n.trim().to_ascii_lowercase().as_str() {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            other => Err(ToolError::new(format!(
                "unknown role '{other}' in role_filter; use user, assistant or tool"
            ))),
        })
        .collect()
}

impl TypedTool for SessionSearch {
    type Args = SessionSearchArgs;
    const NAME: &'static str = "session_search";
    const TOOLSET: &'static str = "session";
    const DESCRIPTION: &'static str = "Search your past sessions, e.g. when the user refers to earlier work. query: best matches with neighbouring messages. session_id: its start and end (around_message_id scrolls). Neither: recent sessions.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: SessionSearchArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let current = self.current_session.clone();
        if args.session_id.as_deref() == Some(current.as_str()) {
            return Err(ToolError::new(
                "that is the current session; its messages are already in your context",
            ));
        }
        if args.session_id.as_deref().is_some_and(|id| self.hidden(id)) {
            return Err(ToolError::new(
                "that session belongs to an agent that delegated to you and is still running; what you need from it is in your goal and context",
            ));
        }
        // Extra rows make up for hidden sessions filtered out below.
        let extra = self.others.len();
        if args.around_message_id.is_some() && args.session_id.is_none() {
            return Err(ToolError::new(
                "around_message_id needs session_id (take both from a search result)",
            ));
        }
        let window = args.window.unwrap_or(5);
        let limit = args.limit.unwrap_or(3);
        let role_filter = match &args.role_filter {
            Some(names) if !names.is_empty() => Some(roles(names)?),
            _ => None,
        };
        let sort = match args.sort.as_deref().map(str::trim) {
            None | Some("") | Some("relevance") => SearchSort::Relevance,
            Some("newest") => SearchSort::Newest,
            Some(other) => {
                return Err(ToolError::new(format!(
                    "unknown sort '{other}'; use relevance or newest"
                )));
            }
        };
        let active =
            crate::time_bound::parse_period(args.since.as_deref(), args.until.as_deref(), now_ms())
                .map_err(ToolError::new)?;
        if args.session_id.is_some() && active != herald_store::ActiveBetween::default() {
            return Err(ToolError::new(
                "since/until limit a search or the list of recent sessions; leave them out when reading a session by session_id",
            ));
        }
        let query = args.query.filter(|q| !q.trim().is_empty());
        let gone = |err: crate::StoreGone| ToolError::new(err.to_string());
        let result: Value = match (query, args.session_id, args.around_message_id) {
            (Some(query), _, _) => {
                let request = SearchRequest {
                    query,
                    limit: limit + extra,
                    role_filter,
                    exclude_session: Some(current),
                    window,
                    sort,
                    active,
                };
                let mut hits = self
                    .store
                    .call(move |s| s.search(&request))
                    .await
                    .map_err(gone)?
                    .map_err(|e| ToolError::new(e.to_string()))?;
                hits.retain(|h| !self.hidden(&h.session.id));
                hits.truncate(limit.clamp(1, herald_store::MAX_SEARCH_LIMIT));
                json!({
                    "mode": "search",
                    "results": hits.iter().map(|h| json!({
                        "session_id": h.session.id,
                        "title": h.session.title,
                        "summary": h.session.summary,
                        "started_at_ms": h.session.started_at,
                        "last_active_at_ms": h.session.last_active_at,
                        "parent_session_id": h.session.parent_session_id,
                        "matched_summary": h.summary_match,
                        "match": h.message.as_ref().map(preview),
                        "before": h.before.iter().map(preview).collect::<Vec<_>>(),
                        "after": h.after.iter().map(preview).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                })
            }
            (None, Some(session_id), Some(around)) => {
                let w = self
                    .store
                    .call(move |s| s.message_window(&session_id, around, window))
                    .await
                    .map_err(gone)?
                    .map_err(|e| ToolError::new(e.to_string()))?;
                json!({
                    "mode": "scroll",
                    "session_id": w.session.id,
                    "title": w.session.title,
                    "messages": w.before.iter().chain(std::iter::once(&w.message)).chain(&w.after).map(preview).collect::<Vec<_>>(),
                })
            }
            (None, Some(session_id), None) => {
                let o = self
                    .store
                    .call(move |s| s.session_overview(&session_id, window))
                    .await
                    .map_err(gone)?
                    .map_err(|e| ToolError::new(e.to_string()))?;
                json!({
                    "mode": "read",
                    "session_id": o.session.id,
                    "title": o.session.title,
                    "summary": o.session.summary,
                    "started_at_ms": o.session.started_at,
                    "head": o.head.iter().map(preview).collect::<Vec<_>>(),
                    "omitted": o.omitted,
                    "tail": o.tail.iter().map(preview).collect::<Vec<_>>(),
                })
            }
            (None, None, _) => {
                let mut sessions = self
                    .store
                    .call(move |s| s.recent_sessions_in(limit + extra, Some(&current), active))
                    .await
                    .map_err(gone)?
                    .map_err(|e| ToolError::new(e.to_string()))?;
                sessions.retain(|s| !self.hidden(&s.id));
                sessions.truncate(limit.clamp(1, herald_store::MAX_SEARCH_LIMIT));
                json!({
                    "mode": "browse",
                    "sessions": sessions.iter().map(|s| json!({
                        "session_id": s.id,
                        "title": s.title,
                        "summary": s.summary,
                        "started_at_ms": s.started_at,
                        "last_active_at_ms": s.last_active_at,
                        "messages": s.message_count,
                    })).collect::<Vec<_>>(),
                })
            }
        };
        Ok(result.to_string())
    }
}
