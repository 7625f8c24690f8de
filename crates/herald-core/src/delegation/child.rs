//! Running one child agent: its session and journal entry, a fresh agent
//! with its own conversation and tool state, the inactivity watchdog, and the
//! result the parent receives.

use std::sync::Arc;
use std::time::{Duration, Instant};

use herald_protocol::{AgentStatus, EventKind, Message, TokenTotals, UsageTotals};
use herald_store::{AgentFinish, AgentRecord, NewSession, SessionSource};
use herald_tools::{AgentState, ToolRegistry};
use tokio_util::sync::CancellationToken;

use super::args::{ChildRole, ChildTask};
use super::budget::TokenBudget;
use super::live::LiveAgent;
use super::prompt::{DepthFacts, child_system_prompt};
use super::result::{ChildResult, cap_summary, files_note, tool_trace};
use super::runtime::{AgentScope, Delegation};
use crate::{Agent, AgentSetup, EventSink, ExitReason, Recorder};

/// One child to run.
pub(crate) struct Spawn {
    pub task: ChildTask,
    pub agent_id: String,
    pub session_id: String,
    /// The delegating agent.
    pub parent: AgentScope,
    /// The child's tools, without delegation tools (added here when allowed).
    pub registry: ToolRegistry,
    pub can_delegate: bool,
    pub max_iterations: u32,
    pub budget: Arc<TokenBudget>,
    pub background: bool,
    /// A stored conversation to continue (restart), or `None` for a new child.
    pub history: Option<Vec<Message>>,
    /// The parent's tool state, to note files the child changed that the
    /// parent had read.
    pub parent_state: Option<Arc<AgentState>>,
    /// Longest summary the parent receives before it is cut.
    pub summary_limit: usize,
    /// What a restarted child had spent before (counted in its result).
    pub prior: PriorUsage,
    /// The model client it runs on (an agent definition may name a model).
    pub client: Arc<herald_llm::LlmClient>,
    /// A follow-up: a new turn with this text on top of its stored
    /// conversation (`agent_followup`), instead of resuming it.
    pub followup: Option<String>,
}

/// Usage of a child's earlier runs (before a crash or suspension).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PriorUsage {
    pub tokens: TokenTotals,
    pub cost_usd: Option<f64>,
    /// Its own totals as the journal recorded them (added to this run's).
    pub usage: UsageTotals,
    /// Its subtree's totals as the journal recorded them.
    pub tree_usage: UsageTotals,
}

impl Default for PriorUsage {
    /// A new child: it spent nothing, and nothing is a known cost (an
    /// unknown one would make every sum with it unknown).
    fn default() -> Self {
        Self {
            tokens: TokenTotals::default(),
            cost_usd: Some(0.0),
            usage: UsageTotals::default(),
            tree_usage: UsageTotals::default(),
        }
    }
}

impl Delegation {
    /// Runs `spawn` to its end and reports it: store record, events, result.
    pub(crate) async fn run_child(
        self: &Arc<Self>,
        mut spawn: Spawn,
        cancel: CancellationToken,
    ) -> ChildResult {
        let started = Instant::now();
        let depth = spawn.parent.depth + 1;
        let live = Arc::new(LiveAgent::new(
            spawn.agent_id.clone(),
            spawn.parent.agent_id.clone(),
            spawn.parent.session_id.clone(),
            spawn.session_id.clone(),
            depth,
            spawn.task.role.as_str(),
            spawn.task.goal.clone(),
            spawn.background,
            spawn.client.model().to_owned(),
            cancel.clone(),
            crate::UsageMeter::new(Some(Arc::clone(&spawn.parent.meter))),
        ));
        self.add_live(Arc::clone(&live));
        let out = self
            .events
            .for_agent(&spawn.parent.session_id, &spawn.agent_id);
        out.emit(EventKind::SubagentStarted {
            parent_id: spawn.parent.agent_id.clone(),
            depth,
            goal: spawn.task.goal.clone(),
            background: spawn.background,
            child_session_id: spawn.session_id.clone(),
        });
        let prepared = match self.subagent_start_hooks(&mut spawn, depth).await {
            Ok(()) => self.prepare_and_run(&spawn, &live, depth, &cancel).await,
            Err(blocked) => Err(blocked),
        };
        let mut result = match prepared {
            Ok(result) => result,
            Err(message) => ChildResult {
                task_index: spawn.task.index,
                agent_id: spawn.agent_id.clone(),
                status: AgentStatus::Error,
                summary: String::new(),
                exit_reason: ExitReason::Error,
                api_calls: 0,
                duration_seconds: 0.0,
                model: spawn.client.model().to_owned(),
                tokens: TokenTotals::default(),
                cost_usd: Some(0.0),
                tool_trace: Vec::new(),
                error: Some(message),
                worktree: None,
            },
        };
        result.duration_seconds = round_ms(started.elapsed());
        // Suspended for a later `--resume`: journaled as `suspended` (with
        // what it spent so far) and restarted by the resume; its parent gets
        // nothing now (the restarted agent reports instead).
        let suspended = result.status == AgentStatus::Interrupted
            && self.suspending.load(std::sync::atomic::Ordering::Relaxed);
        if let Some(store) = self.store.as_ref() {
            let id = spawn.agent_id.clone();
            let finish = AgentFinish {
                status: if suspended {
                    AgentStatus::Suspended
                } else {
                    result.status
                },
                exit_reason: result.exit_reason,
                result: result.summary.clone(),
                error: result.error.clone(),
                iterations: result.api_calls,
                usage: add_usage(&live.meter.own().totals(), &spawn.prior.usage),
                tree_usage: add_usage(&live.meter.tree().totals(), &spawn.prior.tree_usage),
            };
            let _ = store.call(move |s| s.finish_agent(&id, &finish)).await;
        }
        // Recorded in the store first: once an agent counts as finished its
        // row says so too (`settle` relies on it at exit).
        live.finish(result.clone());
        out.emit(EventKind::SubagentCompleted {
            parent_id: spawn.parent.agent_id.clone(),
            depth,
            status: result.status,
            exit_reason: result.exit_reason,
            summary: preview(&result.summary, 300),
            tokens: result.tokens,
            cost_usd: result.cost_usd,
            usage: live.meter.own().totals(),
            tree_usage: live.meter.tree().totals(),
            duration_seconds: result.duration_seconds,
        });
        if let Some(hooks) = self.hooks() {
            let facts = hook_facts(&spawn, depth);
            hooks
                .subagent_stop(facts, result.status, result.exit_reason, &result.summary)
                .await;
        }
        if spawn.background && !suspended {
            // Filed before waiters wake, so `agent_wait` can claim it.
            self.deliver(&spawn.parent.agent_id, &result);
        }
        self.finished.notify_waiters();
        result
    }

    async fn prepare_and_run(
        self: &Arc<Self>,
        spawn: &Spawn,
        live: &Arc<LiveAgent>,
        depth: u32,
        cancel: &CancellationToken,
    ) -> Result<ChildResult, String> {
        let worktree = match &spawn.task.isolation {
            Some(base) => Some(
                super::worktree::open(
                    &self.settings.home,
                    &self.settings.cwd,
                    &spawn.agent_id,
                    base,
                    self.store.as_ref(),
                )
                .await?,
            ),
            None => None,
        };
        let cwd = worktree
            .as_ref()
            .map_or_else(|| self.settings.cwd.clone(), |w| w.cwd.clone());
        let max_depth = self.settings.delegation.spawn_depth();
        let mut registry = spawn.registry.clone();
        let mut ancestor_sessions = spawn.parent.ancestor_sessions.clone();
        ancestor_sessions.push(spawn.parent.session_id.clone());
        let scope = AgentScope {
            agent_id: spawn.agent_id.clone(),
            session_id: spawn.session_id.clone(),
            depth,
            budget: Some(Arc::clone(&spawn.budget)),
            ancestor_sessions,
            meter: Arc::clone(&live.meter),
        };
        // The parent's session_search is bound to the parent's session: the
        // child's own excludes its session and every ancestor's.
        if let (Some(store), true) = (&self.store, registry.get("session_search").is_some()) {
            let mut hidden = scope.ancestor_sessions.clone();
            hidden.push(scope.session_id.clone());
            registry.register(herald_tools::typed(crate::SessionSearch::hiding(
                store.clone(),
                hidden,
            )));
        }
        if spawn.can_delegate {
            self.register_tools(&mut registry, &scope);
        }
        let facts = DepthFacts {
            depth,
            max_depth,
            can_delegate: spawn.can_delegate,
        };
        let (system_prompt, history) = match &spawn.history {
            Some(history) => (
                self.stored_prompt(&spawn.session_id).await?,
                history.clone(),
            ),
            None => {
                let mut prompt = child_system_prompt(&spawn.task, &cwd, facts);
                if let Some(w) = &worktree {
                    prompt.push_str(&super::prompt::worktree_note(&w.branch, &w.repo));
                }
                (prompt, Vec::new())
            }
        };
        let recorder = match &self.store {
            Some(store) => {
                let id = spawn.agent_id.clone();
                if spawn.history.is_none() {
                    let new = NewSession {
                        id: spawn.session_id.clone(),
                        parent_session_id: Some(spawn.parent.session_id.clone()),
                        agent_id: Some(spawn.agent_id.clone()),
                        source: SessionSource::Subagent,
                        cwd: cwd.display().to_string(),
                        model: spawn.client.model().to_owned(),
                        provider: spawn.client.provider().as_str().to_owned(),
                        system_prompt: system_prompt.clone(),
                    };
                    store
                        .call(move |s| s.create_session(&new))
                        .await
                        .map_err(|e| e.to_string())?
                        .map_err(|e| format!("cannot store the child session: {e}"))?;
                }
                let _ = store.call(move |s| s.mark_agent_running(&id)).await;
                Some(Recorder {
                    store: store.clone(),
                    session_id: spawn.session_id.clone(),
                })
            }
            None => None,
        };
        let restarting = spawn.history.is_some();
        // The latest retry reason or error, for the log if the child times out.
        let last_error = Arc::new(std::sync::Mutex::new(None::<String>));
        let mut agent = Agent::new(AgentSetup {
            client: Arc::clone(&spawn.client),
            registry: Arc::new(registry),
            system_prompt,
            history,
            cwd,
            max_iterations: spawn.max_iterations,
            stream_deltas: false,
            events: self.child_sink(spawn, live, depth, &last_error),
            recorder,
            budget: Some(Arc::clone(&spawn.budget)),
            inbox: Some(self.inbox(&spawn.agent_id)),
            await_background: true,
        });
        agent.set_compression(self.settings.compression.clone());
        agent.set_meter(Arc::clone(&live.meter));
        agent.set_steering(Arc::clone(&live.mailbox));
        let routing = &self.settings.routing;
        if let Some(route) =
            routing.long_context(u64::MAX, spawn.client.model(), spawn.task.private)
            && let Ok(client) = self.routed_client(&route)
        {
            agent.set_long_context(
                routing.long_context_tokens,
                client,
                crate::routing::Role::Child,
            );
        }
        // Children summarise with `[compression] model` too, on their endpoint.
        let summary_model = self.settings.compression.model.trim();
        if !summary_model.is_empty()
            && let Ok(client) = self.client_for(Some(summary_model))
        {
            agent.set_summary_client(client);
        }
        let gate = match &worktree {
            Some(w) => self.gate_for_worktree(
                agent.events(),
                crate::permissions::Isolation {
                    worktree: w.path.clone(),
                    parent_checkout: w.repo.clone(),
                    git_dir: w.git_dir.clone(),
                },
            ),
            None => self.gate_for(agent.events()),
        };
        if let Some(gate) = gate {
            agent.set_gate(gate);
        }
        if let Some(w) = &worktree {
            w.lock().await;
        }
        for interceptor in self.interceptors() {
            agent.add_interceptor(Arc::clone(interceptor));
        }
        agent.set_hooks(self.hooks().cloned());
        if let Some(watch) = self.file_watch() {
            agent.set_file_watch(Arc::clone(watch), false);
        }
        // A child in the session's checkout edits the editor's buffers and
        // runs in its terminals like the top-level agent; one in its own
        // worktree works on files the editor does not show.
        if let (None, Some(backends)) = (&worktree, self.backends()) {
            agent.state().set_backends(backends.clone());
        }
        if let Some(store) = &self.store {
            agent
                .state()
                .set_process_journal(Arc::new(crate::StoreProcessJournal::new(
                    store.clone(),
                    &spawn.session_id,
                    Some(self.settings.home.join("processes")),
                )));
        }
        if spawn.can_delegate && restarting {
            let registry = ToolRegistry::clone(agent_registry(&agent));
            self.recover(&scope, &registry).await;
        }
        let timeout = self.settings.delegation.child_timeout_seconds;
        let own_inbox = self.inbox(&spawn.agent_id);
        let turn_cancel = cancel.clone();
        let outcome = {
            let turn = async {
                if let Some(text) = &spawn.followup {
                    agent.run_turn(text.clone(), &turn_cancel).await
                } else if restarting && !agent.messages().is_empty() {
                    agent.resume_turn(&turn_cancel).await
                } else {
                    agent.run_turn(spawn.task.goal.clone(), &turn_cancel).await
                }
            };
            tokio::pin!(turn);
            tokio::select! {
                outcome = &mut turn => (outcome, false),
                () = watchdog(live, &own_inbox, timeout) => {
                    turn_cancel.cancel();
                    (turn.await, true)
                }
            }
        };
        let (outcome, timed_out) = outcome;
        // Messages it never reached a tool boundary for are missed.
        for missed in live.mailbox.close() {
            if let Some(receipt) = missed.receipt {
                agent.events().emit(EventKind::AgentMessage {
                    receipt,
                    state: herald_protocol::MessageDelivery::Missed,
                });
            }
        }
        let worktree = match &worktree {
            Some(w) => {
                w.unlock().await;
                Some(w.report().await)
            }
            None => None,
        };
        let api_calls = live.progress.api_calls();
        let usage = agent.usage();
        let (status, exit_reason, error) = if timed_out {
            let reached = if api_calls == 0 {
                self.log_unreached_child(spawn, live, timeout, &last_error);
                "it never reached the model (no API call completed — check the child model, base URL and key)".to_owned()
            } else {
                tracing::warn!(
                    agent_id = %spawn.agent_id,
                    api_calls,
                    timeout_seconds = timeout,
                    "child timed out after reaching the model"
                );
                format!("it had reached the model ({api_calls} API calls) and then went quiet")
            };
            (
                AgentStatus::Timeout,
                ExitReason::Timeout,
                Some(format!(
                    "no API or tool activity for {timeout} s ([delegation] child_timeout_seconds); {reached}"
                )),
            )
        } else {
            match outcome.exit_reason {
                ExitReason::Interrupted if live.cancelled_by().is_some() => (
                    AgentStatus::Interrupted,
                    ExitReason::Interrupted,
                    live.cancelled_by().map(str::to_owned),
                ),
                ExitReason::Interrupted => (
                    AgentStatus::Interrupted,
                    ExitReason::Interrupted,
                    Some("interrupted before it finished".to_owned()),
                ),
                ExitReason::Error => (
                    AgentStatus::Failed,
                    ExitReason::Error,
                    outcome.error.clone(),
                ),
                ExitReason::Budget => (
                    if outcome.final_response.is_empty() {
                        AgentStatus::Failed
                    } else {
                        AgentStatus::Completed
                    },
                    ExitReason::Budget,
                    Some(format!(
                        "the delegation tree's token budget ({} tokens) is spent; the summary is what the child had so far",
                        spawn.budget.limit()
                    )),
                ),
                reason => (AgentStatus::Completed, reason, None),
            }
        };
        let mut summary = if outcome.final_response.is_empty() {
            agent_last_text(&agent)
        } else {
            outcome.final_response.clone()
        };
        let cache_file = self
            .settings
            .home
            .join("cache")
            .join(format!("subagent-{}.md", spawn.agent_id));
        summary = cap_summary(&summary, spawn.summary_limit, &cache_file);
        if let Some(parent_state) = &spawn.parent_state {
            let changed: Vec<_> = agent
                .state()
                .files_written()
                .into_iter()
                .filter(|p| parent_state.has_read(p))
                .collect();
            if let Some(note) = files_note(&changed) {
                summary.push_str(&note);
            }
        }
        Ok(ChildResult {
            task_index: spawn.task.index,
            agent_id: spawn.agent_id.clone(),
            status,
            summary,
            exit_reason,
            api_calls,
            duration_seconds: 0.0,
            model: spawn.client.model().to_owned(),
            tokens: add_totals(usage.totals(), spawn.prior.tokens),
            cost_usd: herald_protocol::add_cost(agent.cost_usd(), spawn.prior.cost_usd),
            tool_trace: tool_trace(agent.messages()),
            error,
            worktree,
        })
    }

    /// Runs the `subagent_start` hooks: context they add is appended to a
    /// new child's task; a block is the child's error.
    async fn subagent_start_hooks(&self, spawn: &mut Spawn, depth: u32) -> Result<(), String> {
        let Some(hooks) = self.hooks() else {
            return Ok(());
        };
        let context = hooks.subagent_start(hook_facts(spawn, depth)).await?;
        if let Some(context) = context
            && spawn.history.is_none()
        {
            spawn.task.goal.push_str("\n\n");
            spawn.task.goal.push_str(&context);
        }
        Ok(())
    }

    async fn stored_prompt(&self, session_id: &str) -> Result<String, String> {
        let Some(store) = &self.store else {
            return Err("no store to restart from".to_owned());
        };
        let id = session_id.to_owned();
        match store.call(move |s| s.get_session(&id)).await {
            Ok(Ok(Some(record))) => Ok(record.system_prompt),
            Ok(Ok(None)) => Err(format!("the child session {session_id} is missing")),
            Ok(Err(err)) => Err(err.to_string()),
            Err(err) => Err(err.to_string()),
        }
    }

    /// The child's event sink: tracks activity and progress, and forwards a
    /// `subagent.tool` line per tool call. The child's own conversation
    /// events stay out of the parent's output.
    /// Its own events are stored with the child's session.
    fn child_sink(
        &self,
        spawn: &Spawn,
        live: &Arc<LiveAgent>,
        depth: u32,
        last_error: &Arc<std::sync::Mutex<Option<String>>>,
    ) -> EventSink {
        let out = self
            .events
            .for_agent(&spawn.parent.session_id, &spawn.agent_id);
        let live = Arc::clone(live);
        let parent_id = spawn.parent.agent_id.clone();
        let last_error = Arc::clone(last_error);
        let sink = EventSink::new(&spawn.session_id, &spawn.agent_id, move |event| {
            let progress = &live.progress;
            match &event.kind {
                EventKind::Usage {
                    input_tokens,
                    output_tokens,
                    cached_tokens,
                    cost_usd,
                } => progress.api_call(*input_tokens, *output_tokens, *cached_tokens, *cost_usd),
                EventKind::ToolStarted { name, .. } => {
                    progress.tool_started(name);
                    out.emit(EventKind::SubagentTool {
                        parent_id: parent_id.clone(),
                        depth,
                        tool: name.clone(),
                        tokens: progress.tokens(),
                    });
                }
                EventKind::ToolCompleted { .. } => progress.tool_finished(),
                EventKind::Retry { reason, .. } => {
                    *last_error
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(reason.clone());
                    progress.touch();
                }
                EventKind::Error { message, .. } => {
                    *last_error
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(message.clone());
                }
                EventKind::AssistantMessage { .. } => progress.touch(),
                // Receipts of `agent_send` reach whoever sent the message.
                EventKind::AgentMessage { .. } => out.emit(event.kind.clone()),
                // The tree's front end shows the provider pushing back; a
                // child slowed down by it is busy, not idle.
                EventKind::ProviderThrottled { .. } => {
                    progress.touch();
                    out.emit(event.kind.clone());
                }
                // A human must see (and answer) what a subagent asks.
                EventKind::ApprovalRequested { .. }
                | EventKind::ApprovalResolved { .. }
                | EventKind::ElicitationRequested { .. }
                | EventKind::ElicitationResolved { .. } => {
                    out.emit(event.kind.clone());
                }
                _ => {}
            }
        });
        match &self.store {
            Some(store) => sink.recorded_like(&self.events, store, &spawn.session_id),
            None => sink,
        }
    }

    /// Writes what the log needs to tell why a child never reached the model.
    fn log_unreached_child(
        &self,
        spawn: &Spawn,
        live: &LiveAgent,
        timeout_seconds: u64,
        last_error: &std::sync::Mutex<Option<String>>,
    ) {
        let child_config = self.settings.child_client_config();
        let shared_client = child_config.is_none();
        let mut client = child_config.unwrap_or_else(|| self.settings.client_config());
        // An agent definition's model.
        spawn.client.model().clone_into(&mut client.model);
        let last_error = last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        crate::diagnostics::child_never_reached_model(&crate::diagnostics::UnreachedChild {
            agent_id: &spawn.agent_id,
            session_id: &spawn.session_id,
            client: &client,
            endpoint: spawn.client.endpoint(),
            shared_client,
            timeout_seconds,
            elapsed: Duration::from_secs_f64(live.progress.elapsed_seconds()),
            idle: Duration::from_millis(live.progress.idle_ms()),
            current_tool: live.progress.current_tool(),
            last_error,
        });
    }
}

/// What the subagent hooks are told about `spawn`.
fn hook_facts(spawn: &Spawn, depth: u32) -> crate::hooks::SubagentFacts<'_> {
    crate::hooks::SubagentFacts {
        agent_id: &spawn.agent_id,
        session_id: &spawn.session_id,
        parent_id: &spawn.parent.agent_id,
        parent_session_id: &spawn.parent.session_id,
        goal: &spawn.task.goal,
        role: spawn.task.role.as_str(),
        depth,
        background: spawn.background,
    }
}

fn agent_registry(agent: &Agent) -> &ToolRegistry {
    agent.registry()
}

fn agent_last_text(agent: &Agent) -> String {
    agent
        .messages()
        .iter()
        .rev()
        .find(|m| m.role == herald_protocol::Role::Assistant && !m.content.is_empty())
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

/// Resolves when the child has been idle for `timeout_secs` (never when 0).
/// A child running a tool call (a long command, a synchronous
/// `delegate_task` waiting on its own children) or whose background children
/// still run is busy, not idle: its clock starts when that ends.
async fn watchdog(live: &LiveAgent, inbox: &super::inbox::Inbox, timeout_secs: u64) {
    if timeout_secs == 0 {
        return std::future::pending().await;
    }
    let limit = timeout_secs.saturating_mul(1000);
    loop {
        if live.progress.in_tool() || inbox.running() > 0 {
            live.progress.touch();
            tokio::time::sleep(Duration::from_millis(limit.min(500))).await;
            continue;
        }
        let idle = live.progress.idle_ms();
        if idle >= limit {
            return;
        }
        tokio::time::sleep(Duration::from_millis(limit - idle)).await;
    }
}

fn add_totals(a: TokenTotals, b: TokenTotals) -> TokenTotals {
    TokenTotals {
        input: a.input + b.input,
        output: a.output + b.output,
        cached: a.cached + b.cached,
    }
}

fn round_ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

/// The first `max` chars of `text`, marked when cut.
pub(crate) fn preview(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A result rebuilt from a stored record (delivered after a restart).
pub(crate) fn result_from_record(record: &AgentRecord) -> ChildResult {
    let duration = match (record.started_at, record.ended_at) {
        (Some(start), Some(end)) => (end - start).max(0) as f64 / 1000.0,
        _ => 0.0,
    };
    ChildResult {
        task_index: 0,
        agent_id: record.id.clone(),
        status: record.status,
        summary: record.result.clone().unwrap_or_default(),
        exit_reason: record.exit_reason.unwrap_or(ExitReason::Interrupted),
        api_calls: record.iterations,
        duration_seconds: duration,
        model: record.model.clone(),
        tokens: record.tokens,
        cost_usd: record.cost_usd,
        tool_trace: Vec::new(),
        error: record.error.clone(),
        worktree: None,
    }
}

/// Two usage totals added (a cost unknown in either is unknown).
fn add_usage(a: &UsageTotals, b: &UsageTotals) -> UsageTotals {
    UsageTotals {
        input: a.input + b.input,
        output: a.output + b.output,
        cached: a.cached + b.cached,
        cache_creation: a.cache_creation + b.cache_creation,
        cost_usd: herald_protocol::add_cost(a.cost_usd, b.cost_usd)
            .map(herald_protocol::round_cost),
        requests: a.requests + b.requests,
    }
}

/// Whether a task's child may delegate further.
pub(crate) fn may_delegate(
    task: &ChildTask,
    parent_depth: u32,
    settings: &crate::Settings,
) -> bool {
    task.role == ChildRole::Orchestrator
        && settings.delegation.orchestrator_enabled
        && parent_depth + 1 < settings.delegation.spawn_depth()
}
