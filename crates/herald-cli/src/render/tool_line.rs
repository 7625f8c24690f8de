//! The one line `herald run` prints per finished tool call: its outcome
//! mark, the tool, the argument that says what it worked on, and what came
//! of it (exit code, diff stats, duration, size, or why it failed):
//!
//! ```text
//! ✓ terminal  cargo test  exit 0 · 1.2 s · 3.4 KB
//! ✓ patch  src/lib.rs  +3 −1 · 4 ms
//! ✗ read_file  src/x.rs · not found: src/x.rs
//! ```

use herald_protocol::{ToolStatus, one_line};
use serde_json::Value;

use unicode_width::UnicodeWidthStr;

use super::format;
use super::live::fit;
use super::style::Palette;
use crate::render::preview;

/// Chars of the key argument shown.
const KEY_CHARS: usize = 60;
/// Chars of a failure reason shown.
const REASON_CHARS: usize = 160;
/// What a finished call reports, as `tool.started` and `tool.completed`
/// carry it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Finished<'a> {
    pub name: &'a str,
    /// The call's arguments as the model sent them (JSON text).
    pub arguments: &'a str,
    pub status: ToolStatus,
    pub duration_ms: u64,
    pub output_bytes: u64,
    pub error: Option<&'a str>,
    pub exit_code: Option<i64>,
}

/// Lines added and removed by an edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DiffStats {
    pub added: usize,
    /// `None` when the removed lines are not known (a whole file written).
    pub removed: Option<usize>,
}

impl DiffStats {
    fn text(self) -> String {
        match self.removed {
            Some(removed) => format!("+{} \u{2212}{removed}", self.added),
            None => format!("+{}", self.added),
        }
    }
}

/// The line for `call`, without a newline. With a terminal `width`, a
/// failure reason is cut so the line fits (keeping at least 40 columns of
/// it); the whole reason stays in the event.
pub(crate) fn tool_line(call: &Finished<'_>, palette: Palette, width: Option<usize>) -> String {
    let args: Option<Value> = serde_json::from_str(call.arguments).ok();
    let failed = call.status == ToolStatus::Error;
    let ok = !failed && call.exit_code.is_none_or(|code| code == 0);
    let mark = if ok { "\u{2713}" } else { "\u{2717}" };
    let mut line = format!(
        "{} {}",
        if ok {
            palette.green(mark)
        } else {
            palette.red(mark)
        },
        palette.bold(call.name)
    );
    // The same line without styles, to measure it.
    let mut plain = format!("{mark} {}", call.name);
    let key = match &args {
        Some(args) => key_argument(call.name, args),
        None => Some(preview(one_line(call.arguments).trim(), KEY_CHARS)).filter(|s| !s.is_empty()),
    };
    if let Some(key) = key {
        for text in [&mut line, &mut plain] {
            text.push_str("  ");
            text.push_str(&key);
        }
    }
    let mut details = Vec::new();
    if let Some(code) = call.exit_code {
        details.push(format!("exit {code}"));
    }
    let stats = args
        .as_ref()
        .filter(|_| !failed)
        .and_then(|args| diff_stats(call.name, args));
    if let Some(stats) = stats {
        details.push(stats.text());
    }
    if !failed || call.duration_ms >= 1000 {
        details.push(format::duration_ms(call.duration_ms));
    }
    if !failed && stats.is_none() {
        details.push(format::bytes(call.output_bytes));
    }
    if !details.is_empty() {
        let details = details.join(" \u{b7} ");
        line.push_str("  ");
        line.push_str(&palette.dim(&details));
        plain.push_str("  ");
        plain.push_str(&details);
    }
    if failed {
        let reason = call.error.map_or_else(
            || "failed".to_owned(),
            |reason| preview(&one_line(reason), REASON_CHARS),
        );
        let reason = match width {
            Some(width) => {
                let room = width.saturating_sub(plain.width() + 3).max(41);
                fit(&reason, room)
            }
            None => reason,
        };
        line.push_str(" \u{b7} ");
        line.push_str(&palette.red(&reason));
    }
    line
}

/// The argument that says what the call works on, on one line and short
/// (the same choice the TUI makes: [`herald_tui::tool_view::key_argument_of`]).
pub(crate) fn key_argument(name: &str, args: &Value) -> Option<String> {
    herald_tui::tool_view::key_argument_of(name, args, KEY_CHARS)
}

/// Lines an edit adds and removes: `patch` by a line diff of its old and
/// new text, `write_file` by the lines of its content.
pub(crate) fn diff_stats(name: &str, args: &Value) -> Option<DiffStats> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    match name {
        "patch" => {
            let diff = similar::TextDiff::from_lines(text("old_string")?, text("new_string")?);
            let (mut added, mut removed) = (0, 0);
            for change in diff.iter_all_changes() {
                match change.tag() {
                    similar::ChangeTag::Insert => added += 1,
                    similar::ChangeTag::Delete => removed += 1,
                    similar::ChangeTag::Equal => {}
                }
            }
            Some(DiffStats {
                added,
                removed: Some(removed),
            })
        }
        "write_file" => Some(DiffStats {
            added: text("content")?.lines().count(),
            removed: None,
        }),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const PLAIN: Palette = Palette { color: false };

    fn finished<'a>(name: &'a str, arguments: &'a str) -> Finished<'a> {
        Finished {
            name,
            arguments,
            status: ToolStatus::Ok,
            duration_ms: 1_234,
            output_bytes: 3_482,
            error: None,
            exit_code: None,
        }
    }

    #[test]
    fn a_command_shows_its_exit_code_duration_and_size() {
        let args = json!({"command": "cargo test"}).to_string();
        let call = Finished {
            exit_code: Some(0),
            ..finished("terminal", &args)
        };
        assert_eq!(
            tool_line(&call, PLAIN, None),
            "\u{2713} terminal  cargo test  exit 0 \u{b7} 1.2 s \u{b7} 3.4 KB"
        );
        let failing = Finished {
            exit_code: Some(101),
            duration_ms: 80,
            ..finished("terminal", &args)
        };
        assert_eq!(
            tool_line(&failing, PLAIN, None),
            "\u{2717} terminal  cargo test  exit 101 \u{b7} 80 ms \u{b7} 3.4 KB"
        );
    }

    #[test]
    fn a_failure_gives_its_reason() {
        let args = json!({"path": "src/x.rs"}).to_string();
        let call = Finished {
            status: ToolStatus::Error,
            duration_ms: 0,
            error: Some("not found: src/x.rs\nlook again"),
            ..finished("read_file", &args)
        };
        assert_eq!(
            tool_line(&call, PLAIN, None),
            "\u{2717} read_file  src/x.rs \u{b7} not found: src/x.rs look again"
        );
        // A slow failure keeps its duration.
        let slow = Finished {
            duration_ms: 180_000,
            ..call
        };
        assert_eq!(
            tool_line(&slow, PLAIN, None),
            "\u{2717} read_file  src/x.rs  3 min 00 s \u{b7} not found: src/x.rs look again"
        );
    }

    #[test]
    fn edits_show_their_diff_stats() {
        let patch = json!({
            "path": "src/lib.rs",
            "old_string": "fn a() {\n    1\n}\n",
            "new_string": "fn a() {\n    2\n}\nfn b() {}\n"
        })
        .to_string();
        assert_eq!(
            tool_line(
                &Finished {
                    duration_ms: 4,
                    ..finished("patch", &patch)
                },
                PLAIN,
                None
            ),
            "\u{2713} patch  src/lib.rs  +2 \u{2212}1 \u{b7} 4 ms"
        );
        let write = json!({"path": "notes.txt", "content": "a\nb\nc\n"}).to_string();
        assert_eq!(
            tool_line(
                &Finished {
                    duration_ms: 2,
                    ..finished("write_file", &write)
                },
                PLAIN,
                None
            ),
            "\u{2713} write_file  notes.txt  +3 \u{b7} 2 ms"
        );
    }

    #[test]
    fn key_arguments_per_tool() {
        let key = |name: &str, args: Value| key_argument(name, &args);
        assert_eq!(
            key("search_files", json!({"pattern": "fn main", "path": "src"})),
            Some("fn main  in src".into())
        );
        assert_eq!(
            key("process", json!({"action": "poll", "process_id": "p1"})),
            Some("poll p1".into())
        );
        assert_eq!(
            key(
                "execute_code",
                json!({"code": "# count\nimport os\nprint(1)"})
            ),
            Some("import os".into())
        );
        assert_eq!(
            key(
                "delegate_task",
                json!({"tasks": [{"goal": "a"}, {"goal": "b"}]})
            ),
            Some("2 tasks".into())
        );
        assert_eq!(
            key("todo_write", json!({"todos": [{"content": "x"}]})),
            Some("1 item".into())
        );
        assert_eq!(
            key("mcp__fs__read", json!({"limit": 3, "file": "a.md"})),
            Some("a.md".into())
        );
        assert_eq!(
            key("mcp__x__y", json!({"limit": 3, "text": "hello"})),
            Some("hello".into())
        );
        assert_eq!(key("todo_read", json!({})), None);
        // One line, no escape sequences, cut short.
        let long = key(
            "terminal",
            json!({"command": format!("echo \x1b[2J{}\nls", "x".repeat(80))}),
        )
        .unwrap();
        assert!(!long.contains('\x1b') && !long.contains('\n'), "{long:?}");
        assert_eq!(long.chars().count(), KEY_CHARS);
    }

    #[test]
    fn on_a_terminal_a_long_reason_is_cut_to_the_width() {
        let args = json!({"path": "src/x.rs"}).to_string();
        let reason = format!("not found: src/x.rs; {}", "look elsewhere ".repeat(10));
        let call = Finished {
            status: ToolStatus::Error,
            duration_ms: 0,
            error: Some(&reason),
            ..finished("read_file", &args)
        };
        let line = tool_line(&call, PLAIN, Some(80));
        assert_eq!(line.width(), 79, "{line}");
        assert!(line.ends_with('\u{2026}'), "{line}");
        // A narrow terminal still gets 40 columns of the reason.
        let narrow = tool_line(&call, PLAIN, Some(30));
        assert!(
            narrow.contains("not found: src/x.rs; look elsewhere"),
            "{narrow}"
        );
    }

    #[test]
    fn arguments_that_are_not_json_are_previewed() {
        let call = Finished {
            status: ToolStatus::Error,
            error: Some("invalid arguments: EOF"),
            duration_ms: 0,
            ..finished("read_file", "{\"path\": ")
        };
        assert_eq!(
            tool_line(&call, PLAIN, None),
            "\u{2717} read_file  {\"path\": \u{b7} invalid arguments: EOF"
        );
    }

    #[test]
    fn colour_marks_the_outcome() {
        let args = json!({"path": "a"}).to_string();
        let line = tool_line(&finished("read_file", &args), Palette { color: true }, None);
        assert!(
            line.starts_with("\x1b[32m\u{2713}\x1b[0m \x1b[1mread_file\x1b[0m  a"),
            "{line:?}"
        );
    }
}
