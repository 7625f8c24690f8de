//! Faults the server can be told to produce for the next request.

use serde_json::Value;

use crate::normalize::Api;
use crate::{wire_anthropic, wire_openai};

/// A failure injected into one request (see `ScriptedServer::inject`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this HTTP status and an API-shaped JSON error body.
    Status {
        /// HTTP status code.
        code: u16,
        /// Sent as a `Retry-After` header when set.
        retry_after_secs: Option<u64>,
        /// The error message; a JSON object here is sent verbatim instead; an
        /// empty string gets a default message.
        body: String,
    },
    /// Send about half of the reply, then end the body cleanly without the
    /// stream's end marker (`[DONE]` / `message_stop`).
    TruncatedStream,
    /// Send about half of the reply, then break the connection mid-body.
    AbortStream,
    /// Send the headers and the first event, then nothing, keeping the
    /// connection open until the client gives up.
    IdleStream,
}

impl Fault {
    /// A status fault with a default message and no `Retry-After`.
    pub fn status(code: u16) -> Fault {
        Fault::Status {
            code,
            retry_after_secs: None,
            body: String::new(),
        }
    }

    /// HTTP 429 with `Retry-After: secs`.
    pub fn rate_limited(retry_after_secs: u64) -> Fault {
        Fault::Status {
            code: 429,
            retry_after_secs: Some(retry_after_secs),
            body: "rate limited (injected by testkit)".to_string(),
        }
    }
}

/// The JSON error body for a status fault (or any error) in the API's shape.
pub(crate) fn error_json(api: Api, code: u16, body: &str) -> String {
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(body) {
        return v.to_string();
    }
    let message = if body.is_empty() {
        format!("HTTP {code} injected by testkit")
    } else {
        body.to_string()
    };
    match api {
        Api::OpenAi => wire_openai::error_body(code, &message),
        Api::Anthropic => wire_anthropic::error_body(code, &message),
    }
    .to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies() {
        let v: Value = serde_json::from_str(&error_json(Api::OpenAi, 500, "")).unwrap();
        assert_eq!(v["error"]["message"], "HTTP 500 injected by testkit");
        let v: Value = serde_json::from_str(&error_json(Api::Anthropic, 529, "busy")).unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "overloaded_error");
        assert_eq!(v["error"]["message"], "busy");
        assert_eq!(error_json(Api::OpenAi, 400, r#"{"x":1}"#), r#"{"x":1}"#);
    }
}
