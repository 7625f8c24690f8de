use std::path::PathBuf;
use std::sync::Arc;

use herald_llm::{ChatRequest, EncodedTools, ErrorKind, LlmClient, StreamUpdate, cost_usd};
use herald_protocol::{EventKind, Message, Usage};
use herald_tools::{AgentState, ToolRegistry};
use tokio_util::sync::CancellationToken;

use crate::tool_runner::run_tool_calls;
use crate::{EventSink, StoreHandle};

/// The message appended when the iteration budget is spent; the model then
/// answers once more with tool calls forbidden.
const ITERATION_LIMIT_NOTICE: &str = "[herald] The iteration limit for this turn is reached and no more tool calls will run. Reply now with a summary: what you did, what you found, what is left to do.";

/// Everything needed to start an agent.
pub struct AgentSetup {
    pub client: Arc<LlmClient>,
    pub registry: Arc<ToolRegistry>,
    /// Built once per session and replayed byte-identical.
    pub system_prompt: String,
    /// Earlier messages (a resumed conversation); empty for a new one.
    pub history: Vec<Message>,
    pub cwd: PathBuf,
    pub max_iterations: u32,
    /// Emit `assistant.delta` events while text streams.
    pub stream_deltas: bool,
    pub events: EventSink,
    /// Where the conversation is saved; `None` keeps it in memory only.
    pub recorder: Option<Recorder>,
}

/// Saves one session's messages and usage to the store.
#[derive(Clone, Debug)]
pub struct Recorder {
    pub store: StoreHandle,
    pub session_id: String,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    Completed,
    MaxIterations,
    Interrupted,
    Error,
}

impl ExitReason {
    /// The name used in events and results.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::MaxIterations => "max_iterations",
            Self::Interrupted => "interrupted",
            Self::Error => "error",
        }
    }
}

/// What one turn produced.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    pub exit_reason: ExitReason,
    /// The model's last answer (may be empty when interrupted or failed).
    pub final_response: String,
    /// Model requests made in this turn.
    pub iterations: u32,
    pub usage: Usage,
    pub cost_usd: f64,
    /// The fatal provider error, when `exit_reason` is `Error`.
    pub error: Option<String>,
    /// The kind of that error (e.g. to decide on compression later).
    pub error_kind: Option<ErrorKind>,
}

/// One agent: a fixed system prompt and tool list, a growing history, and the
/// loop that drives the model and the tools.
pub struct Agent {
    client: Arc<LlmClient>,
    registry: Arc<ToolRegistry>,
    tools: EncodedTools,
    system_prompt: String,
    messages: Vec<Message>,
    state: Arc<AgentState>,
    max_iterations: u32,
    stream_deltas: bool,
    events: EventSink,
    usage: Usage,
    cost_usd: f64,
    recorder: Option<Recorder>,
    /// How many leading messages are already in the store.
    persisted: usize,
    /// Usage of the latest reply, not yet recorded.
    pending_usage: Option<(Usage, f64)>,
}

impl Agent {
    /// Creates the agent; the tool schemas are encoded once here.
    pub fn new(setup: AgentSetup) -> Self {
        let tools = setup.client.encode_tools(&setup.registry.specs());
        let persisted = setup.history.len();
        Self {
            recorder: setup.recorder,
            persisted,
            pending_usage: None,
            client: setup.client,
            registry: setup.registry,
            tools,
            system_prompt: setup.system_prompt,
            messages: setup.history,
            state: AgentState::new(setup.cwd),
            max_iterations: setup.max_iterations.max(1),
            stream_deltas: setup.stream_deltas,
            events: setup.events,
            usage: Usage::default(),
            cost_usd: 0.0,
        }
    }

    /// The sink this agent reports to.
    pub fn events(&self) -> &EventSink {
        &self.events
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The stored system prompt.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// The encoded tool list sent with every request.
    pub fn encoded_tools(&self) -> &EncodedTools {
        &self.tools
    }

    /// Usage summed over the agent's life.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Cost summed over the agent's life.
    pub fn cost_usd(&self) -> f64 {
        self.cost_usd
    }

    /// Runs one user turn to completion, the iteration limit, an interrupt or
    /// a fatal provider error. The history stays valid in every case: each
    /// tool call gets exactly one result.
    pub async fn run_turn(&mut self, input: String, cancel: &CancellationToken) -> TurnOutcome {
        self.messages.push(Message::user(input));
        let mut outcome = TurnOutcome {
            exit_reason: ExitReason::Completed,
            final_response: String::new(),
            iterations: 0,
            usage: Usage::default(),
            cost_usd: 0.0,
            error: None,
            error_kind: None,
        };
        loop {
            if let Err(message) = self.persist().await {
                return self.fail(outcome, message, None);
            }
            if cancel.is_cancelled() {
                outcome.exit_reason = ExitReason::Interrupted;
                return outcome;
            }
            let at_limit = outcome.iterations >= self.max_iterations;
            if at_limit {
                self.messages.push(Message::user(ITERATION_LIMIT_NOTICE));
            }
            outcome.iterations += 1;
            let reply = match self.request(at_limit, cancel).await {
                Ok(reply) => reply,
                Err(err) if err.kind == ErrorKind::Cancelled => {
                    outcome.exit_reason = ExitReason::Interrupted;
                    return outcome;
                }
                Err(err) => return self.fail(outcome, err.message, Some(err.kind)),
            };
            let cost = cost_usd(self.client.model(), &reply.usage);
            self.usage.add(&reply.usage);
            self.cost_usd += cost;
            outcome.usage.add(&reply.usage);
            outcome.cost_usd += cost;
            // Saved with the assistant message below, in one store round trip.
            self.pending_usage = Some((reply.usage, cost));
            self.events.emit(EventKind::Usage {
                input_tokens: reply.usage.input_tokens,
                output_tokens: reply.usage.output_tokens,
                cached_tokens: reply.usage.cached_tokens,
                cost_usd: cost,
            });
            // At the limit tool calls are forbidden; any the model sends anyway
            // are dropped so no call is left without a result.
            let tool_calls = if at_limit {
                Vec::new()
            } else {
                reply.tool_calls
            };
            self.events.emit(EventKind::AssistantMessage {
                text: reply.text.clone(),
                tool_calls: tool_calls.clone(),
            });
            outcome.final_response.clone_from(&reply.text);
            let done = tool_calls.is_empty();
            self.messages
                .push(Message::assistant(reply.text, tool_calls));
            // The assistant message (with its pending calls) is saved before
            // any tool runs, so a crash mid-tool leaves a resumable history.
            if let Err(message) = self.persist().await {
                return self.fail(outcome, message, None);
            }
            if done {
                if at_limit {
                    outcome.exit_reason = ExitReason::MaxIterations;
                }
                return outcome;
            }
            let calls = self
                .messages
                .last()
                .map(|m| m.tool_calls.clone())
                .unwrap_or_default();
            let results =
                run_tool_calls(&self.registry, &calls, &self.state, cancel, &self.events).await;
            self.messages.extend(results);
            if cancel.is_cancelled() {
                if let Err(message) = self.persist().await {
                    return self.fail(outcome, message, None);
                }
                outcome.exit_reason = ExitReason::Interrupted;
                return outcome;
            }
        }
    }

    /// Saves the messages not yet stored. Errors are fatal for the turn:
    /// continuing would risk losing work (principle 2).
    pub async fn persist(&mut self) -> Result<(), String> {
        let Some(recorder) = &self.recorder else {
            self.persisted = self.messages.len();
            return Ok(());
        };
        if self.persisted >= self.messages.len() {
            return Ok(());
        }
        let pending = self.messages[self.persisted..].to_vec();
        let session = recorder.session_id.clone();
        let usage = self.pending_usage.take();
        let model = self.client.model().to_owned();
        match recorder
            .store
            .call(move |store| {
                if let Some((usage, cost)) = usage {
                    // Usage is bookkeeping: its failure must not stop the turn.
                    let _ = store.record_usage(&session, &model, &usage, Some(cost));
                }
                store.append_messages(&session, &pending)
            })
            .await
        {
            Ok(Ok(_)) => {
                self.persisted = self.messages.len();
                Ok(())
            }
            Ok(Err(err)) => Err(format!("cannot save the session: {err}")),
            Err(err) => Err(err.to_string()),
        }
    }

    fn fail(
        &self,
        mut outcome: TurnOutcome,
        message: String,
        kind: Option<ErrorKind>,
    ) -> TurnOutcome {
        self.events.emit(EventKind::Error {
            message: message.clone(),
            fatal: true,
        });
        outcome.exit_reason = ExitReason::Error;
        outcome.error = Some(message);
        outcome.error_kind = kind;
        outcome
    }

    async fn request(
        &self,
        forbid_tool_calls: bool,
        cancel: &CancellationToken,
    ) -> Result<herald_llm::AssistantReply, herald_llm::LlmError> {
        let events = &self.events;
        let stream_deltas = self.stream_deltas;
        let mut on_update = |update: StreamUpdate<'_>| match update {
            StreamUpdate::TextDelta(text) if stream_deltas => {
                events.emit(EventKind::AssistantDelta {
                    text: text.to_owned(),
                });
            }
            StreamUpdate::TextDelta(_) => {}
            StreamUpdate::Retry {
                attempt,
                delay_ms,
                reason,
            } => events.emit(EventKind::Retry {
                attempt,
                delay_ms,
                reason: reason.to_owned(),
            }),
        };
        let request = ChatRequest {
            system: &self.system_prompt,
            messages: &self.messages,
            tools: &self.tools,
            forbid_tool_calls,
        };
        self.client.complete(request, &mut on_update, cancel).await
    }
}
