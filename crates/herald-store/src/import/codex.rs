//! Codex rollout JSONL, current (`{timestamp, type, payload}` lines:
//! session_meta, turn_context, response_item, event_msg, compacted) and
//! legacy (a `{id, timestamp, instructions}` line, then bare items).
//!
//! Response items map to herald messages: consecutive reasoning, assistant
//! text and function calls of one model turn become one assistant message;
//! each `*_output` a tool message. `event_msg` records repeat the response
//! items for Codex's UI and are counted, not read; Codex's own instructions
//! (its system prompt and `developer` messages) are counted too, because
//! herald gives the session its own system prompt at the first resume.

use herald_protocol::{Message, Reasoning, Role, ToolCall};
use serde_json::{Map, Value, json};

use super::time::timestamp;
use super::{Entry, Line, LineError, Tally, Transcript};

/// Builds messages from response items.
struct Builder<'a> {
    t: Transcript,
    skipped: &'a mut Tally,
    /// Index of the assistant entry the current model turn is filling.
    open: Option<usize>,
}

/// Text blocks of a message item (`input_text`, `output_text`, `text`);
/// other blocks are counted.
fn texts(content: Option<&Value>, skipped: &mut Tally) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut parts = Vec::new();
            for block in blocks {
                match block.get("text").and_then(Value::as_str) {
                    Some(text) => parts.push(text),
                    None => skipped.add(format!(
                        "{} block",
                        block
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("unknown")
                    )),
                }
            }
            parts.join("\n")
        }
        _ => String::new(),
    }
}

/// A tool output: a string, content items (`input_text` joined, others
/// counted), or `{content}` / any JSON as text.
fn output_text(value: Option<&Value>, skipped: &mut Tally) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(items @ Value::Array(_)) => texts(Some(items), skipped),
        Some(other) => other
            .get("content")
            .and_then(Value::as_str)
            .map_or_else(|| other.to_string(), str::to_owned),
    }
}

impl Builder<'_> {
    /// The assistant entry of this turn; a new one when there is none or
    /// (for `text_only` parts) when the open one already made calls.
    fn assistant(&mut self, at: Option<i64>, text_only: bool) -> &mut Message {
        let reuse = self.open.filter(|&i| {
            !text_only
                || self
                    .t
                    .entries
                    .get(i)
                    .is_some_and(|e| e.message.tool_calls.is_empty())
        });
        let index = match reuse {
            Some(i) => i,
            None => {
                self.t
                    .entries
                    .push(Entry::new(Message::assistant("", Vec::new()), at));
                self.t.entries.len() - 1
            }
        };
        self.open = Some(index);
        &mut self.t.entries[index].message
    }

    fn item(
        &mut self,
        item: &Map<String, Value>,
        at: Option<i64>,
        line: usize,
    ) -> Result<(), LineError> {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| LineError::new(line, "response item without a \"type\""))?;
        let str_field = |key: &str| item.get(key).and_then(Value::as_str);
        match kind {
            "message" => match str_field("role") {
                Some("user") => {
                    self.open = None;
                    let text = texts(item.get("content"), self.skipped);
                    // Context Codex adds itself (cwd, sandbox, AGENTS.md);
                    // herald's system prompt carries its own.
                    let trimmed = text.trim_start();
                    if let Some(tag) = ["<environment_context>", "<user_instructions>"]
                        .into_iter()
                        .find(|tag| trimmed.starts_with(tag))
                    {
                        self.skipped
                            .add(format!("{tag} message (Codex's own context)"));
                        return Ok(());
                    }
                    self.t.entries.push(Entry::new(Message::user(text), at));
                }
                Some("assistant") => {
                    let text = texts(item.get("content"), self.skipped);
                    let message = self.assistant(at, true);
                    if !message.content.is_empty() && !text.is_empty() {
                        message.content.push_str("\n\n");
                    }
                    message.content.push_str(&text);
                }
                Some(role) => self
                    .skipped
                    .add(format!("{role} message (Codex's own instructions)")),
                None => return Err(LineError::new(line, "message item without a \"role\"")),
            },
            "reasoning" => {
                let mut parts: Vec<&str> = Vec::new();
                for key in ["summary", "content"] {
                    if let Some(blocks) = item.get(key).and_then(Value::as_array) {
                        parts.extend(
                            blocks
                                .iter()
                                .filter_map(|b| b.get("text").and_then(Value::as_str)),
                        );
                    }
                }
                let text = parts.join("\n\n");
                if text.trim().is_empty() {
                    self.skipped
                        .add("encrypted reasoning item (no readable summary)");
                } else {
                    self.assistant(at, true)
                        .reasoning
                        .push(Reasoning::Text { text });
                }
            }
            "function_call" | "custom_tool_call" => {
                let (Some(id), Some(name)) = (str_field("call_id"), str_field("name")) else {
                    return Err(LineError::new(
                        line,
                        format!("{kind} without \"call_id\" or \"name\""),
                    ));
                };
                let arguments = if kind == "function_call" {
                    super::chat::arguments_text(item.get("arguments"))
                } else {
                    json!({"input": str_field("input").unwrap_or("")}).to_string()
                };
                let call = ToolCall {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    arguments,
                };
                self.assistant(at, false).tool_calls.push(call);
            }
            "function_call_output" | "custom_tool_call_output" => {
                self.open = None;
                let id = str_field("call_id")
                    .ok_or_else(|| LineError::new(line, format!("{kind} without \"call_id\"")))?;
                let result = Message {
                    role: Role::Tool,
                    content: output_text(item.get("output"), self.skipped),
                    tool_call_id: Some(id.to_owned()),
                    ..Message::user("")
                };
                self.t.entries.push(Entry::new(result, at));
            }
            other => self.skipped.add(format!("{other} item")),
        }
        Ok(())
    }

    /// Session metadata (`session_meta` payload or the legacy first line).
    fn meta(&mut self, meta: &Map<String, Value>) {
        Transcript::first(&mut self.t.cwd, meta.get("cwd"));
        Transcript::first(&mut self.t.model, meta.get("model"));
        self.t.started_at = self.t.started_at.or(timestamp(meta.get("timestamp")));
        if meta
            .get("instructions")
            .or_else(|| meta.get("base_instructions"))
            .is_some_and(|v| !v.is_null())
        {
            self.skipped
                .add("Codex instructions (its own system prompt)");
        }
    }
}

/// Reads a Codex rollout file, current or legacy.
pub(crate) fn parse(lines: &[Line], skipped: &mut Tally) -> Result<Transcript, LineError> {
    let mut b = Builder {
        t: Transcript::default(),
        skipped,
        open: None,
    };
    for line in lines {
        let n = line.number;
        let obj = line
            .value
            .as_object()
            .ok_or_else(|| LineError::new(n, "not a JSON object"))?;
        let at = timestamp(obj.get("timestamp"));
        let payload = obj.get("payload").and_then(Value::as_object);
        match (obj.get("type").and_then(Value::as_str), payload) {
            (Some("session_meta"), Some(meta)) => b.meta(meta),
            (Some("turn_context"), Some(context)) => {
                Transcript::first(&mut b.t.model, context.get("model"));
                Transcript::first(&mut b.t.cwd, context.get("cwd"));
                b.skipped.add("turn_context record");
            }
            (Some("response_item"), Some(item)) => b.item(item, at, n)?,
            (Some("event_msg"), Some(_)) => b
                .skipped
                .add("event_msg record (repeats the response items)"),
            (Some(kind), Some(_)) => b.skipped.add(format!("{kind} record")),
            // Legacy: the first line is the session, then bare items.
            (None, None) if obj.contains_key("record_type") => b.skipped.add(format!(
                "{} record",
                obj.get("record_type")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
            )),
            (None, None) if obj.contains_key("id") && obj.contains_key("timestamp") => b.meta(obj),
            (Some(_), None) => b.item(obj, None, n)?,
            _ => {
                return Err(LineError::new(
                    n,
                    "expected a Codex record ({timestamp, type, payload}) or a response item",
                ));
            }
        }
    }
    Ok(b.t)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn lines(values: &[Value]) -> Vec<Line> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| Line {
                number: i + 1,
                value: v.clone(),
            })
            .collect()
    }

    fn item(payload: Value) -> Value {
        json!({"timestamp": "2025-09-10T08:00:00.000Z", "type": "response_item", "payload": payload})
    }

    #[test]
    fn a_current_rollout_maps_turns_calls_and_outputs() {
        let mut tally = Tally::default();
        let t = parse(
            &lines(&[
                json!({"timestamp":"2025-09-10T07:59:59.000Z","type":"session_meta","payload":{"id":"x","timestamp":"2025-09-10T07:59:59.000Z","cwd":"/repo","instructions":"be codex"}}),
                json!({"timestamp":"2025-09-10T08:00:00.000Z","type":"turn_context","payload":{"cwd":"/repo","model":"gpt-5-codex"}}),
                item(json!({"type":"message","role":"developer","content":[{"type":"input_text","text":"perms"}]})),
                item(json!({"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]})),
                json!({"timestamp":"2025-09-10T08:00:00.000Z","type":"event_msg","payload":{"type":"user_message","message":"list files"}}),
                item(json!({"type":"reasoning","summary":[{"type":"summary_text","text":"**Listing**"}],"encrypted_content":"gAAA"})),
                item(json!({"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"})),
                item(json!({"type":"function_call_output","call_id":"call_1","output":"a.rs\nb.rs"})),
                item(json!({"type":"reasoning","summary":[],"encrypted_content":"gAAA"})),
                item(json!({"type":"custom_tool_call","call_id":"call_2","name":"apply_patch","input":"*** Begin Patch"})),
                item(json!({"type":"custom_tool_call_output","call_id":"call_2","output":{"content":"Done"}})),
                item(json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Two files."}]})),
                item(json!({"type":"web_search_call","status":"completed"})),
                item(json!({"type":"function_call","name":"view_image","arguments":"{}","call_id":"call_3"})),
                item(json!({"type":"function_call_output","call_id":"call_3","output":[{"type":"input_text","text":"a chart"},{"type":"input_image","image_url":"data:image/png;base64,AA"}]})),
            ]),
            &mut tally,
        )
        .unwrap();
        assert_eq!(t.cwd.as_deref(), Some("/repo"));
        assert_eq!(t.model.as_deref(), Some("gpt-5-codex"));
        let roles: Vec<Role> = t.entries.iter().map(|e| e.message.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::Tool
            ]
        );
        let first = &t.entries[1].message;
        assert_eq!(
            first.reasoning,
            [Reasoning::Text {
                text: "**Listing**".into()
            }]
        );
        assert_eq!(first.tool_calls[0].arguments, r#"{"command":["ls"]}"#);
        assert_eq!(
            t.entries[3].message.tool_calls[0].arguments,
            r#"{"input":"*** Begin Patch"}"#
        );
        assert_eq!(t.entries[4].message.content, "Done");
        assert_eq!(t.entries[5].message.content, "Two files.");
        assert_eq!(tally.0["event_msg record (repeats the response items)"], 1);
        assert_eq!(tally.0["developer message (Codex's own instructions)"], 1);
        assert_eq!(tally.0["encrypted reasoning item (no readable summary)"], 1);
        // Text then a call in one model turn: one assistant message.
        assert_eq!(t.entries[5].message.tool_calls[0].id, "call_3");
        assert_eq!(t.entries[6].message.content, "a chart");
        assert_eq!(tally.0["input_image block"], 1);
        assert_eq!(tally.0["web_search_call item"], 1);
        assert_eq!(tally.0["Codex instructions (its own system prompt)"], 1);
    }

    #[test]
    fn a_legacy_rollout_reads_its_session_line_and_bare_items() {
        let mut tally = Tally::default();
        let t = parse(
            &lines(&[
                json!({"id":"0199","timestamp":"2025-05-01T12:00:00.000Z","instructions":null}),
                json!({"record_type":"state"}),
                json!({"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}),
                json!({"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}),
                json!({"type":"function_call_output","call_id":"c","output":"{\"output\":\"ok\"}"}),
            ]),
            &mut tally,
        )
        .unwrap();
        assert_eq!(t.started_at, Some(1_746_100_800_000));
        assert_eq!(t.entries.len(), 3);
        assert_eq!(tally.0["state record"], 1);
        let err = parse(
            &lines(&[json!({"type":"function_call","name":"x"})]),
            &mut tally,
        )
        .unwrap_err();
        assert!(err.reason.contains("call_id"));
    }
}
