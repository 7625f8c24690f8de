//! `GET /api/settings`: what this server runs with, read-only — the
//! effective configuration with keys redacted (as `herald config show
//! --json`), the MCP servers with their state and tools, the skills found
//! (as `herald skills list --json`), the memory files' entries and the
//! newest learnings (as `herald memory show`, `herald learnings list`).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use herald_core::config::EffectiveConfig;
use herald_knowledge::{MemoryStore, MemoryTarget, SkillRoots};
use herald_mcp::ServerState;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// The answer of `GET /api/settings`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SettingsView {
    /// Every effective setting, keys redacted (`herald config show --json`).
    #[schema(value_type = Object)]
    pub config: Value,
    /// Each MCP server: `name`, `toolset`, `state` (`starting`, `ready`,
    /// `failed`), `message` when failed, and its `tools` when ready.
    #[schema(value_type = Vec<Object>)]
    pub mcp_servers: Vec<Value>,
    /// The skills found, and the folders refused with why.
    #[schema(value_type = Object)]
    pub skills: Value,
    /// The entries of `MEMORY.md` (`memory`) and `USER.md` (`user`), or
    /// why one cannot be read (`error`).
    #[schema(value_type = Object)]
    pub memory: Value,
    /// The newest learnings (at most 100), every project's.
    #[schema(value_type = Vec<Object>)]
    pub learnings: Vec<Value>,
}

/// Learnings shown at most.
const LEARNINGS_SHOWN: usize = 100;

/// One memory file's entries, or why it cannot be read.
fn memory_file(store: &MemoryStore, target: MemoryTarget) -> Value {
    match store.read(target) {
        Ok(snapshot) => json!({"entries": snapshot.entries}),
        Err(err) => json!({"entries": [], "error": err.to_string()}),
    }
}

/// The server's settings, read-only.
#[utoipa::path(
    get,
    path = "/api/settings",
    tag = "meta",
    responses(
        (status = 200, description = "configuration, MCP servers, skills, memory, learnings", body = SettingsView),
        (status = 500, description = "the settings could not be encoded", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn view(State(state): State<Arc<AppState>>) -> Result<Json<Value>, ApiError> {
    let settings = &state.settings;
    let key_var_set =
        std::env::var(settings.provider.key_var()).is_ok_and(|v| !v.trim().is_empty());
    let config = EffectiveConfig::new(settings, key_var_set, &[]);
    let config = serde_json::to_value(&config)
        .map_err(|err| ApiError::internal(format!("cannot encode the settings: {err}")))?;
    let mcp_servers: Vec<Value> = state
        .mcp()
        .servers()
        .iter()
        .map(|server| {
            let (word, message, tools) = match server.state() {
                ServerState::Starting => ("starting", None, Vec::new()),
                ServerState::Ready(live) => (
                    "ready",
                    None,
                    live.tools()
                        .iter()
                        .map(|t| json!({"name": t.name, "exposed_name": t.exposed_name, "description": t.description}))
                        .collect(),
                ),
                ServerState::Failed(message) => ("failed", Some(message), Vec::new()),
            };
            json!({
                "name": server.name(),
                "toolset": server.toolset(),
                "state": word,
                "message": message,
                "tools": tools,
            })
        })
        .collect();
    let (home, cwd) = (settings.home.clone(), settings.cwd.clone());
    let found = tokio::task::spawn_blocking(move || SkillRoots::new(&home, &cwd).discover())
        .await
        .map_err(|err| ApiError::internal(format!("the skill scan failed: {err}")))?;
    let memory = {
        let store = MemoryStore::new(&settings.home, herald_core::memory_limits(&settings.memory));
        tokio::task::spawn_blocking(move || {
            json!({
                "memory": memory_file(&store, MemoryTarget::Memory),
                "user": memory_file(&store, MemoryTarget::User),
            })
        })
        .await
        .map_err(|err| ApiError::internal(format!("reading memory failed: {err}")))?
    };
    let learnings = state
        .store
        .call(|s| s.list_learnings(herald_store::LearningScope::All, LEARNINGS_SHOWN))
        .await
        .map_err(|err| ApiError::internal(format!("the store failed: {err}")))?
        .map_err(|err| ApiError::internal(format!("cannot read the learnings: {err}")))?;
    let learnings = learnings
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| ApiError::internal(format!("cannot encode a learning: {err}")))?;
    Ok(Json(json!({
        "memory": memory,
        "learnings": learnings,
        "config": config,
        "mcp_servers": mcp_servers,
        "skills": {"skills": found.skills, "rejected": found.rejected, "skipped": found.problems},
    })))
}
