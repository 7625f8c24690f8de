//! Canonical forms of request parts, used to compare requests and to simulate a
//! prefix cache: `cache_control` keys removed, string content written as one
//! text block, object keys sorted.

use serde_json::{Map, Value};

/// `v` with every `cache_control` key removed, at any depth.
pub fn strip_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), strip_cache_control(v)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_cache_control).collect()),
        other => other.clone(),
    }
}

/// Whether `a` and `b` are equal once every `cache_control` key is removed,
/// without building either: the common case of a prefix check (nothing
/// changed) costs no allocation, which matters when a server checks 30,000
/// requests of 20 KB as they arrive. `false` may still be equal in
/// canonical form (string vs block content); callers compare those then.
pub fn same_ignoring_cache_control(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let kept = |m: &Map<String, Value>| m.keys().filter(|k| *k != "cache_control").count();
            kept(x) == kept(y)
                && x.iter()
                    .filter(|(k, _)| k.as_str() != "cache_control")
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_ignoring_cache_control(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(v, w)| same_ignoring_cache_control(v, w))
        }
        _ => a == b,
    }
}

/// Content in block form: a string `s` becomes `[{"type":"text","text":s}]`, so
/// that moving a cache breakpoint (which needs block form) is not a change.
fn content_blocks(content: &Value) -> Value {
    match content {
        Value::String(s) => serde_json::json!([{"type": "text", "text": s}]),
        other => other.clone(),
    }
}

/// A message (or system prompt) in canonical form for comparison.
pub fn canonical_message(m: &Value) -> Value {
    let mut m = strip_cache_control(m);
    if let Some(obj) = m.as_object_mut()
        && let Some(c) = obj.get_mut("content")
    {
        *c = content_blocks(c);
    }
    m
}

/// A system prompt (string or blocks) in canonical form for comparison.
pub fn canonical_system(s: &Value) -> Value {
    content_blocks(&strip_cache_control(s))
}

/// Appends `v` as JSON with object keys sorted, independent of map order.
pub fn write_sorted(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(item) = map.get(k) {
                    write_sorted(item, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_sorted(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The canonical text of a whole request body in cache order: tools, system,
/// then each message. Two requests share a cached prefix as long as this text
/// does. Written straight from `body` (the same text as [`write_sorted`] of
/// [`strip_cache_control`], [`canonical_system`] and [`canonical_message`],
/// without their copies: a server computes it for every request).
pub fn canonical_request(body: &Value) -> String {
    let mut out = Vec::new();
    if let Some(tools) = body.get("tools") {
        write_canonical(tools, &mut out);
    }
    out.push(b'\n');
    if let Some(system) = body.get("system") {
        match system {
            Value::String(text) => write_text_block(text, &mut out),
            other => write_canonical(other, &mut out),
        }
    }
    out.push(b'\n');
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        for m in messages {
            write_canonical_message(m, &mut out);
            out.push(b'\n');
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Appends `v` as [`write_sorted`] would write it with its `cache_control`
/// keys removed.
fn write_canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(map) => write_object(map, out, |_, value, out| write_canonical(value, out)),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        other => write_json(other, out),
    }
}

/// Appends a message as [`write_sorted`] of [`canonical_message`] would:
/// string `content` as one text block.
fn write_canonical_message(m: &Value, out: &mut Vec<u8>) {
    let Value::Object(map) = m else {
        return write_canonical(m, out);
    };
    write_object(map, out, |key, value, out| match value {
        Value::String(text) if key == "content" => write_text_block(text, out),
        other => write_canonical(other, out),
    });
}

/// Appends `map` with sorted keys, without `cache_control`, each value
/// written by `value(key, value, out)`.
fn write_object(
    map: &Map<String, Value>,
    out: &mut Vec<u8>,
    value: impl Fn(&str, &Value, &mut Vec<u8>),
) {
    let mut keys: Vec<&String> = map.keys().filter(|k| *k != "cache_control").collect();
    keys.sort();
    out.push(b'{');
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(k.as_str(), out);
        out.push(b':');
        if let Some(item) = map.get(k) {
            value(k, item, out);
        }
    }
    out.push(b'}');
}

/// `[{"text":TEXT,"type":"text"}]`.
fn write_text_block(text: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"[{\"text\":");
    write_json(text, out);
    out.extend_from_slice(b",\"type\":\"text\"}]");
}

fn write_json<T: serde::Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(out, v);
}

/// Length in bytes of the common prefix of `a` and `b`.
pub fn common_prefix_len(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The request text as it was built before: from stripped copies.
    fn canonical_by_copies(body: &Value) -> String {
        let mut out = String::new();
        if let Some(tools) = body.get("tools") {
            write_sorted(&strip_cache_control(tools), &mut out);
        }
        out.push('\n');
        if let Some(system) = body.get("system") {
            write_sorted(&canonical_system(system), &mut out);
        }
        out.push('\n');
        if let Some(messages) = body.get("messages").and_then(Value::as_array) {
            for m in messages {
                write_sorted(&canonical_message(m), &mut out);
                out.push('\n');
            }
        }
        out
    }

    #[test]
    fn the_request_text_is_the_one_the_stripped_copies_give() {
        let bodies = [
            json!({"model": "m", "tools": [{"type": "function", "function": {"name": "t\"q", "parameters": {"z": 1, "a": [true, null, 1.5]}}}],
                   "messages": [{"role": "system", "content": "sys ü"}, {"role": "user", "content": "hi\n"},
                                {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "function": {"name": "t", "arguments": "{}"}}]},
                                {"role": "tool", "tool_call_id": "c", "content": "out"}]}),
            json!({"system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
                   "tools": [{"name": "t", "input_schema": {}, "cache_control": {"type": "ephemeral"}}],
                   "messages": [{"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]},
                                {"role": "user", "content": "b"}, "odd", 7]}),
            json!({"system": "plain system", "messages": []}),
            json!({}),
        ];
        for body in &bodies {
            assert_eq!(canonical_request(body), canonical_by_copies(body), "{body}");
        }
    }

    #[test]
    fn comparing_without_cache_control_needs_no_copy_and_agrees_with_stripping() {
        let a = json!({"a": [{"cache_control": {"type": "ephemeral"}, "b": 1}], "c": "x"});
        let b = json!({"c": "x", "a": [{"b": 1}]});
        assert!(same_ignoring_cache_control(&a, &b));
        assert_eq!(strip_cache_control(&a), strip_cache_control(&b));
        let c = json!({"c": "x", "a": [{"b": 2}]});
        assert!(!same_ignoring_cache_control(&a, &c));
        let d = json!({"c": "x", "a": [{"b": 1}], "extra": true});
        assert!(!same_ignoring_cache_control(&a, &d));
        assert!(!same_ignoring_cache_control(&json!([1, 2]), &json!([1])));
    }

    #[test]
    fn strips_nested_cache_control() {
        let v =
            json!({"a": [{"cache_control": {"type": "ephemeral"}, "b": 1}], "cache_control": 2});
        assert_eq!(strip_cache_control(&v), json!({"a": [{"b": 1}]}));
    }

    #[test]
    fn string_and_block_content_compare_equal() {
        let a = json!({"role": "user", "content": "hi"});
        let b = json!({"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]});
        assert_eq!(canonical_message(&a), canonical_message(&b));
        assert_eq!(
            canonical_system(&json!("s")),
            canonical_system(&json!([{"type": "text", "text": "s"}]))
        );
    }

    #[test]
    fn sorted_output_is_order_independent() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"d":"x","c":[1,2]}}"#).unwrap();
        let mut s = String::new();
        write_sorted(&a, &mut s);
        assert_eq!(s, r#"{"a":{"c":[1,2],"d":"x"},"b":1}"#);
    }

    #[test]
    fn request_prefix_grows() {
        let r1 = json!({"messages": [{"role": "user", "content": "hi"}]});
        let r2 = json!({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]});
        let (c1, c2) = (canonical_request(&r1), canonical_request(&r2));
        assert_eq!(common_prefix_len(&c1, &c2), c1.len());
        assert_eq!(common_prefix_len("abc", "abd"), 2);
    }
}
