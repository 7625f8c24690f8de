//! Opening a session: finding or creating it, taking its lease, building
//! its agent, repairing what a killed run left, and starting its task.

use std::sync::{Arc, Mutex};

use herald_protocol::{Event, EventKind, Message};
use herald_store::{NewSession, SessionRecord};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::clarify::{EventClarifier, OpenQuestions};
use super::{ClarifyPolicy, OpenMode, RuntimeError, Session, SessionOptions, Shared};
use crate::routing::{self, Role};
use crate::{
    Agent, AgentScope, AgentSetup, Delegation, DelegationSetup, EventSink, LeaseError, Recorder,
    SessionLease, Settings, StoreHandle, StoreProcessJournal, build_registry_with,
    build_system_prompt, new_session_id, restore_conversation,
};

/// The call interceptors of a session tree, in order: hooks first (what a
/// hook blocks or rewrites is what the learnings then see), then learnings.
fn call_interceptors(
    settings: &Settings,
    store: &StoreHandle,
    hooks: Option<&Arc<crate::hooks::Hooks>>,
) -> Vec<Arc<dyn crate::intercept::CallInterceptor>> {
    let mut interceptors: Vec<Arc<dyn crate::intercept::CallInterceptor>> = Vec::new();
    interceptors.extend(hooks.and_then(|hooks| hooks.call_interceptor()));
    if crate::learnings::enabled(settings.toolsets.as_deref()) {
        interceptors.push(Arc::new(crate::learnings::LearningInterceptor::new(
            store.clone(),
            crate::learnings::project_path(&settings.cwd),
        )));
    }
    interceptors
}

fn store_error(err: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::Store(err.to_string())
}

/// Opens the session `options.open` names and starts its agent's task.
/// Emits `session.started` (the first event of the stream). A session held
/// by another herald process is refused ([`RuntimeError::SessionInUse`])
/// unless `lease_wait` says to wait for it; nothing is written before the
/// lease is held, and a bad tool selection writes nothing at all.
pub async fn open_session(mut options: SessionOptions) -> Result<Session, RuntimeError> {
    let shared_client = options.client.take();
    let shared_mcp = options.mcp.take();
    let settings = &options.settings;
    let store = &options.store;
    // A process runs one config: its `[pricing]` prices every agent.
    herald_llm::install_price_overrides(settings.pricing.clone());
    let client = match shared_client {
        Some(client) => client,
        None => Arc::new(
            settings
                .build_client()
                .map_err(|e| RuntimeError::Config(e.to_string()))?,
        ),
    };
    // `[routing]` may give the top-level agent another model (a private
    // project: a local one); refused before anything is written.
    let root_route = routing::side_route(settings, Role::Root, client.model())
        .map_err(|e| RuntimeError::Config(e.to_string()))?;
    let client = match &root_route {
        Some(route) => Arc::new(
            routing::route_client(settings, route)
                .map_err(|e| RuntimeError::Config(format!("[routing]: {e}")))?,
        ),
        None => client,
    };
    let (existing, fork_of) = find_session(&options.open, settings, store).await?;
    // Checked before anything is written: a bad turn of `--fork ID@TURN`.
    let (fork_history, first_turn) = fork_start(&options.open, store).await?;
    let session_id = existing
        .as_ref()
        .map_or_else(new_session_id, |record| record.id.clone());
    let mut on_wait = options.on_lease_wait.take();
    let lease = SessionLease::acquire(store, &session_id, options.lease_wait, move |pid| {
        if let Some(on_wait) = on_wait.take() {
            on_wait(pid);
        }
    })
    .await
    .map_err(|err| match err {
        LeaseError::Busy { .. } => RuntimeError::SessionInUse(err.to_string()),
        LeaseError::Store { .. } => RuntimeError::Store(err.to_string()),
    })?;
    let last_seq = match &existing {
        Some(_) => {
            let id = session_id.clone();
            store
                .call(move |s| s.last_tree_event_seq(&id))
                .await
                .map_err(store_error)?
                .map_err(store_error)?
        }
        None => 0,
    };
    let fanout = super::fanout::Fanout::open();
    let emit = {
        let fanout = Arc::clone(&fanout);
        move |event: Event| fanout.send(Arc::new(event))
    };
    let events = EventSink::new(&session_id, "root", emit).recorded(
        store,
        &session_id,
        u64::try_from(last_seq).unwrap_or(0),
    );
    let cancel = CancellationToken::new();
    let delegation = Delegation::new(DelegationSetup {
        settings: settings.clone(),
        client: Arc::clone(&client),
        store: Some(store.clone()),
        root_session_id: session_id.clone(),
        events: events.clone(),
        cancel: cancel.clone(),
    })
    .map_err(|e| RuntimeError::Config(e.to_string()))?;
    let root_scope = AgentScope::root(&session_id);
    let questions = Arc::new(OpenQuestions::default());
    let permission_setup = crate::load_permission_setup(settings).map_err(RuntimeError::Config)?;
    let mut setup_warnings = permission_setup.warnings.clone();
    if let Some(project) = &settings.project_mcp {
        setup_warnings.extend(project.warnings());
    }
    if let Some(project) = &settings.project_hooks {
        setup_warnings.extend(project.warnings());
    }
    // None without hooks: then nothing of them is on any path.
    let hooks = crate::hooks::Hooks::for_session(
        settings,
        Arc::clone(&permission_setup.env),
        events.clone(),
    );
    let (tool_env, redactor) = (
        Arc::clone(&permission_setup.env),
        Arc::clone(&permission_setup.redactor),
    );
    let permissions = Arc::new(
        crate::permissions::Permissions::new(
            permission_setup,
            options.approvals,
            settings.cwd.clone(),
            settings.config_path.clone(),
            Some(store.clone()),
        )
        .map_err(RuntimeError::Config)?,
    );
    delegation.set_permissions(Arc::clone(&permissions));
    // Agent definitions, read once: delegate_task's description lists them.
    let definitions = {
        let (home, cwd) = (settings.home.clone(), settings.cwd.clone());
        tokio::task::spawn_blocking(move || crate::delegation::AgentDefs::discover(&home, &cwd))
            .await
            .unwrap_or_default()
    };
    setup_warnings.extend(
        definitions
            .problems
            .iter()
            .map(|p| format!("agent definition {p}")),
    );
    delegation.set_definitions(definitions);
    if let Some(hooks) = &hooks {
        permissions.set_hooks(Arc::clone(hooks));
        delegation.set_hooks(Arc::clone(hooks));
    }
    let (mcp, own_mcp) = match shared_mcp {
        Some(hub) => (hub, None),
        None => {
            // A one-shot run starts its servers when its turn starts: the
            // session is built without `node` processes competing for the
            // CPU (with cached tool lists nothing waits for them here).
            let hub = crate::mcp::start_hub(settings, &tool_env, options.one_shot);
            (Arc::clone(&hub), Some(hub))
        }
    };
    let mcp_tools = mcp
        .session_tools(Some(crate::mcp::schema_budget(settings)))
        .await;
    let narrowed = crate::mcp::narrow_toolsets(settings, &mcp_tools);
    let settings = narrowed.as_ref().unwrap_or(settings);
    let browser = crate::browser::session_browser(settings, Some(&session_id));
    // Built before anything is written, so a bad --toolsets changes nothing.
    let mut registry = build_registry_with(settings, Some((store, &session_id)), |registry| {
        if let Some(browser) = &browser {
            herald_browser::register(registry, browser);
        }
        for tool in mcp_tools.tools.iter().chain(&options.extra_tools) {
            registry.register(Arc::clone(tool));
        }
        delegation.register_tools(registry, &root_scope);
        if options.clarify == ClarifyPolicy::Ask {
            registry.register(herald_knowledge::clarify_tool(Some(Arc::new(
                EventClarifier {
                    questions: Arc::clone(&questions),
                    events: events.clone(),
                },
            ))));
        }
    })
    .map_err(|e| RuntimeError::Config(e.to_string()))?;
    registry.set_secrets(tool_env, redactor);
    let resumed = existing.is_some();
    let (system_prompt, history) = match existing {
        Some(record) => {
            // The live conversation (after the last compaction), with the
            // calls a dead run left unanswered answered in their place.
            let history = restore_conversation(store, &record.id)
                .await
                .map_err(RuntimeError::Store)?;
            let system_prompt = if record.system_prompt.is_empty() {
                adopt_system_prompt(store, &record.id, settings).await?
            } else {
                record.system_prompt
            };
            (system_prompt, history)
        }
        None => create_session(&options, &session_id, fork_of, fork_history).await?,
    };
    let root_model = client.model().to_owned();
    let mut agent = Agent::new(AgentSetup {
        client,
        registry: Arc::new(registry),
        system_prompt,
        history,
        cwd: settings.cwd.clone(),
        max_iterations: settings.max_iterations,
        stream_deltas: options.stream_deltas,
        events: events.clone(),
        recorder: Some(Recorder {
            store: store.clone(),
            session_id: session_id.clone(),
        }),
        budget: None,
        inbox: Some(delegation.inbox("root")),
        await_background: options.one_shot,
    });
    agent.set_compression(settings.compression.clone());
    // The tree's meter: every subagent's requests count into it too.
    agent.set_meter(Arc::clone(&root_scope.meter));
    if let Some(summaries) = crate::compress::summary_client(settings)
        .map_err(|e| RuntimeError::Config(format!("[compression] model: {e}")))?
    {
        agent.set_summary_client(summaries);
    }
    let flush_route = routing::side_route(settings, Role::MemoryFlush, &root_model)
        .map_err(|e| RuntimeError::Config(e.to_string()))?;
    if let Some(route) = &flush_route {
        agent.set_flush_client(Arc::new(
            routing::route_client(settings, route)
                .map_err(|e| RuntimeError::Config(format!("[routing]: {e}")))?,
        ));
    }
    if let Some(route) = settings.routing.long_context(u64::MAX, &root_model, false) {
        agent.set_long_context(
            settings.routing.long_context_tokens,
            Arc::new(
                routing::route_client(settings, &route)
                    .map_err(|e| RuntimeError::Config(format!("[routing]: {e}")))?,
            ),
            Role::Root,
        );
    }
    let title_client = super::title::title_client(settings)
        .map_err(|e| RuntimeError::Config(format!("[sessions] title_model: {e}")))?;
    // The root agent flushes memory (subagents never do); not at all with
    // MEMORY.md disabled.
    let memory = &settings.memory;
    agent.set_memory_flush(memory.memory_enabled.then_some(crate::FlushSettings {
        before_compaction: memory.flush_before_compaction,
        min_turns: memory.flush_min_turns,
        user_profile: memory.user_profile_enabled,
    }));
    agent.set_gate(permissions.gate_for(events.clone()));
    // First of all: tool calls wait for the snapshot before a turn.
    let snapshot_gate = Arc::new(crate::checkpoints::SnapshotGate::default());
    let mut interceptors = call_interceptors(settings, store, hooks.as_ref());
    interceptors.insert(
        0,
        Arc::clone(&snapshot_gate) as Arc<dyn crate::intercept::CallInterceptor>,
    );
    for interceptor in &interceptors {
        agent.add_interceptor(Arc::clone(interceptor));
    }
    delegation.set_interceptors(interceptors);
    agent.set_hooks(hooks.clone());
    let mut file_hooks = None;
    if settings.watch.enabled {
        let watch = crate::watch::FileWatch::start(&settings.cwd);
        if let Some(hooks) = hooks
            .as_ref()
            .filter(|hooks| hooks.has(crate::hooks::HookEvent::FileChanged))
        {
            let (listener, task) = file_changed_hooks(Arc::clone(hooks));
            watch.set_listener(listener);
            file_hooks = Some(task);
        }
        delegation.set_file_watch(Arc::clone(&watch));
        agent.set_file_watch(watch, true);
    }
    agent.state().set_backends(options.backends.clone());
    delegation.set_backends(options.backends.clone());
    agent
        .state()
        .set_process_journal(Arc::new(StoreProcessJournal::new(
            store.clone(),
            &session_id,
            Some(settings.home.join("processes")),
        )));
    // Files a killed run left in the temp directory; nobody waits for this.
    let cwd = settings.cwd.clone();
    tokio::task::spawn_blocking(move || crate::remove_stale_temp_files(&cwd));
    let mut warnings = setup_warnings;
    if resumed {
        if let Some(warning) = restore_todos(store, &session_id, &agent).await? {
            warnings.push(warning);
        }
        stop_orphaned_processes(store, &session_id, &agent).await;
    }
    events.emit(EventKind::SessionStarted {
        model: settings.model.clone(),
        provider: settings.provider.as_str().to_owned(),
        cwd: settings.cwd.display().to_string(),
        resumed,
    });
    for message in warnings {
        events.emit(EventKind::Error {
            message,
            fatal: false,
        });
    }
    crate::mcp::report_servers(&mcp_tools, &events);
    report_routes(settings, &root_model, root_route, flush_route, &events);
    if let Some(hooks) = &hooks {
        hooks.session_start(resumed, &settings.model).await;
    }
    prune_old_agents(settings, store);
    delegation.set_root(root_scope.clone(), agent.registry().clone());
    if resumed {
        delegation.recover(&root_scope, agent.registry()).await;
    }
    delegation.watch_external_cancels(std::time::Duration::from_secs(2));
    let steer = Arc::new(crate::SteerQueue::default());
    agent.set_steering(Arc::clone(&steer));
    let checkpoints = crate::checkpoints::Checkpointer::open(
        store,
        &session_id,
        settings.cwd.clone(),
        settings.home.clone(),
        file_snapshots(settings, &agent, &permissions),
        first_turn,
        snapshot_gate,
    )
    .await;
    // Flushes other sessions still owe, in the background (this session's
    // lease is held, so its own is left to its end).
    let deferred = super::deferred_flush::start(&options.settings, store, agent.client());
    let (queue, receiver) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        session_id,
        resumed,
        accepts_images: agent.client().accepts_images(),
        store: store.clone(),
        delegation,
        questions,
        permissions,
        turn: Mutex::new(None),
        one_shot: options.one_shot,
        stamp: events.submission_stamp(),
        opened_after: u64::try_from(last_seq).unwrap_or(0),
        cancel,
        fanout,
        flusher: events.flusher(),
        steer,
        own_mcp,
        browser,
        mcp: Arc::clone(&mcp),
        flush_timeout: std::time::Duration::from_secs(settings.memory.flush_timeout_seconds.max(1)),
        title_client: Mutex::new(title_client),
        deferred: Mutex::new(deferred),
        file_hooks: Mutex::new(file_hooks),
    });
    tokio::spawn(super::driver::drive(
        agent,
        Arc::clone(&shared),
        receiver,
        lease,
        checkpoints,
    ));
    Ok(Session { shared, queue })
}

/// Runs the `file_changed` hooks for each outside change sent to the
/// returned sender, one after the other, until the sender is gone; and the
/// task doing it.
fn file_changed_hooks(
    hooks: Arc<crate::hooks::Hooks>,
) -> (
    mpsc::UnboundedSender<crate::watch::FileChange>,
    tokio::task::JoinHandle<()>,
) {
    let (changes, mut received) = mpsc::unbounded_channel::<crate::watch::FileChange>();
    let task = tokio::spawn(async move {
        while let Some(change) = received.recv().await {
            hooks.file_changed(&change).await;
        }
    });
    (changes, task)
}

/// For a fork at a turn, the source's conversation before that turn; and
/// the number of the new session's first turn (a fork continues the
/// source's numbering).
async fn fork_start(
    open: &OpenMode,
    store: &StoreHandle,
) -> Result<(Option<Vec<Message>>, u32), RuntimeError> {
    match open {
        OpenMode::ForkAt(id, turn) => {
            let history = crate::checkpoints::fork_history(store, id, *turn)
                .await
                .map_err(|err| match err {
                    crate::checkpoints::RewindError::UnknownSession(id) => {
                        RuntimeError::UnknownSession(id)
                    }
                    crate::checkpoints::RewindError::Store(message) => RuntimeError::Store(message),
                    other => RuntimeError::Invalid(format!("--fork {id}@{turn}: {other}")),
                })?;
            Ok((Some(history), *turn))
        }
        OpenMode::Fork(id) => {
            let id = id.clone();
            let last = store
                .call(move |s| s.last_checkpoint_turn(&id))
                .await
                .map_err(store_error)?
                .map_err(store_error)?;
            Ok((None, last + 1))
        }
        OpenMode::New | OpenMode::Resume(_) | OpenMode::ContinueLatest => Ok((None, 1)),
    }
}

/// The stored session to continue (resume, continue-latest), or the one to
/// copy (fork).
async fn find_session(
    open: &OpenMode,
    settings: &Settings,
    store: &StoreHandle,
) -> Result<(Option<SessionRecord>, Option<SessionRecord>), RuntimeError> {
    let lookup = |id: String| async move {
        let found = store
            .call({
                let id = id.clone();
                move |s| s.get_session(&id)
            })
            .await
            .map_err(store_error)?
            .map_err(store_error)?;
        found.ok_or(RuntimeError::UnknownSession(id))
    };
    match open {
        OpenMode::New => Ok((None, None)),
        OpenMode::Resume(id) => Ok((Some(lookup(id.clone()).await?), None)),
        OpenMode::Fork(id) | OpenMode::ForkAt(id, _) => Ok((None, Some(lookup(id.clone()).await?))),
        OpenMode::ContinueLatest => {
            let cwd = settings.cwd.display().to_string();
            let found = store
                .call(move |s| s.latest_session_in(&cwd))
                .await
                .map_err(store_error)?
                .map_err(store_error)?;
            found
                .map(|record| (Some(record), None))
                .ok_or_else(|| RuntimeError::NoEarlierSession(settings.cwd.display().to_string()))
        }
    }
}

/// Stores a new session (a fork starts with its source's conversation and
/// system prompt) and returns its system prompt and history.
async fn create_session(
    options: &SessionOptions,
    session_id: &str,
    fork_of: Option<SessionRecord>,
    fork_history: Option<Vec<Message>>,
) -> Result<(String, Vec<Message>), RuntimeError> {
    let settings = &options.settings;
    let (system_prompt, history) = match (fork_of, fork_history) {
        // A fork at a turn: the source's conversation before it.
        (Some(source), Some(history)) => (source.system_prompt, history),
        (Some(source), None) => {
            let id = source.id.clone();
            let stored = options
                .store
                .call(move |s| s.load_messages(&id))
                .await
                .map_err(store_error)?
                .map_err(store_error)?;
            let mut history = crate::live_history(stored.into_iter().map(|m| m.message).collect());
            // Calls the source left unanswered (it may be running right now)
            // are answered in the copy only.
            crate::answer_dangling_calls(&mut history);
            (source.system_prompt, history)
        }
        (None, _) => (String::new(), Vec::new()),
    };
    // A new session, or a fork of an imported one that was never resumed
    // (it has no system prompt yet): herald's prompt for here.
    let system_prompt = if system_prompt.is_empty() {
        new_system_prompt(settings).await?
    } else {
        system_prompt
    };
    let new = NewSession {
        id: session_id.to_owned(),
        parent_session_id: None,
        agent_id: Some("root".to_owned()),
        source: options.source,
        cwd: settings.cwd.display().to_string(),
        model: settings.model.clone(),
        provider: settings.provider.as_str().to_owned(),
        system_prompt: system_prompt.clone(),
    };
    let copy = history.clone();
    let id = session_id.to_owned();
    options
        .store
        .call(move |s| -> Result<(), herald_store::StoreError> {
            s.create_session(&new)?;
            if !copy.is_empty() {
                s.append_messages(&id, &copy)?;
            }
            Ok(())
        })
        .await
        .map_err(store_error)?
        .map_err(store_error)?;
    Ok((system_prompt, history))
}

/// An imported session has no system prompt: at its first resume it gets
/// the one herald builds here, stored so every later resume sends the same
/// bytes (and its working directory, if the transcript had none).
async fn adopt_system_prompt(
    store: &StoreHandle,
    id: &str,
    settings: &Settings,
) -> Result<String, RuntimeError> {
    let built = new_system_prompt(settings).await?;
    let (id, cwd) = (id.to_owned(), settings.cwd.display().to_string());
    store
        .call(move |s| s.adopt_system_prompt(&id, &built, &cwd))
        .await
        .map_err(store_error)?
        .map_err(store_error)
}

/// Forgets finished agents older than `delegation.prune_after_hours`;
/// nobody waits for it.
/// Whether this session's turns get file snapshots, and why not.
fn file_snapshots(
    settings: &Settings,
    agent: &Agent,
    permissions: &crate::permissions::Permissions,
) -> crate::checkpoints::FileSnapshots {
    use crate::checkpoints::FileSnapshots;
    if !crate::checkpoints::can_change_files(agent.registry(), permissions.mode()) {
        FileSnapshots::ReadOnlySession
    } else if settings.checkpoints.enabled {
        FileSnapshots::Taken
    } else {
        FileSnapshots::TurnedOff
    }
}

fn prune_old_agents(settings: &Settings, store: &StoreHandle) {
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
    for stopped in crate::reap_orphans(store, sessions).await {
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
/// unreadable list is dropped with a warning (returned) rather than
/// blocking the resume.
async fn restore_todos(
    store: &StoreHandle,
    session_id: &str,
    agent: &Agent,
) -> Result<Option<String>, RuntimeError> {
    let id = session_id.to_owned();
    let stored = store
        .call(move |s| s.load_todos(&id))
        .await
        .map_err(store_error)?
        .map_err(store_error)?;
    if let Some(json) = stored
        && let Err(err) = agent.state().todos.restore(&json)
    {
        return Ok(Some(format!(
            "the stored task list of {session_id} is unreadable ({err}); continuing with an empty list"
        )));
    }
    Ok(None)
}

/// herald's system prompt for a new session here, built on the blocking
/// pool: it reads the context files, the memory files and every installed
/// skill (thousands in a big pack, tens of milliseconds), which must not
/// stall the other sessions sharing the runtime (`herald serve`).
async fn new_system_prompt(settings: &Settings) -> Result<String, RuntimeError> {
    let settings = settings.clone();
    tokio::task::spawn_blocking(move || build_system_prompt(&prompt_inputs(&settings)))
        .await
        .map_err(|err| RuntimeError::Config(format!("building the system prompt failed: {err}")))
}

/// What the system prompt of a new root session is built from:
/// the working directory, model, `$HERALD_HOME` (for `SOUL.md`), and the
/// memory and skills layers. Public so `herald context` shows exactly
/// what a new session here would build.
pub fn prompt_inputs(settings: &Settings) -> crate::PromptInputs {
    let mut inputs =
        crate::PromptInputs::new(&settings.cwd, &settings.model).with_home(&settings.home);
    let limits = crate::memory_limits(&settings.memory);
    inputs.memory_block = herald_knowledge::memory_prompt_block(&settings.home, &limits);
    inputs.skills_index = herald_knowledge::skills_prompt_index(
        &settings.home,
        &settings.cwd,
        inputs.budgets.skills_chars,
    );
    inputs
}

/// One `model.routed` event per session-level choice `[routing]` made:
/// the top-level agent's model, summaries, titles and the memory flush.
fn report_routes(
    settings: &Settings,
    model: &str,
    root: Option<routing::Route>,
    flush: Option<routing::Route>,
    events: &EventSink,
) {
    let summary = routing::side_route(settings, Role::Summary, model)
        .ok()
        .flatten();
    let title = routing::side_route(settings, Role::Title, &settings.sessions.title_model)
        .ok()
        .flatten();
    for (role, route) in [
        (Role::Root, root),
        (Role::Summary, summary),
        (Role::Title, title),
        (Role::MemoryFlush, flush),
    ] {
        if let Some(route) = route {
            events.emit(EventKind::ModelRouted {
                role: role.as_str().to_owned(),
                model: route.model,
                reason: route.reason,
            });
        }
    }
}
