//! Following a session's event stream: live events from the session's
//! broadcast, preceded by a replay from the store when the follower starts
//! from an earlier event (SSE `Last-Event-ID`) or fell behind.

use std::collections::VecDeque;
use std::sync::Arc;

use herald_protocol::{Event, EventKind};
use tokio::sync::broadcast;

use crate::StoreHandle;
use crate::events::EventFlusher;

/// Most stored events read per replay query.
const REPLAY_PAGE: usize = 2_000;

/// One follower of a session tree's events, in sequence order and without
/// gaps in the stored (numbered) events: what a live broadcast dropped
/// because this follower was slow is read back from the store.
/// `assistant.delta` events are live only; a follower that falls behind
/// misses some of them (the `assistant.message` after them has the text).
pub struct Subscription {
    live: broadcast::Receiver<Arc<Event>>,
    backlog: VecDeque<Arc<Event>>,
    /// The last numbered event handed out.
    last_seq: u64,
    /// The highest number read from the store: live events up to it were
    /// handed out by the replay already.
    replayed_to: u64,
    store: StoreHandle,
    root: String,
    flusher: EventFlusher,
    ended: bool,
}

impl Subscription {
    pub(crate) fn new(
        live: broadcast::Receiver<Arc<Event>>,
        store: StoreHandle,
        root: String,
        flusher: EventFlusher,
    ) -> Self {
        Self {
            live,
            backlog: VecDeque::new(),
            last_seq: 0,
            replayed_to: 0,
            store,
            root,
            flusher,
            ended: false,
        }
    }

    /// Starts the stream after event `after` (0: from the session's first
    /// stored event): the stored events after it come first, then live ones.
    pub(crate) async fn replay_after(&mut self, after: u64) {
        self.last_seq = after;
        self.replayed_to = after;
        self.refill().await;
    }

    /// The number of the last stored event handed out (what a reconnecting
    /// follower passes as its starting point).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The next event, or `None` once the session has closed its stream
    /// (it ended, or the runtime dropped it).
    pub async fn next(&mut self) -> Option<Arc<Event>> {
        loop {
            if let Some(event) = self.backlog.pop_front() {
                if let Some(seq) = event.seq {
                    self.last_seq = self.last_seq.max(seq);
                }
                return Some(event);
            }
            if self.ended {
                return None;
            }
            match self.live.recv().await {
                Ok(event) => match event.seq {
                    // Already handed out by a replay.
                    Some(seq) if seq <= self.replayed_to => continue,
                    Some(seq) => {
                        self.last_seq = self.last_seq.max(seq);
                        return Some(event);
                    }
                    None => return Some(event),
                },
                Err(broadcast::error::RecvError::Lagged(_)) => self.refill().await,
                Err(broadcast::error::RecvError::Closed) => {
                    // What was emitted last may still wait in the write queue.
                    self.ended = true;
                    self.refill().await;
                }
            }
        }
    }

    /// Reads the stored events after `last_seq` into the backlog (the write
    /// queue is flushed first, so nothing emitted so far is missed).
    async fn refill(&mut self) {
        self.flusher.flush();
        let mut after = i64::try_from(self.last_seq).unwrap_or(i64::MAX);
        loop {
            let root = self.root.clone();
            let page = match self
                .store
                .call(move |s| s.load_tree_events_after(&root, after, REPLAY_PAGE))
                .await
            {
                Ok(Ok(page)) => page,
                Ok(Err(err)) => {
                    tracing::warn!(session_id = %self.root, "cannot replay events: {err}");
                    return;
                }
                Err(err) => {
                    tracing::warn!(session_id = %self.root, "cannot replay events: {err}");
                    return;
                }
            };
            let full = page.len() == REPLAY_PAGE;
            for row in page {
                after = row.seq.unwrap_or(after);
                self.replayed_to = self.replayed_to.max(u64::try_from(after).unwrap_or(0));
                match serde_json::from_str::<Event>(&row.payload) {
                    Ok(mut event) => {
                        event.seq = row.seq.and_then(|n| u64::try_from(n).ok());
                        self.backlog.push_back(Arc::new(event));
                    }
                    Err(err) => tracing::warn!(
                        session_id = %self.root,
                        id = row.id,
                        "a stored event is unreadable and is skipped: {err}"
                    ),
                }
            }
            if !full {
                return;
            }
        }
    }
}

/// Whether `event` ends a turn (`run.completed`).
pub fn is_turn_end(event: &Event) -> bool {
    matches!(event.kind, EventKind::RunCompleted { .. })
}
