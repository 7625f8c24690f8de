//! The herald agent: configuration, prompt assembly and the turn loop that
//! sends requests, runs tools and keeps the conversation valid and
//! cache-stable.

mod agent;
pub mod compress;
pub mod config;
mod config_sections;
pub mod delegation;
mod events;
mod history;
mod persist;
mod prompt;
mod session_search;
mod tool_runner;

pub use agent::{Agent, AgentSetup, ExitReason, Recorder, TurnOutcome};
pub use compress::{CompressError, CompressionReport, live_history};
pub use config::{Config, ConfigError, Overrides, Settings};
pub use delegation::{AgentScope, Delegation, DelegationSetup};
pub use events::EventSink;
pub use herald_llm::{LlmClient, ProviderKind};
pub use history::answer_dangling_calls;
pub use persist::{StoreGone, StoreHandle};
pub use prompt::{
    ContextFile, PromptBudgets, PromptInputs, build_system_prompt, find_context_files,
};
pub use session_search::{SessionSearch, SessionSearchArgs};

/// Builds the tool registry an agent gets from settings: every built-in tool
/// (plus `session_search` when a store is given), narrowed to `--toolsets`.
pub fn build_registry(
    settings: &Settings,
    store: Option<(&StoreHandle, &str)>,
) -> Result<herald_tools::ToolRegistry, ConfigError> {
    build_registry_with(settings, store, |_| {})
}

/// [`build_registry`] plus tools added by `extra` (the delegation tools of
/// a session) before the `--toolsets` filter applies.
pub fn build_registry_with(
    settings: &Settings,
    store: Option<(&StoreHandle, &str)>,
    extra: impl FnOnce(&mut herald_tools::ToolRegistry),
) -> Result<herald_tools::ToolRegistry, ConfigError> {
    let mut registry = herald_tools::builtin::default_registry(settings.output_limit_chars);
    extra(&mut registry);
    if let Some((store, session_id)) = store {
        registry.register(herald_tools::typed(SessionSearch::new(
            store.clone(),
            session_id.to_owned(),
        )));
    }
    if let Some(toolsets) = &settings.toolsets {
        registry
            .retain_toolsets(toolsets)
            .map_err(|err| ConfigError::Invalid(format!("--toolsets: {err}")))?;
    }
    Ok(registry)
}

/// A new, unique session id (`ses_<unix-ms>_<random>`).
pub fn new_session_id() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("ses_{ms:x}_{:06x}", fastrand::u32(..0x100_0000))
}
