//! Where an agent's finished background children report. The
//! agent loop drains it between steps and appends the reports at the end of
//! the conversation — to the newest tool result, or as part of the next
//! message — never into earlier context.

use std::sync::Mutex;
use std::sync::PoisonError;

use tokio::sync::Notify;

/// One finished background agent's report for its parent.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub agent_id: String,
    /// The text the parent model reads.
    pub text: String,
}

#[derive(Debug, Default)]
struct Slots {
    notices: Vec<Notice>,
    /// Background children dispatched and not yet finished.
    running: usize,
    /// Agents whose reports were handed out (drained or claimed) but whose
    /// delivery is not yet stored with the message that carries them.
    unsaved: Vec<String>,
}

/// The mailbox of one agent for its background children.
#[derive(Debug, Default)]
pub struct Inbox {
    slots: Mutex<Slots>,
    changed: Notify,
}

impl Inbox {
    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a newly dispatched background child.
    pub fn dispatched(&self) {
        self.slots().running += 1;
    }

    /// Files a finished child's report and wakes waiters.
    pub fn finished(&self, notice: Notice) {
        {
            let mut slots = self.slots();
            slots.running = slots.running.saturating_sub(1);
            slots.notices.push(notice);
        }
        self.changed.notify_waiters();
    }

    /// Takes every report not yet delivered. Their agents count as
    /// delivered once the message carrying them is stored (see
    /// [`Inbox::take_unsaved`]).
    pub fn drain(&self) -> Vec<Notice> {
        let mut slots = self.slots();
        let notices = std::mem::take(&mut slots.notices);
        slots
            .unsaved
            .extend(notices.iter().map(|n| n.agent_id.clone()));
        notices
    }

    /// Removes the reports of `ids`, delivered another way (`agent_wait`
    /// returns them in its result, stored like any other message).
    pub fn claim(&self, ids: &[String]) {
        let mut slots = self.slots();
        slots.notices.retain(|n| !ids.contains(&n.agent_id));
        slots.unsaved.extend(ids.iter().cloned());
    }

    /// The agents whose reports were handed out since the last call: the
    /// agent loop marks them delivered in the transaction that stores the
    /// messages holding the reports.
    pub fn take_unsaved(&self) -> Vec<String> {
        std::mem::take(&mut self.slots().unsaved)
    }

    /// Background children still running.
    pub fn running(&self) -> usize {
        self.slots().running
    }

    /// Whether reports are waiting.
    pub fn has_notices(&self) -> bool {
        !self.slots().notices.is_empty()
    }

    /// Resolves at the next report (or other change). Create the future,
    /// then re-check state, then await it, so no wake-up is missed.
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Wakes waiters without a report (e.g. a cancellation).
    pub fn poke(&self) {
        self.changed.notify_waiters();
    }
}

/// Renders reports as one block the model reads at the end of the conversation.
pub fn render_notices(notices: &[Notice]) -> String {
    let mut text = String::from("[herald] Background agent results:");
    for notice in notices {
        text.push('\n');
        text.push_str(&notice.text);
    }
    text
}
