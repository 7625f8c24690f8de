//! Handing a session's events to its followers as they are emitted: each
//! follower has its own queue, in emit order, so a slow one delays nobody
//! and loses nothing until it is [`FOLLOWER_QUEUE`] events behind.

use std::sync::{Arc, Mutex, PoisonError};

use herald_protocol::Event;
use tokio::sync::mpsc;

/// Events a follower may fall behind by. One further behind is dropped
/// from the fan-out; its [`super::Subscription`] reads the stored events it
/// missed back and follows again (only unstored `assistant.delta`-like
/// events are lost then: the `assistant.message` after them has the text).
pub(crate) const FOLLOWER_QUEUE: usize = 65_536;

/// The followers of one session's live events; closed when the session ends.
#[derive(Default)]
pub(crate) struct Fanout {
    /// `None` once closed.
    followers: Mutex<Option<Vec<mpsc::Sender<Arc<Event>>>>>,
}

impl Fanout {
    /// An open fan-out without followers.
    pub(crate) fn open() -> Arc<Self> {
        Arc::new(Self {
            followers: Mutex::new(Some(Vec::new())),
        })
    }

    /// A fan-out that is already closed (a stream that is only read back).
    pub(crate) fn closed() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Passes `event` to every follower; drops followers that went away or
    /// fell [`FOLLOWER_QUEUE`] events behind.
    pub(crate) fn send(&self, event: Arc<Event>) {
        let mut followers = self.lock();
        if let Some(followers) = followers.as_mut() {
            followers.retain(|follower| follower.try_send(Arc::clone(&event)).is_ok());
        }
    }

    /// A new follower's queue, receiving every event sent from now on;
    /// `None` once closed.
    pub(crate) fn follow(&self) -> Option<mpsc::Receiver<Arc<Event>>> {
        let mut followers = self.lock();
        let followers = followers.as_mut()?;
        let (tx, rx) = mpsc::channel(FOLLOWER_QUEUE);
        followers.push(tx);
        Some(rx)
    }

    /// Ends every follower's queue after what it holds; nobody can follow
    /// any more.
    pub(crate) fn close(&self) {
        self.lock().take();
    }

    /// Whether [`Fanout::close`] was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().is_none()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Vec<mpsc::Sender<Arc<Event>>>>> {
        self.followers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use herald_protocol::EventKind;

    use super::*;

    fn event(n: u64) -> Arc<Event> {
        let mut event = Event::new(
            "s",
            "root",
            EventKind::AssistantDelta {
                text: n.to_string(),
            },
        );
        event.seq = Some(n);
        Arc::new(event)
    }

    #[tokio::test]
    async fn every_follower_gets_every_event_in_order_then_the_end() {
        let fanout = Fanout::open();
        let mut a = fanout.follow().unwrap();
        fanout.send(event(1));
        let mut b = fanout.follow().unwrap();
        fanout.send(event(2));
        fanout.close();
        assert!(fanout.is_closed());
        assert!(fanout.follow().is_none());
        assert_eq!(a.recv().await.unwrap().seq, Some(1));
        assert_eq!(a.recv().await.unwrap().seq, Some(2));
        assert!(a.recv().await.is_none());
        assert_eq!(b.recv().await.unwrap().seq, Some(2));
        assert!(b.recv().await.is_none());
    }

    #[tokio::test]
    async fn a_follower_too_far_behind_is_dropped_and_the_others_go_on() {
        let fanout = Fanout::open();
        let mut slow = fanout.follow().unwrap();
        for n in 0..FOLLOWER_QUEUE as u64 {
            fanout.send(event(n));
        }
        let mut fresh = fanout.follow().unwrap();
        fanout.send(event(u64::MAX));
        assert_eq!(fresh.recv().await.unwrap().seq, Some(u64::MAX));
        // The slow follower keeps what it had, then sees its queue end
        // while the fan-out is still open.
        let mut got = 0;
        while slow.recv().await.is_some() {
            got += 1;
        }
        assert_eq!(got, FOLLOWER_QUEUE);
        assert!(!fanout.is_closed());
    }
}
