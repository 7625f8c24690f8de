//! The event stream for people, on stderr: what the agent said between
//! tool calls, one line per finished tool call, subagents as a live tree,
//! a spinner while the model or a tool works (terminal only), warnings and
//! retries. Used by `herald run` ([`Style::Run`]) and by the line loop,
//! which streams the reply's text on stdout ([`Style::Stream`]).
//!
//! The live block (tree and spinner) is drawn only while a turn runs, only
//! at the start of a line and always erased before anything else is
//! printed, so it never erases text it did not draw: while it is shown,
//! streamed text goes out line by line (the unfinished line waits).

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use herald_protocol::{Event, EventKind, ToolStatus, terminal_safe};

use super::live::{LiveRegion, activity_label, fit, spinner_line};
use super::style::Palette;
use super::summary::RunTotals;
use super::tool_line::{Finished, key_argument, tool_line};
use super::{Item, mcp_problem, preview};
use crate::tree::{AgentTree, TreeUpdate};

/// How often the spinner moves.
const TICK: Duration = Duration::from_millis(100);

/// Which front end the lines are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// `herald run`: intermediate text and tool lines on stderr, a spinner;
    /// the caller prints the final answer.
    Run,
    /// The line loop: the reply's text streamed on stdout (when
    /// `stream_text`), tool starts and failures on a terminal's stderr.
    Stream { stream_text: bool },
}

/// What a finished human renderer hands back.
#[derive(Debug, Default)]
pub(crate) struct HumanReport {
    /// Tokens, cost and the end of the run, from the events.
    pub totals: RunTotals,
    /// Whether any progress line was printed (the answer then starts after
    /// a blank line).
    pub printed: bool,
}

/// A root tool call that started and has not finished.
struct Running {
    call_id: String,
    name: String,
    arguments: String,
    key: Option<String>,
}

/// Where the view writes and what it knows about those streams.
pub(super) struct Streams {
    /// Progress lines and the live block.
    pub err: Box<dyn Write + Send>,
    /// Streamed reply text.
    pub out: Box<dyn Write + Send>,
    /// `err` is a terminal: the live block may be drawn.
    pub interactive: bool,
    /// `out` is a terminal too (it shares the screen with `err`).
    pub stdout_terminal: bool,
    /// The terminal's width in columns, asked at each redraw.
    pub width: fn() -> Option<usize>,
    pub palette: Palette,
}

impl Streams {
    /// The process's stderr and stdout.
    fn standard() -> Self {
        Self {
            err: Box::new(std::io::BufWriter::new(std::io::stderr())),
            out: Box::new(std::io::stdout()),
            interactive: std::io::stderr().is_terminal(),
            stdout_terminal: std::io::stdout().is_terminal(),
            width: || super::terminal_width(&std::io::stderr()),
            palette: Palette {
                color: super::style::stderr_color(),
            },
        }
    }
}

/// The renderer's state between events.
struct View {
    style: Style,
    io: Streams,
    tree: AgentTree,
    live: LiveRegion,
    /// Between the first event of a root turn and its `run.completed`.
    turn_active: bool,
    running: Vec<Running>,
    /// When the current wait (for the model, or for the tools) began.
    phase_started: Instant,
    /// Streamed text not yet written (an unfinished line held back while
    /// the live block is shown).
    pending: String,
    /// stdout ends in an unfinished line.
    line_open: bool,
    report: HumanReport,
}

/// Writes events for people until `Stop` or until every sender is gone.
pub(crate) fn write_human(receiver: &mpsc::Receiver<Item>, style: Style) -> HumanReport {
    write_to(receiver, style, Streams::standard())
}

/// [`write_human`] to the given streams.
fn write_to(receiver: &mpsc::Receiver<Item>, style: Style, io: Streams) -> HumanReport {
    let mut view = View {
        style,
        io,
        tree: AgentTree::default(),
        live: LiveRegion::default(),
        turn_active: false,
        running: Vec::new(),
        phase_started: Instant::now(),
        pending: String::new(),
        line_open: false,
        report: HumanReport::default(),
    };
    let animate = style == Style::Run && view.io.interactive;
    loop {
        let item = if animate && view.turn_active {
            receiver.recv_timeout(TICK)
        } else {
            receiver
                .recv()
                .map_err(|mpsc::RecvError| RecvTimeoutError::Disconnected)
        };
        match item {
            Ok(Item::Event(event)) => view.event(&event),
            Ok(Item::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => view.redraw(),
        }
    }
    view.close();
    view.report
}

impl View {
    fn event(&mut self, event: &Event) {
        self.report.totals.apply(event);
        let root = event.agent_id == "root";
        if root {
            let ended = matches!(event.kind, EventKind::RunCompleted { .. });
            if !ended && !self.turn_active {
                self.phase_started = Instant::now();
            }
            self.turn_active = !ended;
        }
        match self.tree.apply(event) {
            TreeUpdate::None => {}
            TreeUpdate::Redraw => return self.redraw(),
            TreeUpdate::Started(line) | TreeUpdate::Finished(line) => return self.print(&line),
        }
        let run = self.style == Style::Run;
        let stream_text = self.style == Style::Stream { stream_text: true };
        match &event.kind {
            EventKind::AssistantDelta { text } if stream_text => self.stream(text),
            EventKind::AssistantReset {} if stream_text => {
                // The retried reply differs from the text printed so far: it
                // starts again on a new line, and stderr says why.
                self.pending.clear();
                self.write_stdout("\n");
                self.print("  (the reply restarts after the retry)");
            }
            EventKind::AssistantMessage { .. } if root && stream_text => {
                // The reply is complete: nothing more is held back.
                let rest = std::mem::take(&mut self.pending);
                self.write_stdout(&rest);
                self.redraw();
            }
            EventKind::AssistantMessage { text, tool_calls }
                if root && run && !tool_calls.is_empty() && !text.trim().is_empty() =>
            {
                let text = match self.width() {
                    Some(width) => super::markdown(text.trim(), width, self.io.palette.color),
                    None => terminal_safe(text.trim()).into_owned(),
                };
                self.print(text.trim_end());
            }
            EventKind::ToolStarted {
                call_id,
                name,
                arguments,
            } if root => {
                if self.running.is_empty() {
                    self.phase_started = Instant::now();
                }
                let key = serde_json::from_str(arguments)
                    .ok()
                    .and_then(|args| key_argument(name, &args));
                self.running.push(Running {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                    key,
                });
                if run {
                    self.redraw();
                } else if self.io.interactive {
                    self.print(&format!("  \u{2192} {name} {}", preview(arguments, 100)));
                }
            }
            EventKind::ToolCompleted {
                call_id,
                name,
                status,
                output_bytes,
                duration_ms,
                error,
                exit_code,
                ..
            } if root => {
                let started = self
                    .running
                    .iter()
                    .position(|r| &r.call_id == call_id)
                    .map(|i| self.running.remove(i));
                if self.running.is_empty() {
                    self.phase_started = Instant::now();
                }
                let arguments = started.as_ref().map_or("", |r| r.arguments.as_str());
                let line = tool_line(
                    &Finished {
                        name,
                        arguments,
                        status: *status,
                        duration_ms: *duration_ms,
                        output_bytes: *output_bytes,
                        error: error.as_deref(),
                        exit_code: *exit_code,
                    },
                    self.io.palette,
                    self.width(),
                );
                if run {
                    self.print(&line);
                } else if self.io.interactive && *status == ToolStatus::Error {
                    self.print(&format!("  {line}"));
                }
            }
            EventKind::Retry {
                attempt,
                delay_ms,
                reason,
            } => self.print(&format!(
                "  retry {attempt} in {:.1} s: {reason}",
                *delay_ms as f64 / 1000.0
            )),
            EventKind::ProviderThrottled {
                limit, pause_ms, ..
            } => self.print(&format!(
                "  rate limited: at most {limit} requests in flight now{}",
                if *pause_ms > 0 {
                    format!(", new ones wait {:.1} s", *pause_ms as f64 / 1000.0)
                } else {
                    String::new()
                }
            )),
            EventKind::AgentMessage { receipt, state } => self.print(&format!(
                "  message {receipt} to {}: {state}",
                event.agent_id
            )),
            EventKind::ProviderFallback { from, to, reason } => self.print(&format!(
                "  switching provider: {}/{} -> {}/{}: {}",
                from.provider,
                from.model,
                to.provider,
                to.model,
                herald_protocol::one_line(reason)
            )),
            EventKind::Error {
                message,
                fatal: false,
            } => self.print(&format!("  warning: {message}")),
            kind @ EventKind::McpServer { .. } => {
                if let Some(line) = mcp_problem(kind) {
                    self.print(&format!("  warning: {line}"));
                }
            }
            EventKind::Compaction {
                tokens_before,
                tokens_after,
            } => self.print(&format!(
                "  context compacted: ~{tokens_before} \u{2192} ~{tokens_after} tokens"
            )),
            EventKind::MemoryFlush {
                reason,
                status,
                saved,
                message,
                ..
            } => self.print(&format!(
                "  memory flush ({}): {saved} saved{}",
                reason.as_str().replace('_', " "),
                match (status.as_str(), message) {
                    ("done", _) => String::new(),
                    (status, Some(why)) => format!(", {status}: {why}"),
                    (status, None) => format!(", {status}"),
                }
            )),
            EventKind::RunCompleted { .. } if root => {
                self.running.clear();
                self.redraw();
            }
            _ => {}
        }
    }

    /// The terminal's width when stderr is one.
    fn width(&self) -> Option<usize> {
        if self.io.interactive {
            (self.io.width)()
        } else {
            None
        }
    }

    /// Whether the live block belongs on screen now.
    fn wants_live(&self) -> bool {
        self.io.interactive
            && self.turn_active
            && (self.style == Style::Run || !self.tree.is_empty())
    }

    /// Draws the live block again (or erases it when it is not wanted).
    fn redraw(&mut self) {
        self.draw_live();
        let _ = self.io.err.flush();
    }

    /// [`View::redraw`] without the flush.
    fn draw_live(&mut self) {
        if !self.wants_live() || self.line_open {
            self.live.clear(&mut self.io.err);
            return;
        }
        let width = self.width().unwrap_or(80);
        let mut lines: Vec<String> = self
            .tree
            .lines()
            .iter()
            .map(|line| fit(line, width))
            .collect();
        if self.style == Style::Run {
            let running: Vec<(String, Option<String>)> = self
                .running
                .iter()
                .map(|r| (r.name.clone(), r.key.clone()))
                .collect();
            lines.push(spinner_line(
                &activity_label(&running),
                self.phase_started.elapsed(),
                width,
                self.io.palette,
            ));
        }
        self.live.draw(&mut self.io.err, &lines);
    }

    /// Prints `text` as lines of their own on stderr, above the live block.
    fn print(&mut self, text: &str) {
        self.live.clear(&mut self.io.err);
        if self.line_open && self.io.stdout_terminal && self.io.interactive {
            // The unfinished streamed line shares the screen.
            let _ = self.io.err.write_all(b"\n");
            self.line_open = false;
        }
        let _ = writeln!(self.io.err, "{text}");
        self.report.printed = true;
        self.redraw();
    }

    /// Streams reply text to stdout: whole lines only while the live block
    /// is shown, everything otherwise.
    fn stream(&mut self, text: &str) {
        self.pending.push_str(text);
        let cut = if self.wants_live() {
            match self.pending.rfind('\n') {
                Some(end) => end + 1,
                None => return,
            }
        } else {
            self.pending.len()
        };
        let ready: String = self.pending.drain(..cut).collect();
        self.write_stdout(&ready);
        self.redraw();
    }

    /// Writes `text` to stdout after erasing the live block.
    fn write_stdout(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.live.clear(&mut self.io.err);
        let _ = self.io.err.flush();
        let _ = self.io.out.write_all(text.as_bytes());
        let _ = self.io.out.flush();
        self.line_open = !text.ends_with('\n');
    }

    /// Writes what is held back and erases the live block.
    fn close(&mut self) {
        let rest = std::mem::take(&mut self.pending);
        self.write_stdout(&rest);
        self.live.clear(&mut self.io.err);
        let _ = self.io.err.flush();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use herald_protocol::{RunStatus, TokenTotals, ToolCall};

    use super::*;

    /// stdout and stderr of one terminal: both write into the same bytes.
    #[derive(Clone, Default)]
    struct Screen(Arc<Mutex<Vec<u8>>>);

    impl Write for Screen {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Screen {
        /// The text a 24×80 terminal shows after everything written.
        fn text(&self) -> String {
            let bytes = self.0.lock().unwrap().replace_newlines();
            let mut parser = vt100::Parser::new(
                std::num::NonZeroU16::new(24).unwrap(),
                std::num::NonZeroU16::new(80).unwrap(),
                0,
            );
            parser.process(&bytes);
            parser
                .screen()
                .rows(0, 80)
                .map(|row| row.trim_end().to_owned())
                .collect::<Vec<_>>()
                .join("\n")
                .trim_end()
                .to_owned()
        }
    }

    /// A terminal's output processing turns `\n` into `\r\n`.
    trait ReplaceNewlines {
        fn replace_newlines(&self) -> Vec<u8>;
    }

    impl ReplaceNewlines for Vec<u8> {
        fn replace_newlines(&self) -> Vec<u8> {
            let mut out = Vec::with_capacity(self.len());
            for &b in self {
                if b == b'\n' {
                    out.push(b'\r');
                }
                out.push(b);
            }
            out
        }
    }

    fn render(style: Style, events: Vec<Event>) -> (Screen, HumanReport) {
        let screen = Screen::default();
        let io = Streams {
            err: Box::new(screen.clone()),
            out: Box::new(screen.clone()),
            interactive: true,
            stdout_terminal: true,
            width: || Some(80),
            palette: Palette { color: false },
        };
        let (sender, receiver) = mpsc::channel();
        for event in events {
            sender.send(Item::Event(Arc::new(event))).unwrap();
        }
        sender.send(Item::Stop).unwrap();
        let report = write_to(&receiver, style, io);
        (screen, report)
    }

    fn root(kind: EventKind) -> Event {
        Event::new("ses_1", "root", kind)
    }

    fn child(kind: EventKind) -> Event {
        Event::new("ses_1", "ag_1", kind)
    }

    fn delta(text: &str) -> Event {
        root(EventKind::AssistantDelta { text: text.into() })
    }

    fn child_tool(tool: &str) -> Event {
        child(EventKind::SubagentTool {
            parent_id: "root".into(),
            depth: 1,
            tool: tool.into(),
            tokens: TokenTotals::default(),
        })
    }

    fn started() -> Event {
        root(EventKind::SessionStarted {
            model: "gpt-4.1-mini".into(),
            provider: "openai".into(),
            cwd: "/".into(),
            resumed: false,
        })
    }

    fn run_completed() -> Event {
        root(EventKind::RunCompleted {
            status: RunStatus::Completed,
            exit_reason: herald_protocol::ExitReason::Completed,
            final_response: String::new(),
            iterations: 2,
            usage: Default::default(),
            cost_usd: Some(0.0),
            tree_usage: Default::default(),
            duration_ms: 10,
            error: None,
        })
    }

    #[test]
    fn the_subagent_block_never_erases_streamed_text() {
        let (screen, _) = render(
            Style::Stream { stream_text: true },
            vec![
                started(),
                child(EventKind::SubagentStarted {
                    parent_id: "root".into(),
                    depth: 1,
                    goal: "watch the logs".into(),
                    background: true,
                    child_session_id: "ses_2".into(),
                }),
                delta("Hello wor"),
                child_tool("terminal"),
                delta("ld\nsecond"),
                child_tool("read_file"),
                delta(" line"),
                root(EventKind::AssistantMessage {
                    text: "Hello world\nsecond line".into(),
                    tool_calls: Vec::new(),
                }),
                child_tool("search_files"),
                child(EventKind::SubagentCompleted {
                    parent_id: "root".into(),
                    depth: 1,
                    status: herald_protocol::AgentStatus::Completed,
                    exit_reason: herald_protocol::ExitReason::Completed,
                    summary: "ok".into(),
                    tokens: TokenTotals::default(),
                    cost_usd: Some(0.0),
                    usage: Default::default(),
                    tree_usage: Default::default(),
                    duration_seconds: 1.0,
                }),
                run_completed(),
            ],
        );
        let text = screen.text();
        assert!(text.contains("Hello world\nsecond line"), "{text}");
        assert!(text.contains("ag_1 completed"), "{text}");
        assert!(
            !text.contains("\u{2502} ag_1"),
            "the block was left:\n{text}"
        );
    }

    #[test]
    fn while_a_child_runs_its_row_sits_below_the_finished_lines() {
        let (screen, _) = render(
            Style::Stream { stream_text: true },
            vec![
                started(),
                child(EventKind::SubagentStarted {
                    parent_id: "root".into(),
                    depth: 1,
                    goal: "watch the logs".into(),
                    background: true,
                    child_session_id: "ses_2".into(),
                }),
                delta("one\ntwo\nthr"),
                child_tool("terminal"),
            ],
        );
        // The unfinished line waits; the block is below the whole lines
        // (and erased when the renderer stops, the held text written).
        let bytes = screen.0.lock().unwrap().clone();
        let shown = String::from_utf8_lossy(&bytes);
        let row = shown.rfind("\u{2502} ag_1 \u{2192} terminal").unwrap();
        assert!(shown.find("two\n").unwrap() < row, "{shown:?}");
        assert!(!shown[..row].contains("thr"), "{shown:?}");
        assert_eq!(
            screen.text(),
            "  \u{25b8} ag_1 started (background): watch the logs\none\ntwo\nthr"
        );
    }

    #[test]
    fn a_run_shows_text_tools_and_erases_its_spinner() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "terminal".into(),
            arguments: r#"{"command":"cargo test"}"#.into(),
        };
        let (screen, report) = render(
            Style::Run,
            vec![
                started(),
                root(EventKind::AssistantMessage {
                    text: "Running the tests.".into(),
                    tool_calls: vec![call.clone()],
                }),
                root(EventKind::ToolStarted {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                }),
                root(EventKind::ToolCompleted {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    status: ToolStatus::Ok,
                    output_bytes: 3_482,
                    duration_ms: 1_234,
                    output: String::new(),
                    error: None,
                    exit_code: Some(0),
                }),
                root(EventKind::Usage {
                    input_tokens: 1_000,
                    output_tokens: 50,
                    cached_tokens: 600,
                    cost_usd: Some(0.001),
                }),
                run_completed(),
            ],
        );
        assert_eq!(
            screen.text(),
            "Running the tests.\n\u{2713} terminal  cargo test  exit 0 \u{b7} 1.2 s \u{b7} 3.4 KB"
        );
        let bytes = screen.0.lock().unwrap().clone();
        assert!(
            String::from_utf8_lossy(&bytes).contains("terminal  cargo test \u{b7} "),
            "the spinner named the running command"
        );
        assert!(report.printed);
        assert_eq!(report.totals.input_tokens, 1_000);
        assert_eq!(report.totals.end.as_ref().unwrap().iterations, 2);
    }
}
