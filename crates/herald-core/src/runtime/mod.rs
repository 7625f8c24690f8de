//! The session runtime: one place that opens a session (new,
//! resumed, continued or forked), owns everything it runs on (settings,
//! store, client, tool registry, delegation tree, lease, agent), takes
//! operations and emits events. Front ends — `herald run`, the interactive
//! loop, `herald serve` — only translate: they send [`Op`]s and render the
//! [`Event`]s of a [`Subscription`].
//!
//! The agent lives on its own task; turns run one at a time. Operations that
//! must act during a turn (interrupt, clarify answers, cancelling a
//! subagent) act at once instead of queueing behind it.

mod clarify;
mod driver;
mod end_flush;
mod open;
mod rules;
mod subscription;
mod title;

use std::sync::{Arc, Mutex, PoisonError};

use herald_protocol::{Event, RunStatus, TokenTotals};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::delegation::AgentOverview;
use crate::events::EventFlusher;
use crate::{CompressionReport, Delegation, ExitReason, LeaseWait, Settings, StoreHandle};

pub use open::{open_session, prompt_inputs};
pub use rules::{delete_session, delete_session_trees, effective_agent_status};
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
    let (tx, live) = broadcast::channel(1);
    drop(tx);
    let mut sub = Subscription::new(
        live,
        store.clone(),
        session_id.to_owned(),
        EventFlusher::none(),
    );
    sub.replay_after(after).await;
    Ok(sub)
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
    /// Called with every event, in order, before any subscriber sees it and
    /// without ever dropping one (the terminal renderer).
    pub observer: Option<Box<dyn Fn(Arc<Event>) + Send + Sync>>,
    /// A model client to share (built from these settings): a server of
    /// many sessions builds one, instead of one per session (each build
    /// sets up a connection pool and reads the system's CA certificates).
    pub client: Option<Arc<crate::LlmClient>>,
    /// MCP servers to share (a server of many sessions starts them once);
    /// `None` starts the settings' `[mcp_servers]` for this session and
    /// stops them when it ends.
    pub mcp: Option<Arc<herald_mcp::McpHub>>,
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
            observer: None,
            client: None,
            mcp: None,
        }
    }
}

/// The operations a front end submits: [`herald_protocol::Op`].
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
}

/// What one turn came to (also sent as its `run.completed` event).
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

/// A turn started with [`Session::start_turn`]: resolves when it ends.
pub struct TurnHandle(oneshot::Receiver<TurnResult>);

impl TurnHandle {
    /// Waits for the turn's end. `None` when the session went away first.
    pub async fn finished(self) -> Option<TurnResult> {
        self.0.await.ok()
    }
}

/// A command for the task that owns the agent.
enum Command {
    Turn {
        text: String,
        cancel: CancellationToken,
        done: oneshot::Sender<TurnResult>,
    },
    Compact {
        done: oneshot::Sender<Result<CompressionReport, String>>,
    },
    Rewind {
        turn: u32,
        scope: herald_protocol::RewindScope,
        done: oneshot::Sender<Result<crate::checkpoints::RewindOutcome, String>>,
    },
    Shutdown {
        done: oneshot::Sender<usize>,
        /// Run the end-of-session memory flush first (not on a signal).
        flush: bool,
    },
}

/// What the handle and the agent's task share.
struct Shared {
    session_id: String,
    resumed: bool,
    store: StoreHandle,
    delegation: Arc<Delegation>,
    questions: Arc<clarify::OpenQuestions>,
    permissions: Arc<crate::permissions::Permissions>,
    /// Set while a turn runs, with the token that stops it.
    turn: Mutex<Option<CancellationToken>>,
    /// Cancelled when the session ends: stops every agent of the tree.
    cancel: CancellationToken,
    /// The live stream; `None` once the session ended (taking it closes
    /// every follower's stream, also while subagents still hold sinks).
    live: Arc<Mutex<Option<broadcast::Sender<Arc<Event>>>>>,
    flusher: EventFlusher,
    /// What the user sends during a turn, for the root agent.
    steer: Arc<crate::SteerQueue>,
    /// The MCP servers this session started itself, stopped when it ends.
    own_mcp: Option<Arc<herald_mcp::McpHub>>,
    /// Longest the end-of-session memory flush may take
    /// (`[memory] flush_timeout_seconds`).
    flush_timeout: std::time::Duration,
    /// `[sessions] title_model`, until the first turn of a session without
    /// history takes it (see `title.rs`).
    title_client: Mutex<Option<Arc<herald_llm::LlmClient>>>,
}

/// A handle on an open session; clones share it. Dropping every handle
/// does not end the session's running turn: [`Op::Shutdown`] ends it.
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
    /// When the last handle is gone the agent's task ends the session.
    commands: mpsc::UnboundedSender<Command>,
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

    /// Whether a turn is running.
    pub fn is_busy(&self) -> bool {
        self.lock_turn().is_some()
    }

    /// Whether the session has ended (after [`Op::Shutdown`] or a one-shot turn).
    pub fn is_ended(&self) -> bool {
        self.shared
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Follows the session's events from now on.
    pub fn subscribe(&self) -> Result<Subscription, RuntimeError> {
        let live = self
            .live_receiver()
            .ok_or_else(|| RuntimeError::Ended(self.shared.session_id.clone()))?;
        Ok(self.follower(live))
    }

    /// Follows the session's events after stored event `after` (0: from the
    /// first): the stored ones first, then live ones, with none missed or
    /// repeated. Works on an ended session too (replay only).
    pub async fn subscribe_after(&self, after: u64) -> Subscription {
        let live = self.live_receiver().unwrap_or_else(|| {
            let (tx, rx) = broadcast::channel(1);
            drop(tx);
            rx
        });
        let mut sub = self.follower(live);
        sub.replay_after(after).await;
        sub
    }

    /// A receiver of the live stream; `None` once the session ended.
    fn live_receiver(&self) -> Option<broadcast::Receiver<Arc<Event>>> {
        self.shared
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(broadcast::Sender::subscribe)
    }

    fn follower(&self, live: broadcast::Receiver<Arc<Event>>) -> Subscription {
        Subscription::new(
            live,
            self.shared.store.clone(),
            self.shared.session_id.clone(),
            self.shared.flusher.clone(),
        )
    }

    /// Starts a turn with `text`. Refused while a turn runs or after the
    /// session ended.
    pub fn start_turn(&self, text: String) -> Result<TurnHandle, RuntimeError> {
        if text.trim().is_empty() {
            return Err(RuntimeError::Invalid(
                "the input is empty; send the text of the request".to_owned(),
            ));
        }
        if self.is_ended() {
            return Err(RuntimeError::Ended(self.shared.session_id.clone()));
        }
        let cancel = {
            let mut turn = self.lock_turn();
            if turn.is_some() {
                return Err(RuntimeError::TurnRunning(self.shared.session_id.clone()));
            }
            let cancel = self.shared.cancel.child_token();
            *turn = Some(cancel.clone());
            cancel
        };
        let (done, rx) = oneshot::channel();
        let sent = self.commands.send(Command::Turn { text, cancel, done });
        if sent.is_err() {
            *self.lock_turn() = None;
            return Err(RuntimeError::Ended(self.shared.session_id.clone()));
        }
        Ok(TurnHandle(rx))
    }

    /// Runs a turn with `text` to its end.
    pub async fn run_turn(&self, text: String) -> Result<TurnResult, RuntimeError> {
        let handle = self.start_turn(text)?;
        handle
            .finished()
            .await
            .ok_or_else(|| RuntimeError::Ended(self.shared.session_id.clone()))
    }

    /// Stops the running turn; false when none runs.
    pub fn interrupt(&self) -> bool {
        match self.lock_turn().as_ref() {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Hands `text` to the model at the running turn's next tool boundary.
    /// Refused when no turn runs (send it with [`Session::start_turn`]).
    /// Text the turn ended before taking comes back from
    /// [`Session::take_unsent_steering`].
    pub fn steer(&self, text: String) -> Result<(), RuntimeError> {
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

    /// Steering text the model has not seen (the turn ended before a tool
    /// boundary), oldest first; taking it clears it.
    pub fn take_unsent_steering(&self) -> Vec<String> {
        self.shared.steer.take()
    }

    /// Stops everything the session runs: the turn and every subagent,
    /// background ones included (a signal to a one-shot run).
    pub fn stop_all(&self) {
        self.shared.cancel.cancel();
    }

    /// Compacts the conversation now (waits for a running turn to end).
    pub async fn compact(&self) -> Result<CompressionReport, RuntimeError> {
        let (done, rx) = oneshot::channel();
        self.commands
            .send(Command::Compact { done })
            .map_err(|_| RuntimeError::Ended(self.shared.session_id.clone()))?;
        rx.await
            .map_err(|_| RuntimeError::Ended(self.shared.session_id.clone()))?
            .map_err(RuntimeError::Invalid)
    }

    /// Rewinds the session to before its user turn `turn`: the files of
    /// the working tree to the turn's snapshot, the conversation to the
    /// messages before it, or both (see [`crate::checkpoints`]). Refused
    /// while a turn runs; the agent continues from the rewound history.
    pub async fn rewind(
        &self,
        turn: u32,
        scope: herald_protocol::RewindScope,
    ) -> Result<crate::checkpoints::RewindOutcome, RuntimeError> {
        if self.is_busy() {
            return Err(RuntimeError::TurnRunning(self.shared.session_id.clone()));
        }
        let (done, rx) = oneshot::channel();
        self.commands
            .send(Command::Rewind { turn, scope, done })
            .map_err(|_| RuntimeError::Ended(self.shared.session_id.clone()))?;
        rx.await
            .map_err(|_| RuntimeError::Ended(self.shared.session_id.clone()))?
            .map_err(RuntimeError::Invalid)
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

    /// Cancels the running subagent `id`.
    pub fn cancel_agent(&self, id: &str) -> Result<(), RuntimeError> {
        if self.shared.delegation.cancel_agent(id) {
            Ok(())
        } else {
            Err(RuntimeError::UnknownRequest(format!(
                "no running subagent '{id}' in session {}",
                self.shared.session_id
            )))
        }
    }

    /// Answers the open question `request_id`.
    pub fn answer_clarify(&self, request_id: &str, answer: &str) -> Result<(), RuntimeError> {
        self.shared
            .questions
            .answer(request_id, answer)
            .map_err(RuntimeError::UnknownRequest)
    }

    /// The questions waiting for an answer.
    pub fn open_questions(&self) -> Vec<String> {
        self.shared.questions.open_ids()
    }

    /// Answers the approval request `request_id`.
    pub fn answer_approval(
        &self,
        request_id: &str,
        answer: crate::ApprovalAnswer,
    ) -> Result<(), RuntimeError> {
        self.shared
            .permissions
            .approvals
            .answer(request_id, answer)
            .map_err(RuntimeError::UnknownRequest)
    }

    /// The approval requests waiting for an answer, oldest first.
    pub fn pending_approvals(&self) -> Vec<crate::PendingApproval> {
        self.shared.permissions.approvals.pending()
    }

    /// Answers the elicitation `request_id`. An accepted answer whose
    /// content does not fit the request's schema is refused
    /// ([`RuntimeError::Invalid`]) and the request stays open.
    pub fn answer_elicitation(
        &self,
        request_id: &str,
        answer: crate::ElicitAnswer,
    ) -> Result<(), RuntimeError> {
        let elicitations = &self.shared.permissions.elicitations;
        if !elicitations
            .pending()
            .iter()
            .any(|p| p.request_id == request_id)
        {
            return elicitations
                .answer(request_id, answer)
                .map_err(RuntimeError::UnknownRequest);
        }
        elicitations
            .answer(request_id, answer)
            .map_err(RuntimeError::Invalid)
    }

    /// The elicitations waiting for an answer, oldest first.
    pub fn pending_elicitations(&self) -> Vec<crate::PendingElicitation> {
        self.shared.permissions.elicitations.pending()
    }

    /// The permission mode the session applies.
    pub fn permission_mode(&self) -> herald_permissions::Mode {
        self.shared.permissions.mode()
    }

    /// Ends the session (see [`Op::Shutdown`]); returns how many background
    /// agents were suspended. Waits for a running turn to be interrupted.
    /// A session with enough user turns first runs the memory flush (at
    /// most `[memory] flush_timeout_seconds`; [`Session::interrupt`] or
    /// [`Session::stop_all`] end it at once).
    pub async fn shutdown(&self) -> usize {
        self.end(true).await
    }

    /// [`Session::shutdown`] without the memory flush: for leaving on a
    /// signal, when nothing should hold the exit up.
    pub async fn shutdown_now(&self) -> usize {
        self.end(false).await
    }

    async fn end(&self, flush: bool) -> usize {
        self.interrupt();
        let (done, rx) = oneshot::channel();
        if self
            .commands
            .send(Command::Shutdown { done, flush })
            .is_err()
        {
            return 0;
        }
        rx.await.unwrap_or(0)
    }

    /// Applies one operation and returns the id it was given. `UserTurn`
    /// starts the turn without waiting for it (follow the events, or use
    /// [`Session::start_turn`]); `Compact`, `Rewind` and `Shutdown` return
    /// once done.
    pub async fn submit(&self, op: Op) -> Result<SubmissionId, RuntimeError> {
        let id = SubmissionId(herald_store::new_id("sub"));
        match op {
            Op::UserTurn { text } => self.start_turn(text).map(drop),
            Op::Interrupt {} => {
                self.interrupt();
                Ok(())
            }
            Op::Compact {} => self.compact().await.map(drop),
            Op::Steer { text } => self.steer(text),
            Op::CancelAgent { agent_id } => self.cancel_agent(&agent_id),
            Op::Rewind { turn, scope } => self.rewind(turn, scope).await.map(drop),
            Op::ClarifyAnswer { request_id, answer } => self.answer_clarify(&request_id, &answer),
            Op::ApprovalDecision {
                request_id,
                decision,
                message,
            } => self.answer_approval(
                &request_id,
                crate::ApprovalAnswer::from_decision(decision, message),
            ),
            Op::ElicitationAnswer {
                request_id,
                action,
                content,
            } => self.answer_elicitation(
                &request_id,
                crate::ElicitAnswer {
                    action: action.into(),
                    content,
                },
            ),
            Op::Shutdown {} => {
                self.shutdown().await;
                Ok(())
            }
        }?;
        Ok(id)
    }

    fn lock_turn(&self) -> std::sync::MutexGuard<'_, Option<CancellationToken>> {
        self.shared
            .turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
