//! The memory flush: before a compaction summarises the
//! middle of the conversation, and when a session with enough user turns
//! ends, one bounded extra exchange lets the model save durable facts with
//! the `memory` tool, so what a summary drops or a session leaves behind is
//! not lost to later sessions.
//!
//! Cache-friendly by construction: the flush is a user message appended to
//! the conversation and sent with the session's own system prompt and tool
//! list, so the provider's cached prefix is reused. Because the tool list
//! cannot change without breaking that cache, every tool stays offered and
//! a call of any tool but `memory` is refused as its tool result. At most
//! [`FLUSH_REQUESTS`] requests: the first two may call tools, the last one
//! may not (so the exchange always ends with the model's reply).
//!
//! Where the messages go: before a compaction they are stored (the
//! transcript before the compaction record keeps them) but the compacted
//! history does not carry them: they are no part of what is summarised or
//! kept. At the end of a session they stay in the conversation, so a resumed
//! session sees that it was flushed and counts its turns from there; the
//! reply's closing `Summary:` paragraph becomes the session's stored
//! summary. Subagents never flush (they have no `memory` tool and no flush
//! settings); only the root agent of a session is given [`FlushSettings`].

use std::sync::Arc;
use std::time::Instant;

use futures_util::future::BoxFuture;
use herald_llm::{ErrorKind, cost_usd};
use herald_protocol::{EventKind, Message, Role, ToolCall};
use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::compress::{SUMMARY_MARKER, is_synthetic};
use crate::intercept::{BeforeCall, CallInterceptor, CallSite};
use crate::tool_runner::{CallGuards, run_tool_calls};

/// Starts every flush instruction (a user message herald writes).
pub const FLUSH_MARKER: &str = "[herald] Memory flush";

/// Most requests one flush makes; only the last forbids tool calls.
pub const FLUSH_REQUESTS: u32 = 3;

/// Longest stored session summary, in characters.
pub const SUMMARY_LIMIT_CHARS: usize = 1_000;

/// The only tool that runs during a flush.
const MEMORY_TOOL: &str = "memory";

/// How the root agent of a session flushes (from `[memory]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushSettings {
    /// Flush before a compaction that writes a summary.
    pub before_compaction: bool,
    /// User turns since the last flush or compaction the end-of-session
    /// flush needs; 0 = never at the end.
    pub min_turns: u32,
    /// Whether `USER.md` is enabled (the instruction mentions it).
    pub user_profile: bool,
}

pub use herald_protocol::{FlushReason, FlushStatus};

/// What one flush did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushReport {
    pub reason: FlushReason,
    pub status: FlushStatus,
    /// Requests sent.
    pub requests: u32,
    /// `memory` calls that succeeded.
    pub saved: u32,
    /// Calls of other tools, refused.
    pub refused: u32,
    /// The closing `Summary:` paragraph of the reply (session end only).
    pub summary: Option<String>,
    /// Why it did not finish, when it did not.
    pub message: Option<String>,
}

/// The user message that asks for the flush.
pub fn flush_instruction(reason: FlushReason, user_profile: bool) -> String {
    let targets = if user_profile {
        "target=memory for facts about the projects, environment, tools and conventions; target=user for the user's preferences and corrections"
    } else {
        "target=memory for facts about the projects, environment, tools and conventions"
    };
    let what = "Save the durable facts from this conversation that are worth keeping for later sessions with the memory tool now \
(";
    let rules = "). Only what is not in memory yet; no secrets, no one-offs, nothing easy to find again. \
Only the memory tool runs now: a call of any other tool is refused.";
    match reason {
        FlushReason::Compaction => format!(
            "{FLUSH_MARKER}: the conversation above is about to be summarised to fit the context window, and its details will be lost. \
{what}{targets}{rules} Reply DONE when finished, or right away if there is nothing worth saving."
        ),
        FlushReason::SessionEnd | FlushReason::Deferred => {
            let ending = if reason == FlushReason::Deferred {
                "this session ended earlier without saving its memory."
            } else {
                "this session is ending."
            };
            format!(
                "{FLUSH_MARKER}: {ending} {what}{targets}{rules} \
When finished, or right away if there is nothing worth saving, reply DONE followed by one paragraph that starts with \"Summary:\" \
and says what this session was about and what came of it (it is stored so the session can be found later)."
            )
        }
    }
}

/// Whether `message` is a flush instruction.
pub fn is_flush_instruction(message: &Message) -> bool {
    message.role == Role::User && message.content.starts_with(FLUSH_MARKER)
}

/// The user turns of `messages` since the last flush or compaction summary:
/// the user's own messages, not the ones herald writes (notices, the
/// iteration limit, background results).
pub fn user_turns_since_flush(messages: &[Message]) -> usize {
    messages
        .iter()
        .rev()
        .take_while(|m| !is_flush_instruction(m) && !m.content.starts_with(SUMMARY_MARKER))
        .filter(|m| m.role == Role::User && !is_synthetic(m))
        .count()
}

/// The session summary in a flush reply: the text after its last
/// `Summary:` (any case), else the reply without a leading `DONE` when
/// something substantial is left; whitespace collapsed, at most
/// [`SUMMARY_LIMIT_CHARS`].
pub fn summary_from_reply(reply: &str) -> Option<String> {
    let marker = reply.char_indices().rev().map(|(at, _)| at).find(|&at| {
        reply
            .get(at..at + 8)
            .is_some_and(|s| s.eq_ignore_ascii_case("summary:"))
    });
    let text = match marker {
        Some(at) => &reply[at + 8..],
        None => {
            let trimmed = reply.trim();
            let rest = trimmed
                .strip_prefix("DONE")
                .or_else(|| trimmed.strip_prefix("Done"))
                .unwrap_or(trimmed);
            let rest = rest.trim_start_matches(['.', '!', ':', '-', ' ', '\n']);
            if rest.chars().count() < 20 {
                return None;
            }
            rest
        }
    };
    cut(text)
}

/// The summary a compaction wrote, for a session that ended without a
/// flush reply: the latest summary message's text, cut.
pub fn summary_from_compaction(messages: &[Message]) -> Option<String> {
    let message = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User && m.content.starts_with(SUMMARY_MARKER))?;
    // The summary itself follows the header paragraph.
    let body = message
        .content
        .split_once("\n\n")
        .map_or(message.content.as_str(), |(_, body)| body);
    let flat: String = body
        .lines()
        .map(|l| l.trim_start_matches('#').trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    cut(&flat)
}

/// Whitespace collapsed and cut to [`SUMMARY_LIMIT_CHARS`] with `…`.
fn cut(text: &str) -> Option<String> {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return None;
    }
    if flat.chars().count() <= SUMMARY_LIMIT_CHARS {
        return Some(flat);
    }
    let mut out: String = flat.chars().take(SUMMARY_LIMIT_CHARS - 1).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    Some(out)
}

/// Refuses every call but `memory` during a flush (first in the chain, so
/// a refused call reaches no hook or tool).
struct MemoryOnly;

/// The result of a refused call.
fn refusal(call: &ToolCall) -> String {
    format!(
        "refused: only the memory tool runs during the memory flush; `{}` was not run. Save durable facts with memory, then reply.",
        call.name
    )
}

impl CallInterceptor for MemoryOnly {
    fn before<'a>(
        &'a self,
        _site: CallSite<'a>,
        call: &'a mut ToolCall,
    ) -> BoxFuture<'a, BeforeCall> {
        Box::pin(async move {
            if call.name == MEMORY_TOOL {
                BeforeCall::Proceed
            } else {
                BeforeCall::Block(refusal(call))
            }
        })
    }
}

impl Agent {
    /// Lets this agent flush memory (the root agent of a session; `None`
    /// for subagents, which never flush).
    pub fn set_memory_flush(&mut self, settings: Option<FlushSettings>) {
        self.memory_flush = settings;
    }

    /// Whether a compaction should be preceded by a flush.
    pub(crate) fn flushes_before_compaction(&self) -> bool {
        self.memory_flush
            .as_ref()
            .is_some_and(|f| f.before_compaction)
            && self.registry.get(MEMORY_TOOL).is_some()
    }

    /// The flush at the end of a session: runs when flushing is set up,
    /// the `memory` tool exists and the conversation has at least
    /// `min_turns` user turns since the last flush or compaction. `None`
    /// when skipped. `deadline` bounds it (the status is then `Timeout`);
    /// cancelling `cancel` ends it at once.
    pub async fn flush_at_session_end(
        &mut self,
        cancel: &CancellationToken,
        deadline: Option<Instant>,
    ) -> Option<FlushReport> {
        let min_turns = self.memory_flush.as_ref()?.min_turns;
        if min_turns == 0
            || self.registry.get(MEMORY_TOOL).is_none()
            || user_turns_since_flush(&self.messages) < min_turns as usize
            || cancel.is_cancelled()
        {
            return None;
        }
        Some(
            self.flush_memory(FlushReason::SessionEnd, cancel, deadline)
                .await,
        )
    }

    /// Whether the conversation has reached the flush at session end (set
    /// up, the `memory` tool present, at least `min_turns` user turns since
    /// the last flush or compaction) and not had it yet: the runtime marks
    /// the session in the store, so the flush is owed even if the process
    /// ends before it runs or finishes.
    pub fn owes_end_flush(&self) -> bool {
        self.memory_flush.as_ref().is_some_and(|f| {
            f.min_turns > 0 && user_turns_since_flush(&self.messages) >= f.min_turns as usize
        }) && self.registry.get(MEMORY_TOOL).is_some()
    }

    /// The summary to store for this session: the closing paragraph of
    /// `flush` (the end-of-session flush), else the latest compaction
    /// summary in the conversation, cut.
    pub fn session_summary(&self, flush: Option<&FlushReport>) -> Option<String> {
        flush
            .and_then(|f| f.summary.clone())
            .or_else(|| summary_from_compaction(&self.messages))
    }

    /// Runs one flush: appends the instruction, sends it (the session's
    /// system prompt and tools), runs the `memory` calls of the reply
    /// (refusing others) and asks again, at most [`FLUSH_REQUESTS`] times.
    /// Each reply and result is stored like any other message and each
    /// request's usage is recorded and emitted; a `memory.flush` event
    /// reports the outcome. Never fails: a failed request ends the flush
    /// with the history valid (the instruction is dropped when no reply
    /// came).
    pub(crate) async fn flush_memory(
        &mut self,
        reason: FlushReason,
        cancel: &CancellationToken,
        deadline: Option<Instant>,
    ) -> FlushReport {
        // `[routing]` role `memory_flush`: the flush runs on its model,
        // then the conversation goes on with its own.
        let own = self
            .flush_client
            .clone()
            .map(|flush| std::mem::replace(&mut self.client, flush));
        if own.is_some() {
            self.body_cache.history_changed();
        }
        let report = self.flush_memory_here(reason, cancel, deadline).await;
        if let Some(own) = own {
            self.client = own;
            self.body_cache.history_changed();
        }
        report
    }

    async fn flush_memory_here(
        &mut self,
        reason: FlushReason,
        cancel: &CancellationToken,
        deadline: Option<Instant>,
    ) -> FlushReport {
        let mut report = FlushReport {
            reason,
            status: FlushStatus::Done,
            requests: 0,
            saved: 0,
            refused: 0,
            summary: None,
            message: None,
        };
        if let Err(message) = self.persist().await {
            report.status = FlushStatus::Failed;
            report.message = Some(message);
            self.emit_flush(&report);
            return report;
        }
        let flush_cancel = cancel.child_token();
        let timer = deadline.map(|at| {
            let token = flush_cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until(at.into()).await;
                token.cancel();
            })
        });
        let user_profile = self.memory_flush.as_ref().is_some_and(|f| f.user_profile);
        let start = self.messages.len();
        self.messages
            .push(Message::user(flush_instruction(reason, user_profile)));
        let mut interceptors: Vec<Arc<dyn CallInterceptor>> = vec![Arc::new(MemoryOnly)];
        interceptors.extend(self.interceptors.iter().cloned());
        let interception = crate::intercept::Interception::new(
            interceptors,
            self.events.session_id(),
            self.events.agent_id(),
        );
        let stopped = |token: &CancellationToken| {
            if cancel.is_cancelled() {
                Some(FlushStatus::Interrupted)
            } else if token.is_cancelled() {
                Some(FlushStatus::Timeout)
            } else {
                None
            }
        };
        for round in 1..=FLUSH_REQUESTS {
            let last = round == FLUSH_REQUESTS;
            let reply = match self.request(last, &flush_cancel).await {
                Ok(reply) => reply,
                Err(err) => {
                    report.status = if err.kind == ErrorKind::Cancelled {
                        stopped(&flush_cancel).unwrap_or(FlushStatus::Interrupted)
                    } else {
                        FlushStatus::Failed
                    };
                    report.message = Some(err.message);
                    break;
                }
            };
            report.requests += 1;
            self.account_flush_usage(&reply.usage);
            let (cut, timed_out) = (reply.is_cut(), reply.timed_out);
            // At the last request tool calls are forbidden; any sent anyway
            // are dropped so none is left without a result.
            let calls = if last { Vec::new() } else { reply.tool_calls };
            let text = reply.text;
            self.messages.push(
                Message::assistant(text.clone(), calls.clone()).with_reasoning(reply.reasoning),
            );
            if let Err(message) = self.persist().await {
                report.status = FlushStatus::Failed;
                report.message = Some(message);
                break;
            }
            if calls.is_empty() {
                if reason != FlushReason::Compaction {
                    report.summary = summary_from_reply(&text);
                }
                break;
            }
            // A cut reply's last call may be incomplete: never run.
            let mut runnable = calls.clone();
            let unfinished = if cut { runnable.pop() } else { None };
            let mut results = run_tool_calls(
                self.client.accepts_images(),
                &self.registry,
                CallGuards {
                    gate: self.gate.as_ref(),
                    interception: interception.as_ref(),
                },
                &runnable,
                &self.state,
                &flush_cancel,
                &self.events,
                self.recorder.as_ref(),
            )
            .await;
            if let Some(call) = &unfinished {
                results.push(Message::tool_result(
                    call,
                    super::cut_call_result(timed_out),
                    true,
                ));
            }
            self.kept_results |= calls.len() > 1;
            for (call, result) in calls.iter().zip(&results) {
                if call.name != MEMORY_TOOL {
                    report.refused += 1;
                } else if !result.is_error {
                    report.saved += 1;
                }
            }
            self.messages.extend(results);
            if let Err(message) = self.persist().await {
                report.status = FlushStatus::Failed;
                report.message = Some(message);
                break;
            }
            if let Some(status) = stopped(&flush_cancel) {
                report.status = status;
                break;
            }
        }
        if let Some(timer) = timer {
            timer.abort();
        }
        if report.requests == 0 {
            // No reply: the instruction was never stored; drop it so the
            // conversation does not end with an unanswered request.
            self.messages.truncate(start);
            self.body_cache.history_changed();
        }
        if report.status == FlushStatus::Timeout && report.message.is_none() {
            report.message =
                Some("the flush took longer than [memory] flush_timeout_seconds".into());
        }
        self.emit_flush(&report);
        report
    }

    /// Counts a flush request's usage like any other: the agent's totals,
    /// the tree's budget, a `usage` event and (with the next persist) a
    /// usage row. The compactor's measurement is left alone: it describes
    /// the conversation without the flush.
    fn account_flush_usage(&mut self, usage: &herald_protocol::Usage) {
        let cost = cost_usd(self.client.model(), usage);
        self.usage.add(usage);
        self.cost_usd = herald_protocol::add_cost(self.cost_usd, cost);
        self.meter.record(usage, cost);
        if let Some(budget) = &self.budget {
            budget.add(usage.input_tokens + usage.output_tokens);
        }
        self.events.emit(EventKind::Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cached_tokens: usage.cached_tokens,
            cost_usd: cost,
        });
        self.pending_usage = Some((*usage, cost));
    }

    /// Reports the flush: a `memory.flush` event, and its outcome in the
    /// store, where a `done` flush clears the session's owed end flush (see
    /// [`Agent::owes_end_flush`]) and a deferred one counts as an attempt.
    fn emit_flush(&self, report: &FlushReport) {
        if let Some(recorder) = &self.recorder {
            let id = recorder.session_id.clone();
            let (status, deferred) = (report.status, report.reason == FlushReason::Deferred);
            recorder.store.send(move |s| {
                if let Err(err) = s.record_flush(&id, status.as_str(), deferred) {
                    tracing::warn!(session_id = %id, "could not record the memory flush: {err}");
                }
            });
        }
        self.events.emit(EventKind::MemoryFlush {
            reason: report.reason,
            status: report.status,
            requests: report.requests,
            saved: report.saved,
            refused: report.refused,
            message: report.message.clone(),
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn turns_are_counted_since_the_last_flush_or_summary() {
        let mut messages = vec![
            Message::user("one"),
            Message::assistant("a", vec![]),
            Message::user("[herald] Background agent results: x"),
            Message::user("two"),
            Message::user("[todo] 1. x"),
        ];
        assert_eq!(user_turns_since_flush(&messages), 2);
        messages.push(Message::user(flush_instruction(
            FlushReason::SessionEnd,
            true,
        )));
        messages.push(Message::assistant("DONE", vec![]));
        assert_eq!(user_turns_since_flush(&messages), 0);
        messages.push(Message::user("three"));
        assert_eq!(user_turns_since_flush(&messages), 1);
        messages.push(Message::user(format!(
            "{SUMMARY_MARKER}: 4 earlier messages"
        )));
        messages.push(Message::user("four"));
        assert_eq!(user_turns_since_flush(&messages), 1);
        assert_eq!(user_turns_since_flush(&[]), 0);
    }

    #[test]
    fn instructions_name_the_targets_and_are_no_compaction_marker() {
        let end = flush_instruction(FlushReason::SessionEnd, true);
        assert!(end.starts_with(FLUSH_MARKER));
        assert!(end.contains("target=user") && end.contains("Summary:"));
        let before = flush_instruction(FlushReason::Compaction, false);
        assert!(!before.contains("target=user") && !before.contains("Summary:"));
        assert!(before.contains("DONE"));
        // The testkit treats messages marked as context compaction as a
        // side request; the flush is a real part of the conversation.
        for text in [&end, &before] {
            assert!(!herald_testkit::is_compaction_text(text), "{text}");
        }
        assert!(is_flush_instruction(&Message::user(end)));
        assert!(!is_flush_instruction(&Message::assistant(before, vec![])));
    }

    #[test]
    fn the_summary_is_the_closing_paragraph() {
        assert_eq!(
            summary_from_reply("DONE\n\nSummary: Fixed the   flaky\ntest in ci.yml.").as_deref(),
            Some("Fixed the flaky test in ci.yml.")
        );
        assert_eq!(
            summary_from_reply("Saved two facts. SUMMARY: Ported the parser.").as_deref(),
            Some("Ported the parser.")
        );
        assert_eq!(summary_from_reply("DONE"), None);
        assert_eq!(summary_from_reply("DONE. Summary:   "), None);
        assert_eq!(
            summary_from_reply("Done - we migrated the database to Postgres 16.").as_deref(),
            Some("we migrated the database to Postgres 16.")
        );
        let long = format!("Summary: {}", "word ".repeat(400));
        let cut = summary_from_reply(&long).unwrap();
        assert_eq!(cut.chars().count(), SUMMARY_LIMIT_CHARS);
        assert!(cut.ends_with('…'));
        // Text whose lowercase form has another length still works.
        assert_eq!(
            summary_from_reply("İİ Summary: ok then").as_deref(),
            Some("ok then")
        );
    }

    #[test]
    fn a_compaction_summary_stands_in_without_a_flush_reply() {
        let messages = vec![
            Message::user("task"),
            crate::compress::summary_message(
                4,
                "## Goal\n- port the parser\n## Current state\n- tests pass",
            ),
            Message::user("more"),
        ];
        assert_eq!(
            summary_from_compaction(&messages).as_deref(),
            Some("Goal - port the parser Current state - tests pass")
        );
        assert_eq!(summary_from_compaction(&messages[..1]), None);
    }

    #[tokio::test]
    async fn only_memory_calls_pass() {
        let site = CallSite {
            session_id: "s",
            agent_id: "root",
            cwd: std::path::Path::new("/"),
            read_only: false,
        };
        let mut memory = ToolCall {
            id: "1".into(),
            name: "memory".into(),
            arguments: "{}".into(),
        };
        assert_eq!(
            MemoryOnly.before(site, &mut memory).await,
            BeforeCall::Proceed
        );
        let mut terminal = ToolCall {
            name: "terminal".into(),
            ..memory.clone()
        };
        match MemoryOnly.before(site, &mut terminal).await {
            BeforeCall::Block(reason) => {
                assert!(reason.starts_with("refused:") && reason.contains("`terminal`"));
            }
            other => panic!("{other:?}"),
        }
    }
}
