use serde::{Deserialize, Serialize};

use crate::{TokenTotals, UsageTotals};

/// One line of the event stream (`herald run --json`). Every event names the
/// session and agent it belongs to and when it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Event {
    #[serde(flatten)]
    pub kind: EventKind,
    pub session_id: String,
    /// `root` for the top-level agent.
    pub agent_id: String,
    /// RFC 3339 timestamp with milliseconds.
    pub ts: String,
    /// The event's place in its session tree's stored stream (monotonic per
    /// tree, also across resumes): replay "after seq N" continues a stream
    /// where a reader left it. Absent on events that are not stored
    /// (`assistant.delta`) and on streams that are not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The operation whose work emitted the event (see
    /// [`crate::SubmissionId`]): every event of a turn — its subagents'
    /// included — carries its `user_turn`'s id; a `compact`'s compaction, a
    /// `rewind`'s `session.rewound` and a `shutdown`'s memory flush carry
    /// theirs. Operations that act inside a running turn (answers,
    /// `interrupt`, `steer`, `cancel_agent`) cause events of that turn,
    /// which carry the turn's id. Absent on events no operation caused
    /// (`session.started`, a background agent finishing between turns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission_id: Option<crate::SubmissionId>,
}

impl Event {
    /// Stamps `kind` with its session, agent and the current time.
    pub fn new(session_id: &str, agent_id: &str, kind: EventKind) -> Self {
        Self {
            kind,
            session_id: session_id.to_owned(),
            agent_id: agent_id.to_owned(),
            ts: now_rfc3339(),
            seq: None,
            submission_id: None,
        }
    }
}

/// Outcome of one tool call as reported in `tool.completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    Ok,
    Error,
}

/// One model endpoint, as named in `provider.fallback`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProviderModel {
    /// `openai` or `anthropic` (the wire API).
    pub provider: String,
    pub model: String,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Completed,
    Failed,
    Interrupted,
}

/// The event payloads.
/// What a rewind did to the files of the working tree (`session.rewound`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RewoundFiles {
    /// Files put back as the snapshot had them.
    pub restored: u32,
    /// Files deleted (created after the snapshot).
    pub deleted: u32,
    /// Files created again (deleted after the snapshot).
    pub recreated: u32,
    /// The paths that changed, relative to the working directory.
    pub paths: Vec<String>,
    /// Where the restored snapshot came from, when it is not the turn's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Who answered an approval or elicitation request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedBy {
    /// A person, through a front end.
    User,
    /// Nobody can answer in this session (a headless run): refused.
    Headless,
    /// The turn was stopped while the request waited.
    Interrupt,
}

/// What became of an MCP server for a session (see `mcp.server`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpServerStatus {
    /// Up; its live tools are listed.
    Ready,
    /// Still starting; the tools it had last time are listed.
    Cached,
    /// Not started; no tools.
    Failed,
    /// Not up within `startup_timeout_sec`; its tools come next session.
    Late,
    /// Up, but listing other tools than the cached list this session uses.
    Changed,
}

impl McpServerStatus {
    /// The word used in events and listings.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Cached => "cached",
            Self::Failed => "failed",
            Self::Late => "late",
            Self::Changed => "changed",
        }
    }

    /// Whether a person should hear of it: the server is not (fully) there.
    pub fn is_problem(self) -> bool {
        matches!(self, Self::Failed | Self::Late | Self::Changed)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type")]
pub enum EventKind {
    #[serde(rename = "session.started")]
    SessionStarted {
        model: String,
        provider: String,
        cwd: String,
        resumed: bool,
    },
    #[serde(rename = "assistant.delta")]
    AssistantDelta { text: String },
    /// The `assistant.delta` text of the current reply so far is void: a
    /// retried request answered differently. The reply's text follows again
    /// from its start. (A retry that repeats the text already streamed sends
    /// only the new part, without this event.)
    #[serde(rename = "assistant.reset")]
    AssistantReset {},
    /// A piece of the model's reasoning as it streams in (Anthropic
    /// thinking text, or `reasoning_content` of an OpenAI-compatible
    /// server). Not stored, like `assistant.delta`: the whole reasoning is
    /// kept with the assistant message.
    #[serde(rename = "assistant.reasoning")]
    AssistantReasoning { text: String },
    #[serde(rename = "assistant.message")]
    AssistantMessage {
        text: String,
        tool_calls: Vec<crate::ToolCall>,
    },
    #[serde(rename = "tool.started")]
    ToolStarted {
        call_id: String,
        name: String,
        arguments: String,
    },
    #[serde(rename = "tool.completed")]
    ToolCompleted {
        call_id: String,
        name: String,
        status: ToolStatus,
        /// Size of the whole result the model got.
        output_bytes: u64,
        duration_ms: u64,
        /// The result text as the model saw it, so a person can read what
        /// happened; past a few KB only its head and tail, with a
        /// `[… N bytes omitted …]` marker between. Empty in events stored
        /// before it existed.
        #[serde(default)]
        output: String,
        /// For an error result, its message on one line (first ~300
        /// chars): why the call failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The exit code of a command, when the result is a JSON object
        /// with an integer `exit_code` (`terminal`, `process`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
    },
    /// A tool call made by an `execute_code` script; it is stored
    /// with the session but never enters the model's context.
    #[serde(rename = "sandbox.call")]
    SandboxCall {
        /// The `execute_code` call the script belongs to.
        parent_call_id: String,
        name: String,
        status: ToolStatus,
        /// The call's arguments (JSON text), head and tail kept when long.
        #[serde(default)]
        arguments: String,
        /// Size of the full arguments.
        args_bytes: u64,
        output_bytes: u64,
        duration_ms: u64,
    },
    #[serde(rename = "usage")]
    Usage {
        input_tokens: u64,
        output_tokens: u64,
        cached_tokens: u64,
        /// USD, rounded to 1e-6; `null` when a model has no price.
        #[serde(default, with = "crate::cost_serde")]
        #[schemars(with = "Option<f64>")]
        cost_usd: Option<f64>,
    },
    #[serde(rename = "retry")]
    Retry {
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    /// Requests move to another `[[fallback]]` endpoint: the one in use
    /// failed after its retries (or answered 401/403/404), or the cooldown
    /// is over and the primary is tried again.
    #[serde(rename = "provider.fallback")]
    ProviderFallback {
        from: ProviderModel,
        to: ProviderModel,
        reason: String,
    },
    /// The endpoint answered 429: its governor now allows `limit` requests
    /// in flight for the whole process (it had `in_flight`), and new ones
    /// wait `pause_ms` (`Retry-After`). Successes raise the limit again.
    #[serde(rename = "provider.throttled")]
    ProviderThrottled {
        endpoint: String,
        limit: u32,
        in_flight: u32,
        pause_ms: u64,
    },
    #[serde(rename = "compaction")]
    Compaction {
        tokens_before: u64,
        tokens_after: u64,
    },
    /// The session was rewound to before its user turn `turn` (the
    /// `rewind` operation): the files, the conversation or both, as
    /// `scope` says.
    #[serde(rename = "session.rewound")]
    SessionRewound {
        turn: u32,
        scope: crate::RewindScope,
        /// What happened to the files; absent when they were not rewound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        files: Option<RewoundFiles>,
        /// How many messages the model sees from now on; absent when the
        /// conversation was not rewound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        messages: Option<u32>,
    },
    #[serde(rename = "run.completed")]
    RunCompleted {
        status: RunStatus,
        exit_reason: crate::ExitReason,
        final_response: String,
        iterations: u32,
        /// The root agent's own requests of this run (`cost_usd` repeats
        /// its cost).
        usage: UsageTotals,
        /// USD, rounded to 1e-6; `null` when a model has no price.
        #[serde(default, with = "crate::cost_serde")]
        #[schemars(with = "Option<f64>")]
        cost_usd: Option<f64>,
        /// Every agent of the run, subagents at any depth included: the sum
        /// of all their `usage` events.
        #[serde(default)]
        tree_usage: UsageTotals,
        duration_ms: u64,
        /// The fatal error, when the run failed (also sent as an `error`
        /// event before this one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A subagent began (the event's `agent_id` is the child's).
    #[serde(rename = "subagent.started")]
    SubagentStarted {
        parent_id: String,
        depth: u32,
        goal: String,
        background: bool,
        /// The child's own session, where its conversation is stored.
        child_session_id: String,
    },
    /// `[routing]` chose the model for some work of the event's agent:
    /// `role` is `root`, `child`, `summary`, `title`, `memory_flush` or
    /// `judge`; `reason` names the rule (or allow-list, privacy or
    /// long-context switch) that chose it.
    #[serde(rename = "model.routed")]
    ModelRouted {
        role: String,
        model: String,
        reason: String,
    },
    /// A message sent to a running agent (`agent_send`, the `agent_send`
    /// operation) changed state; the event's `agent_id` is the recipient.
    /// Every receipt is `queued` first, then `delivered` or `missed`.
    #[serde(rename = "agent.message")]
    AgentMessage {
        receipt: String,
        state: crate::MessageDelivery,
    },
    /// A subagent started a tool call (drives the live tree display).
    #[serde(rename = "subagent.tool")]
    SubagentTool {
        parent_id: String,
        depth: u32,
        tool: String,
        /// The child's tokens so far.
        tokens: TokenTotals,
    },
    /// A subagent finished, failed, timed out or was interrupted.
    #[serde(rename = "subagent.completed")]
    SubagentCompleted {
        parent_id: String,
        depth: u32,
        status: crate::AgentStatus,
        exit_reason: crate::ExitReason,
        summary: String,
        tokens: TokenTotals,
        /// USD, rounded to 1e-6; `null` when a model has no price.
        #[serde(default, with = "crate::cost_serde")]
        #[schemars(with = "Option<f64>")]
        cost_usd: Option<f64>,
        /// The subagent's own requests in this run.
        #[serde(default)]
        usage: UsageTotals,
        /// Its own and all its descendants' requests in this run.
        #[serde(default)]
        tree_usage: UsageTotals,
        duration_seconds: f64,
    },
    /// The agent asks the user a question (`clarify`) and waits: a front
    /// end answers with the `ClarifyAnswer` operation naming `request_id`
    /// (the choice number, a choice's text, or free text when allowed).
    #[serde(rename = "clarify.requested")]
    ClarifyRequested {
        request_id: String,
        question: String,
        choices: Vec<String>,
        allow_freetext: bool,
    },
    /// A tool call needs a human's approval before it runs: a
    /// front end answers with the `ApprovalDecision` operation naming
    /// `request_id`. The event's `agent_id` is the agent that asks.
    #[serde(rename = "approval.requested")]
    ApprovalRequested {
        request_id: String,
        /// The tool and its arguments as the model sent them.
        tool: String,
        arguments: String,
        /// Why the call needs approval.
        reason: String,
        /// The rule or built-in check that asked (`mode:workspace-write`).
        rule: Option<String>,
        /// A rule that would allow such calls, saved by an "always" answer.
        allow_rule: Option<String>,
    },
    /// An approval request was answered: `decision` is `once`, `session`,
    /// `always` or `deny`; `by` says who (`user`, `headless`, `interrupt`).
    #[serde(rename = "approval.resolved")]
    ApprovalResolved {
        request_id: String,
        decision: crate::ApprovalDecision,
        by: ResolvedBy,
    },
    /// An MCP server asks the user for input during a tool call
    /// (elicitation): `message` says what for, `schema` is the JSON schema
    /// of the answer (an object of flat string, number, boolean and enum
    /// properties). A front end answers with the `ElicitationAnswer`
    /// operation naming `request_id`. The event's `agent_id` is the agent
    /// whose call is waiting.
    #[serde(rename = "elicitation.requested")]
    ElicitationRequested {
        request_id: String,
        server: String,
        message: String,
        schema: serde_json::Value,
    },
    /// An elicitation was answered: `action` is `accept`, `decline` or
    /// `cancel`; `by` says who (`user`, `headless` when nobody can answer,
    /// `interrupt` when the turn was stopped).
    #[serde(rename = "elicitation.resolved")]
    ElicitationResolved {
        request_id: String,
        action: crate::ElicitationAction,
        by: ResolvedBy,
    },
    /// A running tool reported progress (an MCP server's progress
    /// notification). Not stored: like `assistant.delta` it only matters
    /// while the call runs.
    #[serde(rename = "tool.progress")]
    ToolProgress {
        call_id: String,
        name: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// What became of an MCP server for this session. `status` is
    /// `ready` (its tools are listed), `cached` (its tools are listed from
    /// the list it had last time while it starts), `failed` (no tools;
    /// `message` says why), `late` (not ready within `startup_timeout_sec`:
    /// its tools come in the next session) or `changed` (it now lists
    /// other tools than this session offers: the new list applies from the
    /// next session, the prompt stays as it is).
    #[serde(rename = "mcp.server")]
    McpServer {
        server: String,
        status: McpServerStatus,
        tools: u32,
        message: Option<String>,
    },
    /// The memory flush ended: the extra request(s) that let the model save
    /// durable facts with the `memory` tool before a compaction (`reason`
    /// `compaction`), at the end of a session (`session_end`), or at a later
    /// start of herald for a session whose end flush did not finish
    /// (`deferred`, in that session's stored events). `status`
    /// is `done`, `interrupted`, `timeout` or `failed` (`message` says
    /// why); `saved` counts the memory calls that succeeded, `refused` the
    /// other tools' calls that were refused. Its requests' `usage` events
    /// come before it; its replies are stored but not `assistant.message`
    /// events (they are no answer).
    #[serde(rename = "memory.flush")]
    MemoryFlush {
        reason: crate::FlushReason,
        status: crate::FlushStatus,
        requests: u32,
        saved: u32,
        refused: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A hook command ran (`[[hooks]]` in config.toml or an approved
    /// `.herald/hooks.toml`). `event` is the hook event (`pre_tool`,
    /// `session_start`, ...), `outcome` one of `ok`, `blocked`, `error`,
    /// `timeout`; `message` says why for the last three. The event's
    /// `agent_id` is the agent the hook event is about.
    #[serde(rename = "hook.ran")]
    HookRan {
        event: crate::HookEvent,
        command: String,
        outcome: crate::HookOutcome,
        duration_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    #[serde(rename = "error")]
    Error { message: String, fatal: bool },
}

/// The current UTC time as RFC 3339 with millisecond precision.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    now.format(&format).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The place of `kind`'s variant in the enum. Exhaustive: a new variant
    /// does not compile until it is added here and to [`every_event`].
    fn variant(kind: &EventKind) -> usize {
        match kind {
            EventKind::SessionStarted { .. } => 0,
            EventKind::AssistantDelta { .. } => 1,
            EventKind::AssistantReset {} => 2,
            EventKind::AssistantReasoning { .. } => 3,
            EventKind::AssistantMessage { .. } => 4,
            EventKind::ToolStarted { .. } => 5,
            EventKind::ToolCompleted { .. } => 6,
            EventKind::SandboxCall { .. } => 7,
            EventKind::Usage { .. } => 8,
            EventKind::Retry { .. } => 9,
            EventKind::ProviderFallback { .. } => 10,
            EventKind::Compaction { .. } => 11,
            EventKind::SessionRewound { .. } => 12,
            EventKind::RunCompleted { .. } => 13,
            EventKind::SubagentStarted { .. } => 14,
            EventKind::SubagentTool { .. } => 15,
            EventKind::SubagentCompleted { .. } => 16,
            EventKind::ClarifyRequested { .. } => 17,
            EventKind::ApprovalRequested { .. } => 18,
            EventKind::ApprovalResolved { .. } => 19,
            EventKind::ElicitationRequested { .. } => 20,
            EventKind::ElicitationResolved { .. } => 21,
            EventKind::ToolProgress { .. } => 22,
            EventKind::McpServer { .. } => 23,
            EventKind::MemoryFlush { .. } => 24,
            EventKind::HookRan { .. } => 25,
            EventKind::Error { .. } => 26,
            EventKind::ProviderThrottled { .. } => 27,
            EventKind::AgentMessage { .. } => 28,
            EventKind::ModelRouted { .. } => 29,
        }
    }

    const VARIANTS: usize = 30;

    /// One event of each kind, optional fields set.
    fn every_event() -> Vec<EventKind> {
        let usage = UsageTotals {
            requests: 2,
            input: 10,
            output: 5,
            cached: 1,
            cache_creation: 0,
            cost_usd: Some(0.25),
        };
        let model = |provider: &str| ProviderModel {
            provider: provider.into(),
            model: "m".into(),
        };
        vec![
            EventKind::SessionStarted {
                model: "m".into(),
                provider: "openai".into(),
                cwd: "/w".into(),
                resumed: true,
            },
            EventKind::AssistantDelta { text: "he".into() },
            EventKind::AssistantReset {},
            EventKind::AssistantReasoning { text: "hmm".into() },
            EventKind::AssistantMessage {
                text: "hello".into(),
                tool_calls: vec![crate::ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                }],
            },
            EventKind::ToolStarted {
                call_id: "c1".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            },
            EventKind::ToolCompleted {
                call_id: "c1".into(),
                name: "terminal".into(),
                status: ToolStatus::Error,
                output_bytes: 3,
                duration_ms: 4,
                output: "out".into(),
                error: Some("exit 1".into()),
                exit_code: Some(1),
            },
            EventKind::SandboxCall {
                parent_call_id: "c2".into(),
                name: "read_file".into(),
                status: ToolStatus::Ok,
                arguments: "{}".into(),
                args_bytes: 2,
                output_bytes: 9,
                duration_ms: 1,
            },
            EventKind::Usage {
                input_tokens: 10,
                output_tokens: 5,
                cached_tokens: 1,
                cost_usd: Some(0.5),
            },
            EventKind::Retry {
                attempt: 2,
                delay_ms: 500,
                reason: "429".into(),
            },
            EventKind::ProviderFallback {
                from: model("openai"),
                to: model("anthropic"),
                reason: "down".into(),
            },
            EventKind::Compaction {
                tokens_before: 100,
                tokens_after: 10,
            },
            EventKind::ModelRouted {
                role: "child".into(),
                model: "small".into(),
                reason: "[[routing.rules]] #1: role child".into(),
            },
            EventKind::AgentMessage {
                receipt: "msg-1".into(),
                state: crate::MessageDelivery::Delivered,
            },
            EventKind::ProviderThrottled {
                endpoint: "https://api.example/v1/chat/completions".into(),
                limit: 4,
                in_flight: 9,
                pause_ms: 1000,
            },
            EventKind::SessionRewound {
                turn: 2,
                scope: crate::RewindScope::Both,
                files: Some(RewoundFiles {
                    restored: 1,
                    deleted: 2,
                    recreated: 3,
                    paths: vec!["a.txt".into()],
                    note: Some("from turn 3".into()),
                }),
                messages: Some(4),
            },
            EventKind::RunCompleted {
                status: RunStatus::Failed,
                exit_reason: crate::ExitReason::Budget,
                final_response: "partial".into(),
                iterations: 3,
                usage,
                cost_usd: Some(0.25),
                tree_usage: usage,
                duration_ms: 1200,
                error: Some("budget spent".into()),
            },
            EventKind::SubagentStarted {
                parent_id: "root".into(),
                depth: 1,
                goal: "g".into(),
                background: true,
                child_session_id: "ses_c".into(),
            },
            EventKind::SubagentTool {
                parent_id: "root".into(),
                depth: 1,
                tool: "terminal".into(),
                tokens: TokenTotals::default(),
            },
            EventKind::SubagentCompleted {
                parent_id: "root".into(),
                depth: 1,
                status: crate::AgentStatus::Timeout,
                exit_reason: crate::ExitReason::Timeout,
                summary: "s".into(),
                tokens: TokenTotals::default(),
                cost_usd: None,
                usage,
                tree_usage: usage,
                duration_seconds: 1.5,
            },
            EventKind::ClarifyRequested {
                request_id: "clr_1".into(),
                question: "which?".into(),
                choices: vec!["a".into()],
                allow_freetext: true,
            },
            EventKind::ApprovalRequested {
                request_id: "apr_1".into(),
                tool: "terminal".into(),
                arguments: "{}".into(),
                reason: "deletes".into(),
                rule: Some("rm".into()),
                allow_rule: Some("terminal(rm *)".into()),
            },
            EventKind::ApprovalResolved {
                request_id: "apr_1".into(),
                decision: crate::ApprovalDecision::Session,
                by: ResolvedBy::User,
            },
            EventKind::ElicitationRequested {
                request_id: "eli_1".into(),
                server: "s".into(),
                message: "name?".into(),
                schema: serde_json::json!({"type": "object"}),
            },
            EventKind::ElicitationResolved {
                request_id: "eli_1".into(),
                action: crate::ElicitationAction::Decline,
                by: ResolvedBy::Headless,
            },
            EventKind::ToolProgress {
                call_id: "c1".into(),
                name: "mcp__s__t".into(),
                progress: 0.5,
                total: Some(1.0),
                message: Some("half".into()),
            },
            EventKind::McpServer {
                server: "s".into(),
                status: McpServerStatus::Late,
                tools: 2,
                message: Some("slow".into()),
            },
            EventKind::MemoryFlush {
                reason: crate::FlushReason::SessionEnd,
                status: crate::FlushStatus::Timeout,
                requests: 1,
                saved: 0,
                refused: 1,
                message: Some("deadline".into()),
            },
            EventKind::HookRan {
                event: crate::HookEvent::SubagentStop,
                command: "./h.sh".into(),
                outcome: crate::HookOutcome::Blocked,
                duration_ms: 3,
                message: Some("no".into()),
            },
            EventKind::Error {
                message: "boom".into(),
                fatal: false,
            },
        ]
    }

    #[test]
    fn every_event_kind_round_trips_through_json_with_its_ids() {
        let events = every_event();
        let mut seen = [false; VARIANTS];
        for kind in events {
            seen[variant(&kind)] = true;
            let mut event = Event::new("ses_1", "ag_1", kind);
            event.seq = Some(7);
            event.submission_id = Some(crate::SubmissionId("sub_1".into()));
            let text = serde_json::to_string(&event).unwrap();
            let back: Event = serde_json::from_str(&text).unwrap();
            assert_eq!(back, event, "{text}");
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert!(json["type"].is_string(), "{text}");
            assert_eq!(json["submission_id"], "sub_1", "{text}");
        }
        assert!(seen.iter().all(|&s| s), "a kind is missing: {seen:?}");
    }

    #[test]
    fn events_serialise_with_type_tag_and_ids() {
        let event = Event::new(
            "s1",
            "root",
            EventKind::ToolStarted {
                call_id: "c1".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            },
        );
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["type"], "tool.started");
        assert_eq!(json["session_id"], "s1");
        assert_eq!(json["agent_id"], "root");
        assert_eq!(json["call_id"], "c1");
        assert!(json["ts"].as_str().is_some_and(|t| t.ends_with('Z')));
        // The round trip must parse and give back the same event.
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn hook_ran_names_event_command_outcome_and_duration() {
        let event = Event::new(
            "s1",
            "root",
            EventKind::HookRan {
                event: crate::HookEvent::PreTool,
                command: "./guard.sh".into(),
                outcome: crate::HookOutcome::Ok,
                duration_ms: 12,
                message: None,
            },
        );
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["type"], "hook.ran");
        assert_eq!(json["event"], "pre_tool");
        assert_eq!(json["command"], "./guard.sh");
        assert_eq!(json["outcome"], "ok");
        assert_eq!(json["duration_ms"], 12);
        assert!(json.get("message").is_none(), "{json}");
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
    }
}
