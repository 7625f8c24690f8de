//! Steering: text the user sends while a turn runs, handed to the model at
//! the next tool boundary instead of waiting for the turn to end. It is
//! appended to the newest tool result (not yet sent), so every earlier
//! byte of the conversation stays unchanged and the provider's prompt cache
//! still hits.

use std::sync::{Mutex, PoisonError};

/// What the user sent during the turn, not yet seen by the model.
#[derive(Debug, Default)]
pub struct SteerQueue {
    texts: Mutex<Vec<String>>,
}

impl SteerQueue {
    /// Queues `text` for the next tool boundary.
    pub fn push(&self, text: String) {
        self.lock().push(text);
    }

    /// Everything queued, oldest first, leaving the queue empty: the agent
    /// takes it at a tool boundary, a front end takes what is left when the
    /// turn ended without one (to send it as the next turn).
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.texts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The note appended to a tool result for steered texts.
pub(crate) fn render_steering(texts: &[String]) -> String {
    let mut note = String::from(
        "[The user sent this while you were working; take it into account from now on]",
    );
    for text in texts {
        note.push('\n');
        note.push_str(text.trim());
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
        let note = render_steering(&["use tabs ".into()]);
        assert!(note.ends_with("\nuse tabs"), "{note}");
    }
}
