//! The delegation tools: `delegate_task` and the background
//! agent lifecycle tools `agent_status`, `agent_list`, `agent_wait` and
//! `agent_cancel`. Each instance is bound to the agent that owns
//! it, so depth, budget and the inbox are that agent's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use herald_store::{AgentFilter, AgentRecord, NewAgent, new_id};
use herald_tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::apply::apply_definitions;
use super::args::{DelegateArgs, child_tasks};
use super::budget::TokenBudget;
use super::child::{Spawn, may_delegate, preview, result_from_record};
use super::live::LiveAgent;
use super::result::ChildResult;
use super::runtime::{AgentScope, Delegation, SpawnSpec};
use super::scope::child_registry;

pub(crate) const TOOLSET: &str = "delegation";

/// Longest `agent_wait` a model may ask for.
const MAX_WAIT_SECS: u64 = 3600;
const DEFAULT_WAIT_SECS: u64 = 300;

fn json_text(value: &serde_json::Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// `delegate_task`: runs children and returns their summaries.
pub struct DelegateTask {
    rt: Arc<Delegation>,
    me: AgentScope,
}

impl DelegateTask {
    /// The tool for the agent `me`.
    pub fn new(rt: Arc<Delegation>, me: AgentScope) -> Self {
        Self { rt, me }
    }
}

impl TypedTool for DelegateTask {
    type Args = DelegateArgs;
    const NAME: &'static str = "delegate_task";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str = "Hand work to subagents that see nothing of yours: put every needed fact in \
goal/context; only each one's final summary returns. For independent pieces, not one quick step. background=true returns agent_ids at once; results arrive later or via agent_wait.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: DelegateArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let config = &self.rt.settings.delegation;
        let max_depth = config.spawn_depth();
        if self.me.depth >= max_depth {
            return Err(ToolError::new(format!(
                "delegation depth limit reached: this agent is at depth {} and [delegation] max_spawn_depth is {max_depth}; do the task yourself",
                self.me.depth
            )));
        }
        let mut tasks = child_tasks(&args, config.concurrent_children()).map_err(ToolError::new)?;
        let Some(parent_registry) = ctx.registry.clone() else {
            return Err(ToolError::new(
                "delegate_task can only run inside an agent turn (no tool registry in this call)",
            ));
        };
        apply_definitions(
            &mut tasks,
            &self.rt.definitions(),
            &parent_registry,
            self.rt.client.provider(),
        )
        .map_err(ToolError::new)?;
        let mut clients = Vec::with_capacity(tasks.len());
        let mut routes = Vec::with_capacity(tasks.len());
        for task in &tasks {
            let (client, route) = self
                .rt
                .child_client(task)
                .map_err(|err| ToolError::new(format!("task {}: {err}", task.index)))?;
            clients.push(client);
            routes.push(route);
        }
        let mut registries = Vec::with_capacity(tasks.len());
        for task in &tasks {
            registries.push(child_registry(&parent_registry, task).map_err(ToolError::new)?);
        }
        let background = args.background.unwrap_or(false);
        if background {
            let running = self.rt.running_background();
            let limit = config.max_background_agents.max(1) as usize;
            if running + tasks.len() > limit {
                return Err(ToolError::new(format!(
                    "{} background agents would run at once ({running} running + {} new), over the limit of {limit} ([delegation] max_background_agents); wait for some with agent_wait, cancel some, or run these synchronously",
                    running + tasks.len(),
                    tasks.len()
                )));
            }
        }
        let budget_tokens = args
            .budget_tokens
            .filter(|n| *n > 0)
            .unwrap_or(config.budget_tokens);
        let budget = TokenBudget::new(budget_tokens, self.me.budget.clone());
        let summary_limit = (self.rt.settings.output_limit_chars / (2 * tasks.len())).max(2000);
        let mut spawns = Vec::with_capacity(tasks.len());
        let mut journal = Vec::with_capacity(tasks.len());
        for (((task, registry), client), route) in
            tasks.into_iter().zip(registries).zip(clients).zip(routes)
        {
            // The call's max_iterations, else the agent definition's, else config.
            let max_iterations = args
                .max_iterations
                .filter(|n| *n > 0)
                .or_else(|| task.definition.as_ref().and_then(|d| d.max_iterations))
                .unwrap_or(config.max_iterations)
                .max(1);
            let can_delegate = may_delegate(&task, self.me.depth, &self.rt.settings);
            let agent_id = new_id("ag");
            let session_id = crate::new_session_id();
            if let Some(route) = route {
                self.rt
                    .events
                    .for_agent(&self.me.session_id, &agent_id)
                    .emit(herald_protocol::EventKind::ModelRouted {
                        role: crate::routing::Role::Child.as_str().to_owned(),
                        model: route.model,
                        reason: route.reason,
                    });
            }
            let spec = SpawnSpec {
                task: task.clone(),
                max_iterations,
                can_delegate,
                budget_tokens,
                summary_limit,
            };
            journal.push(NewAgent {
                id: agent_id.clone(),
                parent_agent_id: self.me.agent_id.clone(),
                parent_session_id: self.me.session_id.clone(),
                root_session_id: self.rt.root_session_id.clone(),
                session_id: session_id.clone(),
                depth: self.me.depth + 1,
                role: if can_delegate { "orchestrator" } else { "leaf" }.to_owned(),
                goal: task.goal.clone(),
                context: task.context.clone(),
                background,
                model: client.model().to_owned(),
                spec: serde_json::to_string(&spec).unwrap_or_default(),
                call_id: (!ctx.call_id.is_empty()).then(|| ctx.call_id.clone()),
            });
            spawns.push(Spawn {
                task,
                agent_id,
                session_id,
                parent: self.me.clone(),
                registry,
                can_delegate,
                max_iterations,
                budget: Arc::clone(&budget),
                background,
                history: None,
                parent_state: Some(Arc::clone(&ctx.state)),
                summary_limit,
                prior: super::child::PriorUsage::default(),
                client,
                followup: None,
            });
        }
        if let Some(store) = &self.rt.store {
            let saved = store
                .call(move |s| journal.iter().try_for_each(|agent| s.insert_agent(agent)))
                .await;
            match saved {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    return Err(ToolError::new(format!(
                        "cannot journal the subagents: {err}"
                    )));
                }
                Err(err) => return Err(ToolError::new(err.to_string())),
            }
        }
        if background {
            let ids: Vec<String> = spawns.iter().map(|s| s.agent_id.clone()).collect();
            let inbox = self.rt.inbox(&self.me.agent_id);
            let parent_cancel = self.rt.cancel_parent(&self.me);
            for spawn in spawns {
                inbox.dispatched();
                let rt = Arc::clone(&self.rt);
                let cancel = parent_cancel.child_token();
                tokio::spawn(async move {
                    rt.run_child(spawn, cancel).await;
                });
            }
            return Ok(json_text(&json!({
                "status": "dispatched",
                "agent_ids": ids,
                "note": "Running in the background. Each result is appended to the conversation when it finishes; agent_wait blocks until one finishes, agent_status shows progress."
            })));
        }
        let started = Instant::now();
        let results = join_all(
            spawns
                .into_iter()
                .map(|spawn| self.rt.run_child(spawn, ctx.cancel.child_token())),
        )
        .await;
        Ok(json_text(&json!({
            "results": results,
            "total_duration_seconds": (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        })))
    }
}

/// A live agent's status, or a stored record's, as the model reads it.
fn live_status(rt: &Delegation, agent: &LiveAgent) -> serde_json::Value {
    let result = agent.result();
    let status = result
        .as_ref()
        .map_or_else(|| rt.running_status(&agent.id), |r| r.status);
    let tokens = result
        .as_ref()
        .map_or_else(|| agent.progress.tokens(), |r| r.tokens);
    json!({
        "agent_id": agent.id,
        "parent_id": agent.parent_id,
        "status": status,
        "role": agent.role,
        "depth": agent.depth,
        "goal": preview(&agent.goal, 200),
        "background": agent.background,
        "session_id": agent.session_id,
        "model": agent.model,
        "elapsed_seconds": result.as_ref().map_or_else(|| (agent.progress.elapsed_seconds() * 10.0).round() / 10.0, |r| r.duration_seconds),
        "api_calls": result.as_ref().map_or_else(|| agent.progress.api_calls(), |r| r.api_calls),
        "tokens": tokens,
        // This run's requests: the agent's own, and with its descendants'.
        "usage": agent.meter.own().totals(),
        "tree_usage": agent.meter.tree().totals(),
        "current_tool": agent.progress.current_tool(),
        "result_preview": result.as_ref().map(|r| preview(&r.summary, 500)),
        "error": result.as_ref().and_then(|r| r.error.clone()),
        // Receipts of `agent_send`: queued, delivered or missed.
        "messages": Delegation::receipts(agent),
    })
}

fn record_status(record: &AgentRecord) -> serde_json::Value {
    let elapsed = match (record.started_at, record.ended_at) {
        (Some(start), Some(end)) => (end - start).max(0) as f64 / 1000.0,
        _ => 0.0,
    };
    json!({
        "agent_id": record.id,
        "parent_id": record.parent_agent_id,
        "status": record.status,
        "role": record.role,
        "depth": record.depth,
        "goal": preview(&record.goal, 200),
        "background": record.background,
        "elapsed_seconds": elapsed,
        "api_calls": record.iterations,
        "tokens": record.tokens,
        // As journaled: its own requests, and with its descendants'
        // (`null` until it finishes).
        "usage": record.usage,
        "tree_usage": record.tree_usage,
        "result_preview": record.result.as_deref().map(|r| preview(r, 500)),
        "error": record.error,
    })
}

impl Delegation {
    /// A stored record of this tree by id.
    async fn stored_agent(&self, id: &str) -> Option<AgentRecord> {
        let store = self.store.as_ref()?;
        let lookup = id.to_owned();
        let record = store
            .call(move |s| s.get_agent(&lookup))
            .await
            .ok()?
            .ok()??;
        (record.root_session_id == self.root_session_id).then_some(record)
    }

    fn unknown_agent(&self, id: &str) -> ToolError {
        let mut known: Vec<String> = self.live_agents().iter().map(|a| a.id.clone()).collect();
        known.sort();
        known.truncate(20);
        ToolError::new(if known.is_empty() {
            format!("no agent '{id}': no subagents were started in this session")
        } else {
            format!(
                "no agent '{id}' in this session's tree; known agents: {}",
                known.join(", ")
            )
        })
    }
}

/// Arguments naming one agent.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AgentIdArgs {
    /// An id returned by delegate_task.
    #[schemars(description = "")]
    pub agent_id: String,
}

/// `agent_status`: one agent's progress or result.
pub struct AgentStatus {
    rt: Arc<Delegation>,
}

impl AgentStatus {
    /// The tool for one agent (any agent of the tree can be inspected).
    pub fn new(rt: Arc<Delegation>, _me: AgentScope) -> Self {
        Self { rt }
    }
}

impl TypedTool for AgentStatus {
    type Args = AgentIdArgs;
    const NAME: &'static str = "agent_status";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str =
        "A subagent's progress or result. Do not poll: use agent_wait.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: AgentIdArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        if let Some(agent) = self.rt.live_agent(&args.agent_id) {
            return Ok(json_text(&live_status(&self.rt, &agent)));
        }
        match self.rt.stored_agent(&args.agent_id).await {
            Some(record) => Ok(json_text(&record_status(&record))),
            None => Err(self.rt.unknown_agent(&args.agent_id)),
        }
    }
}

/// Arguments of `agent_list`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AgentListArgs {
    /// running, completed, failed, timeout or interrupted.
    pub status: Option<String>,
    /// Max 100.
    #[schemars(description = "")]
    pub limit: Option<usize>,
}

/// `agent_list`: the agents of this session's tree, newest first.
pub struct AgentList {
    rt: Arc<Delegation>,
}

impl AgentList {
    /// The tool for one agent.
    pub fn new(rt: Arc<Delegation>, _me: AgentScope) -> Self {
        Self { rt }
    }
}

impl TypedTool for AgentList {
    type Args = AgentListArgs;
    const NAME: &'static str = "agent_list";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str =
        "This session's subagents, newest first, with status, goal and tokens.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: AgentListArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let limit = args.limit.unwrap_or(20).clamp(1, 100);
        let mut live = self.rt.live_agents();
        live.sort_by(|a, b| {
            b.progress
                .elapsed_seconds()
                .total_cmp(&a.progress.elapsed_seconds())
                .reverse()
        });
        let mut rows: Vec<serde_json::Value> =
            live.iter().map(|a| live_status(&self.rt, a)).collect();
        let stored = self
            .rt
            .stored_agents(AgentFilter {
                root_session_id: Some(self.rt.root_session_id.clone()),
                limit: 1000,
                ..AgentFilter::default()
            })
            .await;
        rows.extend(
            stored
                .iter()
                .filter(|r| self.rt.live_agent(&r.id).is_none())
                .map(record_status),
        );
        if let Some(status) = &args.status {
            rows.retain(|r| r["status"] == status.as_str());
        }
        let total = rows.len();
        rows.truncate(limit);
        Ok(json_text(&json!({ "agents": rows, "total": total })))
    }
}

/// Arguments of `agent_wait`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AgentWaitArgs {
    /// Agents to wait for; returns when any of them has finished.
    #[schemars(description = "")]
    pub agent_ids: Vec<String>,
    /// Default 300, max 3600.
    pub timeout_seconds: Option<u64>,
}

/// `agent_wait`: blocks until one of the agents finishes or the timeout.
pub struct AgentWait {
    rt: Arc<Delegation>,
    me: AgentScope,
}

impl AgentWait {
    /// The tool for the agent `me` (results it returns are not re-delivered).
    pub fn new(rt: Arc<Delegation>, me: AgentScope) -> Self {
        Self { rt, me }
    }
}

impl TypedTool for AgentWait {
    type Args = AgentWaitArgs;
    const NAME: &'static str = "agent_wait";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str = "Wait (no token cost) until one of these agents finishes or timeout; returns finished results \
and those still running.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: AgentWaitArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        if args.agent_ids.is_empty() {
            return Err(ToolError::new(
                "agent_ids is empty; pass the ids delegate_task returned",
            ));
        }
        let mut stored_only = Vec::new();
        for id in &args.agent_ids {
            if self.rt.live_agent(id).is_none() {
                match self.rt.stored_agent(id).await {
                    Some(record) => stored_only.push(record),
                    None => return Err(self.rt.unknown_agent(id)),
                }
            }
        }
        let secs = args
            .timeout_seconds
            .unwrap_or(DEFAULT_WAIT_SECS)
            .min(MAX_WAIT_SECS);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        let timed_out = loop {
            let notified = self.rt.finished.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.any_finished(&args.agent_ids, &stored_only) {
                break false;
            }
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep_until(deadline) => break true,
                () = ctx.cancel.cancelled() => {
                    return Err(ToolError::new("interrupted while waiting for agents"));
                }
            }
        };
        let mut finished: Vec<ChildResult> = Vec::new();
        let mut running = Vec::new();
        for id in &args.agent_ids {
            if let Some(agent) = self.rt.live_agent(id) {
                match agent.result() {
                    Some(result) => finished.push(result),
                    None => running.push(live_status(&self.rt, &agent)),
                }
            } else if let Some(record) = stored_only.iter().find(|r| &r.id == id) {
                if record.is_unfinished() {
                    running.push(record_status(record));
                } else {
                    finished.push(result_from_record(record));
                }
            }
        }
        let ids: Vec<String> = finished.iter().map(|r| r.agent_id.clone()).collect();
        self.rt.inbox(&self.me.agent_id).claim(&ids);
        Ok(json_text(&json!({
            "finished": finished,
            "running": running,
            "timed_out": timed_out,
        })))
    }
}

impl AgentWait {
    fn any_finished(&self, ids: &[String], stored: &[AgentRecord]) -> bool {
        ids.iter().any(|id| match self.rt.live_agent(id) {
            Some(agent) => agent.is_finished(),
            None => stored.iter().any(|r| &r.id == id && !r.is_unfinished()),
        })
    }
}

/// `agent_cancel`: stops an agent and its descendants.
pub struct AgentCancel {
    rt: Arc<Delegation>,
}

impl AgentCancel {
    /// The tool for one agent.
    pub fn new(rt: Arc<Delegation>, _me: AgentScope) -> Self {
        Self { rt }
    }
}

impl TypedTool for AgentCancel {
    type Args = AgentIdArgs;
    const NAME: &'static str = "agent_cancel";
    const TOOLSET: &'static str = TOOLSET;
    const DESCRIPTION: &'static str =
        "Cancel a running subagent and its descendants (status interrupted).";
    const READ_ONLY: bool = false;

    async fn run(&self, args: AgentIdArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        if let Some(agent) = self.rt.live_agent(&args.agent_id) {
            if let Some(result) = agent.result() {
                return Err(ToolError::new(format!(
                    "agent {} already finished with status {}; nothing to cancel",
                    agent.id, result.status
                )));
            }
            let descendants = self.count_descendants(&agent.id);
            agent.cancel_by_tool();
            return Ok(format!(
                "cancelled {} and {descendants} running descendant(s); its result will report status interrupted",
                agent.id
            ));
        }
        let Some(record) = self.rt.stored_agent(&args.agent_id).await else {
            return Err(self.rt.unknown_agent(&args.agent_id));
        };
        if !record.is_unfinished() {
            return Err(ToolError::new(format!(
                "agent {} already finished with status {}; nothing to cancel",
                record.id, record.status
            )));
        }
        if let Some(store) = &self.rt.store {
            let id = record.id.clone();
            let _ = store
                .call(move |s| s.cancel_agent(&id, herald_protocol::AgentStatus::Interrupted))
                .await;
        }
        Ok(format!(
            "marked {} as interrupted (it was not running in this process)",
            record.id
        ))
    }
}

impl AgentCancel {
    fn count_descendants(&self, id: &str) -> usize {
        let agents = self.rt.live_agents();
        let mut frontier = vec![id.to_owned()];
        let mut count = 0;
        while let Some(parent) = frontier.pop() {
            for agent in agents.iter().filter(|a| a.parent_id == parent) {
                if !agent.is_finished() {
                    count += 1;
                }
                frontier.push(agent.id.clone());
            }
        }
        count
    }
}
