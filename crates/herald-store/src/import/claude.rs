//! Claude Code session JSONL: `user`/`assistant` records whose `message`
//! holds Anthropic content blocks (text, tool_use, tool_result, thinking),
//! plus meta records (summary, system, file-history-snapshot, ...).
//!
//! Claude Code writes each content block of one API response as its own
//! record sharing `message.id`; those are merged back into one message.
//! Sidechain records (a Task subagent's own conversation) are skipped and
//! counted: the subagent's answer is already in the main conversation as
//! the Task call's result.

use herald_protocol::{Message, Reasoning, Role, ToolCall};
use serde_json::{Map, Value};

use super::time::timestamp;
use super::{Entry, Line, LineError, Tally, Transcript};

/// Joins a text part onto `content` with a blank line between parts.
fn push_text(content: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !content.is_empty() {
        content.push_str("\n\n");
    }
    content.push_str(text);
}

/// Text of a `tool_result` block's content (a string or text blocks).
fn result_text(value: Option<&Value>, skipped: &mut Tally) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut parts = Vec::new();
            for block in blocks {
                match block.get("text").and_then(Value::as_str) {
                    Some(text) => parts.push(text),
                    None => skipped.add(format!("{} block", block_type(block))),
                }
            }
            parts.join("\n")
        }
        _ => String::new(),
    }
}

fn block_type(block: &Value) -> &str {
    block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
}

/// A user record: its tool results (each a tool message), then its text.
fn user(
    message: &Map<String, Value>,
    at: Option<i64>,
    line: usize,
    out: &mut Vec<Entry>,
    skipped: &mut Tally,
) -> Result<(), LineError> {
    let blocks = match message.get("content") {
        Some(Value::String(text)) => {
            out.push(Entry::new(Message::user(text.clone()), at));
            return Ok(());
        }
        Some(Value::Array(blocks)) => blocks,
        _ => {
            return Err(LineError::new(
                line,
                "user message content must be a string or an array of blocks",
            ));
        }
    };
    let mut text = String::new();
    for block in blocks {
        match block_type(block) {
            "text" => push_text(
                &mut text,
                block.get("text").and_then(Value::as_str).unwrap_or(""),
            ),
            "tool_result" => {
                let id = block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        LineError::new(line, "tool_result block without \"tool_use_id\"")
                    })?;
                let result = Message {
                    role: Role::Tool,
                    content: result_text(block.get("content"), skipped),
                    tool_call_id: Some(id.to_owned()),
                    is_error: block
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    ..Message::user("")
                };
                out.push(Entry::new(result, at));
            }
            other => skipped.add(format!("{other} block")),
        }
    }
    if !text.is_empty() {
        out.push(Entry::new(Message::user(text), at));
    }
    Ok(())
}

/// An assistant record's blocks, added to `target`.
fn assistant(
    message: &Map<String, Value>,
    line: usize,
    target: &mut Message,
    skipped: &mut Tally,
) -> Result<(), LineError> {
    let blocks = match message.get("content") {
        Some(Value::String(text)) => {
            push_text(&mut target.content, text);
            return Ok(());
        }
        Some(Value::Array(blocks)) => blocks,
        _ => {
            return Err(LineError::new(
                line,
                "assistant message content must be a string or an array of blocks",
            ));
        }
    };
    for block in blocks {
        match block_type(block) {
            "text" => push_text(
                &mut target.content,
                block.get("text").and_then(Value::as_str).unwrap_or(""),
            ),
            "tool_use" => {
                let id = block.get("id").and_then(Value::as_str);
                let name = block.get("name").and_then(Value::as_str);
                let (Some(id), Some(name)) = (id, name) else {
                    return Err(LineError::new(
                        line,
                        "tool_use block without \"id\" or \"name\"",
                    ));
                };
                target.tool_calls.push(ToolCall {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    arguments: super::chat::arguments_text(block.get("input")),
                });
            }
            // Kept for people to read, never sent back: the signature only
            // holds for the model and account that made it.
            "thinking" => match block.get("thinking").and_then(Value::as_str) {
                Some(text) if !text.trim().is_empty() => {
                    target.reasoning.push(Reasoning::Text {
                        text: text.to_owned(),
                    });
                }
                _ => skipped.add("empty thinking block"),
            },
            other => skipped.add(format!("{other} block")),
        }
    }
    Ok(())
}

/// Reads a Claude Code session file. A file holding only sidechain records
/// (a subagent's own transcript, `agent-*.jsonl`) is read as that
/// conversation.
pub(crate) fn parse(lines: &[Line], skipped: &mut Tally) -> Result<Transcript, LineError> {
    let mut main = Tally::default();
    let t = parse_with(lines, &mut main, false)?;
    if t.entries.is_empty() && main.0.contains_key(SIDECHAIN) {
        return parse_with(lines, skipped, true);
    }
    skipped.0.extend(main.0);
    Ok(t)
}

/// What a skipped sidechain record is counted as.
const SIDECHAIN: &str = "sidechain record (subagent conversation)";

fn parse_with(
    lines: &[Line],
    skipped: &mut Tally,
    sidechains: bool,
) -> Result<Transcript, LineError> {
    let mut t = Transcript::default();
    // The `message.id` of the last assistant entry, to merge its records.
    let mut open_assistant: Option<String> = None;
    for line in lines {
        let n = line.number;
        let obj = line
            .value
            .as_object()
            .ok_or_else(|| LineError::new(n, "not a JSON object"))?;
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| LineError::new(n, "record without a \"type\""))?;
        if kind == "summary" && t.title.is_none() {
            Transcript::first(&mut t.title, obj.get("summary"));
            continue;
        }
        if kind != "user" && kind != "assistant" {
            skipped.add(format!("{kind} record"));
            continue;
        }
        if !sidechains && obj.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            skipped.add(SIDECHAIN);
            continue;
        }
        let at = timestamp(obj.get("timestamp"));
        t.started_at = t.started_at.or(at);
        Transcript::first(&mut t.cwd, obj.get("cwd"));
        let message = obj
            .get("message")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                LineError::new(n, format!("{kind} record without a \"message\" object"))
            })?;
        if kind == "user" {
            open_assistant = None;
            if obj.get("isMeta").and_then(Value::as_bool) == Some(true) {
                skipped.add("meta user message (isMeta)");
                continue;
            }
            user(message, at, n, &mut t.entries, skipped)?;
            continue;
        }
        if let Some(model) = message.get("model").and_then(Value::as_str)
            && model != "<synthetic>"
        {
            Transcript::first(&mut t.model, Some(&Value::String(model.to_owned())));
        }
        let id = message.get("id").and_then(Value::as_str).map(str::to_owned);
        let continues = id.is_some()
            && id == open_assistant
            && t.entries
                .last()
                .is_some_and(|e| e.message.role == Role::Assistant);
        if !continues {
            t.entries
                .push(Entry::new(Message::assistant("", Vec::new()), at));
        }
        open_assistant = id;
        if let Some(last) = t.entries.last_mut() {
            assistant(message, n, &mut last.message, skipped)?;
        }
    }
    Ok(t)
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
    fn records_of_one_response_merge_and_results_become_tool_messages() {
        let mut tally = Tally::default();
        let t = parse(
            &lines(&[
                json!({"type":"summary","summary":"Fix the parser","leafUuid":"u9"}),
                json!({"type":"user","isSidechain":false,"cwd":"/home/u/p","sessionId":"s","timestamp":"2025-06-01T10:00:00.000Z","message":{"role":"user","content":"fix it"}}),
                json!({"type":"assistant","isSidechain":false,"timestamp":"2025-06-01T10:00:02.000Z","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"look first","signature":"sig"}]}}),
                json!({"type":"assistant","isSidechain":false,"message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"a.rs"}}]}}),
                json!({"type":"user","isSidechain":false,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"fn a() {}"},{"type":"image","source":{}}],"is_error":false}]}}),
                json!({"type":"assistant","isSidechain":true,"message":{"id":"msg_s","role":"assistant","content":"side"}}),
                json!({"type":"file-history-snapshot","messageId":"m","snapshot":{}}),
                json!({"type":"user","isMeta":true,"message":{"role":"user","content":"Caveat: ..."}}),
            ]),
            &mut tally,
        )
        .unwrap();
        assert_eq!(t.title.as_deref(), Some("Fix the parser"));
        assert_eq!(t.cwd.as_deref(), Some("/home/u/p"));
        assert_eq!(t.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(t.started_at, Some(1_748_772_000_000));
        let roles: Vec<Role> = t.entries.iter().map(|e| e.message.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
        let a = &t.entries[1].message;
        assert_eq!(a.tool_calls[0].id, "toolu_1");
        assert_eq!(a.tool_calls[0].arguments, r#"{"file_path":"a.rs"}"#);
        assert_eq!(
            a.reasoning,
            [Reasoning::Text {
                text: "look first".into()
            }]
        );
        assert_eq!(t.entries[2].message.content, "fn a() {}");
        assert_eq!(
            t.entries[2].message.tool_call_id.as_deref(),
            Some("toolu_1")
        );
        assert_eq!(tally.0["image block"], 1);
        assert_eq!(tally.0[SIDECHAIN], 1);
        assert_eq!(tally.0["file-history-snapshot record"], 1);
        assert_eq!(tally.0["meta user message (isMeta)"], 1);
    }

    #[test]
    fn a_subagent_file_of_sidechain_records_is_read_as_its_conversation() {
        let mut tally = Tally::default();
        let t = parse(
            &lines(&[
                json!({"type":"user","isSidechain":true,"agentId":"a1","message":{"role":"user","content":"count the tests"}}),
                json!({"type":"assistant","isSidechain":true,"agentId":"a1","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"12"}]}}),
            ]),
            &mut tally,
        )
        .unwrap();
        assert_eq!(t.entries.len(), 2);
        assert!(tally.0.is_empty(), "{:?}", tally.0);
    }

    #[test]
    fn malformed_records_name_their_line() {
        let mut tally = Tally::default();
        let err = parse(
            &lines(&[
                json!({"type":"user","message":{"content":"a"}}),
                json!({"type":"assistant"}),
            ]),
            &mut tally,
        )
        .unwrap_err();
        assert_eq!(err.line, 2);
        assert!(
            err.reason.contains("without a \"message\""),
            "{}",
            err.reason
        );
        let err = parse(&lines(&[json!({"message":{}})]), &mut tally).unwrap_err();
        assert!(err.reason.contains("type"));
    }
}
