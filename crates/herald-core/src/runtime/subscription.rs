//! Following a session's event stream: the stored events after a given
//! one first (SSE `Last-Event-ID`, a front end that opened the session),
//! then live events from the session's fan-out, in order and without gaps.

use std::collections::VecDeque;
use std::sync::Arc;

use herald_protocol::{Event, EventKind};
use tokio::sync::mpsc;

use super::fanout::Fanout;
use crate::StoreHandle;
use crate::events::EventFlusher;

/// Most stored events read per replay query.
const REPLAY_PAGE: usize = 2_000;

/// One follower of a session tree's events, in emit order, none missed or
/// repeated. A follower that falls more than
/// [`super::fanout::FOLLOWER_QUEUE`] events behind reads the stored ones it
/// missed back from the store; only unstored events (`assistant.delta`,
/// `assistant.reasoning`, `tool.progress`) can be lost then, and the
/// `assistant.message` after them has the text.
///
/// [`Subscription::next`] is cancel-safe: a `select!` that drops it loses
/// nothing.
pub struct Subscription {
    /// `None` once the session's fan-out closed.
    live: Option<mpsc::Receiver<Arc<Event>>>,
    backlog: VecDeque<Arc<Event>>,
    /// The last numbered event handed out.
    last_seq: u64,
    /// The highest number read from the store: live events up to it were
    /// handed out by the replay already.
    replayed_to: u64,
    /// The stored events after `replayed_to` must be read before anything
    /// live is handed out.
    refill_due: bool,
    fanout: Arc<Fanout>,
    store: StoreHandle,
    root: String,
    flusher: EventFlusher,
}

impl Subscription {
    /// Follows `fanout` from now on; with `after`, the stored events after
    /// that number come first.
    pub(crate) fn new(
        fanout: Arc<Fanout>,
        store: StoreHandle,
        root: String,
        flusher: EventFlusher,
        after: Option<u64>,
    ) -> Self {
        Self {
            // Followed before the store is read: nothing falls between.
            live: fanout.follow(),
            backlog: VecDeque::new(),
            last_seq: after.unwrap_or(0),
            replayed_to: after.unwrap_or(0),
            refill_due: after.is_some(),
            fanout,
            store,
            root,
            flusher,
        }
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
            if let Some(event) = self.pop() {
                return Some(event);
            }
            if self.refill_due {
                self.refill().await;
                self.refill_due = false;
                continue;
            }
            let live = self.live.as_mut()?;
            match live.recv().await {
                Some(event) => {
                    if let Some(event) = self.pass(event) {
                        return Some(event);
                    }
                }
                None => self.lost_live(),
            }
        }
    }

    /// The next event if one is at hand without waiting (a front end
    /// draining what is queued before it redraws).
    pub fn try_next(&mut self) -> Option<Arc<Event>> {
        loop {
            if let Some(event) = self.pop() {
                return Some(event);
            }
            if self.refill_due {
                return None;
            }
            match self.live.as_mut()?.try_recv() {
                Ok(event) => {
                    if let Some(event) = self.pass(event) {
                        return Some(event);
                    }
                }
                Err(mpsc::error::TryRecvError::Empty) => return None,
                Err(mpsc::error::TryRecvError::Disconnected) => self.lost_live(),
            }
        }
    }

    fn pop(&mut self) -> Option<Arc<Event>> {
        let event = self.backlog.pop_front()?;
        if let Some(seq) = event.seq {
            self.last_seq = self.last_seq.max(seq);
        }
        Some(event)
    }

    /// A live event, unless the replay handed it out already.
    fn pass(&mut self, event: Arc<Event>) -> Option<Arc<Event>> {
        match event.seq {
            Some(seq) if seq <= self.replayed_to => None,
            Some(seq) => {
                self.last_seq = self.last_seq.max(seq);
                Some(event)
            }
            None => Some(event),
        }
    }

    /// The live queue ended: the session closed its stream (what was
    /// emitted last may still wait in the write queue), or this follower
    /// fell too far behind and follows again. Either way the store has what
    /// was missed.
    fn lost_live(&mut self) {
        self.live = if self.fanout.is_closed() {
            None
        } else {
            self.fanout.follow()
        };
        self.refill_due = true;
    }

    /// Reads the events after `last_seq` into the backlog: the stored ones,
    /// then those still in the write queue (taken first: one written in
    /// between is then read twice and handed out once), so nothing emitted
    /// so far is missed and nobody waits for a write.
    async fn refill(&mut self) {
        // What the backlog holds was read already.
        let from = self.last_seq.max(self.replayed_to);
        let pending = self.flusher.pending_after(from);
        let mut after = i64::try_from(from).unwrap_or(i64::MAX);
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
                break;
            }
        }
        for event in pending {
            let Some(seq) = event.seq.filter(|&seq| seq > self.replayed_to) else {
                continue;
            };
            self.replayed_to = seq;
            self.backlog.push_back(Arc::new(event));
        }
    }
}

/// Whether `event` ends a turn (`run.completed`).
pub fn is_turn_end(event: &Event) -> bool {
    matches!(event.kind, EventKind::RunCompleted { .. })
}
