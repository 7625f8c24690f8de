//! What every handler shares: the settings and store, the sessions this
//! process has open (by id), and the limit on turns running at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use herald_core::runtime::{
    ClarifyPolicy, OpenMode, Session, SessionOptions, TurnResult, open_session,
};
use herald_core::{ApprovalMode, LeaseWait, Settings, StoreHandle};
use herald_store::SessionSource;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinHandle;

use crate::error::ApiError;

/// The state behind every route.
pub(crate) struct AppState {
    pub(crate) settings: Settings,
    pub(crate) store: StoreHandle,
    /// One model client for every session (built once: each build sets up
    /// a connection pool and reads the CA certificates). `None` when the
    /// settings cannot make one; each open then reports why.
    client: Option<Arc<herald_core::LlmClient>>,
    /// The sessions open in this process. A session stays open until it is
    /// deleted or the server shuts down, or, beyond `max_open` sessions,
    /// until it is the least recently used idle one (it reopens on its next
    /// use).
    sessions: Mutex<HashMap<String, OpenSession>>,
    max_open: usize,
    /// Held while a stored session is being opened, so two requests naming
    /// it do not both try to take its lease.
    opening: tokio::sync::Mutex<()>,
    /// Sessions being closed, until their lease is released: a request
    /// naming one waits for that before reopening it (its lease is held by
    /// this very process until then).
    closing: Arc<Mutex<HashMap<String, watch::Receiver<bool>>>>,
    turns: Arc<Semaphore>,
    pub(crate) max_turns: usize,
    /// `--yolo`: asks are allowed without a request.
    yolo: bool,
    /// The MCP servers, started once for the process and shared by every
    /// session (each session's tool list is fixed when it opens).
    mcp: Arc<herald_mcp::McpHub>,
    /// The doctor's checks, when the binary provides them.
    pub(crate) doctor: Option<Arc<dyn crate::Doctor>>,
}

/// An open session and when a request last named it.
struct OpenSession {
    session: Session,
    used: Instant,
}

impl OpenSession {
    /// Nothing runs and nothing waits in it: closing it loses nothing.
    fn is_idle(&self) -> bool {
        !self.session.is_busy()
            && self.session.open_questions().is_empty()
            && self.session.pending_approvals().is_empty()
            && self.session.pending_elicitations().is_empty()
            && self.session.agents().iter().all(|a| a.status.is_finished())
    }
}

/// One of the `max_concurrent_turns` slots, held by a turn while it runs.
pub(crate) struct TurnSlot {
    _permit: OwnedSemaphorePermit,
}

/// A turn started through the server: resolves to its result once the turn
/// ends. The turn runs on its session's task and holds its slot of
/// `max_concurrent_turns` until then, whether or not anyone still waits
/// for it (a client that disconnects does not stop it).
pub(crate) struct StartedTurn {
    /// The id of the turn's `user_turn` operation (its events carry it).
    pub(crate) id: herald_core::runtime::SubmissionId,
    pub(crate) done: JoinHandle<Option<TurnResult>>,
}

impl StartedTurn {
    /// Waits for the turn's end.
    pub(crate) async fn finished(self, session_id: &str) -> Result<TurnResult, ApiError> {
        match self.done.await {
            Ok(Some(result)) => Ok(result),
            Ok(None) => Err(ApiError::conflict(
                "session_ended",
                format!("session {session_id} ended before its turn did"),
            )),
            Err(err) => Err(ApiError::internal(format!("the turn's task failed: {err}"))),
        }
    }
}

impl AppState {
    pub(crate) fn new(
        settings: Settings,
        store: StoreHandle,
        max_turns: usize,
        max_open: usize,
        yolo: bool,
    ) -> Self {
        let max_turns = max_turns.max(1);
        let client = settings.build_client().ok().map(Arc::new);
        let mcp = herald_core::start_mcp_hub(&settings);
        Self {
            mcp,
            settings,
            store,
            client,
            sessions: Mutex::new(HashMap::new()),
            max_open: max_open.max(1),
            yolo,
            opening: tokio::sync::Mutex::new(()),
            closing: Arc::new(Mutex::new(HashMap::new())),
            turns: Arc::new(Semaphore::new(max_turns)),
            max_turns,
            doctor: None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, OpenSession>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The open session `id`, if this process has it open.
    pub(crate) fn open_one(&self, id: &str) -> Option<Session> {
        let mut sessions = self.lock();
        match sessions.get_mut(id) {
            Some(open) if open.session.is_ended() => {
                sessions.remove(id);
                None
            }
            Some(open) => {
                open.used = Instant::now();
                Some(open.session.clone())
            }
            None => None,
        }
    }

    /// Whether session `id` is open here (without counting as a use).
    pub(crate) fn is_open(&self, id: &str) -> Option<Session> {
        self.lock().get(id).map(|open| open.session.clone())
    }

    /// Keeps `session` open, closing the least recently used idle sessions
    /// beyond `max_open` (in the background).
    fn keep(&self, session: &Session) {
        let evicted: Vec<Session> = {
            let mut sessions = self.lock();
            sessions.insert(
                session.id().to_owned(),
                OpenSession {
                    session: session.clone(),
                    used: Instant::now(),
                },
            );
            let excess = sessions.len().saturating_sub(self.max_open);
            let mut idle: Vec<(Instant, String)> = sessions
                .iter()
                .filter(|(id, open)| *id != session.id() && open.is_idle())
                .map(|(id, open)| (open.used, id.clone()))
                .collect();
            idle.sort();
            idle.into_iter()
                .take(excess)
                .filter_map(|(_, id)| sessions.remove(&id).map(|open| open.session))
                .collect()
        };
        for session in evicted {
            tracing::info!(
                session_id = session.id(),
                "closing the least recently used idle session"
            );
            tokio::spawn(self.closing(session));
        }
    }

    /// Waits until session `id`, if it is being closed, has released its
    /// lease.
    pub(crate) async fn wait_closed(&self, id: &str) {
        let closing = lock_closing(&self.closing).get(id).cloned();
        if let Some(mut closing) = closing {
            let _ = closing.wait_for(|done| *done).await;
        }
    }

    /// Marks `session` as closing now and returns the future that ends it
    /// and then clears the mark.
    fn closing(&self, session: Session) -> impl Future<Output = ()> + Send + 'static {
        let (done, waiting) = watch::channel(false);
        let id = session.id().to_owned();
        lock_closing(&self.closing).insert(id.clone(), waiting);
        let closing = Arc::clone(&self.closing);
        async move {
            session.shutdown().await;
            let _ = done.send(true);
            lock_closing(&closing).remove(&id);
        }
    }

    /// Opens a session (new, fork, resume) and keeps it open.
    pub(crate) async fn open(
        &self,
        mode: OpenMode,
        clarify: ClarifyPolicy,
    ) -> Result<Session, ApiError> {
        self.open_with(mode, clarify, self.settings.clone()).await
    }

    /// [`AppState::open`] with other settings than the server's (an MCP
    /// request's own toolsets).
    pub(crate) async fn open_with(
        &self,
        mode: OpenMode,
        clarify: ClarifyPolicy,
        settings: Settings,
    ) -> Result<Session, ApiError> {
        let mut options = SessionOptions::new(settings, self.store.clone());
        options.open = mode;
        options.lease_wait = LeaseWait::No;
        options.source = SessionSource::Api;
        options.stream_deltas = true;
        options.clarify = clarify;
        options.approvals = ApprovalMode::for_front_end(clarify == ClarifyPolicy::Ask, self.yolo);
        options.one_shot = false;
        options.client = self.client.clone();
        options.mcp = Some(Arc::clone(&self.mcp));
        let session = open_session(options).await?;
        self.keep(&session);
        Ok(session)
    }

    /// The session `id`: the open one, else the stored one opened now
    /// (refused with 409 while another process holds it, 404 when no such
    /// session is stored).
    pub(crate) async fn session(
        &self,
        id: &str,
        clarify: ClarifyPolicy,
    ) -> Result<Session, ApiError> {
        if let Some(session) = self.open_one(id) {
            return Ok(session);
        }
        let _opening = self.opening.lock().await;
        if let Some(session) = self.open_one(id) {
            return Ok(session);
        }
        self.wait_closed(id).await;
        self.open(OpenMode::Resume(id.to_owned()), clarify).await
    }

    /// Takes one of the `max_concurrent_turns` slots, or refuses with 429
    /// when every slot is taken. Taken before a session is opened, so a
    /// refused request opens nothing.
    pub(crate) fn reserve_turn(&self) -> Result<TurnSlot, ApiError> {
        Arc::clone(&self.turns)
            .try_acquire_owned()
            .map(|permit| TurnSlot { _permit: permit })
            .map_err(|_| ApiError::too_many_turns(self.max_turns))
    }

    /// Starts a turn on `session` in `slot`; the slot is freed when the
    /// turn ends.
    pub(crate) fn start_turn(
        &self,
        session: &Session,
        text: String,
        images: Vec<herald_protocol::ImageData>,
        slot: TurnSlot,
    ) -> Result<StartedTurn, ApiError> {
        let handle = session.start_turn_with_images(text, images)?;
        let id = handle.id().clone();
        let done = tokio::spawn(async move {
            let result = handle.finished().await;
            drop(slot);
            result
        });
        Ok(StartedTurn { id, done })
    }

    /// Ends the open session `id` (if open here) and forgets it.
    pub(crate) async fn close(&self, id: &str) -> bool {
        let open = self.lock().remove(id);
        match open {
            Some(OpenSession { session, .. }) => {
                self.closing(session).await;
                true
            }
            None => false,
        }
    }

    /// Ends every open session (server shutdown): running turns are
    /// interrupted, background agents suspended, leases released. No
    /// memory flush: a stopping server should not wait on the model.
    pub(crate) async fn close_all(&self) {
        let sessions: Vec<Session> = self.lock().drain().map(|(_, o)| o.session).collect();
        let ends = sessions.iter().map(|s| s.shutdown_now());
        futures_util::future::join_all(ends).await;
        self.mcp.shutdown().await;
    }

    /// The ids of the sessions open here.
    pub(crate) fn open_ids(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// The MCP servers of the process.
    pub(crate) fn mcp(&self) -> &herald_mcp::McpHub {
        &self.mcp
    }

    /// How many sessions are open.
    pub(crate) fn open_count(&self) -> usize {
        self.lock().len()
    }
}

fn lock_closing(
    closing: &Mutex<HashMap<String, watch::Receiver<bool>>>,
) -> std::sync::MutexGuard<'_, HashMap<String, watch::Receiver<bool>>> {
    closing.lock().unwrap_or_else(PoisonError::into_inner)
}
