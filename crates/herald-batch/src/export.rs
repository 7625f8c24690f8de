//! Trajectories as training data. Two formats, one JSON object a line:
//!
//! - ShareGPT: `{"id", "conversations": [{"from": "system"|"human"|"gpt"|"tool", "value"}]}`,
//!   a reply's tool calls as `<tool_call>{"name", "arguments"}</tool_call>`
//!   after its text and each result as `<tool_response>{"tool_call_id",
//!   "name", "content"}</tool_response>`.
//! - OpenAI: `{"id", "messages": [...]}` in the Chat Completions message
//!   format (`tool_calls` with `function.name`/`arguments`, `tool`
//!   messages with `tool_call_id`).
//!
//! Only completed items with a final answer are exported; an item whose
//! model called a tool that does not exist (a hallucinated name) is left
//! out too. What was left out is counted.

use std::io::Write;

use herald_protocol::{Message, Role};
use serde_json::{Value, json};

use crate::BatchError;
use crate::results::{ItemResult, ItemStatus, OutDir, Trajectory};

/// The two trajectory formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    ShareGpt,
    OpenAi,
}

/// What an export wrote and left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportCounts {
    pub exported: usize,
    /// Items that did not complete.
    pub not_completed: usize,
    pub no_final_answer: usize,
    /// Items with a call to a tool that does not exist.
    pub unknown_tool: usize,
    /// Items whose trajectory file is missing.
    pub missing: usize,
}

/// Exports the batch in `out` to `writer`.
pub fn export(
    out: &OutDir,
    format: ExportFormat,
    writer: &mut impl Write,
) -> Result<ExportCounts, BatchError> {
    let results = out.read_results()?;
    let mut items = Vec::with_capacity(results.len());
    for result in results {
        let trajectory = out.read_trajectory(&result.hash)?;
        items.push((result, trajectory));
    }
    export_items(items, format, writer)
}

/// Exports `(result, trajectory)` pairs (from a directory or the queue).
pub fn export_items(
    items: impl IntoIterator<Item = (ItemResult, Option<Trajectory>)>,
    format: ExportFormat,
    writer: &mut impl Write,
) -> Result<ExportCounts, BatchError> {
    let mut counts = ExportCounts::default();
    for (result, trajectory) in items {
        if result.status != ItemStatus::Completed {
            counts.not_completed += 1;
            continue;
        }
        if result
            .final_answer
            .as_deref()
            .is_none_or(|a| a.trim().is_empty())
        {
            counts.no_final_answer += 1;
            continue;
        }
        let Some(trajectory) = trajectory else {
            counts.missing += 1;
            continue;
        };
        if has_unknown_tool(&trajectory.messages) {
            counts.unknown_tool += 1;
            continue;
        }
        let line = match format {
            ExportFormat::ShareGpt => sharegpt(&result, &trajectory),
            ExportFormat::OpenAi => openai(&result, &trajectory),
        };
        serde_json::to_writer(&mut *writer, &line)
            .map_err(|err| BatchError::Invalid(format!("cannot write the export: {err}")))?;
        writer
            .write_all(b"\n")
            .map_err(|err| BatchError::Invalid(format!("cannot write the export: {err}")))?;
        counts.exported += 1;
    }
    Ok(counts)
}

/// The prefix of the error a registry gives a call to a tool it lacks.
const UNKNOWN_TOOL: &str = "unknown tool '";

/// Whether any call went to a tool the agent did not have.
pub fn has_unknown_tool(messages: &[Message]) -> bool {
    messages
        .iter()
        .any(|m| m.role == Role::Tool && m.is_error && m.content.starts_with(UNKNOWN_TOOL))
}

fn sharegpt(result: &ItemResult, trajectory: &Trajectory) -> Value {
    let mut conversations = Vec::new();
    for message in &trajectory.messages {
        let (from, value) = match message.role {
            Role::System => ("system", message.content.clone()),
            Role::User => ("human", message.content.clone()),
            Role::Assistant => {
                let mut value = message.content.clone();
                for call in &message.tool_calls {
                    let arguments: Value = serde_json::from_str(&call.arguments)
                        .unwrap_or(Value::String(call.arguments.clone()));
                    if !value.is_empty() {
                        value.push('\n');
                    }
                    value.push_str(&format!(
                        "<tool_call>\n{}\n</tool_call>",
                        json!({"name": call.name, "arguments": arguments})
                    ));
                }
                ("gpt", value)
            }
            Role::Tool => (
                "tool",
                format!(
                    "<tool_response>\n{}\n</tool_response>",
                    json!({
                        "tool_call_id": message.tool_call_id,
                        "name": message.tool_name,
                        "content": message.content,
                    })
                ),
            ),
        };
        conversations.push(json!({"from": from, "value": value}));
    }
    json!({
        "id": result.id,
        "conversations": conversations,
        "tool_stats": result.tool_stats,
        "model": result.model,
    })
}

fn openai(result: &ItemResult, trajectory: &Trajectory) -> Value {
    let messages: Vec<Value> = trajectory
        .messages
        .iter()
        .map(|message| match message.role {
            Role::System => json!({"role": "system", "content": message.content}),
            Role::User => json!({"role": "user", "content": message.content}),
            Role::Assistant if message.tool_calls.is_empty() => {
                json!({"role": "assistant", "content": message.content})
            }
            Role::Assistant => json!({
                "role": "assistant",
                "content": (!message.content.is_empty()).then_some(&message.content),
                "tool_calls": message.tool_calls.iter().map(|call| json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })).collect::<Vec<_>>(),
            }),
            Role::Tool => json!({
                "role": "tool",
                "tool_call_id": message.tool_call_id.clone().unwrap_or_default(),
                "content": message.content,
            }),
        })
        .collect();
    json!({"id": result.id, "messages": messages, "model": result.model})
}
