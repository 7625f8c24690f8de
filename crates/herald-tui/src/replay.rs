//! A stored conversation as scrollback lines, so a resumed session shows
//! what was said before: prompts, answers (rendered markdown) and each tool
//! call with its outcome.

use std::collections::HashMap;

use herald_protocol::{Message, Role};
use ratatui::text::Line;

use crate::cells::{self, Level, ToolCell};

/// The lines of `messages` at `width`. Tool results are matched to their
/// calls by id; a call without a result shows as not finished.
pub fn conversation(messages: &[Message], width: u16) -> Vec<Line<'static>> {
    let results: HashMap<&str, &Message> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref().map(|id| (id, m)))
        .collect();
    let mut lines = Vec::new();
    for message in messages {
        match message.role {
            Role::User => {
                if is_herald_note(&message.content) {
                    continue;
                }
                lines.extend(cells::user_prompt(&message.content, width));
            }
            Role::Assistant => {
                if !message.content.trim().is_empty() {
                    lines.extend(crate::markdown::render(&message.content, width));
                    lines.push(Line::default());
                }
                for call in &message.tool_calls {
                    match results.get(call.id.as_str()) {
                        Some(result) => lines.extend(cells::tool_call(
                            &ToolCell {
                                name: call.name.clone(),
                                arguments: call.arguments.clone(),
                                ok: !result.is_error,
                                duration_ms: 0,
                                output_bytes: result.content.len() as u64,
                                output: result.content.clone(),
                                error: result.is_error.then(|| {
                                    herald_protocol::one_line(
                                        result.content.lines().next().unwrap_or(""),
                                    )
                                }),
                                exit_code: exit_code(&result.content),
                            },
                            width,
                        )),
                        None => lines.extend(cells::notice(
                            Level::Warning,
                            &format!("{} did not finish", call.name),
                            width,
                        )),
                    }
                }
            }
            Role::System | Role::Tool => {}
        }
    }
    lines
}

/// User-role messages herald writes itself (summaries, background reports,
/// the iteration-limit notice; all start with `[herald`) are not the
/// person's prompts.
fn is_herald_note(content: &str) -> bool {
    content.trim_start().starts_with("[herald")
}

fn exit_code(content: &str) -> Option<i64> {
    if !content.starts_with('{') || !content.contains("\"exit_code\"") {
        return None;
    }
    serde_json::from_str::<serde_json::Value>(content)
        .ok()?
        .get("exit_code")?
        .as_i64()
}
