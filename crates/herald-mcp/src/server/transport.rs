//! Opening one connection to a server and running `initialize`: a stdio
//! child process in a process group of its own, or a streamable HTTP
//! session.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use herald_sandbox::EnvFilter;
use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::AsyncReadExt;

use super::McpError;
use super::handler::{Handler, Shared};
use crate::config::McpServerConfig;

/// How much of a server's stderr is kept for error messages.
const STDERR_TAIL: usize = 4096;

/// Time a server gets to exit after its stdin is closed on shutdown, before
/// its process group is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The last bytes a stdio server wrote to stderr.
#[derive(Default)]
pub(super) struct StderrTail {
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
    pub(super) async fn wait_closed(&self, limit: Duration) {
        let notified = self.done.notified();
        if self.finished.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let _ = tokio::time::timeout(limit, notified).await;
    }
}

/// A stdio server's process group, killed when this is dropped.
pub(super) struct ProcessGroup {
    pgid: i32,
    pub(super) pid: u32,
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

/// One open connection: the rmcp service, and for a stdio server its
/// process group and the tail of its stderr.
pub(super) struct Connection {
    pub(super) service: RunningService<RoleClient, Handler>,
    pub(super) group: Option<ProcessGroup>,
    pub(super) stderr: Option<Arc<StderrTail>>,
}

impl Connection {
    pub(super) fn closed(&self) -> bool {
        self.service.is_closed()
            || self.service.peer().is_transport_closed()
            || self.group.as_ref().is_some_and(|g| process_exited(g.pid))
    }

    pub(super) fn stderr_suffix(&self) -> String {
        self.stderr.as_ref().map(|s| s.suffix()).unwrap_or_default()
    }

    /// Closes the connection: stdin closed (the MCP way to stop a stdio
    /// server), a short wait, then the whole process group killed.
    pub(super) async fn close(mut self) {
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

fn describe_command(config: &McpServerConfig) -> String {
    let mut text = config.command.clone().unwrap_or_default();
    for arg in &config.args {
        text.push(' ');
        text.push_str(arg);
    }
    text
}

/// Starts the transport and runs `initialize`, within the startup timeout.
pub(super) async fn open(
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
        .user_agent(herald_protocol::USER_AGENT)
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
