//! One live connection to an MCP server.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use herald_sandbox::EnvFilter;
use herald_tools::{ElicitAction, ElicitAnswer, Elicitation};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientNotification, ClientRequest, CustomRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, Implementation, ProgressNotificationParam, ProgressToken, RequestId,
    ServerResult,
};
use rmcp::service::{
    InboundStreamOrigin, NotificationContext, Peer, RequestContext, RoleClient, RunningService,
    ServiceError,
};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::config::McpServerConfig;
use crate::content::{McpCallResult, map_call_result};
use crate::names::exposed_names;
use crate::schema::normalize_input_schema;

/// One tool of a server, as herald offers it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct McpToolInfo {
    /// The server's configured name.
    pub server: String,
    /// The tool's name on the server (what `tools/call` is sent).
    pub name: String,
    /// The name the model sees: `mcp__<server>__<tool>`, sanitised, unique.
    pub exposed_name: String,
    pub description: String,
    /// The normalised input schema (an object schema with `properties`).
    pub input_schema: Value,
    /// The server annotated the tool `readOnlyHint: true`.
    pub read_only_hint: bool,
}

impl McpToolInfo {
    /// About how many tokens listing this tool adds to every request (its
    /// name, description and schema at ~4 characters a token).
    pub fn schema_tokens(&self) -> usize {
        let schema = serde_json::to_string(&self.input_schema).map_or(0, |s| s.len());
        (self.exposed_name.len() + self.description.len() + schema).div_ceil(4)
    }
}

/// A tool the server listed that herald does not offer, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTool {
    pub name: String,
    pub reason: String,
}

/// A progress notification for a running tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The call id given to [`McpServer::call_for`] (empty for [`McpServer::call`]).
    pub call_id: String,
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Receives progress notifications (from rmcp's receive task: keep it quick).
pub type ProgressSink = Arc<dyn Fn(ProgressUpdate) + Send + Sync>;

/// Answers a server's request for user input (`elicitation/create`) made
/// during one call: puts it to whoever can answer and resolves with the
/// answer. It may take as long as a person needs; the call's
/// `tool_timeout_sec` does not run meanwhile.
pub type ElicitationHandler =
    Arc<dyn Fn(Elicitation) -> BoxFuture<'static, ElicitAnswer> + Send + Sync>;

/// Why a server could not be connected. The message names the server and
/// what to change.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("MCP server `{server}`: {message}")]
    Config { server: String, message: String },
    #[error("MCP server `{server}`: cannot start `{command}`: {source}")]
    Spawn {
        server: String,
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "MCP server `{server}` did not finish starting within startup_timeout_sec = {seconds} s \
         ({stage}); raise startup_timeout_sec in [mcp_servers.{server}] if it is just slow{stderr}"
    )]
    StartupTimeout {
        server: String,
        seconds: u64,
        stage: &'static str,
        stderr: String,
    },
    #[error("MCP server `{server}` failed to start: {message}{stderr}")]
    Startup {
        server: String,
        message: String,
        stderr: String,
    },
    #[error("MCP server `{server}` is disabled (enabled = false)")]
    Disabled { server: String },
}

/// How much of a server's stderr is kept for error messages.
const STDERR_TAIL: usize = 4096;

/// Time a server gets to exit after its stdin is closed on shutdown, before
/// its process group is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// State shared with the rmcp client handler.
#[derive(Default)]
struct Shared {
    sink: StdMutex<Option<ProgressSink>>,
    /// Progress token of each call in flight -> who is told about it.
    calls: StdMutex<HashMap<ProgressToken, CallWatch>>,
    /// Numbers the calls, so the most recent one is known.
    next_call: std::sync::atomic::AtomicU64,
}

#[derive(Clone)]
struct Handler {
    server: String,
    shared: Arc<Shared>,
}

impl ClientHandler for Handler {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let call = self
            .shared
            .calls
            .lock()
            .ok()
            .and_then(|calls| calls.get(&params.progress_token).cloned());
        let Some(call) = call else {
            return std::future::ready(());
        };
        let sink = call
            .sink
            .or_else(|| self.shared.sink.lock().ok().and_then(|s| s.clone()));
        if let Some(sink) = sink {
            sink(ProgressUpdate {
                server: self.server.clone(),
                tool: call.tool,
                call_id: call.call_id,
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
        std::future::ready(())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let (message, schema) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message,
                serde_json::to_value(&requested_schema).unwrap_or_default(),
            ),
            // Only the form mode is declared.
            _ => {
                tracing::warn!(server = %self.server, "URL elicitation declined (not supported)");
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let Some(call) = self.call_for_request(&context).await else {
            tracing::warn!(
                server = %self.server,
                "elicitation declined: no call of this server is in flight"
            );
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let Some(handler) = call.elicit else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let waiting = call.user_wait.begin();
        let answer = tokio::select! {
            answer = handler(Elicitation {
                server: self.server.clone(),
                message,
                schema,
            }) => answer,
            // The server withdrew the request.
            () = context.ct.cancelled() => ElicitAnswer::cancel(),
        };
        drop(waiting);
        let action = match answer.action {
            ElicitAction::Accept => ElicitationAction::Accept,
            ElicitAction::Decline => ElicitationAction::Decline,
            ElicitAction::Cancel => ElicitationAction::Cancel,
        };
        let mut result = ElicitResult::new(action);
        if answer.action == ElicitAction::Accept {
            result = result.with_content(answer.content.unwrap_or_else(|| serde_json::json!({})));
        }
        Ok(result)
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        ClientConfig::new(
            capabilities,
            Implementation::new("herald", env!("CARGO_PKG_VERSION")),
        )
    }
}

impl Handler {
    /// The call a server's request (an elicitation) belongs to. Over
    /// streamable HTTP the request arrives on the response stream of the
    /// call's POST, which rmcp records; a request may also carry the call's
    /// progress token. Over stdio nothing links a server's request to the
    /// call it serves, so with several calls in flight the most recent one
    /// is taken (the usual case is one call at a time per server). The
    /// call is registered just after it is sent, so a request that comes
    /// first gets a moment to find it.
    async fn call_for_request(&self, context: &RequestContext<RoleClient>) -> Option<CallWatch> {
        let origin = match context.extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => Some(id.clone()),
            _ => None,
        };
        let token = context.meta.get_progress_token();
        const ATTEMPTS: usize = 20;
        for attempt in 1..=ATTEMPTS {
            let found = self.shared.calls.lock().ok().and_then(|calls| {
                if let Some(id) = &origin {
                    let call = calls.values().find(|c| &c.request_id == id);
                    // Its call may not be registered yet: wait for it
                    // rather than guess.
                    if call.is_some() || attempt < ATTEMPTS {
                        return call.cloned();
                    }
                }
                token
                    .as_ref()
                    .and_then(|t| calls.get(t))
                    .or_else(|| calls.values().max_by_key(|c| c.seq))
                    .cloned()
            });
            if found.is_some() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }
}

/// The last bytes a stdio server wrote to stderr.
#[derive(Default)]
struct StderrTail {
    bytes: StdMutex<VecDeque<u8>>,
    done: tokio::sync::Notify,
    finished: std::sync::atomic::AtomicBool,
}

impl StderrTail {
    fn text(&self) -> String {
        let bytes: Vec<u8> = self
            .bytes
            .lock()
            .map(|b| b.iter().copied().collect())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).trim().to_owned()
    }

    /// `"\nIts stderr ended with:\n..."` or nothing.
    fn suffix(&self) -> String {
        let text = self.text();
        if text.is_empty() {
            String::new()
        } else {
            format!("\nIts stderr ended with:\n{text}")
        }
    }

    /// Waits (briefly) until the server's stderr is closed, so messages of
    /// a server that just died are complete.
    async fn wait_closed(&self, limit: Duration) {
        let notified = self.done.notified();
        if self.finished.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let _ = tokio::time::timeout(limit, notified).await;
    }
}

/// A stdio server's process group, killed when this is dropped.
struct ProcessGroup {
    pgid: i32,
    pid: u32,
}

impl ProcessGroup {
    fn kill(&self, signal: nix::sys::signal::Signal) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.pgid), signal);
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill(nix::sys::signal::Signal::SIGKILL);
    }
}

/// Whether a child process has exited (also before rmcp has read the end
/// of its output). Linux: a missing or zombie `/proc/<pid>`; elsewhere
/// only rmcp's view counts.
fn process_exited(pid: u32) -> bool {
    if !cfg!(target_os = "linux") {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
        Err(_) => true,
    }
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    group: Option<ProcessGroup>,
    stderr: Option<Arc<StderrTail>>,
}

impl Connection {
    fn closed(&self) -> bool {
        self.service.is_closed()
            || self.service.peer().is_transport_closed()
            || self.group.as_ref().is_some_and(|g| process_exited(g.pid))
    }

    fn stderr_suffix(&self) -> String {
        self.stderr.as_ref().map(|s| s.suffix()).unwrap_or_default()
    }

    /// Closes the connection: stdin closed (the MCP way to stop a stdio
    /// server), a short wait, then the whole process group killed.
    async fn close(mut self) {
        if let Some(group) = &self.group {
            // rmcp's own close waits up to 3 s before SIGTERM; herald does
            // not wait that long.
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.service.close()).await;
            group.kill(nix::sys::signal::Signal::SIGTERM);
        } else {
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.service.close()).await;
        }
        // Dropping the group kills whatever is left.
        self.group.take();
    }
}

struct State {
    conn: Option<Connection>,
    /// Incremented on every (re)connection.
    generation: u64,
    /// The one restart has been used.
    restarted: bool,
    /// Set when the server is given up on: the reason.
    down: Option<String>,
    shut_down: bool,
}

/// One live connection to an MCP server, shared (`Arc`) by every tool of
/// that server and every agent of the process.
pub struct McpServer {
    name: String,
    toolset: &'static str,
    config: McpServerConfig,
    env: EnvFilter,
    tools: Vec<McpToolInfo>,
    skipped: Vec<SkippedTool>,
    server_info: Option<Implementation>,
    /// The server declared the `resources` capability.
    resources: bool,
    shared: Arc<Shared>,
    state: tokio::sync::Mutex<State>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

/// `mcp-<server>`, leaked once per distinct server name in the process
/// ([`herald_tools::Tool::toolset`] returns `&'static str`); the set of
/// configured names is small and fixed, so this is bounded.
pub(crate) fn toolset_name(server: &str) -> &'static str {
    static NAMES: StdMutex<Vec<&'static str>> = StdMutex::new(Vec::new());
    let wanted = format!("mcp-{server}");
    let mut names = match NAMES.lock() {
        Ok(names) => names,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(found) = names.iter().find(|n| **n == wanted) {
        return found;
    }
    let leaked: &'static str = Box::leak(wanted.into_boxed_str());
    names.push(leaked);
    leaked
}

fn describe_command(config: &McpServerConfig) -> String {
    let mut text = config.command.clone().unwrap_or_default();
    for arg in &config.args {
        text.push(' ');
        text.push_str(arg);
    }
    text
}

impl McpServer {
    /// Starts (stdio) or connects to (HTTP) the server, initialises the
    /// session and lists its tools, all within `startup_timeout_sec`.
    /// A stdio server inherits herald's environment filtered by `env`, plus
    /// the variables of its `env` table, and runs in a process group of
    /// its own that is killed on [`McpServer::shutdown`] or drop.
    pub async fn connect(
        name: &str,
        config: &McpServerConfig,
        env: &EnvFilter,
    ) -> Result<Arc<McpServer>, McpError> {
        if !config.enabled {
            return Err(McpError::Disabled {
                server: name.to_owned(),
            });
        }
        config.validate(name).map_err(|e| McpError::Config {
            server: name.to_owned(),
            message: e.to_string(),
        })?;
        let shared = Arc::new(Shared::default());
        let conn = open(name, config, env, &shared).await?;
        let listed = list_tools(name, &conn, config).await;
        let (tools, skipped) = match listed {
            Ok(found) => found,
            Err(err) => {
                conn.close().await;
                return Err(err);
            }
        };
        let peer_info = conn.service.peer().peer_info();
        let server_info = peer_info.as_ref().and_then(|info| info.server_info.clone());
        let resources = peer_info
            .as_ref()
            .is_some_and(|info| info.capabilities.resources.is_some());
        Ok(Arc::new(McpServer {
            name: name.to_owned(),
            toolset: toolset_name(name),
            config: config.clone(),
            env: env.clone(),
            tools,
            skipped,
            server_info,
            resources,
            shared,
            state: tokio::sync::Mutex::new(State {
                conn: Some(conn),
                generation: 1,
                restarted: false,
                down: None,
                shut_down: false,
            }),
        }))
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `mcp-<name>`: the toolset of this server's tools.
    pub fn toolset(&self) -> &'static str {
        self.toolset
    }

    /// The configuration it was connected with.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The server's name and version, as it reported them.
    pub fn server_info(&self) -> Option<(&str, &str)> {
        self.server_info
            .as_ref()
            .map(|i| (i.name.as_str(), i.version.as_str()))
    }

    /// The tools offered, after `include_tools`/`exclude_tools`, sorted by
    /// exposed name. Fixed at connect time (the prompt prefix must not
    /// change), also across a restart.
    pub fn tools(&self) -> &[McpToolInfo] {
        &self.tools
    }

    /// Tools the server listed but herald does not offer (unusable schema,
    /// no name), with the reason.
    pub fn skipped_tools(&self) -> &[SkippedTool] {
        &self.skipped
    }

    /// Sets the function told about progress notifications of calls in
    /// flight (replacing any earlier one).
    pub fn set_progress_sink(&self, sink: ProgressSink) {
        if let Ok(mut slot) = self.shared.sink.lock() {
            *slot = Some(sink);
        }
    }

    /// The process id of a stdio server's current process (None for HTTP,
    /// or after shutdown).
    pub async fn pid(&self) -> Option<u32> {
        let state = self.state.lock().await;
        state
            .conn
            .as_ref()
            .and_then(|c| c.group.as_ref())
            .map(|g| g.pid)
    }

    /// Calls `tool` (its name on the server) with `args` (a JSON object).
    /// See [`McpServer::call_for`].
    pub async fn call(&self, tool: &str, args: Value, cancel: &CancellationToken) -> McpCallResult {
        self.call_for("", tool, args, cancel).await
    }

    /// Calls `tool` with `args`; `call_id` tags its progress updates.
    ///
    /// Never fails: errors are results the model can read. A call taking
    /// longer than `tool_timeout_sec`, or whose `cancel` fires, is cancelled
    /// (the server is sent `notifications/cancelled`, as it is when this
    /// future is dropped). When the server's connection has closed (a
    /// crashed stdio server) it is restarted once, on the next call, and
    /// that call's result says so; after a second failure the server is
    /// reported down.
    pub async fn call_for(
        &self,
        call_id: &str,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
    ) -> McpCallResult {
        self.call_reporting(call_id, tool, args, cancel, None).await
    }

    /// [`McpServer::call_for`] whose progress notifications go to
    /// `progress` (when given) instead of the server's sink.
    pub async fn call_reporting(
        &self,
        call_id: &str,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
        progress: Option<ProgressSink>,
    ) -> McpCallResult {
        self.call_watched(call_id, tool, args, cancel, progress, None)
            .await
    }

    /// [`McpServer::call_reporting`] whose elicitations (the server asking
    /// the user for input during the call) go to `elicit`; without one
    /// they are declined. While the user is being asked, the call's
    /// `tool_timeout_sec` does not run.
    pub async fn call_watched(
        &self,
        call_id: &str,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
        progress: Option<ProgressSink>,
        elicit: Option<ElicitationHandler>,
    ) -> McpCallResult {
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return McpCallResult::error(format!(
                    "arguments for MCP tool `{tool}` must be a JSON object, got {other}"
                ));
            }
        };
        let (peer, generation, note) = match self.peer_for_call().await {
            Ok(found) => found,
            Err(result) => return result,
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let watch = CallWatch::new(tool, call_id, progress, elicit);
        let outcome = self.send_call(&peer, request, watch, cancel).await;
        let mut result = match outcome {
            CallOutcome::Result(result) => result,
            CallOutcome::Closed => self.connection_lost(generation, tool).await,
        };
        if let Some(note) = note {
            result.content = format!("{note}\n{}", result.content);
        }
        result
    }

    /// A peer to send a call on, reconnecting once if the connection is
    /// gone. The note explains a restart to the model.
    async fn peer_for_call(
        &self,
    ) -> Result<(Peer<RoleClient>, u64, Option<String>), McpCallResult> {
        let mut state = self.state.lock().await;
        if state.shut_down {
            return Err(McpCallResult::error(format!(
                "MCP server `{}` has been shut down.",
                self.name
            )));
        }
        if let Some(reason) = &state.down {
            return Err(McpCallResult::error(format!(
                "MCP server `{}` is down: {reason}. Its tools cannot be used in this session; \
                 continue without them.",
                self.name
            )));
        }
        if let Some(conn) = &state.conn
            && !conn.closed()
        {
            return Ok((conn.service.peer().clone(), state.generation, None));
        }
        // The connection is gone (the process exited or the HTTP session
        // ended) before this call.
        let old = state.conn.take();
        let why = match &old {
            Some(conn) => {
                if let Some(stderr) = &conn.stderr {
                    stderr.wait_closed(Duration::from_millis(200)).await;
                }
                tracing::warn!(server = %self.name, "MCP server connection closed{}", conn.stderr_suffix());
                "its connection had closed"
            }
            None => "it was not connected",
        };
        if let Some(old) = old {
            old.close().await;
        }
        if state.restarted {
            let reason = format!("it stopped again after being restarted once ({why})");
            state.down = Some(reason.clone());
            return Err(McpCallResult::error(format!(
                "MCP server `{}` is down: {reason}. Its tools cannot be used in this session; \
                 continue without them.",
                self.name
            )));
        }
        state.restarted = true;
        match open(&self.name, &self.config, &self.env, &self.shared).await {
            Ok(conn) => {
                let peer = conn.service.peer().clone();
                state.conn = Some(conn);
                state.generation += 1;
                tracing::warn!(server = %self.name, "MCP server restarted after its connection closed");
                Ok((
                    peer,
                    state.generation,
                    Some(format!(
                        "[note: MCP server `{}` had stopped ({why}); herald restarted it for this \
                         call. It will not be restarted again in this session.]",
                        self.name
                    )),
                ))
            }
            Err(err) => {
                let reason = format!("it stopped ({why}) and could not be restarted: {err}");
                state.down = Some(reason.clone());
                Err(McpCallResult::error(format!(
                    "MCP server `{}` is down: {reason}. Its tools cannot be used in this session; \
                     continue without them.",
                    self.name
                )))
            }
        }
    }

    /// The connection closed during a call: explain, and decide whether a
    /// restart is still possible.
    async fn connection_lost(&self, generation: u64, tool: &str) -> McpCallResult {
        let mut state = self.state.lock().await;
        let mut stderr = String::new();
        if state.generation == generation
            && let Some(conn) = &state.conn
        {
            if let Some(tail) = &conn.stderr {
                tail.wait_closed(Duration::from_millis(500)).await;
            }
            stderr = conn.stderr_suffix();
        }
        if state.shut_down {
            return McpCallResult::error(format!(
                "MCP server `{}` was shut down during the call to `{tool}`.",
                self.name
            ));
        }
        if state.restarted && state.generation == generation {
            let reason = format!("it stopped during a call to `{tool}` after being restarted once");
            state.down = Some(reason.clone());
            if let Some(conn) = state.conn.take() {
                conn.close().await;
            }
            return McpCallResult::error(format!(
                "MCP server `{}` stopped during this call and is now down: {reason}. Its tools \
                 cannot be used in this session; continue without them.{stderr}",
                self.name
            ));
        }
        McpCallResult::error(format!(
            "MCP server `{}` stopped during this call to `{tool}` (its connection closed); the \
             call's outcome is unknown. herald will restart the server once, on the next call to \
             one of its tools.{stderr}",
            self.name
        ))
    }

    async fn send_call(
        &self,
        peer: &Peer<RoleClient>,
        request: ClientRequest,
        watch: CallWatch,
        cancel: &CancellationToken,
    ) -> CallOutcome {
        let tool = watch.tool.clone();
        let tool = tool.as_str();
        let handle = match peer
            .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(err) => return outcome_of_error(&self.name, tool, err),
        };
        let mut watch = watch;
        watch.request_id = handle.id.clone();
        watch.seq = self
            .shared
            .next_call
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let user_wait = Arc::clone(&watch.user_wait);
        let registration =
            CallRegistration::new(self.shared.clone(), handle.progress_token.clone(), watch);
        let mut guard = CancelGuard {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let timeout = Duration::from_secs(self.config.tool_timeout_sec);
        let started = tokio::time::Instant::now();
        let outcome = tokio::select! {
            response = handle.await_response() => {
                guard.disarm();
                match response {
                    Ok(ServerResult::CallToolResult(result)) => CallOutcome::Result(map_call_result(result)),
                    Ok(ServerResult::InputRequiredResult(_)) => CallOutcome::Result(McpCallResult::error(format!(
                        "MCP tool `{tool}` of server `{}` asked for more input in a multi-round-trip result, which herald does not support yet (elicitation/create requests are).",
                        self.name
                    ))),
                    Ok(ServerResult::CreateTaskResult(_)) => CallOutcome::Result(McpCallResult::error(format!(
                        "MCP tool `{tool}` of server `{}` answered with a task, which herald does not support yet.",
                        self.name
                    ))),
                    Ok(other) => CallOutcome::Result(McpCallResult::error(format!(
                        "MCP server `{}` sent an unexpected answer to the call of `{tool}`: {}",
                        self.name,
                        short_json(&other)
                    ))),
                    Err(err) => outcome_of_error(&self.name, tool, err),
                }
            }
            () = cancel.cancelled() => {
                guard.cancel("cancelled by the user").await;
                CallOutcome::Result(McpCallResult::error(format!(
                    "Interrupted: the call to MCP tool `{tool}` of server `{}` was cancelled.",
                    self.name
                )))
            }
            () = user_wait.expired(started, timeout) => {
                guard.cancel("timed out").await;
                CallOutcome::Result(McpCallResult::error(format!(
                    "MCP tool `{tool}` of server `{}` did not finish within tool_timeout_sec = {} s, \
                     so the call was cancelled. Try a smaller request, or raise tool_timeout_sec in \
                     [mcp_servers.{}] if the tool legitimately needs longer.",
                    self.name, self.config.tool_timeout_sec, self.name
                )))
            }
        };
        drop(registration);
        outcome
    }

    /// Whether the server declared the `resources` capability (resources
    /// can be listed and read).
    pub fn offers_resources(&self) -> bool {
        self.resources
    }

    /// `resources/list`, every page: the server's resources as it sent
    /// them (objects with `uri`, `name`, `mimeType`, `description`...).
    /// Errors are messages for the model.
    pub async fn list_resources(&self, cancel: &CancellationToken) -> Result<Vec<Value>, String> {
        self.list_pages("resources/list", "resources", cancel).await
    }

    /// `resources/templates/list`, every page: objects with `uriTemplate`,
    /// `name`, `mimeType`, `description`...
    pub async fn list_resource_templates(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Vec<Value>, String> {
        self.list_pages("resources/templates/list", "resourceTemplates", cancel)
            .await
    }

    /// `resources/read` of `uri`: the result's `contents` (objects with
    /// `uri`, `mimeType` and `text` or base64 `blob`).
    pub async fn read_resource(
        &self,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<Value>, String> {
        let result = self
            .request(
                "resources/read",
                Some(serde_json::json!({ "uri": uri })),
                cancel,
            )
            .await?;
        match result.get("contents") {
            Some(Value::Array(contents)) => Ok(contents.clone()),
            _ => Err(format!(
                "MCP server `{}` sent a resources/read answer without `contents`: {}",
                self.name,
                short_json(&result)
            )),
        }
    }

    async fn list_pages(
        &self,
        method: &str,
        key: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<Value>, String> {
        let mut items = Vec::new();
        let mut cursor: Option<Value> = None;
        // A bound on pages, against a server that repeats its cursor forever.
        for _ in 0..100 {
            let params = cursor.take().map(|c| serde_json::json!({ "cursor": c }));
            let page = self.request(method, params, cancel).await?;
            match page.get(key) {
                Some(Value::Array(found)) => items.extend(found.iter().cloned()),
                _ => {
                    return Err(format!(
                        "MCP server `{}` sent a {method} answer without `{key}`: {}",
                        self.name,
                        short_json(&page)
                    ));
                }
            }
            match page.get("nextCursor") {
                Some(next) if !next.is_null() && next.as_str() != Some("") => {
                    cursor = Some(next.clone());
                }
                _ => return Ok(items),
            }
        }
        Ok(items)
    }

    /// Sends one request other than a tool call and returns its raw
    /// result: with `tool_timeout_sec`, cancellation, and the restart/down
    /// handling of calls. Errors are messages for the model.
    async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        cancel: &CancellationToken,
    ) -> Result<Value, String> {
        let (peer, generation, _note) = self.peer_for_call().await.map_err(|r| r.content)?;
        let request = ClientRequest::CustomRequest(CustomRequest::new(method.to_owned(), params));
        let handle = match peer
            .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(err) => return Err(self.request_failed(method, err, generation).await),
        };
        let mut guard = CancelGuard {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let timeout = Duration::from_secs(self.config.tool_timeout_sec);
        tokio::select! {
            response = handle.await_response() => {
                guard.disarm();
                match response {
                    Ok(ServerResult::CustomResult(custom)) => Ok(custom.0),
                    Ok(other) => serde_json::to_value(&other).map_err(|e| e.to_string()),
                    Err(err) => Err(self.request_failed(method, err, generation).await),
                }
            }
            () = cancel.cancelled() => {
                guard.cancel("cancelled by the user").await;
                Err(format!("Interrupted: the {method} request to MCP server `{}` was cancelled.", self.name))
            }
            () = tokio::time::sleep(timeout) => {
                guard.cancel("timed out").await;
                Err(format!(
                    "MCP server `{}` did not answer {method} within tool_timeout_sec = {} s. Try                      again later, or raise tool_timeout_sec in [mcp_servers.{}].",
                    self.name, self.config.tool_timeout_sec, self.name
                ))
            }
        }
    }

    async fn request_failed(&self, method: &str, err: ServiceError, generation: u64) -> String {
        match outcome_of_error(&self.name, method, err) {
            CallOutcome::Result(result) => result.content,
            CallOutcome::Closed => self.connection_lost(generation, method).await.content,
        }
    }

    /// Stops the server: a stdio server's stdin is closed, then its whole
    /// process group killed (within about two seconds); an HTTP session is
    /// closed. Calls after this fail with an error result.
    pub async fn shutdown(&self) {
        let mut state = self.state.lock().await;
        state.shut_down = true;
        if let Some(conn) = state.conn.take() {
            conn.close().await;
        }
    }
}

enum CallOutcome {
    Result(McpCallResult),
    /// The transport closed: the server is gone.
    Closed,
}

fn outcome_of_error(server: &str, tool: &str, err: ServiceError) -> CallOutcome {
    match err {
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => CallOutcome::Closed,
        ServiceError::McpError(data) => CallOutcome::Result(McpCallResult::error(format!(
            "MCP server `{server}` rejected the call to `{tool}`: {} (code {})",
            data.message, data.code.0
        ))),
        other => CallOutcome::Result(McpCallResult::error(format!(
            "calling MCP tool `{tool}` of server `{server}` failed: {other}"
        ))),
    }
}

fn short_json(value: &impl serde::Serialize) -> String {
    let mut text = serde_json::to_string(value).unwrap_or_default();
    if text.len() > 300 {
        let mut cut = 300;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// Who hears about one call's progress and answers its elicitations.
#[derive(Clone)]
struct CallWatch {
    tool: String,
    call_id: String,
    /// Overrides the server's sink for this call.
    sink: Option<ProgressSink>,
    /// Answers the server's requests for user input during the call (none:
    /// they are declined).
    elicit: Option<ElicitationHandler>,
    /// The `tools/call` request's id (set when it is sent).
    request_id: RequestId,
    /// Order of the calls to this server (set when it is sent).
    seq: u64,
    /// Time spent waiting for the user, which the timeout leaves out.
    user_wait: Arc<UserWait>,
}

impl CallWatch {
    fn new(
        tool: &str,
        call_id: &str,
        sink: Option<ProgressSink>,
        elicit: Option<ElicitationHandler>,
    ) -> Self {
        Self {
            tool: tool.to_owned(),
            call_id: call_id.to_owned(),
            sink,
            elicit,
            request_id: RequestId::Number(0),
            seq: 0,
            user_wait: Arc::default(),
        }
    }
}

/// How long a call has been waiting for the user's answers.
#[derive(Default)]
struct UserWait {
    state: StdMutex<UserWaitState>,
}

#[derive(Default)]
struct UserWaitState {
    open: u32,
    since: Option<std::time::Instant>,
    total: Duration,
}

/// One question to the user in progress; ends on drop.
struct Waiting<'a>(&'a UserWait);

impl UserWait {
    fn begin(&self) -> Waiting<'_> {
        if let Ok(mut state) = self.state.lock() {
            state.open += 1;
            if state.open == 1 {
                state.since = Some(std::time::Instant::now());
            }
        }
        Waiting(self)
    }

    /// Time spent waiting so far, and whether a question is open now.
    fn paused(&self) -> (Duration, bool) {
        match self.state.lock() {
            Ok(state) => {
                let running = state.since.map(|s| s.elapsed()).unwrap_or_default();
                (state.total + running, state.open > 0)
            }
            Err(_) => (Duration::ZERO, false),
        }
    }

    /// Resolves once the call has run for `limit`, not counting the time
    /// spent waiting for the user.
    async fn expired(&self, start: tokio::time::Instant, limit: Duration) {
        loop {
            let (paused, open) = self.paused();
            if open {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            let ran = start.elapsed().saturating_sub(paused);
            if ran >= limit {
                return;
            }
            tokio::time::sleep(limit - ran).await;
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Ok(mut state) = self.0.state.lock() {
            state.open = state.open.saturating_sub(1);
            if state.open == 0
                && let Some(since) = state.since.take()
            {
                state.total += since.elapsed();
            }
        }
    }
}

/// Maps a call's progress token to its tool while it runs.
struct CallRegistration {
    shared: Arc<Shared>,
    token: ProgressToken,
}

impl CallRegistration {
    fn new(shared: Arc<Shared>, token: ProgressToken, watch: CallWatch) -> Self {
        if let Ok(mut calls) = shared.calls.lock() {
            calls.insert(token.clone(), watch);
        }
        Self { shared, token }
    }
}

impl Drop for CallRegistration {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.shared.calls.lock() {
            calls.remove(&self.token);
        }
    }
}

/// Sends `notifications/cancelled` for a request that is abandoned: by
/// [`CancelGuard::cancel`], or on drop (the call's future was dropped).
struct CancelGuard {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

fn cancelled_notification(id: RequestId, reason: &str) -> ClientNotification {
    ClientNotification::CancelledNotification(CancelledNotification::new(
        CancelledNotificationParam::new(Some(id), Some(reason.to_owned())),
    ))
}

impl CancelGuard {
    fn disarm(&mut self) {
        self.id = None;
    }

    async fn cancel(&mut self, reason: &str) {
        if let Some(id) = self.id.take() {
            let _ = self
                .peer
                .send_notification(cancelled_notification(id, reason))
                .await;
        }
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(id) = self.id.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let peer = self.peer.clone();
            runtime.spawn(async move {
                let _ = peer
                    .send_notification(cancelled_notification(id, "request abandoned"))
                    .await;
            });
        }
    }
}

/// Starts the transport and runs `initialize`, within the startup timeout.
async fn open(
    name: &str,
    config: &McpServerConfig,
    env: &EnvFilter,
    shared: &Arc<Shared>,
) -> Result<Connection, McpError> {
    let handler = Handler {
        server: name.to_owned(),
        shared: shared.clone(),
    };
    let seconds = config.startup_timeout_sec;
    let limit = Duration::from_secs(seconds);
    if let Some(url) = &config.url {
        let transport = http_transport(name, url, config)?;
        return match tokio::time::timeout(limit, handler.serve(transport)).await {
            Ok(Ok(service)) => Ok(Connection {
                service,
                group: None,
                stderr: None,
            }),
            Ok(Err(err)) => Err(McpError::Startup {
                server: name.to_owned(),
                message: format!("cannot initialize a session at {url}: {}", root_cause(&err)),
                stderr: String::new(),
            }),
            Err(_) => Err(McpError::StartupTimeout {
                server: name.to_owned(),
                seconds,
                stage: "no answer to initialize",
                stderr: String::new(),
            }),
        };
    }
    let command = config.command.clone().unwrap_or_default();
    let mut cmd = tokio::process::Command::new(&command);
    cmd.args(&config.args);
    env.apply(&mut cmd);
    cmd.envs(&config.env);
    if let Some(cwd) = &config.cwd {
        cmd.current_dir(cwd);
    }
    // Its own process group, so shutdown also stops what it starts
    // (`npx` runs the server as a grandchild).
    cmd.process_group(0);
    cmd.kill_on_drop(true);
    let (process, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| McpError::Spawn {
            server: name.to_owned(),
            command: describe_command(config),
            source,
        })?;
    let group = process.id().map(|pid| ProcessGroup {
        pgid: pid as i32,
        pid,
    });
    let tail = Arc::new(StderrTail::default());
    if let Some(mut stderr) = stderr {
        let tail = tail.clone();
        let server = name.to_owned();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            loop {
                match stderr.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        tracing::debug!(server = %server, "stderr: {}", String::from_utf8_lossy(&buf[..n]).trim_end());
                        if let Ok(mut bytes) = tail.bytes.lock() {
                            bytes.extend(&buf[..n]);
                            let excess = bytes.len().saturating_sub(STDERR_TAIL);
                            bytes.drain(..excess);
                        }
                    }
                }
            }
            tail.finished
                .store(true, std::sync::atomic::Ordering::Release);
            tail.done.notify_waiters();
        });
    }
    match tokio::time::timeout(limit, handler.serve(process)).await {
        Ok(Ok(service)) => Ok(Connection {
            service,
            group,
            stderr: Some(tail),
        }),
        Ok(Err(err)) => {
            drop(group);
            tail.wait_closed(Duration::from_millis(500)).await;
            Err(McpError::Startup {
                server: name.to_owned(),
                message: format!(
                    "`{}` exited or broke the protocol before answering initialize ({err})",
                    describe_command(config)
                ),
                stderr: tail.suffix(),
            })
        }
        Err(_) => {
            drop(group);
            tail.wait_closed(Duration::from_millis(200)).await;
            Err(McpError::StartupTimeout {
                server: name.to_owned(),
                seconds,
                stage: "no answer to initialize",
                stderr: tail.suffix(),
            })
        }
    }
}

/// The innermost error of `err`'s source chain: for an HTTP server that
/// cannot be reached, "Connection refused" rather than rmcp's transport
/// type names.
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = err;
    while let Some(source) = inner.source() {
        inner = source;
    }
    inner.to_string()
}

fn http_transport(
    name: &str,
    url: &str,
    config: &McpServerConfig,
) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, McpError> {
    let err = |message: String| McpError::Config {
        server: name.to_owned(),
        message,
    };
    // reqwest is built without a default TLS provider (the workspace picks
    // ring); installing it twice is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .build()
        .map_err(|e| err(format!("cannot build an HTTP client: {e}")))?;
    let mut transport_config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(var) = &config.bearer_token_env_var {
        let token = std::env::var(var).map_err(|_| {
            err(format!(
                "bearer_token_env_var names `{var}`, which is not set (or not UTF-8); export it \
                 or remove bearer_token_env_var from [mcp_servers.{name}]"
            ))
        })?;
        transport_config = transport_config.auth_header(token);
    }
    let mut headers = std::collections::HashMap::new();
    for (key, value) in &config.headers {
        let key = reqwest::header::HeaderName::from_bytes(key.as_bytes())
            .map_err(|e| err(format!("headers: `{key}`: {e}")))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|e| err(format!("headers: value of `{key}`: {e}")))?;
        headers.insert(key, value);
    }
    transport_config = transport_config.custom_headers(headers);
    Ok(rmcp::transport::StreamableHttpClientTransport::with_client(
        client,
        transport_config,
    ))
}

/// Lists the server's tools, page by page, within the startup timeout.
/// Parsed tool by tool so one malformed tool does not lose the others.
async fn list_tools(
    name: &str,
    conn: &Connection,
    config: &McpServerConfig,
) -> Result<(Vec<McpToolInfo>, Vec<SkippedTool>), McpError> {
    let seconds = config.startup_timeout_sec;
    let peer = conn.service.peer().clone();
    let raw = match tokio::time::timeout(Duration::from_secs(seconds), list_raw(&peer)).await {
        Ok(Ok(raw)) => raw,
        Ok(Err(message)) => {
            return Err(McpError::Startup {
                server: name.to_owned(),
                message: format!("tools/list failed: {message}"),
                stderr: conn.stderr_suffix(),
            });
        }
        Err(_) => {
            return Err(McpError::StartupTimeout {
                server: name.to_owned(),
                seconds,
                stage: "no answer to tools/list",
                stderr: conn.stderr_suffix(),
            });
        }
    };
    Ok(select_tools(name, config, raw))
}

async fn list_raw(peer: &Peer<RoleClient>) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    // A bound on pages, against a server that repeats its cursor forever.
    for _ in 0..1000 {
        let params = cursor.take().map(|c| serde_json::json!({ "cursor": c }));
        let response = peer
            .send_request(ClientRequest::CustomRequest(CustomRequest::new(
                "tools/list",
                params,
            )))
            .await
            .map_err(|e| e.to_string())?;
        let value = match response {
            ServerResult::CustomResult(custom) => custom.0,
            other => serde_json::to_value(&other).map_err(|e| e.to_string())?,
        };
        match value.get("tools") {
            Some(Value::Array(page)) => tools.extend(page.iter().cloned()),
            _ => {
                return Err(format!(
                    "the answer has no `tools` list: {}",
                    short_json(&value)
                ));
            }
        }
        match value.get("nextCursor") {
            Some(next) if !next.is_null() && next.as_str() != Some("") => {
                cursor = Some(next.clone())
            }
            _ => return Ok(tools),
        }
    }
    Err("more than 1000 pages of tools".to_owned())
}

fn glob_set(patterns: &[String]) -> Option<globset::GlobSet> {
    if patterns.is_empty() {
        return None;
    }
    let mut builder = globset::GlobSetBuilder::new();
    for pattern in patterns {
        // Validated with the config.
        if let Ok(glob) = globset::Glob::new(pattern) {
            builder.add(glob);
        }
    }
    builder.build().ok()
}

/// Filters, normalises and names the listed tools.
fn select_tools(
    server: &str,
    config: &McpServerConfig,
    raw: Vec<Value>,
) -> (Vec<McpToolInfo>, Vec<SkippedTool>) {
    let include = glob_set(&config.include_tools);
    let exclude = glob_set(&config.exclude_tools);
    let mut skipped = Vec::new();
    let mut accepted: BTreeMap<String, (String, Value, bool)> = BTreeMap::new();
    for (index, tool) in raw.into_iter().enumerate() {
        let Some(name) = tool
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            skipped.push(SkippedTool {
                name: format!("#{index}"),
                reason: "it has no name".to_owned(),
            });
            continue;
        };
        if include.as_ref().is_some_and(|set| !set.is_match(name))
            || exclude.as_ref().is_some_and(|set| set.is_match(name))
        {
            continue;
        }
        if accepted.contains_key(name) {
            skipped.push(SkippedTool {
                name: name.to_owned(),
                reason: "the server listed a tool of this name twice".to_owned(),
            });
            continue;
        }
        let schema = match normalize_input_schema(tool.get("inputSchema")) {
            Ok(schema) => schema,
            Err(reason) => {
                tracing::warn!(server, tool = name, "MCP tool skipped: {reason}");
                skipped.push(SkippedTool {
                    name: name.to_owned(),
                    reason,
                });
                continue;
            }
        };
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| tool.get("title").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        let read_only = tool
            .pointer("/annotations/readOnlyHint")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        accepted.insert(name.to_owned(), (description, schema, read_only));
    }
    let names = exposed_names(server, accepted.keys().map(String::as_str));
    let mut tools: Vec<McpToolInfo> = accepted
        .into_iter()
        .map(
            |(name, (description, input_schema, read_only_hint))| McpToolInfo {
                server: server.to_owned(),
                exposed_name: names.get(&name).cloned().unwrap_or_default(),
                description,
                input_schema,
                read_only_hint,
                name,
            },
        )
        .collect();
    tools.sort_by(|a, b| a.exposed_name.cmp(&b.exposed_name));
    (tools, skipped)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn select_tools_filters_normalises_and_sorts() {
        let mut config = McpServerConfig::stdio("x", Vec::<String>::new());
        config.exclude_tools = vec!["secret*".into()];
        let raw = vec![
            json!({"name": "zeta", "inputSchema": {"type": "object"}}),
            json!({"name": "alpha", "description": "A", "inputSchema": {"properties": {}},
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "secret-thing", "inputSchema": {"type": "object"}}),
            json!({"name": "bad", "inputSchema": {"type": "string"}}),
            json!({"inputSchema": {}}),
        ];
        let (tools, skipped) = select_tools("srv", &config, raw);
        let names: Vec<_> = tools.iter().map(|t| t.exposed_name.as_str()).collect();
        assert_eq!(names, ["mcp__srv__alpha", "mcp__srv__zeta"]);
        assert!(tools[0].read_only_hint);
        assert!(!tools[1].read_only_hint);
        assert_eq!(
            tools[0].input_schema,
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(skipped.len(), 2);
        assert_eq!(skipped[0].name, "bad");

        config.exclude_tools.clear();
        config.include_tools = vec!["z*".into()];
        let (tools, _) = select_tools(
            "srv",
            &config,
            vec![json!({"name": "zeta"}), json!({"name": "alpha"})],
        );
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "zeta");
    }

    #[test]
    fn toolset_names_are_interned() {
        let a = toolset_name("fs");
        let b = toolset_name("fs");
        assert_eq!(a, "mcp-fs");
        assert!(std::ptr::eq(a, b));
    }
}
