//! Turns command-line options into a ready agent.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use herald_core::config::herald_home;
use herald_core::{
    Agent, AgentScope, AgentSetup, Delegation, DelegationSetup, EventSink, LeaseError, LeaseWait,
    LlmClient, Overrides, Recorder, SessionLease, Settings, StoreHandle, StoreProcessJournal,
    build_registry_with, build_system_prompt, new_session_id, restore_conversation,
};
use herald_protocol::EventKind;
use herald_store::{NewSession, SessionSource};
use tokio_util::sync::CancellationToken;

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
    Settings::resolve(&config, &path, home, &env, &overrides(common)).map_err(CliError::usage)
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
    }
}

/// Opens `$HERALD_HOME/state.db` on its store thread.
pub(crate) fn open_store(home: &std::path::Path) -> Result<StoreHandle, CliError> {
    StoreHandle::open(&home.join("state.db")).map_err(CliError::failed)
}

/// A session ready to take turns: new, or continued from the store.
pub(crate) struct StartedSession {
    pub session_id: String,
    pub agent: Agent,
    /// The session's delegation tree (background agents live here).
    pub delegation: Arc<Delegation>,
    /// Cancelled when the session ends: stops every background agent.
    pub cancel: CancellationToken,
    /// This process's claim on the session; released when dropped.
    pub lease: SessionLease,
}

/// Creates the root session (or resumes `--resume ID` / `--continue`), stores
/// it, builds its agent and emits `session.started`. `events` is built from
/// the session id.
pub(crate) async fn start_session(
    common: &CommonArgs,
    settings: &Settings,
    store: &StoreHandle,
    stream_deltas: bool,
    events: impl FnOnce(&str) -> EventSink,
) -> Result<StartedSession, CliError> {
    start_session_with(common, settings, store, stream_deltas, None, events).await
}

/// [`start_session`] for a front end that can ask the user: `clarifier`
/// backs the `clarify` tool (without one it tells the model nobody is there).
pub(crate) async fn start_session_with(
    common: &CommonArgs,
    settings: &Settings,
    store: &StoreHandle,
    stream_deltas: bool,
    clarifier: Option<Arc<dyn herald_knowledge::Clarifier>>,
    events: impl FnOnce(&str) -> EventSink,
) -> Result<StartedSession, CliError> {
    let client = Arc::new(LlmClient::new(settings.client_config()).map_err(CliError::failed)?);
    let gone = |err: herald_core::StoreGone| CliError::failed(err);
    let existing = if let Some(id) = &common.resume {
        let lookup = id.clone();
        let record = store
            .call(move |s| s.get_session(&lookup))
            .await
            .map_err(gone)?
            .map_err(CliError::failed)?;
        Some(record.ok_or_else(|| {
            CliError::usage(anyhow::anyhow!(
                "no session '{id}'; `herald sessions list` shows stored sessions"
            ))
        })?)
    } else if common.continue_latest {
        let cwd = settings.cwd.display().to_string();
        let record = store
            .call(move |s| s.latest_session_in(&cwd))
            .await
            .map_err(gone)?
            .map_err(CliError::failed)?;
        Some(record.ok_or_else(|| {
            CliError::usage(anyhow::anyhow!(
                "no earlier session in {}; start one with `herald run` or `herald`",
                settings.cwd.display()
            ))
        })?)
    } else {
        None
    };
    let session_id = existing
        .as_ref()
        .map_or_else(new_session_id, |record| record.id.clone());
    // Taken before anything of the session is written: one writer at a time.
    let wait = if common.wait {
        LeaseWait::Yes
    } else {
        LeaseWait::No
    };
    let lease = SessionLease::acquire(store, &session_id, wait, |pid| {
        eprintln!("herald: waiting for herald process {pid} to finish session {session_id}");
    })
    .await
    .map_err(|err| match err {
        LeaseError::Busy { .. } => CliError::usage(err),
        LeaseError::Store { .. } => CliError::failed(err),
    })?;
    let events = events(&session_id);
    let cancel = CancellationToken::new();
    let delegation = Delegation::new(DelegationSetup {
        settings: settings.clone(),
        client: Arc::clone(&client),
        store: Some(store.clone()),
        root_session_id: session_id.clone(),
        events: events.clone(),
        cancel: cancel.clone(),
    })
    .map_err(CliError::usage)?;
    let root_scope = AgentScope::root(&session_id);
    // Built before anything is written, so a bad --toolsets changes nothing.
    let registry = build_registry_with(settings, Some((store, &session_id)), |registry| {
        delegation.register_tools(registry, &root_scope);
        if let Some(clarifier) = clarifier {
            registry.register(herald_knowledge::clarify_tool(Some(clarifier)));
        }
    })
    .map_err(CliError::usage)?;
    let (system_prompt, history, resumed) = match existing {
        Some(record) => {
            // The live conversation (after the last compaction), with the
            // calls a dead run left unanswered answered in their place.
            let history = restore_conversation(store, &record.id)
                .await
                .map_err(|e| CliError::failed(anyhow::anyhow!(e)))?;
            (record.system_prompt, history, true)
        }
        None => {
            let id = session_id.clone();
            let system_prompt = build_system_prompt(&prompt_inputs(settings));
            let new = NewSession {
                id: id.clone(),
                parent_session_id: None,
                agent_id: Some("root".to_owned()),
                source: SessionSource::Cli,
                cwd: settings.cwd.display().to_string(),
                model: settings.model.clone(),
                provider: settings.provider.as_str().to_owned(),
                system_prompt: system_prompt.clone(),
            };
            store
                .call(move |s| s.create_session(&new))
                .await
                .map_err(gone)?
                .map_err(CliError::failed)?;
            (system_prompt, Vec::new(), false)
        }
    };
    let mut agent = Agent::new(AgentSetup {
        client,
        registry: Arc::new(registry),
        system_prompt,
        history,
        cwd: settings.cwd.clone(),
        max_iterations: settings.max_iterations,
        stream_deltas,
        events,
        recorder: Some(Recorder {
            store: store.clone(),
            session_id: session_id.clone(),
        }),
        budget: None,
        inbox: Some(delegation.inbox("root")),
        await_background: true,
    });
    agent.set_compression(settings.compression.clone());
    agent
        .state()
        .set_process_journal(Arc::new(StoreProcessJournal::new(
            store.clone(),
            &session_id,
            Some(settings.home.join("processes")),
        )));
    // Files a killed run left in the temp directory; nobody waits for this.
    let cwd = settings.cwd.clone();
    tokio::task::spawn_blocking(move || herald_core::remove_stale_temp_files(&cwd));
    if resumed {
        restore_todos(store, &session_id, &agent).await?;
        stop_orphaned_processes(store, &session_id, &agent).await;
    }
    agent.events().emit(EventKind::SessionStarted {
        model: settings.model.clone(),
        provider: settings.provider.as_str().to_owned(),
        cwd: settings.cwd.display().to_string(),
        resumed,
    });
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let cutoff = now_ms.saturating_sub(
        i64::try_from(
            settings
                .delegation
                .prune_after_hours
                .saturating_mul(3_600_000),
        )
        .unwrap_or(i64::MAX),
    );
    store.send(move |s| {
        let _ = s.prune_agents(cutoff);
    });
    if resumed {
        delegation.recover(&root_scope, agent.registry()).await;
    }
    delegation.watch_external_cancels(std::time::Duration::from_secs(2));
    Ok(StartedSession {
        session_id,
        agent,
        delegation,
        cancel,
        lease,
    })
}

/// Ends the tool processes a killed run of this session tree left running.
/// The root's background processes stay listed (`process list`) as stopped,
/// with the output they had logged.
async fn stop_orphaned_processes(store: &StoreHandle, session_id: &str, agent: &Agent) {
    let filter = herald_store::AgentFilter {
        root_session_id: Some(session_id.to_owned()),
        limit: 10_000,
        ..herald_store::AgentFilter::default()
    };
    let mut sessions = vec![session_id.to_owned()];
    if let Ok(Ok(agents)) = store.call(move |s| s.list_agents(&filter)).await {
        sessions.extend(agents.into_iter().map(|a| a.session_id));
    }
    for stopped in herald_core::reap_orphans(store, sessions).await {
        if stopped.session_id != session_id {
            continue;
        }
        let note = format!(
            "stopped when this session was resumed: the herald process ({}) that started it had been killed; output up to then is above",
            stopped.owner_pid
        );
        agent
            .state()
            .processes
            .adopt_stopped(&stopped.command, stopped.pid, &stopped.log, &note);
    }
}

/// Puts a resumed session's stored task list back on its agent. An
/// unreadable list is reported and dropped rather than blocking the resume.
async fn restore_todos(
    store: &StoreHandle,
    session_id: &str,
    agent: &Agent,
) -> Result<(), CliError> {
    let id = session_id.to_owned();
    let stored = store
        .call(move |s| s.load_todos(&id))
        .await
        .map_err(CliError::failed)?
        .map_err(CliError::failed)?;
    if let Some(json) = stored
        && let Err(err) = agent.state().todos.restore(&json)
    {
        eprintln!(
            "herald: warning: the stored task list of {session_id} is unreadable ({err}); continuing with an empty list"
        );
    }
    Ok(())
}

/// What the system prompt of a new root session is built from (SPEC §6):
/// the working directory, model, `$HERALD_HOME` (for `SOUL.md`), and the
/// memory and skills layers.
fn prompt_inputs(settings: &Settings) -> herald_core::PromptInputs {
    let mut inputs =
        herald_core::PromptInputs::new(&settings.cwd, &settings.model).with_home(&settings.home);
    let limits = herald_core::memory_limits(&settings.memory);
    inputs.memory_block = herald_knowledge::memory_prompt_block(&settings.home, &limits);
    inputs.skills_index = herald_knowledge::skills_prompt_index(&settings.home, &settings.cwd);
    inputs
}
