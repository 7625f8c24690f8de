//! How a tool call reads to a person: the one argument that says what it
//! does (the command, the path, the pattern), and what its output holds
//! (an exit code, a diff, a task list).

use herald_protocol::one_line;
use serde_json::Value;

/// Argument names that usually say what a call works on, best first (for
/// tools without a rule of their own, MCP tools among them).
const KEY_NAMES: &[&str] = &[
    "command", "path", "file", "pattern", "query", "url", "uri", "goal", "name", "question",
    "action", "id",
];

/// The argument that says what a call does, on one line and at most `max`
/// characters (see [`key_argument_of`]); arguments that are not JSON are
/// shown as they are.
pub fn key_argument(tool: &str, arguments: &str, max: usize) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(args) => key_argument_of(tool, &args, max).unwrap_or_default(),
        Err(_) => shorten(one_line(arguments).trim(), max),
    }
}

/// The argument that says what the call works on, on one line and at most
/// `max` characters: the command, the path, the pattern, the goal… per tool,
/// else the first well-known argument, else the first string argument.
pub fn key_argument_of(tool: &str, args: &Value, max: usize) -> Option<String> {
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    let picked = match tool {
        "search_files" => text("pattern").map(|pattern| match text("path") {
            Some(path) if path != "." => format!("{pattern}  in {path}"),
            _ => pattern,
        }),
        "process" => text("action").map(|action| match text("process_id") {
            Some(id) => format!("{action} {id}"),
            None => action,
        }),
        "execute_code" => text("code").and_then(|code| {
            code.lines()
                .map(str::trim)
                .find(|line| !line.is_empty() && !line.starts_with('#'))
                .map(str::to_owned)
        }),
        "delegate_task" => text("goal").or_else(|| {
            let tasks = args.get("tasks").and_then(Value::as_array)?;
            Some(crate::format::count(tasks.len() as u64, "task", "tasks"))
        }),
        "todo_write" => args
            .get("todos")
            .and_then(Value::as_array)
            .map(|todos| crate::format::count(todos.len() as u64, "item", "items")),
        "agent_wait" => args.get("agent_ids").and_then(Value::as_array).map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ")
        }),
        _ => None,
    };
    let picked = picked
        .or_else(|| KEY_NAMES.iter().find_map(|key| text(key)))
        .or_else(|| {
            args.as_object()?
                .values()
                .find_map(Value::as_str)
                .map(str::to_owned)
        })?;
    let flat = one_line(&picked);
    let flat = flat.trim();
    (!flat.is_empty()).then(|| shorten(flat, max))
}

/// `text` cut to `max` characters with an ellipsis.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// What a call's output is made of, for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputView {
    /// Plain text lines.
    Text(Vec<String>),
    /// A unified diff (`patch` results): its lines, `+`/`-`/`@@` kept.
    Diff {
        lines: Vec<String>,
        added: usize,
        removed: usize,
    },
    /// The task list after a `todo` call.
    Todos(Vec<TodoView>),
}

/// One task of the `todo` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodoView {
    pub content: String,
    /// `pending`, `in_progress`, `completed` or `cancelled`.
    pub status: String,
}

/// Reads a tool's output for display: the `terminal` JSON's `output`
/// field, a `patch` diff, a `todo` list, or the text as it is.
pub fn output_view(tool: &str, output: &str) -> OutputView {
    match tool {
        "todo_write" | "todo_read" => {
            if let Some(todos) = parse_todos(output) {
                return OutputView::Todos(todos);
            }
        }
        "patch" => {
            if let Some(view) = parse_diff(output) {
                return view;
            }
        }
        "terminal" => {
            if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(output)
                && let Some(text) = object.get("output").and_then(Value::as_str)
            {
                return OutputView::Text(text_lines(text));
            }
        }
        _ => {}
    }
    OutputView::Text(text_lines(output))
}

fn text_lines(text: &str) -> Vec<String> {
    herald_protocol::terminal_safe(text.trim_end())
        .lines()
        .map(|line| line.replace('\t', "    "))
        .collect()
}

fn parse_todos(output: &str) -> Option<Vec<TodoView>> {
    let value: Value = serde_json::from_str(output).ok()?;
    let items = value.get("todos")?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(|item| {
                Some(TodoView {
                    content: one_line(item.get("content")?.as_str()?),
                    status: item.get("status")?.as_str()?.to_owned(),
                })
            })
            .collect(),
    )
}

fn parse_diff(output: &str) -> Option<OutputView> {
    let start = output.find("\n---").or_else(|| output.find("\n@@"))?;
    let lines = text_lines(&output[start + 1..]);
    let added = lines
        .iter()
        .filter(|line| line.starts_with('+') && !line.starts_with("+++"))
        .count();
    let removed = lines
        .iter()
        .filter(|line| line.starts_with('-') && !line.starts_with("---"))
        .count();
    Some(OutputView::Diff {
        lines,
        added,
        removed,
    })
}

/// `+N −M` for a `write_file` call: every line of the new content is added.
pub fn written_lines(arguments: &str) -> Option<usize> {
    let value: Value = serde_json::from_str(arguments).ok()?;
    let content = value.get("content")?.as_str()?;
    Some(content.lines().count())
}

/// The content of a `write_file` call (sanitised), or nothing.
pub fn written_content(arguments: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|value| {
            value
                .get("content")?
                .as_str()
                .map(herald_protocol::terminal_safe)
                .map(|c| c.into_owned())
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn key_arguments_name_what_a_call_does() {
        assert_eq!(
            key_argument("terminal", r#"{"command":"cargo test\n-p x"}"#, 80),
            "cargo test -p x"
        );
        assert_eq!(
            key_argument("read_file", r#"{"path":"src/a.rs"}"#, 80),
            "src/a.rs"
        );
        assert_eq!(
            key_argument("search_files", r#"{"pattern":"fn main","path":"src"}"#, 80),
            "fn main  in src"
        );
        assert_eq!(
            key_argument("delegate_task", r#"{"tasks":[{},{}]}"#, 80),
            "2 tasks"
        );
        assert_eq!(
            key_argument("todo_write", r#"{"todos":[{}]}"#, 80),
            "1 item"
        );
        assert_eq!(key_argument("mcp__x__y", r#"{"a":1,"b":"c"}"#, 80), "c");
        assert_eq!(key_argument("mcp__x__y", r#"{}"#, 80), "");
        assert_eq!(key_argument("terminal", "not json", 80), "not json");
        assert_eq!(
            key_argument("terminal", r#"{"command":"echo 0123456789"}"#, 8),
            "echo 01…"
        );
        // Escape sequences in arguments never reach the terminal.
        assert_eq!(
            key_argument("terminal", "{\"command\":\"a\\u001b[2Jb\"}", 80),
            "ab"
        );
    }

    #[test]
    fn outputs_are_read_per_tool() {
        assert_eq!(
            output_view("terminal", r#"{"output":"one\ntwo\n","exit_code":0}"#),
            OutputView::Text(vec!["one".into(), "two".into()])
        );
        let diff = output_view(
            "patch",
            "Patched a.rs: 1 replacement\n--- a/a.rs\n+++ b/a.rs\n@@ -1 +1 @@\n-old\n+new\n+more",
        );
        assert!(
            matches!(
                diff,
                OutputView::Diff {
                    added: 2,
                    removed: 1,
                    ..
                }
            ),
            "{diff:?}"
        );
        let todos = output_view(
            "todo_write",
            r#"{"todos":[{"id":"1","content":"write","status":"completed"},{"id":"2","content":"test","status":"in_progress"}],"counts":{}}"#,
        );
        assert_eq!(
            todos,
            OutputView::Todos(vec![
                TodoView {
                    content: "write".into(),
                    status: "completed".into()
                },
                TodoView {
                    content: "test".into(),
                    status: "in_progress".into()
                },
            ])
        );
        assert_eq!(written_lines(r#"{"path":"a","content":"x\ny\n"}"#), Some(2));
    }
}
