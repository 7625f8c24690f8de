//! Acting on a running session: interrupt its turn, answer a clarify
//! question, an approval request or an MCP server's elicitation, list and
//! cancel its subagents. These act on sessions open in
//! this server; a stored session that is not open has no turn, question or
//! running agent.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use herald_core::runtime::{Op, Session};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiJson, ApiPath, ErrorBody};
use crate::state::AppState;

/// Whether an interrupt stopped something.
#[derive(Debug, Serialize, ToSchema)]
pub struct Interrupted {
    /// A turn was running and is being stopped.
    pub interrupted: bool,
}

/// The answer to a clarify question.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClarifyAnswer {
    /// A choice number, a choice's text, or free text where allowed.
    pub answer: String,
}

/// The clarify questions a session waits on.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuestionList {
    /// Each with `request_id, agent_id, question, choices, allow_freetext`
    /// (as its `clarify.requested` event), oldest first.
    #[schema(value_type = Vec<Object>)]
    pub questions: Vec<herald_core::runtime::PendingQuestion>,
}

/// An answer to an approval request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalDecision {
    /// `once` (run this call), `session` (and calls matching its rule for
    /// the rest of the session), `always` (and save that rule) or `deny`.
    #[schema(value_type = String, pattern = "^(once|session|always|deny)$")]
    pub decision: herald_protocol::ApprovalDecision,
    /// With `deny`: why, passed to the model.
    #[serde(default)]
    pub message: Option<String>,
}

/// The approval requests a session waits on.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalList {
    /// Each with `request_id, agent_id, tool, arguments, reason, rule,
    /// allow_rule`, oldest first.
    #[schema(value_type = Vec<Object>)]
    pub approvals: Vec<herald_core::PendingApproval>,
}

/// An answer to an MCP server's request for user input (elicitation).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ElicitationAnswer {
    /// `accept` (with `content`), `decline` or `cancel`.
    #[schema(value_type = String, pattern = "^(accept|decline|cancel)$")]
    pub action: herald_protocol::ElicitationAction,
    /// With `accept`: an object fitting the request's `schema`.
    #[serde(default)]
    pub content: Option<serde_json::Map<String, Value>>,
}

/// The elicitations a session waits on.
#[derive(Debug, Serialize, ToSchema)]
pub struct ElicitationList {
    /// Each with `request_id, agent_id, server, message, schema`, oldest
    /// first.
    #[schema(value_type = Vec<Object>)]
    pub elicitations: Vec<herald_core::PendingElicitation>,
}

/// The subagents of a session.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentList {
    /// Each with `id, parent_id, depth, goal, background, status, seconds,
    /// api_calls, tokens, current_tool`.
    #[schema(value_type = Vec<Object>)]
    pub agents: Vec<Value>,
}

/// An empty success.
#[derive(Debug, Serialize, ToSchema)]
pub struct Done {
    pub ok: bool,
}

/// The session open here, `None` for a stored one that is not, 404 for an
/// unknown id.
async fn open_or_stored(state: &AppState, id: &str) -> Result<Option<Session>, ApiError> {
    if let Some(session) = state.open_one(id) {
        return Ok(Some(session));
    }
    state.record(id).await?;
    Ok(None)
}

/// Stops the running turn (and its synchronous subagents).
#[utoipa::path(
    post,
    path = "/api/sessions/{id}/interrupt",
    tag = "control",
    params(("id" = String, Path, description = "session id")),
    responses(
        (status = 200, description = "whether a turn was running", body = Interrupted),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn interrupt(
    State(state): State<Arc<AppState>>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Interrupted>, ApiError> {
    let session = open_or_stored(&state, &id).await?;
    let interrupted = match session {
        Some(session) => {
            let running = session.is_busy();
            session.submit(Op::Interrupt {})?;
            running
        }
        None => false,
    };
    Ok(Json(Interrupted { interrupted }))
}

/// Answers the open clarify question `request_id`.
#[utoipa::path(
    post,
    path = "/api/sessions/{id}/clarify/{request_id}",
    tag = "control",
    params(
        ("id" = String, Path, description = "session id"),
        ("request_id" = String, Path, description = "the `request_id` of the `clarify.requested` event")
    ),
    request_body = ClarifyAnswer,
    responses(
        (status = 200, description = "answered", body = Done),
        (status = 404, description = "no such session or open question, or an answer that does not fit it", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn clarify(
    State(state): State<Arc<AppState>>,
    ApiPath((id, request_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<ClarifyAnswer>,
) -> Result<Json<Done>, ApiError> {
    let Some(session) = open_or_stored(&state, &id).await? else {
        return Err(ApiError::not_found(
            "request_not_found",
            format!("no open question '{request_id}': session {id} is not running"),
        ));
    };
    session.submit(Op::ClarifyAnswer {
        request_id,
        answer: body.answer,
    })?;
    Ok(Json(Done { ok: true }))
}

/// The clarify questions waiting for an answer (`clarify.requested`
/// events not yet answered); empty for a session not open here.
#[utoipa::path(
    get,
    path = "/api/sessions/{id}/questions",
    tag = "control",
    params(("id" = String, Path, description = "session id")),
    responses(
        (status = 200, description = "the waiting questions", body = QuestionList),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn questions(
    State(state): State<Arc<AppState>>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<QuestionList>, ApiError> {
    let session = open_or_stored(&state, &id).await?;
    Ok(Json(QuestionList {
        questions: session.map(|s| s.pending_questions()).unwrap_or_default(),
    }))
}

/// The approval requests waiting for an answer (`approval.requested`
/// events not yet answered); empty for a session not open here.
#[utoipa::path(
    get,
    path = "/api/sessions/{id}/approvals",
    tag = "control",
    params(("id" = String, Path, description = "session id")),
    responses(
        (status = 200, description = "the waiting requests", body = ApprovalList),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn approvals(
    State(state): State<Arc<AppState>>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ApprovalList>, ApiError> {
    let session = open_or_stored(&state, &id).await?;
    Ok(Json(ApprovalList {
        approvals: session.map(|s| s.pending_approvals()).unwrap_or_default(),
    }))
}

/// Answers the approval request `request_id`.
#[utoipa::path(
    post,
    path = "/api/sessions/{id}/approvals/{request_id}",
    tag = "control",
    params(
        ("id" = String, Path, description = "session id"),
        ("request_id" = String, Path, description = "the `request_id` of the `approval.requested` event")
    ),
    request_body = ApprovalDecision,
    responses(
        (status = 200, description = "answered", body = Done),
        (status = 400, description = "an unknown decision word", body = ErrorBody),
        (status = 404, description = "no such session or waiting request", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn approve(
    State(state): State<Arc<AppState>>,
    ApiPath((id, request_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<ApprovalDecision>,
) -> Result<Json<Done>, ApiError> {
    let Some(session) = open_or_stored(&state, &id).await? else {
        return Err(ApiError::not_found(
            "request_not_found",
            format!("no waiting approval request '{request_id}': session {id} is not running"),
        ));
    };
    session.submit(Op::ApprovalDecision {
        request_id,
        decision: body.decision,
        message: body.message,
    })?;
    Ok(Json(Done { ok: true }))
}

/// The elicitations waiting for an answer (`elicitation.requested` events
/// not yet answered); empty for a session not open here.
#[utoipa::path(
    get,
    path = "/api/sessions/{id}/elicitations",
    tag = "control",
    params(("id" = String, Path, description = "session id")),
    responses(
        (status = 200, description = "the waiting requests", body = ElicitationList),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn elicitations(
    State(state): State<Arc<AppState>>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ElicitationList>, ApiError> {
    let session = open_or_stored(&state, &id).await?;
    Ok(Json(ElicitationList {
        elicitations: session
            .map(|s| s.pending_elicitations())
            .unwrap_or_default(),
    }))
}

/// Answers the elicitation `request_id`.
#[utoipa::path(
    post,
    path = "/api/sessions/{id}/elicitations/{request_id}",
    tag = "control",
    params(
        ("id" = String, Path, description = "session id"),
        ("request_id" = String, Path, description = "the `request_id` of the `elicitation.requested` event")
    ),
    request_body = ElicitationAnswer,
    responses(
        (status = 200, description = "answered", body = Done),
        (status = 400, description = "an unknown action, or content that does not fit the schema (the request stays open)", body = ErrorBody),
        (status = 404, description = "no such session or waiting request", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn answer_elicitation(
    State(state): State<Arc<AppState>>,
    ApiPath((id, request_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<ElicitationAnswer>,
) -> Result<Json<Done>, ApiError> {
    let Some(session) = open_or_stored(&state, &id).await? else {
        return Err(ApiError::not_found(
            "request_not_found",
            format!("no waiting elicitation '{request_id}': session {id} is not running"),
        ));
    };
    session.submit(Op::ElicitationAnswer {
        request_id,
        action: body.action,
        content: body.content.map(Value::Object),
    })?;
    Ok(Json(Done { ok: true }))
}

/// The session's subagents, running and finished, in this server.
#[utoipa::path(
    get,
    path = "/api/sessions/{id}/agents",
    tag = "control",
    params(("id" = String, Path, description = "session id")),
    responses(
        (status = 200, description = "the subagents", body = AgentList),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn agents(
    State(state): State<Arc<AppState>>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<AgentList>, ApiError> {
    let session = open_or_stored(&state, &id).await?;
    let agents = session
        .map(|s| s.agents())
        .unwrap_or_default()
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .map_err(|err| ApiError::internal(format!("cannot encode an agent: {err}")))?;
    Ok(Json(AgentList { agents }))
}

/// Cancels the running subagent `agent_id` and its subtree.
#[utoipa::path(
    post,
    path = "/api/sessions/{id}/agents/{agent_id}/cancel",
    tag = "control",
    params(
        ("id" = String, Path, description = "session id"),
        ("agent_id" = String, Path, description = "subagent id")
    ),
    responses(
        (status = 200, description = "cancelled", body = Done),
        (status = 404, description = "no such session or running subagent", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn cancel_agent(
    State(state): State<Arc<AppState>>,
    ApiPath((id, agent_id)): ApiPath<(String, String)>,
) -> Result<Json<Done>, ApiError> {
    let Some(session) = open_or_stored(&state, &id).await? else {
        return Err(ApiError::not_found(
            "request_not_found",
            format!("no running subagent '{agent_id}': session {id} is not running"),
        ));
    };
    session.submit(Op::CancelAgent { agent_id })?;
    Ok(Json(Done { ok: true }))
}

/// A message for a running subagent.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentMessage {
    /// The text it reads at its next tool boundary.
    #[schema(min_length = 1, pattern = "\\S")]
    pub message: String,
    /// Also send it to every running agent below it.
    #[serde(default)]
    pub subtree: bool,
}

/// A follow-up question for a finished subagent.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentFollowup {
    /// The new turn's input.
    #[schema(min_length = 1, pattern = "\\S")]
    pub message: String,
}

/// The receipts of a message: one per agent it was queued for.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageReceipts {
    /// Each `{agent_id, receipt, state}`; `state` is `queued` here and
    /// becomes `delivered` or `missed` in `agent.message` events.
    #[schema(value_type = Vec<Object>)]
    pub sent: Vec<herald_core::delegation::SentMessage>,
}

/// Queues a message for the running subagent `agent_id` (and, with
/// `subtree`, the running agents below it): it reads it at its next tool
/// boundary.
#[utoipa::path(
    post,
    path = "/api/sessions/{id}/agents/{agent_id}/messages",
    tag = "control",
    params(
        ("id" = String, Path, description = "session id"),
        ("agent_id" = String, Path, description = "subagent id")
    ),
    request_body = AgentMessage,
    responses(
        (status = 200, description = "queued; receipts follow as agent.message events", body = MessageReceipts),
        (status = 400, description = "empty message, or the agent has finished (use followup)", body = ErrorBody),
        (status = 404, description = "no such session or subagent", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn message_agent(
    State(state): State<Arc<AppState>>,
    ApiPath((id, agent_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<AgentMessage>,
) -> Result<Json<MessageReceipts>, ApiError> {
    let session = running_session(&state, &id, &agent_id).await?;
    let sent = session.send_to_agent(&agent_id, &body.message, body.subtree)?;
    Ok(Json(MessageReceipts { sent }))
}

/// Starts a follow-up turn in the finished subagent `agent_id`'s own
/// session (its context intact), in the background; its result reaches the
/// session's top-level agent like any background agent's.
#[utoipa::path(
    post,
    path = "/api/sessions/{id}/agents/{agent_id}/followup",
    tag = "control",
    params(
        ("id" = String, Path, description = "session id"),
        ("agent_id" = String, Path, description = "subagent id")
    ),
    request_body = AgentFollowup,
    responses(
        (status = 200, description = "the follow-up started", body = Done),
        (status = 400, description = "empty message, or the agent is still running (send a message instead)", body = ErrorBody),
        (status = 404, description = "no such session or subagent", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn follow_up_agent(
    State(state): State<Arc<AppState>>,
    ApiPath((id, agent_id)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<AgentFollowup>,
) -> Result<Json<Done>, ApiError> {
    let session = running_session(&state, &id, &agent_id).await?;
    session.follow_up_agent(&agent_id, &body.message).await?;
    Ok(Json(Done { ok: true }))
}

/// The open session `id`, or the 404 for an agent in a session not running.
async fn running_session(
    state: &Arc<AppState>,
    id: &str,
    agent_id: &str,
) -> Result<Session, ApiError> {
    open_or_stored(state, id).await?.ok_or_else(|| {
        ApiError::not_found(
            "request_not_found",
            format!("no subagent '{agent_id}' to reach: session {id} is not running"),
        )
    })
}
