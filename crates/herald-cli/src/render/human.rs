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

/// The renderer's state between events.
struct View {
    style: Style,
    /// stderr is a terminal: the live block may be drawn.
    interactive: bool,
    /// stdout is a terminal (it shares the screen with stderr).
    stdout_terminal: bool,
    palette: Palette,
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
    let mut view = View {
        style,
        interactive: std::io::stderr().is_terminal(),
        stdout_terminal: std::io::stdout().is_terminal(),
        palette: Palette {
            color: super::style::stderr_color(),
        },
        tree: AgentTree::default(),
        live: LiveRegion::default(),
        turn_active: false,
        running: Vec::new(),
        phase_started: Instant::now(),
        pending: String::new(),
        line_open: false,
        report: HumanReport::default(),
    };
    let animate = style == Style::Run && view.interactive;
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
                self.print(terminal_safe(text.trim()).as_ref());
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
                } else if self.interactive {
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
                    self.palette,
                    self.width(),
                );
                if run {
                    self.print(&line);
                } else if self.interactive && *status == ToolStatus::Error {
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
            EventKind::RunCompleted { .. } if root => {
                self.running.clear();
                self.redraw();
            }
            _ => {}
        }
    }

    /// The terminal's width when stderr is one.
    fn width(&self) -> Option<usize> {
        if self.interactive {
            super::terminal_width(&std::io::stderr())
        } else {
            None
        }
    }

    /// Whether the live block belongs on screen now.
    fn wants_live(&self) -> bool {
        self.interactive && self.turn_active && (self.style == Style::Run || !self.tree.is_empty())
    }

    /// Draws the live block again (or erases it when it is not wanted).
    fn redraw(&mut self) {
        let mut err = std::io::stderr().lock();
        if !self.wants_live() || self.line_open {
            self.live.clear(&mut err);
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
                self.palette,
            ));
        }
        self.live.draw(&mut err, &lines);
    }

    /// Prints `text` as lines of their own on stderr, above the live block.
    fn print(&mut self, text: &str) {
        {
            let mut err = std::io::stderr().lock();
            self.live.clear(&mut err);
            if self.line_open && self.stdout_terminal && self.interactive {
                // The unfinished streamed line shares the screen.
                let _ = err.write_all(b"\n");
                self.line_open = false;
            }
            let _ = writeln!(err, "{text}");
            let _ = err.flush();
        }
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
        self.live.clear(&mut std::io::stderr().lock());
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.line_open = !text.ends_with('\n');
    }

    /// Writes what is held back and erases the live block.
    fn close(&mut self) {
        let rest = std::mem::take(&mut self.pending);
        self.write_stdout(&rest);
        self.live.clear(&mut std::io::stderr().lock());
    }
}
