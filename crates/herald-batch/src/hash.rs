//! Content hashes: a task's identity for `--resume` and the judge's
//! cache key. JSON is hashed in a canonical form (object keys sorted), so
//! the order of keys in a file does not change the hash.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The SHA-256 of `value`'s canonical JSON, as 64 lower-case hex digits.
pub fn content_hash(value: &Value) -> String {
    let mut text = String::new();
    write_canonical(value, &mut text);
    hex(&Sha256::digest(text.as_bytes()))
}

/// The SHA-256 of `bytes` as hex.
pub fn bytes_hash(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*key).clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(*key) {
                    write_canonical(v, out);
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
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_hash() {
        let a = json!({"b": 1, "a": [1, {"y": 2, "x": 3}]});
        let b = json!({"a": [1, {"x": 3, "y": 2}], "b": 1});
        assert_eq!(content_hash(&a), content_hash(&b));
        assert_ne!(content_hash(&a), content_hash(&json!({"b": 2})));
        assert_eq!(content_hash(&a).len(), 64);
    }
}
