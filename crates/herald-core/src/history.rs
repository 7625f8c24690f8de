//! Keeps a stored conversation valid before it is replayed.

use std::collections::HashSet;

use herald_protocol::{Message, Role};

/// Answers every tool call that has no result (the process died while the
/// tool ran) with an "interrupted" result, inserted right after the last
/// existing result of that reply so calls and results stay paired. Returns
/// how many results were added.
pub fn answer_dangling_calls(messages: &mut Vec<Message>) -> usize {
    let mut added = 0;
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
                answered.insert(id.clone());
            }
            end += 1;
        }
        let missing: Vec<Message> = messages[i]
            .tool_calls
            .iter()
            .filter(|call| !answered.contains(&call.id))
            .map(|call| {
                Message::tool_result(
                    call,
                    "interrupted: herald stopped before this call finished; its effects are unknown, check before repeating it",
                    true,
                )
            })
            .collect();
        added += missing.len();
        let count = missing.len();
        messages.splice(end..end, missing);
        i = end + count;
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_protocol::ToolCall;

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
