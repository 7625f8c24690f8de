//! MCP servers in a session: which servers start (the `[mcp_servers]` of
//! the settings plus an approved project `.mcp.json`), how their tools
//! join the session's fixed tool list, and the `mcp.server` events that
//! tell front ends what became of each server.

use std::collections::BTreeMap;

use herald_mcp::{McpHub, McpServerConfig, ServerReport, ServerStatus, SessionTools, ToolCache};
use herald_protocol::EventKind;
use herald_sandbox::EnvFilter;
use std::sync::Arc;

use crate::{EventSink, Settings};

/// Every server a session of these settings starts: the configured ones,
/// then those of the project's `.mcp.json` once the user approved it (a
/// configured server of the same name wins).
pub fn session_servers(settings: &Settings) -> BTreeMap<String, McpServerConfig> {
    let mut servers = settings.mcp_servers.clone();
    if let Some(project) = settings.project_mcp.as_ref().filter(|p| p.approved) {
        for (name, config) in &project.servers.servers {
            servers
                .entry(name.clone())
                .or_insert_with(|| config.clone());
        }
    }
    servers
}

/// Starts the MCP servers of `settings` for a process serving many
/// sessions (`herald serve`, `herald mcp serve`): pass the hub in
/// `SessionOptions::mcp`, and shut it down when the process ends. A
/// permission setup that does not load starts nothing (each session then
/// reports that error itself).
pub fn start_mcp_hub(settings: &Settings) -> Arc<McpHub> {
    match crate::load_permission_setup(settings) {
        Ok(setup) => start_hub(settings, &setup.env, false),
        Err(_) => McpHub::empty(),
    }
}

/// Starts the session's servers in the background, with the tool cache of
/// `$HERALD_HOME`; `deferred` holds them until `McpHub::release` (or until
/// something has to wait for one).
pub(crate) fn start_hub(settings: &Settings, env: &EnvFilter, deferred: bool) -> Arc<McpHub> {
    let servers = session_servers(settings);
    if servers.values().all(|s| !s.enabled) {
        return McpHub::empty();
    }
    let cache = Some(ToolCache::in_home(&settings.home));
    if deferred {
        McpHub::start_deferred(&servers, env, cache)
    } else {
        McpHub::start(&servers, env, cache)
    }
}

/// Tokens the MCP tool schemas may take before `mcp_search` replaces
/// them: `[mcp] schema_budget_percent` of the model's context window.
pub(crate) fn schema_budget(settings: &Settings) -> usize {
    let window =
        crate::compress::context_window(&settings.model, settings.compression.context_window);
    let tokens = window.saturating_mul(u64::from(settings.mcp.schema_budget_percent)) / 100;
    usize::try_from(tokens).unwrap_or(usize::MAX)
}

/// Settings whose `--toolsets` no longer name the toolset of a configured
/// MCP server that has no tools in this session (it failed or is late): a
/// server that did not start must not turn into an unknown-toolset error.
/// `None` when nothing changes.
pub(crate) fn narrow_toolsets(settings: &Settings, tools: &SessionTools) -> Option<Settings> {
    let requested = settings.toolsets.as_ref()?;
    let present: std::collections::BTreeSet<&str> =
        tools.tools.iter().map(|t| t.toolset()).collect();
    let servers = session_servers(settings);
    let missing = |set: &str| {
        set.strip_prefix("mcp-")
            .is_some_and(|name| servers.contains_key(name))
            && !present.contains(set)
    };
    if !requested.iter().any(|s| missing(s)) {
        return None;
    }
    let mut narrowed = settings.clone();
    narrowed.toolsets = Some(requested.iter().filter(|s| !missing(s)).cloned().collect());
    Some(narrowed)
}

fn event_of(report: &ServerReport) -> EventKind {
    EventKind::McpServer {
        server: report.server.clone(),
        status: report.status,
        tools: u32::try_from(report.tools).unwrap_or(u32::MAX),
        message: report.message.clone(),
    }
}

/// Emits one `mcp.server` event per server, and a later one for each
/// server still starting once it is up, has failed or runs out of time.
pub(crate) fn report_servers(tools: &SessionTools, events: &EventSink) {
    if tools.searchable {
        tracing::info!(
            schema_tokens = tools.schema_tokens,
            "MCP tool schemas are over their budget: reached through mcp_search"
        );
    }
    for report in &tools.reports {
        if matches!(report.status, ServerStatus::Failed | ServerStatus::Late) {
            tracing::warn!(
                server = %report.server,
                status = report.status.as_str(),
                "{}",
                report.message.as_deref().unwrap_or("")
            );
        }
        events.emit(event_of(report));
    }
    for pending in &tools.pending {
        let (pending, events) = (pending.clone(), events.clone());
        tokio::spawn(async move {
            let report = pending.outcome().await;
            events.emit(event_of(&report));
        });
    }
}
