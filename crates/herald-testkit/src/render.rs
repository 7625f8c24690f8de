//! Pieces shared by both wire renderers: what to render, how to cut text into
//! deltas, tool call ids, error types, and the rendered event list.

use bytes::Bytes;

use crate::script::Reply;
use crate::usage::TokenUsage;

/// Everything a wire renderer needs to produce one reply.
#[derive(Debug, Clone)]
pub(crate) struct RenderContext<'a> {
    /// The scripted reply.
    pub reply: &'a Reply,
    /// Model name echoed back.
    pub model: &'a str,
    /// Conversation key (hashed into tool call ids).
    pub conversation: &'a str,
    /// Number of assistant messages in the request.
    pub turn: usize,
    /// Token numbers to report.
    pub usage: TokenUsage,
    /// Server-wide response number, for response ids.
    pub serial: u64,
}

impl RenderContext<'_> {
    /// Id of tool call `index`: unique per conversation and turn.
    pub fn call_id(&self, prefix: &str, index: usize) -> String {
        // The serial keeps ids unique when a turn number repeats (after a
        // compaction shortens the history), as real providers' ids are.
        format!(
            "{prefix}_{}_{index}_{:08x}_{}",
            self.turn,
            fnv1a(self.conversation),
            self.serial
        )
    }
}

/// A rendered SSE reply: `events[..body_end]` precede the terminal events
/// (finish reason, usage, end marker).
#[derive(Debug, Clone, Default)]
pub(crate) struct SseEvents {
    /// Each SSE event, already framed.
    pub events: Vec<Bytes>,
    /// Index of the first terminal event.
    pub body_end: usize,
}

impl SseEvents {
    /// Where a truncated or aborted stream stops: about half of the body events,
    /// at least one event, never a terminal one (unless there is no body).
    pub fn cut_point(&self) -> usize {
        (self.body_end.div_ceil(2)).max(1).min(self.events.len())
    }
}

/// 32-bit FNV-1a hash.
fn fnv1a(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Splits `s` into pieces of `size` characters (never inside a character).
pub(crate) fn split_chars(s: &str, size: usize) -> Vec<&str> {
    let size = size.max(1);
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (i, _) in s.char_indices() {
        if count == size {
            pieces.push(&s[start..i]);
            start = i;
            count = 0;
        }
        count += 1;
    }
    if start < s.len() {
        pieces.push(&s[start..]);
    }
    pieces
}

/// Text deltas: several pieces of 4 to 64 characters.
pub(crate) fn text_pieces(s: &str) -> Vec<&str> {
    split_chars(s, (s.chars().count() / 4).clamp(4, 64))
}

/// Argument fragments of about 7 characters.
pub(crate) fn arg_pieces(s: &str) -> Vec<&str> {
    split_chars(s, 7)
}

/// The conventional error `type` for an HTTP status.
pub(crate) fn error_type(code: u16) -> &'static str {
    match code {
        400 | 413 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_respects_chars() {
        assert_eq!(split_chars("abcdefg", 3), vec!["abc", "def", "g"]);
        assert_eq!(split_chars("ééé", 2), vec!["éé", "é"]);
        assert!(split_chars("", 3).is_empty());
        assert_eq!(text_pieces("hello world, how are you").len(), 4);
        assert_eq!(arg_pieces("{\"a\":12345}").len(), 2);
    }

    #[test]
    fn call_ids_differ_by_turn_index_and_conversation() {
        let reply = Reply::text("");
        let mut ctx = RenderContext {
            reply: &reply,
            model: "m",
            conversation: "a",
            turn: 1,
            usage: TokenUsage::default(),
            serial: 0,
        };
        let a = ctx.call_id("call", 0);
        assert_ne!(a, ctx.call_id("call", 1));
        ctx.conversation = "b";
        assert_ne!(a, ctx.call_id("call", 0));
        assert!(a.starts_with("call_1_0_"));
        ctx.conversation = "a";
        ctx.serial = 1;
        assert_ne!(a, ctx.call_id("call", 0), "same turn, later request");
    }

    #[test]
    fn cut_point_stays_in_body() {
        let ev = SseEvents {
            events: vec![Bytes::new(); 7],
            body_end: 4,
        };
        assert_eq!(ev.cut_point(), 2);
        let ev = SseEvents {
            events: vec![Bytes::new(); 3],
            body_end: 0,
        };
        assert_eq!(ev.cut_point(), 1);
    }
}
