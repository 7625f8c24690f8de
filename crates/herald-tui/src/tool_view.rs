//! How a tool call reads to a person: the one argument that says what it
//! does (the command, the path, the pattern), and what its output holds
//! (an exit code, a diff, a task list).

use herald_protocol::one_line;
use serde_json::Value;

/// The argument that says what a call does, on one line and at most `max`
/// characters: the command of `terminal`, the path of file tools, the
/// pattern of a search, the goal of a delegation; otherwise a compact form
/// of the arguments.
pub fn key_argument(tool: &str, arguments: &str, max: usize) -> String {
    let parsed: Option<Value> = serde_json::from_str(arguments).ok();
    let field = |names: &[&str]| -> Option<String> {
        let object = parsed.as_ref()?.as_object()?;
        names
            .iter()
            .find_map(|name| object.get(*name).and_then(Value::as_str))
            .map(str::to_owned)
    };
    let text = match tool {
        "terminal" | "process" => field(&["command", "action"]),
        "read_file" | "write_file" | "patch" => field(&["path"]),
        "search_files" => field(&["pattern", "query"]).map(|pattern| match field(&["path"]) {
            Some(path) => format!("{pattern} in {path}"),
            None => pattern,
        }),
        "delegate_task" => field(&["goal"]).or_else(|| {
            let tasks = parsed.as_ref()?.get("tasks")?.as_array()?;
            Some(format!("{} tasks", tasks.len()))
        }),
        "execute_code" => field(&["code"]).map(|code| first_line(&code)),
        "skill_view" | "skills_list" => field(&["name", "query", "category"]),
        "session_search" | "mcp_search" => field(&["query"]),
        "memory" => field(&["action"]).map(|action| match field(&["target"]) {
            Some(target) => format!("{action} {target}"),
            None => action,
        }),
        "clarify" => field(&["question"]),
        // The list itself is shown under the call.
        "todo_write" | "todo_read" => Some(String::new()),
        _ => None,
    };
    let text = text.unwrap_or_else(|| compact_arguments(parsed.as_ref(), arguments));
    shorten(&one_line(&text), max)
}

/// `arguments` as `key=value` pairs (strings unquoted), for tools without
/// a known key argument.
fn compact_arguments(parsed: Option<&Value>, raw: &str) -> String {
    match parsed.and_then(Value::as_object) {
        Some(object) if object.is_empty() => String::new(),
        Some(object) => object
            .iter()
            .map(|(key, value)| match value {
                Value::String(text) => format!("{key}={text}"),
                other => format!("{key}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        None => raw.to_owned(),
    }
}

fn first_line(text: &str) -> String {
    let mut lines = text.lines().filter(|line| !line.trim().is_empty());
    let first = lines.next().unwrap_or_default().trim().to_owned();
    match lines.count() {
        0 => first,
        more => format!("{first} (+{more} lines)"),
    }
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

/// A duration for people: `840 ms`, `12.4 s`, `3 m 05 s`.
pub fn duration(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} m {:02} s", ms / 60_000, (ms / 1000) % 60),
    }
}

/// A byte count for people: `512 B`, `3.4 KB`, `1.2 MB`.
pub fn bytes(count: u64) -> String {
    match count {
        0..1_000 => format!("{count} B"),
        1_000..1_000_000 => format!("{:.1} KB", count as f64 / 1000.0),
        _ => format!("{:.1} MB", count as f64 / 1_000_000.0),
    }
}

/// A token count for people: `950`, `12.3k`, `1.2M`.
pub fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1000.0),
        _ => format!("{:.1}M", count as f64 / 1_000_000.0),
    }
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
            "fn main in src"
        );
        assert_eq!(
            key_argument("delegate_task", r#"{"tasks":[{},{}]}"#, 80),
            "2 tasks"
        );
        assert_eq!(
            key_argument("mcp__x__y", r#"{"a":1,"b":"c"}"#, 80),
            "a=1 b=c"
        );
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

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(duration(840), "840 ms");
        assert_eq!(duration(12_400), "12.4 s");
        assert_eq!(duration(185_000), "3 m 05 s");
        assert_eq!(bytes(3_400), "3.4 KB");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(950), "950");
    }
}
