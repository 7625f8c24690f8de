/// What went wrong with a provider request, classified so the caller knows
/// whether to retry, compress the context, or stop and tell the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 401: the API key is missing or wrong.
    Auth,
    /// 403: the key may not use this model or endpoint.
    Forbidden,
    /// 404: unknown model or wrong base URL.
    NotFound,
    /// The prompt exceeds the model's context window.
    ContextTooLong,
    /// Any other 4xx the provider rejected.
    BadRequest,
    /// 429.
    RateLimited,
    /// 5xx or provider overload.
    Server,
    /// Could not connect or the connection broke.
    Network,
    /// No bytes arrived for the idle timeout.
    IdleTimeout,
    /// The stream ended before the reply was complete.
    Truncated,
    /// The request reached its wall-clock limit (`request_timeout_seconds`)
    /// before the reply held any text or tool call. Not retried: a request
    /// that ran this long would most likely run as long again.
    RequestTimeout,
    /// The provider sent something we could not parse.
    Protocol,
    /// The caller interrupted the request.
    Cancelled,
}

impl ErrorKind {
    /// Transient failures worth another try.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Self::RateLimited | Self::Server | Self::Network | Self::IdleTimeout | Self::Truncated
        )
    }
}

/// A failed provider request with a message that says what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    pub kind: ErrorKind,
    pub message: String,
    /// HTTP status, when there was one.
    pub status: Option<u16>,
    /// Seconds the provider asked us to wait (`Retry-After`).
    pub retry_after_ms: Option<u64>,
}

impl LlmError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            retry_after_ms: None,
        }
    }

    /// The interrupt error.
    pub fn cancelled() -> Self {
        Self::new(ErrorKind::Cancelled, "request interrupted")
    }

    /// Builds the error for a non-success HTTP status. `key_var` names the
    /// environment variable holding the key so the message can point at it.
    pub(crate) fn from_status(
        status: u16,
        body: &str,
        retry_after_ms: Option<u64>,
        model: &str,
        base_url: &str,
        key_var: &str,
    ) -> Self {
        let detail = provider_message(body);
        let lower = detail.to_ascii_lowercase();
        let (kind, message) = match status {
            401 => (
                ErrorKind::Auth,
                format!(
                    "authentication failed (401): {detail}. Check the API key in {key_var} (or api_key in config.toml)."
                ),
            ),
            403 => (
                ErrorKind::Forbidden,
                format!(
                    "access denied (403): {detail}. The key in {key_var} may not use model '{model}'."
                ),
            ),
            404 => (
                ErrorKind::NotFound,
                format!(
                    "not found (404): {detail}. Check the model name '{model}' and the base URL '{base_url}'."
                ),
            ),
            400 | 413 if is_context_error(&lower) => (
                ErrorKind::ContextTooLong,
                format!("context too long ({status}): {detail}"),
            ),
            429 => (
                ErrorKind::RateLimited,
                format!("rate limited (429): {detail}"),
            ),
            408 | 409 | 425 => (
                ErrorKind::Server,
                format!("provider busy ({status}): {detail}"),
            ),
            s if s >= 500 => (ErrorKind::Server, format!("provider error ({s}): {detail}")),
            s => (
                ErrorKind::BadRequest,
                format!("request rejected ({s}): {detail}"),
            ),
        };
        Self {
            kind,
            message,
            status: Some(status),
            retry_after_ms,
        }
    }
}

fn is_context_error(lower: &str) -> bool {
    [
        "context length",
        "context_length",
        "maximum context",
        "context window",
        "too long",
        "too many tokens",
        "prompt is too long",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// Pulls the human message out of either provider's error body, falling back
/// to the (shortened) raw body.
fn provider_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
        let message = value
            .pointer("/error/message")
            .or_else(|| value.get("message"))
            .or_else(|| value.get("error"))
            .and_then(serde_json::Value::as_str);
        if let Some(message) = message {
            return message.to_owned();
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        "no details in the response body".to_owned()
    } else {
        trimmed.chars().take(500).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(status: u16, body: &str) -> LlmError {
        LlmError::from_status(status, body, None, "m1", "http://x", "OPENAI_API_KEY")
    }

    #[test]
    fn classifies_statuses() {
        assert_eq!(err(401, "").kind, ErrorKind::Auth);
        assert!(err(401, "").message.contains("OPENAI_API_KEY"));
        assert_eq!(err(403, "").kind, ErrorKind::Forbidden);
        let not_found = err(404, r#"{"error":{"message":"model m1 does not exist"}}"#);
        assert_eq!(not_found.kind, ErrorKind::NotFound);
        assert!(not_found.message.contains("model m1 does not exist"));
        assert!(not_found.message.contains("'m1'"));
        assert_eq!(
            err(
                400,
                r#"{"error":{"message":"This model's maximum context length is 8192"}}"#
            )
            .kind,
            ErrorKind::ContextTooLong
        );
        assert_eq!(
            err(400, r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens"}}"#).kind,
            ErrorKind::ContextTooLong
        );
        assert_eq!(err(400, "bad").kind, ErrorKind::BadRequest);
        assert_eq!(err(429, "").kind, ErrorKind::RateLimited);
        assert_eq!(err(503, "").kind, ErrorKind::Server);
        assert_eq!(err(529, "").kind, ErrorKind::Server);
    }

    #[test]
    fn only_transient_kinds_retry() {
        for kind in [
            ErrorKind::Auth,
            ErrorKind::Forbidden,
            ErrorKind::NotFound,
            ErrorKind::BadRequest,
            ErrorKind::ContextTooLong,
            ErrorKind::Cancelled,
            ErrorKind::Protocol,
            ErrorKind::RequestTimeout,
        ] {
            assert!(!kind.is_retryable(), "{kind:?}");
        }
        for kind in [
            ErrorKind::RateLimited,
            ErrorKind::Server,
            ErrorKind::Network,
            ErrorKind::IdleTimeout,
            ErrorKind::Truncated,
        ] {
            assert!(kind.is_retryable(), "{kind:?}");
        }
    }
}
