use std::time::Duration;

use herald_protocol::ToolSpec;
use tokio_util::sync::CancellationToken;

use crate::retry::retry_after_ms;
use crate::sse::SseReader;
use crate::{
    AssistantReply, ChatRequest, EncodedTools, ErrorKind, LlmError, RetryPolicy, StreamUpdate,
    anthropic, openai,
};

/// Which wire API a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    OpenAi,
    Anthropic,
}

impl ProviderKind {
    /// The name used in config and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// The environment variable that holds this provider's key.
    pub fn key_var(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The environment variable that overrides this provider's base URL.
    pub fn base_url_var(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_BASE_URL",
            Self::Anthropic => "ANTHROPIC_BASE_URL",
        }
    }

    /// The public endpoint used when no base URL is configured.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAi => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com",
        }
    }
}

impl std::str::FromStr for ProviderKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" | "openai-compatible" | "openrouter" | "vllm" | "ollama" => Ok(Self::OpenAi),
            "anthropic" | "claude" => Ok(Self::Anthropic),
            other => Err(format!(
                "unknown provider '{other}'; use 'openai' (any OpenAI-compatible server) or 'anthropic'"
            )),
        }
    }
}

/// Everything needed to talk to one model endpoint.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub provider: ProviderKind,
    /// Base URL without the endpoint path; empty = the provider default.
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    /// Output cap; Anthropic requires one (default 8192), OpenAI omits it when unset.
    pub max_tokens: Option<u32>,
    pub retry: RetryPolicy,
    /// A stream with no bytes for this long is an error that retries.
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
}

/// A streaming client for one provider and model.
#[derive(Debug, Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    config: ClientConfig,
    endpoint: String,
}

impl LlmClient {
    /// Builds the client (no network traffic yet).
    pub fn new(config: ClientConfig) -> Result<Self, LlmError> {
        // Several clients may be built; only the first install wins, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .build()
            .map_err(|err| {
                LlmError::new(
                    ErrorKind::Network,
                    format!("could not build the HTTP client: {err}"),
                )
            })?;
        let base = if config.base_url.trim().is_empty() {
            config.provider.default_base_url()
        } else {
            config.base_url.trim()
        };
        let base = base.trim_end_matches('/');
        let endpoint = match config.provider {
            ProviderKind::OpenAi => format!("{base}/chat/completions"),
            ProviderKind::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            ProviderKind::Anthropic => format!("{base}/v1/messages"),
        };
        Ok(Self {
            http,
            config,
            endpoint,
        })
    }

    /// The model this client asks for.
    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// The wire API in use.
    pub fn provider(&self) -> ProviderKind {
        self.config.provider
    }

    /// The full URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Encodes a session's tool list once for this provider.
    pub fn encode_tools(&self, specs: &[ToolSpec]) -> EncodedTools {
        match self.config.provider {
            ProviderKind::OpenAi => openai::encode_tools(specs),
            ProviderKind::Anthropic => anthropic::encode_tools(specs),
        }
    }

    /// The exact request body that [`complete`](Self::complete) would send.
    pub fn encode_body(&self, req: &ChatRequest<'_>) -> Result<Vec<u8>, LlmError> {
        let encoded = match self.config.provider {
            ProviderKind::OpenAi => {
                openai::encode_body(&self.config.model, self.config.max_tokens, req)
            }
            ProviderKind::Anthropic => anthropic::encode_body(
                &self.config.model,
                self.config.max_tokens.unwrap_or(8192),
                req,
            ),
        };
        encoded.map_err(|err| {
            LlmError::new(
                ErrorKind::Protocol,
                format!("could not encode the request: {err}"),
            )
        })
    }

    /// Sends the request and streams the reply, retrying transient failures
    /// (429, 5xx, broken or idle connections, truncated streams) with backoff.
    pub async fn complete(
        &self,
        req: ChatRequest<'_>,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, LlmError> {
        let body = bytes::Bytes::from(self.encode_body(&req)?);
        let mut attempt = 1;
        loop {
            match self.attempt(body.clone(), on_update, cancel).await {
                Ok(reply) => return Ok(reply),
                Err(err) if err.kind.is_retryable() && attempt < self.config.retry.max_attempts => {
                    let delay = self.config.retry.delay(attempt, err.retry_after_ms);
                    on_update(StreamUpdate::Retry {
                        attempt,
                        delay_ms: delay.as_millis() as u64,
                        reason: &err.message,
                    });
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => return Err(LlmError::cancelled()),
                        () = tokio::time::sleep(delay) => {}
                    }
                    attempt += 1;
                }
                Err(mut err) => {
                    if err.kind.is_retryable() && attempt > 1 {
                        err.message = format!("{} (gave up after {attempt} tries)", err.message);
                    }
                    return Err(err);
                }
            }
        }
    }

    async fn attempt(
        &self,
        body: bytes::Bytes,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, LlmError> {
        let mut request = self
            .http
            .post(&self.endpoint)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body);
        let key = self.config.api_key.as_deref().filter(|k| !k.is_empty());
        request = match self.config.provider {
            ProviderKind::OpenAi => match key {
                Some(key) => request.bearer_auth(key),
                None => request,
            },
            ProviderKind::Anthropic => {
                let request = request.header("anthropic-version", anthropic::API_VERSION);
                match key {
                    Some(key) => request.header("x-api-key", key),
                    None => request,
                }
            }
        };
        let send = tokio::time::timeout(self.config.idle_timeout, request.send());
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(LlmError::cancelled()),
            response = send => response,
        };
        let response = match response {
            Err(_) => {
                return Err(LlmError::new(
                    ErrorKind::IdleTimeout,
                    format!(
                        "no response from {} within {} s (stream_idle_timeout)",
                        self.endpoint,
                        self.config.idle_timeout.as_secs_f64()
                    ),
                ));
            }
            Ok(Err(err)) => {
                return Err(LlmError::new(
                    ErrorKind::Network,
                    format!("could not reach {}: {}", self.endpoint, error_chain(&err)),
                ));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after_ms(response.headers());
            let text = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(LlmError::cancelled()),
                text = tokio::time::timeout(self.config.idle_timeout, response.text()) => {
                    text.ok().and_then(Result::ok).unwrap_or_default()
                }
            };
            return Err(LlmError::from_status(
                status.as_u16(),
                &text,
                retry_after,
                &self.config.model,
                &self.endpoint,
                self.config.provider.key_var(),
            ));
        }
        let mut reader = SseReader::new(response, self.config.idle_timeout);
        match self.config.provider {
            ProviderKind::OpenAi => {
                let mut assembler = openai::Assembler::default();
                while let Some(event) = reader.next(cancel).await? {
                    if assembler.push(&event.data, on_update)? {
                        break;
                    }
                }
                assembler.finish()
            }
            ProviderKind::Anthropic => {
                let mut assembler = anthropic::Assembler::default();
                while let Some(event) = reader.next(cancel).await? {
                    if assembler.push(&event.data, on_update)? {
                        break;
                    }
                }
                assembler.finish()
            }
        }
    }
}

/// An error with every cause in its source chain: `reqwest` errors hide the
/// real failure (refused, DNS, TLS) there. Front ends reuse it for messages.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
