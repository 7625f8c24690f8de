//! Which transcript format a file is, told from its first record.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The transcript formats `herald sessions import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Claude Code session JSONL (`~/.claude/projects/*/*.jsonl`).
    ClaudeCode,
    /// Codex rollout JSONL: `{timestamp, type, payload}` lines.
    Codex,
    /// Older Codex rollout: a `{id, timestamp, instructions}` line, then bare items.
    CodexLegacy,
    /// Hermes session JSONL: a `session_meta` line, then chat messages.
    Hermes,
    /// One `{"messages": [...]}` object per line, each line one session.
    OpenaiMessages,
    /// One chat message (`role`, `content`, `tool_calls`...) per line.
    ChatJsonl,
    /// herald's own export (`herald sessions export`).
    Herald,
}

impl Format {
    /// The name reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::CodexLegacy => "codex-legacy",
            Format::Hermes => "hermes",
            Format::OpenaiMessages => "openai-messages",
            Format::ChatJsonl => "chat-jsonl",
            Format::Herald => "herald",
        }
    }
}

/// Record types Claude Code writes.
const CLAUDE_TYPES: &[&str] = &[
    "user",
    "assistant",
    "summary",
    "system",
    "file-history-snapshot",
    "queue-operation",
];

/// Record types of a current Codex rollout.
const CODEX_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];

/// Item types a legacy Codex rollout holds bare.
const CODEX_ITEMS: &[&str] = &[
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
];

/// The format of a file whose first record is `first`.
pub(crate) fn detect(first: &Value) -> Option<Format> {
    let obj = first.as_object()?;
    let text = |key: &str| obj.get(key).and_then(Value::as_str);
    if text("format") == Some(super::export::FORMAT) {
        return Some(Format::Herald);
    }
    if text("role") == Some("session_meta") {
        return Some(Format::Hermes);
    }
    if obj.get("messages").is_some_and(Value::is_array) && !obj.contains_key("role") {
        return Some(Format::OpenaiMessages);
    }
    if let Some(kind) = text("type") {
        if obj.contains_key("payload") && CODEX_TYPES.contains(&kind) {
            return Some(Format::Codex);
        }
        if CODEX_ITEMS.contains(&kind) && !obj.contains_key("message") {
            return Some(Format::CodexLegacy);
        }
        if CLAUDE_TYPES.contains(&kind) && !obj.contains_key("role") {
            return Some(Format::ClaudeCode);
        }
    }
    if obj.contains_key("record_type")
        || (obj.contains_key("id") && obj.contains_key("timestamp") && !obj.contains_key("role"))
    {
        return Some(Format::CodexLegacy);
    }
    if obj.get("role").is_some_and(Value::is_string) {
        return Some(Format::ChatJsonl);
    }
    None
}

/// A short description of an unrecognised first record, for the error.
pub(crate) fn describe(first: &Value) -> String {
    match first {
        Value::Object(obj) => {
            let keys: Vec<&str> = obj.keys().take(6).map(String::as_str).collect();
            format!("an object with keys {}", keys.join(", "))
        }
        Value::Array(_) => "a JSON array".to_owned(),
        other => format!("a JSON {}", json_kind(other)),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_format_is_told_from_its_first_record() {
        let cases = [
            (
                json!({"type": "summary", "summary": "x", "leafUuid": "u"}),
                Format::ClaudeCode,
            ),
            (
                json!({"type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u"}),
                Format::ClaudeCode,
            ),
            (
                json!({"type": "file-history-snapshot", "messageId": "m"}),
                Format::ClaudeCode,
            ),
            (
                json!({"timestamp": "t", "type": "session_meta", "payload": {}}),
                Format::Codex,
            ),
            (
                json!({"id": "s", "timestamp": "t", "instructions": null}),
                Format::CodexLegacy,
            ),
            (
                json!({"type": "message", "role": "user", "content": []}),
                Format::CodexLegacy,
            ),
            (
                json!({"role": "session_meta", "model": "m", "tools": []}),
                Format::Hermes,
            ),
            (
                json!({"messages": [{"role": "user", "content": "hi"}]}),
                Format::OpenaiMessages,
            ),
            (json!({"role": "user", "content": "hi"}), Format::ChatJsonl),
            (
                json!({"format": "herald.session", "version": 2, "session": {}}),
                Format::Herald,
            ),
        ];
        for (value, format) in cases {
            assert_eq!(detect(&value), Some(format), "{value}");
        }
        assert_eq!(detect(&json!({"hello": "world"})), None);
        assert_eq!(detect(&json!([1, 2])), None);
        assert!(describe(&json!({"hello": 1})).contains("hello"));
    }
}
