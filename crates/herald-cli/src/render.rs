//! Renders the event stream: JSON lines on stdout for `--json`, or progress
//! for people on stderr (`human`). Writing happens on its own thread so a
//! slow reader never stalls the agent.

use herald_tui::format;
mod human;
mod live;
pub(crate) mod style;
pub(crate) mod summary;
mod tool_line;

use std::io::Write;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use herald_core::runtime::Subscription;
use herald_protocol::{Event, EventKind, McpServerStatus};

pub(crate) use human::HumanReport;

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One JSON object per line on stdout.
    Json,
    /// The line loop: the reply streamed on stdout (`stream_text`), tool
    /// progress and the subagent tree on a terminal's stderr.
    Human { stream_text: bool },
    /// `herald run` for people: intermediate text, one line per tool call
    /// and warnings on stderr, with a spinner and the subagent tree when
    /// stderr is a terminal; the caller prints the answer and the summary.
    Run,
}

/// What the writer thread receives.
enum Item {
    Event(Arc<Event>),
    /// Write what came before, then stop (later events are dropped).
    Stop,
}

/// A running renderer: the thread that writes what it is sent; `finish`
/// flushes it.
pub(crate) struct Renderer {
    sender: mpsc::Sender<Item>,
    thread: Option<JoinHandle<HumanReport>>,
}

impl Renderer {
    /// Starts the writer thread.
    pub(crate) fn start(mode: Mode) -> Self {
        let (sender, receiver) = mpsc::channel::<Item>();
        let thread = std::thread::spawn(move || match mode {
            Mode::Json => {
                write_json(&receiver, std::io::stdout().lock());
                HumanReport::default()
            }
            Mode::Human { stream_text } => {
                human::write_human(&receiver, human::Style::Stream { stream_text })
            }
            Mode::Run => human::write_human(&receiver, human::Style::Run),
        });
        Self {
            sender,
            thread: Some(thread),
        }
    }

    /// Renders every event of `events` (followed on a task) and hands back
    /// the ones a front end acts on: requests a person answers and
    /// `run.completed`, each after the renderer was given it.
    pub(crate) fn follow(
        &self,
        mut events: Subscription,
    ) -> tokio::sync::mpsc::UnboundedReceiver<Arc<Event>> {
        let sender = self.sender.clone();
        let (acts, receiver) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let _ = sender.send(Item::Event(Arc::clone(&event)));
                if front_end_acts_on(&event.kind) {
                    let _ = acts.send(event);
                }
            }
        });
        receiver
    }

    /// Waits until every event sent so far is written (the live block
    /// erased) and returns what the human renderer gathered (empty for
    /// JSON). Sinks still alive (background agents left running for
    /// `--resume`) cannot hold it up: anything they send afterwards is
    /// dropped.
    pub(crate) fn finish(mut self) -> HumanReport {
        let _ = self.sender.send(Item::Stop);
        self.thread
            .take()
            .and_then(|thread| thread.join().ok())
            .unwrap_or_default()
    }
}

/// Whether a front end does something on `kind`: puts a question to the
/// person, or ends the turn.
fn front_end_acts_on(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::ApprovalRequested { .. }
            | EventKind::ElicitationRequested { .. }
            | EventKind::ClarifyRequested { .. }
            | EventKind::RunCompleted { .. }
    )
}

/// The next event, or `None` at `Stop` or when every sender is gone.
fn next(receiver: &mpsc::Receiver<Item>) -> Option<Arc<Event>> {
    match receiver.recv() {
        Ok(Item::Event(event)) => Some(event),
        Ok(Item::Stop) | Err(_) => None,
    }
}

/// Writes each event as one JSON line to `out` until `run.completed`, a
/// `Stop` or a reader that went away; flushes whenever the queue is empty,
/// so a reader sees each line as soon as nothing else is waiting.
fn write_json(receiver: &mpsc::Receiver<Item>, out: impl Write) {
    let mut out = std::io::BufWriter::new(out);
    let write = |event: &Event, out: &mut std::io::BufWriter<_>| -> bool {
        // A server that did not start is also said on stderr: a script
        // reading stdout may not look for it.
        if let Some(problem) = mcp_problem(&event.kind) {
            eprintln!("herald: {problem}");
        }
        let written =
            serde_json::to_writer(&mut *out, event).is_ok() && out.write_all(b"\n").is_ok();
        // `run.completed` is the last line of a run.
        written && !matches!(event.kind, EventKind::RunCompleted { .. })
    };
    'lines: while let Some(event) = next(receiver) {
        if !write(&event, &mut out) {
            break;
        }
        while let Ok(item) = receiver.try_recv() {
            let Item::Event(event) = item else {
                break 'lines;
            };
            if !write(&event, &mut out) {
                break 'lines;
            }
        }
        if out.flush().is_err() {
            return;
        }
    }
    let _ = out.flush();
}

/// The line telling a person an MCP server is not (fully) there: it
/// failed, was late, or changed its tools; `None` for a server that is up.
fn mcp_problem(kind: &EventKind) -> Option<String> {
    let EventKind::McpServer {
        server,
        status,
        message,
        ..
    } = kind
    else {
        return None;
    };
    let what = match status {
        McpServerStatus::Failed => "did not start",
        McpServerStatus::Late => "is not ready yet",
        McpServerStatus::Changed => "changed its tools",
        McpServerStatus::Ready | McpServerStatus::Cached => return None,
    };
    let detail = message.as_deref().unwrap_or("");
    if detail.starts_with("MCP server `") {
        // The message names the server already.
        return Some(detail.to_owned());
    }
    Some(format!("MCP server `{server}` {what}: {detail}"))
}

/// `text` on one line (control characters as spaces), cut to `max` chars
/// with an ellipsis.
pub(crate) fn preview(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        flat
    } else {
        let mut cut: String = flat.chars().take(max).collect();
        cut.push('\u{2026}');
        cut
    }
}

/// The width in columns of the terminal behind `stream`, if it is one.
pub(crate) fn terminal_width(stream: &impl std::os::fd::AsRawFd) -> Option<usize> {
    let mut size = nix::libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the pointed-to value,
    // which lives for the call.
    let done = unsafe { nix::libc::ioctl(stream.as_raw_fd(), nix::libc::TIOCGWINSZ, &mut size) };
    (done == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// `text` rendered as markdown for a terminal `width` columns wide, as
/// lines ending in a newline (SGR styles only with `color`): the answer and
/// the text between tool calls, as people read them on a terminal.
pub(crate) fn markdown(text: &str, width: usize, color: bool) -> String {
    let width = u16::try_from(width).unwrap_or(u16::MAX);
    let lines = herald_tui::markdown::render(text, width);
    herald_tui::ansi::lines_to_ansi(&lines, color)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn text_event(text: &str) -> Item {
        Item::Event(Arc::new(Event::new(
            "ses_t",
            "agent_t",
            EventKind::AssistantMessage {
                text: text.to_owned(),
                tool_calls: Vec::new(),
            },
        )))
    }

    fn completed() -> Item {
        Item::Event(Arc::new(Event::new(
            "ses_t",
            "agent_t",
            EventKind::RunCompleted {
                status: herald_protocol::RunStatus::Completed,
                exit_reason: herald_protocol::ExitReason::Completed,
                final_response: "done".into(),
                iterations: 1,
                usage: Default::default(),
                cost_usd: None,
                tree_usage: Default::default(),
                duration_ms: 1,
                error: None,
            },
        )))
    }

    fn texts(output: &[u8]) -> Vec<String> {
        std::str::from_utf8(output)
            .unwrap()
            .lines()
            .map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                v["text"]
                    .as_str()
                    .unwrap_or(v["type"].as_str().unwrap())
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn every_line_is_written_in_order_and_nothing_after_run_completed() {
        let (sender, receiver) = mpsc::channel();
        for i in 0..50 {
            sender.send(text_event(&format!("line {i}"))).unwrap();
        }
        sender.send(completed()).unwrap();
        sender.send(text_event("after")).unwrap();
        let mut out = Vec::new();
        write_json(&receiver, &mut out);
        let mut want: Vec<String> = (0..50).map(|i| format!("line {i}")).collect();
        want.push("run.completed".into());
        assert_eq!(texts(&out), want);
    }

    #[test]
    fn stop_ends_the_output_after_what_came_before() {
        let (sender, receiver) = mpsc::channel();
        sender.send(text_event("before")).unwrap();
        sender.send(Item::Stop).unwrap();
        sender.send(text_event("late")).unwrap();
        let mut out = Vec::new();
        write_json(&receiver, &mut out);
        assert_eq!(texts(&out), ["before"]);
    }

    #[test]
    fn a_reader_that_went_away_stops_the_output_without_a_panic() {
        struct Gone;
        impl Write for Gone {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
        }
        let (sender, receiver) = mpsc::channel();
        for i in 0..10 {
            sender.send(text_event(&format!("{i}"))).unwrap();
        }
        drop(sender);
        write_json(&receiver, Gone);
    }
}
