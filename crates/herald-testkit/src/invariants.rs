//! The two invariants every request must keep: tool calls paired with exactly
//! one result, and each request of a conversation extending the previous one.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::canonical::{
    canonical_message, canonical_system, same_ignoring_cache_control, strip_cache_control,
};
use crate::record::RecordedRequest;
use crate::script::excerpt;

use crate::normalize::{Api, RequestView};

/// Tool pairing violations inside one request (empty when it is fine): every
/// assistant tool call id has exactly one result, results come after their call
/// and before the next assistant message, no result lacks a call, and no call
/// id repeats. For OpenAI, a `tool` message must also directly follow the
/// assistant message with the calls or another `tool` message (the API
/// refuses anything in between, such as a `user` message with images).
pub fn check_pairing(view: &RequestView) -> Vec<String> {
    let mut errors = Vec::new();
    let mut pending: Vec<(String, usize)> = Vec::new();
    let mut calls_seen: HashMap<&str, usize> = HashMap::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for (i, m) in view.messages.iter().enumerate() {
        // An OpenAI result separated from its calls (the other errors
        // below cover results without a pending call).
        let misplaced = match (view.api, i.checked_sub(1)) {
            (Api::OpenAi, Some(prev)) if m.role == "tool" => {
                let before = &view.messages[prev];
                let follows = before.role == "tool"
                    || (before.role == "assistant" && !before.tool_calls.is_empty());
                (!follows).then_some(before.role.as_str())
            }
            _ => None,
        };
        if m.role == "assistant" {
            for (id, at) in pending.drain(..) {
                errors.push(format!(
                    "tool call {id:?} (message {at}) has no result before the next assistant message {i}"
                ));
            }
            for (id, name, _) in &m.tool_calls {
                if id.is_empty() {
                    errors.push(format!(
                        "message {i}: tool call to {name:?} has an empty id"
                    ));
                }
                if let Some(first) = calls_seen.insert(id, i) {
                    errors.push(format!(
                        "message {i}: duplicate tool call id {id:?} (first used in message {first})"
                    ));
                } else {
                    pending.push((id.clone(), i));
                }
            }
            if !m.tool_results.is_empty() {
                errors.push(format!(
                    "message {i}: an assistant message carries tool results"
                ));
            }
        }
        for (id, _) in &m.tool_results {
            if let Some(pos) = pending.iter().position(|(p, _)| p == id) {
                pending.remove(pos);
                answered.insert(id);
                if let Some(before) = misplaced {
                    errors.push(format!(
                        "message {i}: the result for tool call {id:?} follows a {before} message, not the assistant message with the calls or another tool message"
                    ));
                }
            } else if answered.contains(id.as_str()) {
                errors.push(format!(
                    "message {i}: duplicate result for tool call {id:?}"
                ));
            } else if let Some(at) = calls_seen.get(id.as_str()) {
                errors.push(format!(
                    "message {i}: result for tool call {id:?} (message {at}) comes after a later assistant message"
                ));
            } else {
                errors.push(format!(
                    "message {i}: result for unknown tool call {id:?} (no matching call before it)"
                ));
            }
        }
    }
    for (id, at) in pending {
        errors.push(format!(
            "tool call {id:?} (message {at}) has no result at the end of the request"
        ));
    }
    errors
}

fn tool_name(t: &Value) -> String {
    t.pointer("/function/name")
        .or_else(|| t.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string()
}

fn describe_tools_change(prev: &Value, cur: &Value) -> String {
    let empty = Vec::new();
    let p = prev.as_array().unwrap_or(&empty);
    let c = cur.as_array().unwrap_or(&empty);
    let pn: Vec<String> = p.iter().map(tool_name).collect();
    let cn: Vec<String> = c.iter().map(tool_name).collect();
    if pn != cn {
        return format!("tool list changed: was {pn:?}, now {cn:?}");
    }
    match p.iter().zip(c).position(|(a, b)| a != b) {
        Some(k) => format!("definition of tool {:?} changed", pn[k]),
        None => "tool list changed".to_string(),
    }
}

fn short(v: &Value) -> String {
    excerpt(&v.to_string(), 160)
}

/// Prefix-stability violations between two consecutive request bodies of one
/// conversation (empty when `cur` extends `prev`): the system prompt and the
/// full tool list are identical, and `prev`'s messages are a prefix of `cur`'s.
/// `cache_control` keys are ignored and string content equals one text block.
pub fn check_prefix(prev: &Value, cur: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let null = Value::Null;
    // Each part is compared without copies first (nearly always equal),
    // and in canonical form only when that finds a difference.
    let (raw_sys_p, raw_sys_c) = (
        prev.get("system").unwrap_or(&null),
        cur.get("system").unwrap_or(&null),
    );
    if !same_ignoring_cache_control(raw_sys_p, raw_sys_c) {
        let sys_p = canonical_system(raw_sys_p);
        let sys_c = canonical_system(raw_sys_c);
        if sys_p != sys_c {
            errors.push(format!(
                "system prompt changed: was {}, now {}",
                short(&sys_p),
                short(&sys_c)
            ));
        }
    }
    let (raw_tools_p, raw_tools_c) = (
        prev.get("tools").unwrap_or(&null),
        cur.get("tools").unwrap_or(&null),
    );
    if !same_ignoring_cache_control(raw_tools_p, raw_tools_c) {
        let tools_p = strip_cache_control(raw_tools_p);
        let tools_c = strip_cache_control(raw_tools_c);
        errors.push(describe_tools_change(&tools_p, &tools_c));
    }
    let empty = Vec::new();
    let mp = prev
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mc = cur
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    if let Some(k) = mp.iter().zip(mc).position(|(a, b)| {
        !same_ignoring_cache_control(a, b) && canonical_message(a) != canonical_message(b)
    }) {
        let is_system = |m: &Value| {
            matches!(
                m.get("role").and_then(Value::as_str),
                Some("system" | "developer")
            )
        };
        let what = if is_system(&mp[k]) || is_system(&mc[k]) {
            format!("system prompt changed (message {k})")
        } else {
            format!("message {k} changed")
        };
        errors.push(format!(
            "{what}: was {}, now {}",
            short(&canonical_message(&mp[k])),
            short(&canonical_message(&mc[k]))
        ));
    }
    if mp.len() > mc.len() {
        errors.push(format!(
            "history shrank from {} to {} messages",
            mp.len(),
            mc.len()
        ));
    }
    errors
}

/// Whether `text` marks a message herald rewrote during context compaction
/// (the summary, the summary request, a shortened output): it holds both
/// `[herald]` and the words `context compaction`.
pub fn is_compaction_text(text: &str) -> bool {
    text.contains("[herald]") && text.contains("context compaction")
}

/// Whether `cur` is a context compaction of `prev`, the one allowed exception
/// to prefix stability: the system prompt and the tool list are identical,
/// and the first message that differs is one marked by compaction (see
/// [`is_compaction_text`]), so the protected head before it is unchanged.
pub fn is_compaction(prev: &Value, cur: &Value) -> bool {
    let null = Value::Null;
    if canonical_system(prev.get("system").unwrap_or(&null))
        != canonical_system(cur.get("system").unwrap_or(&null))
        || strip_cache_control(prev.get("tools").unwrap_or(&null))
            != strip_cache_control(cur.get("tools").unwrap_or(&null))
    {
        return false;
    }
    let empty = Vec::new();
    let mp = prev
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mc = cur
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    mp.iter()
        .zip(mc)
        .map(|(a, b)| (canonical_message(a), canonical_message(b)))
        .find(|(a, b)| a != b)
        .is_some_and(|(_, changed)| is_compaction_text(&changed.to_string()))
}

/// Whether `cur` is a context compaction of `prev` whose summary came out
/// word for word the same as one `prev` already held at the same place:
/// system prompt and tool list identical, and the first message that differs
/// (or where `cur` ends, when it is a strict prefix of `prev`) comes after a
/// message of `cur` marked by compaction (not a system prompt that happens to
/// name it), so everything up to and including
/// that summary is unchanged. This happens when a compacted conversation is
/// compacted again and the new middle (the old summary and what followed
/// it) holds as many messages as the old one, with a model that answers
/// every summary request alike (a scripted one): the new history can even be
/// a prefix of the previous request. From the two bodies alone this cannot
/// be told apart from a history that lost its newest messages, so it counts
/// only when a summary request came between them (see [`is_allowed_rewrite`]).
fn is_repeated_compaction(prev: &Value, cur: &Value) -> bool {
    let null = Value::Null;
    if canonical_system(prev.get("system").unwrap_or(&null))
        != canonical_system(cur.get("system").unwrap_or(&null))
        || strip_cache_control(prev.get("tools").unwrap_or(&null))
            != strip_cache_control(cur.get("tools").unwrap_or(&null))
    {
        return false;
    }
    let empty = Vec::new();
    let mp = prev
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mc = cur
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let unchanged = mp
        .iter()
        .zip(mc)
        .take_while(|(a, b)| canonical_message(a) == canonical_message(b))
        .count();
    let is_system = |m: &Value| {
        matches!(
            m.get("role").and_then(Value::as_str),
            Some("system" | "developer")
        )
    };
    unchanged < mp.len()
        && mc[..unchanged]
            .iter()
            .any(|m| !is_system(m) && is_compaction_text(&canonical_message(m).to_string()))
}

/// Whether request `i` may rewrite the history of its predecessor `p` (of
/// the same conversation): it is a context compaction of it (see
/// [`is_compaction`]), or a compaction that repeated an earlier summary (see
/// [`is_repeated_compaction`]) after a summary request of the conversation
/// made between the two.
fn is_allowed_rewrite(requests: &[RecordedRequest], p: usize, i: usize, allow: Allow) -> bool {
    let (prev, cur) = (&requests[p].body, &requests[i].body);
    is_compaction(prev, cur)
        || (is_repeated_compaction(prev, cur)
            && requests[p + 1..i].iter().any(|r| {
                r.conversation == requests[i].conversation
                    && r.view().is_ok()
                    && is_summary_request(&r.body)
            }))
        || (allow.branches && is_branch(requests, i))
}

/// What a test allows beyond the two invariants. Everything else is still
/// checked on every request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allow {
    /// A request may branch off an earlier request of its conversation at
    /// a user turn (see [`is_branch`]): a rewind or a fork at a turn.
    pub branches: bool,
}

/// Whether request `i` starts a branch of its conversation: it ends with a
/// new user prompt, and everything before that prompt is, byte for byte
/// (`cache_control` aside), the history some earlier request of the
/// conversation sent before one of its user prompts, with the same system
/// prompt and tool list. So a rewound or forked conversation resends a
/// prefix the provider has already cached, and loses nothing before the
/// turn it branches at. A history that lost messages in the middle of a
/// turn, or that changed any earlier message, is still a violation.
pub fn is_branch(requests: &[RecordedRequest], i: usize) -> bool {
    let Some(cur) = requests.get(i) else {
        return false;
    };
    let Ok(view) = cur.view() else {
        return false;
    };
    let is_prompt =
        |m: &crate::normalize::NormMessage| m.role == "user" && m.tool_results.is_empty();
    if !view.messages.last().is_some_and(is_prompt) {
        return false;
    }
    let null = Value::Null;
    let empty = Vec::new();
    let body_messages = |body: &Value| {
        body.get("messages")
            .and_then(Value::as_array)
            .unwrap_or(&empty)
            .clone()
    };
    let mc = body_messages(&cur.body);
    let k = mc.len().saturating_sub(1);
    requests[..i].iter().any(|r| {
        if r.conversation != cur.conversation || is_side_request(&r.body) {
            return false;
        }
        let Ok(earlier) = r.view() else {
            return false;
        };
        let mp = body_messages(&r.body);
        k < mp.len()
            && earlier.messages.get(k).is_some_and(is_prompt)
            && canonical_system(r.body.get("system").unwrap_or(&null))
                == canonical_system(cur.body.get("system").unwrap_or(&null))
            && strip_cache_control(r.body.get("tools").unwrap_or(&null))
                == strip_cache_control(cur.body.get("tools").unwrap_or(&null))
            && mp[..k]
                .iter()
                .zip(&mc[..k])
                .all(|(a, b)| canonical_message(a) == canonical_message(b))
    })
}

/// Whether `body` is herald's summary request: a side request made during a
/// compaction whose last message (the instruction) carries the compaction
/// marker. Its answer never enters the conversation, so the request after it
/// continues from the request before it.
pub fn is_summary_request(body: &Value) -> bool {
    body.get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last())
        .is_some_and(|m| is_compaction_text(&canonical_message(m).to_string()))
}

/// Starts herald's memory flush instruction (herald-core `agent/flush.rs`).
pub const FLUSH_INSTRUCTION_PREFIX: &str = "[herald] Memory flush";

/// Whether `body` opens a memory flush: its last message holds the flush
/// instruction. Like a summary request it is a side request: when it gets
/// no reply (a failed or interrupted flush) herald withdraws the
/// instruction, so the request after it continues from the request before
/// it. (A flush that got a reply continues the conversation: its later
/// requests extend the one before the flush.)
pub fn is_flush_request(body: &Value) -> bool {
    body.get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last())
        .is_some_and(|m| {
            canonical_message(m)
                .to_string()
                .contains(FLUSH_INSTRUCTION_PREFIX)
        })
}

/// A request whose messages need not be a prefix of the next request's:
/// a summary request or the opening request of a memory flush.
fn is_side_request(body: &Value) -> bool {
    is_summary_request(body) || is_flush_request(body)
}

/// Walks the recorded requests in arrival order and calls `f(prev_index,
/// cur_index, violations)` for each follow-up request of a conversation.
/// A follow-up that is a context compaction of its predecessor (see
/// [`is_allowed_rewrite`]) is skipped: it is neither a violation nor counted. A
/// side request (a summary request, see [`is_summary_request`], or a flush
/// request, see [`is_flush_request`]) is checked against its predecessor but
/// is not the predecessor of the next request.
fn for_each_follow_up(
    requests: &[RecordedRequest],
    allow: Allow,
    mut f: impl FnMut(usize, usize, Vec<String>),
) {
    let mut last: HashMap<&str, usize> = HashMap::new();
    for (i, r) in requests.iter().enumerate() {
        if r.view().is_err() {
            continue;
        }
        if let Some(&p) = last.get(r.conversation.as_str()) {
            let errors = check_prefix(&requests[p].body, &r.body);
            if errors.is_empty() || !is_allowed_rewrite(requests, p, i, allow) {
                f(p, i, errors);
            }
        }
        if !is_side_request(&r.body) {
            last.insert(&r.conversation, i);
        }
    }
}

/// The pairing violations of request `i` alone, each naming the request.
fn pairing_of(requests: &[RecordedRequest], i: usize) -> Vec<String> {
    pairing_in(requests, i, &requests[i].view())
}

/// [`pairing_of`] with request `i`'s view already made.
fn pairing_in(
    requests: &[RecordedRequest],
    i: usize,
    view: &Result<RequestView, String>,
) -> Vec<String> {
    let r = &requests[i];
    match view {
        Ok(view) => check_pairing(view)
            .into_iter()
            .map(|e| {
                format!(
                    "request #{i} (conversation {:?}): {e}",
                    excerpt(&r.conversation, 60)
                )
            })
            .collect(),
        Err(e) => vec![format!(
            "request #{i} ({}): not a valid chat request: {e}",
            r.path
        )],
    }
}

/// Every pairing violation across `requests`, naming the request index.
pub fn pairing_violations(requests: &[RecordedRequest]) -> Vec<String> {
    (0..requests.len())
        .flat_map(|i| pairing_of(requests, i))
        .collect()
}

/// The latest request of each conversation that a later one must extend,
/// kept as requests arrive (the index [`predecessor`] scans for).
#[derive(Debug, Default)]
pub struct Predecessors {
    last: HashMap<String, usize>,
}

impl Predecessors {
    /// The request the one about to be recorded in `conversation` extends.
    pub fn of(&self, conversation: &str) -> Option<usize> {
        self.last.get(conversation).copied()
    }

    /// Records request `i`, `r`: it becomes its conversation's predecessor
    /// unless it is no chat request (`parsed` false: its view did not
    /// parse) or a side request.
    pub fn record(&mut self, r: &RecordedRequest, i: usize, parsed: bool) {
        if parsed && !is_side_request(&r.body) {
            self.last.insert(r.conversation.clone(), i);
        }
    }
}

/// The request that request `i` must extend, if any: the latest earlier
/// request of the same conversation that parsed and is not a side request
/// (the same predecessor [`prefix_violations`] uses).
fn predecessor(requests: &[RecordedRequest], i: usize) -> Option<usize> {
    let conversation = requests.get(i)?.conversation.as_str();
    (0..i).rev().find(|&j| {
        let r = &requests[j];
        r.conversation == conversation && r.view().is_ok() && !is_side_request(&r.body)
    })
}

/// Both checks for request `i` alone, against the requests before it: its
/// tool pairing, and (unless it is a context compaction) whether it extends
/// its conversation's previous request. The result is what [`violations`]
/// reports for request `i`, so a server can check each request on arrival.
pub fn request_violations(requests: &[RecordedRequest], i: usize) -> Vec<String> {
    request_violations_allowing(requests, i, Allow::default())
}

/// [`request_violations`] with what the test allows (see [`Allow`]).
pub fn request_violations_allowing(
    requests: &[RecordedRequest],
    i: usize,
    allow: Allow,
) -> Vec<String> {
    request_violations_after(requests, i, predecessor(requests, i), allow)
}

/// [`request_violations_allowing`] with request `i`'s predecessor already
/// known (a server keeps a [`Predecessors`] index instead of scanning back
/// through every request of every other conversation).
pub fn request_violations_after(
    requests: &[RecordedRequest],
    i: usize,
    predecessor: Option<usize>,
    allow: Allow,
) -> Vec<String> {
    if i >= requests.len() {
        return Vec::new();
    }
    let view = requests[i].view();
    let mut out = pairing_in(requests, i, &view);
    if view.is_err() {
        return out;
    }
    if let Some(p) = predecessor {
        let errors = check_prefix(&requests[p].body, &requests[i].body);
        if !errors.is_empty() && !is_allowed_rewrite(requests, p, i, allow) {
            let conv = excerpt(&requests[i].conversation, 60);
            out.extend(
                errors
                    .into_iter()
                    .map(|e| format!("conversation {conv:?}: request #{p} -> #{i}: {e}")),
            );
        }
    }
    out
}

/// Every violation of both invariants across `requests`: the pairing
/// violations first, then the prefix-stability ones.
pub fn violations(requests: &[RecordedRequest]) -> Vec<String> {
    violations_allowing(requests, Allow::default())
}

/// [`violations`] with what the test allows (see [`Allow`]).
pub fn violations_allowing(requests: &[RecordedRequest], allow: Allow) -> Vec<String> {
    let mut out = pairing_violations(requests);
    out.extend(prefix_violations_allowing(requests, allow));
    out
}

/// Every prefix-stability violation across `requests`, naming the conversation
/// and both request indexes. Context compactions are not violations.
pub fn prefix_violations(requests: &[RecordedRequest]) -> Vec<String> {
    prefix_violations_allowing(requests, Allow::default())
}

/// [`prefix_violations`] with what the test allows (see [`Allow`]).
pub fn prefix_violations_allowing(requests: &[RecordedRequest], allow: Allow) -> Vec<String> {
    let mut out = Vec::new();
    for_each_follow_up(requests, allow, |p, i, errors| {
        let conv = excerpt(&requests[i].conversation, 60);
        out.extend(
            errors
                .into_iter()
                .map(|e| format!("conversation {conv:?}: request #{p} -> #{i}: {e}")),
        );
    });
    out
}

/// `(follow-up requests that extend their predecessor, all follow-up
/// requests)`, context compactions excluded.
pub fn prefix_stability(requests: &[RecordedRequest]) -> (usize, usize) {
    let (mut good, mut total) = (0, 0);
    for_each_follow_up(requests, Allow::default(), |_, _, errors| {
        total += 1;
        if errors.is_empty() {
            good += 1;
        }
    });
    (good, total)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::normalize::Api;
    use serde_json::json;
    use std::time::Instant;

    fn openai(messages: Value) -> RequestView {
        RequestView::from_body(Api::OpenAi, &json!({"messages": messages})).unwrap()
    }

    fn call(id: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}})
    }

    #[test]
    fn good_pairing() {
        let v = openai(json!([
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "more"}
        ]));
        assert_eq!(check_pairing(&v), Vec::<String>::new());
    }

    #[test]
    fn openai_tool_messages_come_right_after_the_calls() {
        // The images of a run of results follow it as a user message: fine.
        let images = json!({"role": "user", "content": [
            {"type": "text", "text": "from a:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
        ]});
        let v = openai(json!([
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            images.clone(),
            {"role": "assistant", "content": "done"}
        ]));
        assert_eq!(check_pairing(&v), Vec::<String>::new());
        // Between the results, the API refuses it.
        let v = openai(json!([
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            images,
            {"role": "tool", "tool_call_id": "b", "content": "2"}
        ]));
        let e = check_pairing(&v);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].contains("message 4: the result for tool call \"b\" follows a user message"),
            "{e:?}"
        );
    }

    #[test]
    fn missing_result() {
        let v = openai(json!([
            {"role": "user", "content": "u"},
            {"role": "assistant", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "assistant", "content": "x"}
        ]));
        let e = check_pairing(&v);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].contains("\"b\"") && e[0].contains("no result"),
            "{e:?}"
        );
        let v = openai(json!([
            {"role": "user", "content": "u"},
            {"role": "assistant", "tool_calls": [call("a")]}
        ]));
        assert!(check_pairing(&v)[0].contains("end of the request"));
    }

    #[test]
    fn duplicate_result() {
        let v = openai(json!([
            {"role": "user", "content": "u"},
            {"role": "assistant", "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "a", "content": "1"}
        ]));
        let e = check_pairing(&v);
        assert_eq!(e.len(), 1);
        assert!(e[0].contains("duplicate result"), "{e:?}");
    }

    #[test]
    fn orphan_and_late_results_and_duplicate_ids() {
        let v = openai(json!([
            {"role": "user", "content": "u"},
            {"role": "tool", "tool_call_id": "zz", "content": "1"}
        ]));
        assert!(check_pairing(&v)[0].contains("unknown tool call"));
        let v = openai(json!([
            {"role": "user", "content": "u"},
            {"role": "assistant", "tool_calls": [call("a")]},
            {"role": "assistant", "content": "x"},
            {"role": "tool", "tool_call_id": "a", "content": "1"}
        ]));
        let e = check_pairing(&v);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[1].contains("after a later assistant"), "{e:?}");
        let v = openai(json!([
            {"role": "user", "content": "u"},
            {"role": "assistant", "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "assistant", "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"}
        ]));
        let e = check_pairing(&v);
        assert!(
            e.iter().any(|e| e.contains("duplicate tool call id")),
            "{e:?}"
        );
    }

    #[test]
    fn anthropic_pairing() {
        let body = json!({"messages": [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
        ]});
        let v = RequestView::from_body(Api::Anthropic, &body).unwrap();
        assert!(check_pairing(&v).is_empty());
    }

    fn anth(system: &str, tools: Value, messages: Value) -> Value {
        json!({"system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
               "tools": tools, "messages": messages})
    }

    #[test]
    fn prefix_checks() {
        let tools = json!([{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}}]);
        let m1 = json!([{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]);
        let m2 = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
            {"role": "user", "content": [{"type": "text", "text": "next", "cache_control": {"type": "ephemeral"}}]}
        ]);
        let r1 = anth("sys", tools.clone(), m1.clone());
        let r2 = anth("sys", tools.clone(), m2.clone());
        assert_eq!(
            check_prefix(&r1, &r2),
            Vec::<String>::new(),
            "cache_control moved is fine"
        );

        let e = check_prefix(&r1, &anth("sys2", tools.clone(), m2.clone()));
        assert!(
            e.len() == 1 && e[0].contains("system prompt changed"),
            "{e:?}"
        );

        let fewer = json!([{"name": "a", "input_schema": {}}]);
        let e = check_prefix(&r1, &anth("sys", fewer, m2.clone()));
        assert!(e.len() == 1 && e[0].contains("tool list changed"), "{e:?}");
        let edited =
            json!([{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {"x": 1}}]);
        let e = check_prefix(&r1, &anth("sys", edited, m2.clone()));
        assert!(e[0].contains("definition of tool \"b\""), "{e:?}");

        let mut m3 = m2.clone();
        m3[1]["content"][0]["text"] = json!("edited");
        m3.as_array_mut()
            .unwrap()
            .push(json!({"role": "assistant", "content": "z"}));
        let e = check_prefix(&r2, &anth("sys", tools.clone(), m3));
        assert!(e.len() == 1 && e[0].contains("message 1 changed"), "{e:?}");

        let e = check_prefix(&r2, &r1);
        assert!(e.iter().any(|e| e.contains("history shrank")), "{e:?}");
    }

    #[test]
    fn compaction_is_the_one_allowed_rewrite() {
        let sys = json!({"role": "system", "content": "sys"});
        let tools = json!([{"type": "function", "function": {"name": "f"}}]);
        let body = |messages: Value| json!({"tools": tools, "messages": messages});
        let prev = body(json!([sys, {"role": "user", "content": "task"},
            {"role": "assistant", "content": "a"}, {"role": "user", "content": "b"},
            {"role": "assistant", "content": "c"}, {"role": "user", "content": "d"}]));
        let summary = "[herald] Summary of earlier turns (context compaction): ...";
        let compacted = body(json!([sys, {"role": "user", "content": "task"},
            {"role": "user", "content": summary}, {"role": "user", "content": "d"}]));
        assert!(!check_prefix(&prev, &compacted).is_empty());
        assert!(is_compaction(&prev, &compacted));
        // Unmarked rewrites, a changed head, or a changed system prompt are not.
        let unmarked = body(json!([sys, {"role": "user", "content": "task"},
            {"role": "user", "content": "summary"}]));
        assert!(!is_compaction(&prev, &unmarked));
        let new_head = body(json!([sys, {"role": "user", "content": "other"},
            {"role": "user", "content": summary}]));
        assert!(!is_compaction(&prev, &new_head));
        let mut new_sys = compacted.clone();
        new_sys["messages"][0]["content"] = json!("sys2");
        assert!(!is_compaction(&prev, &new_sys));
        let reqs = vec![recorded("task", prev.clone()), recorded("task", compacted)];
        assert_eq!(prefix_stability(&reqs), (0, 0));
        assert!(prefix_violations(&reqs).is_empty());
        // A summary request branches off: whether it succeeded (compacted
        // history next) or failed (the full history goes on), the request
        // after it is compared with the one before it.
        let mut ask = prev["messages"].as_array().unwrap()[..3].to_vec();
        ask.push(json!({"role": "user", "content": "[herald] Request for context compaction: summarise"}));
        let ask = body(json!(ask));
        assert!(is_summary_request(&ask) && !is_summary_request(&prev));
        let mut goes_on = prev.clone();
        goes_on["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "assistant", "content": "e"}));
        let reqs = vec![
            recorded("task", prev.clone()),
            recorded("task", ask),
            recorded("task", goes_on),
        ];
        assert!(
            prefix_violations(&reqs).is_empty(),
            "{:?}",
            prefix_violations(&reqs)
        );
        assert_eq!(prefix_stability(&reqs), (1, 1));
        let reqs = vec![recorded("task", prev), recorded("task", unmarked)];
        assert_eq!(
            prefix_violations(&reqs).len(),
            2,
            "message changed and history shrank"
        );
    }

    #[test]
    fn a_flush_request_without_a_reply_may_be_withdrawn() {
        let sys = json!({"role": "system", "content": "sys"});
        let tools = json!([{"type": "function", "function": {"name": "f"}}]);
        let body = |messages: Value| json!({"tools": tools, "messages": messages});
        let before = body(json!([sys, {"role": "user", "content": "task"},
            {"role": "assistant", "content": "a"}, {"role": "user", "content": "next"}]));
        let mut flush = before["messages"].as_array().unwrap().clone();
        flush.push(
            json!({"role": "user", "content": "[herald] Memory flush: this session is ending."}),
        );
        let flush = body(json!(flush));
        assert!(is_flush_request(&flush) && !is_flush_request(&before));
        assert!(!is_summary_request(&flush), "the flush is no compaction");
        // The flush failed: the next request goes on from the one before it.
        let mut goes_on = before.clone();
        goes_on["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "assistant", "content": "b"}));
        let reqs = vec![
            recorded("task", before.clone()),
            recorded("task", flush.clone()),
            recorded("task", goes_on),
        ];
        assert!(
            prefix_violations(&reqs).is_empty(),
            "{:?}",
            prefix_violations(&reqs)
        );
        // A flush request is still checked against the request before it.
        let mut edited = flush.clone();
        edited["messages"][1]["content"] = json!("other task");
        let reqs = vec![recorded("task", before), recorded("task", edited)];
        assert_eq!(
            prefix_violations(&reqs).len(),
            1,
            "{:?}",
            prefix_violations(&reqs)
        );
    }

    #[test]
    fn a_compaction_that_repeats_the_previous_summary_is_allowed_after_a_summary_request() {
        // A compacted conversation (task, call, result, summary, continue)
        // worked on, then was compacted again: the middle (old summary,
        // continue, two exchanges) held as many messages as the first one,
        // and a scripted model wrote the same summary, so the new history is
        // a strict prefix of the previous request.
        let sys = json!({"role": "system", "content": "sys"});
        let tools = json!([{"type": "function", "function": {"name": "f"}}]);
        let body = |messages: &[Value]| json!({"tools": tools, "messages": messages});
        let summary = json!({"role": "user",
            "content": "[herald] Summary of earlier turns (context compaction): 6 earlier messages ..."});
        let exchange = |id: &str| {
            vec![
                json!({"role": "assistant", "content": null, "tool_calls": [call(id)]}),
                json!({"role": "tool", "tool_call_id": id, "content": "out"}),
            ]
        };
        let user = |text: &str| json!({"role": "user", "content": text});
        let mut head = vec![sys.clone(), user("task")];
        head.extend(exchange("c0"));
        let compacted: Vec<Value> =
            [head.clone(), vec![summary.clone(), user("continue")]].concat();
        let prev_messages: Vec<Value> =
            [compacted.clone(), exchange("c4"), exchange("c5")].concat();
        let prev = body(&prev_messages);
        let ask = body(
            &[
                prev_messages.clone(),
                vec![
                    user("continue"),
                    user("[herald] Request for context compaction: summarise"),
                ],
            ]
            .concat(),
        );
        let cur = body(&compacted);
        let e = check_prefix(&prev, &cur);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("history shrank from 10 to 6"), "{e:?}");
        assert!(!is_compaction(&prev, &cur), "no message differs");
        assert!(is_repeated_compaction(&prev, &cur));
        let reqs = vec![
            recorded("task", prev.clone()),
            recorded("task", ask.clone()),
            recorded("task", cur.clone()),
        ];
        assert!(violations(&reqs).is_empty(), "{:?}", violations(&reqs));
        assert_eq!(
            prefix_stability(&reqs),
            (1, 1),
            "the summary request extends"
        );
        assert_same_as_per_request(&reqs);
        // A different newest message after the unchanged summary is the same
        // case (the first difference comes after the summary).
        let go_on = body(&[head.clone(), vec![summary.clone(), user("go on")]].concat());
        let reqs = vec![
            recorded("task", prev.clone()),
            recorded("task", ask.clone()),
            recorded("task", go_on),
        ];
        assert!(violations(&reqs).is_empty(), "{:?}", violations(&reqs));

        // Near misses, each still rejected.
        let rejected = |reqs: Vec<RecordedRequest>, want: &str| {
            let e = violations(&reqs);
            assert!(
                !e.is_empty()
                    && e.iter()
                        .all(|e| e.contains(want) || e.contains("history shrank")),
                "{want}: {e:?}"
            );
            assert!(e.iter().any(|e| e.contains(want)), "{want}: {e:?}");
            assert_same_as_per_request(&reqs);
        };
        // No summary request in between: a history that lost its newest
        // messages, not a compaction.
        rejected(
            vec![
                recorded("task", prev.clone()),
                recorded("task", cur.clone()),
            ],
            "request #0 -> #1: history shrank from 10 to 6",
        );
        // The summary request belongs to another conversation.
        rejected(
            vec![
                recorded("task", prev.clone()),
                recorded("other", ask.clone()),
                recorded("task", cur.clone()),
            ],
            "request #0 -> #2: history shrank",
        );
        // A message before the summary changed.
        let mut edited_head = compacted.clone();
        edited_head[1] = user("another task");
        rejected(
            vec![
                recorded("task", prev.clone()),
                recorded("task", ask.clone()),
                recorded("task", body(&edited_head)),
            ],
            "message 1 changed",
        );
        // No compaction-marked message before the first difference: the
        // summary itself was dropped.
        rejected(
            vec![
                recorded("task", prev.clone()),
                recorded("task", ask.clone()),
                recorded("task", body(&head)),
            ],
            "history shrank from 10 to 4",
        );
        // The system prompt changed.
        let mut new_sys = compacted.clone();
        new_sys[0] = json!({"role": "system", "content": "sys2"});
        rejected(
            vec![
                recorded("task", prev.clone()),
                recorded("task", ask.clone()),
                recorded("task", body(&new_sys)),
            ],
            "system prompt changed",
        );
        // Only the system prompt carries the marker words.
        let marked_sys =
            json!({"role": "system", "content": "[herald] knows about context compaction"});
        let mut before = prev_messages.clone();
        before[0] = marked_sys.clone();
        let mut after = head.clone();
        after[0] = marked_sys;
        assert!(!is_repeated_compaction(&body(&before), &body(&after)));
        // The tool list changed.
        let mut new_tools = cur.clone();
        new_tools["tools"] = json!([]);
        assert!(!is_repeated_compaction(&prev, &new_tools));
        rejected(
            vec![
                recorded("task", prev),
                recorded("task", ask),
                recorded("task", new_tools),
            ],
            "tool list changed",
        );
    }

    fn recorded(conversation: &str, body: Value) -> RecordedRequest {
        RecordedRequest {
            api: Api::OpenAi,
            path: "/v1/chat/completions".into(),
            headers: vec![],
            body,
            conversation: conversation.into(),
            turn: 0,
            received_at: Instant::now(),
            responded_at: None,
            status: 200,
        }
    }

    #[test]
    fn walks_conversations_separately() {
        let a1 = json!({"messages": [{"role": "user", "content": "A"}]});
        let b1 = json!({"messages": [{"role": "user", "content": "B"}]});
        let a2 = json!({"messages": [{"role": "user", "content": "A"}, {"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]});
        let b2 = json!({"messages": [{"role": "system", "content": "new"}, {"role": "user", "content": "B"}]});
        let reqs = vec![
            recorded("A", a1),
            recorded("B", b1),
            recorded("A", a2),
            recorded("B", b2),
            recorded("", json!("garbage")),
        ];
        assert_eq!(prefix_stability(&reqs), (1, 2));
        let e = prefix_violations(&reqs);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with(
                "conversation \"B\": request #1 -> #3: system prompt changed (message 0)"
            ),
            "{e:?}"
        );
        let e = pairing_violations(&reqs);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("request #4"), "{e:?}");
        assert_eq!(violations(&reqs).len(), 2);
        assert_same_as_per_request(&reqs);
    }

    #[test]
    fn a_branch_at_a_user_turn_is_allowed_only_when_the_test_allows_it() {
        let u = |t: &str| json!({"role": "user", "content": t});
        let a = |t: &str| json!({"role": "assistant", "content": t});
        let body = |m: Vec<Value>| json!({"messages": m});
        // Three turns, then a rewind to before turn 2 with a new prompt.
        let reqs = vec![
            recorded("P1", body(vec![u("P1")])),
            recorded("P1", body(vec![u("P1"), a("r1"), u("P2")])),
            recorded(
                "P1",
                body(vec![u("P1"), a("r1"), u("P2"), a("r2"), u("P3")]),
            ),
            recorded("P1", body(vec![u("P1"), a("r1"), u("new P2")])),
            recorded(
                "P1",
                body(vec![u("P1"), a("r1"), u("new P2"), a("n2"), u("P3b")]),
            ),
        ];
        assert!(is_branch(&reqs, 3));
        assert!(!is_branch(&reqs, 2), "an ordinary follow-up is no branch");
        let branches = Allow { branches: true };
        assert_eq!(violations_allowing(&reqs, branches), Vec::<String>::new());
        for i in 0..reqs.len() {
            assert!(request_violations_allowing(&reqs, i, branches).is_empty());
        }
        // Without the allowance the branch is a violation.
        let e = violations(&reqs);
        assert!(!e.is_empty());
        assert!(e.iter().all(|e| e.contains("request #2 -> #3")), "{e:?}");

        // A history that lost an assistant reply mid-history is no branch:
        // the kept part must end where an earlier request had a user prompt.
        let lost = vec![
            recorded("P1", body(vec![u("P1")])),
            recorded("P1", body(vec![u("P1"), a("r1"), u("P2")])),
            recorded("P1", body(vec![u("P1"), u("P2 again")])),
        ];
        assert!(!is_branch(&lost, 2));
        assert!(!violations_allowing(&lost, branches).is_empty());
        // A changed earlier message is no branch either.
        let changed = vec![
            recorded("P1", body(vec![u("P1"), a("r1"), u("P2")])),
            recorded("P1", body(vec![u("P1"), a("r1 edited"), u("P3")])),
        ];
        assert!(!is_branch(&changed, 1));
    }

    /// Checking each request on arrival finds exactly what the whole-log
    /// check finds.
    fn assert_same_as_per_request(reqs: &[RecordedRequest]) {
        let mut whole = violations(reqs);
        let mut each: Vec<String> = (0..reqs.len())
            .flat_map(|i| request_violations(reqs, i))
            .collect();
        // ...and so does a server's predecessor index.
        let mut index = Predecessors::default();
        let mut indexed = Vec::new();
        for (i, r) in reqs.iter().enumerate() {
            let before = index.of(&r.conversation);
            indexed.extend(request_violations_after(reqs, i, before, Allow::default()));
            index.record(r, i, r.view().is_ok());
        }
        whole.sort();
        each.sort();
        indexed.sort();
        assert_eq!(each, whole);
        assert_eq!(indexed, whole);
        assert!(request_violations(reqs, reqs.len()).is_empty());
    }

    #[test]
    fn per_request_checks_follow_compactions_and_summary_requests() {
        let body = |messages: Value| json!({"messages": messages});
        let prev = body(json!([{"role": "user", "content": "task"},
            {"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]));
        let ask = body(json!([{"role": "user", "content": "task"},
            {"role": "user", "content": "[herald] Request for context compaction: summarise"}]));
        let compacted = body(json!([{"role": "user", "content": "task"},
            {"role": "user", "content": "[herald] Summary (context compaction)"},
            {"role": "user", "content": "b"}]));
        let shrunk = body(json!([{"role": "user", "content": "task"}]));
        let reqs = vec![
            recorded("task", prev),
            recorded("task", ask),
            recorded("task", compacted),
            recorded("task", shrunk),
        ];
        assert!(request_violations(&reqs, 1).is_empty());
        assert!(request_violations(&reqs, 2).is_empty());
        let e = request_violations(&reqs, 3);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("request #2 -> #3: history shrank"), "{e:?}");
        assert_same_as_per_request(&reqs);
    }
}
