//! Faults the server can be told to produce for the next request.

use bytes::Bytes;
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
    /// Send about half of the reply, then one event whose `data:` is not
    /// valid JSON (a chunk cut short), then the rest of the reply.
    MalformedChunk,
    /// Ignore `stream: true`: answer with the whole reply as one JSON
    /// document (`Content-Type: application/json`), as some servers do.
    NonStreamingAnswer,
    /// Send the whole reply, finish reason and usage included, but not the
    /// end marker (`[DONE]` / `message_stop`), and keep the connection open.
    NoEndMarker,
    /// Answer HTTP 200 with this `Content-Type` and body instead of the reply
    /// (a web page, a proxy or a login portal at the base URL).
    Body {
        /// The `Content-Type` header value.
        content_type: String,
        /// The body, sent verbatim.
        body: String,
    },
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

    /// HTTP 200 with an HTML page (`text/html; charset=utf-8`), as a web
    /// server or proxy at a wrong base URL answers.
    pub fn html_page() -> Fault {
        Fault::Body {
            content_type: "text/html; charset=utf-8".to_string(),
            body: "<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n\
                   <body><h1>It works!</h1><p>testkit: not an API</p></body></html>\n"
                .to_string(),
        }
    }
}

/// One framed SSE event whose data is a chunk cut short (not valid JSON), in
/// the API's shape.
pub(crate) fn malformed_event(api: Api) -> Bytes {
    Bytes::from_static(match api {
        Api::OpenAi => {
            b"data: {\"id\":\"chatcmpl-broken\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lost\n\n"
        }
        Api::Anthropic => {
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_del\n\n"
        }
    })
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

    #[test]
    fn malformed_events_are_framed_but_not_json() {
        for api in [Api::OpenAi, Api::Anthropic] {
            let event = malformed_event(api);
            let text = std::str::from_utf8(&event).unwrap();
            assert!(text.ends_with("\n\n"), "{text:?}");
            let data = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
            assert!(serde_json::from_str::<Value>(data).is_err(), "{data}");
        }
    }
}
