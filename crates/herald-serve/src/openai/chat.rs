//! `POST /v1/chat/completions`: the newest user message is one agent turn;
//! the answer is the turn's final message, as a `chat.completion` or (with
//! `stream: true`) as `chat.completion.chunk` server-sent events.

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use herald_core::runtime::TurnResult;
use herald_protocol::RunStatus;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::{check_model, content_text, pick_session, random_id, unix_now, with_session};
use crate::error::{ApiError, ApiJson};
use crate::state::AppState;

/// The fields of a Chat Completions request herald reads; the others
/// (sampling parameters, client-side `tools`) are accepted and ignored.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatRequest {
    /// The configured model or `herald`.
    pub model: Option<String>,
    /// The conversation; its last `user` message is the turn's input.
    pub messages: Vec<ChatMessage>,
    #[serde(default)]
    pub stream: bool,
    pub stream_options: Option<StreamOptions>,
    /// `session_id` continues a stored session (like `X-Herald-Session`).
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

/// One message of [`ChatRequest::messages`].
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatMessage {
    pub role: String,
    /// A string or an array of text parts.
    #[schema(value_type = Object)]
    #[serde(default)]
    pub content: Value,
}

/// `stream_options` of a streaming request.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct StreamOptions {
    /// Send a last chunk with `usage` (and empty `choices`).
    #[serde(default)]
    pub include_usage: bool,
}

/// What one completion is called in its answer.
pub(crate) struct Completion {
    pub(crate) id: String,
    pub(crate) created: u64,
    pub(crate) model: String,
}

/// Runs one turn with the last user message; answers with its final
/// message.
#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    tag = "openai",
    request_body = ChatRequest,
    params(("X-Herald-Session" = Option<String>, Header, nullable = false, description = "continue this stored session")),
    responses(
        (status = 200, description = "a `chat.completion`, or `chat.completion.chunk` events with `stream: true`",
            content((Object = "application/json"), (crate::sse::SseEvent = "text/event-stream")),
            headers(("X-Herald-Session" = String, description = "the session of the turn"))),
        (status = 400, description = "no user message, a user message without text, or a malformed body", body = crate::error::ErrorBody),
        (status = 401, description = "missing or wrong token", body = crate::error::ErrorBody),
        (status = 404, description = "unknown model or session", body = crate::error::ErrorBody),
        (status = 409, description = "the session is running a turn or held by another process", body = crate::error::ErrorBody),
        (status = 429, description = "max_concurrent_turns reached", body = crate::error::ErrorBody),
        (status = 500, description = "the turn failed (provider error after retries)", body = crate::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn completions(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<ChatRequest>,
) -> Result<Response, ApiError> {
    check_model(&state, request.model.as_deref())?;
    let input = last_user_text(&request.messages)?;
    let slot = state.reserve_turn()?;
    let session = pick_session(&state, &headers, request.metadata.as_ref()).await?;
    let completion = Completion {
        id: random_id("chatcmpl-"),
        created: unix_now(),
        model: request
            .model
            .clone()
            .unwrap_or_else(|| state.settings.model.clone()),
    };
    let id = session.id().to_owned();
    if request.stream {
        let include_usage = request
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage);
        return Ok(with_session(
            &id,
            super::chat_stream::start(&state, &session, input, slot, completion, include_usage),
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
            .clone()
            .unwrap_or_else(|| format!("the turn failed ({})", result.exit_reason.as_str()));
        return Ok(with_session(&id, turn_failed(message)));
    }
    Ok(with_session(
        &id,
        axum::Json(completion_body(&completion, &result)),
    ))
}

/// A failed turn (a provider error after retries) as a 500.
pub(crate) fn turn_failed(message: String) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "turn_failed",
        message,
    )
}

/// The text of the last `user` message. Every user message must have text
/// (the rule the OpenAPI document states).
pub(crate) fn last_user_text(messages: &[ChatMessage]) -> Result<String, ApiError> {
    let mut last = None;
    for message in messages.iter().filter(|m| m.role == "user") {
        let text = content_text(&message.content)?;
        if text.trim().is_empty() {
            return Err(ApiError::bad_request(
                "a user message is empty; send the text of the request",
            ));
        }
        last = Some(text);
    }
    last.ok_or_else(|| ApiError::bad_request("messages holds no user message; send one"))
}

/// `finish_reason` for how a turn ended.
pub(crate) fn finish_reason(exit_reason: &str) -> &'static str {
    match exit_reason {
        "max_iterations" | "budget" => "length",
        _ => "stop",
    }
}

fn completion_body(completion: &Completion, result: &TurnResult) -> Value {
    json!({
        "id": completion.id,
        "object": "chat.completion",
        "created": completion.created,
        "model": completion.model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": result.final_response, "refusal": null},
            "logprobs": null,
            "finish_reason": finish_reason(result.exit_reason.as_str()),
        }],
        "usage": super::chat_usage(result.usage),
        "system_fingerprint": null,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn message(role: &str, content: Value) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content,
        }
    }

    #[test]
    fn the_input_is_the_last_user_message() {
        let messages = vec![
            message("system", json!("be brief")),
            message("user", json!("first")),
            message("assistant", json!("ok")),
            message("user", json!("second")),
        ];
        assert_eq!(last_user_text(&messages).unwrap(), "second");
        assert_eq!(
            last_user_text(&[message("system", json!("x"))])
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            last_user_text(&[message("user", json!("  "))])
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            last_user_text(&[message("user", json!("")), message("user", json!("hi"))])
                .unwrap_err()
                .status,
            400
        );
    }
}
