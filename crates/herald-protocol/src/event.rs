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
    /// `compaction`) or at the end of a session (`session_end`). `status`
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
