//! Talking to subagents after they started: `agent_send` queues a message
//! for a running agent's next tool boundary under a receipt (`queued`, then
//! `delivered` or `missed`), optionally for its whole running subtree;
//! `agent_followup` starts a new turn in a finished agent's own session, as
//! a background agent whose result comes back like any other.

use std::sync::Arc;

use herald_protocol::{EventKind, MessageDelivery};
use herald_store::{AgentRecord, new_id};
use herald_tools::{ToolContext, ToolError, ToolRegistry, TypedTool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::live::LiveAgent;
use super::runtime::{AgentScope, Delegation};

/// One message queued for one agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SentMessage {
    pub agent_id: String,
    pub receipt: String,
    pub state: MessageDelivery,
}

/// Why a message or follow-up was refused (the text says what to do).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MessagingError {
    /// Empty text.
    #[error("the message is empty; send the text the agent should read")]
    Empty,
    /// No such agent in this tree (or not the caller's to address).
    #[error("{0}")]
    Unknown(String),
    /// The agent is in the wrong state for this (finished for a send,
    /// running for a follow-up).
    #[error("{0}")]
    WrongState(String),
    /// The follow-up could not be started.
    #[error("{0}")]
    Failed(String),
}

impl Delegation {
    /// Queues `message` for the running agent `agent_id` (and, with
    /// `subtree`, for every running agent below it), as `from` may: the
    /// root reaches every agent, another agent only those below it.
    pub fn send_message(
        &self,
        from: &str,
        agent_id: &str,
        message: &str,
        subtree: bool,
    ) -> Result<Vec<SentMessage>, MessagingError> {
        if message.trim().is_empty() {
            return Err(MessagingError::Empty);
        }
        let agents = self.live_agents();
        let Some(target) = agents
            .iter()
            .find(|a| a.id == agent_id && is_below(&agents, a, from))
        else {
            return Err(MessagingError::Unknown(self.unknown_text(agent_id)));
        };
        if target.is_finished() {
            return Err(MessagingError::WrongState(format!(
                "agent {agent_id} has finished; send the message with agent_followup to start a new turn in its session"
            )));
        }
        let mut recipients = vec![Arc::clone(target)];
        if subtree {
            recipients.extend(
                agents
                    .iter()
                    .filter(|a| a.id != target.id && !a.is_finished())
                    .filter(|a| is_below(&agents, a, &target.id))
                    .cloned(),
            );
        }
        let mut sent = Vec::with_capacity(recipients.len());
        for agent in recipients {
            let receipt = new_id("msg");
            if !agent
                .mailbox
                .push_with_receipt(message.to_owned(), receipt.clone())
            {
                continue; // it ended between the check and now
            }
            self.events
                .for_agent(&agent.parent_session_id, &agent.id)
                .emit(EventKind::AgentMessage {
                    receipt: receipt.clone(),
                    state: MessageDelivery::Queued,
                });
            sent.push(SentMessage {
                agent_id: agent.id.clone(),
                receipt,
                state: MessageDelivery::Queued,
            });
        }
        if sent.is_empty() {
            return Err(MessagingError::WrongState(format!(
                "agent {agent_id} finished just now; send the message with agent_followup"
            )));
        }
        Ok(sent)
    }

    /// Starts a follow-up turn with `message` in the finished agent
    /// `agent_id`'s session, in the background under `scope`'s agent
    /// (whose inbox receives the result), with the tools its task had
    /// (`parent_registry` is the asking agent's, as for a restart).
    pub async fn follow_up(
        self: &Arc<Self>,
        scope: &AgentScope,
        parent_registry: &ToolRegistry,
        agent_id: &str,
        message: &str,
    ) -> Result<(), MessagingError> {
        if message.trim().is_empty() {
            return Err(MessagingError::Empty);
        }
        let agents = self.live_agents();
        if let Some(live) = agents.iter().find(|a| a.id == agent_id) {
            if !is_below(&agents, live, &scope.agent_id) {
                return Err(MessagingError::Unknown(self.unknown_text(agent_id)));
            }
            if !live.is_finished() {
                return Err(MessagingError::WrongState(format!(
                    "agent {agent_id} is still running; use agent_send to reach it at its next tool boundary"
                )));
            }
        }
        let Some(store) = self.store.clone() else {
            return Err(MessagingError::Failed(
                "follow-ups need the session store, and this session runs without one".to_owned(),
            ));
        };
        let lookup = agent_id.to_owned();
        let record = store
            .call(move |s| s.get_agent(&lookup))
            .await
            .map_err(|e| MessagingError::Failed(e.to_string()))?
            .map_err(|e| MessagingError::Failed(e.to_string()))?
            .filter(|r| r.root_session_id == self.root_session_id)
            .ok_or_else(|| MessagingError::Unknown(self.unknown_text(agent_id)))?;
        if scope.agent_id != "root"
            && record.parent_agent_id.as_deref() != Some(scope.agent_id.as_str())
            && !agents.iter().any(|a| a.id == agent_id)
        {
            return Err(MessagingError::Unknown(self.unknown_text(agent_id)));
        }
        if record.is_unfinished() {
            return Err(MessagingError::WrongState(format!(
                "agent {agent_id} is {} (not finished); use agent_send while it runs, or wait for it",
                record.status
            )));
        }
        let mut spawn = self
            .restart_spec(&store, &record, scope, parent_registry)
            .await
            .map_err(|e| MessagingError::Failed(format!("cannot follow up {agent_id}: {e}")))?;
        if spawn.history.is_none() {
            return Err(MessagingError::Failed(format!(
                "agent {agent_id} has no stored conversation to continue"
            )));
        }
        spawn.followup = Some(message.to_owned());
        // A new turn gets its task's whole budget again.
        spawn.budget = super::budget::TokenBudget::new(spawn.budget.limit(), scope.budget.clone());
        spawn.parent = AgentScope {
            depth: record.depth.saturating_sub(1),
            ..scope.clone()
        };
        reopen(&store, &record, scope).await?;
        self.remove_live(agent_id);
        self.inbox(&scope.agent_id).dispatched();
        let cancel = self.cancel_parent(scope).child_token();
        let runtime = Arc::clone(self);
        tokio::spawn(async move {
            runtime.run_child(spawn, cancel).await;
        });
        Ok(())
    }

    /// Every receipt issued to `agent`, for `agent_status`.
    pub(crate) fn receipts(agent: &LiveAgent) -> serde_json::Value {
        let receipts: Vec<serde_json::Value> = agent
            .mailbox
            .receipts()
            .into_iter()
            .map(|(receipt, state)| json!({ "receipt": receipt, "state": state }))
            .collect();
        serde_json::Value::Array(receipts)
    }

    fn unknown_text(&self, id: &str) -> String {
        let mut known: Vec<String> = self.live_agents().iter().map(|a| a.id.clone()).collect();
        known.sort();
        known.truncate(20);
        if known.is_empty() {
            format!("no agent '{id}': no subagents were started in this session")
        } else {
            format!(
                "no agent '{id}' that you can reach in this session's tree; known agents: {}",
                known.join(", ")
            )
        }
    }
}

/// Marks the journal entry running again, owed to `scope`'s agent.
async fn reopen(
    store: &crate::StoreHandle,
    record: &AgentRecord,
    scope: &AgentScope,
) -> Result<(), MessagingError> {
    let (id, parent, session) = (
        record.id.clone(),
        scope.agent_id.clone(),
        scope.session_id.clone(),
    );
    store
        .call(move |s| s.reopen_agent(&id, &parent, &session))
        .await
        .map_err(|e| MessagingError::Failed(e.to_string()))?
        .map_err(|e| MessagingError::Failed(e.to_string()))
}

/// Whether `agent` is `ancestor` itself or below it (`root` is above all).
fn is_below(agents: &[Arc<LiveAgent>], agent: &LiveAgent, ancestor: &str) -> bool {
    if ancestor == "root" || agent.id == ancestor {
        return true;
    }
    let mut parent = agent.parent_id.as_str();
    // Bounded by the tree's size, in case of a cycle in bad data.
    for _ in 0..agents.len() {
        if parent == ancestor {
            return true;
        }
        match agents.iter().find(|a| a.id == parent) {
            Some(next) => parent = next.parent_id.as_str(),
            None => return false,
        }
    }
    false
}

/// Arguments of `agent_send`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AgentSendArgs {
    /// A running agent's id.
    #[schemars(description = "")]
    pub agent_id: String,
    pub message: String,
    /// Also to running agents below it.
    pub subtree: Option<bool>,
}

/// `agent_send`: steers a running subagent at its next tool boundary.
pub struct AgentSend {
    rt: Arc<Delegation>,
    me: AgentScope,
}

impl AgentSend {
    /// The tool for the agent `me` (it reaches only agents below it).
    pub fn new(rt: Arc<Delegation>, me: AgentScope) -> Self {
        Self { rt, me }
    }
}

impl TypedTool for AgentSend {
    type Args = AgentSendArgs;
    const NAME: &'static str = "agent_send";
    const TOOLSET: &'static str = super::tools::TOOLSET;
    const DESCRIPTION: &'static str = "Steer a running subagent at its next tool boundary. Returns receipts; agent_status shows delivered/missed.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: AgentSendArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let sent = self
            .rt
            .send_message(
                &self.me.agent_id,
                &args.agent_id,
                &args.message,
                args.subtree.unwrap_or(false),
            )
            .map_err(|e| ToolError::new(e.to_string()))?;
        Ok(serde_json::to_string(&json!({ "sent": sent })).unwrap_or_default())
    }
}

/// Arguments of `agent_followup`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AgentFollowupArgs {
    /// A finished agent's id.
    #[schemars(description = "")]
    pub agent_id: String,
    pub message: String,
}

/// `agent_followup`: a new turn in a finished subagent's own session.
pub struct AgentFollowup {
    rt: Arc<Delegation>,
    me: AgentScope,
}

impl AgentFollowup {
    /// The tool for the agent `me` (the result comes back to it).
    pub fn new(rt: Arc<Delegation>, me: AgentScope) -> Self {
        Self { rt, me }
    }
}

impl TypedTool for AgentFollowup {
    type Args = AgentFollowupArgs;
    const NAME: &'static str = "agent_followup";
    const TOOLSET: &'static str = super::tools::TOOLSET;
    const DESCRIPTION: &'static str =
        "New turn in a finished subagent's own session, context kept; runs in the background.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: AgentFollowupArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let Some(registry) = ctx.registry.clone() else {
            return Err(ToolError::new(
                "agent_followup can only run inside an agent turn (no tool registry in this call)",
            ));
        };
        self.rt
            .follow_up(&self.me, &registry, &args.agent_id, &args.message)
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        Ok(serde_json::to_string(&json!({
            "status": "dispatched",
            "agent_ids": [args.agent_id],
            "note": "Running in the background; its answer is appended when it finishes (agent_wait blocks until then)."
        }))
        .unwrap_or_default())
    }
}
