//! `POST /v1/responses` (OpenAI Responses API): the newest user input is
//! one agent turn. A response id names its session (`resp_<session>_<n>`),
//! so `previous_response_id` continues that session, also after a restart
//! of the server.

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use herald_core::runtime::ClarifyPolicy;
use herald_protocol::{RunStatus, TokenTotals};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::{check_model, content_text, pick_session, random_id, unix_now, with_session};
use crate::error::{ApiError, ApiJson};
use crate::state::AppState;

/// The fields of a Responses request herald reads; the others are
/// accepted and ignored.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ResponsesRequest {
    /// The configured model or `herald`.
    pub model: Option<String>,
    /// A string, or input items whose last `user` message is the turn's input.
    #[schema(value_type = Object)]
    pub input: Value,
    /// Continues the session this response belongs to.
    pub previous_response_id: Option<String>,
    #[serde(default)]
    pub stream: bool,
    /// Returned as given; `session_id` continues a stored session.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

/// The names of one response.
pub(crate) struct ResponseIds {
    pub(crate) id: String,
    pub(crate) message_id: String,
    pub(crate) created: u64,
    pub(crate) model: String,
    pub(crate) previous: Option<String>,
    pub(crate) metadata: Value,
}

/// What the output of a response holds so far.
pub(crate) enum Outcome<'a> {
    /// Still running: no output yet.
    Running,
    Completed {
        text: &'a str,
        usage: TokenTotals,
    },
    Failed {
        message: &'a str,
    },
}

impl ResponseIds {
    /// The message output item with `text`.
    pub(crate) fn message_item(&self, text: &str, status: &str) -> Value {
        json!({
            "id": self.message_id,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        })
    }

    /// The `response` object.
    pub(crate) fn object(&self, outcome: &Outcome<'_>) -> Value {
        let (status, output, usage, error) = match outcome {
            Outcome::Running => ("in_progress", json!([]), Value::Null, Value::Null),
            Outcome::Completed { text, usage } => (
                "completed",
                json!([self.message_item(text, "completed")]),
                super::responses_usage(*usage),
                Value::Null,
            ),
            Outcome::Failed { message } => (
                "failed",
                json!([]),
                Value::Null,
                json!({"code": "server_error", "message": message}),
            ),
        };
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": error,
            "incomplete_details": null,
            "instructions": null,
            "max_output_tokens": null,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": false,
            "previous_response_id": self.previous,
            "reasoning": {"effort": null, "summary": null},
            "store": true,
            "temperature": null,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": null,
            "truncation": "disabled",
            "usage": usage,
            "user": null,
            "metadata": self.metadata,
        })
    }
}

/// A response id of `session_id`.
pub(crate) fn response_id(session_id: &str) -> String {
    format!("resp_{session_id}_{:012x}", fastrand::u64(..1 << 48))
}

/// The session a response id names.
pub(crate) fn session_of(response_id: &str) -> Option<&str> {
    let rest = response_id.strip_prefix("resp_")?;
    let (session, n) = rest.rsplit_once('_')?;
    (!session.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some(session)
}

/// The turn's input: the string, or the last user message of the items
/// (`role: user`, `type` absent or `message`). Every user message must have
/// text (the rule the OpenAPI document states).
pub(crate) fn input_text(input: &Value) -> Result<String, ApiError> {
    let blank = || ApiError::bad_request("the input is empty; send the text of the request");
    match input {
        Value::String(s) if s.trim().is_empty() => Err(blank()),
        Value::String(s) => Ok(s.clone()),
        Value::Array(items) => {
            let mut last = None;
            for item in items.iter().filter(|item| {
                item.get("role").is_some_and(|r| r == "user")
                    && item.get("type").is_none_or(|t| t == "message")
            }) {
                let text = content_text(item.get("content").unwrap_or(&Value::Null))?;
                if text.trim().is_empty() {
                    return Err(blank());
                }
                last = Some(text);
            }
            last.ok_or_else(|| ApiError::bad_request("input holds no user message; send one"))
        }
        _ => Err(ApiError::bad_request(
            "input must be a string or an array of input items",
        )),
    }
}

/// Runs one turn with the input; answers with a `response` object, or its
/// stream of events with `stream: true`.
#[utoipa::path(
    post,
    path = "/v1/responses",
    tag = "openai",
    request_body = ResponsesRequest,
    responses(
        (status = 200, description = "a `response` object, or with `stream: true` its events (`response.created`, `response.output_text.delta`, ..., `response.completed`)",
            content((Object = "application/json"), (crate::sse::SseEvent = "text/event-stream")),
            headers(("X-Herald-Session" = String, description = "the session of the turn"))),
        (status = 400, description = "no user input, a user message without text, or a malformed body", body = crate::error::ErrorBody),
        (status = 401, description = "missing or wrong token", body = crate::error::ErrorBody),
        (status = 404, description = "unknown model, session or previous response", body = crate::error::ErrorBody),
        (status = 409, description = "the session is running a turn or held by another process", body = crate::error::ErrorBody),
        (status = 429, description = "max_concurrent_turns reached", body = crate::error::ErrorBody),
        (status = 500, description = "the turn failed (provider error after retries)", body = crate::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<ResponsesRequest>,
) -> Result<Response, ApiError> {
    check_model(&state, request.model.as_deref())?;
    let input = input_text(&request.input)?;
    let previous_session = match &request.previous_response_id {
        Some(previous) => Some(session_of(previous).ok_or_else(|| {
            ApiError::not_found(
                "previous_response_not_found",
                format!("no response '{previous}' on this server"),
            )
        })?),
        None => None,
    };
    let slot = state.reserve_turn()?;
    let session = match previous_session {
        Some(id) => state
            .session(id, ClarifyPolicy::Unavailable)
            .await
            .map_err(|err| previous_not_found(err, request.previous_response_id.as_deref()))?,
        None => pick_session(&state, &headers, request.metadata.as_ref()).await?,
    };
    let id = session.id().to_owned();
    let ids = ResponseIds {
        id: response_id(&id),
        message_id: random_id("msg_"),
        created: unix_now(),
        model: request
            .model
            .clone()
            .unwrap_or_else(|| state.settings.model.clone()),
        previous: request.previous_response_id.clone(),
        metadata: request.metadata.clone().unwrap_or_else(|| json!({})),
    };
    if request.stream {
        return Ok(with_session(
            &id,
            super::responses_stream::start(&state, &session, input, slot, ids),
        ));
    }
    let turn = match state.start_turn(&session, input, Vec::new(), slot) {
        Ok(turn) => turn,
        Err(err) => return Ok(with_session(&id, err)),
    };
    let result = match turn.finished(&id).await {
        Ok(result) => result,
        Err(err) => return Ok(with_session(&id, err)),
    };
    if result.status == RunStatus::Failed {
        let message = result
            .error
            .unwrap_or_else(|| format!("the turn failed ({})", result.exit_reason.as_str()));
        return Ok(with_session(&id, super::chat::turn_failed(message)));
    }
    let body = ids.object(&Outcome::Completed {
        text: &result.final_response,
        usage: result.usage,
    });
    Ok(with_session(&id, axum::Json(body)))
}

/// A previous response whose session is not stored is a missing response.
fn previous_not_found(err: ApiError, previous: Option<&str>) -> ApiError {
    if err.code == "session_not_found" {
        return ApiError::not_found(
            "previous_response_not_found",
            format!(
                "no response '{}' on this server (its session is not stored)",
                previous.unwrap_or_default()
            ),
        );
    }
    err
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_response_id_names_its_session() {
        let id = response_id("ses_19a_3f2c1d");
        assert_eq!(session_of(&id), Some("ses_19a_3f2c1d"));
        assert_eq!(session_of("resp_abc"), None);
        assert_eq!(session_of("chatcmpl-1"), None);
        assert_eq!(session_of("resp_x_zz"), None);
    }

    #[test]
    fn the_input_is_a_string_or_the_last_user_item() {
        assert_eq!(input_text(&json!("hi")).unwrap(), "hi");
        let items = json!([
            {"role": "user", "content": "first"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "second"}]},
        ]);
        assert_eq!(input_text(&items).unwrap(), "second");
        assert_eq!(input_text(&json!([])).unwrap_err().status, 400);
        assert_eq!(input_text(&json!(" ")).unwrap_err().status, 400);
    }
}
