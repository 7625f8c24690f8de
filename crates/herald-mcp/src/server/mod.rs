//! One live connection to an MCP server: [`McpServer`].
//!
//! A newcomer can read the parts in this order:
//!
//! - `mod.rs` (here): the public types. [`McpServer`] is shared (`Arc`)
//!   by every tool of the server; [`CallRequest`] is what
//!   [`McpServer::call`] takes.
//! - `connect`: [`McpServer::connect`], and the connection's life after
//!   it. A connection found closed is reopened once, on the next request,
//!   and the request's result says so; after that the server is down for
//!   the session. [`McpServer::shutdown`] ends it.
//! - `transport`: opening one connection and running `initialize`: a
//!   stdio child process in its own process group (the tail of its stderr
//!   kept for error messages), or a streamable HTTP session.
//! - `tools`: `tools/list` at connect time, filtered by
//!   `include_tools`/`exclude_tools`, normalised and named into
//!   [`McpToolInfo`]s. The list is fixed from then on.
//! - `call`: [`McpServer::call`] sends `tools/call` and ends it on a
//!   result, on cancellation or after `tool_timeout_sec`.
//! - `handler`: rmcp's client handler. It runs on rmcp's receive task and
//!   gets what the server sends during a call: progress notifications and
//!   `elicitation/create` requests. `call` registers every call in flight
//!   in a table shared with the handler (a `CallWatch` per call), which
//!   is how those messages reach the call's [`CallRequest::progress`] and
//!   [`CallRequest::elicit`].
//! - `requests`: requests other than tool calls (`resources/*`, `prompts/*`), with the
//!   same timeout, cancellation and restart handling as calls.

mod call;
mod connect;
mod handler;
mod requests;
mod tools;
mod transport;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_sandbox::EnvFilter;
use herald_tools::{ElicitAnswer, Elicitation};
use rmcp::model::Implementation;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::McpServerConfig;

pub(crate) use tools::toolset_name;

/// One tool of a server, as herald offers it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct McpToolInfo {
    /// The server's configured name.
    pub server: String,
    /// The tool's name on the server (what `tools/call` is sent).
    pub name: String,
    /// The name the model sees: `mcp__<server>__<tool>`, sanitised, unique.
    pub exposed_name: String,
    /// What the model is told the tool does: the server's description, or
    /// its title when it has none.
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
    /// The tool's name on the server (`#<index>` when it had none).
    pub name: String,
    /// Why herald does not offer it, shown by `herald mcp test` and in the
    /// server's status report.
    pub reason: String,
}

/// A progress notification for a running tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    /// The server's configured name.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The [`CallRequest::call_id`] of the call (empty when it had none).
    pub call_id: String,
    /// How far the call has got, as the server counts.
    pub progress: f64,
    /// What `progress` counts up to, when the server knows.
    pub total: Option<f64>,
    /// What the server says it is doing, if anything.
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

/// One tool call: the argument of [`McpServer::call`], the one way to call
/// a tool. [`CallRequest::new`] gives a call with no call id, no progress
/// sink of its own and no elicitation handler, which nobody cancels; the
/// `with_*` methods set the rest. The timeout is not here: it is the
/// server's `tool_timeout_sec`.
#[derive(Clone)]
pub struct CallRequest {
    /// The tool's name on the server (what `tools/call` is sent), not the
    /// `mcp__<server>__<tool>` name the model sees.
    pub tool: String,
    /// The arguments: a JSON object, or null for none. Anything else is
    /// answered with an error result and the server is not called.
    pub args: Value,
    /// Cancels the call when it fires; the server is then sent
    /// `notifications/cancelled`.
    pub cancel: CancellationToken,
    /// Tags the call's [`ProgressUpdate`]s so a listener can tell
    /// concurrent calls apart (empty: untagged).
    pub call_id: String,
    /// Gets this call's progress notifications instead of the server's
    /// sink ([`McpServer::set_progress_sink`]), for a caller that
    /// reports progress per call.
    pub progress: Option<ProgressSink>,
    /// Answers the server's requests for user input during this call;
    /// without one they are declined (nobody can answer).
    pub elicit: Option<ElicitationHandler>,
}

impl CallRequest {
    /// A call of `tool` (its name on the server) with `args`: no call id,
    /// never cancelled, progress to the server's sink, elicitations
    /// declined.
    pub fn new(tool: impl Into<String>, args: Value) -> Self {
        Self {
            tool: tool.into(),
            args,
            cancel: CancellationToken::new(),
            call_id: String::new(),
            progress: None,
            elicit: None,
        }
    }

    /// Cancels the call when `cancel` fires.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Tags the call's progress updates with `call_id`.
    pub fn with_call_id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = call_id.into();
        self
    }

    /// Sends the call's progress notifications to `sink` instead of the
    /// server's sink.
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// Puts the server's requests for user input during the call to
    /// `handler` instead of declining them.
    pub fn with_elicitation(mut self, handler: ElicitationHandler) -> Self {
        self.elicit = Some(handler);
        self
    }
}

/// Why a server could not be connected. The message names the server and
/// what to change.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The configuration cannot be used (invalid, or names an unset
    /// variable or a bad header).
    #[error("MCP server `{server}`: {message}")]
    Config { server: String, message: String },
    /// A stdio server's command could not be started.
    #[error("MCP server `{server}`: cannot start `{command}`: {source}")]
    Spawn {
        server: String,
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// No answer to `initialize` or `tools/list` within
    /// `startup_timeout_sec`.
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
    /// The server exited, broke the protocol or failed `initialize` or
    /// `tools/list`.
    #[error("MCP server `{server}` failed to start: {message}{stderr}")]
    Startup {
        server: String,
        message: String,
        stderr: String,
    },
    /// The server is configured `enabled = false`.
    #[error("MCP server `{server}` is disabled (enabled = false)")]
    Disabled { server: String },
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
    /// The server declared the `prompts` capability.
    prompts: bool,
    shared: Arc<handler::Shared>,
    state: tokio::sync::Mutex<connect::State>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl McpServer {
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
}

/// `value` as JSON, cut to about 300 bytes, for error messages.
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
