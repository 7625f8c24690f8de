//! Renders the event stream: JSON lines on stdout for `--json`, or progress
//! for people on stderr (`human`). Writing happens on its own thread so a
//! slow reader never stalls the agent.

use herald_tui::format;
mod human;
mod json_lines;
mod live;
pub(crate) mod style;
pub(crate) mod summary;
mod tool_line;

use std::io::Write;
use std::os::fd::AsFd;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use herald_protocol::{Event, EventKind};

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

/// A running renderer; `finish` flushes it.
pub(crate) struct Renderer(Output);

/// Where a renderer's events go.
enum Output {
    /// `--json`: lines written as events come (see `json_lines`).
    Json(Arc<json_lines::JsonLines>),
    /// For people: a thread that draws what it receives.
    Human {
        sender: mpsc::Sender<Item>,
        thread: Option<JoinHandle<HumanReport>>,
    },
}

impl Renderer {
    /// Starts the writer thread.
    pub(crate) fn start(mode: Mode) -> Self {
        let style = match mode {
            Mode::Json => {
                // Its own handle on stdout: lines bypass std's buffer, which
                // nothing else writes to during a `--json` run.
                if let Ok(out) = std::io::stdout().as_fd().try_clone_to_owned() {
                    return Self(Output::Json(Arc::new(json_lines::JsonLines::start(out))));
                }
                None
            }
            Mode::Human { stream_text } => Some(human::Style::Stream { stream_text }),
            Mode::Run => Some(human::Style::Run),
        };
        let (sender, receiver) = mpsc::channel::<Item>();
        let thread = std::thread::spawn(move || match style {
            Some(style) => human::write_human(&receiver, style),
            None => {
                write_json(receiver);
                HumanReport::default()
            }
        });
        Self(Output::Human {
            sender,
            thread: Some(thread),
        })
    }

    /// The observer a session passes every event to.
    pub(crate) fn callback(&self) -> impl Fn(Arc<Event>) + Send + Sync + 'static {
        let (lines, sender) = match &self.0 {
            Output::Json(lines) => (Some(Arc::clone(lines)), None),
            Output::Human { sender, .. } => (None, Some(std::sync::Mutex::new(sender.clone()))),
        };
        move |event| {
            if let Some(lines) = &lines {
                lines.send(&event);
            } else if let Some(Ok(sender)) = sender.as_ref().map(|s| s.lock()) {
                let _ = sender.send(Item::Event(event));
            }
        }
    }

    /// Waits until every event sent so far is written (the live block
    /// erased) and returns what the human renderer gathered (empty for
    /// JSON). Sinks still alive (background agents left running for
    /// `--resume`) cannot hold it up: anything they send afterwards is
    /// dropped.
    pub(crate) fn finish(self) -> HumanReport {
        match self.0 {
            Output::Json(lines) => {
                lines.finish();
                HumanReport::default()
            }
            Output::Human { sender, mut thread } => {
                let _ = sender.send(Item::Stop);
                thread
                    .take()
                    .and_then(|thread| thread.join().ok())
                    .unwrap_or_default()
            }
        }
    }
}

/// The next event, or `None` at `Stop` or when every sender is gone.
fn next(receiver: &mpsc::Receiver<Item>) -> Option<Arc<Event>> {
    match receiver.recv() {
        Ok(Item::Event(event)) => Some(event),
        Ok(Item::Stop) | Err(_) => None,
    }
}

fn write_json(receiver: mpsc::Receiver<Item>) {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut line = Vec::with_capacity(1024);
    let mut write = |event: &Event, out: &mut std::io::BufWriter<std::io::StdoutLock<'_>>| {
        // A server that did not start is also said on stderr: a script
        // reading stdout may not look for it.
        if let Some(problem) = mcp_problem(&event.kind) {
            eprintln!("herald: {problem}");
        }
        line.clear();
        if herald_protocol::write_json(&mut line, event).is_ok() {
            line.push(b'\n');
            out.write_all(&line).is_ok()
        } else {
            true
        }
    };
    // `run.completed` is the last line of a run: nothing is written after it.
    let last = |event: &Event| matches!(event.kind, EventKind::RunCompleted { .. });
    while let Some(event) = next(&receiver) {
        if !write(&event, &mut out) || last(&event) {
            let _ = out.flush();
            return;
        }
        // Write whatever else is queued, then flush so readers see it now.
        while let Ok(item) = receiver.try_recv() {
            let Item::Event(event) = item else {
                let _ = out.flush();
                return;
            };
            if !write(&event, &mut out) || last(&event) {
                let _ = out.flush();
                return;
            }
        }
        if out.flush().is_err() {
            return;
        }
    }
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
    let what = match status.as_str() {
        "failed" => "did not start",
        "late" => "is not ready yet",
        "changed" => "changed its tools",
        _ => return None,
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
