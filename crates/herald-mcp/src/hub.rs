//! The MCP servers of one herald process: started once, concurrently, in
//! the background, and shared by every session and agent of the process.
//!
//! A session takes its MCP tools from [`McpHub::session_tools`] when it
//! starts, and that list stays fixed for the session (the prompt prefix
//! must not change). A server already up gives its live list; one still
//! starting gives the list it had last time ([`ToolCache`]) when its
//! configuration has not changed since, so the first request does not wait
//! for it; otherwise the session waits for it, at most until its
//! `startup_timeout_sec` runs out, and a server not up by then is reported
//! `late` and its tools come in the next session.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use herald_sandbox::EnvFilter;
use herald_tools::Tool;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::cache::{CachedServer, ToolCache, fingerprint};
use crate::config::McpServerConfig;
use crate::search::search_tools;
use crate::server::{McpServer, McpToolInfo, toolset_name};
use crate::tool::tools_of;

/// Time past a server's startup deadline that a session still waits for
/// the server's own timeout to report why it failed.
const SETTLE_GRACE: Duration = Duration::from_millis(500);

/// Where a server is in its start.
#[derive(Clone, Debug)]
pub enum ServerState {
    /// Starting (spawned, initialising or listing tools).
    Starting,
    /// Up; calls go to it.
    Ready(Arc<McpServer>),
    /// It could not be started; the message says why and what to change.
    Failed(String),
}

/// One configured, enabled server of the process, whatever its state.
#[derive(Debug)]
pub struct ServerHandle {
    name: String,
    toolset: &'static str,
    config: McpServerConfig,
    fingerprint: String,
    /// When the servers of its hub were launched; the server must be up
    /// `startup_timeout_sec` later.
    launch: Arc<Launch>,
    state: watch::Receiver<ServerState>,
}

impl ServerHandle {
    /// A handle for a server that is already connected.
    pub fn ready(server: Arc<McpServer>) -> Arc<Self> {
        let config = server.config().clone();
        let (_, state) = watch::channel(ServerState::Ready(Arc::clone(&server)));
        Arc::new(Self {
            name: server.name().to_owned(),
            toolset: server.toolset(),
            fingerprint: fingerprint(&config),
            config,
            launch: Launch::now(),
            state,
        })
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `mcp-<name>`.
    pub fn toolset(&self) -> &'static str {
        self.toolset
    }

    /// The configuration it was started with.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// Its state right now.
    pub fn state(&self) -> ServerState {
        self.state.borrow().clone()
    }

    /// Waits until the server is up or has failed, but not past its
    /// startup deadline (plus a little for its own timeout to report).
    /// Waiting starts a server its hub deferred.
    pub async fn settled(&self) -> ServerState {
        self.settle(true).await
    }

    async fn settle(&self, launch: bool) -> ServerState {
        let launched_at = if launch {
            self.launch.release()
        } else {
            match self.launch.launched().await {
                Some(at) => at,
                None => return self.state(),
            }
        };
        let mut state = self.state.clone();
        let settled = state.wait_for(|s| !matches!(s, ServerState::Starting));
        let deadline = launched_at + Duration::from_secs(self.config.startup_timeout_sec);
        match tokio::time::timeout_at(deadline + SETTLE_GRACE, settled).await {
            Ok(Ok(found)) => found.clone(),
            // The sender is gone (the process is shutting down) or time is up.
            _ => self.state(),
        }
    }

    /// The live server for a call: waits for it to finish starting.
    pub async fn server(&self) -> Result<Arc<McpServer>, String> {
        match self.settled().await {
            ServerState::Ready(server) => Ok(server),
            ServerState::Failed(message) => Err(message),
            ServerState::Starting => Err(format!(
                "MCP server `{}` did not finish starting within startup_timeout_sec = {} s",
                self.name, self.config.startup_timeout_sec
            )),
        }
    }
}

/// What became of a server for one session (the `mcp.server` event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReport {
    pub server: String,
    pub status: ServerStatus,
    /// Tools of the server this session offers.
    pub tools: usize,
    pub message: Option<String>,
}

/// See [`ServerReport`]; the protocol's [`herald_protocol::McpServerStatus`].
pub use herald_protocol::McpServerStatus as ServerStatus;

/// A server whose final state a session learns after it started.
#[derive(Debug, Clone)]
pub struct PendingServer {
    handle: Arc<ServerHandle>,
    /// The tools the session lists for it (from the cache, or none).
    listed: Vec<McpToolInfo>,
}

impl PendingServer {
    /// The server's name.
    pub fn name(&self) -> &str {
        &self.handle.name
    }

    /// Waits for the server to settle and says how that compares to what
    /// the session lists: `ready` (same tools), `changed`, `failed`, or
    /// `late` again when it is still not up. Never waits past the
    /// server's startup deadline.
    pub async fn outcome(&self) -> ServerReport {
        let handle = &self.handle;
        let report = |status, message: Option<String>| ServerReport {
            server: handle.name.clone(),
            status,
            tools: self.listed.len(),
            message,
        };
        match handle.settle(false).await {
            ServerState::Ready(server) if server.tools() == self.listed.as_slice() => {
                report(ServerStatus::Ready, None)
            }
            ServerState::Ready(server) if self.listed.is_empty() => report(
                ServerStatus::Late,
                Some(format!(
                    "it is up now with {} tools; they are offered from the next session on",
                    server.tools().len()
                )),
            ),
            ServerState::Ready(server) => report(
                ServerStatus::Changed,
                Some(format!(
                    "it now lists {} tools where this session offers {}; the new list applies \
                     from the next session",
                    server.tools().len(),
                    self.listed.len()
                )),
            ),
            ServerState::Failed(message) => report(ServerStatus::Failed, Some(message)),
            ServerState::Starting => report(
                ServerStatus::Late,
                Some(format!(
                    "not up within startup_timeout_sec = {} s",
                    handle.config.startup_timeout_sec
                )),
            ),
        }
    }
}

/// The MCP tools a session starts with.
pub struct SessionTools {
    /// The tools, sorted by name.
    pub tools: Vec<Arc<dyn Tool>>,
    /// One report per enabled server, in name order.
    pub reports: Vec<ServerReport>,
    /// Servers still starting whose tools were listed from the cache or
    /// left out: their final state is for a later event.
    pub pending: Vec<PendingServer>,
    /// About how many tokens the MCP tool schemas take.
    pub schema_tokens: usize,
    /// The schemas were over budget: the tools are reached through
    /// `mcp_search` / `mcp_call` instead of being listed.
    pub searchable: bool,
}

/// The MCP servers of one process.
#[derive(Debug)]
pub struct McpHub {
    handles: Vec<Arc<ServerHandle>>,
    cached: BTreeMap<String, CachedServer>,
    launch: Arc<Launch>,
}

/// When a hub's servers may start: at once, or once released.
#[derive(Debug)]
struct Launch {
    go: watch::Sender<bool>,
    at: std::sync::Mutex<Instant>,
}

impl Launch {
    /// Launched now.
    fn now() -> Arc<Self> {
        Self::new(true)
    }

    fn new(launched: bool) -> Arc<Self> {
        Arc::new(Self {
            go: watch::channel(launched).0,
            at: std::sync::Mutex::new(Instant::now()),
        })
    }

    /// Waits for the launch (without causing it) and returns when it
    /// happened; `None` when the hub is gone first.
    async fn launched(&self) -> Option<Instant> {
        let mut go = self.go.subscribe();
        go.wait_for(|go| *go).await.ok()?;
        Some(
            *self
                .at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Launches (if not yet) and returns when that happened.
    fn release(&self) -> Instant {
        let mut at = self
            .at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !*self.go.borrow() {
            *at = Instant::now();
            self.go.send_replace(true);
        }
        *at
    }
}

impl Default for McpHub {
    fn default() -> Self {
        Self {
            handles: Vec::new(),
            cached: BTreeMap::new(),
            launch: Launch::now(),
        }
    }
}

impl McpHub {
    /// A hub with no servers.
    pub fn empty() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Starts every enabled server of `servers` in the background and
    /// returns at once (call it inside a tokio runtime). stdio servers get
    /// herald's environment filtered by `env` plus their own `env`. With a
    /// `cache`, its entries serve sessions while servers start, and every
    /// server that comes up records its tools there.
    pub fn start(
        servers: &BTreeMap<String, McpServerConfig>,
        env: &EnvFilter,
        cache: Option<ToolCache>,
    ) -> Arc<Self> {
        Self::start_with(servers, env, cache, true)
    }

    /// [`McpHub::start`], except that no server process is started until
    /// [`McpHub::release`], a session that has to wait for a server (no
    /// usable cached tool list), or a call needing one. A one-shot run uses
    /// it to send its first model request before three `node` processes
    /// compete with it for the CPU; the servers then start while the model
    /// thinks.
    pub fn start_deferred(
        servers: &BTreeMap<String, McpServerConfig>,
        env: &EnvFilter,
        cache: Option<ToolCache>,
    ) -> Arc<Self> {
        Self::start_with(servers, env, cache, false)
    }

    fn start_with(
        servers: &BTreeMap<String, McpServerConfig>,
        env: &EnvFilter,
        cache: Option<ToolCache>,
        launched: bool,
    ) -> Arc<Self> {
        let cache = cache.map(Arc::new);
        let cached = cache.as_ref().map(|c| c.load()).unwrap_or_default();
        let launch = Launch::new(launched);
        let handles = servers
            .iter()
            .filter(|(_, config)| config.enabled)
            .map(|(name, config)| spawn_server(name, config, env, cache.clone(), &launch))
            .collect();
        Arc::new(Self {
            handles,
            cached,
            launch,
        })
    }

    /// Starts the servers of a deferred hub (nothing when they started).
    pub fn release(&self) {
        self.launch.release();
    }

    /// Every started server, in name order.
    pub fn servers(&self) -> &[Arc<ServerHandle>] {
        &self.handles
    }

    /// The tools for a session that starts now (see the module docs).
    /// When their schemas together take more than `schema_budget` tokens,
    /// they are not listed one by one: `mcp_search` finds them and
    /// `mcp_call` runs them.
    pub async fn session_tools(&self, schema_budget: Option<usize>) -> SessionTools {
        // A server without a usable cached list is waited for: start them.
        if self.handles.iter().any(|h| {
            matches!(h.state(), ServerState::Starting)
                && self
                    .cached
                    .get(&h.name)
                    .is_none_or(|c| c.fingerprint != h.fingerprint)
        }) {
            self.release();
        }
        let picks = futures_util::future::join_all(self.handles.iter().map(|h| self.pick(h))).await;
        let schema_tokens: usize = picks
            .iter()
            .flat_map(|(infos, _, _)| infos.iter())
            .map(McpToolInfo::schema_tokens)
            .sum();
        let searchable = schema_budget.is_some_and(|budget| schema_tokens > budget);
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut reports = Vec::new();
        let mut pending = Vec::new();
        let mut catalog = Vec::new();
        for (handle, (listed, report, waiting)) in self.handles.iter().zip(picks) {
            tools.extend(tools_of(handle, &listed, !searchable));
            if searchable {
                catalog.extend(listed.iter().cloned());
            }
            if waiting {
                pending.push(PendingServer {
                    handle: Arc::clone(handle),
                    listed,
                });
            }
            reports.push(report);
        }
        if searchable {
            catalog.sort_by(|a, b| a.exposed_name.cmp(&b.exposed_name));
            tools.extend(search_tools(catalog));
        }
        // mcp_list_resources / mcp_read_resource: offered whenever a server
        // is configured, so the list depends only on the configuration.
        let with_tools = tools.iter().map(|t| t.toolset()).collect();
        tools.extend(crate::resources::resource_tools(&self.handles, with_tools));
        tools.sort_by(|a, b| a.spec().name.cmp(&b.spec().name));
        SessionTools {
            tools,
            reports,
            pending,
            schema_tokens,
            searchable,
        }
    }

    /// One server's tools for a new session, its report, and whether its
    /// final state is still to come.
    async fn pick(&self, handle: &Arc<ServerHandle>) -> (Vec<McpToolInfo>, ServerReport, bool) {
        let report = |status, tools: usize, message| ServerReport {
            server: handle.name.clone(),
            status,
            tools,
            message,
        };
        let mut state = handle.state();
        if matches!(state, ServerState::Starting) {
            if let Some(entry) = self
                .cached
                .get(&handle.name)
                .filter(|c| c.fingerprint == handle.fingerprint)
            {
                let count = entry.tools.len();
                return (
                    entry.tools.clone(),
                    report(
                        ServerStatus::Cached,
                        count,
                        Some("starting; its tools are listed as they were last time".to_owned()),
                    ),
                    true,
                );
            }
            state = handle.settled().await;
        }
        match state {
            ServerState::Ready(server) => {
                let tools = server.tools().to_vec();
                let count = tools.len();
                let skipped = server.skipped_tools();
                let message = (!skipped.is_empty()).then(|| {
                    let names: Vec<String> = skipped
                        .iter()
                        .map(|s| format!("{} ({})", s.name, s.reason))
                        .collect();
                    format!("tools left out: {}", names.join("; "))
                });
                (tools, report(ServerStatus::Ready, count, message), false)
            }
            ServerState::Failed(message) => (
                Vec::new(),
                report(ServerStatus::Failed, 0, Some(message)),
                false,
            ),
            ServerState::Starting => (
                Vec::new(),
                report(
                    ServerStatus::Late,
                    0,
                    Some(format!(
                        "not up within startup_timeout_sec = {} s; its tools come in the next \
                         session once it starts",
                        handle.config.startup_timeout_sec
                    )),
                ),
                true,
            ),
        }
    }

    /// Stops every server that is up (stdio processes are ended).
    pub async fn shutdown(&self) {
        let servers = self.handles.iter().filter_map(|h| match h.state() {
            ServerState::Ready(server) => Some(server),
            _ => None,
        });
        futures_util::future::join_all(servers.map(|s| async move { s.shutdown().await })).await;
    }
}

fn spawn_server(
    name: &str,
    config: &McpServerConfig,
    env: &EnvFilter,
    cache: Option<Arc<ToolCache>>,
    launch: &Arc<Launch>,
) -> Arc<ServerHandle> {
    let (tx, rx) = watch::channel(ServerState::Starting);
    let handle = Arc::new(ServerHandle {
        name: name.to_owned(),
        toolset: toolset_name(name),
        config: config.clone(),
        fingerprint: fingerprint(config),
        launch: Arc::clone(launch),
        state: rx,
    });
    let (name, config, env) = (name.to_owned(), config.clone(), env.clone());
    let fingerprint = handle.fingerprint.clone();
    let mut go = launch.go.subscribe();
    tokio::spawn(async move {
        if go.wait_for(|go| *go).await.is_err() {
            // The hub is gone before it launched anything.
            return;
        }
        let state = match McpServer::connect(&name, &config, &env).await {
            Ok(server) => {
                if let Some(cache) = cache {
                    let entry = CachedServer {
                        fingerprint,
                        tools: server.tools().to_vec(),
                    };
                    let server_name = name.clone();
                    tokio::task::spawn_blocking(move || cache.store(&server_name, entry));
                }
                ServerState::Ready(server)
            }
            Err(err) => {
                tracing::warn!(server = %name, "{err}");
                ServerState::Failed(err.to_string())
            }
        };
        // With nobody listening (the hub is gone) the server is dropped
        // here, which ends its process; receivers keep the last value.
        let _ = tx.send(state);
    });
    handle
}
