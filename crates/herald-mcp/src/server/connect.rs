//! Connecting to a server, and the connection's life after that: one
//! restart when it is found closed, then "down"; and shutdown.

use std::sync::Arc;
use std::time::Duration;

use herald_sandbox::EnvFilter;
use rmcp::service::{Peer, RoleClient};

use super::handler::Shared;
use super::tools::{list_tools, toolset_name};
use super::transport::{Connection, open};
use super::{McpError, McpServer};
use crate::config::McpServerConfig;
use crate::content::McpCallResult;

/// The connection of a [`McpServer`] and what happened to it.
pub(super) struct State {
    conn: Option<Connection>,
    /// Incremented on every (re)connection.
    generation: u64,
    /// The one restart has been used.
    restarted: bool,
    /// Set when the server is given up on: the reason.
    down: Option<String>,
    /// [`McpServer::shutdown`] was called: no more restarts.
    shut_down: bool,
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
        let prompts = peer_info
            .as_ref()
            .is_some_and(|info| info.capabilities.prompts.is_some());
        Ok(Arc::new(McpServer {
            name: name.to_owned(),
            toolset: toolset_name(name),
            config: config.clone(),
            env: env.clone(),
            tools,
            skipped,
            server_info,
            resources,
            prompts,
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

    /// A peer to send a call on, reconnecting once if the connection is
    /// gone. The note explains a restart to the model.
    pub(super) async fn peer_for_call(
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
    pub(super) async fn connection_lost(&self, generation: u64, tool: &str) -> McpCallResult {
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
