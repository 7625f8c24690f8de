//! Following one turn's events for a streaming OpenAI answer: the text to
//! send (the root agent's streamed replies), tool progress, and the end.
//!
//! Text streams live from `assistant.delta`. A reply that ends in tool calls
//! keeps what it streamed (the model's narration, e.g. "Let me read the
//! file."), and the next reply's text follows after a blank line; a
//! non-streaming answer carries only the final reply. Text a follower did
//! not see as deltas (it fell behind) is sent from the reply's
//! `assistant.message`; after an `assistant.reset` (a retried request
//! answered differently) nothing more of that reply streams unless the
//! final message extends what was sent.

use herald_core::runtime::{Session, Subscription};
use herald_protocol::{EventKind, RunStatus, TokenTotals};

use crate::error::ApiError;
use crate::state::{AppState, StartedTurn, TurnSlot};

/// The next thing to send.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Answer text.
    Text(String),
    /// A tool call began (by the root agent, or a subagent: `agent/tool`).
    Tool(String),
    /// The turn ended.
    Finished(Finished),
    /// The session closed before the turn ended.
    Gone,
}

/// How the turn ended (its `run.completed`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finished {
    pub(crate) status: RunStatus,
    pub(crate) exit_reason: String,
    pub(crate) final_response: String,
    pub(crate) usage: TokenTotals,
}

/// Follows a turn through a subscription taken before the turn started.
pub(crate) struct TurnFollower {
    sub: Subscription,
    root: String,
    reply: ReplyText,
}

impl TurnFollower {
    /// Subscribes to `session` and then starts the turn, so none of the
    /// turn's events is missed; the error when it cannot start.
    pub(crate) fn start(
        state: &AppState,
        session: &Session,
        input: String,
        slot: TurnSlot,
    ) -> Result<(Self, StartedTurn), ApiError> {
        let sub = session.events(None);
        let turn = state.start_turn(session, input, Vec::new(), slot)?;
        Ok((Self::new(sub, session.id()), turn))
    }

    pub(crate) fn new(sub: Subscription, root: &str) -> Self {
        Self {
            sub,
            root: root.to_owned(),
            reply: ReplyText::default(),
        }
    }

    /// The next step of the turn.
    pub(crate) async fn next(&mut self) -> Step {
        loop {
            let Some(event) = self.sub.next().await else {
                return Step::Gone;
            };
            let from_root = event.agent_id == "root" && event.session_id == self.root;
            match &event.kind {
                EventKind::AssistantDelta { text } if from_root => {
                    if let Some(text) = self.reply.delta(text) {
                        return Step::Text(text);
                    }
                }
                EventKind::AssistantReset {} if from_root => self.reply.reset(),
                EventKind::AssistantMessage { text, .. } if from_root => {
                    if let Some(text) = self.reply.message(text) {
                        return Step::Text(text);
                    }
                }
                EventKind::ToolStarted { name, .. } if from_root => {
                    return Step::Tool(name.clone());
                }
                EventKind::SubagentTool { tool, .. } => {
                    return Step::Tool(format!("{}/{tool}", event.agent_id));
                }
                EventKind::RunCompleted {
                    status,
                    exit_reason,
                    final_response,
                    usage,
                    ..
                } if from_root => {
                    return Step::Finished(Finished {
                        status: *status,
                        exit_reason: exit_reason.as_str().to_owned(),
                        final_response: final_response.clone(),
                        usage: usage.tokens(),
                    });
                }
                _ => {}
            }
        }
    }
}

/// What of the current reply was sent, to send each part of the answer once.
#[derive(Debug, Default)]
pub(crate) struct ReplyText {
    /// This reply's text sent so far.
    sent: String,
    /// An earlier reply of the turn sent text: the next one starts with a
    /// blank line.
    separate: bool,
    /// The reply was reset after some of it was sent.
    diverged: bool,
}

impl ReplyText {
    fn separator(&mut self) -> &'static str {
        if self.sent.is_empty() && self.separate {
            self.separate = false;
            "\n\n"
        } else {
            ""
        }
    }

    /// A streamed piece of the reply: what to send.
    pub(crate) fn delta(&mut self, text: &str) -> Option<String> {
        if self.diverged || text.is_empty() {
            return None;
        }
        let out = format!("{}{text}", self.separator());
        self.sent.push_str(text);
        Some(out)
    }

    /// The reply's text was voided (a retry answered differently).
    pub(crate) fn reset(&mut self) {
        if !self.sent.is_empty() {
            self.diverged = true;
        }
    }

    /// The reply is complete with `text`: what of it is still to send.
    pub(crate) fn message(&mut self, text: &str) -> Option<String> {
        let rest = text.strip_prefix(self.sent.as_str()).unwrap_or_default();
        let out = if rest.is_empty() {
            None
        } else {
            Some(format!("{}{rest}", self.separator()))
        };
        if !self.sent.is_empty() || out.is_some() {
            self.separate = true;
        }
        self.sent.clear();
        self.diverged = false;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_text_is_sent_once() {
        let mut r = ReplyText::default();
        assert_eq!(r.delta("Hel").as_deref(), Some("Hel"));
        assert_eq!(r.delta("lo").as_deref(), Some("lo"));
        assert_eq!(r.message("Hello"), None);
    }

    #[test]
    fn missed_deltas_come_from_the_message() {
        let mut r = ReplyText::default();
        assert_eq!(r.delta("Hel").as_deref(), Some("Hel"));
        assert_eq!(r.message("Hello world").as_deref(), Some("lo world"));
        let mut r = ReplyText::default();
        assert_eq!(r.message("all at once").as_deref(), Some("all at once"));
    }

    #[test]
    fn replies_are_separated_and_silent_ones_add_nothing() {
        let mut r = ReplyText::default();
        assert_eq!(r.message(""), None);
        assert_eq!(r.delta("Let me look.").as_deref(), Some("Let me look."));
        assert_eq!(r.message("Let me look."), None);
        assert_eq!(r.message(""), None);
        assert_eq!(r.delta("Done").as_deref(), Some("\n\nDone"));
        assert_eq!(r.delta("!").as_deref(), Some("!"));
    }

    #[test]
    fn a_reset_stops_the_reply_unless_the_retry_extends_it() {
        let mut r = ReplyText::default();
        r.delta("abc");
        r.reset();
        assert_eq!(r.delta("xyz"), None);
        assert_eq!(r.message("xyz"), None);
        let mut r = ReplyText::default();
        r.delta("abc");
        r.reset();
        assert_eq!(r.message("abcdef").as_deref(), Some("def"));
        // Nothing sent yet: a reset changes nothing.
        let mut r = ReplyText::default();
        r.reset();
        assert_eq!(r.delta("x").as_deref(), Some("x"));
    }
}
