//! Diagnostic dumps written to the log (never to the model or the terminal)
//! when something fails in a way the event stream cannot explain.

use std::time::Duration;

use herald_llm::ClientConfig;

/// What is known about a child that timed out before any model request
/// completed.
pub(crate) struct UnreachedChild<'a> {
    /// The child agent's id and session.
    pub agent_id: &'a str,
    pub session_id: &'a str,
    /// The configuration the child's client was built from.
    pub client: &'a ClientConfig,
    /// The URL requests went to.
    pub endpoint: &'a str,
    /// Whether the child shares its parent's client (no `[delegation]` override).
    pub shared_client: bool,
    /// `[delegation] child_timeout_seconds`.
    pub timeout_seconds: u64,
    /// Since the child started.
    pub elapsed: Duration,
    /// Since its last API or tool activity.
    pub idle: Duration,
    /// The tool it was running, if any.
    pub current_tool: Option<String>,
    /// The latest retry reason or error the child reported.
    pub last_error: Option<String>,
}

/// The client settings as one line, without the key itself.
pub(crate) fn client_settings(config: &ClientConfig) -> String {
    format!(
        "connect_timeout={:?} stream_idle_timeout={:?} request_timeout={:?} retry.max_attempts={} \
         retry.base_delay={:?} retry.max_delay={:?} max_tokens={} api_key={}",
        config.connect_timeout,
        config.idle_timeout,
        config.request_timeout,
        config.retry.max_attempts,
        config.retry.base_delay,
        config.retry.max_delay,
        config
            .max_tokens
            .map_or_else(|| "provider default".to_owned(), |n| n.to_string()),
        match config.api_key.as_deref() {
            Some(key) if !key.is_empty() => "set",
            _ => "missing",
        },
    )
}

/// Writes the dump for a child that never reached the model.
pub(crate) fn child_never_reached_model(child: &UnreachedChild<'_>) {
    tracing::warn!(
        agent_id = child.agent_id,
        session_id = child.session_id,
        model = %child.client.model,
        provider = child.client.provider.as_str(),
        base_url = %child.endpoint,
        client = %if child.shared_client { "parent's" } else { "[delegation] override" },
        settings = %client_settings(child.client),
        timeout_seconds = child.timeout_seconds,
        elapsed_ms = u64::try_from(child.elapsed.as_millis()).unwrap_or(u64::MAX),
        last_activity_ms_ago = u64::try_from(child.idle.as_millis()).unwrap_or(u64::MAX),
        current_tool = child.current_tool.as_deref().unwrap_or("none"),
        last_error = child.last_error.as_deref().unwrap_or("none seen"),
        "child timed out without reaching the model: no model request completed; \
         check the model name, base URL, key and network settings above"
    );
}

#[cfg(test)]
mod tests {
    use herald_llm::{ProviderKind, RetryPolicy};

    use super::*;

    #[test]
    fn settings_never_show_the_key() {
        let config = ClientConfig {
            provider: ProviderKind::OpenAi,
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: Some("sk-very-secret".into()),
            model: "m".into(),
            max_tokens: None,
            retry: RetryPolicy::default(),
            idle_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(600),
            connect_timeout: Duration::from_secs(10),
            max_in_flight: herald_llm::DEFAULT_MAX_IN_FLIGHT,
            images: true,
            reasoning: Default::default(),
        };
        let line = client_settings(&config);
        assert!(!line.contains("sk-very-secret"), "{line}");
        assert!(line.contains("api_key=set"), "{line}");
        assert!(line.contains("connect_timeout=10s"), "{line}");
        assert!(line.contains("retry.max_attempts=4"), "{line}");
    }
}
