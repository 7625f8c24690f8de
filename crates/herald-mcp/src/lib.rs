//! herald's Model Context Protocol client.
//!
//! - [`McpServerConfig`] / [`parse_servers`]: the `[mcp_servers.NAME]`
//!   tables of `config.toml`.
//! - [`McpServer::connect`]: one live connection (a stdio child process in
//!   its own process group, or a streamable HTTP session), initialised and
//!   with its tools listed within `startup_timeout_sec`.
//! - [`McpServer::tools`]: the tools it offers, named `mcp__<server>__<tool>`
//!   with normalised input schemas, filtered and sorted.
//! - [`McpServer::call`] with a [`CallRequest`]: a tool call with timeout,
//!   cancellation, progress, elicitation, content mapping and one restart
//!   of a crashed server.
//! - [`mcp_tools`]: the tools as [`herald_tools::Tool`]s (toolset
//!   `mcp-<server>`).
//! - [`McpHub`]: the servers of one process, started concurrently in the
//!   background and shared by every session and agent; it hands each new
//!   session a fixed tool list ([`McpHub::session_tools`]), using the
//!   [`ToolCache`] of the last start while a server is still starting.
//!
//! - `mcp_list_resources` / `mcp_read_resource` (toolset `mcp`): the
//!   servers' resources, listed and read by the model.
//! - Elicitation: a server's `elicitation/create` during a call goes to the
//!   call's [`ElicitationHandler`] (the tool adapter asks the calling
//!   agent's permission gate, which asks the user or declines).
//!
//! - [`McpHub::prompts`] / [`McpHub::prompt_text`]: the servers' prompt
//!   templates, which front ends offer as `/<server>:<prompt>` commands.
//!
//! Not here yet: URL-mode elicitation and sampling (not declared to
//! servers), legacy SSE servers (rmcp 3 has no client for them).

mod cache;
mod config;
mod content;
mod hub;
mod names;
mod project;
mod prompts;
mod resources;
mod schema;
mod search;
mod server;
mod tool;

pub use cache::{CachedServer, ToolCache, fingerprint};
pub use config::{
    DEFAULT_STARTUP_TIMEOUT_SEC, DEFAULT_TOOL_TIMEOUT_SEC, McpConfigError, McpServerConfig,
    parse_servers, valid_server_name,
};
pub use content::{McpCallResult, McpImage, map_call_result};
pub use hub::{
    McpHub, PendingServer, ServerHandle, ServerReport, ServerState, ServerStatus, SessionTools,
};
pub use names::{MAX_TOOL_NAME_LEN, exposed_name, exposed_names};
pub use project::{
    PROJECT_FILE, ProjectApprovals, ProjectError, ProjectServers, find_project_file,
    load_project_servers,
};
pub use prompts::{McpPrompt, McpPromptArgument, McpPromptError};
pub use resources::RESOURCES_TOOLSET;
pub use schema::normalize_input_schema;
pub use search::SEARCH_TOOLSET;
pub use server::{
    CallRequest, ElicitationHandler, McpError, McpServer, McpToolInfo, ProgressSink,
    ProgressUpdate, SkippedTool,
};
pub use tool::mcp_tools;
