//! Request bodies built from cached message encodings.
//!
//! A conversation only grows between two requests, so the bytes of its old
//! messages do not change (the testkit checks that prefix on every request).
//! [`BodyCache`] keeps the encoded body of the previous request and, for the
//! next one, re-encodes only what is new: the request costs the new messages,
//! not the whole conversation, and the buffer is reused instead of being
//! allocated (and page-faulted) again each turn.
//!
//! The cache trusts its owner to say when the conversation changed other
//! than by appending (a compaction, a rewind, a message removed): each
//! [`BodyCache::history_changed`] moves the cache to a new generation, and
//! a body of a new generation is encoded from scratch. Debug builds also
//! encode every body from scratch and compare the two, so every test checks
//! that the owner said so.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use herald_protocol::Message;

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

thread_local! {
    /// Scratch space for the head of the request being encoded.
    static HEAD: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[derive(Debug, Default)]
struct State {
    /// The previous body: head, cached segments, then bytes to drop.
    buf: Arc<Vec<u8>>,
    head_len: usize,
    segments: Vec<Segment>,
    /// Bumped by [`BodyCache::history_changed`].
    generation: u64,
    /// The generation the cached segments were encoded at.
    encoded_generation: u64,
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
    /// Says the conversation changed other than by appending messages (a
    /// compaction, a rewind, a message removed or rewritten): the next body
    /// is encoded from scratch. Appending needs no call.
    pub fn history_changed(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.generation += 1;
    }

    /// How many times [`BodyCache::history_changed`] was called.
    pub fn generation(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .generation
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
                state.clear();
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
    /// Drops the cached segments (the head and buffer start over too).
    fn clear(&mut self) {
        self.head_len = 0;
        self.segments.clear();
    }

    fn encode(&mut self, wire: &dyn Wire, req: &ChatRequest<'_>) -> Result<(), serde_json::Error> {
        let messages = req.messages;
        if self.encoded_generation != self.generation {
            self.clear();
            self.encoded_generation = self.generation;
        }
        // The head is written into the thread's scratch buffer, not one
        // per agent: 10,000 children each keeping a copy of their tool list
        // here held 110 MB, and a fresh buffer per request cost more CPU.
        let buf = HEAD.with_borrow_mut(|head| {
            head.clear();
            wire.head(req, head)?;
            // A clone only when the previous request still holds the buffer.
            let buf = Arc::make_mut(&mut self.buf);
            if self.head_len == 0 || buf.get(..self.head_len) != Some(&head[..]) {
                buf.clear();
                buf.extend_from_slice(head);
                self.head_len = head.len();
                self.segments.clear();
            }
            Ok::<_, serde_json::Error>(buf)
        })?;

        // Keep the segments whose boundaries are unchanged: within one
        // generation the messages they cover are as they were encoded.
        let mut kept = 0;
        let mut start = 0;
        for segment in &self.segments {
            if segment.end > messages.len()
                || wire.segment_end(messages, start) != segment.end
                || wire.boundary_flag(messages, segment.end) != segment.flag
            {
                break;
            }
            kept += 1;
            start = segment.end;
        }
        self.segments.truncate(kept);
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
            }
            start = end;
        }
        buf.extend_from_slice(b"]}");
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::types::{golden_history, golden_specs, image_history};
    use crate::{EncodedTools, ReasoningConfig};
    use herald_protocol::{Role, ToolCall};

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
            // A sent tool result rewritten: a new generation.
            let at = history.iter().rposition(|m| m.role == Role::Tool).unwrap();
            history[at].content.push_str("\n[the user says: stop]");
            cache.history_changed();
            check(&cache, wire, &request(&history, tools));
            // Replaced by a message of the same length.
            history[1] = Message::user(format!("{}4{}", "a".repeat(40), "b".repeat(40)));
            cache.history_changed();
            check(&cache, wire, &request(&history, tools));
            // A compaction: a shorter, different history.
            let mut compacted = vec![Message::user("[herald: summary] earlier work")];
            compacted.extend_from_slice(&history[history.len() - 7..]);
            cache.history_changed();
            check(&cache, wire, &request(&compacted, tools));
            // A rewind: a prefix of what was sent.
            cache.history_changed();
            check(&cache, wire, &request(&history[..10], tools));
            // Growing again from there reuses what the rewind kept.
            let before = cache.written();
            check(&cache, wire, &request(&history[..12], tools));
            // At most the newest segment again (Anthropic marks it) and the two new.
            assert!(
                cache.written() - before <= 3,
                "the kept prefix was encoded again"
            );
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
