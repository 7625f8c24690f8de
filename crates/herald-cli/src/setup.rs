//! Turns command-line options into a ready agent.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use herald_core::config::herald_home;
use herald_core::{
    Agent, AgentSetup, Config, EventSink, LlmClient, Overrides, Settings, build_registry,
    build_system_prompt,
};

use crate::CliError;
use crate::args::CommonArgs;

/// The environment as a map, so settings resolution is a pure function.
pub(crate) fn environment() -> HashMap<String, String> {
    std::env::vars().collect()
}

/// The config file path and its home directory for these options.
pub(crate) fn config_location(
    common: &CommonArgs,
    env: &HashMap<String, String>,
) -> (PathBuf, PathBuf) {
    let home = herald_home(env);
    let path = common
        .config
        .clone()
        .unwrap_or_else(|| home.join("config.toml"));
    (home, path)
}

/// Loads config and merges env and flags; every failure is a usage error.
pub(crate) fn settings(common: &CommonArgs) -> Result<Settings, CliError> {
    let env = environment();
    let (home, path) = config_location(common, &env);
    let config = Config::load(&path).map_err(CliError::usage)?;
    let flags = Overrides {
        model: common.model.clone(),
        provider: common.provider.clone(),
        base_url: common.base_url.clone(),
        max_iterations: common.max_iterations,
        toolsets: common.toolsets.clone(),
        cwd: common.cwd.clone(),
    };
    Settings::resolve(&config, &path, home, &env, &flags).map_err(CliError::usage)
}

/// Builds the root agent for a new session.
pub(crate) fn root_agent(
    settings: &Settings,
    events: EventSink,
    stream_deltas: bool,
) -> Result<Agent, CliError> {
    let registry = build_registry(settings).map_err(CliError::usage)?;
    let client = LlmClient::new(settings.client_config()).map_err(CliError::failed)?;
    Ok(Agent::new(AgentSetup {
        client: Arc::new(client),
        registry: Arc::new(registry),
        system_prompt: build_system_prompt(&settings.cwd, &settings.model),
        history: Vec::new(),
        cwd: settings.cwd.clone(),
        max_iterations: settings.max_iterations,
        stream_deltas,
        events,
    }))
}
