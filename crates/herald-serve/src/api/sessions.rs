//! `/api/sessions`: create (new, fork, resume), list, search, get, delete.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use herald_core::runtime::{Catalog, ClarifyPolicy, OpenMode};
use herald_store::{ListFilter, SearchRequest, SessionRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiPath, ApiQuery, ErrorBody};
use crate::state::AppState;

/// How a session created through the API asks its user.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Clarify {
    /// Questions are `clarify.requested` events answered with
    /// `POST /api/sessions/{id}/clarify/{request_id}`.
    #[default]
    Ask,
    /// Nobody answers: the model decides itself.
    Unavailable,
}

impl From<Clarify> for ClarifyPolicy {
    fn from(c: Clarify) -> Self {
        match c {
            Clarify::Ask => ClarifyPolicy::Ask,
            Clarify::Unavailable => ClarifyPolicy::Unavailable,
        }
    }
}

/// `POST /api/sessions`: a new session, or one forked from / resuming a
/// stored one (at most one of `fork` and `resume`).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// Start with a copy of this stored session's conversation.
    pub fork: Option<String>,
    /// Open this stored session (as any route naming it would).
    pub resume: Option<String>,
    #[serde(default)]
    pub clarify: Clarify,
}

/// A session as the API shows it: its stored record plus its state here.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionInfo {
    /// The stored record (id, cwd, model, times in Unix ms, token totals,
    /// `message_count`, ...).
    #[serde(flatten)]
    #[schema(value_type = StoredSession)]
    pub record: Value,
    /// Open in this server (its lease held here).
    pub open: bool,
    /// Running a turn now.
    pub busy: bool,
    /// Clarify questions waiting for an answer.
    pub open_questions: Vec<String>,
}

/// The stored record of a session, as [`SessionInfo`] shows it (the
/// document of `herald_store::SessionRecord`; a test keeps the two alike).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct StoredSession {
    pub id: String,
    /// The session that delegated this one (subagent sessions).
    pub parent_session_id: Option<String>,
    pub agent_id: Option<String>,
    /// `cli`, `api` or `subagent`.
    #[schema(pattern = "^(cli|api|subagent)$")]
    pub source: String,
    pub cwd: String,
    pub model: String,
    pub provider: String,
    /// First line of the first user message (at most 80 characters).
    pub title: Option<String>,
    /// Only in `GET /api/sessions/{id}`.
    #[schema(required = false)]
    pub system_prompt: String,
    /// Unix ms.
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub end_reason: Option<String>,
    pub last_active_at: i64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub cache_creation_tokens: u64,
    /// USD of the priced requests.
    pub cost_usd: f64,
    pub message_count: u64,
    /// Stored when the session ended.
    pub summary: Option<String>,
}

/// A list of sessions.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
}

/// The answer of `GET /api/sessions/search`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SearchHits {
    /// Each with its session, the matching message and its neighbours.
    #[schema(value_type = Vec<Object>)]
    pub hits: Vec<Value>,
}

/// Query of `GET /api/sessions`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// At most this many (default 50; 0 = all).
    #[param(nullable = false)]
    pub limit: Option<usize>,
    /// Only sessions started in this directory.
    #[param(nullable = false)]
    pub cwd: Option<String>,
    /// Also subagent sessions.
    #[serde(default)]
    pub include_subagents: bool,
    /// Skip this many of the newest matches (paging).
    #[param(nullable = false)]
    pub offset: Option<usize>,
    /// Only sessions of this model.
    #[param(nullable = false)]
    pub model: Option<String>,
    /// Only sessions started at or after this time (Unix ms).
    #[param(nullable = false)]
    pub since_ms: Option<i64>,
    /// Only sessions started before this time (Unix ms).
    #[param(nullable = false)]
    pub until_ms: Option<i64>,
    /// `ended` or `unended` sessions only.
    #[param(nullable = false, inline)]
    pub status: Option<EndedFilter>,
    /// Only the sessions open in this server (the others' filters still
    /// apply to them, paging does not).
    #[serde(default)]
    pub open: bool,
}

/// Whether a listed session has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EndedFilter {
    /// Ended (closed by its front end or deleted turn).
    Ended,
    /// Not ended: open somewhere, or left without an end.
    Unended,
}

/// Query of `GET /api/sessions/search`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// Free text (not blank).
    #[param(pattern = "\\S")]
    pub q: String,
    /// At most this many sessions (default 10; clamped to 1..=10).
    #[param(nullable = false)]
    pub limit: Option<usize>,
}

impl AppState {
    /// `record` with its state in this process; `system_prompt` left out
    /// unless `full`.
    pub(crate) fn info(&self, record: &SessionRecord, full: bool) -> Result<SessionInfo, ApiError> {
        let mut value = serde_json::to_value(record)
            .map_err(|err| ApiError::internal(format!("cannot encode a session: {err}")))?;
        if !full && let Some(object) = value.as_object_mut() {
            object.remove("system_prompt");
        }
        let session = self.is_open(&record.id);
        Ok(SessionInfo {
            record: value,
            open: session.is_some(),
            busy: session.as_ref().is_some_and(|s| s.is_busy()),
            open_questions: session.map(|s| s.open_questions()).unwrap_or_default(),
        })
    }

    /// The stored record of `id`, or 404.
    pub(crate) async fn record(&self, id: &str) -> Result<SessionRecord, ApiError> {
        Catalog::new(self.store.clone())
            .session(id)
            .await
            .map_err(ApiError::from)
    }
}

/// Creates a session (or forks / opens a stored one) and keeps it open.
#[utoipa::path(
    post,
    path = "/api/sessions",
    tag = "sessions",
    request_body(content = Option<CreateSession>, description = "optional: no body (or an empty one) opens a new session"),
    responses(
        (status = 201, description = "the open session", body = SessionInfo),
        (status = 400, description = "both fork and resume, or a malformed body", body = ErrorBody),
        (status = 404, description = "no such stored session", body = ErrorBody),
        (status = 409, description = "held by another process", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    // Not `ApiJson`: no body at all (and no content type) is a new session.
    let body = body.map_err(|r| crate::error::body_rejection(r.status(), r.body_text()))?;
    let request: CreateSession = if body.iter().all(u8::is_ascii_whitespace) {
        CreateSession::default()
    } else {
        match serde_json::from_slice(&body)
            .map_err(|err| ApiError::bad_request(format!("invalid JSON body: {err}")))?
        {
            // `null` is no body, as for a client that sends its absent
            // optional body that way.
            Value::Null => CreateSession::default(),
            value => crate::error::from_object(value)?,
        }
    };
    let clarify = ClarifyPolicy::from(request.clarify);
    let session = match (request.fork, request.resume) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                "give either fork or resume, not both",
            ));
        }
        (Some(source), None) => state.open(OpenMode::Fork(source), clarify).await?,
        (None, Some(id)) => state.session(&id, clarify).await?,
        (None, None) => state.open(OpenMode::New, clarify).await?,
    };
    let record = state.record(session.id()).await?;
    Ok((StatusCode::CREATED, Json(state.info(&record, false)?)).into_response())
}

/// Lists stored sessions, newest first.
#[utoipa::path(
    get,
    path = "/api/sessions",
    tag = "sessions",
    params(ListQuery),
    responses(
        (status = 200, description = "stored sessions", body = SessionList),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<SessionList>, ApiError> {
    let filter = ListFilter {
        cwd: query.cwd,
        parent: None,
        limit: query.limit.unwrap_or(50),
        include_subagents: query.include_subagents,
        offset: query.offset.unwrap_or(0),
        model: query.model,
        started_from: query.since_ms,
        started_until: query.until_ms,
        ended: query.status.map(|s| s == EndedFilter::Ended),
    };
    let catalog = Catalog::new(state.store.clone());
    let records = if query.open {
        let mut open = Vec::new();
        for id in state.open_ids() {
            match catalog.session(&id).await {
                Ok(record) if filter.admits(&record) => open.push(record),
                Ok(_) | Err(herald_core::runtime::RuntimeError::UnknownSession(_)) => {}
                Err(err) => return Err(err.into()),
            }
        }
        open.sort_by_key(|r| std::cmp::Reverse(r.started_at));
        open
    } else {
        catalog.sessions(filter).await?
    };
    let sessions = records
        .iter()
        .map(|r| state.info(r, false))
        .collect::<Result<_, _>>()?;
    Ok(Json(SessionList { sessions }))
}

/// Full-text search over stored messages, one hit per session.
#[utoipa::path(
    get,
    path = "/api/sessions/search",
    tag = "sessions",
    params(SearchQuery),
    responses(
        (status = 200, description = "`{\"hits\": [...]}`: each hit's session, matching message and its neighbours", body = SearchHits),
        (status = 400, description = "no query, or a blank one", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn search(
    State(state): State<Arc<AppState>>,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<Json<Value>, ApiError> {
    if query.q.trim().is_empty() {
        return Err(ApiError::bad_request(
            "q is empty; send the text to search for",
        ));
    }
    let request = SearchRequest {
        query: query.q,
        limit: query.limit.unwrap_or(10),
        ..SearchRequest::default()
    };
    let hits = Catalog::new(state.store.clone()).search(request).await?;
    Ok(Json(serde_json::json!({ "hits": hits })))
}

/// One stored session with its state here (system prompt included).
#[utoipa::path(
    get,
    path = "/api/sessions/{id}",
    tag = "sessions",
    params(("id" = String, Path, description = "session id")),
    responses(
        (status = 200, description = "the session", body = SessionInfo),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SessionInfo>, ApiError> {
    let record = state.record(&id).await?;
    Ok(Json(state.info(&record, true)?))
}

/// Ends the session if open here (interrupting its turn), then deletes it
/// with its messages, events and subagent sessions.
#[utoipa::path(
    delete,
    path = "/api/sessions/{id}",
    tag = "sessions",
    params(("id" = String, Path, description = "session id")),
    responses(
        (status = 204, description = "deleted"),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 409, description = "another herald process runs it", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    if !state.close(&id).await {
        state.wait_closed(&id).await;
        state.record(&id).await?;
    }
    let deleted = herald_core::runtime::delete_session(&state.store, &id).await?;
    if deleted {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(
            "session_not_found",
            format!("no session '{id}'"),
        ))
    }
}
