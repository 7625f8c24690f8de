//! Makes an imported conversation one a provider accepts, counting each
//! repair: every tool call gets exactly one result right after its
//! assistant message (a missing one is answered as an error), results
//! without a call and duplicate results are dropped, empty user and
//! assistant messages are dropped, and a conversation that does not start
//! with the user gets a placeholder user message first.

use std::collections::HashSet;

use herald_protocol::{Message, Role, ToolCall};

use super::{Entry, Tally};

/// The result an unanswered call gets.
pub(crate) const NO_RESULT: &str =
    "(no result was recorded for this call in the imported transcript)";

/// The calls of the latest assistant message, and where their results go.
struct Group {
    /// Index in the output where the next result is inserted.
    anchor: usize,
    calls: Vec<ToolCall>,
    answered: HashSet<String>,
    at: Option<i64>,
}

/// Answers the calls of `group` that got no result.
fn close(group: Option<Group>, out: &mut Vec<Entry>, tally: &mut Tally) {
    let Some(mut group) = group else { return };
    for call in &group.calls {
        if !group.answered.contains(&call.id) {
            tally.add("tool call without a result (answered as an error)");
            let result = Message::tool_result(call, NO_RESULT, true);
            out.insert(group.anchor, Entry::new(result, group.at));
            group.anchor += 1;
        }
    }
}

/// The repaired conversation.
pub(crate) fn repair(entries: Vec<Entry>, tally: &mut Tally) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
    let mut group: Option<Group> = None;
    let mut seen: HashSet<String> = HashSet::new();
    for mut entry in entries {
        let message = &mut entry.message;
        match message.role {
            Role::Assistant => {
                close(group.take(), &mut out, tally);
                message.tool_calls.retain(|call| {
                    let fresh = seen.insert(call.id.clone());
                    if !fresh {
                        tally.add("tool call with a repeated id (dropped)");
                    }
                    fresh
                });
                if message.content.trim().is_empty() && message.tool_calls.is_empty() {
                    tally.add("empty assistant message (dropped)");
                    continue;
                }
                let calls = message.tool_calls.clone();
                let at = entry.at;
                out.push(entry);
                if !calls.is_empty() {
                    group = Some(Group {
                        anchor: out.len(),
                        calls,
                        answered: HashSet::new(),
                        at,
                    });
                }
            }
            Role::Tool => {
                let id = message.tool_call_id.clone().unwrap_or_default();
                let call = group
                    .as_ref()
                    .and_then(|g| g.calls.iter().find(|c| c.id == id))
                    .cloned();
                match (call, group.as_mut()) {
                    (Some(call), Some(g)) => {
                        if g.answered.insert(id) {
                            if message.tool_name.is_none() {
                                message.tool_name = Some(call.name.clone());
                            }
                            out.insert(g.anchor, entry);
                            g.anchor += 1;
                        } else {
                            tally.add("duplicate tool result (dropped)");
                        }
                    }
                    _ => tally.add("tool result without a matching call (dropped)"),
                }
            }
            Role::User | Role::System => {
                if message.content.trim().is_empty() && message.images.is_empty() {
                    tally.add("empty user message (dropped)");
                    continue;
                }
                out.push(entry);
            }
        }
    }
    close(group, &mut out, tally);
    // Some providers (Anthropic) refuse a conversation that does not start
    // with the user: a transcript cut before its first prompt gets one.
    if out.first().is_some_and(|e| e.message.role != Role::User) {
        tally.add("conversation not starting with a user message (placeholder added)");
        let at = out.first().and_then(|e| e.at);
        out.insert(0, Entry::new(Message::user(NO_START), at));
    }
    out
}

/// The user message put before a transcript that starts with the assistant.
pub(crate) const NO_START: &str =
    "(imported transcript: the conversation before this point was not in the file)";

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "terminal".into(),
            arguments: "{}".into(),
        }
    }

    fn entries(messages: Vec<Message>) -> Vec<Entry> {
        messages.into_iter().map(|m| Entry::new(m, None)).collect()
    }

    fn result(id: &str, text: &str) -> Message {
        Message {
            role: Role::Tool,
            content: text.into(),
            tool_call_id: Some(id.into()),
            ..Message::user("")
        }
    }

    #[test]
    fn calls_get_their_results_next_and_orphans_and_empties_go() {
        let mut tally = Tally::default();
        let out = repair(
            entries(vec![
                result("ghost", "orphan before any call"),
                Message::user("go"),
                Message::user("   "),
                Message::assistant("", vec![call("a"), call("b")]),
                Message::user("interjection"),
                result("a", "A"),
                result("a", "A again"),
                Message::assistant("", vec![]),
                Message::assistant("next", vec![call("a")]),
            ]),
            &mut tally,
        );
        let shape: Vec<(Role, &str, Option<&str>)> = out
            .iter()
            .map(|e| {
                (
                    e.message.role,
                    e.message.content.as_str(),
                    e.message.tool_call_id.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                (Role::User, "go", None),
                (Role::Assistant, "", None),
                (Role::Tool, "A", Some("a")),
                (Role::Tool, NO_RESULT, Some("b")),
                (Role::User, "interjection", None),
                (Role::Assistant, "next", None),
            ]
        );
        assert_eq!(out[2].message.tool_name.as_deref(), Some("terminal"));
        assert!(out[3].message.is_error);
        assert!(out[5].message.tool_calls.is_empty());
        let t = &tally.0;
        assert_eq!(t["tool result without a matching call (dropped)"], 1);
        assert_eq!(t["duplicate tool result (dropped)"], 1);
        assert_eq!(t["empty user message (dropped)"], 1);
        assert_eq!(t["empty assistant message (dropped)"], 1);
        assert_eq!(t["tool call without a result (answered as an error)"], 1);
        assert_eq!(t["tool call with a repeated id (dropped)"], 1);
    }

    #[test]
    fn a_conversation_starting_with_the_assistant_gets_a_user_message_first() {
        let mut tally = Tally::default();
        let out = repair(
            entries(vec![
                Message::assistant("so far", vec![]),
                Message::user("go on"),
            ]),
            &mut tally,
        );
        assert_eq!(out[0].message.role, Role::User);
        assert_eq!(out[0].message.content, NO_START);
        assert_eq!(out.len(), 3);
        assert_eq!(tally.0.len(), 1);
    }

    #[test]
    fn a_valid_conversation_is_unchanged() {
        let c = call("x");
        let messages = vec![
            Message::user("hi"),
            Message::assistant("", vec![c.clone()]),
            Message::tool_result(&c, "ok", false),
            Message::assistant("done", vec![]),
        ];
        let mut tally = Tally::default();
        let out = repair(entries(messages.clone()), &mut tally);
        assert_eq!(
            out.into_iter().map(|e| e.message).collect::<Vec<_>>(),
            messages
        );
        assert!(tally.0.is_empty());
    }
}
