//! Renders the event stream: JSON lines on stdout for `--json`, or short
//! progress lines on stderr for people. Writing happens on its own thread so a
//! slow reader never stalls the agent.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use herald_protocol::{Event, EventKind, ToolStatus};

use crate::tree::{AgentTree, TreeUpdate};

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One JSON object per line on stdout.
    Json,
    /// Tool progress on stderr when it is a terminal; nothing otherwise.
    Human { stream_text: bool },
}

/// What the writer thread receives.
enum Item {
    Event(Arc<Event>),
    /// Write what came before, then stop (later events are dropped).
    Stop,
}

/// A running renderer; `finish` flushes it.
pub(crate) struct Renderer {
    sender: mpsc::Sender<Item>,
    thread: Option<JoinHandle<()>>,
}

impl Renderer {
    /// Starts the writer thread.
    pub(crate) fn start(mode: Mode) -> Self {
        let (sender, receiver) = mpsc::channel::<Item>();
        let thread = std::thread::spawn(move || match mode {
            Mode::Json => write_json(receiver),
            Mode::Human { stream_text } => write_human(receiver, stream_text),
        });
        Self {
            sender,
            thread: Some(thread),
        }
    }

    /// The observer a session passes every event to.
    pub(crate) fn callback(&self) -> impl Fn(Arc<Event>) + Send + Sync + 'static {
        let sender = std::sync::Mutex::new(self.sender.clone());
        move |event| {
            if let Ok(sender) = sender.lock() {
                let _ = sender.send(Item::Event(event));
            }
        }
    }

    /// Waits until every event sent so far is written. Sinks still alive
    /// (background agents left running for `--resume`) cannot hold it up:
    /// anything they send afterwards is dropped.
    pub(crate) fn finish(mut self) {
        let _ = self.sender.send(Item::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
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
        if serde_json::to_writer(&mut line, event).is_ok() {
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

fn write_human(receiver: mpsc::Receiver<Item>, stream_text: bool) {
    let interactive = std::io::stderr().is_terminal();
    let mut tree = AgentTree::default();
    while let Some(event) = next(&receiver) {
        let mut err = std::io::stderr().lock();
        match tree.apply(&event) {
            TreeUpdate::None => {}
            TreeUpdate::Redraw if interactive => {
                tree.clear(&mut err);
                tree.draw(&mut err);
                continue;
            }
            TreeUpdate::Redraw => continue,
            TreeUpdate::Started(line) | TreeUpdate::Finished(line) => {
                tree.clear(&mut err);
                let _ = writeln!(err, "{line}");
                if interactive {
                    tree.draw(&mut err);
                }
                continue;
            }
        }
        if interactive && !tree.is_empty() {
            tree.clear(&mut err);
        }
        let _ = match &event.kind {
            EventKind::AssistantDelta { text } if stream_text => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes());
                out.flush()
            }
            EventKind::AssistantReset {} if stream_text => {
                // The retried reply differs from the text printed so far: it
                // starts again on a new line, and stderr says why.
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(b"\n");
                let _ = out.flush();
                writeln!(err, "  (the reply restarts after the retry)")
            }
            EventKind::ToolStarted {
                name, arguments, ..
            } if interactive => writeln!(err, "  \u{2192} {name} {}", preview(arguments, 100)),
            EventKind::ToolCompleted {
                name,
                status: ToolStatus::Error,
                duration_ms,
                ..
            } if interactive => writeln!(err, "  \u{2717} {name} failed ({duration_ms} ms)"),
            EventKind::Retry {
                attempt,
                delay_ms,
                reason,
            } => writeln!(
                err,
                "  retry {attempt} in {:.1} s: {reason}",
                *delay_ms as f64 / 1000.0
            ),
            EventKind::Error {
                message,
                fatal: false,
            } => writeln!(err, "  warning: {message}"),
            kind @ EventKind::McpServer { .. } => match mcp_problem(kind) {
                Some(line) => writeln!(err, "  warning: {line}"),
                None => Ok(()),
            },
            EventKind::Compaction {
                tokens_before,
                tokens_after,
            } => writeln!(
                err,
                "  context compacted: ~{tokens_before} → ~{tokens_after} tokens"
            ),
            _ => Ok(()),
        };
        if interactive && !tree.is_empty() {
            tree.draw(&mut err);
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
