//! herald as an MCP server (rmcp): `herald mcp serve` over stdio, and the
//! streamable-HTTP endpoint `/mcp` of `herald serve`. Other MCP clients
//! (Claude Code, Codex, IDEs) get herald's agent as tools:
//!
//! - `run {prompt, session_id?, toolsets?}`: one agent turn with its whole
//!   tool loop; answers with the final message and the session id (pass it
//!   back to continue). With a `progressToken`, one progress notification
//!   per tool call and per reply with text; cancelling the request
//!   interrupts the turn.
//! - `delegate` (same arguments): the turn runs in the background; the
//!   answer is an agent id for `agent_status` and `agent_result {agent_id,
//!   wait?}`.
//! - `session_search`: herald's full-text search over stored sessions.
//!
//! Sessions are opened through the same [`AppState`] as `herald serve`'s
//! other endpoints, without a person to ask: `clarify` tells the model to
//! decide, and calls the permission policy asks about are denied
//! (`ApprovalMode::Headless`) unless the server runs with `--yolo`. The
//! permission mode is the server's (`--mode`).
//!
//! MCP tasks (the SEP-2663 extension rmcp 3 implements) are not offered:
//! a server may answer with a task only to clients that declare the
//! extension, which common clients (the official Python SDK among them)
//! do not; `delegate` gives every client background work instead.

mod agents;
mod run;
mod search;
mod tools;
mod turn;

use std::future::Future;
use std::sync::Arc;

use herald_core::{Settings, StoreHandle};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use tokio_util::sync::CancellationToken;

use crate::server::{DEFAULT_MAX_OPEN_SESSIONS, DEFAULT_MAX_TURNS};
use crate::state::AppState;

/// What `herald mcp serve` needs.
pub struct McpConfig {
    /// The resolved settings; `permissions.mode` is the `--mode` every
    /// session runs with, `toolsets` the default of new sessions.
    pub settings: Settings,
    /// The session store (`$HERALD_HOME/state.db`).
    pub store: StoreHandle,
    /// `--yolo`: calls the permission policy asks about run (the floor and
    /// deny rules still hold); otherwise they are denied.
    pub yolo: bool,
}

/// Why the stdio server could not run.
#[derive(Debug, thiserror::Error)]
pub enum McpServeError {
    /// The client never completed the MCP handshake.
    #[error(
        "the MCP client did not initialize the connection: {0}; herald mcp serve speaks MCP on stdin/stdout and is started by an MCP client (e.g. `claude mcp add herald -- herald mcp serve`)"
    )]
    Initialize(String),
    /// The serving task failed.
    #[error("the MCP server failed: {0}")]
    Failed(String),
}

/// What every MCP connection of one server shares.
pub(crate) struct McpShared {
    state: Arc<AppState>,
    agents: agents::Agents,
    catalog: tools::Catalog,
}

impl McpShared {
    pub(crate) fn new(state: Arc<AppState>) -> Arc<Self> {
        let catalog = tools::Catalog::new(search::schema(&state.store));
        Arc::new(Self {
            state,
            agents: agents::Agents::default(),
            catalog,
        })
    }
}

/// The MCP handler: one per connection (per MCP session over HTTP), all
/// sharing one [`McpShared`].
#[derive(Clone)]
pub(crate) struct McpServer {
    shared: Arc<McpShared>,
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("herald", env!("CARGO_PKG_VERSION"))
                    .with_title("herald agent runtime"),
            )
            .with_instructions(
                "herald runs an AI agent with its own tools in the server's working directory. \
                 Use run for a task you wait for (pass the returned session_id to continue), \
                 delegate + agent_status + agent_result for background work, and \
                 session_search to find earlier sessions.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.shared.catalog.all().to_vec(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.catalog.find(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let shared = &self.shared;
        let Some(tool) = shared.catalog.find(&request.name) else {
            let names: Vec<&str> = shared
                .catalog
                .all()
                .iter()
                .map(|t| t.name.as_ref())
                .collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "herald has no tool '{}'; its tools are {}",
                    request.name,
                    names.join(", ")
                ),
                None,
            ));
        };
        let arguments = request.arguments;
        let result = match tool.name.as_ref() {
            tools::RUN => run::call(&shared.state, tool, arguments, &context).await,
            tools::DELEGATE => shared.agents.delegate(&shared.state, tool, arguments).await,
            tools::AGENT_STATUS => shared.agents.status(tool, arguments),
            tools::AGENT_RESULT => shared.agents.result(tool, arguments, &context).await,
            _ => {
                search::search(
                    &shared.state.store,
                    &shared.state.settings.cwd,
                    tool,
                    arguments,
                )
                .await
            }
        };
        Ok(result.into())
    }
}

/// Serves MCP on stdin/stdout until the client closes stdin or `shutdown`
/// resolves; then ends every session it opened (running turns are
/// interrupted, their tool processes stopped, leases released). Nothing
/// but MCP messages is written to stdout.
pub async fn serve_mcp_stdio(
    config: McpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), McpServeError> {
    let state = Arc::new(AppState::new(
        config.settings,
        config.store,
        DEFAULT_MAX_TURNS,
        DEFAULT_MAX_OPEN_SESSIONS,
        config.yolo,
    ));
    let server = McpServer {
        shared: McpShared::new(Arc::clone(&state)),
    };
    let stop = CancellationToken::new();
    let on_signal = stop.clone();
    let signal = tokio::spawn(async move {
        shutdown.await;
        on_signal.cancel();
    });
    let outcome = match server
        .serve_with_ct(rmcp::transport::stdio_pipes(), stop.clone())
        .await
    {
        Ok(running) => {
            tracing::info!("herald mcp serve: client initialized");
            running
                .waiting()
                .await
                .map(|reason| tracing::info!(?reason, "herald mcp serve: connection closed"))
                .map_err(|err| McpServeError::Failed(err.to_string()))
        }
        Err(err) if stop.is_cancelled() => {
            tracing::info!(%err, "herald mcp serve: stopped before the client initialized");
            Ok(())
        }
        Err(err) => Err(McpServeError::Initialize(err.to_string())),
    };
    signal.abort();
    state.close_all().await;
    outcome
}

/// The streamable-HTTP MCP service `herald serve` mounts at `/mcp`, over
/// the same sessions as its other routes. `cancel` ends its streams at
/// shutdown; `loopback` keeps rmcp's DNS-rebinding guard (only loopback
/// `Host` headers) when the server listens on loopback only.
pub(crate) fn http_service(
    state: Arc<AppState>,
    cancel: CancellationToken,
    body_limit: usize,
    loopback: bool,
) -> StreamableHttpService<McpServer, LocalSessionManager> {
    let shared = McpShared::new(state);
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(cancel)
        .with_max_request_body_bytes(body_limit);
    if !loopback {
        // Reachable from other machines under a name we cannot know; the
        // bearer token guards every request instead.
        config = config.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || {
            Ok(McpServer {
                shared: Arc::clone(&shared),
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// A refusal of the request checks (token, `Host`, `Origin`) with `status`,
/// as a JSON-RPC error MCP clients show.
pub(crate) fn unauthorized_with(
    status: axum::http::StatusCode,
    message: &str,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let reason = status.canonical_reason().unwrap_or("Refused");
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": UNAUTHORIZED_CODE, "message": format!("{} {reason}: {message}", status.as_u16())},
    });
    (status, axum::Json(body)).into_response()
}

/// The JSON-RPC error code of a refused bearer token (server-defined range).
const UNAUTHORIZED_CODE: i32 = -32001;
