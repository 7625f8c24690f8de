//! `POST /api/sessions/{id}/turns`: starts a turn (202 with the event
//! number it starts after), or with `?wait=true` runs it and answers with
//! its result.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_core::runtime::{ClarifyPolicy, TurnResult};
use herald_protocol::{RunStatus, TokenTotals};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiJson, ApiPath, ApiQuery, ErrorBody};
use crate::state::AppState;

/// The body of a turn.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnRequest {
    /// The user's input (not blank).
    #[schema(pattern = "\\S")]
    pub input: String,
}

/// Query of `POST /api/sessions/{id}/turns`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TurnQuery {
    /// Wait for the turn's end and answer with its result.
    #[serde(default)]
    pub wait: bool,
}

/// A started turn.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnAccepted {
    pub session_id: String,
    /// The number of the last event before the turn: `GET
    /// /api/sessions/{id}/events?after=N` follows the turn from its start.
    pub after: u64,
    /// The events URL that does so.
    pub events: String,
}

/// How a turn ended.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnResultView {
    pub session_id: String,
    /// `completed | failed | interrupted`.
    #[schema(value_type = String)]
    pub status: RunStatus,
    /// `completed | max_iterations | interrupted | error | budget`.
    pub exit_reason: String,
    pub final_response: String,
    pub iterations: u32,
    /// Tokens of this turn's requests (`input` includes `cached`).
    #[schema(value_type = Object)]
    pub usage: TokenTotals,
    /// USD rounded to 1e-6; `null` when a model used has no price.
    #[serde(with = "herald_protocol::cost_serde")]
    #[schema(value_type = Option<f64>)]
    pub cost_usd: Option<f64>,
    /// Every agent of the turn (subagents included): tokens, cost, requests.
    #[schema(value_type = Object)]
    pub tree_usage: herald_protocol::UsageTotals,
    pub duration_ms: u64,
    pub error: Option<String>,
    /// The number of the last event before the turn.
    pub after: u64,
}

impl TurnResultView {
    fn new(session_id: String, result: TurnResult, after: u64) -> Self {
        Self {
            session_id,
            status: result.status,
            exit_reason: result.exit_reason.as_str().to_owned(),
            final_response: result.final_response,
            iterations: result.iterations,
            usage: result.usage,
            cost_usd: result.cost_usd,
            tree_usage: result.tree_usage,
            duration_ms: result.duration_ms,
            error: result.error,
            after,
        }
    }
}

/// Starts a turn in the session.
#[utoipa::path(
    post,
    path = "/api/sessions/{id}/turns",
    tag = "turns",
    params(("id" = String, Path, description = "session id"), TurnQuery),
    request_body = TurnRequest,
    responses(
        (status = 202, description = "the turn runs; follow it with the events URL", body = TurnAccepted),
        (status = 200, description = "with wait=true: the turn's result", body = TurnResultView),
        (status = 400, description = "empty input or a malformed body", body = ErrorBody),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 409, description = "a turn is running, or another process holds the session", body = ErrorBody),
        (status = 429, description = "max_concurrent_turns reached", body = ErrorBody),
        (status = 500, description = "the session store failed, or the turn's task", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn start(
    State(state): State<Arc<AppState>>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<TurnQuery>,
    ApiJson(request): ApiJson<TurnRequest>,
) -> Result<Response, ApiError> {
    if request.input.trim().is_empty() {
        return Err(ApiError::bad_request(
            "input is empty; send the text of the request",
        ));
    }
    let slot = state.reserve_turn()?;
    let session = state.session(&id, ClarifyPolicy::Ask).await?;
    if session.is_busy() {
        return Err(herald_core::runtime::RuntimeError::TurnRunning(id).into());
    }
    let after = session.last_seq();
    let turn = state.start_turn(&session, request.input, Vec::new(), slot)?;
    if query.wait {
        let result = turn.finished(&id).await?;
        return Ok(Json(TurnResultView::new(id, result, after)).into_response());
    }
    let events = format!("/api/sessions/{id}/events?after={after}");
    Ok((
        StatusCode::ACCEPTED,
        Json(TurnAccepted {
            session_id: id,
            after,
            events,
        }),
    )
        .into_response())
}
