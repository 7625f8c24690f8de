//! How one herald tool call looks in an editor: its ACP kind, a title a
//! person can read, the files it touches (so the editor can follow along)
//! and, for `patch` and `write_file`, the change as a diff.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{
    ContentBlock, Diff, TextContent, ToolCallContent, ToolCallLocation, ToolKind,
};
use serde_json::Value;

/// Longest tool output shown in the editor; the rest is cut with a note
/// (the model saw it all).
const MAX_SHOWN_OUTPUT: usize = 16 * 1024;

/// What the editor shows of a call when it starts.
#[derive(Debug, Clone)]
pub(crate) struct CallView {
    pub kind: ToolKind,
    pub title: String,
    pub locations: Vec<ToolCallLocation>,
    /// Shown from the start: the diff of an edit.
    pub content: Vec<ToolCallContent>,
}

/// The view of a call of tool `name` with JSON `arguments`, in `cwd`.
pub(crate) fn view(name: &str, arguments: &str, cwd: &Path) -> CallView {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    let path = text("path").map(|p| absolute(cwd, &p));
    let at = |path: &Option<PathBuf>| {
        path.iter()
            .map(|p| ToolCallLocation::new(p.clone()))
            .collect::<Vec<_>>()
    };
    let shown = |path: &Option<PathBuf>| {
        path.as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "a file".to_owned())
    };
    let mut view = CallView {
        kind: ToolKind::Other,
        title: name.to_owned(),
        locations: Vec::new(),
        content: Vec::new(),
    };
    match name {
        "read_file" => {
            let line = args
                .get("offset")
                .and_then(Value::as_u64)
                .and_then(|l| u32::try_from(l).ok());
            view.kind = ToolKind::Read;
            view.title = format!("Read {}", shown(&path));
            view.locations = path
                .iter()
                .map(|p| ToolCallLocation::new(p.clone()).line(line))
                .collect();
        }
        "write_file" => {
            view.kind = ToolKind::Edit;
            view.title = format!("Write {}", shown(&path));
            view.locations = at(&path);
            if let (Some(p), Some(content)) = (&path, text("content")) {
                view.content
                    .push(ToolCallContent::Diff(Diff::new(p.clone(), content)));
            }
        }
        "patch" => {
            view.kind = ToolKind::Edit;
            view.title = format!("Edit {}", shown(&path));
            view.locations = at(&path);
            if let (Some(p), Some(old), Some(new)) = (&path, text("old_string"), text("new_string"))
            {
                view.content.push(ToolCallContent::Diff(
                    Diff::new(p.clone(), new).old_text(old),
                ));
            }
        }
        "search_files" => {
            view.kind = ToolKind::Search;
            view.title = format!(
                "Search {}{}",
                text("pattern").unwrap_or_default(),
                text("path").map(|p| format!(" in {p}")).unwrap_or_default()
            );
        }
        "terminal" | "process" | "execute_code" => {
            view.kind = ToolKind::Execute;
            view.title = match text("command") {
                Some(command) => format!("`{}`", one_line(&command, 200)),
                None => name.to_owned(),
            };
        }
        "web_search" | "web_extract" => {
            view.kind = ToolKind::Fetch;
            let target = text("query")
                .or_else(|| text("url"))
                .or_else(|| {
                    args.get("urls").and_then(Value::as_array).map(|urls| {
                        urls.iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                })
                .unwrap_or_default();
            view.title = format!("{name} {}", one_line(&target, 200));
        }
        "todo_write" | "todo_read" | "clarify" => {
            view.kind = ToolKind::Think;
            view.title = match name {
                "todo_write" => "Update the plan".to_owned(),
                "todo_read" => "Read the plan".to_owned(),
                _ => "Ask a question".to_owned(),
            };
        }
        "delegate_task" => {
            view.kind = ToolKind::Think;
            let goals = delegate_goals(&args);
            view.title = match goals.as_slice() {
                [] => "Delegate".to_owned(),
                [one] => format!("Delegate: {}", one_line(one, 120)),
                many => format!("Delegate {} tasks", many.len()),
            };
        }
        _ => {
            if let Some(p) = &path {
                view.locations = vec![ToolCallLocation::new(p.clone())];
            }
        }
    }
    view
}

/// The goals a `delegate_task` call names (one `goal`, or `tasks[].goal`).
fn delegate_goals(args: &Value) -> Vec<String> {
    if let Some(goal) = args.get("goal").and_then(Value::as_str) {
        return vec![goal.to_owned()];
    }
    args.get("tasks")
        .and_then(Value::as_array)
        .map(|tasks| {
            tasks
                .iter()
                .filter_map(|t| t.get("goal").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A tool's output as content the editor shows (cut when very long);
/// terminal output is shown as a code block.
pub(crate) fn output_content(name: &str, output: &str) -> Vec<ToolCallContent> {
    if output.is_empty() {
        return Vec::new();
    }
    let mut shown = cut(output, MAX_SHOWN_OUTPUT);
    if matches!(name, "terminal" | "process" | "execute_code") {
        shown = format!("```\n{shown}\n```");
    }
    vec![text_content(shown)]
}

/// Plain text as tool call content.
pub(crate) fn text_content(text: impl Into<String>) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(text.into())))
}

/// `text` on one line, at most `max` characters.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    cut(&line, max)
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

fn absolute(cwd: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_owned()
    } else {
        cwd.join(path)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn edits_carry_their_diff_and_location() {
        let cwd = Path::new("/w");
        let patch = view(
            "patch",
            r#"{"path": "src/a.rs", "old_string": "x", "new_string": "y"}"#,
            cwd,
        );
        assert_eq!(patch.kind, ToolKind::Edit);
        assert_eq!(patch.title, "Edit /w/src/a.rs");
        let wire = serde_json::to_value(&patch.content).unwrap();
        assert_eq!(
            wire,
            serde_json::json!([{"type": "diff", "path": "/w/src/a.rs", "oldText": "x", "newText": "y"}])
        );
        let write = view(
            "write_file",
            r#"{"path": "/abs/b.txt", "content": "hi"}"#,
            cwd,
        );
        assert_eq!(write.kind, ToolKind::Edit);
        assert_eq!(
            serde_json::to_value(&write.locations).unwrap(),
            serde_json::json!([{"path": "/abs/b.txt"}])
        );
    }

    #[test]
    fn commands_and_unknown_tools_have_readable_titles() {
        let cwd = Path::new("/w");
        let run = view("terminal", r#"{"command": "cargo   test\n -q"}"#, cwd);
        assert_eq!(
            (run.kind, run.title.as_str()),
            (ToolKind::Execute, "`cargo test -q`")
        );
        let other = view("mcp__fs__stat", "not json", cwd);
        assert_eq!(
            (other.kind, other.title.as_str()),
            (ToolKind::Other, "mcp__fs__stat")
        );
        let long = "é".repeat(40_000);
        assert!(output_content("read_file", &long).len() == 1);
    }
}
