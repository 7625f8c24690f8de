//! Where an agent's events go: the front end's callback and, when the sink
//! is recorded, the session's `events` table (every event is stored
//! under a monotonic id so front ends can replay a session).

use std::sync::{Arc, Mutex, PoisonError};

use herald_protocol::{Event, EventKind, SubmissionId, ToolStatus};
use herald_store::NewEvent;

use crate::StoreHandle;

/// Where an agent's events go. Front ends pass a callback that renders or
/// forwards them; the agent never prints anything itself.
///
/// Sinks made with [`EventSink::for_agent`] share their origin's output:
/// the same callback, the same stored session, and the same end — once
/// [`EventSink::finish`] sent the final event, nothing more goes out.
#[derive(Clone)]
pub struct EventSink {
    session_id: Arc<str>,
    agent_id: Arc<str>,
    out: Arc<Output>,
}

/// The destination shared by a sink and the sinks made from it.
struct Output {
    emit: Arc<dyn Fn(Event) + Send + Sync>,
    log: Option<EventLog>,
    /// True once the final event went out. Held while an event is stored and
    /// passed on, so stored ids follow the output order exactly.
    closed: Mutex<bool>,
    /// The operation being worked on, stamped on every event.
    stamp: SubmissionStamp,
}

/// The operation a session tree is working on (see
/// [`Event::submission_id`]): its runtime sets it while a queued operation
/// runs, and every sink of the tree stamps it on what it emits.
#[derive(Clone, Default)]
pub struct SubmissionStamp(Arc<Mutex<Option<SubmissionId>>>);

impl SubmissionStamp {
    /// Stamps `id` on the events emitted from now on (`None`: no stamp).
    pub fn set(&self, id: Option<SubmissionId>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = id;
    }

    fn current(&self) -> Option<SubmissionId> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("session_id", &self.session_id)
            .field("agent_id", &self.agent_id)
            .field("recorded", &self.is_recorded())
            .finish()
    }
}

impl EventSink {
    /// A sink stamping events with `session_id`/`agent_id` and passing them to `emit`.
    pub fn new(
        session_id: &str,
        agent_id: &str,
        emit: impl Fn(Event) + Send + Sync + 'static,
    ) -> Self {
        Self {
            session_id: session_id.into(),
            agent_id: agent_id.into(),
            out: Arc::new(Output {
                emit: Arc::new(emit),
                log: None,
                closed: Mutex::new(false),
                stamp: SubmissionStamp::default(),
            }),
        }
    }

    /// A sink that drops everything.
    pub fn discard() -> Self {
        Self::new("", "root", |_| {})
    }

    /// This sink, also storing every event it and the sinks made from it
    /// with [`EventSink::for_agent`] emit in the `events` table of
    /// `session_id`, in emit order, numbered from `last_seq + 1` (the
    /// tree's last stored number, so a resumed session's stream goes on
    /// where it stopped). `assistant.delta` events are neither stored nor
    /// numbered (there are many; `assistant.message` carries the full text).
    ///
    /// Writes are queued on the store thread and batched, never awaited, so
    /// emitting never waits on SQLite; a failed write is logged and loses
    /// events, never the conversation.
    pub fn recorded(self, store: &StoreHandle, session_id: &str, last_seq: u64) -> Self {
        Self {
            session_id: self.session_id,
            agent_id: self.agent_id,
            out: Arc::new(Output {
                emit: Arc::clone(&self.out.emit),
                log: Some(EventLog::new(store.clone(), session_id, last_seq)),
                closed: Mutex::new(false),
                stamp: self.out.stamp.clone(),
            }),
        }
    }

    /// This sink storing its events with `session_id` in the same write
    /// queue and numbering as `other` (a subagent's own events, batched and
    /// numbered with its tree's), or with a new queue on `store` when
    /// `other` is not recorded.
    pub fn recorded_like(self, other: &EventSink, store: &StoreHandle, session_id: &str) -> Self {
        let log = match &other.out.log {
            Some(log) => log.for_session(session_id),
            None => EventLog::new(store.clone(), session_id, 0),
        };
        Self {
            session_id: self.session_id,
            agent_id: self.agent_id,
            out: Arc::new(Output {
                emit: Arc::clone(&self.out.emit),
                log: Some(log),
                closed: Mutex::new(false),
                // One tree, one operation at a time.
                stamp: other.out.stamp.clone(),
            }),
        }
    }

    /// Writes the events queued so far now instead of after the batching
    /// delay; a store call made afterwards finds them stored (a replay that
    /// must not miss what was just emitted).
    pub fn flush(&self) {
        if let Some(log) = &self.out.log {
            log.flush();
        }
    }

    /// A handle that can [`EventFlusher::flush`] this sink's write queue
    /// without keeping its output open (a follower of the stream holds one).
    pub fn flusher(&self) -> EventFlusher {
        EventFlusher(
            self.out
                .log
                .as_ref()
                .map(|log| log.for_session(&log.session_id)),
        )
    }

    /// What sets the operation this sink's events are stamped with.
    pub fn submission_stamp(&self) -> SubmissionStamp {
        self.out.stamp.clone()
    }

    /// Whether events are stored (see [`EventSink::recorded`]).
    pub fn is_recorded(&self) -> bool {
        self.out.log.is_some()
    }

    /// A sink with the same destination stamping other ids (a subagent's
    /// progress events reach the same output as its root's).
    pub fn for_agent(&self, session_id: &str, agent_id: &str) -> Self {
        Self {
            session_id: session_id.into(),
            agent_id: agent_id.into(),
            out: Arc::clone(&self.out),
        }
    }

    /// The agent events are stamped with.
    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// The session events are stamped with.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Emits one event (dropped once the output is finished).
    pub fn emit(&self, kind: EventKind) {
        self.send(kind, false);
    }

    /// Emits `kind` as the last event of this output: afterwards every sink
    /// sharing it drops what it is given (a background agent still winding
    /// down cannot print or store anything after `run.completed`).
    pub fn finish(&self, kind: EventKind) {
        self.send(kind, true);
    }

    fn send(&self, kind: EventKind, last: bool) {
        let mut event = Event::new(&self.session_id, &self.agent_id, kind);
        event.submission_id = self.out.stamp.current();
        log_notable(&event);
        let mut closed = self
            .out
            .closed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if *closed {
            return;
        }
        *closed = last;
        match &self.out.log {
            Some(log)
                if !matches!(
                    event.kind,
                    EventKind::AssistantDelta { .. }
                        | EventKind::AssistantReasoning { .. }
                        | EventKind::ToolProgress { .. }
                ) =>
            {
                log.push_and_emit(event, last, &*self.out.emit);
            }
            _ => (self.out.emit)(event),
        }
    }
}

/// Flushes a recorded sink's write queue (see [`EventSink::flusher`]).
pub struct EventFlusher(Option<EventLog>);

impl Clone for EventFlusher {
    fn clone(&self) -> Self {
        Self(self.0.as_ref().map(|log| log.for_session(&log.session_id)))
    }
}

impl EventFlusher {
    /// A flusher with nothing to flush (a stream that is only read back).
    pub fn none() -> Self {
        Self(None)
    }

    /// The number given to the tree's latest event (0 when none, or when
    /// the sink is not recorded).
    pub fn last_seq(&self) -> u64 {
        self.0.as_ref().map_or(0, |log| {
            log.queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .last_seq
        })
    }

    /// The events of the tree numbered after `after` that wait in the write
    /// queue (not stored yet), oldest first: a follower reads them here
    /// instead of forcing a write it would wait for.
    pub fn pending_after(&self, after: u64) -> Vec<Event> {
        self.0.as_ref().map_or_else(Vec::new, |log| {
            log.queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .events
                .iter()
                .filter(|(_, event)| event.seq.is_some_and(|seq| seq > after))
                .map(|(_, event)| event.clone())
                .collect()
        })
    }

    /// Queues the write of every event emitted so far; a store call made
    /// afterwards finds them stored.
    pub fn flush(&self) {
        if let Some(log) = &self.0 {
            log.flush();
        }
    }
}

impl Drop for Output {
    /// The last sink is gone: what is still queued is written now (the store
    /// thread runs it before any store call made afterwards).
    fn drop(&mut self) {
        if let Some(log) = &self.log {
            let queued = !log
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .events
                .is_empty();
            if queued {
                log.flush();
            }
        }
    }
}

/// Writes the events that explain failures to the log: retries, errors
/// (provider failures end a turn with a fatal one) and failed tool calls.
fn log_notable(event: &Event) {
    let (session_id, agent_id) = (&event.session_id, &event.agent_id);
    match &event.kind {
        EventKind::Retry {
            attempt,
            delay_ms,
            reason,
        } => tracing::warn!(
            session_id,
            agent_id,
            attempt,
            delay_ms,
            "provider request failed, retrying: {reason}"
        ),
        EventKind::Error {
            message,
            fatal: true,
        } => tracing::error!(session_id, agent_id, "{message}"),
        EventKind::Error { message, .. } => tracing::warn!(session_id, agent_id, "{message}"),
        EventKind::ToolCompleted {
            call_id,
            name,
            status: ToolStatus::Error,
            duration_ms,
            error,
            ..
        } => tracing::warn!(
            session_id,
            agent_id,
            call_id,
            duration_ms,
            "tool {name} failed: {}",
            error.as_deref().unwrap_or("")
        ),
        _ => {}
    }
}

/// How long events may wait in memory before they are written: a turn's
/// events then share one transaction instead of one per burst (each commit
/// costs WAL writes and lock calls on the agent's hot path). A crash loses
/// at most this much of the event log, never the conversation.
const EVENT_FLUSH_DELAY: std::time::Duration = std::time::Duration::from_millis(200);
/// Events queued before they are written without waiting for the delay.
const EVENT_FLUSH_COUNT: usize = 256;

/// The queue of events waiting for the store thread, shared by every
/// recorded output of one session tree (see [`EventSink::recorded_like`]), so
/// a thousand subagents still write their events in one transaction. The
/// first event pushed into an empty queue schedules a write
/// [`EVENT_FLUSH_DELAY`] later (at once for the last event of an output, when
/// the queue is long, or outside a tokio runtime); the write takes everything
/// queued by the time it runs.
struct EventLog {
    store: StoreHandle,
    /// The session this output's events are stored with.
    session_id: Arc<str>,
    /// The root session of the tree (every row names it).
    root: Arc<str>,
    queue: Arc<Mutex<TreeQueue>>,
}

/// The events of a tree waiting to be written, and the last number given.
/// Numbering and queueing happen under its lock, so stored order is number
/// order; agents emitting on different threads at the same instant may
/// pass their events on in the other order.
struct TreeQueue {
    events: Vec<QueuedEvent>,
    last_seq: u64,
}

/// An event waiting to be written, with the session it is stored under.
type QueuedEvent = (Arc<str>, Event);

impl EventLog {
    fn new(store: StoreHandle, session_id: &str, last_seq: u64) -> Self {
        Self {
            store,
            session_id: session_id.into(),
            root: session_id.into(),
            queue: Arc::new(Mutex::new(TreeQueue {
                events: Vec::new(),
                last_seq,
            })),
        }
    }

    /// A handle on the same queue storing with `session_id`.
    fn for_session(&self, session_id: &str) -> Self {
        Self {
            store: self.store.clone(),
            session_id: session_id.into(),
            root: Arc::clone(&self.root),
            queue: Arc::clone(&self.queue),
        }
    }

    /// Numbers `event`, queues it for the store and passes it to `emit`.
    fn push_and_emit(&self, mut event: Event, last: bool, emit: &(dyn Fn(Event) + Send + Sync)) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.last_seq += 1;
        event.seq = Some(queue.last_seq);
        queue
            .events
            .push((Arc::clone(&self.session_id), event.clone()));
        let queued = queue.events.len();
        drop(queue);
        // Outside the lock: a subagent's output passes its events on through
        // its parent's sink, which numbers the progress event it derives.
        emit(event);
        if last || queued >= EVENT_FLUSH_COUNT {
            self.flush();
        } else if queued == 1 {
            // The first event of a batch schedules its write.
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    let log = self.for_session(&self.session_id);
                    runtime.spawn(async move {
                        tokio::time::sleep(EVENT_FLUSH_DELAY).await;
                        log.flush();
                    });
                }
                Err(_) => self.flush(),
            }
        }
    }

    /// Queues a write of everything pending now (in order with later store
    /// jobs, so a caller that then awaits a store call finds them written).
    fn flush(&self) {
        let queue = Arc::clone(&self.queue);
        let root = Arc::clone(&self.root);
        let submitted = self.store.submit(move |store| {
            let events =
                std::mem::take(&mut queue.lock().unwrap_or_else(PoisonError::into_inner).events);
            write_tree_events(store, &root, &events);
        });
        if submitted.is_err() {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            tracing::error!(
                session_id = %self.session_id,
                dropped = queue.events.len(),
                "the store thread stopped; events of this session are not stored"
            );
            queue.events.clear();
        }
    }
}

/// One stored row for `event`, or `None` when it cannot be serialised.
fn event_row(event: &Event) -> Option<NewEvent> {
    let payload = serde_json::to_string(event).ok()?;
    Some(NewEvent {
        agent_id: event.agent_id.to_string(),
        kind: event_type(&payload)?,
        payload,
        seq: event.seq.and_then(|n| i64::try_from(n).ok()),
    })
}

/// Stores the queued events of a session tree in one transaction.
fn write_tree_events(store: &mut herald_store::Store, root: &str, events: &[(Arc<str>, Event)]) {
    if events.is_empty() {
        return;
    }
    let rows: Vec<(&str, NewEvent)> = events
        .iter()
        .filter_map(|(session, event)| Some((&**session, event_row(event)?)))
        .collect();
    if let Err(err) = store.record_events_of_sessions(root, &rows) {
        tracing::warn!(lost = rows.len(), error = %err, "could not store events");
    }
}

/// Queues one event for `session_id` on the store thread (for a sink that
/// is not recorded, see `nested_calls`).
pub(crate) fn store_event(store: &StoreHandle, session_id: &str, event: Event) {
    let session = session_id.to_owned();
    let submitted = store.submit(move |store| write_events(store, &session, &[event]));
    if submitted.is_err() {
        tracing::error!(
            session_id,
            "the store thread stopped; an event was not stored"
        );
    }
}

/// Stores `events` in one transaction (on the store thread).
fn write_events(store: &mut herald_store::Store, session_id: &str, events: &[Event]) {
    if events.is_empty() {
        return;
    }
    let rows: Vec<NewEvent> = events.iter().filter_map(event_row).collect();
    if let Err(err) = store.record_events(session_id, &rows) {
        tracing::warn!(
            session_id,
            lost = rows.len(),
            error = %err,
            "could not store events"
        );
    }
}

/// The `type` of a serialised event.
fn event_type(json: &str) -> Option<String> {
    // The tag is serialised first (`{"type":"tool.completed",...`): read it
    // there rather than parse a payload that can hold kilobytes of output.
    if let Some(rest) = json.strip_prefix("{\"type\":\"")
        && let Some(end) = rest.find(['"', '\\'])
        && rest.as_bytes().get(end) == Some(&b'"')
    {
        return rest.get(..end).map(str::to_owned);
    }
    #[derive(serde::Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow)]
        ty: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Tag<'_>>(json)
        .ok()
        .map(|tag| tag.ty.into_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use herald_protocol::RunStatus;
    use herald_store::{NewSession, SessionSource};

    use super::*;

    fn store_with(sessions: &[&str]) -> (tempfile::TempDir, StoreHandle) {
        let dir = tempfile::tempdir().unwrap();
        let store = StoreHandle::open(&dir.path().join("state.db")).unwrap();
        for id in sessions {
            let mut store = herald_store::Store::open(dir.path().join("state.db")).unwrap();
            store
                .create_session(&NewSession {
                    id: (*id).to_owned(),
                    parent_session_id: None,
                    agent_id: Some("root".into()),
                    source: SessionSource::Cli,
                    cwd: "/w".into(),
                    model: "m".into(),
                    provider: "openai".into(),
                    system_prompt: "s".into(),
                })
                .unwrap();
        }
        (dir, store)
    }

    fn completed() -> EventKind {
        EventKind::RunCompleted {
            status: RunStatus::Completed,
            exit_reason: herald_protocol::ExitReason::Completed,
            final_response: "done".into(),
            iterations: 1,
            usage: Default::default(),
            cost_usd: Some(0.0),
            tree_usage: Default::default(),
            duration_ms: 1,
            error: None,
        }
    }

    #[tokio::test]
    async fn recorded_sinks_store_in_emit_order_without_deltas() {
        let (_dir, store) = store_with(&["ses_root"]);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let out = Arc::clone(&seen);
        let root = EventSink::new("ses_root", "root", move |e: Event| {
            out.lock().unwrap().push(e.kind);
        })
        .recorded(&store, "ses_root", 0);
        let child = root.for_agent("ses_root", "ag_1");
        root.emit(EventKind::AssistantDelta { text: "x".into() });
        root.emit(EventKind::Compaction {
            tokens_before: 2,
            tokens_after: 1,
        });
        child.emit(EventKind::Error {
            message: "child".into(),
            fatal: false,
        });
        root.finish(completed());
        // Dropped after the final event: neither shown nor stored.
        child.emit(EventKind::Error {
            message: "late".into(),
            fatal: false,
        });
        assert_eq!(seen.lock().unwrap().len(), 4);
        let stored = store
            .call(|s| s.load_events("ses_root"))
            .await
            .unwrap()
            .unwrap();
        let kinds: Vec<_> = stored.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["compaction", "error", "run.completed"]);
        assert_eq!(stored[1].agent_id, "ag_1");
        assert!(stored.windows(2).all(|w| w[0].id < w[1].id));
        // Numbered in emit order across the tree; the delta is not numbered.
        let seqs: Vec<_> = stored.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [Some(1), Some(2), Some(3)]);
        assert_eq!(stored[1].root_session_id.as_deref(), Some("ses_root"));
        let last: serde_json::Value = serde_json::from_str(&stored[2].payload).unwrap();
        assert_eq!(last["type"], "run.completed");
        assert_eq!(last["final_response"], "done");
        assert_eq!(last["session_id"], "ses_root");
    }

    #[tokio::test]
    async fn a_sink_without_a_store_still_finishes() {
        let seen = Arc::new(Mutex::new(0));
        let out = Arc::clone(&seen);
        let sink = EventSink::new("s", "root", move |_| *out.lock().unwrap() += 1);
        assert!(!sink.is_recorded());
        sink.finish(completed());
        sink.emit(EventKind::Compaction {
            tokens_before: 2,
            tokens_after: 1,
        });
        assert_eq!(*seen.lock().unwrap(), 1);
    }

    #[test]
    fn event_types_come_from_the_json() {
        let event = Event::new("s", "root", completed());
        let json = serde_json::to_string(&event).unwrap();
        assert_eq!(event_type(&json).as_deref(), Some("run.completed"));
        assert_eq!(event_type("{}"), None);
        // Not first, or escaped: read by parsing.
        assert_eq!(
            event_type(r#"{"a":1,"type":"x.y"}"#).as_deref(),
            Some("x.y")
        );
        assert_eq!(
            event_type(r#"{"type":"a\"b","c":2}"#).as_deref(),
            Some("a\"b")
        );
        assert_eq!(event_type(r#"{"type":"#), None);
    }
}
