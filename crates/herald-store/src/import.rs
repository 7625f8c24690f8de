//! Moving transcripts in and out: JSONL import (one message object per line)
//! and session export (`herald sessions export`).

use std::io::Write;
use std::path::Path;

use herald_protocol::{ImageData, Message, Role, ToolCall};
use rusqlite::TransactionBehavior;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::{StoreError, sql};
use crate::messages::{insert_messages, role_from_str};
use crate::records::{NewSession, SessionSource};
use crate::sessions::{insert_session, require_session};
use crate::store::{Store, new_id};

/// Version of the export document layout.
const EXPORT_VERSION: u64 = 1;

/// A line of an import file that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadLine {
    /// 1-based line number.
    pub line: usize,
    pub reason: String,
}

/// What an import did: the new session, how many messages it got, and every
/// line that had to be skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportReport {
    pub session_id: String,
    pub messages: usize,
    pub bad_lines: Vec<BadLine>,
}

/// One decoded import line.
enum Line {
    System(String),
    Message(Message),
}

/// Text of a `content` field: a string, `null`, or an array of text blocks
/// (`{"type":"text","text":...}`, plain strings); other blocks are ignored.
fn content_text(value: Option<&Value>) -> Result<String, String> {
    match value {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(blocks)) => Ok(blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) => o.get("text").and_then(Value::as_str),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")),
        Some(_) => Err("\"content\" must be a string or an array of text blocks".to_owned()),
    }
}

/// Arguments as the raw JSON text a model would have produced.
fn arguments_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Tool calls in OpenAI shape (`{id, type, function: {name, arguments}}`) or
/// herald shape (`{id, name, arguments}`; `input` accepted for arguments).
fn tool_calls(value: Option<&Value>, line: usize) -> Result<Vec<ToolCall>, String> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("\"tool_calls\" must be an array".to_owned()),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let obj = item
                .as_object()
                .ok_or_else(|| format!("tool call {i} is not an object"))?;
            let body: &Map<String, Value> = match obj.get("function") {
                Some(Value::Object(f)) => f,
                _ => obj,
            };
            let name = body
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("tool call {i} has no \"name\""))?;
            let id = obj
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("call_import_{line}_{i}"), str::to_owned);
            let arguments = arguments_text(body.get("arguments").or_else(|| body.get("input")));
            Ok(ToolCall {
                id,
                name: name.to_owned(),
                arguments,
            })
        })
        .collect()
}

fn parse_line(text: &str, line: usize) -> Result<Line, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(obj) = value else {
        return Err("not a JSON object".to_owned());
    };
    let role_text = obj
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| "missing \"role\"".to_owned())?;
    let role = match role_text {
        "developer" => Role::System,
        other => role_from_str(other).ok_or_else(|| {
            format!("unknown role '{other}' (expected user, assistant, tool or system)")
        })?,
    };
    let content = content_text(obj.get("content"))?;
    if role == Role::System {
        return Ok(Line::System(content));
    }
    let str_field = |key: &str| obj.get(key).and_then(Value::as_str).map(str::to_owned);
    // A herald export carries the images of tool results; they are checked
    // again, as a tool's are, so none a provider refuses comes in.
    let mut content = content;
    let mut images: Vec<ImageData> = match obj.get("images") {
        Some(images) => serde_json::from_value(images.clone())
            .map_err(|e| format!("\"images\" is not a list of {{mime_type, data}}: {e}"))?,
        None => Vec::new(),
    };
    herald_protocol::admit_images(&mut images, &mut content);
    Ok(Line::Message(Message {
        role,
        content,
        tool_calls: tool_calls(obj.get("tool_calls"), line)?,
        tool_call_id: str_field("tool_call_id"),
        tool_name: str_field("tool_name").or_else(|| str_field("name")),
        is_error: obj
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        images,
        reasoning: match obj.get("reasoning") {
            Some(reasoning) => serde_json::from_value(reasoning.clone())
                .map_err(|e| format!("\"reasoning\" is not a list of reasoning blocks: {e}"))?,
            None => Vec::new(),
        },
    }))
}

impl Store {
    /// Imports a JSONL transcript as a new session with an `imp_...` id.
    ///
    /// Each non-blank line is one message object: `role` (user, assistant,
    /// tool, system), `content` (string or array of text blocks), optional
    /// `tool_calls` (OpenAI or herald shape), `tool_call_id`, `name`. System
    /// messages become the session's system prompt (joined by blank lines).
    /// Lines that cannot be read are skipped and listed in the report; the
    /// import fails only if no message is left. The session and all its
    /// messages are written in one transaction.
    pub fn import_jsonl(
        &mut self,
        path: impl AsRef<Path>,
        source: SessionSource,
    ) -> Result<ImportReport, StoreError> {
        const CTX: &str = "importing a transcript";
        let file = path.as_ref();
        let bytes = std::fs::read(file).map_err(|source| StoreError::Io {
            action: "read",
            path: file.to_path_buf(),
            source,
        })?;
        let mut system = Vec::new();
        let mut messages = Vec::new();
        let mut bad_lines = Vec::new();
        for (index, raw) in bytes.split(|b| *b == b'\n').enumerate() {
            let line = index + 1;
            let text = match std::str::from_utf8(raw) {
                Ok(text) => text.trim_start_matches('\u{feff}').trim(),
                Err(_) => {
                    bad_lines.push(BadLine {
                        line,
                        reason: "not valid UTF-8".to_owned(),
                    });
                    continue;
                }
            };
            if text.is_empty() {
                continue;
            }
            match parse_line(text, line) {
                Ok(Line::System(prompt)) => system.push(prompt),
                Ok(Line::Message(message)) => messages.push(message),
                Err(reason) => bad_lines.push(BadLine { line, reason }),
            }
        }
        if messages.is_empty() {
            return Err(StoreError::EmptyImport {
                path: file.to_path_buf(),
                bad_lines: bad_lines.len(),
                first: bad_lines
                    .first()
                    .map(|b| format!("; line {}: {}", b.line, b.reason))
                    .unwrap_or_default(),
            });
        }
        let new = NewSession {
            id: new_id("imp"),
            parent_session_id: None,
            agent_id: None,
            source,
            cwd: String::new(),
            model: String::new(),
            provider: String::new(),
            system_prompt: system.join("\n\n"),
        };
        let store_path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql(store_path, CTX))?;
        insert_session(&tx, store_path, &new)?;
        let ids = insert_messages(&tx, store_path, &new.id, &messages)?;
        tx.commit().map_err(sql(store_path, CTX))?;
        Ok(ImportReport {
            session_id: new.id,
            messages: ids.len(),
            bad_lines,
        })
    }

    /// A session as one JSON document: `{format, version, session, messages,
    /// usage}`, where each message carries its id, seq and created_at next to
    /// the message fields. Backs `herald sessions export ID`.
    pub fn export_session(&self, session_id: &str) -> Result<Value, StoreError> {
        let session = require_session(&self.conn, &self.path, session_id)?;
        let messages = self.load_messages(session_id)?;
        let usage = self.session_usage(session_id)?;
        Ok(json!({
            "format": "herald.session",
            "version": EXPORT_VERSION,
            "session": session,
            "messages": messages,
            "usage": usage,
        }))
    }

    /// Writes a session as JSONL in the shape [`Store::import_jsonl`] reads:
    /// the system prompt first (if any), then one message per line.
    pub fn export_jsonl(&self, session_id: &str, out: &mut dyn Write) -> Result<(), StoreError> {
        let session = require_session(&self.conn, &self.path, session_id)?;
        let messages = self.load_messages(session_id)?;
        let io = |source| StoreError::Io {
            action: "write the export of",
            path: session_id.into(),
            source,
        };
        if !session.system_prompt.is_empty() {
            let line = json!({"role": "system", "content": session.system_prompt});
            writeln!(out, "{line}").map_err(io)?;
        }
        for stored in &messages {
            let line =
                serde_json::to_string(&stored.message).map_err(|e| StoreError::Malformed {
                    what: format!("message {}", stored.id),
                    detail: e.to_string(),
                })?;
            writeln!(out, "{line}").map_err(io)?;
        }
        out.flush().map_err(io)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn message(text: &str) -> Message {
        match parse_line(text, 1).unwrap() {
            Line::Message(m) => m,
            Line::System(_) => panic!("expected a message"),
        }
    }

    #[test]
    fn openai_and_herald_tool_calls_are_both_read() {
        let openai = message(
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"ls\"}"}}]}"#,
        );
        let herald = message(
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"terminal","arguments":{"command":"ls"}}]}"#,
        );
        assert_eq!(openai.tool_calls[0].name, "terminal");
        assert_eq!(openai.tool_calls[0].arguments, r#"{"command":"ls"}"#);
        assert_eq!(herald.tool_calls, openai.tool_calls);
    }

    #[test]
    fn content_blocks_are_joined_and_tool_names_read() {
        let m = message(
            r#"{"role":"tool","tool_call_id":"c1","name":"terminal","content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]}"#,
        );
        assert_eq!(m.content, "a\nb");
        assert_eq!(m.tool_name.as_deref(), Some("terminal"));
        assert_eq!(m.tool_call_id.as_deref(), Some("c1"));
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let err = |t: &str| match parse_line(t, 1) {
            Err(e) => e,
            Ok(_) => panic!("expected an error for {t}"),
        };
        assert!(err("{nope").contains("not valid JSON"));
        assert!(err("[1]").contains("not a JSON object"));
        assert!(err(r#"{"content":"x"}"#).contains("missing \"role\""));
        assert!(err(r#"{"role":"robot"}"#).contains("unknown role 'robot'"));
        assert!(err(r#"{"role":"user","content":5}"#).contains("content"));
    }
}
