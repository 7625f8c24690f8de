use std::time::Duration;

use herald_protocol::ToolSpec;
use tokio_util::sync::CancellationToken;

use crate::retry::retry_after_ms;

/// 429s a request may answer by waiting for a smaller share of the
/// endpoint before they count as tries.
const MAX_SLOWED_RETRIES: u32 = 20;
use crate::sse::{BodyFormat, BodyReader, Sniff, SseReader, sniff};
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
    /// The longest one attempt at a request may take, from sending it to
    /// the end of its reply, however steadily bytes arrive: a model that
    /// keeps generating (a small local model can for many minutes) is cut
    /// here. A reply that had text or tool calls by then is kept, cut short
    /// ([`AssistantReply::timed_out`]); one that had none is a
    /// [`ErrorKind::RequestTimeout`] error. Neither is retried.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// The most requests in flight to this endpoint from the whole process
    /// (the governor's ceiling; 429s lower it further). It also bounds the
    /// connections opened to the endpoint: each request in flight holds one.
    /// The first client built for an endpoint sets it.
    pub max_in_flight: usize,
    /// The model takes images: tool results send theirs (Anthropic as
    /// `image` blocks, OpenAI as a `user` message after the results).
    /// `false` for text-only models: only the results' text is sent.
    pub images: bool,
    /// `reasoning_effort` / extended thinking; the default asks for none.
    pub reasoning: crate::ReasoningConfig,
}

/// Whether `base` is an `http://` URL (no TLS to set up).
fn is_plain_http(base: &str) -> bool {
    base.get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
}

/// A streaming client for one provider and model.
#[derive(Debug, Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    config: ClientConfig,
    /// The base URL in use (configured or default), without a trailing slash.
    base: String,
    endpoint: String,
    /// The keys requests use, rotated on 429 (shared by clones).
    keys: std::sync::Arc<crate::chain::KeyPool>,
    /// `[[fallback]]` endpoints, when configured (shared by clones).
    chain: Option<std::sync::Arc<crate::chain::Chain>>,
    /// The endpoint's rate-limit governor (one per endpoint and process).
    governor: std::sync::Arc<crate::governor::Governor>,
    /// Tool lists encoded lately (shared by clones), so agents offering
    /// the same tools share one copy of their bytes.
    tool_lists: std::sync::Arc<std::sync::Mutex<Vec<EncodedTools>>>,
}

/// Distinct tool lists a client remembers (a session's agents offer a few:
/// the top-level agent's, its children's, an agent definition's).
const TOOL_LISTS_KEPT: usize = 8;

impl LlmClient {
    /// Builds the client (no network traffic yet).
    pub fn new(config: ClientConfig) -> Result<Self, LlmError> {
        // Several clients may be built; only the first install wins, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let base = if config.base_url.trim().is_empty() {
            config.provider.default_base_url()
        } else {
            config.base_url.trim()
        };
        let base = base.trim_end_matches('/');
        let mut builder = reqwest::Client::builder()
            .user_agent(herald_protocol::USER_AGENT)
            .connect_timeout(config.connect_timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true);
        if is_plain_http(base) {
            // A plain-http endpoint (a local server) needs no certificates:
            // loading the system's roots costs ~2 ms at start and fails
            // outright where the store is empty.
            builder = builder.tls_certs_only(std::iter::empty());
        }
        let http = builder.build().map_err(|err| {
            LlmError::new(
                ErrorKind::Network,
                format!("could not build the HTTP client: {err}"),
            )
        })?;
        let endpoint = match config.provider {
            ProviderKind::OpenAi => format!("{base}/chat/completions"),
            ProviderKind::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            ProviderKind::Anthropic => format!("{base}/v1/messages"),
        };
        let keys = config
            .api_key
            .iter()
            .filter(|k| !k.is_empty())
            .map(|value| crate::PoolKey {
                source: config.provider.key_var().to_owned(),
                value: value.clone(),
            })
            .collect();
        let governor = crate::governor::for_endpoint(&endpoint, config.max_in_flight);
        Ok(Self {
            http,
            base: base.to_owned(),
            config,
            endpoint,
            keys: std::sync::Arc::new(crate::chain::KeyPool::new(keys)),
            chain: None,
            governor,
            tool_lists: std::sync::Arc::default(),
        })
    }

    /// Uses a credential pool instead of the single configured key: on 429
    /// the next key is tried at once, and backoff starts only when every
    /// key was rate limited. An empty list keeps the configured key.
    #[must_use]
    pub fn with_keys(mut self, keys: Vec<crate::PoolKey>) -> Self {
        if !keys.is_empty() {
            self.keys = std::sync::Arc::new(crate::chain::KeyPool::new(keys));
        }
        self
    }

    /// Adds `[[fallback]]` endpoints, tried in order when this one fails
    /// after its retries (429/5xx/connection) or answers 401/403/404; the
    /// client stays on a fallback for `cooldown`, then tries this one again.
    #[must_use]
    pub fn with_fallbacks(mut self, fallbacks: Vec<LlmClient>, cooldown: Duration) -> Self {
        self.chain = (!fallbacks.is_empty())
            .then(|| std::sync::Arc::new(crate::chain::Chain::new(fallbacks, cooldown)));
        self
    }

    /// The output cap sent with each request.
    pub fn output_cap(&self) -> u32 {
        let config = &self.config;
        match config.provider {
            ProviderKind::OpenAi => openai::output_cap(config.max_tokens, &config.reasoning),
            ProviderKind::Anthropic => config.reasoning.anthropic_max_tokens(config.max_tokens),
        }
    }

    /// The wall-clock limit of one attempt at a request (see
    /// [`ClientConfig::request_timeout`]), for messages about cut replies.
    pub fn request_timeout(&self) -> Duration {
        self.config.request_timeout
    }

    /// The model this client asks for.
    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// The wire API in use.
    pub fn provider(&self) -> ProviderKind {
        self.config.provider
    }

    /// Whether tool results send their images to this model (see
    /// [`ClientConfig::images`]).
    pub fn accepts_images(&self) -> bool {
        self.config.images
    }

    /// The full URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Encodes an agent's tool list for this provider; an agent offering
    /// the same tools as one before gets that one's bytes, shared.
    pub fn encode_tools(&self, specs: &[ToolSpec]) -> EncodedTools {
        let encoded = match self.config.provider {
            ProviderKind::OpenAi => openai::encode_tools(specs),
            ProviderKind::Anthropic => anthropic::encode_tools(specs),
        };
        let mut kept = self
            .tool_lists
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(same) = kept.iter().find(|k| k.json == encoded.json) {
            return same.clone();
        }
        if kept.len() == TOOL_LISTS_KEPT {
            kept.remove(0);
        }
        kept.push(encoded.clone());
        encoded
    }

    /// The exact request body that [`complete`](Self::complete) would send.
    pub fn encode_body(&self, req: &ChatRequest<'_>) -> Result<Vec<u8>, LlmError> {
        self.with_wire(|wire| crate::body::encode_full(wire, req))
            .map_err(encode_error)
    }

    /// The body to send: from the conversation's [`BodyCache`](crate::BodyCache)
    /// when there is one, so only new messages are encoded.
    fn request_body(
        &self,
        req: &ChatRequest<'_>,
        cache: Option<&crate::BodyCache>,
    ) -> Result<bytes::Bytes, LlmError> {
        match cache {
            Some(cache) => self
                .with_wire(|wire| cache.encode(wire, req))
                .map_err(encode_error),
            None => self.encode_body(req).map(bytes::Bytes::from),
        }
    }

    /// Calls `f` with this endpoint's body writer.
    fn with_wire<T>(&self, f: impl FnOnce(&dyn crate::body::Wire) -> T) -> T {
        let config = &self.config;
        match config.provider {
            ProviderKind::OpenAi => f(&openai::Wire {
                model: &config.model,
                max_tokens: config.max_tokens,
                images: config.images,
                reasoning: &config.reasoning,
            }),
            ProviderKind::Anthropic => f(&anthropic::Wire {
                model: &config.model,
                max_tokens: config.reasoning.anthropic_max_tokens(config.max_tokens),
                images: config.images,
                reasoning: &config.reasoning,
            }),
        }
    }

    /// Sends the request and streams the reply, retrying transient failures
    /// (429, 5xx, broken or idle connections, truncated streams) with backoff,
    /// then moving to the `[[fallback]]` endpoints when there are any.
    pub async fn complete(
        &self,
        req: ChatRequest<'_>,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, LlmError> {
        self.complete_cached(req, None, on_update, cancel).await
    }

    /// [`complete`](Self::complete) for one conversation's next request:
    /// `cache` keeps the encoding of its earlier messages, so only the new
    /// ones are encoded (see [`BodyCache`](crate::BodyCache)).
    pub async fn complete_cached(
        &self,
        req: ChatRequest<'_>,
        cache: Option<&crate::BodyCache>,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, LlmError> {
        match &self.chain {
            Some(chain) => chain.complete(self, req, cache, on_update, cancel).await,
            None => self.complete_here(req, cache, on_update, cancel).await,
        }
    }

    /// [`complete`](Self::complete) on this endpoint only.
    pub(crate) async fn complete_here(
        &self,
        req: ChatRequest<'_>,
        cache: Option<&crate::BodyCache>,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, LlmError> {
        let body = self.request_body(&req, cache)?;
        let mut shown = ShownText::default();
        let mut attempt = 1;
        // Keys that answered 429 since the last backoff.
        let mut limited = 0;
        // 429s answered by sending less (not counted as tries), bounded.
        let mut slowed = 0;
        loop {
            shown.begin_attempt();
            let (key_index, key) = self.keys.current();
            // A slot of the endpoint's governor: waiting costs nothing.
            let Some(permit) = self.governor.acquire(cancel).await else {
                return Err(LlmError::cancelled());
            };
            let result = {
                let mut forward = |update: StreamUpdate<'_>| shown.forward(update, on_update);
                let key = key.map(|k| k.value.as_str());
                self.attempt(body.clone(), key, &mut forward, cancel).await
            };
            // Backing off is still possible: this 429 asks to send less,
            // it does not use up a try.
            let mut flow_control = false;
            match &result {
                Ok(_) => permit.succeeded(),
                // Another key of the pool is tried at once: this limit was
                // the key's, not the endpoint's.
                Err(err) if err.kind == ErrorKind::RateLimited && limited + 1 < self.keys.len() => {
                }
                Err(err) if err.kind == ErrorKind::RateLimited => {
                    flow_control = permit.can_back_off() && slowed < MAX_SLOWED_RETRIES;
                    let wait = err.retry_after_ms.map(Duration::from_millis);
                    if let Some(throttle) = permit.rate_limited(wait) {
                        on_update(StreamUpdate::Throttled {
                            endpoint: &self.endpoint,
                            limit: throttle.limit,
                            in_flight: throttle.in_flight,
                            pause_ms: throttle.pause_ms,
                        });
                    }
                }
                Err(_) => {}
            }
            drop(permit);
            match result {
                Ok(reply) => {
                    shown.settle(&reply.text, on_update);
                    return Ok(reply);
                }
                Err(err) if err.kind == ErrorKind::RateLimited && limited + 1 < self.keys.len() => {
                    // Another key of the pool may not be limited: no wait.
                    limited += 1;
                    let from = key.map_or("", |k| k.source.as_str());
                    let to = self
                        .keys
                        .rotate_from(key_index)
                        .map_or("", |k| k.source.as_str());
                    let reason = format!(
                        "{} (key from {from}); trying the key from {to}",
                        err.message
                    );
                    on_update(StreamUpdate::Retry {
                        attempt,
                        delay_ms: 0,
                        reason: &reason,
                    });
                }
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
                    if flow_control {
                        slowed += 1;
                    } else {
                        attempt += 1;
                    }
                    limited = 0;
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

    /// One try, bounded by [`ClientConfig::request_timeout`]: a stream
    /// still running at the deadline is cut there (see [`read_stream`]);
    /// before the stream (connecting, waiting for the answer, a JSON answer)
    /// the deadline is an error.
    async fn attempt(
        &self,
        body: bytes::Bytes,
        key: Option<&str>,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, LlmError> {
        let deadline = tokio::time::Instant::now() + self.config.request_timeout;
        // `timeout_at` polls the attempt before its own timer, so a stream
        // cut at the same deadline returns what it holds.
        let bounded = tokio::time::timeout_at(
            deadline,
            self.attempt_until(body, key, on_update, cancel, deadline),
        );
        match bounded.await {
            Ok(result) => result,
            Err(_) => Err(self.request_timed_out()),
        }
    }

    /// The error of a request that reached its time limit with nothing of
    /// the reply to keep.
    fn request_timed_out(&self) -> LlmError {
        LlmError::new(
            ErrorKind::RequestTimeout,
            format!(
                "{} had not answered with any text or tool call after {} s \
                 (request_timeout_seconds); the request was stopped and not retried. Raise \
                 [network] request_timeout_seconds in config.toml for a slow model or server, \
                 or lower max_tokens",
                self.endpoint,
                self.config.request_timeout.as_secs_f64()
            ),
        )
    }

    async fn attempt_until(
        &self,
        body: bytes::Bytes,
        key: Option<&str>,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
        cancel: &CancellationToken,
        deadline: tokio::time::Instant,
    ) -> Result<AssistantReply, LlmError> {
        let mut request = self
            .http
            .post(&self.endpoint)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body);
        let key = key.filter(|k| !k.is_empty());
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
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        // What the body holds is decided by its first bytes (servers mislabel
        // streams), with the declared type as the tie-break for an empty body.
        let mut body = BodyReader::new(response, self.config.idle_timeout);
        let mut head = Vec::new();
        let format = loop {
            match sniff(&head) {
                Sniff::Looks(format) => break format,
                Sniff::Neither => return Err(self.not_an_answer(&content_type, &head)),
                Sniff::NeedMore => match body.chunk(cancel).await? {
                    Some(chunk) => head.extend_from_slice(&chunk),
                    None => {
                        break BodyFormat::declared(&content_type)
                            .unwrap_or(BodyFormat::EventStream);
                    }
                },
            }
        };
        let body = body.unread(head);
        match (format, self.config.provider) {
            (BodyFormat::Json, _) => self.read_json(body, &content_type, on_update, cancel).await,
            (BodyFormat::EventStream, ProviderKind::OpenAi) => {
                let reading = read_stream(
                    body.events(),
                    openai::Assembler::default(),
                    on_update,
                    cancel,
                    deadline,
                );
                self.kept_at_deadline(reading.await)
            }
            (BodyFormat::EventStream, ProviderKind::Anthropic) => {
                let reading = read_stream(
                    body.events(),
                    anthropic::Assembler::default(),
                    on_update,
                    cancel,
                    deadline,
                );
                self.kept_at_deadline(reading.await)
            }
        }
    }

    /// A whole JSON answer: a server that ignored `stream: true`, or an error
    /// object sent with status 200. The text is reported as one delta.
    async fn read_json(
        &self,
        body: BodyReader,
        content_type: &str,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, LlmError> {
        let bytes = body.read_all(cancel).await?;
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|err| {
            if err.is_eof() {
                LlmError::new(
                    ErrorKind::Truncated,
                    format!("the answer ended before its JSON was complete ({err})"),
                )
            } else {
                self.unusable_json(&format!("it is not valid JSON ({err})"), &bytes)
            }
        })?;
        if let Some(error) = value.get("error").filter(|e| e.is_object()) {
            return Err(LlmError::from_status(
                status_of_error(error),
                &String::from_utf8_lossy(&bytes),
                None,
                &self.config.model,
                &self.endpoint,
                self.config.provider.key_var(),
            ));
        }
        let parsed = match self.config.provider {
            ProviderKind::OpenAi => openai::parse_completion(&value),
            ProviderKind::Anthropic => anthropic::parse_message(&value),
        };
        let reply = parsed.map_err(|why| self.unusable_json(&why, &bytes))?;
        tracing::debug!(
            endpoint = %self.endpoint,
            content_type,
            "the provider answered with one JSON document instead of a stream"
        );
        if !reply.text.is_empty() {
            on_update(StreamUpdate::TextDelta(&reply.text));
        }
        Ok(reply)
    }

    /// What a stream read until the deadline comes to: a reply cut there
    /// keeps what it holds (logged), an empty one is the timeout error.
    fn kept_at_deadline(
        &self,
        read: Result<Option<AssistantReply>, LlmError>,
    ) -> Result<AssistantReply, LlmError> {
        match read? {
            Some(reply) if reply.timed_out => {
                tracing::warn!(
                    endpoint = %self.endpoint,
                    limit_s = self.config.request_timeout.as_secs_f64(),
                    text_bytes = reply.text.len(),
                    tool_calls = reply.tool_calls.len(),
                    "the reply was still streaming at request_timeout_seconds; cut there"
                );
                Ok(reply)
            }
            Some(reply) => Ok(reply),
            None => Err(self.request_timed_out()),
        }
    }

    fn api_name(&self) -> &'static str {
        match self.config.provider {
            ProviderKind::OpenAi => "OpenAI-compatible Chat Completions",
            ProviderKind::Anthropic => "Anthropic Messages",
        }
    }

    /// A 200 answer whose body is neither an event stream nor JSON (an HTML
    /// page from a proxy, a login portal, a web server at the wrong URL).
    /// It is not retried: such a page comes back the same way every time
    /// (transient gateway failures arrive as 5xx and do retry), and the fix
    /// is the base URL.
    fn not_an_answer(&self, content_type: &str, head: &[u8]) -> LlmError {
        let declared = if content_type.is_empty() {
            "no Content-Type".to_owned()
        } else {
            format!("Content-Type '{content_type}'")
        };
        LlmError::new(
            ErrorKind::Protocol,
            format!(
                "{} answered 200 with {declared}, which is neither an event stream nor JSON \
                 (it begins: \"{}\"). The base URL '{}' probably points at a web page or a \
                 proxy rather than an {} API: check {} (or base_url in config.toml).",
                self.endpoint,
                preview(head),
                self.base,
                self.api_name(),
                self.config.provider.base_url_var(),
            ),
        )
    }

    fn unusable_json(&self, why: &str, body: &[u8]) -> LlmError {
        LlmError::new(
            ErrorKind::Protocol,
            format!(
                "{} answered with JSON herald cannot use: {why} (it begins: \"{}\"). Check that \
                 the base URL '{}' serves the {} API ({}).",
                self.endpoint,
                preview(body),
                self.base,
                self.api_name(),
                self.config.provider.base_url_var(),
            ),
        )
    }
}

/// The stream assembly both wires share.
trait Assemble {
    /// Feeds one event; true once the reply is complete.
    fn push(
        &mut self,
        data: &str,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
    ) -> Result<bool, LlmError>;
    /// True once the stop/finish reason arrived.
    fn has_finished(&self) -> bool;
    /// The reply, or `Truncated` when the stream stopped too early.
    fn finish(self) -> Result<AssistantReply, LlmError>;
    /// What has arrived so far (the stream is being cut).
    fn cut_short(self) -> AssistantReply;
}

impl Assemble for openai::Assembler {
    fn push(
        &mut self,
        data: &str,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
    ) -> Result<bool, LlmError> {
        openai::Assembler::push(self, data, on_update)
    }
    fn has_finished(&self) -> bool {
        openai::Assembler::has_finished(self)
    }
    fn finish(self) -> Result<AssistantReply, LlmError> {
        openai::Assembler::finish(self)
    }
    fn cut_short(self) -> AssistantReply {
        openai::Assembler::cut_short(self)
    }
}

impl Assemble for anthropic::Assembler {
    fn push(
        &mut self,
        data: &str,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
    ) -> Result<bool, LlmError> {
        anthropic::Assembler::push(self, data, on_update)
    }
    fn has_finished(&self) -> bool {
        anthropic::Assembler::has_finished(self)
    }
    fn finish(self) -> Result<AssistantReply, LlmError> {
        anthropic::Assembler::finish(self)
    }
    fn cut_short(self) -> AssistantReply {
        anthropic::Assembler::cut_short(self)
    }
}

/// Reads events until the reply is complete. A complete reply is returned at
/// once, whether or not the server ends the stream; a stream that goes idle
/// after the finish reason keeps the reply it has (re-asking would pay for the
/// same answer twice).
///
/// At `deadline` the stream is dropped (which closes the connection, so the
/// server stops generating) and the reply is what arrived by then, marked
/// [`AssistantReply::timed_out`]; `None` when that holds no text and no
/// tool call (nothing worth keeping).
async fn read_stream<A: Assemble>(
    mut reader: SseReader,
    mut assembler: A,
    on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
    cancel: &CancellationToken,
    deadline: tokio::time::Instant,
) -> Result<Option<AssistantReply>, LlmError> {
    loop {
        let next = tokio::select! {
            biased;
            () = tokio::time::sleep_until(deadline) => None,
            next = reader.next(cancel) => Some(next),
        };
        let Some(next) = next else {
            drop(reader);
            if assembler.has_finished() {
                // Only the usage or the end marker was missing.
                return assembler.finish().map(Some);
            }
            let mut reply = assembler.cut_short();
            if reply.text.is_empty() && reply.tool_calls.is_empty() {
                return Ok(None);
            }
            reply.timed_out = true;
            reply.estimate_output_tokens();
            return Ok(Some(reply));
        };
        match next {
            Ok(Some(event)) => {
                if assembler.push(&event.data, on_update)? {
                    reader.drain_in_background();
                    break;
                }
            }
            Ok(None) => break,
            Err(err) if err.kind == ErrorKind::IdleTimeout && assembler.has_finished() => {
                tracing::debug!("the stream went idle after the finish reason; keeping the reply");
                break;
            }
            Err(err) => return Err(err),
        }
    }
    assembler.finish().map(Some)
}

/// The HTTP status an error object sent with status 200 stands for: its
/// numeric `code`, else its `type`.
fn status_of_error(error: &serde_json::Value) -> u16 {
    if let Some(code) = error
        .get("code")
        .and_then(serde_json::Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
    {
        return code;
    }
    let kind = error
        .get("type")
        .or_else(|| error.get("code"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    match kind {
        "invalid_request_error" | "context_length_exceeded" => 400,
        "authentication_error" | "invalid_api_key" => 401,
        "permission_error" => 403,
        "not_found_error" | "model_not_found" => 404,
        "rate_limit_error" | "rate_limit_exceeded" => 429,
        "overloaded_error" => 529,
        _ => 500,
    }
}

/// The start of a body on one line, for error messages.
fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(600)]);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut: String = flat.chars().take(120).collect();
    if flat.chars().count() > 120 {
        cut.push('\u{2026}');
    }
    cut
}

/// The text one request has streamed to the caller, kept across retries so a
/// retried reply never repeats what was already shown: deltas that replay the
/// shown text are swallowed and only the part past it is sent. When the
/// retried reply turns out different (or shorter), the caller gets
/// [`StreamUpdate::TextRestart`] and the new text from its start.
#[derive(Debug, Default)]
struct ShownText {
    /// Everything the caller has been sent (since the last restart).
    shown: String,
    /// How much of `shown` the current attempt has produced.
    pos: usize,
}

impl ShownText {
    fn begin_attempt(&mut self) {
        self.pos = 0;
    }

    fn forward(
        &mut self,
        update: StreamUpdate<'_>,
        out: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
    ) {
        match update {
            StreamUpdate::TextDelta(piece) => self.text(piece, out),
            other => out(other),
        }
    }

    fn text(&mut self, piece: &str, out: &mut (dyn FnMut(StreamUpdate<'_>) + Send)) {
        if piece.is_empty() {
            return;
        }
        let pos = self.pos;
        let end = pos + piece.len();
        if pos >= self.shown.len() {
            out(StreamUpdate::TextDelta(piece));
            self.shown.push_str(piece);
            self.pos = self.shown.len();
            return;
        }
        let overlap = self.shown.len().min(end) - pos;
        let replays =
            self.shown.as_bytes().get(pos..pos + overlap) == piece.as_bytes().get(..overlap);
        if replays {
            if end <= self.shown.len() {
                self.pos = end;
                return;
            }
            // `piece[..overlap]` equals the end of `shown`, a whole number of
            // characters, so `overlap` is a character boundary of `piece`.
            if let Some(rest) = piece.get(overlap..) {
                out(StreamUpdate::TextDelta(rest));
                self.shown.push_str(rest);
                self.pos = self.shown.len();
                return;
            }
        }
        let mut text = self.shown.get(..pos).unwrap_or_default().to_owned();
        text.push_str(piece);
        out(StreamUpdate::TextRestart);
        out(StreamUpdate::TextDelta(&text));
        self.shown = text;
        self.pos = self.shown.len();
    }

    /// The request succeeded with `text`: if it stopped short of what was
    /// shown, the shown text is void and `text` is sent again.
    fn settle(&mut self, text: &str, out: &mut (dyn FnMut(StreamUpdate<'_>) + Send)) {
        if self.pos < self.shown.len() {
            out(StreamUpdate::TextRestart);
            if !text.is_empty() {
                out(StreamUpdate::TextDelta(text));
            }
            self.shown = text.to_owned();
            self.pos = self.shown.len();
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

fn encode_error(err: serde_json::Error) -> LlmError {
    LlmError::new(
        ErrorKind::Protocol,
        format!("could not encode the request: {err}"),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn agents_offering_the_same_tools_share_one_encoding() {
        let client = LlmClient::new(ClientConfig {
            provider: ProviderKind::OpenAi,
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: None,
            model: "m".into(),
            max_tokens: None,
            retry: RetryPolicy::default(),
            idle_timeout: Duration::from_secs(1),
            request_timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(1),
            max_in_flight: 4,
            images: false,
            reasoning: crate::ReasoningConfig::default(),
        })
        .unwrap();
        let spec = |name: &str| ToolSpec {
            name: name.into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        let first = client.encode_tools(&[spec("a"), spec("b")]);
        let again = client.clone().encode_tools(&[spec("a"), spec("b")]);
        assert!(std::sync::Arc::ptr_eq(&first.json, &again.json));
        let other = client.encode_tools(&[spec("a")]);
        assert!(!std::sync::Arc::ptr_eq(&first.json, &other.json));
        assert_eq!(other.count, 1);
    }

    #[test]
    fn only_http_urls_skip_tls() {
        assert!(is_plain_http("http://127.0.0.1:8080/v1"));
        assert!(is_plain_http("HTTP://localhost"));
        assert!(!is_plain_http("https://api.openai.com/v1"));
        assert!(!is_plain_http("http:/"));
        assert!(!is_plain_http(""));
    }

    /// What the caller saw: `[text]` for deltas, `|` for a restart.
    fn run(attempts: &[&[&str]], final_text: &str) -> String {
        let mut seen = String::new();
        let mut out = |u: StreamUpdate<'_>| match u {
            StreamUpdate::TextDelta(t) => {
                seen.push('[');
                seen.push_str(t);
                seen.push(']');
            }
            StreamUpdate::TextRestart => seen.push('|'),
            StreamUpdate::Retry { .. } => seen.push('R'),
            StreamUpdate::Fallback { .. } => seen.push('F'),
            StreamUpdate::Throttled { .. } => seen.push('L'),
            StreamUpdate::ReasoningDelta(_) => seen.push('T'),
        };
        let mut shown = ShownText::default();
        for pieces in attempts {
            shown.begin_attempt();
            for piece in *pieces {
                shown.forward(StreamUpdate::TextDelta(piece), &mut out);
            }
        }
        shown.settle(final_text, &mut out);
        seen
    }

    #[test]
    fn first_attempt_passes_text_through() {
        assert_eq!(run(&[&["Hel", "lo"]], "Hello"), "[Hel][lo]");
    }

    #[test]
    fn retry_repeating_the_shown_text_sends_only_the_new_part() {
        // Same text cut differently: the shown "Hel" is swallowed, a piece
        // that straddles its end sends only the part past it.
        assert_eq!(
            run(&[&["Hel"], &["H", "el", "lo wo", "rld"]], "Hello world"),
            "[Hel][lo wo][rld]"
        );
        assert_eq!(run(&[&["Hello"], &["Hello"]], "Hello"), "[Hello]");
        // Several retries in a row.
        assert_eq!(
            run(&[&["a"], &["a", "b"], &["ab", "c"]], "abc"),
            "[a][b][c]"
        );
    }

    #[test]
    fn retry_with_different_text_restarts_once() {
        assert_eq!(
            run(&[&["Hello"], &["Hel", "p me", "!"]], "Help me!"),
            "[Hello]|[Help me][!]"
        );
        assert_eq!(run(&[&["Hi"], &["Yo"]], "Yo"), "[Hi]|[Yo]");
    }

    #[test]
    fn retry_with_shorter_text_restarts_at_the_end() {
        assert_eq!(run(&[&["Hello"], &["Hel"]], "Hel"), "[Hello]|[Hel]");
        assert_eq!(run(&[&["Hello"], &[]], ""), "[Hello]|");
    }

    #[test]
    fn multibyte_text_is_never_split_inside_a_character() {
        assert_eq!(
            run(&[&["h\u{e9}"], &["h", "\u{e9}\u{e9}!"]], "h\u{e9}\u{e9}!"),
            "[h\u{e9}][\u{e9}!]"
        );
        // Same first byte, different character: a restart, no panic.
        assert_eq!(
            run(&[&["\u{e9}"], &["\u{e8}"]], "\u{e8}"),
            "[\u{e9}]|[\u{e8}]"
        );
    }

    #[test]
    fn error_objects_map_to_statuses() {
        let status = |v: serde_json::Value| status_of_error(&v);
        assert_eq!(
            status(serde_json::json!({"code": 429, "message": "x"})),
            429
        );
        assert_eq!(
            status(serde_json::json!({"type": "authentication_error"})),
            401
        );
        assert_eq!(status(serde_json::json!({"code": "model_not_found"})), 404);
        assert_eq!(status(serde_json::json!({"type": "overloaded_error"})), 529);
        assert_eq!(status(serde_json::json!({"message": "?"})), 500);
        assert_eq!(status(serde_json::json!({"code": 200})), 500);
    }

    #[test]
    fn previews_are_one_short_line() {
        assert_eq!(
            preview(b"<html>\n  <body>hi</body>"),
            "<html> <body>hi</body>"
        );
        let long = "x".repeat(500);
        assert_eq!(preview(long.as_bytes()).chars().count(), 121);
    }
}
