//! The HTTP server: routes, request recording, latency, faults, and replies.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::Response;
use axum::routing::post;
use bytes::Bytes;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::body::{Tail, sse_body};
use crate::fault::{Fault, error_json, malformed_event};
use crate::invariants;
use crate::normalize::{Api, RequestView};
use crate::record::RecordedRequest;
use crate::render::RenderContext;
use crate::script::{Lookup, Reply, Script};
use crate::usage::{PrefixCache, TokenUsage, usage_for};
use crate::wire_openai::Quirks;
use crate::{wire_anthropic, wire_openai};

/// Locks `m`, recovering the data if another holder panicked.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct Shared {
    script: Script,
    latency: Mutex<Duration>,
    /// Extra delay for the replies of one conversation (see
    /// [`ScriptedServer::set_conversation_latency`]).
    conversation_latency: Mutex<Vec<(String, Duration)>>,
    pace: Mutex<Option<crate::body::Pace>>,
    faults: Mutex<VecDeque<Fault>>,
    /// Faults for requests to one model (see [`ScriptedServer::inject_for_model`]).
    model_faults: Mutex<Vec<(String, Fault)>>,
    quirks: Mutex<Quirks>,
    log: Mutex<Vec<RecordedRequest>>,
    /// Each conversation's latest request, for the check on arrival (kept
    /// under the `log` lock).
    predecessors: Mutex<invariants::Predecessors>,
    cache: Mutex<PrefixCache>,
    serial: AtomicU64,
    /// Why this server's invariant checks are off, if a test opted out.
    skip_reason: Mutex<Option<String>>,
    /// What a test allows beyond the invariants (see
    /// [`ScriptedServer::allow_branches`]).
    allow: Mutex<invariants::Allow>,
    /// A provider's concurrency limit (see
    /// [`ScriptedServer::limit_concurrency`]).
    concurrency: Mutex<Option<ConcurrencyLimit>>,
    in_flight: AtomicUsize,
    /// The most requests ever admitted at once.
    peak_in_flight: AtomicUsize,
    /// Requests refused with 429 by the concurrency limit.
    throttled: AtomicUsize,
}

/// Requests admitted at once, and the `Retry-After` of the 429 the others get.
#[derive(Debug, Clone, Copy)]
struct ConcurrencyLimit {
    max: usize,
    retry_after_secs: Option<u64>,
}

/// A request counted in flight until dropped.
struct Admitted<'a>(&'a Shared);

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Shared {
    fn mark_responded(&self, index: usize) {
        if let Some(r) = lock(&self.log).get_mut(index) {
            r.responded_at = Some(Instant::now());
        }
    }
}

/// A scripted OpenAI/Anthropic-compatible server on `127.0.0.1`, running in
/// the current tokio runtime until dropped.
///
/// Tool pairing and prefix stability are checked on every request without
/// the test asking: a request that breaks either is answered with HTTP 400
/// naming the violation (instead of its scripted reply; injected status
/// faults are still sent), and dropping the server panics with a report of
/// every violation among the recorded requests (unless the thread is already
/// panicking). A test that sends invalid histories on purpose opts out with
/// [`ScriptedServer::skip_invariants`], giving its reason.
pub struct ScriptedServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(reason) = lock(&self.shared.skip_reason).as_deref() {
            eprintln!("herald-testkit: invariant checks skipped: {reason}");
            return;
        }
        let Err(errors) = self.check_invariants() else {
            return;
        };
        let report = format!(
            "herald-testkit: {} invariant violation(s) among the {} requests this server \
             received (checked when the server is dropped; a test that sends invalid \
             histories on purpose calls skip_invariants(reason)):\n  {}",
            errors.len(),
            self.request_count(),
            errors.join("\n  ")
        );
        if std::thread::panicking() {
            // The test already failed; add the report without a double panic.
            eprintln!("{report}");
        } else {
            panic!("{report}");
        }
    }
}

impl ScriptedServer {
    /// Binds `127.0.0.1:0` and serves `script` on a spawned task.
    pub async fn start(script: Script) -> std::io::Result<ScriptedServer> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script,
            latency: Mutex::new(Duration::ZERO),
            conversation_latency: Mutex::new(Vec::new()),
            pace: Mutex::new(None),
            faults: Mutex::new(VecDeque::new()),
            model_faults: Mutex::new(Vec::new()),
            quirks: Mutex::new(Quirks::default()),
            log: Mutex::new(Vec::new()),
            predecessors: Mutex::default(),
            cache: Mutex::new(PrefixCache::default()),
            serial: AtomicU64::new(0),
            skip_reason: Mutex::new(None),
            allow: Mutex::new(invariants::Allow::default()),
            concurrency: Mutex::new(None),
            in_flight: AtomicUsize::new(0),
            peak_in_flight: AtomicUsize::new(0),
            throttled: AtomicUsize::new(0),
        });
        let router = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .layer(DefaultBodyLimit::disable())
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                eprintln!("herald-testkit: server stopped: {e}");
            }
        });
        Ok(ScriptedServer { shared, addr, task })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Base URL for an OpenAI client (`{base}/chat/completions`).
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// Base URL for an Anthropic client (`{base}/v1/messages`).
    pub fn anthropic_base_url(&self) -> String {
        self.url()
    }

    /// The environment that points herald at this server on `api`: the
    /// provider, its base URL, a key and a model. What every test and
    /// benchmark sets, in one place (for a process, or for
    /// `Settings::resolve`'s environment map).
    pub fn provider_env(&self, api: Api) -> Vec<(&'static str, String)> {
        match api {
            Api::OpenAi => vec![
                ("OPENAI_BASE_URL", self.openai_base_url()),
                ("OPENAI_API_KEY", "sk-test-openai".to_owned()),
                ("HERALD_MODEL", "gpt-4.1-mini".to_owned()),
            ],
            Api::Anthropic => vec![
                ("HERALD_PROVIDER", "anthropic".to_owned()),
                ("ANTHROPIC_BASE_URL", self.anthropic_base_url()),
                ("ANTHROPIC_API_KEY", "sk-ant-test".to_owned()),
                ("HERALD_MODEL", "claude-sonnet-4-5".to_owned()),
            ],
        }
    }

    /// Delay before the first response byte of every later request.
    pub fn set_latency(&self, d: Duration) {
        *lock(&self.shared.latency) = d;
    }

    /// Delays every later reply to a conversation whose first user message
    /// contains `first_user_contains` by `d` (on top of [`Self::set_latency`]):
    /// a test can hold one agent's request in flight while others go on.
    pub fn set_conversation_latency(&self, first_user_contains: &str, d: Duration) {
        lock(&self.shared.conversation_latency).push((first_user_contains.to_owned(), d));
    }

    /// Streams every later reply as a model of this speed would (time to the
    /// first token, then tokens per second), for benchmarks with realistic
    /// model latency; `None` streams at once.
    pub fn set_pace(&self, pace: Option<crate::body::Pace>) {
        *lock(&self.shared.pace) = pace;
    }

    /// Queues a fault; each queued fault is consumed by the next request (FIFO).
    pub fn inject(&self, fault: Fault) {
        lock(&self.shared.faults).push_back(fault);
    }

    /// Queues a fault for the next request naming `model` (FIFO per model),
    /// consumed before the general queue: a test can fail one of several
    /// concurrent requests (a side request on another model) without
    /// racing the others.
    pub fn inject_for_model(&self, model: &str, fault: Fault) {
        lock(&self.shared.model_faults).push((model.to_owned(), fault));
    }

    /// Behaves like a provider with a concurrency limit: while `max`
    /// requests are being answered (until their headers are sent), more
    /// get HTTP 429 with `Retry-After: retry_after_secs`, and are not
    /// recorded. `None` lifts it.
    pub fn limit_concurrency(&self, limit: Option<(usize, Option<u64>)>) {
        *lock(&self.shared.concurrency) = limit.map(|(max, retry_after_secs)| ConcurrencyLimit {
            max,
            retry_after_secs,
        });
    }

    /// The most requests admitted at once so far.
    pub fn peak_in_flight(&self) -> usize {
        self.shared.peak_in_flight.load(Ordering::SeqCst)
    }

    /// Requests refused with 429 by [`ScriptedServer::limit_concurrency`].
    pub fn throttled_count(&self) -> usize {
        self.shared.throttled.load(Ordering::SeqCst)
    }

    /// Sets the OpenAI stream quirks used for later replies.
    pub fn set_quirks(&self, quirks: Quirks) {
        *lock(&self.shared.quirks) = quirks;
    }

    /// A copy of every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.log).clone()
    }

    /// Number of requests received so far.
    pub fn request_count(&self) -> usize {
        lock(&self.shared.log).len()
    }

    /// Tool pairing violations over all recorded requests.
    pub fn pairing_violations(&self) -> Vec<String> {
        invariants::pairing_violations(&self.requests())
    }

    /// Prefix-stability violations over all recorded requests.
    pub fn prefix_violations(&self) -> Vec<String> {
        invariants::prefix_violations(&self.requests())
    }

    /// Turns off the automatic invariant checks (the HTTP 400 on arrival and
    /// the report when the server is dropped), for a test that sends invalid
    /// histories on purpose. Call it before the first request. `reason` says
    /// why and is printed when the server is dropped; explicit calls to
    /// [`ScriptedServer::check_invariants`] still work.
    ///
    /// # Panics
    ///
    /// If `reason` is empty or blank: opting out needs a reason.
    pub fn skip_invariants(&self, reason: &str) {
        assert!(
            !reason.trim().is_empty(),
            "skip_invariants needs a reason saying why this test's requests may break tool pairing or prefix stability"
        );
        *lock(&self.shared.skip_reason) = Some(reason.trim().to_string());
    }

    /// Lets a request branch off an earlier request of its conversation at
    /// a user turn (a rewind or a fork at a turn, see
    /// [`invariants::is_branch`]); tool pairing and every other prefix rule
    /// are still checked on every request.
    ///
    /// # Panics
    ///
    /// If `reason` is empty or blank.
    pub fn allow_branches(&self, reason: &str) {
        assert!(
            !reason.trim().is_empty(),
            "allow_branches needs a reason saying why this test's conversations branch"
        );
        lock(&self.shared.allow).branches = true;
    }

    /// Both invariant checks over all recorded requests.
    pub fn check_invariants(&self) -> Result<(), Vec<String>> {
        let allow = *lock(&self.shared.allow);
        let errors = invariants::violations_allowing(&self.requests(), allow);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Panics listing every invariant violation.
    pub fn assert_invariants(&self) {
        if let Err(errors) = self.check_invariants() {
            panic!(
                "testkit invariants violated ({}):\n  {}",
                errors.len(),
                errors.join("\n  ")
            );
        }
    }

    /// `(follow-up requests that extend their predecessor, all follow-up
    /// requests)`, over all recorded requests.
    pub fn prefix_stability(&self) -> (usize, usize) {
        invariants::prefix_stability(&self.requests())
    }
}

async fn openai(
    State(s): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(s, Api::OpenAi, uri, headers, body).await
}

async fn anthropic(
    State(s): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(s, Api::Anthropic, uri, headers, body).await
}

/// What to answer, decided as soon as the request arrives.
enum Plan {
    Error {
        code: u16,
        retry_after_secs: Option<u64>,
        body: String,
    },
    Reply {
        reply: Reply,
        view: Box<RequestView>,
        usage: TokenUsage,
        fault: Option<Fault>,
    },
}

fn plan(
    s: &Shared,
    api: Api,
    body: &Value,
    raw_len: usize,
    view: Result<RequestView, String>,
) -> Plan {
    let for_model = view.as_ref().ok().and_then(|v| {
        let mut queued = lock(&s.model_faults);
        let at = queued.iter().position(|(model, _)| *model == v.model)?;
        Some(queued.remove(at).1)
    });
    let fault = for_model.or_else(|| lock(&s.faults).pop_front());
    if let Some(Fault::Status {
        code,
        retry_after_secs,
        body,
    }) = fault
    {
        return Plan::Error {
            code,
            retry_after_secs,
            body: error_json(api, code, &body),
        };
    }
    let view = match view {
        Ok(v) => v,
        Err(e) => {
            return Plan::Error {
                code: 400,
                retry_after_secs: None,
                body: error_json(api, 400, &format!("testkit: malformed request: {e}")),
            };
        }
    };
    match s.script.lookup(&view) {
        Lookup::Error(msg) => Plan::Error {
            code: 400,
            retry_after_secs: None,
            body: error_json(api, 400, &msg),
        },
        Lookup::Reply(reply) => {
            let shared = lock(&s.cache).observe(&view.conversation, body);
            let usage = usage_for(api, body, raw_len, shared, &reply);
            Plan::Reply {
                reply,
                view: Box::new(view),
                usage,
                fault,
            }
        }
    }
}

async fn handle(s: Arc<Shared>, api: Api, uri: Uri, headers: HeaderMap, raw: Bytes) -> Response {
    let received_at = Instant::now();
    let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    let _admitted = Admitted(&s);
    let limit = *lock(&s.concurrency);
    if let Some(limit) = limit.filter(|l| now > l.max) {
        s.throttled.fetch_add(1, Ordering::SeqCst);
        let mut resp = Response::new(Body::from(error_json(
            api,
            429,
            "testkit: too many concurrent requests",
        )));
        *resp.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = limit.retry_after_secs {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        return resp;
    }
    s.peak_in_flight.fetch_max(now, Ordering::SeqCst);
    let parsed = serde_json::from_slice::<Value>(&raw);
    let view = match &parsed {
        Ok(v) => RequestView::from_body(api, v),
        Err(e) => Err(format!("body is not JSON: {e}")),
    };
    let body = parsed.unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into_owned()));
    let (conversation, turn) = view
        .as_ref()
        .map(|v| (v.conversation.clone(), v.turn))
        .unwrap_or_default();
    let parsed = view.is_ok();
    let mut plan = plan(&s, api, &body, raw.len(), view);
    let status = match &plan {
        Plan::Error { code, .. } => *code,
        Plan::Reply { .. } => 200,
    };
    let checked = lock(&s.skip_reason).is_none();
    let index = {
        let mut log = lock(&s.log);
        log.push(RecordedRequest {
            api,
            path: uri.path().to_string(),
            headers: headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body,
            conversation,
            turn,
            received_at,
            responded_at: None,
            status,
        });
        let index = log.len() - 1;
        // Each request is checked on arrival, so a violation fails the run
        // where it happens instead of only in the report at drop time.
        let errors = {
            let mut predecessors = lock(&s.predecessors);
            let errors = if checked {
                let before = predecessors.of(&log[index].conversation);
                invariants::request_violations_after(&log, index, before, *lock(&s.allow))
            } else {
                Vec::new()
            };
            predecessors.record(&log[index], index, parsed);
            errors
        };
        // An injected fault or a script error is still answered as asked;
        // the violation shows in the report when the server is dropped.
        if !errors.is_empty() && matches!(plan, Plan::Reply { .. }) {
            log[index].status = 400;
            plan = Plan::Error {
                code: 400,
                retry_after_secs: None,
                body: error_json(
                    api,
                    400,
                    &format!(
                        "testkit: invariant violated by this request: {}",
                        errors.join("; ")
                    ),
                ),
            };
        }
        index
    };
    let mut latency = *lock(&s.latency);
    if let Plan::Reply { view, .. } = &plan {
        latency += lock(&s.conversation_latency)
            .iter()
            .filter(|(needle, _)| view.conversation.contains(needle.as_str()))
            .map(|(_, d)| *d)
            .sum::<Duration>();
    }
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match plan {
        Plan::Error {
            code,
            retry_after_secs,
            body,
        } => {
            let mut resp = Response::new(Body::from(body));
            *resp.status_mut() =
                StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let h = resp.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            if let Some(secs) = retry_after_secs {
                h.insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            s.mark_responded(index);
            resp
        }
        Plan::Reply {
            reply,
            view,
            usage,
            fault,
        } => {
            let ctx = RenderContext {
                reply: &reply,
                model: &view.model,
                conversation: &view.conversation,
                turn: view.turn,
                usage,
                serial: s.serial.fetch_add(1, Ordering::Relaxed),
            };
            if let Reply::Endless(endless) = &reply {
                // Ended by the request's own cap, or never; faults do not apply.
                let cap = crate::endless::output_cap(&view_body(&s, index));
                let parts = crate::endless::parts(api, &ctx, endless, cap.unwrap_or(u64::MAX));
                let done_state = s.clone();
                let body = crate::endless::body(
                    parts,
                    endless.every,
                    cap,
                    Box::new(move || done_state.mark_responded(index)),
                );
                return event_stream(body);
            }
            if let Some(Fault::Body { content_type, body }) = &fault {
                let mut resp = Response::new(Body::from(body.clone()));
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_str(content_type)
                        .unwrap_or_else(|_| HeaderValue::from_static("text/plain")),
                );
                s.mark_responded(index);
                return resp;
            }
            if !view.stream || fault == Some(Fault::NonStreamingAnswer) {
                let json = match api {
                    Api::OpenAi => wire_openai::complete(&ctx),
                    Api::Anthropic => wire_anthropic::complete(&ctx),
                };
                let mut resp = Response::new(Body::from(json.to_string()));
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                s.mark_responded(index);
                return resp;
            }
            let mut sse = match api {
                Api::OpenAi => wire_openai::stream(&ctx, *lock(&s.quirks)),
                Api::Anthropic => wire_anthropic::stream(&ctx),
            };
            let tail = match fault {
                Some(Fault::TruncatedStream) => {
                    sse.events.truncate(sse.cut_point());
                    Tail::End
                }
                Some(Fault::AbortStream) => {
                    sse.events.truncate(sse.cut_point());
                    Tail::Abort
                }
                Some(Fault::IdleStream) => {
                    sse.events.truncate(1);
                    Tail::Idle
                }
                Some(Fault::MalformedChunk) => {
                    let at = sse.cut_point();
                    sse.events.insert(at, malformed_event(api));
                    Tail::End
                }
                Some(Fault::NoEndMarker) => {
                    // Both renderers end with the end marker.
                    sse.events.pop();
                    Tail::Idle
                }
                Some(Fault::Status { .. } | Fault::NonStreamingAnswer | Fault::Body { .. })
                | None => Tail::End,
            };
            let done_state = s.clone();
            let pace = lock(&s.pace).map(|pace| (pace, usage.completion_tokens));
            let body = sse_body(
                sse.events,
                tail,
                Box::new(move || done_state.mark_responded(index)),
                pace,
            );
            event_stream(body)
        }
    }
}

/// A `text/event-stream` response with `body`.
fn event_stream(body: Body) -> Response {
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// The body of recorded request `index` (`null` if it is gone).
fn view_body(s: &Shared, index: usize) -> Value {
    lock(&s.log)
        .get(index)
        .map_or(Value::Null, |r| r.body.clone())
}
