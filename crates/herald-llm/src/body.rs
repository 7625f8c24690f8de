//! Request bodies built from cached message encodings.
//!
//! A conversation only grows between two requests, so the bytes of its old
//! messages do not change (the testkit checks that prefix on every request).
//! [`BodyCache`] keeps the encoded body of the previous request and, for the
//! next one, re-encodes only what is new: the request costs the new messages,
//! not the whole conversation, and the buffer is reused instead of being
//! allocated (and page-faulted) again each turn.
//!
//! Each cached message keeps a fingerprint, and the first message whose
//! fingerprint, or whose segment boundaries, differ (a compaction, a
//! rewind, a steered tool result) is where re-encoding starts. The
//! fingerprint reads only the ends of a text, so a caller that replaces
//! its conversation also calls [`BodyCache::forget`]. Debug builds also encode every body
//! from scratch and compare the two, so every test checks the cache.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use herald_protocol::{Message, Reasoning, Role};

use crate::ChatRequest;

/// How one wire API writes a request body, in pieces the cache can keep.
///
/// A body is `head`, then one segment per group of messages, then `]}`.
/// A segment's bytes may depend only on its own messages, on the messages
/// before it, and on what [`Wire::boundary_flag`] reports about the one
/// after it.
pub(crate) trait Wire {
    /// Everything before the first history message, ending inside the
    /// `messages` array.
    fn head(&self, req: &ChatRequest<'_>, out: &mut Vec<u8>) -> Result<(), serde_json::Error>;

    /// The end (exclusive) of the segment starting at `start`.
    fn segment_end(&self, messages: &[Message], start: usize) -> usize;

    /// Whatever the segment ending at `end` wrote depending on the message
    /// at `end` (the OpenAI image message after a run of tool results).
    fn boundary_flag(&self, messages: &[Message], end: usize) -> bool;

    /// Writes `messages[start..end]`; `last` when it ends the request.
    fn segment(
        &self,
        messages: &[Message],
        start: usize,
        end: usize,
        last: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error>;

    /// Whether the last segment is written as any other (Anthropic marks
    /// the newest message as a cache breakpoint, so its bytes change once
    /// another message follows).
    fn last_is_plain(&self) -> bool;
}

/// Writes a whole body with no cache.
pub(crate) fn encode_full(
    wire: &dyn Wire,
    req: &ChatRequest<'_>,
) -> Result<Vec<u8>, serde_json::Error> {
    let messages = req.messages;
    let mut out = Vec::with_capacity(
        4096 + req.system.len()
            + req.tools.json.len()
            + messages.iter().map(|m| m.content.len() + 64).sum::<usize>(),
    );
    wire.head(req, &mut out)?;
    let mut start = 0;
    while start < messages.len() {
        let end = wire.segment_end(messages, start);
        wire.segment(messages, start, end, end == messages.len(), &mut out)?;
        start = end;
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

/// The encoded request bodies of one conversation, reused from request to
/// request (see the module docs). One per agent: a conversation's messages
/// are its own. Requests of another conversation, or of another provider
/// after a fallback, still get correct bodies; they only start over.
#[derive(Debug, Default)]
pub struct BodyCache {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The previous body: head, cached segments, then bytes to drop.
    buf: Arc<Vec<u8>>,
    head_len: usize,
    /// Scratch space for the head of the next request.
    head: Vec<u8>,
    segments: Vec<Segment>,
    /// Fingerprint of each message the cached segments cover.
    prints: Vec<u64>,
    /// Segments encoded so far (what the cache saves is what it does not
    /// add here).
    written: u64,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    /// End (exclusive) of its messages; it starts where the one before ends.
    end: usize,
    /// End of its bytes in the buffer.
    bytes_end: usize,
    flag: bool,
}

/// The buffer handed to the HTTP client without a copy; the cache gets it
/// back for the next request once the request has let go of it.
struct SharedBody(Arc<Vec<u8>>);

impl AsRef<[u8]> for SharedBody {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl BodyCache {
    /// Drops what is cached: the conversation was replaced (a compaction,
    /// a rewind). The fingerprints would notice most replacements, but not
    /// a message rewritten to the same length in its middle.
    pub fn forget(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        *state = State::default();
    }

    /// The body for `req`, re-encoding only what changed since the last one.
    pub(crate) fn encode(
        &self,
        wire: &dyn Wire,
        req: &ChatRequest<'_>,
    ) -> Result<Bytes, serde_json::Error> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let body = match state.encode(wire, req) {
            Ok(()) => Bytes::from_owner(SharedBody(Arc::clone(&state.buf))),
            Err(err) => {
                *state = State::default();
                return Err(err);
            }
        };
        drop(state);
        #[cfg(debug_assertions)]
        {
            let fresh = encode_full(wire, req)?;
            if body[..] != fresh[..] {
                let at = body
                    .iter()
                    .zip(fresh.iter())
                    .position(|(a, b)| a != b)
                    .unwrap_or(body.len().min(fresh.len()));
                let from = at.saturating_sub(300);
                panic!(
                    "the cached request body differs from a fresh encoding at byte {at} (of {} / {}):\ncached: …{}\nfresh:  …{}",
                    body.len(),
                    fresh.len(),
                    String::from_utf8_lossy(&body[from..(at + 300).min(body.len())]),
                    String::from_utf8_lossy(&fresh[from..(at + 300).min(fresh.len())])
                );
            }
        }
        Ok(body)
    }
}

impl State {
    fn encode(&mut self, wire: &dyn Wire, req: &ChatRequest<'_>) -> Result<(), serde_json::Error> {
        let messages = req.messages;
        self.head.clear();
        wire.head(req, &mut self.head)?;
        // A clone only when the previous request still holds the buffer.
        let buf = Arc::make_mut(&mut self.buf);
        if self.head_len == 0 || buf.get(..self.head_len) != Some(&self.head[..]) {
            buf.clear();
            buf.extend_from_slice(&self.head);
            self.head_len = self.head.len();
            self.segments.clear();
            self.prints.clear();
        }

        // Keep the segments whose messages and boundaries are unchanged.
        let mut kept = 0;
        let mut start = 0;
        'segments: for segment in &self.segments {
            if segment.end > messages.len()
                || wire.segment_end(messages, start) != segment.end
                || wire.boundary_flag(messages, segment.end) != segment.flag
            {
                break;
            }
            for (message, print) in messages[start..segment.end]
                .iter()
                .zip(&self.prints[start..segment.end])
            {
                if fingerprint(message) != *print {
                    break 'segments;
                }
            }
            kept += 1;
            start = segment.end;
        }
        self.segments.truncate(kept);
        self.prints.truncate(start);
        buf.truncate(self.segments.last().map_or(self.head_len, |s| s.bytes_end));

        while start < messages.len() {
            let end = wire.segment_end(messages, start);
            let last = end == messages.len();
            wire.segment(messages, start, end, last, buf)?;
            self.written += 1;
            if !last || wire.last_is_plain() {
                self.segments.push(Segment {
                    end,
                    bytes_end: buf.len(),
                    flag: wire.boundary_flag(messages, end),
                });
                self.prints
                    .extend(messages[start..end].iter().map(fingerprint));
            }
            start = end;
        }
        buf.extend_from_slice(b"]}");
        Ok(())
    }
}

/// A cheap fingerprint of everything a message's encoding depends on:
/// sizes, the ends of its text and arguments, its ids and flags, and where
/// its text lives (a message put in the place of another has its own
/// allocation). O(1) in the size of the message.
fn fingerprint(message: &Message) -> u64 {
    fn ends(text: &str, hasher: &mut impl Hasher) {
        let bytes = text.as_bytes();
        bytes.len().hash(hasher);
        let n = bytes.len().min(32);
        hasher.write(&bytes[..n]);
        hasher.write(&bytes[bytes.len() - n..]);
    }
    let mut hasher = FoldHasher::default();
    let role: u8 = match message.role {
        Role::System => 0,
        Role::User => 1,
        Role::Assistant => 2,
        Role::Tool => 3,
    };
    hasher.write_u8(role);
    hasher.write_usize(message.content.as_ptr() as usize);
    ends(&message.content, &mut hasher);
    message.tool_calls.len().hash(&mut hasher);
    for call in &message.tool_calls {
        call.id.hash(&mut hasher);
        call.name.hash(&mut hasher);
        ends(&call.arguments, &mut hasher);
    }
    message.tool_call_id.hash(&mut hasher);
    message.tool_name.hash(&mut hasher);
    message.is_error.hash(&mut hasher);
    message.images.len().hash(&mut hasher);
    for image in &message.images {
        image.mime_type.hash(&mut hasher);
        ends(&image.data, &mut hasher);
    }
    message.reasoning.len().hash(&mut hasher);
    for piece in &message.reasoning {
        match piece {
            Reasoning::Thinking {
                thinking,
                signature,
            } => {
                ends(thinking, &mut hasher);
                ends(signature, &mut hasher);
            }
            Reasoning::RedactedThinking { data } => ends(data, &mut hasher),
            Reasoning::Text { text } => ends(text, &mut hasher),
        }
    }
    hasher.finish()
}

/// A fast hasher for [`fingerprint`], which runs for every message of every
/// request: SipHash (the default) cost about 2% of a 60-turn run's
/// instructions there. Multiply-rotate over 8-byte words, as rustc's
/// FxHasher; not collision-resistant against chosen input, which a
/// fingerprint does not need (its inputs include where the text lives, and
/// debug builds check every cached body against a fresh encoding).
#[derive(Default)]
struct FoldHasher(u64);

impl FoldHasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for FoldHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // The length keeps "ab" and "ab\0" apart.
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::types::{golden_history, golden_specs, image_history};
    use crate::{EncodedTools, ReasoningConfig};
    use herald_protocol::ToolCall;

    impl BodyCache {
        fn written(&self) -> u64 {
            self.state.lock().unwrap().written
        }
    }

    /// A long conversation of every shape: text turns, parallel calls,
    /// errors, empty replies and tool results with images.
    fn long_history() -> Vec<Message> {
        let mut all = Vec::new();
        for round in 0..6 {
            for mut m in golden_history().into_iter().chain(image_history()) {
                m.content = format!("{}{round}", m.content);
                for call in &mut m.tool_calls {
                    call.id = format!("{}_{round}", call.id);
                }
                if let Some(id) = &mut m.tool_call_id {
                    id.push_str(&format!("_{round}"));
                }
                all.push(m);
            }
        }
        all
    }

    struct Wires {
        reasoning: ReasoningConfig,
        tools: EncodedTools,
        anthropic_tools: EncodedTools,
    }

    impl Wires {
        fn new() -> Self {
            Self {
                reasoning: ReasoningConfig::default(),
                tools: crate::openai::encode_tools(&golden_specs()),
                anthropic_tools: crate::anthropic::encode_tools(&golden_specs()),
            }
        }
        fn openai(&self) -> crate::openai::Wire<'_> {
            crate::openai::Wire {
                model: "m",
                max_tokens: Some(100),
                images: true,
                reasoning: &self.reasoning,
            }
        }
        fn anthropic(&self) -> crate::anthropic::Wire<'_> {
            crate::anthropic::Wire {
                model: "claude",
                max_tokens: 1024,
                images: true,
                reasoning: &self.reasoning,
            }
        }
    }

    fn request<'a>(messages: &'a [Message], tools: &'a EncodedTools) -> ChatRequest<'a> {
        ChatRequest {
            system: "sys",
            messages,
            tools,
            forbid_tool_calls: false,
        }
    }

    /// Encodes with the cache and checks the bytes against a fresh encoding.
    fn check(cache: &BodyCache, wire: &dyn Wire, req: &ChatRequest<'_>) -> Bytes {
        let body = cache.encode(wire, req).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&body),
            String::from_utf8_lossy(&encode_full(wire, req).unwrap())
        );
        body
    }

    #[test]
    fn fingerprints_tell_apart_what_the_encoding_depends_on() {
        let hash = |bytes: &[u8]| {
            let mut h = FoldHasher::default();
            h.write(bytes);
            h.finish()
        };
        assert_ne!(hash(b"ab"), hash(b"ab\0"));
        assert_ne!(hash(b"12345678"), hash(b"12345679"));
        assert_ne!(hash(b""), hash(b"\0"));
        let mut message = Message::user("the same text, read twice");
        let before = fingerprint(&message);
        assert_eq!(
            fingerprint(&message),
            before,
            "the same message, the same print"
        );
        // A copy lives elsewhere: another print, so the copy is re-encoded.
        assert_ne!(fingerprint(&message.clone()), before);
        message.content.push('!');
        assert_ne!(fingerprint(&message), before);
        let mut flagged = Message::user("x");
        let unflagged = fingerprint(&flagged);
        flagged.is_error = true;
        assert_ne!(fingerprint(&flagged), unflagged);
    }

    #[test]
    fn a_growing_openai_conversation_encodes_each_message_once() {
        let wires = Wires::new();
        let history = long_history();
        let cache = BodyCache::default();
        // A request wherever an agent makes one: never inside a run of results.
        for n in 0..=history.len() {
            if history.get(n).is_none_or(|m| m.role != Role::Tool) {
                check(
                    &cache,
                    &wires.openai(),
                    &request(&history[..n], &wires.tools),
                );
            }
        }
        assert_eq!(cache.written(), history.len() as u64);
    }

    #[test]
    fn a_growing_anthropic_conversation_encodes_each_turn_at_most_twice() {
        let wires = Wires::new();
        let history = long_history();
        let turns = {
            let mut n = 0;
            let mut start = 0;
            while start < history.len() {
                start = crate::anthropic::tests_turn_end(&history, start);
                n += 1;
            }
            n
        };
        let cache = BodyCache::default();
        // A request after each complete turn, as an agent makes them.
        let mut end = 0;
        while end < history.len() {
            end = crate::anthropic::tests_turn_end(&history, end);
            check(
                &cache,
                &wires.anthropic(),
                &request(&history[..end], &wires.anthropic_tools),
            );
        }
        // Each turn once as the newest (with the cache breakpoint) and once
        // after it (without).
        assert!(
            cache.written() <= 2 * turns,
            "{} > 2 * {turns}",
            cache.written()
        );
    }

    #[test]
    fn a_changed_or_shortened_history_is_encoded_again_from_the_change() {
        let wires = Wires::new();
        let openai = wires.openai();
        let anthropic = wires.anthropic();
        for (wire, tools) in [
            (&openai as &dyn Wire, &wires.tools),
            (&anthropic as &dyn Wire, &wires.anthropic_tools),
        ] {
            let cache = BodyCache::default();
            let mut history = long_history();
            check(&cache, wire, &request(&history, tools));
            // A steered tool result: text appended to a sent message.
            let at = history.iter().rposition(|m| m.role == Role::Tool).unwrap();
            history[at].content.push_str("\n[the user says: stop]");
            check(&cache, wire, &request(&history, tools));
            // The same length, changed at its end.
            let text = &mut history[3].content;
            let last = text.pop().unwrap_or('x');
            text.push(if last == 'y' { 'z' } else { 'y' });
            check(&cache, wire, &request(&history, tools));
            // Replaced by a message of the same length and ends.
            let summary =
                |n: u32| Message::user(format!("{}{n}{}", "a".repeat(40), "b".repeat(40)));
            history[1] = summary(4);
            check(&cache, wire, &request(&history, tools));
            history[1] = summary(6);
            check(&cache, wire, &request(&history, tools));
            cache.forget();
            check(&cache, wire, &request(&history, tools));
            // A compaction: a shorter, different history.
            let mut compacted = vec![Message::user("[herald: summary] earlier work")];
            compacted.extend_from_slice(&history[history.len() - 7..]);
            check(&cache, wire, &request(&compacted, tools));
            // A rewind: a prefix of what was sent.
            check(&cache, wire, &request(&history[..10], tools));
            // Another head (forbidden tool calls, other tools).
            let mut forbidding = request(&history, tools);
            forbidding.forbid_tool_calls = true;
            check(&cache, wire, &forbidding);
            check(
                &cache,
                wire,
                &request(
                    &history,
                    &EncodedTools {
                        json: "[]".into(),
                        count: 0,
                    },
                ),
            );
        }
    }

    #[test]
    fn a_run_of_results_that_grows_moves_its_image_message() {
        let wires = Wires::new();
        let call = ToolCall {
            id: "call_z".into(),
            name: "screenshot".into(),
            arguments: "{}".into(),
        };
        let mut history = image_history();
        history.truncate(3); // ends with a result with an image
        let cache = BodyCache::default();
        let before = check(&cache, &wires.openai(), &request(&history, &wires.tools));
        assert!(String::from_utf8_lossy(&before).ends_with("}]}]}"));
        history.push(Message::tool_result(&call, "more", false));
        check(&cache, &wires.openai(), &request(&history, &wires.tools));
    }

    #[test]
    fn a_body_still_held_is_left_alone_and_a_released_one_is_reused() {
        let wires = Wires::new();
        let history = long_history();
        let cache = BodyCache::default();
        let held = check(
            &cache,
            &wires.openai(),
            &request(&history[..20], &wires.tools),
        );
        let copy = held.to_vec();
        let next = check(
            &cache,
            &wires.openai(),
            &request(&history[..12], &wires.tools),
        );
        assert_eq!(held.to_vec(), copy, "a body in flight was changed");
        assert_ne!(held.as_ptr(), next.as_ptr());
        let at = next.as_ptr();
        drop(held);
        drop(next);
        let again = check(
            &cache,
            &wires.openai(),
            &request(&history[..12], &wires.tools),
        );
        assert_eq!(again.as_ptr(), at, "the released buffer was not reused");
    }
}
