//! Keeps a stored conversation valid before it is replayed.
//!
//! A conversation stored by a process that died mid-batch has tool calls
//! without results. [`plan_repairs`] finds them and decides each missing
//! result (a result the batch kept before the crash, one rebuilt from the
//! agent journal for `delegate_task`, or "interrupted"); [`restore_conversation`]
//! stores those results *where they belong* — right after the reply's
//! existing results, not at the end — so the stored order is the replayed
//! order and a second resume sends the same bytes as the first.

use std::collections::{HashMap, HashSet};

use herald_protocol::{Message, Role, ToolCall};
use herald_store::{AgentRecord, PendingResult};

use crate::StoreHandle;

/// The result of a call whose process died while it ran.
pub(crate) const INTERRUPTED_BY_EXIT: &str = "interrupted: herald stopped before this call finished; its effects are unknown, check before repeating it";

/// Results to add after position `after` of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Repair {
    /// Index of the message the results follow (the reply's last result, or
    /// the reply itself).
    pub after: usize,
    pub results: Vec<Message>,
}

/// Finds every tool call without a result and plans its result: `answer`
/// gives a call's known result (content, is_error) or `None` for the
/// generic "interrupted" one. Repairs are in conversation order.
pub fn plan_repairs(
    messages: &[Message],
    mut answer: impl FnMut(&ToolCall) -> Option<(String, bool)>,
) -> Vec<Repair> {
    let mut repairs = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        if messages[i].role != Role::Assistant || messages[i].tool_calls.is_empty() {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        let mut answered = HashSet::new();
        while end < messages.len() && messages[end].role == Role::Tool {
            if let Some(id) = &messages[end].tool_call_id {
                answered.insert(id.as_str());
            }
            end += 1;
        }
        let results: Vec<Message> = messages[i]
            .tool_calls
            .iter()
            .filter(|call| !answered.contains(call.id.as_str()))
            .map(|call| match answer(call) {
                Some((content, is_error)) => Message::tool_result(call, content, is_error),
                None => Message::tool_result(call, INTERRUPTED_BY_EXIT, true),
            })
            .collect();
        if !results.is_empty() {
            repairs.push(Repair {
                after: end - 1,
                results,
            });
        }
        i = end;
    }
    repairs
}

/// Applies `repairs` (from [`plan_repairs`] on the same messages).
pub fn apply_repairs(messages: &mut Vec<Message>, repairs: &[Repair]) {
    for repair in repairs.iter().rev() {
        let at = repair.after + 1;
        messages.splice(at..at, repair.results.iter().cloned());
    }
}

/// Answers every tool call that has no result with an "interrupted"
/// result, in place (see [`plan_repairs`]). Returns how many were added.
pub fn answer_dangling_calls(messages: &mut Vec<Message>) -> usize {
    let repairs = plan_repairs(messages, |_| None);
    apply_repairs(messages, &repairs);
    repairs.iter().map(|r| r.results.len()).sum()
}

/// The result of a `delegate_task` call rebuilt from the journal of the
/// children it spawned: finished children keep their summaries, unfinished
/// synchronous ones are interrupted (the background agents below them
/// restart and report to the agent reading this), background ones were
/// dispatched (and restart with the session).
pub(crate) fn delegate_result_from_journal(children: &[AgentRecord]) -> (String, bool) {
    if children.iter().all(|c| c.background) {
        let ids: Vec<&str> = children.iter().map(|c| c.id.as_str()).collect();
        let text = serde_json::json!({
            "status": "dispatched",
            "agent_ids": ids,
            "note": "herald restarted after this call; unfinished background agents were restarted and report when they finish",
        });
        return (text.to_string(), false);
    }
    let results: Vec<serde_json::Value> = children
        .iter()
        .map(|c| {
            let unfinished = c.is_unfinished();
            serde_json::json!({
                "agent_id": c.id,
                "status": if unfinished { "interrupted" } else { c.status.as_str() },
                "summary": c.result.clone().unwrap_or_default(),
                "exit_reason": if unfinished { "interrupted" } else { c.exit_reason.map_or("", |r| r.as_str()) },
                "api_calls": c.iterations,
                "tokens": c.tokens,
                "error": if unfinished {
                    Some(
                        "interrupted: herald stopped before this child finished; any background agents it had started restart and report to you"
                            .to_owned(),
                    )
                } else {
                    c.error.clone()
                },
            })
        })
        .collect();
    let all_failed = children.iter().all(|c| c.is_unfinished());
    let text = serde_json::json!({
        "results": results,
        "note": "rebuilt from the agent journal: herald stopped while this call ran; children that had finished keep their results",
    });
    (text.to_string(), all_failed)
}

/// Loads a session's live conversation (after its last compaction) and
/// repairs it for replay: unanswered calls get the result their batch kept,
/// a `delegate_task` result rebuilt from the journal, or "interrupted". The
/// added results are stored in their place in the same session.
pub async fn restore_conversation(
    store: &StoreHandle,
    session_id: &str,
) -> Result<Vec<Message>, String> {
    let id = session_id.to_owned();
    let loaded = store
        .call(move |s| -> Result<_, herald_store::StoreError> {
            let stored = s.load_messages(&id)?;
            let kept = s.pending_results(&id)?;
            Ok((stored, kept))
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot load session {session_id}: {e}"))?;
    let (stored, kept) = loaded;
    let seqs: Vec<i64> = stored.iter().map(|m| m.seq).collect();
    let all: Vec<Message> = stored.into_iter().map(|m| m.message).collect();
    let total = all.len();
    let mut history = crate::live_history(all);
    let offset = total - history.len();

    let delegate_calls: Vec<String> = dangling_calls(&history)
        .filter(|c| c.name == "delegate_task")
        .map(|c| c.id.clone())
        .collect();
    let journal = if delegate_calls.is_empty() {
        HashMap::new()
    } else {
        let id = session_id.to_owned();
        store
            .call(move |s| {
                let mut found = HashMap::new();
                for call in delegate_calls {
                    if let Ok(children) = s.agents_of_call(&id, &call)
                        && !children.is_empty()
                    {
                        found.insert(call, children);
                    }
                }
                found
            })
            .await
            .map_err(|e| e.to_string())?
    };
    let kept: HashMap<String, PendingResult> =
        kept.into_iter().map(|r| (r.call_id.clone(), r)).collect();
    let mut repairs = plan_repairs(&history, |call| {
        if let Some(result) = kept.get(&call.id) {
            return Some((result.content.clone(), result.is_error));
        }
        journal
            .get(&call.id)
            .map(|children| delegate_result_from_journal(children))
    });
    // A kept result comes back with its images too.
    for result in repairs.iter_mut().flat_map(|r| r.results.iter_mut()) {
        if let Some(kept) = result.tool_call_id.as_ref().and_then(|id| kept.get(id)) {
            result.images.clone_from(&kept.images);
        }
    }
    if repairs.is_empty() {
        return Ok(history);
    }
    let placed: Vec<(i64, Vec<Message>)> = repairs
        .iter()
        .map(|r| (seqs[offset + r.after], r.results.clone()))
        .collect();
    let id = session_id.to_owned();
    store
        .call(move |s| -> Result<(), herald_store::StoreError> {
            // Last first, so the positions of earlier repairs stay valid.
            for (after_seq, results) in placed.iter().rev() {
                s.insert_messages_after(&id, *after_seq, results)?;
            }
            s.clear_pending_results(&id)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot store the repaired session {session_id}: {e}"))?;
    apply_repairs(&mut history, &repairs);
    Ok(history)
}

/// Tool calls of `messages` that have no result.
fn dangling_calls(messages: &[Message]) -> impl Iterator<Item = &ToolCall> {
    let answered: HashSet<&str> = messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .filter(move |c| !answered.contains(c.id.as_str()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "terminal".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn unanswered_calls_get_interrupted_results_in_place() {
        let (a, b) = (call("a"), call("b"));
        let mut messages = vec![
            Message::user("go"),
            Message::assistant("", vec![a.clone(), b.clone()]),
            Message::tool_result(&a, "done", false),
        ];
        assert_eq!(answer_dangling_calls(&mut messages), 1);
        assert_eq!(messages.len(), 4);
        assert_eq!(messages[3].tool_call_id.as_deref(), Some("b"));
        assert!(messages[3].is_error && messages[3].content.starts_with("interrupted"));
        assert_eq!(answer_dangling_calls(&mut messages), 0);
    }

    #[test]
    fn a_dangling_call_in_the_middle_is_answered_before_later_messages() {
        let (a, b) = (call("a"), call("b"));
        let mut messages = vec![
            Message::user("go"),
            Message::assistant("", vec![a.clone()]),
            Message::user("later"),
            Message::assistant("", vec![b.clone()]),
        ];
        let repairs = plan_repairs(&messages, |c| {
            (c.id == "b").then(|| ("kept result".to_owned(), false))
        });
        assert_eq!(repairs.len(), 2);
        assert_eq!(repairs[0].after, 1);
        assert_eq!(repairs[1].after, 3);
        apply_repairs(&mut messages, &repairs);
        let ids: Vec<Option<&str>> = messages.iter().map(|m| m.tool_call_id.as_deref()).collect();
        assert_eq!(ids, vec![None, None, Some("a"), None, None, Some("b")]);
        assert_eq!(messages[5].content, "kept result");
        assert!(!messages[5].is_error);
        assert!(plan_repairs(&messages, |_| None).is_empty());
    }

    fn record(id: &str, background: bool, status: &str, result: Option<&str>) -> AgentRecord {
        AgentRecord {
            id: id.into(),
            parent_agent_id: Some("root".into()),
            parent_session_id: "s".into(),
            root_session_id: "s".into(),
            session_id: format!("child-{id}"),
            depth: 1,
            role: "leaf".into(),
            goal: "g".into(),
            context: None,
            background,
            status: herald_protocol::AgentStatus::parse(status).unwrap(),
            exit_reason: (status == "completed").then_some(herald_protocol::ExitReason::Completed),
            result: result.map(str::to_owned),
            error: None,
            iterations: 2,
            tokens: herald_protocol::TokenTotals::default(),
            cost_usd: Some(0.0),
            usage: herald_protocol::UsageTotals::default(),
            tree_usage: None,
            model: "m".into(),
            created_at: 0,
            started_at: None,
            ended_at: None,
            delivered: false,
            spec: None,
            call_id: Some("c".into()),
        }
    }

    #[test]
    fn a_delegate_result_rebuilt_from_the_journal_keeps_finished_children() {
        let (text, is_error) = delegate_result_from_journal(&[
            record("a", false, "completed", Some("found it")),
            record("b", false, "running", None),
        ]);
        assert!(!is_error);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let results = value["results"].as_array().unwrap();
        assert_eq!(results[0]["summary"], "found it");
        assert_eq!(results[0]["status"], "completed");
        assert_eq!(results[1]["status"], "interrupted");
        // Nothing finished: the call failed as a whole.
        let (_, is_error) = delegate_result_from_journal(&[record("b", false, "running", None)]);
        assert!(is_error);
        // Background children were dispatched; they restart on their own.
        let (text, _) = delegate_result_from_journal(&[record("c", true, "running", None)]);
        assert!(
            text.contains("\"dispatched\"") && text.contains("\"c\""),
            "{text}"
        );
    }

    #[test]
    fn complete_history_is_untouched() {
        let a = call("a");
        let mut messages = vec![
            Message::user("go"),
            Message::assistant("", vec![a.clone()]),
            Message::tool_result(&a, "ok", false),
            Message::assistant("fine", vec![]),
        ];
        let before = messages.clone();
        assert_eq!(answer_dangling_calls(&mut messages), 0);
        assert_eq!(messages, before);
    }
}
