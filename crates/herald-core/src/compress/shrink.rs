//! The cheap first step of compression: shortening large tool outputs that
//! are no longer recent. Old file dumps and build logs are usually the bulk
//! of a long conversation and the least useful part of it.

use std::ops::Range;

use herald_protocol::{Message, Role};

use super::SHORTENED_MARKER;

/// Characters an old tool output keeps (head and tail).
pub const OLD_OUTPUT_KEEP_CHARS: usize = 1_500;

/// Shortens every tool result in `range` longer than `keep` characters to its
/// head and tail around a marker saying how much was left out. Returns how
/// many results were shortened. Already-shortened results are left alone
/// unless `keep` is smaller than what they hold now.
pub fn shorten_tool_outputs(messages: &mut [Message], range: Range<usize>, keep: usize) -> usize {
    let end = range.end.min(messages.len());
    let mut shortened = 0;
    for message in &mut messages[range.start.min(end)..end] {
        if message.role != Role::Tool {
            continue;
        }
        if let Some(short) = shorten(&message.content, keep, SHORTENED_MARKER) {
            message.content = short;
            shortened += 1;
        }
    }
    shortened
}

/// Cuts every message in `range` (any role) to at most `keep` characters of
/// content. The last resort when even the shortened history is too large for
/// the summary request; tool calls and their ids are untouched, so pairing
/// holds.
pub fn cap_contents(messages: &mut [Message], range: Range<usize>, keep: usize) {
    let end = range.end.min(messages.len());
    for message in &mut messages[range.start.min(end)..end] {
        if let Some(short) = shorten(&message.content, keep, CAPPED_MARKER) {
            message.content = short;
        }
    }
}

/// Stands where a capped message (any role) lost its middle.
const CAPPED_MARKER: &str = "[herald] text shortened by context compaction";

/// The shortened form of `text` with `marker` where the middle was, or
/// `None` when it already fits.
fn shorten(text: &str, keep: usize, marker: &str) -> Option<String> {
    let total = text.chars().count();
    // The marker costs ~90 characters; cutting less than that gains nothing.
    if total <= keep + 200 {
        return None;
    }
    let head_chars = keep * 2 / 3;
    let tail_chars = keep - head_chars;
    let byte_at = |n: usize| text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
    let head = &text[..byte_at(head_chars)];
    let tail = &text[byte_at(total - tail_chars)..];
    Some(format!(
        "{head}\n{marker}: {} of {total} characters left out.\n{tail}",
        total - head_chars - tail_chars
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_protocol::ToolCall;

    #[test]
    fn only_large_tool_results_in_range_are_shortened() {
        let c = ToolCall {
            id: "c1".into(),
            name: "terminal".into(),
            arguments: "{}".into(),
        };
        let big = format!("HEAD{}TAIL", "x".repeat(10_000));
        let mut messages = vec![
            Message::user(big.clone()),
            Message::assistant("", vec![c.clone()]),
            Message::tool_result(&c, big.clone(), false),
            Message::tool_result(&c, "small", false),
            Message::tool_result(&c, big.clone(), true),
        ];
        let n = shorten_tool_outputs(&mut messages, 0..4, 1_000);
        assert_eq!(n, 1);
        assert_eq!(messages[0].content, big, "user text is not a tool output");
        let short = &messages[2].content;
        assert!(short.starts_with("HEAD") && short.ends_with("TAIL"));
        assert!(short.contains(SHORTENED_MARKER) && short.contains("of 10008 characters"));
        assert!(short.chars().count() < 1_200);
        assert_eq!(messages[2].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(messages[3].content, "small");
        assert_eq!(messages[4].content, big, "outside the range");
        // Idempotent at the same size.
        assert_eq!(shorten_tool_outputs(&mut messages, 0..4, 1_000), 0);
    }

    #[test]
    fn capping_touches_every_role_but_keeps_calls() {
        let c = ToolCall {
            id: "c1".into(),
            name: "terminal".into(),
            arguments: "{\"command\":\"ls\"}".into(),
        };
        let mut messages = vec![
            Message::user("u".repeat(5_000)),
            Message::assistant("a".repeat(5_000), vec![c.clone()]),
            Message::tool_result(&c, "é".repeat(5_000), false),
        ];
        cap_contents(&mut messages, 0..3, 300);
        for m in &messages {
            assert!(m.content.chars().count() < 500, "{}", m.content.len());
        }
        assert_eq!(messages[1].tool_calls, vec![c]);
    }
}
