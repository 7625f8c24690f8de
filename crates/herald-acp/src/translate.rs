//! herald's events as ACP session updates. One [`Translator`] per open
//! session follows its whole tree: the root agent's text, reasoning and tool
//! calls go to the session; each subagent either gets an ACP session of its
//! own, announced on its parent with `subagent_update` (when the client
//! opted in with `clientCapabilities.subagents`), or appears in the parent
//! session as a tool call with its own calls nested under it (`_meta`).
//! Approvals and turn ends come out as [`Action`]s for the session to act
//! on; everything else is an update to send.

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, Cost, Error as RpcError, ErrorStopReason, IdleStateUpdate,
    IdleStopReason, Meta, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    RequiresActionStateUpdate, RunningStateUpdate, SessionCancelCapabilities, SessionReference,
    SessionUpdate, StateUpdate, SubagentSessionCapabilities, SubagentUpdate, Terminal, TextContent,
    ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
    UsageUpdate,
};
use herald_core::runtime::TurnResult;
use herald_protocol::{AgentStatus, Event, EventKind, SubmissionId, ToolStatus};
use serde_json::{Value, json};

use crate::client_io::CallTerminals;
use crate::tools;

/// The id herald's root agent has in every event.
pub(crate) const ROOT: &str = "root";

/// What one event asks of the session.
#[derive(Debug)]
pub(crate) enum Action {
    /// A `session/update` for ACP session `session_id`.
    Update {
        session_id: String,
        update: Box<SessionUpdate>,
    },
    /// An approval to ask the client for.
    Ask(Box<ApprovalAsk>),
    /// A turn ended (its `run.completed`).
    TurnEnded {
        submission: SubmissionId,
        result: Box<TurnResult>,
    },
}

/// An `approval.requested`, with what the client needs to show it.
#[derive(Debug, Clone)]
pub(crate) struct ApprovalAsk {
    pub request_id: String,
    /// The ACP session the request is asked in (the asking agent's).
    pub session_id: String,
    /// The call it is about, as the editor knows it.
    pub tool_call: ToolCallUpdate,
    /// Whether "for this session" and "always" can be offered.
    pub has_rule: bool,
    /// The rule "always" saves.
    pub allow_rule: Option<String>,
    /// The asking subagent's session and where it was announced, when the
    /// client sees subagents (its state is `requires_action` meanwhile).
    pub child: Option<ChildSession>,
}

/// A subagent session as the client knows it.
#[derive(Debug, Clone)]
pub(crate) struct ChildSession {
    /// The child's own session id.
    pub session_id: String,
    /// The session it was announced in (its parent's).
    pub parent_session_id: String,
}

#[derive(Debug, Clone)]
struct Child {
    session_id: String,
    running: bool,
    parent_id: String,
    title: String,
    goal: String,
}

#[derive(Debug, Clone)]
struct OpenCall {
    name: String,
    arguments: String,
}

/// Follows one session tree's events (see the module docs).
#[derive(Debug)]
pub(crate) struct Translator {
    root_session: String,
    cwd: PathBuf,
    subagents: bool,
    window: u64,
    children: HashMap<String, Child>,
    /// Calls that started and did not complete, by (agent, call id).
    open: HashMap<(String, String), OpenCall>,
    /// Each agent's running `delegate_task` call, and the child sessions
    /// it started (shown in the call when the client sees subagents).
    delegating: HashMap<String, (String, Vec<String>)>,
    /// USD of the tree's requests so far, when every one had a price.
    cost: Option<f64>,
    /// The client terminals root calls ran in.
    terminals: CallTerminals,
}

impl Translator {
    /// A translator for session `root_session` working in `cwd`; `window`
    /// is the model's context window in tokens.
    pub(crate) fn new(root_session: &str, cwd: PathBuf, subagents: bool, window: u64) -> Self {
        Self {
            root_session: root_session.to_owned(),
            cwd,
            subagents,
            window,
            children: HashMap::new(),
            open: HashMap::new(),
            delegating: HashMap::new(),
            cost: Some(0.0),
            terminals: CallTerminals::default(),
        }
    }

    /// Shows the client terminal a root `terminal` call ran in (see
    /// [`crate::client_io`]) as that call's content when it completes.
    pub(crate) fn with_terminals(mut self, terminals: CallTerminals) -> Self {
        self.terminals = terminals;
        self
    }

    /// The ACP session of subagent `agent_id`, if the client sees it as one.
    pub(crate) fn child_session(&self, agent_id: &str) -> Option<&str> {
        self.children
            .get(agent_id)
            .filter(|_| self.subagents)
            .map(|c| c.session_id.as_str())
    }

    /// The agent whose ACP session is `session_id` (the client cancels a
    /// child by its session).
    pub(crate) fn agent_of_session(&self, session_id: &str) -> Option<String> {
        self.children
            .iter()
            .find(|(_, c)| c.session_id == session_id)
            .map(|(id, _)| id.clone())
    }

    /// Whether a subagent of the tree is still running (its own events are
    /// then read from the store, see `session.rs`).
    pub(crate) fn children_running(&self) -> bool {
        self.children.values().any(|c| c.running)
    }

    /// Whether the tree has started any subagent since it was opened.
    pub(crate) fn has_children(&self) -> bool {
        !self.children.is_empty()
    }

    /// Whether `session_id` names one of this tree's subagents.
    pub(crate) fn is_child_session(&self, session_id: &str) -> bool {
        self.subagents && self.agent_of_session(session_id).is_some()
    }

    /// Where the updates of agent `agent_id` go.
    fn target(&self, agent_id: &str) -> String {
        if agent_id == ROOT {
            return self.root_session.clone();
        }
        match self.children.get(agent_id) {
            Some(child) if self.subagents => child.session_id.clone(),
            Some(child) => self.target(&child.parent_id),
            None => self.root_session.clone(),
        }
    }

    /// Whether agent `agent_id`'s updates show inside its parent's session
    /// (no subagent sessions for this client).
    fn nested(&self, agent_id: &str) -> bool {
        agent_id != ROOT && !self.subagents
    }

    /// The tool call id the editor knows a call by.
    fn call_id(agent_id: &str, call_id: &str) -> String {
        if agent_id == ROOT {
            call_id.to_owned()
        } else {
            format!("{agent_id}/{call_id}")
        }
    }

    fn nested_meta(&self, agent_id: &str) -> Option<Meta> {
        if !self.nested(agent_id) {
            return None;
        }
        let parent = self
            .children
            .get(agent_id)
            .map(|c| c.parent_id.clone())
            .unwrap_or_else(|| ROOT.to_owned());
        let mut meta = Meta::new();
        meta.insert(
            "herald".into(),
            json!({
                "agentId": agent_id,
                "parentAgentId": parent,
                "parentToolCallId": format!("agent/{agent_id}"),
            }),
        );
        Some(meta)
    }

    fn update(&self, agent_id: &str, update: SessionUpdate) -> Action {
        Action::Update {
            session_id: self.target(agent_id),
            update: Box::new(update),
        }
    }

    fn label(&self, agent_id: &str) -> String {
        match self.children.get(agent_id) {
            Some(child) => format!("subagent {agent_id} ({})", child.title),
            None if agent_id == ROOT => "herald".to_owned(),
            None => format!("subagent {agent_id}"),
        }
    }

    /// The actions of one event.
    pub(crate) fn translate(&mut self, event: &Event) -> Vec<Action> {
        let agent = event.agent_id.as_str();
        match &event.kind {
            EventKind::AssistantDelta { text } if !self.nested(agent) => {
                vec![self.update(agent, SessionUpdate::AgentMessageChunk(chunk(text)))]
            }
            // A subagent's text comes whole (its deltas are not streamed).
            EventKind::AssistantMessage { text, .. }
                if agent != ROOT && !self.nested(agent) && !text.is_empty() =>
            {
                vec![self.update(agent, SessionUpdate::AgentMessageChunk(chunk(text)))]
            }
            EventKind::AssistantReasoning { text } if !self.nested(agent) => {
                vec![self.update(agent, SessionUpdate::AgentThoughtChunk(chunk(text)))]
            }
            EventKind::ToolStarted {
                call_id,
                name,
                arguments,
            } => self.tool_started(agent, call_id, name, arguments),
            EventKind::ToolCompleted {
                call_id,
                name,
                status,
                output,
                error,
                exit_code,
                ..
            } => self.tool_completed(
                agent,
                call_id,
                name,
                *status,
                output,
                error.as_deref(),
                *exit_code,
            ),
            EventKind::SubagentStarted {
                parent_id,
                goal,
                child_session_id,
                ..
            } => self.subagent_started(agent, parent_id, goal, child_session_id),
            EventKind::SubagentCompleted {
                status, summary, ..
            } => self.subagent_completed(agent, *status, summary),
            EventKind::ApprovalRequested {
                request_id,
                tool,
                arguments,
                reason,
                allow_rule,
                ..
            } => self.approval(agent, request_id, tool, arguments, reason, allow_rule),
            EventKind::Usage {
                input_tokens,
                output_tokens,
                cost_usd,
                ..
            } => self.usage(agent, *input_tokens + *output_tokens, *cost_usd),
            EventKind::RunCompleted { .. } if agent == ROOT => {
                match (&event.submission_id, TurnResult::from_event(&event.kind)) {
                    (Some(submission), Some(result)) => vec![Action::TurnEnded {
                        submission: submission.clone(),
                        result: Box::new(result),
                    }],
                    _ => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }

    fn tool_started(
        &mut self,
        agent: &str,
        call_id: &str,
        name: &str,
        arguments: &str,
    ) -> Vec<Action> {
        self.open.insert(
            (agent.to_owned(), call_id.to_owned()),
            OpenCall {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
            },
        );
        if name == "delegate_task" {
            self.delegating
                .insert(agent.to_owned(), (call_id.to_owned(), Vec::new()));
        }
        let view = tools::view(name, arguments, &self.cwd);
        let title = if self.nested(agent) {
            format!("{}: {}", self.label(agent), view.title)
        } else {
            view.title
        };
        let raw_input = serde_json::from_str::<Value>(arguments).ok();
        let call = ToolCall::new(Self::call_id(agent, call_id), title)
            .name(name.to_owned())
            .kind(view.kind)
            .status(ToolCallStatus::InProgress)
            .locations(view.locations)
            .content(view.content)
            .raw_input(raw_input)
            .meta(self.nested_meta(agent));
        vec![self.update(agent, SessionUpdate::ToolCall(call))]
    }

    #[allow(clippy::too_many_arguments)]
    fn tool_completed(
        &mut self,
        agent: &str,
        call_id: &str,
        name: &str,
        status: ToolStatus,
        output: &str,
        error: Option<&str>,
        exit_code: Option<i64>,
    ) -> Vec<Action> {
        self.open.remove(&(agent.to_owned(), call_id.to_owned()));
        if name == "delegate_task" {
            self.delegating.remove(agent);
        }
        let failed = status == ToolStatus::Error;
        let mut fields = ToolCallUpdateFields::new()
            .status(if failed {
                ToolCallStatus::Failed
            } else {
                ToolCallStatus::Completed
            })
            .raw_output(json!({"output": output, "error": error, "exit_code": exit_code}));
        // An edit keeps its diff; other calls show what they returned.
        let edit = matches!(name, "patch" | "write_file");
        let terminal = (agent == ROOT)
            .then(|| self.terminals.take(call_id))
            .flatten();
        if let Some(terminal) = terminal {
            // The client's terminal shows the output; an error is added.
            let mut content = vec![ToolCallContent::Terminal(Terminal::new(terminal))];
            if let Some(error) = error {
                content.push(tools::text_content(error.to_owned()));
            }
            fields = fields.content(content);
        } else if !edit || failed {
            let mut content = tools::output_content(name, output);
            if let Some(error) = error.filter(|e| !output.contains(*e)) {
                content.push(tools::text_content(error.to_owned()));
            }
            fields = fields.content(content);
        }
        let mut actions = vec![
            self.update(
                agent,
                SessionUpdate::ToolCallUpdate(
                    ToolCallUpdate::new(Self::call_id(agent, call_id), fields)
                        .meta(self.nested_meta(agent)),
                ),
            ),
        ];
        if name == "todo_write"
            && !failed
            && !self.nested(agent)
            && let Some(plan) = plan_of(output)
        {
            actions.push(self.update(agent, SessionUpdate::Plan(plan)));
        }
        actions
    }

    fn subagent_started(
        &mut self,
        agent: &str,
        parent_id: &str,
        goal: &str,
        child_session_id: &str,
    ) -> Vec<Action> {
        let title = tools::one_line(goal, 80);
        self.children.insert(
            agent.to_owned(),
            Child {
                session_id: child_session_id.to_owned(),
                running: true,
                parent_id: parent_id.to_owned(),
                title: title.clone(),
                goal: goal.to_owned(),
            },
        );
        if self.subagents {
            let announce = SubagentUpdate::new(child_session_id.to_owned())
                .title(title)
                .description(goal.to_owned())
                .cwd(self.cwd.clone())
                .capabilities(
                    SubagentSessionCapabilities::new().cancel(SessionCancelCapabilities::new()),
                )
                .state(StateUpdate::Running(RunningStateUpdate::new()));
            let mut actions = vec![self.update(parent_id, SessionUpdate::SubagentUpdate(announce))];
            if let Some((call_id, sessions)) = self.delegating.get_mut(parent_id) {
                sessions.push(child_session_id.to_owned());
                let content = sessions
                    .iter()
                    .map(|s| ToolCallContent::Session(SessionReference::new(s.clone())))
                    .collect::<Vec<_>>();
                let id = Self::call_id(parent_id, call_id);
                actions.push(self.update(
                    parent_id,
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        id,
                        ToolCallUpdateFields::new().content(content),
                    )),
                ));
            }
            actions
        } else {
            let mut meta = Meta::new();
            meta.insert(
                "herald".into(),
                json!({
                    "agentId": agent,
                    "parentAgentId": parent_id,
                    "childSessionId": child_session_id,
                    "parentToolCallId": self.delegating.get(parent_id).map(|(id, _)| Self::call_id(parent_id, id)),
                }),
            );
            let call = ToolCall::new(format!("agent/{agent}"), format!("Subagent: {title}"))
                .name("subagent".to_owned())
                .kind(ToolKind::Think)
                .status(ToolCallStatus::InProgress)
                .content(vec![tools::text_content(goal.to_owned())])
                .meta(meta);
            vec![self.update(parent_id, SessionUpdate::ToolCall(call))]
        }
    }

    fn subagent_completed(
        &mut self,
        agent: &str,
        status: AgentStatus,
        summary: &str,
    ) -> Vec<Action> {
        let Some(child) = self.children.get_mut(agent) else {
            return Vec::new();
        };
        child.running = false;
        let child = child.clone();
        if self.subagents {
            let stop = match status {
                AgentStatus::Completed => Some(IdleStopReason::EndTurn),
                AgentStatus::Cancelled | AgentStatus::Interrupted | AgentStatus::Suspended => {
                    Some(IdleStopReason::Cancelled)
                }
                AgentStatus::Failed | AgentStatus::Error | AgentStatus::Timeout => {
                    Some(IdleStopReason::Error(ErrorStopReason::new().error(
                        RpcError::internal_error().data(json!(tools::one_line(summary, 2000))),
                    )))
                }
                AgentStatus::Queued | AgentStatus::Running | AgentStatus::AwaitingApproval => None,
            };
            let idle = SubagentUpdate::new(child.session_id.clone())
                .state(StateUpdate::Idle(IdleStateUpdate::new().stop_reason(stop)));
            vec![self.update(&child.parent_id, SessionUpdate::SubagentUpdate(idle))]
        } else {
            let ok = status == AgentStatus::Completed;
            let fields = ToolCallUpdateFields::new()
                .status(if ok {
                    ToolCallStatus::Completed
                } else {
                    ToolCallStatus::Failed
                })
                .content(vec![
                    tools::text_content(child.goal.clone()),
                    tools::text_content(format!("{}: {summary}", status.as_str())),
                ]);
            vec![self.update(
                &child.parent_id,
                SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    format!("agent/{agent}"),
                    fields,
                )),
            )]
        }
    }

    fn approval(
        &mut self,
        agent: &str,
        request_id: &str,
        tool: &str,
        arguments: &str,
        reason: &str,
        allow_rule: &Option<String>,
    ) -> Vec<Action> {
        // The call it is about: the agent's open call of that tool with
        // those arguments (the gate runs after `tool.started`).
        let call = self
            .open
            .iter()
            .find(|((a, _), c)| a == agent && c.name == tool && c.arguments == arguments)
            .map(|((_, id), _)| Self::call_id(agent, id))
            .unwrap_or_else(|| format!("approval/{request_id}"));
        let view = tools::view(tool, arguments, &self.cwd);
        let title = format!("{} asks: {} ({reason})", self.label(agent), view.title);
        let tool_call = ToolCallUpdate::new(
            call,
            ToolCallUpdateFields::new()
                .title(title)
                .kind(view.kind)
                .locations(view.locations)
                .raw_input(serde_json::from_str::<Value>(arguments).ok()),
        );
        let child = self.child_session(agent).map(|session_id| ChildSession {
            session_id: session_id.to_owned(),
            parent_session_id: self
                .children
                .get(agent)
                .map(|c| self.target(&c.parent_id))
                .unwrap_or_else(|| self.root_session.clone()),
        });
        let mut actions = Vec::new();
        if let Some(child) = &child {
            actions.push(Action::Update {
                session_id: child.parent_session_id.clone(),
                update: Box::new(state_update(
                    &child.session_id,
                    StateUpdate::RequiresAction(RequiresActionStateUpdate::new()),
                )),
            });
        }
        actions.push(Action::Ask(Box::new(ApprovalAsk {
            request_id: request_id.to_owned(),
            session_id: self.target(agent),
            tool_call,
            has_rule: allow_rule.is_some(),
            allow_rule: allow_rule.clone(),
            child,
        })));
        actions
    }

    fn usage(&mut self, agent: &str, context: u64, cost: Option<f64>) -> Vec<Action> {
        self.cost = match (self.cost, cost) {
            (Some(total), Some(more)) => Some(total + more),
            _ => None,
        };
        if agent != ROOT {
            return Vec::new();
        }
        let mut update = UsageUpdate::new(context, self.window);
        if let Some(total) = self.cost {
            update = update.cost(Cost::new(total, "USD"));
        }
        vec![self.update(agent, SessionUpdate::UsageUpdate(update))]
    }
}

/// A `subagent_update` that only changes the child's state.
pub(crate) fn state_update(child_session: &str, state: StateUpdate) -> SessionUpdate {
    SessionUpdate::SubagentUpdate(SubagentUpdate::new(child_session.to_owned()).state(state))
}

/// Text as a message chunk.
pub(crate) fn chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text.to_owned())))
}

/// The plan a `todo_write` result reports (its `todos`); cancelled items
/// are left out (ACP plans have no such state).
fn plan_of(output: &str) -> Option<Plan> {
    let report: Value = serde_json::from_str(output).ok()?;
    let entries = report
        .get("todos")?
        .as_array()?
        .iter()
        .filter_map(|item| {
            let content = item.get("content")?.as_str()?;
            let status = match item.get("status")?.as_str()? {
                "pending" => PlanEntryStatus::Pending,
                "in_progress" => PlanEntryStatus::InProgress,
                "completed" => PlanEntryStatus::Completed,
                _ => return None,
            };
            Some(PlanEntry::new(content, PlanEntryPriority::Medium, status))
        })
        .collect();
    Some(Plan::new(entries))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agent_client_protocol_schema::v1::SessionNotification;

    fn event(agent: &str, kind: EventKind) -> Event {
        Event::new("s_root", agent, kind)
    }

    /// Every update must be a valid ACP `session/update` (the schema's own
    /// types read it back).
    fn wire(actions: &[Action]) -> Vec<Value> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Update { session_id, update } => {
                    let note = SessionNotification::new(session_id.clone(), (**update).clone());
                    let value = serde_json::to_value(&note).unwrap();
                    serde_json::from_value::<SessionNotification>(value.clone()).unwrap();
                    Some(value)
                }
                _ => None,
            })
            .collect()
    }

    fn started(t: &mut Translator, agent: &str, session: &str) -> Vec<Value> {
        wire(&t.translate(&event(
            agent,
            EventKind::SubagentStarted {
                parent_id: ROOT.into(),
                depth: 1,
                goal: "count the files".into(),
                background: false,
                child_session_id: session.into(),
            },
        )))
    }

    #[test]
    fn subagents_get_sessions_of_their_own_with_the_opt_in() {
        let mut t = Translator::new("s_root", "/w".into(), true, 1000);
        t.translate(&event(
            ROOT,
            EventKind::ToolStarted {
                call_id: "c1".into(),
                name: "delegate_task".into(),
                arguments: r#"{"goal": "count the files"}"#.into(),
            },
        ));
        let out = started(&mut t, "ag_1", "s_child");
        assert_eq!(out[0]["sessionId"], "s_root");
        assert_eq!(out[0]["update"]["sessionUpdate"], "subagent_update");
        assert_eq!(out[0]["update"]["sessionId"], "s_child");
        assert_eq!(out[0]["update"]["state"]["state"], "running");
        assert_eq!(out[1]["update"]["content"][0]["type"], "session");
        let text = wire(&t.translate(&event(
            "ag_1",
            EventKind::AssistantDelta { text: "hi".into() },
        )));
        assert_eq!(text[0]["sessionId"], "s_child");
        assert_eq!(t.agent_of_session("s_child").as_deref(), Some("ag_1"));
    }

    #[test]
    fn without_the_opt_in_subagents_are_nested_tool_calls() {
        let mut t = Translator::new("s_root", "/w".into(), false, 1000);
        let out = started(&mut t, "ag_1", "s_child");
        assert_eq!(out[0]["sessionId"], "s_root");
        assert_eq!(out[0]["update"]["sessionUpdate"], "tool_call");
        assert_eq!(out[0]["update"]["toolCallId"], "agent/ag_1");
        let call = wire(&t.translate(&event(
            "ag_1",
            EventKind::ToolStarted {
                call_id: "c1".into(),
                name: "read_file".into(),
                arguments: r#"{"path": "a"}"#.into(),
            },
        )));
        assert_eq!(call[0]["sessionId"], "s_root");
        assert_eq!(call[0]["update"]["toolCallId"], "ag_1/c1");
        assert_eq!(
            call[0]["update"]["_meta"]["herald"]["parentToolCallId"],
            "agent/ag_1"
        );
        // The child's own text is not streamed into the parent's.
        assert!(
            t.translate(&event(
                "ag_1",
                EventKind::AssistantDelta { text: "x".into() }
            ))
            .is_empty()
        );
    }

    #[test]
    fn todo_lists_become_plans() {
        let plan = plan_of(
            r#"{"todos": [{"id": "1", "content": "a", "status": "completed"},
                          {"id": "2", "content": "b", "status": "cancelled"},
                          {"id": "3", "content": "c", "status": "in_progress"}]}"#,
        )
        .unwrap();
        let value = serde_json::to_value(&plan).unwrap();
        assert_eq!(value["entries"].as_array().unwrap().len(), 2);
        assert_eq!(value["entries"][1]["status"], "in_progress");
    }
}

/// The cost of one update: an `assistant.delta` turned into its
/// `session/update` line (translation and JSON encoding, what herald adds
/// per streamed token). Run with
/// `cargo test -p herald-acp --release update_overhead -- --ignored --nocapture`.
#[cfg(test)]
mod overhead {
    use super::*;

    #[test]
    #[ignore = "a measurement, not a check; see docs/BENCHMARKS.md"]
    fn update_overhead() {
        let mut t = Translator::new("ses_root", "/w".into(), true, 128_000);
        let event = Event::new(
            "ses_root",
            ROOT,
            EventKind::AssistantDelta {
                text: "a token ".into(),
            },
        );
        let rounds = 200_000u32;
        let started = std::time::Instant::now();
        let mut bytes = 0usize;
        for _ in 0..rounds {
            for action in t.translate(&event) {
                if let Action::Update { session_id, update } = action {
                    let note = agent_client_protocol_schema::v1::SessionNotification::new(
                        session_id, *update,
                    );
                    let line = serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": note});
                    bytes += line.to_string().len();
                }
            }
        }
        let per = started.elapsed() / rounds;
        println!(
            "{rounds} updates, {per:?} per update, {} bytes each",
            bytes / rounds as usize
        );
    }
}
