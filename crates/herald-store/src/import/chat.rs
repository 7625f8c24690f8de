//! Chat-message transcripts: one OpenAI-style message per line (herald's
//! old export, many tools' logs), Hermes session JSONL (the same after a
//! `session_meta` line) and `{"messages": [...]}` lines (one session each).

use herald_protocol::{ImageData, Message, Reasoning, Role, ToolCall};
use serde_json::{Map, Value};

use super::time::timestamp;
use super::{Entry, Line, LineError, Tally, Transcript};
use crate::messages::role_from_str;

/// What one chat message object became.
enum Item {
    System,
    Message(Entry),
    Skipped,
}

/// Text of a `content` field: a string, `null`, or an array of blocks whose
/// text parts are joined; other blocks (images, audio, files) are counted.
fn content_text(value: Option<&Value>, skipped: &mut Tally) -> Result<String, String> {
    match value {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(blocks)) => {
            let mut parts = Vec::new();
            for block in blocks {
                match block {
                    Value::String(s) => parts.push(s.as_str()),
                    Value::Object(o) => match o.get("text").and_then(Value::as_str) {
                        Some(text) => parts.push(text),
                        None => {
                            let kind = o.get("type").and_then(Value::as_str).unwrap_or("unknown");
                            skipped.add(format!("{kind} block"));
                        }
                    },
                    _ => skipped.add("non-text content block"),
                }
            }
            Ok(parts.join("\n"))
        }
        Some(_) => Err("\"content\" must be a string or an array of text blocks".to_owned()),
    }
}

/// Arguments as the raw JSON text a model would have produced.
pub(crate) fn arguments_text(value: Option<&Value>) -> String {
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
                .filter(|id| !id.is_empty())
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

/// `reasoning` as herald's blocks, Hermes' plain string, or OpenAI-compatible
/// `reasoning_content`; text is kept for people and never sent back.
fn reasoning(obj: &Map<String, Value>) -> Result<Vec<Reasoning>, String> {
    match obj
        .get("reasoning")
        .or_else(|| obj.get("reasoning_content"))
    {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(Vec::new()),
        Some(Value::String(text)) => Ok(vec![Reasoning::Text { text: text.clone() }]),
        Some(blocks) => serde_json::from_value(blocks.clone())
            .map_err(|e| format!("\"reasoning\" is not text or a list of reasoning blocks: {e}")),
    }
}

/// One chat message object.
fn parse_message(
    obj: &Map<String, Value>,
    line: usize,
    skipped: &mut Tally,
) -> Result<Item, String> {
    let role_text = obj
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| "missing \"role\"".to_owned())?;
    let role = match role_text {
        "developer" => Role::System,
        other => match role_from_str(other) {
            Some(role) => role,
            None => {
                skipped.add(format!("'{other}' message"));
                return Ok(Item::Skipped);
            }
        },
    };
    let content = content_text(obj.get("content"), skipped)?;
    if role == Role::System {
        return Ok(Item::System);
    }
    let str_field = |key: &str| obj.get(key).and_then(Value::as_str).map(str::to_owned);
    // A herald chat line carries the images of tool results; they are
    // checked again, as a tool's are, so none a provider refuses comes in.
    let mut content = content;
    let mut images: Vec<ImageData> = match obj.get("images") {
        Some(images) => serde_json::from_value(images.clone())
            .map_err(|e| format!("\"images\" is not a list of {{mime_type, data}}: {e}"))?,
        None => Vec::new(),
    };
    herald_protocol::admit_images(&mut images, &mut content);
    let message = Message {
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
        reasoning: reasoning(obj)?,
    };
    let at = timestamp(obj.get("timestamp").or_else(|| obj.get("created_at")));
    Ok(Item::Message(Entry::new(message, at)))
}

/// Adds one message object to `transcript`.
fn add(
    transcript: &mut Transcript,
    value: &Value,
    line: usize,
    skipped: &mut Tally,
) -> Result<(), LineError> {
    let obj = value
        .as_object()
        .ok_or_else(|| LineError::new(line, "not a JSON object"))?;
    match parse_message(obj, line, skipped).map_err(|e| LineError::new(line, e))? {
        // The other tool's instructions: a resumed session runs under the
        // system prompt herald builds for it.
        Item::System => skipped.add("system message (herald builds its own system prompt)"),
        Item::Message(entry) => transcript.entries.push(entry),
        Item::Skipped => {}
    }
    Ok(())
}

/// Hermes' `session_meta` line: model, cwd, title, time; its tool list is
/// the one Hermes offered and has no use here.
fn session_meta(transcript: &mut Transcript, obj: &Map<String, Value>, skipped: &mut Tally) {
    Transcript::first(&mut transcript.model, obj.get("model"));
    Transcript::first(&mut transcript.cwd, obj.get("cwd"));
    Transcript::first(&mut transcript.title, obj.get("title"));
    transcript.started_at = transcript.started_at.or(timestamp(obj.get("timestamp")));
    if obj
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
    {
        skipped.add("session_meta tool list");
    }
}

/// A file of chat messages, one per line (Hermes' `session_meta` lines read
/// as metadata).
pub(crate) fn parse_lines(lines: &[Line], skipped: &mut Tally) -> Result<Transcript, LineError> {
    let mut transcript = Transcript::default();
    for line in lines {
        if let Some(obj) = line.value.as_object()
            && obj.get("role").and_then(Value::as_str) == Some("session_meta")
        {
            session_meta(&mut transcript, obj, skipped);
            continue;
        }
        add(&mut transcript, &line.value, line.number, skipped)?;
    }
    Ok(transcript)
}

/// A file of `{"messages": [...]}` lines: each line is one session.
pub(crate) fn parse_message_lists(
    lines: &[Line],
    skipped: &mut Tally,
) -> Result<Vec<Transcript>, LineError> {
    let mut out = Vec::new();
    for line in lines {
        let obj = line
            .value
            .as_object()
            .ok_or_else(|| LineError::new(line.number, "not a JSON object"))?;
        let messages = obj
            .get("messages")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                LineError::new(
                    line.number,
                    "expected {\"messages\": [...]} like the lines before",
                )
            })?;
        let mut transcript = Transcript::default();
        Transcript::first(&mut transcript.model, obj.get("model"));
        Transcript::first(&mut transcript.title, obj.get("title"));
        for message in messages {
            add(&mut transcript, message, line.number, skipped)?;
        }
        for key in obj.keys() {
            if !matches!(key.as_str(), "messages" | "model" | "title") {
                skipped.add(format!("'{key}' field"));
            }
        }
        out.push(transcript);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn openai_and_herald_tool_calls_are_both_read() {
        let mut tally = Tally::default();
        let t = parse_lines(
            &lines(&[
                json!({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"ls\"}"}}]}),
                json!({"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"terminal","arguments":{"command":"ls"}}]}),
            ]),
            &mut tally,
        )
        .unwrap();
        let calls: Vec<&Vec<ToolCall>> = t.entries.iter().map(|e| &e.message.tool_calls).collect();
        assert_eq!(calls[0][0].name, "terminal");
        assert_eq!(calls[0][0].arguments, r#"{"command":"ls"}"#);
        assert_eq!(calls[0], calls[1]);
    }

    #[test]
    fn hermes_meta_and_string_reasoning_are_read_and_images_counted() {
        let mut tally = Tally::default();
        let t = parse_lines(
            &lines(&[
                json!({"role":"session_meta","model":"anthropic/claude-sonnet-4","tools":[{"type":"function"}],"platform":"cli","timestamp":"2026-04-18T19:26:00.214787"}),
                json!({"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"x"}}],"timestamp":"2026-04-18T19:26:01"}),
                json!({"role":"assistant","content":"seen","reasoning":"the user wants a look","finish_reason":"stop"}),
                json!({"role":"robot","content":"beep"}),
            ]),
            &mut tally,
        )
        .unwrap();
        assert_eq!(t.model.as_deref(), Some("anthropic/claude-sonnet-4"));
        assert_eq!(t.started_at, Some(1_776_540_360_214));
        assert_eq!(t.entries[0].message.content, "look");
        assert_eq!(t.entries[0].at, Some(1_776_540_361_000));
        assert_eq!(
            t.entries[1].message.reasoning,
            [Reasoning::Text {
                text: "the user wants a look".into()
            }]
        );
        assert_eq!(tally.0["image_url block"], 1);
        assert_eq!(tally.0["'robot' message"], 1);
        assert_eq!(tally.0["session_meta tool list"], 1);
    }

    #[test]
    fn bad_messages_say_what_is_wrong_with_their_line() {
        let err = |v: Value| {
            let mut tally = Tally::default();
            parse_lines(
                &lines(&[json!({"role":"user","content":"ok"}), v]),
                &mut tally,
            )
            .unwrap_err()
        };
        let e = err(json!([1]));
        assert_eq!(e.line, 2);
        assert!(e.reason.contains("not a JSON object"));
        assert!(
            err(json!({"content":"x"}))
                .reason
                .contains("missing \"role\"")
        );
        assert!(
            err(json!({"role":"user","content":5}))
                .reason
                .contains("content")
        );
        assert!(
            err(json!({"role":"assistant","tool_calls":{}}))
                .reason
                .contains("tool_calls")
        );
    }

    #[test]
    fn each_messages_line_is_one_session() {
        let mut tally = Tally::default();
        let t = parse_message_lists(
            &lines(&[
                json!({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"a"}]}),
                json!({"messages":[{"role":"user","content":"b"}],"model":"gpt-4o","metadata":{}}),
            ]),
            &mut tally,
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert!(t[0].system_prompt.is_empty());
        assert_eq!(
            tally.0["system message (herald builds its own system prompt)"],
            1
        );
        assert_eq!(t[1].model.as_deref(), Some("gpt-4o"));
        assert_eq!(tally.0["'metadata' field"], 1);
        let err = parse_message_lists(&lines(&[json!({"role":"user"})]), &mut tally).unwrap_err();
        assert!(err.reason.contains("messages"));
    }
}
