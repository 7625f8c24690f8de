use std::path::PathBuf;
use std::sync::Arc;

use herald_llm::{ChatRequest, EncodedTools, ErrorKind, LlmClient, StreamUpdate, cost_usd};
use herald_protocol::{EventKind, Message, Usage};
use herald_tools::{AgentState, ToolRegistry};
use tokio_util::sync::CancellationToken;

use crate::compress::{
    CompactionInput, Compactor, CompressError, CompressionReport, Trigger, compaction_record,
    fixed_tokens,
};
use crate::config::CompressionConfig;
use crate::delegation::{Inbox, TokenBudget, render_notices};
use crate::intercept::CallInterceptor;
use crate::tool_runner::{CallGuards, run_tool_calls};
use crate::{EventSink, StoreHandle};

mod flush;

pub use flush::{
    FLUSH_MARKER, FlushReason, FlushReport, FlushSettings, FlushStatus, flush_instruction,
    user_turns_since_flush,
};

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
    /// The delegation tree's token budget this agent spends from (children).
    pub budget: Option<Arc<TokenBudget>>,
    /// Where this agent's background children report.
    pub inbox: Option<Arc<Inbox>>,
    /// When the model ends its turn while background children still run,
    /// wait for them and hand their results back before ending (one-shot
    /// runs and subagents); the interactive root instead gets them with its
    /// next input.
    pub await_background: bool,
}

/// Saves one session's messages and usage to the store.
#[derive(Clone, Debug)]
pub struct Recorder {
    pub store: StoreHandle,
    pub session_id: String,
}
/// Why a turn ended (the protocol's type).
pub use herald_protocol::ExitReason;

/// The result of a tool call the model was still writing when its reply
/// reached the output cap: it is not run (its arguments may be cut short).
const CUT_CALL_RESULT: &str = "not run: your reply reached the output limit (max_tokens) while this call was being written, so its arguments may be incomplete. Send it again; if it carries much content, split it into several smaller calls.";

/// The result of a tool call the model was still writing when its reply
/// reached the request's time limit: it is not run, as at the output cap.
const TIMED_OUT_CALL_RESULT: &str = "not run: your reply reached the time limit for one reply (request_timeout_seconds) while this call was being written, so its arguments may be incomplete. Send it again, shorter; if it carries much content, split it into several smaller calls.";

/// What the model is told of the call it was writing when its reply was
/// cut (at the time limit when `timed_out`, else at the output cap).
pub(crate) fn cut_call_result(timed_out: bool) -> &'static str {
    if timed_out {
        TIMED_OUT_CALL_RESULT
    } else {
        CUT_CALL_RESULT
    }
}

/// The notice for a reply cut at the request's time limit of `limit`.
fn timed_out_notice(limit: std::time::Duration, with_calls: bool) -> String {
    let secs = limit.as_secs();
    if with_calls {
        format!(
            "the model's reply was still streaming after {secs} s (request_timeout_seconds) and was cut there; the tool call it was writing was not run, and the model was told to send it again"
        )
    } else {
        format!(
            "the model's reply was still streaming after {secs} s (request_timeout_seconds) and is cut short there; raise [network] request_timeout_seconds in config.toml for longer replies, or lower max_tokens"
        )
    }
}

/// The notice for a reply cut at the output cap of `cap` tokens.
fn cut_notice(cap: u32, with_calls: bool) -> String {
    if with_calls {
        format!(
            "the model's reply reached the output limit ({cap} tokens); the tool call it was writing was not run, and the model was told to send it again"
        )
    } else {
        format!(
            "the model's reply reached the output limit ({cap} tokens) and is cut short; raise max_tokens in config.toml for longer replies"
        )
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
    /// USD; `None` once a request used a model without a price.
    pub cost_usd: Option<f64>,
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
    /// Judges each tool call before it runs (the permission layer).
    gate: Option<Arc<dyn herald_tools::PermissionGate>>,
    /// See every tool call before and after it runs (hooks, learnings).
    interceptors: Vec<Arc<dyn CallInterceptor>>,
    /// The interceptors with this agent's identity, as tool calls carry
    /// them; `None` while there are none.
    interception: Option<Arc<crate::intercept::Interception>>,
    /// The session's hooks (`pre_compact` here; the runtime runs the rest).
    hooks: Option<Arc<crate::hooks::Hooks>>,
    tools: EncodedTools,
    system_prompt: String,
    messages: Vec<Message>,
    state: Arc<AgentState>,
    max_iterations: u32,
    stream_deltas: bool,
    events: EventSink,
    usage: Usage,
    cost_usd: Option<f64>,
    /// Counts each request in this agent's and its ancestors' totals.
    meter: Arc<crate::UsageMeter>,
    recorder: Option<Recorder>,
    /// How many leading messages are already in the store.
    persisted: usize,
    /// Usage of the latest reply, not yet recorded.
    pending_usage: Option<(Usage, Option<f64>)>,
    budget: Option<Arc<TokenBudget>>,
    inbox: Option<Arc<Inbox>>,
    /// What the user sends during a turn (the interactive root only).
    steer: Option<Arc<crate::SteerQueue>>,
    await_background: bool,
    /// Context compression state.
    compactor: Compactor,
    /// A batch kept results in the store that the next persist replaces.
    kept_results: bool,
    /// The memory flush (see [`flush`]); the root agent of a session only.
    memory_flush: Option<FlushSettings>,
    /// The encoded bodies of this conversation's requests: each request
    /// encodes only the messages added since the one before.
    body_cache: herald_llm::BodyCache,
    /// The session's file watch (see [`crate::watch`]), when it watches.
    file_watch: Option<Arc<crate::watch::FileWatch>>,
    /// Whether this agent is told of outside changes (the root).
    file_notes: bool,
    /// `[routing]`: the long-window model this conversation moves to once
    /// it grows past a size (once).
    long_context: Option<LongContext>,
    /// `[routing]`: the model the memory flush runs on, when not this one.
    flush_client: Option<Arc<LlmClient>>,
}

/// Where a long conversation moves (see [`Agent::set_long_context`]).
struct LongContext {
    tokens: u64,
    client: Arc<LlmClient>,
    role: crate::routing::Role,
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
            compactor: Compactor::new(CompressionConfig::default(), setup.client.model()),
            kept_results: false,
            memory_flush: None,
            budget: setup.budget,
            inbox: setup.inbox,
            steer: None,
            await_background: setup.await_background,
            client: setup.client,
            registry: setup.registry,
            gate: None,
            interceptors: Vec::new(),
            interception: None,
            hooks: None,
            tools,
            system_prompt: setup.system_prompt,
            messages: setup.history,
            state: AgentState::new(setup.cwd),
            max_iterations: setup.max_iterations.max(1),
            stream_deltas: setup.stream_deltas,
            events: setup.events,
            usage: Usage::default(),
            cost_usd: Some(0.0),
            meter: crate::UsageMeter::new(None),
            body_cache: herald_llm::BodyCache::default(),
            file_watch: None,
            file_notes: false,
            long_context: None,
            flush_client: None,
        }
    }

    /// Moves the conversation to `client` (a long-window model) before a
    /// request whose estimated prompt reaches `tokens`, once, with a
    /// `model.routed` event for `role`.
    pub fn set_long_context(
        &mut self,
        tokens: u64,
        client: Arc<LlmClient>,
        role: crate::routing::Role,
    ) {
        self.long_context = Some(LongContext {
            tokens,
            client,
            role,
        });
    }

    /// The memory flush runs on `client` (`[routing]` role `memory_flush`).
    pub fn set_flush_client(&mut self, client: Arc<LlmClient>) {
        self.flush_client = Some(client);
    }

    /// Switches to the long-window model when the prompt has grown past
    /// its threshold (see [`Agent::set_long_context`]).
    fn widen_if_long(&mut self, fixed: u64) {
        let Some(wide) = &self.long_context else {
            return;
        };
        let estimate = self.compactor.prompt_tokens(fixed, &self.messages);
        if estimate < wide.tokens {
            return;
        }
        let Some(wide) = self.long_context.take() else {
            return;
        };
        let model = wide.client.model().to_owned();
        self.events.emit(EventKind::ModelRouted {
            role: wide.role.as_str().to_owned(),
            model: model.clone(),
            reason: format!(
                "the conversation reached about {estimate} tokens, past [routing] long_context_tokens = {} (was {})",
                wide.tokens,
                self.client.model()
            ),
        });
        self.client = wide.client;
        self.compactor.switch_model(&model);
        self.body_cache.history_changed();
    }

    /// The sink this agent reports to.
    pub fn events(&self) -> &EventSink {
        &self.events
    }

    /// Hands what the user sends during a turn to the model at the next
    /// tool boundary (see [`crate::SteerQueue`]).
    pub fn set_steering(&mut self, queue: Arc<crate::SteerQueue>) {
        self.steer = Some(queue);
    }

    /// The tool state (terminal directory, processes, file log) of this agent.
    pub fn state(&self) -> &Arc<AgentState> {
        &self.state
    }

    /// Whether a finished turn waits for running background children (see
    /// [`AgentSetup::await_background`]).
    pub fn set_await_background(&mut self, wait: bool) {
        self.await_background = wait;
    }

    /// Passes every tool call of this agent through `gate`.
    pub fn set_gate(&mut self, gate: Arc<dyn herald_tools::PermissionGate>) {
        self.gate = Some(gate);
    }

    /// Adds `interceptor` after those already added (see
    /// [`crate::intercept`]).
    pub fn add_interceptor(&mut self, interceptor: Arc<dyn CallInterceptor>) {
        self.interceptors.push(interceptor);
        self.interception = crate::intercept::Interception::new(
            self.interceptors.clone(),
            self.events.session_id(),
            self.events.agent_id(),
        );
    }

    /// Has the session's file watch see this agent's file tools (see
    /// [`crate::watch`]). The root agent (`root`) is the one told of
    /// outside changes, at the end of its next tool result or user
    /// message; a subagent's writes only count as herald's own.
    pub fn set_file_watch(&mut self, watch: Arc<crate::watch::FileWatch>, root: bool) {
        self.state.set_file_tracker(watch.tracker(root));
        self.file_watch = Some(watch);
        self.file_notes = root;
    }

    /// The session's file watch, when it watches files.
    pub fn file_watch(&self) -> Option<&Arc<crate::watch::FileWatch>> {
        self.file_watch.as_ref()
    }

    /// Gives this agent the session's hooks (see [`crate::hooks`]).
    pub fn set_hooks(&mut self, hooks: Option<Arc<crate::hooks::Hooks>>) {
        self.hooks = hooks;
    }

    /// The session's hooks, if it has any.
    pub fn hooks(&self) -> Option<&Arc<crate::hooks::Hooks>> {
        self.hooks.as_ref()
    }

    /// The tools this agent has.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// The client this agent talks to.
    pub fn client(&self) -> &Arc<LlmClient> {
        &self.client
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Replaces the conversation with `history`, which the store already
    /// holds (a rewind to before an earlier turn). The last prompt
    /// measurement no longer applies.
    pub fn replace_history(&mut self, history: Vec<Message>) {
        self.messages = history;
        self.body_cache.history_changed();
        self.persisted = self.messages.len();
        self.compactor.observe(0, 0);
    }

    /// The stored system prompt.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// Sends `specs` as the tool list of every request instead of the
    /// registry's own: a deferred memory flush offers the tools the
    /// session's requests carried (the same prefix) while only `memory`
    /// can run.
    pub fn offer_tools(&mut self, specs: &[herald_protocol::ToolSpec]) {
        self.tools = self.client.encode_tools(specs);
        self.body_cache.history_changed();
    }

    /// The encoded tool list sent with every request.
    pub fn encoded_tools(&self) -> &EncodedTools {
        &self.tools
    }

    /// Usage summed over the agent's life.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Counts this agent's requests from now on in `meter` (a child's,
    /// below its parent's, so the parent's subtree totals include it).
    pub fn set_meter(&mut self, meter: Arc<crate::UsageMeter>) {
        self.meter = meter;
    }

    /// This agent's usage meter (own and subtree totals).
    pub fn meter(&self) -> &Arc<crate::UsageMeter> {
        &self.meter
    }

    /// Cost summed over the agent's life.
    pub fn cost_usd(&self) -> Option<f64> {
        self.cost_usd
    }

    /// Runs one user turn to completion, the iteration limit, an interrupt or
    /// a fatal provider error. The history stays valid in every case: each
    /// tool call gets exactly one result.
    pub async fn run_turn(&mut self, input: String, cancel: &CancellationToken) -> TurnOutcome {
        self.run_turn_with_images(input, Vec::new(), cancel).await
    }

    /// [`Agent::run_turn`] with images attached to the person's message
    /// (checked by the caller: see `herald_protocol::admit_images`).
    pub async fn run_turn_with_images(
        &mut self,
        input: String,
        images: Vec<herald_protocol::ImageData>,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let mut input = match self.take_notices() {
            Some(notices) => format!("{input}\n\n{notices}"),
            None => input,
        };
        if let Some(note) = self.take_file_note(false).await {
            input.push_str("\n\n");
            input.push_str(&note);
        }
        self.messages.push(Message::user(input).with_images(images));
        self.run_loop(cancel).await
    }

    /// Continues a stored conversation whose last turn did not finish (a
    /// background agent restarted after a crash). A conversation that already
    /// ends with a final answer returns it without a request.
    pub async fn resume_turn(&mut self, cancel: &CancellationToken) -> TurnOutcome {
        if let Some(last) = self.messages.last()
            && last.role == herald_protocol::Role::Assistant
            && last.tool_calls.is_empty()
        {
            return TurnOutcome {
                exit_reason: ExitReason::Completed,
                final_response: last.content.clone(),
                iterations: 0,
                usage: Usage::default(),
                cost_usd: Some(0.0),
                error: None,
                error_kind: None,
            };
        }
        self.run_loop(cancel).await
    }

    /// Why the next request may not be sent under the delegation tree's
    /// token budget: it is spent, or the request's estimated size would pass
    /// it (a request is never sent just to overshoot the cap).
    fn budget_stop(&self) -> Option<String> {
        let budget = self.budget.as_ref()?;
        if let Some((used, limit)) = budget.exhausted() {
            return Some(format!(
                "token budget of the delegation tree is spent ({used}/{limit} tokens); stopping with what there is"
            ));
        }
        let estimate = self.compactor.prompt_tokens(
            fixed_tokens(&self.system_prompt, &self.tools),
            &self.messages,
        );
        budget.would_exceed(estimate).map(|(used, limit)| {
            format!(
                "the next request (~{estimate} tokens) would pass the token budget of the delegation tree ({used}/{limit} tokens used); stopping with what there is"
            )
        })
    }

    /// The reports of finished background children, rendered, if any.
    fn take_notices(&self) -> Option<String> {
        let notices = self.inbox.as_ref()?.drain();
        (!notices.is_empty()).then(|| render_notices(&notices))
    }

    /// The note on files changed outside the session since the model last
    /// saw them (the root agent only), if any.
    /// `just_looked`: the stamps were compared right before.
    async fn take_file_note(&self, just_looked: bool) -> Option<String> {
        match &self.file_watch {
            Some(watch) if self.file_notes => watch.take_note(just_looked).await,
            _ => None,
        }
    }

    /// When `calls` may change files other than through the file tools
    /// (whose writes are known byte for byte), the stretch during which
    /// changes count as this session's own (see [`crate::watch`]).
    async fn own_file_changes(
        &self,
        calls: &[herald_protocol::ToolCall],
    ) -> Option<crate::watch::OwnChanges> {
        let watch = self.file_watch.as_ref()?;
        let may_change = calls.iter().any(|call| {
            !self.registry.is_read_only(&call.name)
                && !matches!(call.name.as_str(), "write_file" | "patch")
        });
        match may_change {
            true => Some(watch.own_changes().await),
            false => None,
        }
    }

    /// What the user sent during the turn, rendered, if anything.
    /// Receipts of messages sent with `agent_send` are reported
    /// `delivered` here, as `agent.message` events.
    fn take_steering(&self) -> Option<String> {
        let texts = self
            .steer
            .as_ref()?
            .take_marked(herald_protocol::MessageDelivery::Delivered);
        for receipt in texts.iter().filter_map(|s| s.receipt.clone()) {
            self.events.emit(EventKind::AgentMessage {
                receipt,
                state: herald_protocol::MessageDelivery::Delivered,
            });
        }
        (!texts.is_empty()).then(|| crate::steer::render_steering(&texts))
    }

    /// The latest assistant text, for a turn stopped before its final answer.
    fn last_assistant_text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == herald_protocol::Role::Assistant && !m.content.is_empty())
            .map(|m| m.content.clone())
            .unwrap_or_default()
    }

    /// Waits for a background child to report, when this agent should hand
    /// results back before ending. Returns false when there is nothing to
    /// wait for (or on interrupt).
    async fn wait_for_background(&self, cancel: &CancellationToken) -> bool {
        let Some(inbox) = self.inbox.as_ref().filter(|_| self.await_background) else {
            return false;
        };
        loop {
            if inbox.has_notices() {
                return true;
            }
            if inbox.running() == 0 || cancel.is_cancelled() {
                return false;
            }
            let changed = inbox.changed();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if inbox.has_notices() || inbox.running() == 0 {
                continue;
            }
            tokio::select! {
                () = changed => {}
                () = cancel.cancelled() => return false,
            }
        }
    }

    async fn run_loop(&mut self, cancel: &CancellationToken) -> TurnOutcome {
        let mut outcome = TurnOutcome {
            exit_reason: ExitReason::Completed,
            final_response: String::new(),
            iterations: 0,
            usage: Usage::default(),
            cost_usd: Some(0.0),
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
            if let Some(message) = self.budget_stop() {
                self.events.emit(EventKind::Error {
                    message,
                    fatal: false,
                });
                outcome.exit_reason = ExitReason::Budget;
                if outcome.final_response.is_empty() {
                    outcome.final_response = self.last_assistant_text();
                }
                return outcome;
            }
            let fixed = fixed_tokens(&self.system_prompt, &self.tools);
            self.widen_if_long(fixed);
            if let Some(message) =
                self.compactor
                    .overflow(fixed, &self.messages, self.client.model())
            {
                return self.fail(outcome, message, Some(ErrorKind::ContextTooLong));
            }
            if self.compactor.due(fixed, &self.messages) {
                // A failed compaction keeps the history unchanged; go on.
                let _ = self.compact(Trigger::Threshold, cancel).await;
            }
            let at_limit = outcome.iterations >= self.max_iterations;
            if at_limit {
                self.messages.push(Message::user(ITERATION_LIMIT_NOTICE));
            }
            outcome.iterations += 1;
            let reply = match self.request_compacting(at_limit, cancel).await {
                Ok(reply) => reply,
                Err(err) if err.kind == ErrorKind::Cancelled => {
                    outcome.exit_reason = ExitReason::Interrupted;
                    return outcome;
                }
                Err(err) => return self.fail(outcome, err.message, Some(err.kind)),
            };
            if let Some(budget) = &self.budget {
                budget.add(reply.usage.input_tokens + reply.usage.output_tokens);
            }
            self.compactor
                .observe(reply.usage.input_tokens, self.messages.len());
            let cost = cost_usd(self.client.model(), &reply.usage);
            self.usage.add(&reply.usage);
            self.cost_usd = herald_protocol::add_cost(self.cost_usd, cost);
            self.meter.record(&reply.usage, cost);
            outcome.usage.add(&reply.usage);
            outcome.cost_usd = herald_protocol::add_cost(outcome.cost_usd, cost);
            // Saved with the assistant message below, in one store round trip.
            self.pending_usage = Some((reply.usage, cost));
            self.events.emit(EventKind::Usage {
                input_tokens: reply.usage.input_tokens,
                output_tokens: reply.usage.output_tokens,
                cached_tokens: reply.usage.cached_tokens,
                cost_usd: cost,
            });
            // Cut at the output cap or at the time limit: the last call may
            // be incomplete.
            let cut = reply.is_cut();
            let timed_out = reply.timed_out;
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
                .push(Message::assistant(reply.text, tool_calls).with_reasoning(reply.reasoning));
            // The assistant message (with its pending calls) is saved before
            // any tool runs, so a crash mid-tool leaves a resumable history.
            if let Err(message) = self.persist().await {
                return self.fail(outcome, message, None);
            }
            if cut {
                let message = if timed_out {
                    timed_out_notice(self.client.request_timeout(), !done)
                } else {
                    cut_notice(self.client.output_cap(), !done)
                };
                self.events.emit(EventKind::Error {
                    message,
                    fatal: false,
                });
            }
            if done {
                if at_limit {
                    outcome.exit_reason = ExitReason::MaxIterations;
                    return outcome;
                }
                if self.wait_for_background(cancel).await
                    && let Some(notices) = self.take_notices()
                {
                    self.messages.push(Message::user(notices));
                    continue;
                }
                if cancel.is_cancelled() {
                    outcome.exit_reason = ExitReason::Interrupted;
                }
                return outcome;
            }
            let mut calls = self
                .messages
                .last()
                .map(|m| m.tool_calls.clone())
                .unwrap_or_default();
            // The call being written when the cap was reached may be
            // incomplete: it is answered without running.
            let unfinished = if cut { calls.pop() } else { None };
            let own_changes = self.own_file_changes(&calls).await;
            let mut results = run_tool_calls(
                self.client.accepts_images(),
                &self.registry,
                CallGuards {
                    gate: self.gate.as_ref(),
                    interception: self.interception.as_ref(),
                },
                &calls,
                &self.state,
                cancel,
                &self.events,
                self.recorder.as_ref(),
            )
            .await;
            let just_looked = own_changes.is_some();
            if let Some(own_changes) = own_changes {
                own_changes.end().await;
            }
            if let Some(call) = &unfinished {
                results.push(Message::tool_result(call, cut_call_result(timed_out), true));
            }
            // Batches of several calls keep each result in the store as it
            // finishes (see `tool_runner`); the next persist drops them.
            self.kept_results |= calls.len() > 1;
            self.messages.extend(results);
            if let Some(notices) = self.take_notices()
                && let Some(last) = self.messages.last_mut()
            {
                // The newest tool result has not been sent yet: appending
                // keeps every earlier byte of the conversation unchanged.
                last.content.push_str("\n\n");
                last.content.push_str(&notices);
            }
            if let Some(note) = self.take_file_note(just_looked).await
                && let Some(last) = self.messages.last_mut()
            {
                last.content.push_str("\n\n");
                last.content.push_str(&note);
            }
            if let Some(steered) = self.take_steering()
                && let Some(last) = self.messages.last_mut()
            {
                last.content.push_str("\n\n");
                last.content.push_str(&steered);
            }
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
        // The task list is saved in the same round trip when it changed.
        let todos = self.state.todos.take_changed();
        if self.persisted >= self.messages.len() && todos.is_none() {
            return Ok(());
        }
        let pending = self.messages[self.persisted..].to_vec();
        let session = recorder.session_id.clone();
        let usage = self.pending_usage.take();
        let model = self.client.model().to_owned();
        // Background results in these messages count as delivered in the
        // same transaction that stores them (never before: a crash would
        // lose them).
        let delivered = match (&self.inbox, pending.is_empty()) {
            (Some(inbox), false) => inbox.take_unsaved(),
            _ => Vec::new(),
        };
        let clear_kept = !pending.is_empty() && std::mem::take(&mut self.kept_results);
        match recorder
            .store
            .call(move |store| {
                // One transaction; usage is bookkeeping and its failure does
                // not stop the turn (see `append_turn`).
                let step = herald_store::TurnStep {
                    usage: usage
                        .as_ref()
                        .map(|(usage, cost)| (model.as_str(), usage, *cost)),
                    messages: &pending,
                    delivered: &delivered,
                    clear_kept,
                    todos: todos.as_deref(),
                };
                store.append_turn(&session, &step).map(drop)
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
            StreamUpdate::TextRestart if stream_deltas => {
                events.emit(EventKind::AssistantReset {});
            }
            StreamUpdate::ReasoningDelta(text) if stream_deltas => {
                events.emit(EventKind::AssistantReasoning {
                    text: text.to_owned(),
                });
            }
            StreamUpdate::TextDelta(_)
            | StreamUpdate::TextRestart
            | StreamUpdate::ReasoningDelta(_) => {}
            StreamUpdate::Retry {
                attempt,
                delay_ms,
                reason,
            } => events.emit(EventKind::Retry {
                attempt,
                delay_ms,
                reason: reason.to_owned(),
            }),
            StreamUpdate::Throttled {
                endpoint,
                limit,
                in_flight,
                pause_ms,
            } => events.emit(EventKind::ProviderThrottled {
                endpoint: endpoint.to_owned(),
                limit: u32::try_from(limit).unwrap_or(u32::MAX),
                in_flight: u32::try_from(in_flight).unwrap_or(u32::MAX),
                pause_ms,
            }),
            StreamUpdate::Fallback {
                from_provider,
                from_model,
                to_provider,
                to_model,
                reason,
            } => events.emit(EventKind::ProviderFallback {
                from: herald_protocol::ProviderModel {
                    provider: from_provider.to_owned(),
                    model: from_model.to_owned(),
                },
                to: herald_protocol::ProviderModel {
                    provider: to_provider.to_owned(),
                    model: to_model.to_owned(),
                },
                reason: reason.to_owned(),
            }),
        };
        let request = ChatRequest {
            system: &self.system_prompt,
            messages: &self.messages,
            tools: &self.tools,
            forbid_tool_calls,
        };
        self.client
            .complete_cached(request, Some(&self.body_cache), &mut on_update, cancel)
            .await
    }

    /// Uses `config` (`[compression]`) for automatic compression; agents
    /// start with the defaults.
    pub fn set_compression(&mut self, config: CompressionConfig) {
        self.compactor = Compactor::new(config, self.client.model());
    }

    /// Summaries are written by `client` (`[compression] model`); call
    /// after [`Agent::set_compression`].
    pub fn set_summary_client(&mut self, client: Arc<LlmClient>) {
        self.compactor.set_summary_client(client);
    }

    /// Compresses the conversation now (`/compress`), whatever its size and
    /// whether automatic compression is on. On error nothing changed.
    pub async fn compress_now(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<CompressionReport, CompressError> {
        self.compact(Trigger::Manual, cancel).await
    }

    /// Sends the request; when the provider says the context is too long,
    /// compresses once and sends it again.
    async fn request_compacting(
        &mut self,
        forbid_tool_calls: bool,
        cancel: &CancellationToken,
    ) -> Result<herald_llm::AssistantReply, herald_llm::LlmError> {
        let err = match self.request(forbid_tool_calls, cancel).await {
            Err(err) if err.kind == ErrorKind::ContextTooLong && self.compactor.enabled() => err,
            other => return other,
        };
        match self.compact(Trigger::ContextTooLong, cancel).await {
            Ok(_) => self.request(forbid_tool_calls, cancel).await,
            Err(failed) if failed.is_cancelled() => Err(herald_llm::LlmError::cancelled()),
            Err(failed) => Err(herald_llm::LlmError {
                message: format!(
                    "{}; compressing the conversation failed: {failed}",
                    err.message
                ),
                ..err
            }),
        }
    }

    /// Replaces the history with its compacted form (see [`crate::compress`]),
    /// stores it after a compaction record, accounts the summary request and
    /// emits `compaction`. On error the history is unchanged.
    async fn compact(
        &mut self,
        trigger: Trigger,
        cancel: &CancellationToken,
    ) -> Result<CompressionReport, CompressError> {
        self.persist().await.map_err(CompressError::Store)?;
        if let Some(hooks) = &self.hooks {
            let trigger = match trigger {
                Trigger::Threshold => "auto",
                Trigger::ContextTooLong => "context_too_long",
                Trigger::Manual => "manual",
            };
            let cwd = self.state.cwd();
            let site = crate::hooks::HookSite {
                session_id: self.events.session_id(),
                agent_id: self.events.agent_id(),
                cwd: &cwd,
            };
            hooks.pre_compact(site, trigger).await;
        }
        // The memory flush (see `flush`) comes first when a summary will be
        // written, except after "context too long" (its request would not
        // fit either). The compaction works on the conversation as it was:
        // the flush's messages stay stored before the compaction record but
        // are not part of the compacted history.
        let before_flush = self.messages.len();
        if trigger != Trigger::ContextTooLong
            && self.flushes_before_compaction()
            && self.compactor.will_summarise(
                fixed_tokens(&self.system_prompt, &self.tools),
                &self.messages,
                trigger,
            )
        {
            self.flush_memory(FlushReason::Compaction, cancel, None)
                .await;
        }
        let input = CompactionInput {
            client: &self.client,
            system: &self.system_prompt,
            tools: &self.tools,
            messages: &self.messages[..before_flush.min(self.messages.len())],
            open_todos: self.state.todos.open_items_message(),
            trigger,
        };
        let compacted = match self.compactor.compact(input, cancel).await {
            Ok(compacted) => compacted,
            Err(err) => {
                if trigger == Trigger::Threshold
                    && !err.is_cancelled()
                    && !matches!(err, CompressError::NothingToCompress { .. })
                {
                    self.events.emit(EventKind::Error {
                        message: format!("context compaction skipped: {err}"),
                        fatal: false,
                    });
                }
                return Err(err);
            }
        };
        let mut usage_row = None;
        if let Some(usage) = compacted.usage {
            let cost = cost_usd(&compacted.summary_model, &usage);
            self.usage.add(&usage);
            self.cost_usd = herald_protocol::add_cost(self.cost_usd, cost);
            self.meter.record(&usage, cost);
            if let Some(budget) = &self.budget {
                budget.add(usage.input_tokens + usage.output_tokens);
            }
            self.events.emit(EventKind::Usage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cached_tokens: usage.cached_tokens,
                cost_usd: cost,
            });
            usage_row = Some((usage, cost));
        }
        if let Some(recorder) = &self.recorder {
            // The old messages stay; the record and the compacted history
            // follow them, and resuming starts after the last record.
            let mut rows = Vec::with_capacity(compacted.messages.len() + 1);
            rows.push(compaction_record(&compacted.report));
            rows.extend_from_slice(&compacted.messages);
            let session = recorder.session_id.clone();
            let model = compacted.summary_model.clone();
            let saved = recorder
                .store
                .call(move |store| {
                    if let Some((usage, cost)) = usage_row {
                        let _ = store.record_usage(&session, &model, &usage, cost);
                    }
                    store.append_messages(&session, &rows)
                })
                .await;
            match saved {
                Ok(Ok(_)) => {}
                Ok(Err(err)) => return Err(CompressError::Store(err.to_string())),
                Err(err) => return Err(CompressError::Store(err.to_string())),
            }
        }
        self.messages = compacted.messages;
        self.body_cache.history_changed();
        self.persisted = self.messages.len();
        self.events.emit(EventKind::Compaction {
            tokens_before: compacted.report.tokens_before,
            tokens_after: compacted.report.tokens_after,
        });
        Ok(compacted.report)
    }
}
