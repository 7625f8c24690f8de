//! The OpenAI-compatible endpoints: `GET /v1/models`, `POST
//! /v1/chat/completions`, `POST /v1/responses`. Each request is one agent
//! turn: herald runs its whole tool loop server-side and answers with the
//! final message. Only the newest user input is taken from the request
//! (the session keeps the conversation); client-side tools, system
//! messages and sampling parameters are ignored.

pub(crate) mod chat;
mod chat_stream;
mod follow;
pub(crate) mod models;
pub(crate) mod responses;
mod responses_stream;

use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use herald_core::runtime::{ClarifyPolicy, OpenMode, Session};
use herald_protocol::TokenTotals;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::state::AppState;

/// The header that names (request) and reports (response) the session.
pub const SESSION_HEADER: &str = "x-herald-session";

/// A model name every request may use instead of the configured one.
pub const MODEL_ALIAS: &str = "herald";

/// Refuses (404) a model other than the configured one or `herald`.
pub(crate) fn check_model(state: &AppState, model: Option<&str>) -> Result<(), ApiError> {
    match model {
        None => Ok(()),
        Some(m) if m == state.settings.model || m == MODEL_ALIAS => Ok(()),
        Some(m) => Err(ApiError::not_found(
            "model_not_found",
            format!(
                "the model '{m}' does not exist on this server; use '{}' (the configured model) or '{MODEL_ALIAS}' (GET /v1/models lists them)",
                state.settings.model
            ),
        )),
    }
}

/// The session a request continues (`X-Herald-Session` header, else the
/// `metadata.session_id` of the body), or a new one. Opened without a
/// person to ask: `clarify` tells the model to decide itself.
pub(crate) async fn pick_session(
    state: &AppState,
    headers: &HeaderMap,
    metadata: Option<&Value>,
) -> Result<Session, ApiError> {
    let from_header = match headers.get(SESSION_HEADER) {
        Some(value) => Some(
            value
                .to_str()
                .map_err(|_| ApiError::bad_request("the X-Herald-Session header is not text"))?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    let from_metadata = metadata
        .and_then(|m| m.get("session_id"))
        .and_then(Value::as_str)
        .map(|s| s.trim().to_owned());
    match from_header.or(from_metadata).filter(|s| !s.is_empty()) {
        Some(id) => state.session(&id, ClarifyPolicy::Unavailable).await,
        None => state.open(OpenMode::New, ClarifyPolicy::Unavailable).await,
    }
}

/// The text of a message `content`: a string, or the `text` of its text
/// parts (`text`, `input_text`) joined by newlines.
pub(crate) fn content_text(content: &Value) -> Result<String, ApiError> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => {
            let mut texts = Vec::new();
            for part in parts {
                let Value::Object(part) = part else {
                    return Err(ApiError::bad_request(
                        "a content part must be an object such as {\"type\": \"text\", \"text\": ...}",
                    ));
                };
                match part.get("type") {
                    None => {}
                    Some(Value::String(kind))
                        if matches!(kind.as_str(), "text" | "input_text" | "output_text") => {}
                    Some(other) => {
                        return Err(ApiError::bad_request(format!(
                            "content parts of type {other} are not supported; send text"
                        )));
                    }
                }
                if let Some(text) = part.get("text").and_then(Value::as_str) {
                    texts.push(text);
                }
            }
            Ok(texts.join("\n"))
        }
        Value::Null => Ok(String::new()),
        _ => Err(ApiError::bad_request(
            "a message's content must be a string or an array of text parts",
        )),
    }
}

/// `usage` in Chat Completions form.
pub(crate) fn chat_usage(usage: TokenTotals) -> Value {
    json!({
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input.saturating_add(usage.output),
        "prompt_tokens_details": {"cached_tokens": usage.cached},
        "completion_tokens_details": {"reasoning_tokens": 0},
    })
}

/// `usage` in Responses form.
pub(crate) fn responses_usage(usage: TokenTotals) -> Value {
    json!({
        "input_tokens": usage.input,
        "output_tokens": usage.output,
        "total_tokens": usage.input.saturating_add(usage.output),
        "input_tokens_details": {"cached_tokens": usage.cached},
        "output_tokens_details": {"reasoning_tokens": 0},
    })
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A random id with `prefix` (`chatcmpl-`, `msg_`).
pub(crate) fn random_id(prefix: &str) -> String {
    format!(
        "{prefix}{:016x}{:08x}",
        fastrand::u64(..),
        fastrand::u32(..)
    )
}

/// Adds `X-Herald-Session: id` to a response.
pub(crate) fn with_session(session_id: &str, response: impl IntoResponse) -> Response {
    let mut response = response.into_response();
    if let Ok(value) = HeaderValue::from_str(session_id) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn content_is_a_string_or_text_parts() {
        assert_eq!(content_text(&json!("hi")).unwrap(), "hi");
        assert_eq!(
            content_text(
                &json!([{"type": "text", "text": "a"}, {"type": "input_text", "text": "b"}])
            )
            .unwrap(),
            "a\nb"
        );
        assert_eq!(
            content_text(&json!([{"type": "image_url", "image_url": {}}]))
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(content_text(&json!(3)).unwrap_err().status, 400);
        // Parts are objects, and a given type is a text type.
        assert_eq!(content_text(&json!(["hi"])).unwrap_err().status, 400);
        let typed = json!([{"type": 5, "text": "a"}]);
        assert_eq!(content_text(&typed).unwrap_err().status, 400);
        assert_eq!(content_text(&json!([{"text": "a"}])).unwrap(), "a");
    }

    #[test]
    fn usage_adds_up() {
        let u = chat_usage(TokenTotals {
            input: 10,
            output: 5,
            cached: 4,
        });
        assert_eq!(u["total_tokens"], 15);
        assert_eq!(u["prompt_tokens_details"]["cached_tokens"], 4);
    }
}
