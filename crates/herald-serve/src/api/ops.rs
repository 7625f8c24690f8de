//! `POST /api/sessions/{id}/ops`: any protocol operation, as JSON. The other
//! control routes are shorthands for single operations.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use herald_core::runtime::{ClarifyPolicy, Op, RuntimeError};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiJson, ApiPath, ErrorBody};
use crate::state::AppState;

/// What became of a submitted operation.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpAccepted {
    /// The id the session gave the operation.
    pub submission_id: String,
    pub session_id: String,
    /// The last event number before the operation: follow its events with
    /// `GET /api/sessions/{id}/events?after=...`.
    pub after: u64,
}

/// Submits one operation to the session. `user_turn` opens (resumes) the
/// session in this server when needed and starts the turn; every other
/// operation acts on a session open here. The body is an `Op` as defined by
/// the protocol's JSON Schema (`docs/protocol/op.schema.json`), e.g.
/// `{"type": "interrupt"}` or `{"type": "approval_decision", "request_id":
/// "apr_1", "decision": "once"}`.
#[utoipa::path(
    post,
    path = "/api/sessions/{id}/ops",
    tag = "control",
    params(("id" = String, Path, description = "session id")),
    request_body(content = Object, description = "an `Op` (the protocol's schema, `docs/protocol/op.schema.json`; `text` not blank): an object with `type` (user_turn, interrupt, compact, steer, cancel_agent, rewind, clarify_answer, approval_decision, elicitation_answer, shutdown) and that operation's fields"),
    responses(
        (status = 202, description = "accepted: a turn started, the operation was applied, or (compact, rewind, shutdown) queued; its events carry `submission_id`, and a queued one that fails later reports an `error` event with it", body = OpAccepted),
        (status = 400, description = "not an operation, or one the session refuses as malformed", body = ErrorBody),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 409, description = "a turn is running, none is (steer), the session is not running here or has ended, another process holds it, the session refuses the operation in its state (code `op_refused`: a steer with no turn running), or it has no open request or running agent with that id (code `request_not_found`)", body = ErrorBody),
        (status = 429, description = "max_concurrent_turns reached", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn submit(
    State(state): State<Arc<AppState>>,
    ApiPath(id): ApiPath<String>,
    ApiJson(op): ApiJson<Op>,
) -> Result<(StatusCode, Json<OpAccepted>), ApiError> {
    let accepted = |submission_id: String, after: u64| {
        (
            StatusCode::ACCEPTED,
            Json(OpAccepted {
                submission_id,
                session_id: id.clone(),
                after,
            }),
        )
    };
    if let Op::UserTurn { text, .. } | Op::Steer { text } = &op
        && text.trim().is_empty()
    {
        return Err(ApiError::bad_request(
            "text is empty; send the text of the request",
        ));
    }
    if let Op::UserTurn { text, images } = op {
        let slot = state.reserve_turn()?;
        let session = state.session(&id, ClarifyPolicy::Ask).await?;
        if session.is_busy() {
            return Err(RuntimeError::TurnRunning(id).into());
        }
        let after = session.last_seq();
        let turn = state.start_turn(&session, text, images, slot)?;
        return Ok(accepted(turn.id.0, after));
    }
    let Some(session) = state.open_one(&id) else {
        state.record(&id).await?;
        return Err(ApiError::conflict(
            "session_not_running",
            format!("session {id} is not running in this server; start a turn first"),
        ));
    };
    let after = session.last_seq();
    // A well-formed operation the session refuses in its state (a steer with
    // no turn running) is a conflict, not a malformed request.
    let refusable = matches!(
        op,
        Op::Steer { .. }
            | Op::Compact {}
            | Op::Rewind { .. }
            | Op::AgentSend { .. }
            | Op::AgentFollowup { .. }
    );
    // So is naming a request or agent the session does not have: the
    // session (this route's resource) exists, so it is no 404.
    let submission = session.submit(op).map_err(|err| match err {
        RuntimeError::Invalid(message) if refusable => ApiError::conflict("op_refused", message),
        RuntimeError::UnknownRequest(message) => ApiError::conflict("request_not_found", message),
        err => err.into(),
    })?;
    Ok(accepted(submission.0, after))
}
