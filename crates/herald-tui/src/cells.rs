//! The conversation as lines for the scrollback: one function per kind of
//! cell (the user's prompt, a tool call with its outcome, a diff, the task
//! list, a finished subagent, notices). Each returns lines no wider than
//! the width it is given; the app prints them above the pane once final.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::tool_view::{self, OutputView, TodoView};
use crate::wrap::{wrap_line, wrap_with_prefix};

/// Output lines a tool cell shows before it says how many more there are.
pub const TOOL_OUTPUT_LINES: usize = 5;
/// Diff lines a patch cell shows.
pub const DIFF_LINES: usize = 12;

/// The dimmed style of secondary text.
pub fn dim() -> Style {
    Style::default().add_modifier(Modifier::DIM)
}

/// What the session header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub version: String,
    pub model: String,
    pub provider: String,
    pub cwd: String,
    pub session_id: String,
    pub resumed: bool,
}

/// The first lines of a session: who runs, where, and how to get help.
pub fn header(header: &Header, width: u16) -> Vec<Line<'static>> {
    let title = Line::from(vec![
        Span::styled("herald ", Style::default().bold()),
        Span::styled(header.version.clone(), dim()),
        Span::raw(" · "),
        Span::styled(header.model.clone(), Style::default().fg(Color::Cyan)),
        Span::styled(format!(" ({})", header.provider), dim()),
    ]);
    let place = Line::from(vec![
        Span::styled(herald_protocol::one_line(&header.cwd), dim()),
        Span::styled(
            format!(
                " · {} {}",
                if header.resumed { "resumed" } else { "session" },
                header.session_id
            ),
            dim(),
        ),
    ]);
    let hint = Line::from(Span::styled(
        "Enter sends · Shift+Enter or Ctrl+J new line · / commands · @ files · Esc interrupts · Ctrl+C clears, twice exits",
        dim(),
    ));
    let mut lines = Vec::new();
    for line in [title, place, hint] {
        lines.extend(wrap_line(&line, width));
    }
    lines.push(Line::default());
    lines
}

/// The user's prompt, marked so it stands out from the answer.
pub fn user_prompt(text: &str, width: u16) -> Vec<Line<'static>> {
    let style = Style::default().add_modifier(Modifier::BOLD);
    let safe = herald_protocol::terminal_safe(text);
    let mut lines = Vec::new();
    for (index, raw) in safe.trim_end().lines().enumerate() {
        let marker = if index == 0 { "› " } else { "  " };
        let line = Line::from(vec![
            Span::styled(marker, Style::default().fg(Color::Cyan)),
            Span::styled(raw.replace('\t', "    "), style),
        ]);
        lines.extend(wrap_line(&line, width));
    }
    lines.push(Line::default());
    lines
}

/// A queued or steered prompt, shown as it is sent.
pub fn steered(text: &str, width: u16) -> Vec<Line<'static>> {
    let line = Line::from(vec![
        Span::styled("↳ ", Style::default().fg(Color::Cyan)),
        Span::styled(herald_protocol::one_line(text), Style::default().italic()),
        Span::styled("  (steered into the running turn)", dim()),
    ]);
    wrap_line(&line, width)
}

/// One finished tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCell {
    pub name: String,
    pub arguments: String,
    pub ok: bool,
    pub duration_ms: u64,
    pub output_bytes: u64,
    /// The result text (bounded by the event).
    pub output: String,
    pub error: Option<String>,
    pub exit_code: Option<i64>,
}

/// A finished call: a status line (✓/✗, tool, key argument, exit code,
/// duration, size), then the first lines of its output, its diff, its
/// task list or its failure reason.
pub fn tool_call(cell: &ToolCell, width: u16) -> Vec<Line<'static>> {
    let view = tool_view::output_view(&cell.name, &cell.output);
    let mut facts: Vec<String> = Vec::new();
    if let Some(code) = cell.exit_code {
        facts.push(format!("exit {code}"));
    }
    match (&view, cell.name.as_str()) {
        (OutputView::Diff { added, removed, .. }, _) => facts.push(format!("+{added} −{removed}")),
        (_, "write_file") if cell.ok => {
            if let Some(count) = tool_view::written_lines(&cell.arguments) {
                facts.push(format!("+{count} lines"));
            }
        }
        _ => {}
    }
    facts.push(crate::format::duration_ms(cell.duration_ms));
    if cell.ok && cell.output_bytes > 0 {
        facts.push(crate::format::bytes(cell.output_bytes));
    }
    let failed = !cell.ok || cell.exit_code.is_some_and(|code| code != 0);
    let (mark, mark_style) = if failed {
        ("✗ ", Style::default().fg(Color::Red).bold())
    } else {
        ("✓ ", Style::default().fg(Color::Green).bold())
    };
    let key = tool_view::key_argument(&cell.name, &cell.arguments, usize::from(width).max(20));
    let mut head = vec![
        Span::styled(mark, mark_style),
        Span::styled(cell.name.clone(), Style::default().bold()),
    ];
    if !key.is_empty() {
        head.push(Span::raw("  "));
        head.push(Span::raw(key));
    }
    head.push(Span::styled(format!(" · {}", facts.join(" · ")), dim()));
    let mut lines = wrap_with_prefix(&Line::from(head), width, &[], &[Span::raw("  ")]);
    if !cell.ok {
        let reason = cell
            .error
            .clone()
            .unwrap_or_else(|| herald_protocol::one_line(cell.output.lines().next().unwrap_or("")));
        let line = Line::from(Span::styled(
            herald_protocol::one_line(&reason),
            Style::default().fg(Color::Red),
        ));
        lines.extend(wrap_with_prefix(
            &line,
            width,
            &[Span::styled("  └ ", dim())],
            &[Span::raw("    ")],
        ));
        return lines;
    }
    match view {
        OutputView::Diff { lines: diff, .. } => lines.extend(diff_lines(&diff, DIFF_LINES, width)),
        OutputView::Todos(todos) => lines.extend(todo_list(&todos, width)),
        OutputView::Text(_) if cell.name == "write_file" => {
            // The new content, as the added side of a diff.
            let added: Vec<String> = tool_view::written_content(&cell.arguments)
                .lines()
                .map(|line| format!("+{}", line.replace('\t', "    ")))
                .collect();
            lines.extend(diff_lines(&added, DIFF_LINES, width));
        }
        OutputView::Text(text) => {
            if matches!(
                cell.name.as_str(),
                "read_file" | "todo_read" | "skill_view" | "memory"
            ) {
                // What the agent read is its business; the size says enough.
                return lines;
            }
            lines.extend(output_lines(&text, TOOL_OUTPUT_LINES, width));
        }
    }
    lines
}

/// The first `max` output lines, cut to the width, and how many more.
fn output_lines(text: &[String], max: usize, width: u16) -> Vec<Line<'static>> {
    let room = usize::from(width).saturating_sub(4).max(8);
    let mut lines: Vec<Line<'static>> = text
        .iter()
        .take(max)
        .map(|line| {
            Line::from(vec![
                Span::styled("  │ ", dim()),
                Span::styled(tool_view::shorten(line, room), dim()),
            ])
        })
        .collect();
    if text.len() > max {
        lines.push(Line::from(Span::styled(
            format!(
                "  … {} more lines (Ctrl+O shows the output)",
                text.len() - max
            ),
            dim(),
        )));
    }
    lines
}

/// A unified diff in colour: additions green, removals red, hunks cyan.
pub fn diff_lines(diff: &[String], max: usize, width: u16) -> Vec<Line<'static>> {
    let room = usize::from(width).saturating_sub(4).max(8);
    let mut lines: Vec<Line<'static>> = diff
        .iter()
        .filter(|line| !line.starts_with("---") && !line.starts_with("+++"))
        .take(max)
        .map(|line| {
            let style = if line.starts_with('+') {
                Style::default().fg(Color::Green)
            } else if line.starts_with('-') {
                Style::default().fg(Color::Red)
            } else if line.starts_with("@@") {
                Style::default().fg(Color::Cyan)
            } else {
                dim()
            };
            Line::from(vec![
                Span::styled("  │ ", dim()),
                Span::styled(tool_view::shorten(line, room), style),
            ])
        })
        .collect();
    let shown = diff
        .iter()
        .filter(|line| !line.starts_with("---") && !line.starts_with("+++"))
        .count();
    if shown > max {
        lines.push(Line::from(Span::styled(
            format!("  … {} more diff lines", shown - max),
            dim(),
        )));
    }
    lines
}

/// The task list as a checklist.
pub fn todo_list(todos: &[TodoView], width: u16) -> Vec<Line<'static>> {
    todos
        .iter()
        .flat_map(|todo| {
            let (mark, style) = match todo.status.as_str() {
                "completed" => ("  ☑ ", dim().add_modifier(Modifier::CROSSED_OUT)),
                "in_progress" => ("  ◐ ", Style::default().fg(Color::Yellow).bold()),
                "cancelled" => ("  ☒ ", dim().add_modifier(Modifier::CROSSED_OUT)),
                _ => ("  ☐ ", Style::default()),
            };
            wrap_line(
                &Line::from(vec![
                    Span::styled(mark, style.remove_modifier(Modifier::CROSSED_OUT)),
                    Span::styled(todo.content.clone(), style),
                ]),
                width,
            )
        })
        .collect()
}

/// A subagent finished: its status, goal, duration, tokens and summary.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentDone {
    pub agent_id: String,
    pub depth: u32,
    pub goal: String,
    pub status: String,
    pub summary: String,
    pub seconds: f64,
    pub tokens: u64,
}

/// One line (wrapped) for a finished subagent, indented by depth.
pub fn subagent_done(done: &SubagentDone, width: u16) -> Vec<Line<'static>> {
    let ok = done.status == "completed";
    let indent = "  ".repeat(done.depth.saturating_sub(1) as usize);
    let (mark, style) = if ok {
        ("✓ ", Style::default().fg(Color::Green))
    } else {
        ("✗ ", Style::default().fg(Color::Red))
    };
    let mut lines = wrap_line(
        &Line::from(vec![
            Span::raw(indent.clone()),
            Span::styled(mark, style.bold()),
            Span::styled("agent ", Style::default().bold()),
            Span::raw(tool_view::shorten(
                &herald_protocol::one_line(&done.goal),
                72,
            )),
            Span::styled(
                format!(
                    " · {} · {:.1} s · {} tok",
                    done.status,
                    done.seconds,
                    crate::format::tokens(done.tokens)
                ),
                dim(),
            ),
        ]),
        width,
    );
    let summary = herald_protocol::one_line(&done.summary);
    if !summary.trim().is_empty() {
        lines.extend(wrap_line(
            &Line::from(vec![
                Span::styled(format!("{indent}  └ "), dim()),
                Span::styled(tool_view::shorten(&summary, 200), dim()),
            ]),
            width,
        ));
    }
    lines
}

/// How bad a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// A line from herald itself (not the model): a warning, an error, what
/// a command did.
pub fn notice(level: Level, text: &str, width: u16) -> Vec<Line<'static>> {
    let (mark, style) = match level {
        Level::Info => ("• ", dim()),
        Level::Warning => ("! ", Style::default().fg(Color::Yellow)),
        Level::Error => ("✗ ", Style::default().fg(Color::Red)),
    };
    let safe = herald_protocol::terminal_safe(text);
    safe.lines()
        .enumerate()
        .flat_map(|(index, line)| {
            let marker = if index == 0 { mark } else { "  " };
            wrap_with_prefix(
                &Line::from(Span::styled(line.to_owned(), style)),
                width,
                &[Span::styled(marker, style.add_modifier(Modifier::BOLD))],
                &[Span::raw("  ")],
            )
        })
        .collect()
}

/// What a finished turn came to, when it did not simply complete.
pub fn turn_end(
    exit_reason: &str,
    error: Option<&str>,
    session_id: &str,
    width: u16,
) -> Vec<Line<'static>> {
    let text = match exit_reason {
        "interrupted" => "interrupted — the conversation is kept; say how to go on".to_owned(),
        "max_iterations" => format!(
            "stopped at the iteration limit; send \"continue\" to go on (or raise --max-iterations; this session: {session_id})"
        ),
        "budget" => "the token budget is spent; the answer is what there was".to_owned(),
        "error" => format!("the turn failed: {}", error.unwrap_or("the request failed")),
        _ => return Vec::new(),
    };
    let level = if exit_reason == "error" {
        Level::Error
    } else {
        Level::Warning
    };
    notice(level, &text, width)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The text of rendered lines, one per row.
    fn text(lines: &[Line<'_>]) -> String {
        lines
            .iter()
            .map(|line| {
                line.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn cell(name: &str, arguments: &str, ok: bool, output: &str) -> ToolCell {
        ToolCell {
            name: name.into(),
            arguments: arguments.into(),
            ok,
            duration_ms: 1234,
            output_bytes: output.len() as u64,
            output: output.into(),
            error: None,
            exit_code: None,
        }
    }

    #[test]
    fn a_terminal_call_shows_command_exit_code_and_first_lines() {
        let mut c = cell(
            "terminal",
            r#"{"command":"cargo test"}"#,
            true,
            r#"{"output":"1\n2\n3\n4\n5\n6\n7","exit_code":101}"#,
        );
        c.exit_code = Some(101);
        insta::assert_snapshot!(text(&tool_call(&c, 60)));
    }

    #[test]
    fn a_failed_call_shows_its_reason() {
        let mut c = cell(
            "read_file",
            r#"{"path":"src/x.rs"}"#,
            false,
            "not found: src/x.rs",
        );
        c.error = Some("not found: src/x.rs".into());
        insta::assert_snapshot!(text(&tool_call(&c, 60)));
    }

    #[test]
    fn a_patch_shows_its_diff() {
        let c = cell(
            "patch",
            r#"{"path":"src/a.rs","old_string":"a","new_string":"b"}"#,
            true,
            "Patched src/a.rs: 1 replacement\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,3 @@\n fn main() {\n-    old();\n+    new();\n }",
        );
        insta::assert_snapshot!(text(&tool_call(&c, 60)));
    }

    #[test]
    fn a_written_file_shows_its_content_as_additions() {
        let c = cell(
            "write_file",
            r##"{"path":"notes.md","content":"# Notes\n\n- first\n"}"##,
            true,
            "Created notes.md: 18 bytes, 3 lines",
        );
        insta::assert_snapshot!(text(&tool_call(&c, 60)));
    }

    #[test]
    fn a_todo_call_shows_the_checklist() {
        let c = cell(
            "todo_write",
            r#"{"todos":[{},{},{}]}"#,
            true,
            r#"{"todos":[{"id":"1","content":"read the code","status":"completed"},{"id":"2","content":"fix the parser","status":"in_progress"},{"id":"3","content":"add a test","status":"pending"}]}"#,
        );
        insta::assert_snapshot!(text(&tool_call(&c, 60)));
    }

    #[test]
    fn header_user_prompt_notices_and_subagents() {
        let mut lines = header(
            &Header {
                version: "0.1.0".into(),
                model: "gpt-4.1".into(),
                provider: "openai".into(),
                cwd: "/work/project".into(),
                session_id: "ses_1".into(),
                resumed: false,
            },
            70,
        );
        lines.extend(user_prompt("fix the bug\nin \u{1b}[2Jparser.rs", 70));
        lines.extend(notice(Level::Warning, "retry 1 in 2.0 s: 503", 70));
        lines.extend(subagent_done(
            &SubagentDone {
                agent_id: "ag_1".into(),
                depth: 1,
                goal: "survey the tests".into(),
                status: "completed".into(),
                summary: "12 tests, 2 slow".into(),
                seconds: 4.2,
                tokens: 12_345,
            },
            70,
        ));
        lines.extend(turn_end("max_iterations", None, "ses_1", 70));
        insta::assert_snapshot!(text(&lines));
    }

    #[test]
    fn every_line_fits_the_width() {
        let c = cell(
            "terminal",
            r#"{"command":"a very long command line that goes on and on and on"}"#,
            true,
            r#"{"output":"an output line that is much longer than the narrow width","exit_code":0}"#,
        );
        for line in tool_call(&c, 24) {
            assert!(line.width() <= 24, "{line:?}");
        }
    }
}
