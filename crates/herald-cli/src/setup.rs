//! Turns command-line options into settings, a store and an open session
//! (through the session runtime).

use std::collections::HashMap;
use std::path::PathBuf;

use herald_core::config::herald_home;
use herald_core::runtime::{
    ClarifyPolicy, OpenMode, RuntimeError, Session, SessionOptions, open_session,
};
use herald_core::{ApprovalMode, LeaseWait, Overrides, Settings, StoreHandle};
use herald_store::SessionSource;

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

/// Loads and checks config (printing its warnings) and merges env and
/// flags; every failure is a usage error.
pub(crate) fn settings(common: &CommonArgs) -> Result<Settings, CliError> {
    let env = environment();
    let (home, path) = config_location(common, &env);
    let config = crate::config_cmd::load(&path)?;
    let mut settings = Settings::resolve(&config, &path, home, &env, &overrides(common))
        .map_err(CliError::usage)?;
    apply_permission_flags(common, &mut settings);
    Ok(settings)
}

/// `--mode` and `--yolo` win over `[permissions] mode`.
pub(crate) fn apply_permission_flags(common: &CommonArgs, settings: &mut Settings) {
    if common.yolo {
        settings.permissions.mode = "full-access".to_owned();
    } else if let Some(mode) = &common.mode {
        settings.permissions.mode.clone_from(mode);
    }
}

/// The command-line values that win over the environment and the file.
pub(crate) fn overrides(common: &CommonArgs) -> Overrides {
    Overrides {
        model: common.model.clone(),
        provider: common.provider.clone(),
        base_url: common.base_url.clone(),
        max_iterations: common.max_iterations,
        toolsets: common.toolsets.clone(),
        cwd: common.cwd.clone(),
        reasoning_effort: common.reasoning_effort.clone(),
    }
}

/// The stores this process opened, closed by [`close_stores`] at exit.
static OPENED_STORES: std::sync::Mutex<Vec<StoreHandle>> = std::sync::Mutex::new(Vec::new());

/// Opens `$HERALD_HOME/state.db` on its store thread.
pub(crate) fn open_store(home: &std::path::Path) -> Result<StoreHandle, CliError> {
    let store = StoreHandle::open(&home.join("state.db")).map_err(CliError::failed)?;
    if let Ok(mut opened) = OPENED_STORES.lock() {
        opened.push(store.clone());
    }
    Ok(store)
}

/// Closes every store [`open_store`] opened, after the jobs already queued
/// on it: the write-ahead log is folded into the database and removed, so
/// the next herald does not read it back at its start. Called by `main`
/// once the async runtime is gone (nothing can queue more work).
pub(crate) fn close_stores() {
    let opened = match OPENED_STORES.lock() {
        Ok(mut opened) => std::mem::take(&mut *opened),
        Err(_) => return,
    };
    for store in opened {
        if !store.close_blocking(std::time::Duration::from_secs(10)) {
            tracing::warn!(
                "the session store did not close (its thread stopped, or closing took over 10 s); the next start reads its write-ahead log back"
            );
        }
    }
}

/// Which session the options name: `--resume ID`, `--continue`, `--fork
/// ID`, or a new one.
pub(crate) fn open_mode(common: &CommonArgs) -> OpenMode {
    if let Some(id) = &common.resume {
        OpenMode::Resume(id.clone())
    } else if let Some(id) = &common.fork {
        OpenMode::Fork(id.clone())
    } else if common.continue_latest {
        OpenMode::ContinueLatest
    } else {
        OpenMode::New
    }
}

/// Opens the session the options name through the session runtime; the
/// front end then only submits operations and renders its events.
pub(crate) async fn open(
    common: &CommonArgs,
    settings: &Settings,
    store: &StoreHandle,
    shape: SessionShape,
) -> Result<Session, CliError> {
    let mut options = SessionOptions::new(settings.clone(), store.clone());
    options.open = match open_mode(common) {
        // A unique start of an id is enough on the command line (the HTTP
        // API keeps exact ids, so this happens here and not in the runtime).
        OpenMode::Resume(id) => OpenMode::Resume(crate::id_lookup::session_id(store, &id).await?),
        OpenMode::Fork(text) => fork_mode(store, &text).await?,
        other => other,
    };
    options.lease_wait = if common.wait {
        LeaseWait::Yes
    } else {
        LeaseWait::No
    };
    options.on_lease_wait = Some(Box::new(|pid| {
        eprintln!("herald: waiting for herald process {pid} to finish the session");
    }));
    options.source = SessionSource::Cli;
    options.stream_deltas = shape.stream_deltas;
    options.clarify = if shape.ask_user {
        ClarifyPolicy::Ask
    } else {
        ClarifyPolicy::Unavailable
    };
    options.approvals = ApprovalMode::for_front_end(shape.ask_user, common.yolo);
    options.one_shot = shape.one_shot;
    // Opt-in (`--toolsets …,cron`): its schema would weigh on every request.
    if settings
        .toolsets
        .as_ref()
        .is_some_and(|sets| sets.iter().any(|s| s == herald_cron::CRON_TOOLSET))
    {
        options.extra_tools.push(cronjob_tool(settings, store));
    }
    let session = open_session(options).await.map_err(runtime_error)?;
    crate::checkpoints_cmd::prune_in_background(settings);
    Ok(session)
}

/// The `cronjob` tool of a session with these settings: jobs it creates
/// run in the session's directory with at most its permission mode.
fn cronjob_tool(
    settings: &Settings,
    store: &StoreHandle,
) -> std::sync::Arc<dyn herald_tools::Tool> {
    let mode = settings.permissions.mode.parse().unwrap_or_default();
    herald_tools::typed(herald_cron::CronjobTool::new(
        store.clone(),
        settings.cwd.clone(),
        mode,
        herald_cron::clock::from_env(&environment()),
    ))
}

/// A refusal of the runtime is a usage error (exit 2); a store that
/// failed is not.
pub(crate) fn runtime_error(err: RuntimeError) -> CliError {
    match err {
        RuntimeError::Store(_) => CliError::failed(err),
        _ => CliError::usage(err),
    }
}

/// `--fork ID` or `--fork ID@TURN` (the source's conversation before its
/// user turn TURN), the id possibly a unique start of one.
async fn fork_mode(store: &StoreHandle, text: &str) -> Result<OpenMode, CliError> {
    let Some((id, turn)) = text.rsplit_once('@') else {
        return Ok(OpenMode::Fork(
            crate::id_lookup::session_id(store, text).await?,
        ));
    };
    let turn = match turn.trim().parse::<u32>() {
        Ok(turn) if turn > 0 => turn,
        _ => {
            return Err(CliError::usage(anyhow::anyhow!(
                "--fork {text}: '{turn}' is not a turn number; turns are numbered from 1 (`herald checkpoints list {id}` lists them)"
            )));
        }
    };
    let id = crate::id_lookup::session_id(store, id).await?;
    Ok(OpenMode::ForkAt(id, turn))
}

/// How a front end uses its session.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionShape {
    /// `assistant.delta` events wanted.
    pub stream_deltas: bool,
    /// A person answers `clarify` questions.
    pub ask_user: bool,
    /// One turn, then the session ends (`herald run`).
    pub one_shot: bool,
}
