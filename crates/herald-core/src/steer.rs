//! Steering: text the user sends while a turn runs, handed to the model at
//! the next tool boundary instead of waiting for the turn to end. It is
//! appended to the newest tool result (not yet sent), so every earlier
//! byte of the conversation stays unchanged and the provider's prompt cache
//! still hits.

use std::sync::{Mutex, PoisonError};

use herald_protocol::MessageDelivery;

/// One queued text, with the receipt it was sent under (`agent_send`);
/// the user's own steering has none.
#[derive(Debug, Clone, PartialEq)]
pub struct Steered {
    pub text: String,
    pub receipt: Option<String>,
}

#[derive(Debug, Default)]
struct Queue {
    pending: Vec<Steered>,
    /// Every receipt issued and where it is, oldest first.
    receipts: Vec<(String, MessageDelivery)>,
    /// The agent ended: nothing more is accepted.
    closed: bool,
}

impl Queue {
    fn take(&mut self, state: MessageDelivery) -> Vec<Steered> {
        let taken = std::mem::take(&mut self.pending);
        for steered in &taken {
            if let Some(receipt) = &steered.receipt
                && let Some(entry) = self.receipts.iter_mut().find(|(r, _)| r == receipt)
            {
                entry.1 = state;
            }
        }
        taken
    }
}

/// What was sent during the turn, not yet seen by the model.
#[derive(Debug, Default)]
pub struct SteerQueue {
    queue: Mutex<Queue>,
}

impl SteerQueue {
    /// Queues `text` for the next tool boundary.
    pub fn push(&self, text: String) {
        self.lock().pending.push(Steered {
            text,
            receipt: None,
        });
    }

    /// Queues `text` under `receipt`, whose state [`SteerQueue::receipts`]
    /// reports from now on; false (nothing queued) once the agent ended.
    pub fn push_with_receipt(&self, text: String, receipt: String) -> bool {
        let mut queue = self.lock();
        if queue.closed {
            return false;
        }
        queue
            .receipts
            .push((receipt.clone(), MessageDelivery::Queued));
        queue.pending.push(Steered {
            text,
            receipt: Some(receipt),
        });
        true
    }

    /// The agent ended: refuses what comes later and hands back what it
    /// never saw, marked `missed`.
    pub fn close(&self) -> Vec<Steered> {
        let mut queue = self.lock();
        queue.closed = true;
        queue.take(MessageDelivery::Missed)
    }

    /// Everything queued, oldest first, leaving the queue empty: the agent
    /// takes it at a tool boundary, a front end takes what is left when the
    /// turn ended without one (to send it as the next turn).
    pub fn take(&self) -> Vec<String> {
        self.take_marked(MessageDelivery::Delivered)
            .into_iter()
            .map(|s| s.text)
            .collect()
    }

    /// Takes everything queued and marks its receipts `state`: `delivered`
    /// when the model gets it, `missed` when the agent ended first.
    pub fn take_marked(&self, state: MessageDelivery) -> Vec<Steered> {
        self.lock().take(state)
    }

    /// Every receipt issued and its state, oldest first.
    pub fn receipts(&self) -> Vec<(String, MessageDelivery)> {
        self.lock().receipts.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The note appended to a tool result for steered texts.
pub(crate) fn render_steering(texts: &[Steered]) -> String {
    let from_user = texts.iter().any(|s| s.receipt.is_none());
    let mut note = String::from(if from_user {
        "[The user sent this while you were working; take it into account from now on]"
    } else {
        "[Your delegating agent sent this while you were working; take it into account from now on]"
    });
    for steered in texts {
        note.push('\n');
        note.push_str(steered.text.trim());
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_empties_the_queue_in_order() {
        let queue = SteerQueue::default();
        queue.push("first".into());
        queue.push("second".into());
        assert_eq!(queue.take(), vec!["first", "second"]);
        assert!(queue.take().is_empty());
        let note = render_steering(&[Steered {
            text: "use tabs ".into(),
            receipt: None,
        }]);
        assert!(note.ends_with("\nuse tabs"), "{note}");
    }

    #[test]
    fn receipts_move_from_queued_to_delivered_or_missed() {
        let queue = SteerQueue::default();
        assert!(queue.push_with_receipt("a".into(), "msg-1".into()));
        assert_eq!(
            queue.receipts(),
            vec![("msg-1".to_owned(), MessageDelivery::Queued)]
        );
        let taken = queue.take_marked(MessageDelivery::Delivered);
        assert_eq!(taken[0].receipt.as_deref(), Some("msg-1"));
        assert!(queue.push_with_receipt("b".into(), "msg-2".into()));
        assert_eq!(queue.close().len(), 1);
        assert!(!queue.push_with_receipt("c".into(), "msg-3".into()));
        assert_eq!(
            queue.receipts(),
            vec![
                ("msg-1".to_owned(), MessageDelivery::Delivered),
                ("msg-2".to_owned(), MessageDelivery::Missed)
            ]
        );
        assert!(queue.take().is_empty());
    }
}
