//! The session runtime: one place that opens a session (new,
//! resumed, continued or forked), owns everything it runs on (settings,
//! store, client, tool registry, delegation tree, lease, agent), takes
//! operations and emits events. Front ends — `herald run`, the TUI and line
//! loop, `herald serve`, `herald mcp serve` — only translate: they
//! [`Session::submit`] [`Op`]s and render the [`herald_protocol::Event`]s of
//! [`Session::events`].
//!
//! The agent lives on its own task; turns, compactions, rewinds and the
//! end run there one at a time, in the order submitted. Operations that must
//! act during a turn (interrupt, steering, answers, cancelling a subagent)
//! act at once instead of queueing behind it.

mod catalog;
mod clarify;
mod deferred_flush;
mod driver;
mod end_flush;
mod fanout;
mod mcp_prompts;
mod open;
mod rules;
mod stored_rewind;
mod subscription;
mod title;

use std::sync::{Arc, Mutex, PoisonError};

use herald_protocol::{EventKind, RunStatus, TokenTotals};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::delegation::AgentOverview;
use crate::events::EventFlusher;
use crate::{
    CompressionReport, Delegation, ExitReason, LeaseWait, Settings, StoreHandle, SubmissionStamp,
};
use fanout::Fanout;

pub use catalog::Catalog;
pub use clarify::PendingQuestion;
pub use open::{open_session, prompt_inputs};
pub use rules::{delete_session, delete_session_trees, effective_agent_status};
pub use stored_rewind::StoredRewind;
pub use subscription::{Subscription, is_turn_end};

/// The stored events of session tree `session_id` after number `after`,
/// for a session that is not open in this process (a CLI run may hold it):
/// the subscription ends after the last stored event.
pub async fn replay(
    store: &StoreHandle,
    session_id: &str,
    after: u64,
) -> Result<Subscription, RuntimeError> {
    let id = session_id.to_owned();
    let found = store
        .call(move |s| s.get_session(&id))
        .await
        .map_err(|e| RuntimeError::Store(e.to_string()))?
        .map_err(|e| RuntimeError::Store(e.to_string()))?;
    if found.is_none() {
        return Err(RuntimeError::UnknownSession(session_id.to_owned()));
    }
    Ok(Subscription::new(
        Fanout::closed(),
        store.clone(),
        session_id.to_owned(),
        EventFlusher::none(),
        Some(after),
    ))
}

/// Which session [`open_session`] opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenMode {
    /// A new session.
    New,
    /// The stored session with this id.
    Resume(String),
    /// The latest stored session whose working directory is the settings' `cwd`.
    ContinueLatest,
    /// A new session starting with a copy of this stored session's
    /// conversation (as the model sees it: after its last compaction).
    Fork(String),
    /// A new session starting with this stored session's conversation
    /// before its user turn `turn` (1-based; see [`crate::checkpoints`]):
    /// the same messages, so the provider's prompt cache still hits.
    ForkAt(String, u32),
}

/// How a session asks its user (`clarify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClarifyPolicy {
    /// Questions are `clarify.requested` events answered by
    /// [`Op::ClarifyAnswer`]; the turn waits for the answer.
    Ask,
    /// Nobody can answer: the tool tells the model to decide itself.
    Unavailable,
}

/// Everything [`open_session`] needs.
pub struct SessionOptions {
    pub settings: Settings,
    pub store: StoreHandle,
    pub open: OpenMode,
    /// Whether to wait for another process's lease on the session.
    pub lease_wait: LeaseWait,
    /// Called once when opening waits for the herald process with this pid.
    pub on_lease_wait: Option<Box<dyn FnOnce(u32) + Send + Sync>>,
    /// What a new session is stored as started by.
    pub source: herald_store::SessionSource,
    /// Whether `assistant.delta` events are emitted.
    pub stream_deltas: bool,
    pub clarify: ClarifyPolicy,
    /// What happens to a tool call the permission policy asks about.
    pub approvals: crate::ApprovalMode,
    /// One turn and done (`herald run`): the turn waits for background
    /// agents, and when it ends every agent of the tree is stopped, the
    /// stream closes with `run.completed` and the session is ended.
    pub one_shot: bool,
    /// A model client to share (built from these settings): a server of
    /// many sessions builds one, instead of one per session (each build
    /// sets up a connection pool and reads the system's CA certificates).
    pub client: Option<Arc<crate::LlmClient>>,
    /// MCP servers to share (a server of many sessions starts them once);
    /// `None` starts the settings' `[mcp_servers]` for this session and
    /// stops them when it ends.
    pub mcp: Option<Arc<herald_mcp::McpHub>>,
    /// Tools the front end adds to the root agent's registry (the
    /// `cronjob` tool of the command line); `--toolsets` applies to them.
    pub extra_tools: Vec<Arc<dyn herald_tools::Tool>>,
    /// Where the root agent's file tools and foreground commands go when a
    /// front end offers its own (an editor's buffers and terminals over
    /// ACP); the default is herald's own file system and shell.
    pub backends: herald_tools::ToolBackends,
}

impl SessionOptions {
    /// Options for a new interactive session with no observer.
    pub fn new(settings: Settings, store: StoreHandle) -> Self {
        Self {
            settings,
            store,
            open: OpenMode::New,
            lease_wait: LeaseWait::No,
            on_lease_wait: None,
            source: herald_store::SessionSource::Cli,
            stream_deltas: false,
            clarify: ClarifyPolicy::Unavailable,
            approvals: crate::ApprovalMode::Headless,
            one_shot: false,
            client: None,
            mcp: None,
            extra_tools: Vec::new(),
            backends: herald_tools::ToolBackends::default(),
        }
    }
}

/// The operations a front end submits: [`herald_protocol::Op`].
pub use herald_mcp::{McpPrompt, McpPromptError};
pub use herald_protocol::{Op, SubmissionId};

/// Why an operation was refused. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(
        "no session '{0}'; list stored sessions with `herald sessions list` or GET /api/sessions"
    )]
    UnknownSession(String),
    #[error("no earlier session in {0}; start a new one")]
    NoEarlierSession(String),
    /// Another herald process holds the session.
    #[error("{0}")]
    SessionInUse(String),
    #[error("a turn is already running in session {0}; wait for it or interrupt it")]
    TurnRunning(String),
    #[error("session {0} has ended; resume it to continue")]
    Ended(String),
    /// No open request (question, approval) or agent has this id.
    #[error("{0}")]
    UnknownRequest(String),
    /// The request was malformed.
    #[error("{0}")]
    Invalid(String),
    /// Settings that cannot run (a bad toolset, delegation limits).
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Store(String),
    /// An MCP prompt could not be filled in.
    #[error(transparent)]
    McpPrompt(#[from] herald_mcp::McpPromptError),
}

/// What one turn came to: its `run.completed` event, read back.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub status: RunStatus,
    pub exit_reason: ExitReason,
    pub final_response: String,
    pub iterations: u32,
    /// Tokens of this turn's requests.
    pub usage: TokenTotals,
    /// USD; `None` when a model used has no price.
    pub cost_usd: Option<f64>,
    /// Every agent of the turn, subagents at any depth included.
    pub tree_usage: herald_protocol::UsageTotals,
    pub duration_ms: u64,
    /// The fatal error, when the turn failed.
    pub error: Option<String>,
}

impl TurnResult {
    /// The result a `run.completed` event reports; `None` for other events.
    pub fn from_event(kind: &herald_protocol::EventKind) -> Option<Self> {
        let herald_protocol::EventKind::RunCompleted {
            status,
            exit_reason,
            final_response,
            iterations,
            usage,
            cost_usd,
            tree_usage,
            duration_ms,
            error,
        } = kind
        else {
            return None;
        };
        Some(Self {
            status: *status,
            exit_reason: *exit_reason,
            final_response: final_response.clone(),
            iterations: *iterations,
            usage: usage.tokens(),
            cost_usd: *cost_usd,
            tree_usage: *tree_usage,
            duration_ms: *duration_ms,
            error: error.clone(),
        })
    }
}

/// A turn started with [`Session::start_turn`]: resolves when it ends.
pub struct TurnHandle {
    id: SubmissionId,
    done: oneshot::Receiver<driver::Reply>,
}

impl TurnHandle {
    /// The id of the turn's `user_turn` operation (its events carry it).
    pub fn id(&self) -> &SubmissionId {
        &self.id
    }

    /// Waits for the turn's end. `None` when the session went away first.
    pub async fn finished(self) -> Option<TurnResult> {
        match self.done.await {
            Ok(driver::Reply::Turn(result)) => Some(result),
            _ => None,
        }
    }
}

/// What the handle and the agent's task share.
struct Shared {
    session_id: String,
    resumed: bool,
    /// The model takes images: a person's turn may attach some.
    accepts_images: bool,
    store: StoreHandle,
    delegation: Arc<Delegation>,
    questions: Arc<clarify::OpenQuestions>,
    permissions: Arc<crate::permissions::Permissions>,
    /// Set while a turn runs, with the token that stops it.
    turn: Mutex<Option<CancellationToken>>,
    /// One turn and done: an interrupt stops the whole tree.
    one_shot: bool,
    /// The operation being worked on, stamped on every event.
    stamp: SubmissionStamp,
    /// The tree's last stored event number before this open.
    opened_after: u64,
    /// Cancelled when the session ends: stops every agent of the tree.
    cancel: CancellationToken,
    /// The live stream's followers; closed when the session ended (also
    /// while subagents still hold sinks).
    fanout: Arc<Fanout>,
    flusher: EventFlusher,
    /// What the user sends during a turn, for the root agent.
    steer: Arc<crate::SteerQueue>,
    /// The MCP servers this session started itself, stopped when it ends.
    own_mcp: Option<Arc<herald_mcp::McpHub>>,
    /// The session tree's browser (when the toolset is on), closed when it ends.
    browser: Option<Arc<herald_browser::Browser>>,
    /// The MCP servers the session reaches (its own or the process's).
    mcp: Arc<herald_mcp::McpHub>,
    /// Longest the end-of-session memory flush may take
    /// (`[memory] flush_timeout_seconds`).
    flush_timeout: std::time::Duration,
    /// `[sessions] title_model`, until the first turn of a session without
    /// history takes it (see `title.rs`).
    title_client: Mutex<Option<Arc<herald_llm::LlmClient>>>,
    /// The owed memory flushes of other sessions this session started (the
    /// process's first), waited for when it ends (see `deferred_flush.rs`).
    deferred: Mutex<Option<deferred_flush::DeferredFlushes>>,
    /// The task running the `file_changed` hooks, waited for (briefly)
    /// when the session ends.
    file_hooks: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// A handle on an open session; clones share it. Dropping every handle
/// does not end the session's running turn: [`Op::Shutdown`] ends it.
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
    /// When the last handle is gone the agent's task ends the session.
    queue: mpsc::UnboundedSender<driver::Queued>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.shared.session_id)
            .finish()
    }
}

impl Session {
    /// The session's id.
    pub fn id(&self) -> &str {
        &self.shared.session_id
    }

    /// Whether the session continued a stored one.
    pub fn resumed(&self) -> bool {
        self.shared.resumed
    }

    /// The number of the last event this session's stream was given (0
    /// before the first): a turn started now emits events after it.
    pub fn last_seq(&self) -> u64 {
        self.shared.flusher.last_seq()
    }

    /// The number of the tree's last stored event before this session was
    /// opened: `events(Some(opened_after()))` follows everything since the
    /// opening, `session.started` first.
    pub fn opened_after(&self) -> u64 {
        self.shared.opened_after
    }

    /// Whether a turn is running (or submitted and about to run).
    pub fn is_busy(&self) -> bool {
        self.lock_turn().is_some()
    }

    /// Whether the session has ended (after [`Op::Shutdown`] or a one-shot
    /// turn).
    pub fn is_ended(&self) -> bool {
        self.shared.fanout.is_closed()
    }

    /// Follows the session's events: with `after`, the stored events after
    /// that number first (0: from the tree's first), then live ones, none
    /// missed or repeated; without, live ones from now on. The stream ends
    /// when the session does; on an ended session it is the replay only.
    pub fn events(&self, after: Option<u64>) -> Subscription {
        Subscription::new(
            Arc::clone(&self.shared.fanout),
            self.shared.store.clone(),
            self.shared.session_id.clone(),
            self.shared.flusher.clone(),
            after,
        )
    }

    /// Applies one operation and returns the id its events carry. What the
    /// session refuses is refused here, before anything changed: an empty
    /// input, a second turn, a compaction or rewind while a turn runs, an
    /// answer to no open request, any operation after the end. The rest
    /// reports through events: a turn ends with `run.completed`, a
    /// compaction with `compaction`, a rewind with `session.rewound`, one
    /// that fails later with an `error`, and the stream closes after a
    /// shutdown.
    pub fn submit(&self, op: Op) -> Result<SubmissionId, RuntimeError> {
        self.dispatch(op).map(|(id, _)| id)
    }

    /// [`Session::submit`], also handing back where a queued operation's
    /// outcome arrives (the helpers below wait on it).
    fn dispatch(
        &self,
        op: Op,
    ) -> Result<(SubmissionId, Option<oneshot::Receiver<driver::Reply>>), RuntimeError> {
        let id = SubmissionId(herald_store::new_id("sub"));
        // Every operation a front end sends is in the log (its content,
        // which may hold the user's text, only at debug level).
        tracing::info!(session_id = %self.shared.session_id, submission_id = %id, op = op.kind(), "operation submitted");
        tracing::debug!(submission_id = %id, ?op, "operation");
        let session = || self.shared.session_id.clone();
        let queued = match op {
            Op::UserTurn { text, mut images } => {
                if text.trim().is_empty() {
                    return Err(RuntimeError::Invalid(
                        "the input is empty; send the text of the request".to_owned(),
                    ));
                }
                check_images(&mut images, self.shared.accepts_images)?;
                if self.is_ended() {
                    return Err(RuntimeError::Ended(session()));
                }
                let cancel = {
                    let mut turn = self.lock_turn();
                    if turn.is_some() {
                        return Err(RuntimeError::TurnRunning(session()));
                    }
                    let cancel = self.shared.cancel.child_token();
                    *turn = Some(cancel.clone());
                    cancel
                };
                let sent = self.enqueue(id.clone(), Op::UserTurn { text, images }, Some(cancel));
                if sent.is_err() {
                    *self.lock_turn() = None;
                }
                sent?
            }
            op @ (Op::Compact {} | Op::Rewind { .. }) => {
                if self.is_busy() {
                    return Err(RuntimeError::TurnRunning(session()));
                }
                self.enqueue(id.clone(), op, None)?
            }
            op @ Op::Shutdown { .. } => {
                self.interrupt();
                self.enqueue(id.clone(), op, None)?
            }
            Op::Interrupt {} => {
                self.interrupt();
                return Ok((id, None));
            }
            Op::Steer { text } => {
                self.steer(text)?;
                return Ok((id, None));
            }
            Op::CancelAgent { agent_id } => {
                self.cancel_agent(&agent_id)?;
                return Ok((id, None));
            }
            Op::AgentSend {
                agent_id,
                message,
                subtree,
            } => {
                self.send_to_agent(&agent_id, &message, subtree)?;
                return Ok((id, None));
            }
            Op::AgentFollowup { agent_id, message } => {
                // The journal lookup is async: what is wrong later arrives
                // as an `error` event; [`Session::follow_up_agent`] awaits it.
                self.check_follow_up(&agent_id, &message)?;
                let session = self.clone();
                tokio::spawn(async move {
                    if let Err(err) = session.follow_up_agent(&agent_id, &message).await {
                        session.shared.delegation.events.emit(EventKind::Error {
                            message: err.to_string(),
                            fatal: false,
                        });
                    }
                });
                return Ok((id, None));
            }
            Op::ClarifyAnswer { request_id, answer } => {
                self.shared
                    .questions
                    .answer(&request_id, &answer)
                    .map_err(RuntimeError::UnknownRequest)?;
                return Ok((id, None));
            }
            Op::ApprovalDecision {
                request_id,
                decision,
                message,
            } => {
                self.shared
                    .permissions
                    .approvals
                    .answer(
                        &request_id,
                        crate::ApprovalAnswer::from_decision(decision, message),
                    )
                    .map_err(RuntimeError::UnknownRequest)?;
                return Ok((id, None));
            }
            Op::ElicitationAnswer {
                request_id,
                action,
                content,
            } => {
                self.answer_elicitation(
                    &request_id,
                    crate::ElicitAnswer {
                        action: action.into(),
                        content,
                    },
                )?;
                return Ok((id, None));
            }
        };
        Ok((id, Some(queued)))
    }

    /// Hands `op` to the agent's task.
    fn enqueue(
        &self,
        id: SubmissionId,
        op: Op,
        cancel: Option<CancellationToken>,
    ) -> Result<oneshot::Receiver<driver::Reply>, RuntimeError> {
        let (reply, outcome) = oneshot::channel();
        self.queue
            .send(driver::Queued {
                id,
                op,
                cancel,
                reply,
            })
            .map_err(|_| RuntimeError::Ended(self.shared.session_id.clone()))?;
        Ok(outcome)
    }

    /// Submits a `user_turn` and hands back a handle on its end.
    pub fn start_turn(&self, text: String) -> Result<TurnHandle, RuntimeError> {
        self.start_turn_with_images(text, Vec::new())
    }

    /// Submits a `user_turn` with images attached (refused, changing
    /// nothing, when the model takes no images or an image is unusable).
    pub fn start_turn_with_images(
        &self,
        text: String,
        images: Vec<herald_protocol::ImageData>,
    ) -> Result<TurnHandle, RuntimeError> {
        let (id, done) = self.dispatch(Op::UserTurn { text, images })?;
        let done = done.ok_or_else(|| RuntimeError::Ended(self.shared.session_id.clone()))?;
        Ok(TurnHandle { id, done })
    }

    /// Submits a `user_turn` and waits for its end.
    pub async fn run_turn(&self, text: String) -> Result<TurnResult, RuntimeError> {
        self.start_turn(text)?
            .finished()
            .await
            .ok_or_else(|| RuntimeError::Ended(self.shared.session_id.clone()))
    }

    /// Submits `compact` and waits for its report.
    pub async fn compact(&self) -> Result<CompressionReport, RuntimeError> {
        match self.wait(Op::Compact {}).await? {
            driver::Reply::Compacted(report) => report.map_err(RuntimeError::Invalid),
            _ => Err(RuntimeError::Ended(self.shared.session_id.clone())),
        }
    }

    /// Submits `rewind` (to before user turn `turn`; see
    /// [`crate::checkpoints`]) and waits for what it did.
    pub async fn rewind(
        &self,
        turn: u32,
        scope: herald_protocol::RewindScope,
    ) -> Result<crate::checkpoints::RewindOutcome, RuntimeError> {
        match self.wait(Op::Rewind { turn, scope }).await? {
            driver::Reply::Rewound(outcome) => outcome.map(|o| *o).map_err(RuntimeError::Invalid),
            _ => Err(RuntimeError::Ended(self.shared.session_id.clone())),
        }
    }

    /// Submits `shutdown` and waits for the end; returns how many
    /// background agents were suspended (0 when it had ended already). The
    /// memory flush runs first when the session had enough user turns (at
    /// most `[memory] flush_timeout_seconds`; an `interrupt` ends it).
    pub async fn shutdown(&self) -> usize {
        self.end(false).await
    }

    /// [`Session::shutdown`] without the memory flush: for leaving on a
    /// signal, when nothing should hold the exit up.
    pub async fn shutdown_now(&self) -> usize {
        self.end(true).await
    }

    async fn end(&self, skip_memory_flush: bool) -> usize {
        match self.wait(Op::Shutdown { skip_memory_flush }).await {
            Ok(driver::Reply::Ended(suspended)) => suspended,
            _ => 0,
        }
    }

    /// Submits a queued operation and waits for its outcome.
    async fn wait(&self, op: Op) -> Result<driver::Reply, RuntimeError> {
        let (_, outcome) = self.dispatch(op)?;
        let outcome = outcome.ok_or_else(|| RuntimeError::Ended(self.shared.session_id.clone()))?;
        outcome
            .await
            .map_err(|_| RuntimeError::Ended(self.shared.session_id.clone()))
    }

    /// Stops the running turn. In a one-shot session the whole tree stops,
    /// background agents included: the session ends with the turn.
    fn interrupt(&self) {
        if self.shared.one_shot {
            self.shared.cancel.cancel();
        }
        if let Some(cancel) = self.lock_turn().as_ref() {
            cancel.cancel();
        }
    }

    fn steer(&self, text: String) -> Result<(), RuntimeError> {
        if text.trim().is_empty() {
            return Err(RuntimeError::Invalid(
                "the text to steer with is empty".to_owned(),
            ));
        }
        if !self.is_busy() {
            return Err(RuntimeError::Invalid(format!(
                "no turn is running in session {}; send the text as a new turn",
                self.shared.session_id
            )));
        }
        self.shared.steer.push(text);
        Ok(())
    }

    /// Queues `message` for the running subagent `agent_id` (and its
    /// running subtree); returns the receipts, also sent as `agent.message`
    /// events.
    pub fn send_to_agent(
        &self,
        agent_id: &str,
        message: &str,
        subtree: bool,
    ) -> Result<Vec<crate::delegation::SentMessage>, RuntimeError> {
        self.shared
            .delegation
            .send_message("root", agent_id, message, subtree)
            .map_err(messaging_error)
    }

    /// Starts a follow-up turn in the finished subagent `agent_id`'s own
    /// session, in the background; its result reaches the top-level agent.
    pub async fn follow_up_agent(&self, agent_id: &str, message: &str) -> Result<(), RuntimeError> {
        if self.is_ended() {
            return Err(RuntimeError::Ended(self.shared.session_id.clone()));
        }
        self.shared
            .delegation
            .follow_up_from_root(agent_id, message)
            .await
            .map_err(messaging_error)
    }

    /// What a follow-up operation can be refused for at once.
    fn check_follow_up(&self, agent_id: &str, message: &str) -> Result<(), RuntimeError> {
        if self.is_ended() {
            return Err(RuntimeError::Ended(self.shared.session_id.clone()));
        }
        if message.trim().is_empty() {
            return Err(messaging_error(crate::delegation::MessagingError::Empty));
        }
        if agent_id.trim().is_empty() {
            return Err(RuntimeError::Invalid(
                "agent_id is empty; name a finished subagent".to_owned(),
            ));
        }
        Ok(())
    }

    fn cancel_agent(&self, id: &str) -> Result<(), RuntimeError> {
        if self.shared.delegation.cancel_agent(id) {
            Ok(())
        } else {
            Err(RuntimeError::UnknownRequest(format!(
                "no running subagent '{id}' in session {}",
                self.shared.session_id
            )))
        }
    }

    /// An accepted answer whose content does not fit the request's schema
    /// is refused ([`RuntimeError::Invalid`]) and the request stays open.
    fn answer_elicitation(
        &self,
        request_id: &str,
        answer: crate::ElicitAnswer,
    ) -> Result<(), RuntimeError> {
        let elicitations = &self.shared.permissions.elicitations;
        let open = elicitations
            .pending()
            .iter()
            .any(|p| p.request_id == request_id);
        elicitations.answer(request_id, answer).map_err(if open {
            RuntimeError::Invalid
        } else {
            RuntimeError::UnknownRequest
        })
    }

    /// Steering text the model has not seen (the turn ended before a tool
    /// boundary), oldest first; taking it clears it.
    pub fn take_unsent_steering(&self) -> Vec<String> {
        self.shared.steer.take()
    }

    /// The session's live checkpoints, one per user turn, oldest first.
    pub async fn checkpoints(&self) -> Result<Vec<herald_store::CheckpointRecord>, RuntimeError> {
        let id = self.shared.session_id.clone();
        self.shared
            .store
            .call(move |s| s.checkpoints(&id, false))
            .await
            .map_err(|e| RuntimeError::Store(e.to_string()))?
            .map_err(|e| RuntimeError::Store(e.to_string()))
    }

    /// The subagents of this session (running and finished in this process).
    pub fn agents(&self) -> Vec<AgentOverview> {
        self.shared.delegation.overview()
    }

    /// The questions waiting for an answer.
    pub fn open_questions(&self) -> Vec<String> {
        self.shared.questions.open_ids()
    }

    /// The clarify questions waiting for an answer, oldest first, with
    /// what their `clarify.requested` events said.
    pub fn pending_questions(&self) -> Vec<PendingQuestion> {
        self.shared.questions.pending()
    }

    /// The approval requests waiting for an answer, oldest first.
    pub fn pending_approvals(&self) -> Vec<crate::PendingApproval> {
        self.shared.permissions.approvals.pending()
    }

    /// The elicitations waiting for an answer, oldest first.
    pub fn pending_elicitations(&self) -> Vec<crate::PendingElicitation> {
        self.shared.permissions.elicitations.pending()
    }

    /// The permission mode the session applies.
    pub fn permission_mode(&self) -> herald_permissions::Mode {
        self.shared.permissions.mode()
    }

    fn lock_turn(&self) -> std::sync::MutexGuard<'_, Option<CancellationToken>> {
        self.shared
            .turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A refused message or follow-up as the runtime reports it.
/// Checks the images of a person's turn and normalises them (whitespace
/// removed, media type taken from the bytes): a model that takes no images,
/// or an image a provider would refuse, is an error that changes nothing.
fn check_images(
    images: &mut Vec<herald_protocol::ImageData>,
    accepts_images: bool,
) -> Result<(), RuntimeError> {
    if images.is_empty() {
        return Ok(());
    }
    if !accepts_images {
        return Err(RuntimeError::Invalid(
            "the model takes no images (images = false in the configuration); send the text alone or use a model that reads images".to_owned(),
        ));
    }
    let mut admitted = images.clone();
    let mut why = String::new();
    herald_protocol::admit_images(&mut admitted, &mut why);
    if admitted.len() != images.len() {
        return Err(RuntimeError::Invalid(format!(
            "an attached image cannot be sent; nothing was started: {}",
            why.trim()
        )));
    }
    *images = admitted;
    Ok(())
}

fn messaging_error(err: crate::delegation::MessagingError) -> RuntimeError {
    use crate::delegation::MessagingError as E;
    match err {
        E::Unknown(text) => RuntimeError::UnknownRequest(text),
        E::Empty | E::WrongState(_) => RuntimeError::Invalid(err.to_string()),
        E::Failed(text) => RuntimeError::Store(text),
    }
}
