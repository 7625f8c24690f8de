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
/// does.
pub fn canonical_request(body: &Value) -> String {
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

/// Length in bytes of the common prefix of `a` and `b`.
pub fn common_prefix_len(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

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
