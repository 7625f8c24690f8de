//! The herald agent: configuration, prompt assembly and the turn loop that
//! sends requests, runs tools and keeps the conversation valid and
//! cache-stable.

mod agent;
mod browser;
pub mod checkpoints;
pub mod compress;
pub mod config;
mod config_sections;
pub mod delegation;
mod diagnostics;
mod events;
mod history;
pub mod hooks;
pub mod intercept;
pub mod learnings;
mod lease;
mod mcp;
mod nested_calls;
mod orphans;
mod permissions;
mod persist;
mod prompt;
pub mod routing;
pub mod runtime;
mod session_search;
mod steer;
pub mod time_bound;
mod tool_runner;
pub mod usage_meter;
pub mod watch;
pub mod web;

pub use agent::{
    Agent, AgentSetup, ExitReason, FLUSH_MARKER, FlushReason, FlushReport, FlushSettings,
    FlushStatus, Recorder, TurnOutcome, flush_instruction, user_turns_since_flush,
};
pub use browser::{browser_setup, browser_wanted};
pub use compress::{CompressError, CompressionReport, live_history};
pub use config::{Config, ConfigError, Overrides, ProjectMcp, Settings};
pub use delegation::{AgentScope, Delegation, DelegationSetup};
pub use events::{EventFlusher, EventSink, SubmissionStamp};
pub use herald_llm::{LlmClient, ProbeOutcome, ProviderKind, error_chain, probe};
pub use herald_tools::{ElicitAction, ElicitAnswer};
pub use history::{
    Repair, answer_dangling_calls, apply_repairs, plan_repairs, restore_conversation,
};
pub use lease::{LeaseError, LeaseWait, SessionLease};
pub use mcp::{session_servers, start_mcp_hub};
pub use orphans::{
    StoppedProcess, StoreProcessJournal, reap_orphans, remove_stale_temp_files, sweep_dead_owners,
};
pub use permissions::{
    AllowRule, ApprovalAnswer, ApprovalMode, PendingApproval, PendingElicitation, PermissionSetup,
    check_permission, load_permission_setup, tool_sandbox,
};
pub use persist::{StoreGone, StoreHandle};
pub use prompt::{
    ContextFile, ContextFileReport, ContextFiles, ContextReport, Import, ImportRoots, ImportStatus,
    LayerReport, PromptBudgets, PromptInputs, PromptReport, build_prompt_report,
    build_system_prompt, find_context_files,
};
pub use session_search::{SessionSearch, SessionSearchArgs};
pub use steer::{SteerQueue, Steered};
pub use usage_meter::UsageMeter;

/// Builds the tool registry an agent gets from settings: every built-in tool,
/// the todo tools, the knowledge tools (`memory`, skills, a headless
/// `clarify`) and `session_search` when a store is given, the browser
/// tools when wanted (with a browser that is never started), narrowed to
/// `--toolsets`.
pub fn build_registry(
    settings: &Settings,
    store: Option<(&StoreHandle, &str)>,
) -> Result<herald_tools::ToolRegistry, ConfigError> {
    let browser = browser::session_browser(settings, store.map(|(_, id)| id));
    build_registry_with(settings, store, |registry| {
        if let Some(browser) = &browser {
            herald_browser::register(registry, browser);
        }
    })
}

/// [`build_registry`] plus tools added by `extra` (the delegation tools of
/// a session) before the `--toolsets` filter applies.
pub fn build_registry_with(
    settings: &Settings,
    store: Option<(&StoreHandle, &str)>,
    extra: impl FnOnce(&mut herald_tools::ToolRegistry),
) -> Result<herald_tools::ToolRegistry, ConfigError> {
    let mut registry = herald_tools::builtin::default_registry(settings.output_limit_chars);
    registry.register(herald_tools::typed(herald_tools::builtin::TodoWrite));
    registry.register(herald_tools::typed(herald_tools::builtin::TodoRead));
    herald_knowledge::register(
        &mut registry,
        &herald_knowledge::KnowledgeSetup {
            home: settings.home.clone(),
            cwd: settings.cwd.clone(),
            memory: memory_limits(&settings.memory),
            clarifier: None,
        },
    );
    extra(&mut registry);
    register_execute_code(&mut registry, settings);
    herald_web::register(
        &mut registry,
        &web::web_settings(settings, store.map(|(_, id)| id)),
    );
    if let Some((store, session_id)) = store {
        registry.register(herald_tools::typed(SessionSearch::new(
            store.clone(),
            session_id.to_owned(),
        )));
        registry.register(herald_tools::typed(learnings::LearningTool::new(
            store.clone(),
            learnings::project_path(&settings.cwd),
        )));
    }
    if let Some(toolsets) = &settings.toolsets {
        registry
            .retain_toolsets(toolsets)
            .map_err(|err| ConfigError::Invalid(format!("--toolsets: {err}")))?;
    }
    Ok(registry)
}

/// Adds `execute_code` when a Python interpreter is found; only
/// a `PATH` lookup here, `herald doctor` says why it is missing.
fn register_execute_code(registry: &mut herald_tools::ToolRegistry, settings: &Settings) {
    let exec = &settings.code_execution;
    if let Ok(python) = herald_exec::find_python(&exec.python) {
        registry.register(herald_tools::typed(herald_exec::ExecuteCode::new(
            herald_exec::ExecConfig {
                python,
                timeout: std::time::Duration::from_secs(exec.timeout.max(1)),
                max_tool_calls: exec.max_tool_calls,
                landlock: exec.landlock,
                result_limit_chars: settings.output_limit_chars,
            },
        )));
    }
}

/// `[memory]` of the settings in the form the knowledge system takes: used
/// for the `memory` tool and for the memory snapshot of the system prompt
/// (`herald_knowledge::memory_prompt_block`).
pub fn memory_limits(memory: &config::MemoryConfig) -> herald_knowledge::MemoryLimits {
    herald_knowledge::MemoryLimits {
        memory_enabled: memory.memory_enabled,
        user_enabled: memory.user_profile_enabled,
        memory_chars: memory.memory_char_limit,
        user_chars: memory.user_char_limit,
    }
}

/// A new, unique session id (`ses_<unix-ms>_<8 hex digits>`).
///
/// The suffix is a per-process random start plus a counter times an odd
/// number, which is one-to-one over 32 bits: no two ids of one process are
/// equal, however many are made in one millisecond (a fan-out of 10,000
/// children with 24 random bits drew the same id about once in ten runs).
/// The start comes from the operating system's random source (not
/// `fastrand`, which seeds from the clock and the thread id), so processes
/// started in the same instant differ too.
pub fn new_session_id() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU32, Ordering};
    static START: OnceLock<u32> = OnceLock::new();
    static COUNT: AtomicU32 = AtomicU32::new(0);
    let start = *START.get_or_init(|| {
        let random = RandomState::new().build_hasher().finish();
        (random >> 32) as u32 ^ random as u32
    });
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    let suffix = start.wrapping_add(count.wrapping_mul(0x9E37_79B9));
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("ses_{ms:x}_{suffix:08x}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn session_ids_have_their_shape_and_never_repeat_in_a_process() {
        // Far more than one millisecond's worth of a wide fan-out.
        let ids: std::collections::HashSet<String> =
            (0..200_000).map(|_| super::new_session_id()).collect();
        assert_eq!(ids.len(), 200_000, "a session id repeated");
        for id in ids.iter().take(100) {
            let parts: Vec<&str> = id.split('_').collect();
            assert_eq!(parts.len(), 3, "{id}");
            assert_eq!(parts[0], "ses");
            assert_eq!(parts[2].len(), 8, "{id}");
            assert!(parts[2].bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        }
    }
}
