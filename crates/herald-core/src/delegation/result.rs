//! What a finished child hands back: status,
//! summary, usage, and a trace of its tool calls paired by call id.

use std::collections::HashMap;
use std::path::Path;

use herald_protocol::{AgentStatus, ExitReason, Message, Role, TokenTotals, ToolStatus};
use serde::{Deserialize, Serialize};

/// One tool call of a child, without its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolTraceEntry {
    pub tool: String,
    pub args_bytes: usize,
    pub result_bytes: usize,
    pub status: ToolStatus,
}

/// The report of one child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildResult {
    pub task_index: usize,
    pub agent_id: String,
    pub status: AgentStatus,
    pub summary: String,
    pub exit_reason: ExitReason,
    pub api_calls: u32,
    pub duration_seconds: f64,
    pub model: String,
    pub tokens: TokenTotals,
    /// USD rounded to 1e-6; `null` when its model has no price.
    #[serde(default, with = "herald_protocol::cost_serde")]
    pub cost_usd: Option<f64>,
    pub tool_trace: Vec<ToolTraceEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For a child isolated in a worktree: its branch, commits, diff stat
    /// and whether uncommitted changes are left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<super::worktree::WorktreeReport>,
}

/// The trace of every tool call in `messages`, in call order; a call whose
/// result is missing is reported with status `error`.
pub fn tool_trace(messages: &[Message]) -> Vec<ToolTraceEntry> {
    let results: HashMap<&str, &Message> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref().map(|id| (id, m)))
        .collect();
    messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_calls.iter())
        .map(|call| {
            let result = results.get(call.id.as_str());
            ToolTraceEntry {
                tool: call.name.clone(),
                args_bytes: call.arguments.len(),
                result_bytes: result.map_or(0, |r| r.content.len()),
                status: match result {
                    Some(r) if !r.is_error => ToolStatus::Ok,
                    _ => ToolStatus::Error,
                },
            }
        })
        .collect()
}

/// Cuts a summary longer than `limit` chars to head and tail, saving the full
/// text to `cache_file` and naming it in the marker. If the file cannot be
/// written the marker says so (the cut text is still returned).
pub fn cap_summary(summary: &str, limit: usize, cache_file: &Path) -> String {
    if summary.chars().count() <= limit {
        return summary.to_owned();
    }
    let saved = cache_file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(cache_file, summary));
    let note = match saved {
        Ok(()) => format!(
            "full summary saved to {} (read_file it for the rest)",
            cache_file.display()
        ),
        Err(err) => format!("the full summary could not be saved: {err}"),
    };
    let cut = herald_tools::truncate_head_tail(summary, limit);
    format!("{cut}\n[summary cut to {limit} chars; {note}]")
}

/// The note appended when a child wrote files its parent had read.
pub fn files_note(paths: &[std::path::PathBuf]) -> Option<String> {
    if paths.is_empty() {
        return None;
    }
    let list: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    Some(format!(
        "\n\n[herald] This subagent changed files you read earlier: {}. Re-read them before editing.",
        list.join(", ")
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use herald_protocol::ToolCall;

    #[test]
    fn trace_pairs_results_by_call_id() {
        let calls = vec![
            ToolCall {
                id: "a".into(),
                name: "read_file".into(),
                arguments: "{\"path\":\"x\"}".into(),
            },
            ToolCall {
                id: "b".into(),
                name: "terminal".into(),
                arguments: "{}".into(),
            },
        ];
        let messages = vec![
            Message::user("go"),
            Message::assistant("", calls.clone()),
            Message::tool_result(&calls[1], "boom", true),
            Message::tool_result(&calls[0], "12345", false),
        ];
        let trace = tool_trace(&messages);
        assert_eq!(trace.len(), 2);
        assert_eq!(
            (
                trace[0].tool.as_str(),
                trace[0].args_bytes,
                trace[0].result_bytes
            ),
            ("read_file", 12, 5)
        );
        assert_eq!(trace[0].status, ToolStatus::Ok);
        assert_eq!(trace[1].status, ToolStatus::Error);
    }

    #[test]
    fn long_summaries_are_cut_and_saved() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cache/ag_1.md");
        let long = "x".repeat(5000);
        let cut = cap_summary(&long, 1000, &file);
        assert!(
            cut.len() < 1300 && cut.contains("full summary saved to"),
            "{}",
            cut.len()
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), long);
        assert_eq!(cap_summary("short", 1000, &file), "short");
    }
}
