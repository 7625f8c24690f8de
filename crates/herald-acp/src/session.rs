//! One herald session as an ACP session: the runtime's [`Session`], the
//! task that turns its events into `session/update`s (its *pump*), the
//! turns waiting for their end, and the approvals asked of the client.
//!
//! The pump runs for as long as the session is open, not only during a
//! prompt: a background subagent that finishes after its turn ended is
//! reported at once, as a `session/update` outside any prompt (ACP lets an
//! agent send updates at any time); the next prompt is not waited for.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    CurrentModeUpdate, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, RunningStateUpdate, SessionMode,
    SessionModeState, SessionNotification, SessionUpdate, StateUpdate,
};
use herald_core::Settings;
use herald_core::runtime::{Op, Session, Subscription, TurnResult};
use herald_protocol::{ApprovalDecision, ElicitationAction, EventKind, SubmissionId};
use tokio::sync::oneshot;

use crate::client_io::ClientIo;
use crate::rpc::{Outbox, Peer};
use crate::translate::{Action, ApprovalAsk, Translator, state_update};

/// The permission modes a client can switch between (`session/set_mode`),
/// as (id, name, description); the ids are herald's `--mode` words.
pub(crate) const MODES: [(&str, &str, &str); 3] = [
    (
        "read-only",
        "Read only",
        "Reads and read-only commands run; anything else asks",
    ),
    (
        "workspace-write",
        "Workspace write",
        "Edits inside the working directory and allowed commands run (sandboxed); the rest asks",
    ),
    (
        "full-access",
        "Full access",
        "Everything runs without asking, except the catastrophic floor",
    ),
];

/// The mode state for a session in mode `current`.
pub(crate) fn mode_state(current: &str) -> SessionModeState {
    SessionModeState::new(
        current.to_owned(),
        MODES
            .iter()
            .map(|(id, name, description)| {
                SessionMode::new(*id, *name).description(description.to_string())
            })
            .collect(),
    )
}

/// How a turn ended, for the `session/prompt` waiting on it.
pub(crate) type TurnOutcome = Result<TurnResult, String>;

#[derive(Default)]
struct Turns {
    waiting: HashMap<SubmissionId, oneshot::Sender<TurnOutcome>>,
    /// Ends that came before their waiter registered.
    ended: HashMap<SubmissionId, TurnOutcome>,
}

/// One open session (see the module docs).
pub(crate) struct AcpSession {
    pub id: String,
    pub cwd: PathBuf,
    /// What it was opened with (the client's MCP servers included); a mode
    /// change reopens it with these and the new mode.
    pub settings: Settings,
    /// The client's file system and terminals its tools use (kept for a
    /// reopen on a mode change).
    pub io: ClientIo,
    live: tokio::sync::Mutex<Session>,
    mode: Mutex<String>,
    turns: Mutex<Turns>,
    translator: Mutex<Translator>,
    outbox: Outbox,
    peer: Arc<Peer>,
    /// The last stored event of the tree read by [`AcpSession::catch_up`].
    stored_seen: tokio::sync::Mutex<u64>,
}

/// How often the store is read for the events of running subagents.
const CHILD_POLL: Duration = Duration::from_millis(150);

/// Longest a catch-up waits for the stored stream to reach its mark.
const CATCH_UP_WAIT: Duration = Duration::from_secs(3);

impl std::fmt::Debug for AcpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpSession").field("id", &self.id).finish()
    }
}

impl AcpSession {
    /// Wraps the opened `session` and starts its pump on `events`.
    pub(crate) fn start(
        session: Session,
        events: Subscription,
        settings: Settings,
        io: ClientIo,
        translator: Translator,
        outbox: Outbox,
        peer: Arc<Peer>,
    ) -> Arc<Self> {
        let opened_after = session.opened_after();
        let this = Arc::new(Self {
            stored_seen: tokio::sync::Mutex::new(opened_after),
            id: session.id().to_owned(),
            cwd: settings.cwd.clone(),
            mode: Mutex::new(settings.permissions.mode.clone()),
            settings,
            io,
            live: tokio::sync::Mutex::new(session),
            turns: Mutex::new(Turns::default()),
            translator: Mutex::new(translator),
            outbox,
            peer,
        });
        Arc::clone(&this).pump(events);
        Self::follow_children(Arc::downgrade(&this));
        this
    }

    /// While subagents run, reads their own events (text, tool calls) from
    /// the tree's stored stream: the runtime keeps a child's conversation
    /// out of the live stream, which carries only its start, end,
    /// approvals and a line per tool.
    fn follow_children(this: std::sync::Weak<Self>) {
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(CHILD_POLL).await;
                let Some(acp) = this.upgrade() else { return };
                if acp.live.lock().await.is_ended() {
                    return;
                }
                if lock(&acp.translator).children_running() {
                    acp.catch_up().await;
                }
            }
        });
    }

    /// Hands on the subagents' own events stored (or queued for the store)
    /// since the last catch-up, up to the tree's newest event.
    async fn catch_up(&self) {
        let session = self.session().await;
        let until = session.last_seq();
        let mut seen = self.stored_seen.lock().await;
        if *seen >= until {
            return;
        }
        let mut stored = session.events(Some(*seen));
        let deadline = tokio::time::Instant::now() + CATCH_UP_WAIT;
        while *seen < until {
            let Ok(Some(event)) = tokio::time::timeout_at(deadline, stored.next()).await else {
                break;
            };
            let Some(seq) = event.seq.filter(|&seq| seq > *seen) else {
                continue;
            };
            *seen = seq;
            let own = event.session_id != self.id
                && matches!(
                    event.kind,
                    EventKind::AssistantMessage { .. }
                        | EventKind::ToolStarted { .. }
                        | EventKind::ToolCompleted { .. }
                );
            if own {
                let actions = lock(&self.translator).translate(&event);
                for action in actions {
                    if let Action::Update { session_id, update } = action {
                        self.send(&session_id, *update);
                    }
                }
            }
        }
    }

    /// The runtime session (the current one, after a mode change).
    pub(crate) async fn session(&self) -> Session {
        self.live.lock().await.clone()
    }

    /// The permission mode it runs in.
    pub(crate) fn mode(&self) -> String {
        lock(&self.mode).clone()
    }

    /// Sends one update for ACP session `session_id`.
    pub(crate) fn send(&self, session_id: &str, update: SessionUpdate) {
        self.outbox.notify(
            "session/update",
            SessionNotification::new(session_id.to_owned(), update),
        );
    }

    /// Whether `session_id` is one of its subagents' sessions.
    pub(crate) fn has_child_session(&self, session_id: &str) -> bool {
        lock(&self.translator).is_child_session(session_id)
    }

    /// The subagent whose session is `session_id`.
    pub(crate) fn agent_of_session(&self, session_id: &str) -> Option<String> {
        lock(&self.translator).agent_of_session(session_id)
    }

    /// Starts turn `text` with `images` and waits for its end.
    pub(crate) async fn run_turn(
        &self,
        text: String,
        images: Vec<herald_protocol::ImageData>,
    ) -> Result<TurnOutcome, String> {
        let session = self.session().await;
        let handle = session
            .start_turn_with_images(text, images)
            .map_err(|e| e.to_string())?;
        let id = handle.id().clone();
        drop(handle);
        let (done, end) = oneshot::channel();
        {
            let mut turns = lock(&self.turns);
            match turns.ended.remove(&id) {
                Some(outcome) => return Ok(outcome),
                None => {
                    turns.waiting.insert(id, done);
                }
            }
        }
        Ok(end
            .await
            .unwrap_or_else(|_| Err(format!("session {} ended during the turn", self.id))))
    }

    /// Switches to permission mode `mode`: the session is ended and opened
    /// again (same id, same conversation) with the new mode. Refused while
    /// a turn runs.
    pub(crate) async fn set_mode(
        self: &Arc<Self>,
        mode: &str,
        reopen: impl AsyncFnOnce(Settings) -> Result<(Session, Subscription), String>,
    ) -> Result<(), String> {
        let mut live = self.live.lock().await;
        if live.is_busy() {
            return Err(format!(
                "a turn is running in session {}; change the mode when it ends (or cancel it)",
                self.id
            ));
        }
        if self.mode() == mode {
            return Ok(());
        }
        let mut settings = self.settings.clone();
        settings.permissions.mode = mode.to_owned();
        live.shutdown_now().await;
        let (session, events) = reopen(settings).await?;
        *live = session;
        *lock(&self.mode) = mode.to_owned();
        drop(live);
        Arc::clone(self).pump(events);
        self.send(
            &self.id,
            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.to_owned())),
        );
        Ok(())
    }

    /// Ends the session (the client went away).
    pub(crate) async fn close(&self) {
        self.live.lock().await.shutdown_now().await;
    }

    /// Follows `events` until the session's stream closes.
    fn pump(self: Arc<Self>, mut events: Subscription) {
        tokio::spawn(async move {
            while let Some(event) = events.next().await {
                // A subagent's end, its question or the turn's end: the
                // subagents' own events before it (so an approval names a
                // call the client was shown, and nothing of a child comes
                // after its `idle`).
                let child_question = matches!(event.kind, EventKind::ApprovalRequested { .. })
                    && event.agent_id != crate::translate::ROOT;
                if (child_question
                    || matches!(
                        event.kind,
                        EventKind::SubagentCompleted { .. } | EventKind::RunCompleted { .. }
                    ))
                    && lock(&self.translator).has_children()
                {
                    self.catch_up().await;
                }
                if let EventKind::ElicitationRequested { request_id, .. } = &event.kind {
                    // ACP has no form for an MCP server's question: declined.
                    let session = self.session().await;
                    let _ = session.submit(Op::ElicitationAnswer {
                        request_id: request_id.clone(),
                        action: ElicitationAction::Decline,
                        content: None,
                    });
                }
                let actions = lock(&self.translator).translate(&event);
                for action in actions {
                    match action {
                        Action::Update { session_id, update } => self.send(&session_id, *update),
                        Action::Ask(ask) => {
                            tokio::spawn(Arc::clone(&self).ask(*ask));
                        }
                        Action::TurnEnded { submission, result } => {
                            self.turn_ended(submission, Ok(*result));
                        }
                    }
                }
            }
            // The stream closed: nothing waits for a turn of this run any more.
            let mut turns = lock(&self.turns);
            turns.waiting.clear();
        });
    }

    fn turn_ended(&self, id: SubmissionId, outcome: TurnOutcome) {
        let mut turns = lock(&self.turns);
        match turns.waiting.remove(&id) {
            Some(waiter) => {
                let _ = waiter.send(outcome);
            }
            None => {
                turns.ended.insert(id, outcome);
            }
        }
    }

    /// Asks the client about one approval and hands its answer to the
    /// session; while a subagent waits its state is `requires_action`.
    async fn ask(self: Arc<Self>, ask: ApprovalAsk) {
        let mut options = vec![PermissionOption::new(
            "once",
            "Allow once",
            PermissionOptionKind::AllowOnce,
        )];
        if ask.has_rule {
            let rule = ask.allow_rule.clone().unwrap_or_default();
            options.push(PermissionOption::new(
                "session",
                format!("Allow for this session ({rule})"),
                PermissionOptionKind::AllowAlways,
            ));
            options.push(PermissionOption::new(
                "always",
                format!("Always allow ({rule}, saved)"),
                PermissionOptionKind::AllowAlways,
            ));
        }
        options.push(PermissionOption::new(
            "deny",
            "Deny",
            PermissionOptionKind::RejectOnce,
        ));
        let request =
            RequestPermissionRequest::new(ask.session_id.clone(), ask.tool_call.clone(), options);
        let answer = self
            .peer
            .request::<RequestPermissionResponse>("session/request_permission", request)
            .await;
        let (decision, message) = match answer {
            Ok(response) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                    "once" => (ApprovalDecision::Once, None),
                    "session" => (ApprovalDecision::Session, None),
                    "always" => (ApprovalDecision::Always, None),
                    _ => (ApprovalDecision::Deny, None),
                },
                _ => (
                    ApprovalDecision::Deny,
                    Some("the user cancelled the request".to_owned()),
                ),
            },
            Err(err) => {
                tracing::warn!(%err, "no answer to a permission request; denied");
                (ApprovalDecision::Deny, Some(err.to_string()))
            }
        };
        if let Some(child) = &ask.child {
            self.send(
                &child.parent_session_id,
                state_update(
                    &child.session_id,
                    StateUpdate::Running(RunningStateUpdate::new()),
                ),
            );
        }
        let session = self.session().await;
        if let Err(err) = session.submit(Op::ApprovalDecision {
            request_id: ask.request_id.clone(),
            decision,
            message,
        }) {
            // Resolved already (the turn was cancelled meanwhile).
            tracing::debug!(%err, request_id = ask.request_id, "approval answer not used");
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
