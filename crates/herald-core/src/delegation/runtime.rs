//! The delegation runtime one session tree shares: configuration, the child
//! model client, the store, the event output, and the registry of live
//! subagents with their inboxes. Each agent that may delegate gets its own
//! tool instances bound to its [`AgentScope`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use herald_llm::LlmClient;
use herald_store::{AgentFilter, AgentRecord};

use herald_tools::{ToolRegistry, typed};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::args::ChildTask;
use super::budget::TokenBudget;
use super::definitions::AgentDefs;
use super::inbox::{Inbox, Notice};
use super::live::LiveAgent;
use super::messaging::{AgentFollowup, AgentSend};
use super::result::ChildResult;
use super::scope::child_registry;
use super::tools::{AgentCancel, AgentList, AgentStatus, AgentWait, DelegateTask};
use crate::config::{ConfigError, Settings};
use crate::{EventSink, StoreHandle};

/// Who is delegating: the identity the delegation tools of one agent carry.
#[derive(Debug, Clone)]
pub struct AgentScope {
    /// `root` for the top-level agent.
    pub agent_id: String,
    pub session_id: String,
    /// 0 for the top-level agent.
    pub depth: u32,
    /// The budget this agent spends from (children of a delegation).
    pub budget: Option<Arc<TokenBudget>>,
    /// The sessions of its ancestors, root first (empty for the root): live
    /// conversations `session_search` must not show it.
    pub ancestor_sessions: Vec<String>,
    /// The agent's usage meter; its children's meters count into it.
    pub meter: Arc<crate::UsageMeter>,
}

impl AgentScope {
    /// The top-level agent of `session_id`.
    pub fn root(session_id: &str) -> Self {
        Self {
            agent_id: "root".to_owned(),
            session_id: session_id.to_owned(),
            depth: 0,
            budget: None,
            ancestor_sessions: Vec::new(),
            meter: crate::UsageMeter::new(None),
        }
    }
}

/// One agent as a front end shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentOverview {
    pub id: String,
    pub parent_id: String,
    pub depth: u32,
    pub goal: String,
    pub background: bool,
    /// Running (or awaiting an approval), or how it ended.
    pub status: herald_protocol::AgentStatus,
    /// Seconds running so far, or its duration.
    pub seconds: f64,
    pub api_calls: u32,
    pub tokens: herald_protocol::TokenTotals,
    pub current_tool: Option<String>,
}

/// What a restarted child needs beyond its stored conversation (saved as
/// the agent record's `spec`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SpawnSpec {
    pub task: ChildTask,
    pub max_iterations: u32,
    pub can_delegate: bool,
    pub budget_tokens: u64,
    pub summary_limit: usize,
}

/// Everything [`Delegation::new`] needs.
pub struct DelegationSetup {
    pub settings: Settings,
    /// The parent's client, used for children unless `[delegation]` overrides it.
    pub client: Arc<LlmClient>,
    pub store: Option<StoreHandle>,
    pub root_session_id: String,
    /// The root's event sink; subagent events go to the same output.
    pub events: EventSink,
    /// Cancelled when the session ends; background agents hang below it.
    pub cancel: CancellationToken,
}

/// The shared delegation state of one session tree.
pub struct Delegation {
    pub(crate) settings: Settings,
    pub(crate) client: Arc<LlmClient>,
    pub(crate) store: Option<StoreHandle>,
    pub(crate) root_session_id: String,
    pub(crate) events: EventSink,
    pub(crate) cancel: CancellationToken,
    live: Mutex<HashMap<String, Arc<LiveAgent>>>,
    inboxes: Mutex<HashMap<String, Arc<Inbox>>>,
    /// Woken whenever any agent finishes (for `agent_wait`).
    pub(crate) finished: Notify,
    /// Set by [`Delegation::suspend`]: interrupted agents keep their
    /// journal entry as running, so `--resume` restarts them.
    pub(crate) suspending: std::sync::atomic::AtomicBool,
    /// The session's permission layer; children's calls pass its gate.
    permissions: std::sync::OnceLock<Arc<crate::permissions::Permissions>>,
    /// The session tree's call interceptors (hooks, learnings); every
    /// child gets them after its gate.
    interceptors: std::sync::OnceLock<Vec<Arc<dyn crate::intercept::CallInterceptor>>>,
    /// The session's hooks (`subagent_start`/`subagent_stop`, and the
    /// children's `pre_compact`).
    hooks: std::sync::OnceLock<Arc<crate::hooks::Hooks>>,
    /// The session's agent definitions, read once when it opens.
    definitions: std::sync::OnceLock<Arc<AgentDefs>>,
    /// What `delegate_task`'s description lists of them (built once, so
    /// the tool list keeps its bytes for the whole session).
    definitions_listing: std::sync::OnceLock<String>,
    /// Clients for the models agent definitions name, by model.
    model_clients: Mutex<HashMap<String, Arc<LlmClient>>>,
    /// The session's file watch: children's writes are herald's own.
    file_watch: std::sync::OnceLock<Arc<crate::watch::FileWatch>>,
    /// Where the session's file tools and foreground commands go (an
    /// editor's buffers and terminals): children in the same checkout use
    /// them too.
    backends: std::sync::OnceLock<herald_tools::ToolBackends>,
    /// The top-level agent's scope and tools: what a person's follow-up
    /// (the `agent_followup` operation) runs under.
    root: std::sync::OnceLock<(AgentScope, ToolRegistry)>,
}

impl std::fmt::Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegation")
            .field("root_session_id", &self.root_session_id)
            .finish_non_exhaustive()
    }
}

impl Delegation {
    /// Builds the runtime; fails when the `[delegation]` model override is
    /// invalid (an unknown provider, a bad URL).
    pub fn new(setup: DelegationSetup) -> Result<Arc<Self>, ConfigError> {
        let client = child_client(&setup.settings, setup.client)?;
        Ok(Arc::new(Self {
            settings: setup.settings,
            client,
            store: setup.store,
            root_session_id: setup.root_session_id,
            events: setup.events,
            cancel: setup.cancel,
            live: Mutex::default(),
            inboxes: Mutex::default(),
            finished: Notify::new(),
            suspending: std::sync::atomic::AtomicBool::new(false),
            permissions: std::sync::OnceLock::new(),
            interceptors: std::sync::OnceLock::new(),
            hooks: std::sync::OnceLock::new(),
            definitions: std::sync::OnceLock::new(),
            definitions_listing: std::sync::OnceLock::new(),
            model_clients: Mutex::default(),
            file_watch: std::sync::OnceLock::new(),
            backends: std::sync::OnceLock::new(),
            root: std::sync::OnceLock::new(),
        }))
    }

    /// Sets the session's permission layer (once); subagents started
    /// afterwards have their calls judged by it.
    pub(crate) fn set_permissions(&self, permissions: Arc<crate::permissions::Permissions>) {
        let _ = self.permissions.set(permissions);
    }

    /// Sets the call interceptors every child gets (once, when the
    /// session opens).
    pub(crate) fn set_interceptors(
        &self,
        interceptors: Vec<Arc<dyn crate::intercept::CallInterceptor>>,
    ) {
        let _ = self.interceptors.set(interceptors);
    }

    /// Sets the session's hooks (once, when the session opens).
    pub(crate) fn set_hooks(&self, hooks: Arc<crate::hooks::Hooks>) {
        let _ = self.hooks.set(hooks);
    }

    /// The session's hooks, if it has any.
    pub(crate) fn hooks(&self) -> Option<&Arc<crate::hooks::Hooks>> {
        self.hooks.get()
    }

    /// Sets the top-level agent's scope and tools (once, when the session
    /// opens).
    pub(crate) fn set_root(&self, scope: AgentScope, registry: ToolRegistry) {
        let _ = self.root.set((scope, registry));
    }

    /// A person's follow-up to the finished agent `agent_id` (see
    /// [`Delegation::follow_up`]); its result reaches the top-level agent.
    pub async fn follow_up_from_root(
        self: &Arc<Self>,
        agent_id: &str,
        message: &str,
    ) -> Result<(), super::messaging::MessagingError> {
        let Some((scope, registry)) = self.root.get() else {
            return Err(super::messaging::MessagingError::Failed(
                "the session is still opening; try again".to_owned(),
            ));
        };
        self.follow_up(scope, registry, agent_id, message).await
    }

    /// Sets the session's file watch (once, when the session opens).
    pub(crate) fn set_file_watch(&self, watch: Arc<crate::watch::FileWatch>) {
        let _ = self.file_watch.set(watch);
    }

    /// Sets the session's tool backends (once, when the session opens).
    pub(crate) fn set_backends(&self, backends: herald_tools::ToolBackends) {
        let _ = self.backends.set(backends);
    }

    /// The session's tool backends, if it was given any.
    pub(crate) fn backends(&self) -> Option<&herald_tools::ToolBackends> {
        self.backends.get()
    }

    /// The session's file watch, when it watches files.
    pub(crate) fn file_watch(&self) -> Option<&Arc<crate::watch::FileWatch>> {
        self.file_watch.get()
    }

    /// Sets the session's agent definitions (once, when it opens, before
    /// the delegation tools are registered).
    pub fn set_definitions(&self, definitions: AgentDefs) {
        let _ = self.definitions_listing.set(definitions.tool_listing());
        let _ = self.definitions.set(Arc::new(definitions));
    }

    /// The session's agent definitions (none until set).
    pub fn definitions(&self) -> Arc<AgentDefs> {
        self.definitions.get().cloned().unwrap_or_default()
    }

    /// The client a child runs on: the children's usual one, or one for the
    /// `model` an agent definition names (same provider, endpoint and key;
    /// built once per model and session).
    pub(crate) fn client_for(&self, model: Option<&str>) -> Result<Arc<LlmClient>, String> {
        let Some(model) = model.filter(|m| *m != self.client.model()) else {
            return Ok(Arc::clone(&self.client));
        };
        let mut clients = self
            .model_clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = clients.get(model) {
            return Ok(Arc::clone(client));
        }
        let base = self
            .settings
            .child_client_config()
            .unwrap_or_else(|| self.settings.client_config());
        let client = LlmClient::new(herald_llm::ClientConfig {
            model: model.to_owned(),
            ..base
        })
        .map(Arc::new)
        .map_err(|err| format!("cannot build a client for model {model}: {err}"))?;
        clients.insert(model.to_owned(), Arc::clone(&client));
        Ok(client)
    }

    /// The client a child task runs on and, when `[routing]` chose it, the
    /// route: the model the task names (from `[routing] allow_models`),
    /// else its agent definition's model, else the first matching rule,
    /// else the children's usual client. Private tasks get local models
    /// only. The error is for the model.
    pub(crate) fn child_client(
        &self,
        task: &ChildTask,
    ) -> Result<(Arc<LlmClient>, Option<crate::routing::Route>), String> {
        let routing = &self.settings.routing;
        let definition_model = task.definition.as_ref().and_then(|d| d.model.as_deref());
        if let (None, Some(model)) = (&task.model, definition_model) {
            routing
                .must_be_local(task.private, model)
                .map_err(|e| e.to_string())?;
            return Ok((self.client_for(Some(model))?, None));
        }
        let toolsets = task.toolsets.clone().unwrap_or_default();
        let facts = crate::routing::Facts {
            role: crate::routing::Role::Child,
            agent: task.agent.as_deref(),
            toolsets: &toolsets,
            private: task.private,
            requested: task.model.as_deref(),
        };
        match routing
            .choose(&facts, self.client.model())
            .map_err(|e| e.to_string())?
        {
            Some(route) => Ok((self.routed_client(&route)?, Some(route))),
            None => Ok((self.client_for(None)?, None)),
        }
    }

    /// The client for `route`: its model on the children's endpoint, then
    /// its fallback models in order (built once per route and session).
    pub(crate) fn routed_client(
        &self,
        route: &crate::routing::Route,
    ) -> Result<Arc<LlmClient>, String> {
        if route.fallback.is_empty() {
            return self.client_for(Some(&route.model));
        }
        let key = format!("{}|{}", route.model, route.fallback.join("|"));
        if let Some(client) = self
            .model_clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(Arc::clone(client));
        }
        let base = self
            .settings
            .child_client_config()
            .unwrap_or_else(|| self.settings.client_config());
        let build = |model: &str| {
            LlmClient::new(herald_llm::ClientConfig {
                model: model.to_owned(),
                ..base.clone()
            })
            .map_err(|err| format!("cannot build a client for model {model}: {err}"))
        };
        let fallbacks = route
            .fallback
            .iter()
            .map(|m| build(m))
            .collect::<Result<Vec<_>, _>>()?;
        let client = Arc::new(
            build(&route.model)?.with_fallbacks(fallbacks, self.settings.fallback_cooldown),
        );
        self.model_clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, Arc::clone(&client));
        Ok(client)
    }

    /// The session tree's call interceptors, in order.
    pub(crate) fn interceptors(&self) -> &[Arc<dyn crate::intercept::CallInterceptor>] {
        self.interceptors.get().map_or(&[], Vec::as_slice)
    }

    /// A gate for the agent whose events go to `events`, when the session
    /// has a permission layer.
    pub(crate) fn gate_for(
        &self,
        events: &EventSink,
    ) -> Option<Arc<dyn herald_tools::PermissionGate>> {
        self.permissions.get().map(|p| p.gate_for(events.clone()))
    }

    /// The gate of an agent isolated in a worktree (see
    /// [`crate::permissions::Isolation`]).
    pub(crate) fn gate_for_worktree(
        &self,
        events: &EventSink,
        isolation: crate::permissions::Isolation,
    ) -> Option<Arc<dyn herald_tools::PermissionGate>> {
        self.permissions
            .get()
            .map(|p| p.gate_for_worktree(events.clone(), isolation))
    }

    /// `awaiting_approval` while agent `id` waits for a human, else `running`.
    pub(crate) fn running_status(&self, id: &str) -> herald_protocol::AgentStatus {
        match self.permissions.get() {
            Some(p) if p.approvals.is_waiting(id) || p.elicitations.is_waiting(id) => {
                herald_protocol::AgentStatus::AwaitingApproval
            }
            _ => herald_protocol::AgentStatus::Running,
        }
    }

    /// Starts watching the store for `herald agents cancel` run from another
    /// process: every `period`, while agents of this tree are running, one
    /// indexed query finds those marked cancelled and stops them. Ends with
    /// the session (or when the runtime is dropped).
    pub fn watch_external_cancels(self: &Arc<Self>, period: std::time::Duration) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let weak = Arc::downgrade(self);
        let session_cancel = self.cancel.clone();
        let root = self.root_session_id.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(period) => {}
                    () = session_cancel.cancelled() => return,
                }
                let Some(runtime) = weak.upgrade() else {
                    return;
                };
                let running: Vec<Arc<LiveAgent>> = runtime
                    .live_agents()
                    .into_iter()
                    .filter(|a| !a.is_finished())
                    .collect();
                if running.is_empty() {
                    continue;
                }
                let filter = AgentFilter {
                    root_session_id: Some(root.clone()),
                    status: Some(herald_protocol::AgentStatus::Cancelled),
                    limit: 10_000,
                    ..AgentFilter::default()
                };
                let Ok(Ok(cancelled)) = store.call(move |s| s.list_agents(&filter)).await else {
                    continue;
                };
                for agent in running {
                    if cancelled.iter().any(|r| r.id == agent.id) {
                        agent.cancel_externally();
                    }
                }
            }
        });
    }

    /// The inbox of `agent_id`, created on first use.
    pub fn inbox(&self, agent_id: &str) -> Arc<Inbox> {
        let mut inboxes = self.inboxes.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(inboxes.entry(agent_id.to_owned()).or_default())
    }

    /// Adds `delegate_task` and the agent lifecycle tools, bound to `scope`.
    pub fn register_tools(self: &Arc<Self>, registry: &mut ToolRegistry, scope: &AgentScope) {
        let listing = self.definitions_listing.get().map_or("", String::as_str);
        registry.register(super::described::with_description(
            typed(DelegateTask::new(Arc::clone(self), scope.clone())),
            listing,
        ));
        registry.register(typed(AgentStatus::new(Arc::clone(self), scope.clone())));
        registry.register(typed(AgentList::new(Arc::clone(self), scope.clone())));
        registry.register(typed(AgentWait::new(Arc::clone(self), scope.clone())));
        registry.register(typed(AgentCancel::new(Arc::clone(self), scope.clone())));
        registry.register(typed(AgentSend::new(Arc::clone(self), scope.clone())));
        registry.register(typed(AgentFollowup::new(Arc::clone(self), scope.clone())));
    }

    /// A snapshot of every agent this process started in the tree, oldest
    /// first (for front ends: the interactive `/agents` command).
    pub fn overview(&self) -> Vec<AgentOverview> {
        let mut agents = self.live_agents();
        agents.sort_by(|a, b| {
            b.progress
                .elapsed_seconds()
                .total_cmp(&a.progress.elapsed_seconds())
        });
        agents
            .iter()
            .map(|a| {
                let result = a.result();
                AgentOverview {
                    id: a.id.clone(),
                    parent_id: a.parent_id.clone(),
                    depth: a.depth,
                    goal: a.goal.clone(),
                    background: a.background,
                    status: result
                        .as_ref()
                        .map_or_else(|| self.running_status(&a.id), |r| r.status),
                    seconds: result
                        .as_ref()
                        .map_or_else(|| a.progress.elapsed_seconds(), |r| r.duration_seconds),
                    api_calls: result
                        .as_ref()
                        .map_or_else(|| a.progress.api_calls(), |r| r.api_calls),
                    tokens: result
                        .as_ref()
                        .map_or_else(|| a.progress.tokens(), |r| r.tokens),
                    current_tool: a.progress.current_tool(),
                }
            })
            .collect()
    }

    /// Background agents of this tree still running.
    pub fn running_background(&self) -> usize {
        self.live_agents()
            .iter()
            .filter(|a| a.background && !a.is_finished())
            .count()
    }

    /// Every agent this process knows, in no particular order.
    pub(crate) fn live_agents(&self) -> Vec<Arc<LiveAgent>> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// One live agent by id.
    pub(crate) fn live_agent(&self, id: &str) -> Option<Arc<LiveAgent>> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Forgets the finished run of `id` (a follow-up starts a new one; until
    /// it registers, the journal says the agent runs).
    pub(crate) fn remove_live(&self, id: &str) {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    pub(crate) fn add_live(&self, agent: Arc<LiveAgent>) {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(agent.id.clone(), agent);
    }

    /// The cancel token children of `scope` hang below: the agent's own
    /// token for a subagent, the session's for the root.
    pub(crate) fn cancel_parent(&self, scope: &AgentScope) -> CancellationToken {
        self.live_agent(&scope.agent_id)
            .map_or_else(|| self.cancel.clone(), |a| a.cancel.clone())
    }

    /// Delivers a finished background child's result to its parent's inbox.
    /// The journal marks it delivered only when the parent stores the
    /// message carrying it (see `Inbox::take_unsaved`): a crash before then
    /// leaves it undelivered, and the resumed parent receives it again.
    pub(crate) fn deliver(&self, parent_id: &str, result: &ChildResult) {
        let text = serde_json::to_string(result).unwrap_or_default();
        self.inbox(parent_id).finished(Notice {
            agent_id: result.agent_id.clone(),
            text,
        });
    }

    /// Records from the store for this tree (empty without a store).
    pub(crate) async fn stored_agents(&self, filter: AgentFilter) -> Vec<AgentRecord> {
        let Some(store) = &self.store else {
            return Vec::new();
        };
        match store.call(move |s| s.list_agents(&filter)).await {
            Ok(Ok(records)) => records,
            _ => Vec::new(),
        }
    }

    /// After a restart: restarts the unfinished background children of
    /// `scope`'s session from their stored conversations, delivers results
    /// that finished but never reached the parent, and marks unfinished
    /// synchronous children (whose parent call is gone) as interrupted. The
    /// background agents below such a synchronous child are adopted by
    /// `scope`'s agent, their nearest live ancestor: restarted (or their
    /// undelivered results delivered) like its own background children, and
    /// journaled as such. Returns the ids restarted.
    ///
    /// Boxed because a restarted orchestrator recovers its own children: the
    /// recursion needs a nameable `Send` future.
    pub fn recover<'a>(
        self: &'a Arc<Self>,
        scope: &'a AgentScope,
        parent_registry: &'a ToolRegistry,
    ) -> futures_util::future::BoxFuture<'a, Vec<String>> {
        Box::pin(self.recover_inner(scope, parent_registry))
    }

    async fn recover_inner(
        self: &Arc<Self>,
        scope: &AgentScope,
        parent_registry: &ToolRegistry,
    ) -> Vec<String> {
        let Some(store) = self.store.clone() else {
            return Vec::new();
        };
        let filter = AgentFilter {
            parent_session_id: Some(scope.session_id.clone()),
            limit: 10_000,
            ..AgentFilter::default()
        };
        // Oldest first.
        let mut records: Vec<AgentRecord> = self.stored_agents(filter).await;
        records.reverse();
        // A synchronous child cannot restart (its caller's turn is gone):
        // it ends interrupted, and the background agents below it become
        // this agent's, handled with its own below.
        let mut adopted = Vec::new();
        for record in records
            .iter()
            .filter(|r| !r.background && r.is_unfinished())
        {
            adopted.extend(self.interrupt_and_adopt(&store, record, scope).await);
        }
        records.retain(|r| r.background);
        records.extend(adopted);
        let mut restarted = Vec::new();
        for record in records {
            if !record.is_unfinished() {
                if !record.delivered {
                    // Finished but its result never reached the parent's
                    // stored conversation: hand it over again.
                    let result = super::child::result_from_record(&record);
                    self.deliver(&scope.agent_id, &result);
                }
                continue;
            }
            match self
                .restart_spec(&store, &record, scope, parent_registry)
                .await
            {
                Ok(spawn) => {
                    self.inbox(&scope.agent_id).dispatched();
                    restarted.push(record.id.clone());
                    let cancel = self.cancel_parent(scope).child_token();
                    let runtime = Arc::clone(self);
                    tokio::spawn(async move {
                        runtime.run_child(spawn, cancel).await;
                    });
                }
                Err(reason) => {
                    tracing::warn!(agent = %record.id, %reason, "cannot restart a background agent");
                    self.interrupt_subtree(&store, &record).await;
                }
            }
        }
        restarted
    }

    /// Everything needed to restart a journaled background agent: its spec,
    /// tools, repaired conversation, and a budget that already holds what
    /// it spent before.
    pub(crate) async fn restart_spec(
        &self,
        store: &StoreHandle,
        record: &AgentRecord,
        scope: &AgentScope,
        parent_registry: &ToolRegistry,
    ) -> Result<super::child::Spawn, String> {
        let spec: SpawnSpec = record
            .spec
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .ok_or("its journal entry has no readable spawn spec")?;
        let registry = child_registry(parent_registry, &spec.task)?;
        let (client, _) = self.child_client(&spec.task)?;
        let id = record.session_id.clone();
        let session = store
            .call(move |s| s.get_session(&id))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        // What its earlier runs spent, from the stored requests (a crash
        // left no journal totals): its own session's, and with its
        // descendants' sessions.
        let id = record.session_id.clone();
        let (usage, tree_usage) = store
            .call(move |s| {
                Ok::<_, herald_store::StoreError>((s.session_totals(&id)?, s.tree_usage(&id)?))
            })
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let (history, prior) = match session {
            Some(session) => {
                let history = crate::restore_conversation(store, &record.session_id).await?;
                let prior = super::child::PriorUsage {
                    tokens: herald_protocol::TokenTotals {
                        input: session.input_tokens,
                        output: session.output_tokens,
                        cached: session.cached_tokens,
                    },
                    cost_usd: Some(session.cost_usd),
                    usage,
                    tree_usage,
                };
                (Some(history), prior)
            }
            // Journaled but never started: it starts from its goal.
            None => (None, super::child::PriorUsage::default()),
        };
        let budget = TokenBudget::new(spec.budget_tokens, scope.budget.clone());
        budget.add(prior.tokens.input + prior.tokens.output);
        // An adopted agent (its synchronous parent was interrupted) keeps
        // its depth, and with it the limits its delegation was given.
        let mut parent = scope.clone();
        parent.depth = record.depth.saturating_sub(1).max(scope.depth);
        Ok(super::child::Spawn {
            agent_id: record.id.clone(),
            session_id: record.session_id.clone(),
            parent,
            registry,
            can_delegate: spec.can_delegate,
            max_iterations: spec.max_iterations,
            budget,
            background: true,
            history,
            parent_state: None,
            summary_limit: spec.summary_limit,
            task: spec.task,
            prior,
            client,
            followup: None,
        })
    }

    /// Ends the unfinished synchronous child `record` as interrupted and
    /// moves the background agents below it under `scope`'s agent (see
    /// `Store::interrupt_and_adopt`); returns them. If the store fails, the
    /// whole subtree is marked interrupted instead, so nothing stays
    /// `running`.
    async fn interrupt_and_adopt(
        &self,
        store: &StoreHandle,
        record: &AgentRecord,
        scope: &AgentScope,
    ) -> Vec<AgentRecord> {
        let (id, agent, session) = (
            record.id.clone(),
            scope.agent_id.clone(),
            scope.session_id.clone(),
        );
        match store
            .call(move |s| s.interrupt_and_adopt(&id, &agent, &session))
            .await
        {
            Ok(Ok(adopted)) => {
                for orphan in &adopted {
                    tracing::info!(
                        agent = %orphan.id,
                        interrupted = %record.id,
                        adopter = %scope.agent_id,
                        "a background agent below an interrupted synchronous one goes to its nearest live ancestor"
                    );
                }
                adopted
            }
            Ok(Err(err)) => {
                tracing::warn!(agent = %record.id, %err, "cannot hand up the agents below an interrupted one");
                self.interrupt_subtree(store, record).await;
                Vec::new()
            }
            Err(err) => {
                tracing::warn!(agent = %record.id, %err, "cannot hand up the agents below an interrupted one");
                self.interrupt_subtree(store, record).await;
                Vec::new()
            }
        }
    }

    /// Marks `record` and every unfinished agent below it `interrupted`:
    /// no process will run them again.
    async fn interrupt_subtree(&self, store: &StoreHandle, record: &AgentRecord) {
        let mut pending = vec![record.clone()];
        while let Some(agent) = pending.pop() {
            let (id, child_session) = (agent.id.clone(), agent.session_id.clone());
            let below = store
                .call(move |s| {
                    let _ = s.cancel_agent(&id, herald_protocol::AgentStatus::Interrupted);
                    s.list_agents(&AgentFilter {
                        parent_session_id: Some(child_session),
                        limit: 10_000,
                        ..AgentFilter::default()
                    })
                })
                .await;
            if let Ok(Ok(children)) = below {
                pending.extend(children.into_iter().filter(AgentRecord::is_unfinished));
            }
        }
    }

    /// Cancels the running agent `id` of this tree (and so its subtree) on a
    /// user's request. False when no such agent is running here.
    pub fn cancel_agent(&self, id: &str) -> bool {
        match self.live_agent(id) {
            Some(agent) if !agent.is_finished() => {
                agent.cancel_by_user();
                true
            }
            _ => false,
        }
    }

    /// Cancels every agent of the tree (the session is ending).
    pub fn cancel_all(&self) {
        self.cancel.cancel();
    }

    /// Stops every running agent for a later `--resume`: their tools are
    /// cancelled (killing their processes) but their journal entries stay
    /// `running`, so resuming the session restarts them from their stored
    /// conversations. Returns how many were suspended.
    pub async fn suspend(&self, limit: std::time::Duration) -> usize {
        let running = self.running_background();
        self.suspending
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.cancel.cancel();
        self.settle(limit).await;
        running
    }

    /// Waits up to `limit` for running background agents to finish (after
    /// [`Delegation::cancel_all`], so they record how they ended).
    pub async fn settle(&self, limit: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let finished = self.finished.notified();
            tokio::pin!(finished);
            finished.as_mut().enable();
            if self.running_background() == 0 {
                return;
            }
            tokio::select! {
                () = finished => {}
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }
}

/// The client children use: the parent's, unless `[delegation]` names a
/// model, provider, base URL or key. The override's endpoint and key were
/// resolved with the settings ([`Settings::child_client_config`]): a child
/// on another provider uses that provider's own key and base URL.
fn child_client(
    settings: &Settings,
    parent: Arc<LlmClient>,
) -> Result<Arc<LlmClient>, ConfigError> {
    let Some(config) = settings.child_client_config() else {
        return Ok(parent);
    };
    LlmClient::new(config)
        .map(Arc::new)
        .map_err(|err| ConfigError::Invalid(format!("[delegation] model override: {err}")))
}
