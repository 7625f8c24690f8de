//! `--json` output: one line per event on stdout, in order.
//!
//! A line is written at once by the thread that emitted the event when
//! stdout takes it without waiting (`pwritev2` with `RWF_NOWAIT`: a pipe
//! with room, `/dev/null`). Otherwise — a full pipe, a terminal or a file
//! that cannot be written that way, an older kernel — it goes to a writer
//! thread, and later lines queue behind it until that thread has caught up,
//! so a slow reader never stalls the agent and lines never change order.
//! Writing at once saves waking the writer thread for every event (three
//! times a tool turn), which costs more CPU than the write itself.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use herald_protocol::{Event, EventKind};

use super::mcp_problem;

/// What the writer thread receives.
enum Queued {
    /// A whole line or the rest of one, with what to say on stderr first.
    Line {
        bytes: Vec<u8>,
        note: Option<String>,
    },
    /// Write what came before, then stop.
    Stop,
}

/// Shared between the emitting threads and the writer thread.
struct State {
    /// Lines were handed to the writer thread and it has not written them
    /// all: new lines must queue behind them.
    backlog: bool,
    /// Whether to try writing at once (false once stdout refused it).
    direct: bool,
    /// Nothing more is written: `run.completed` went out, the reader is
    /// gone, or the run finished.
    closed: bool,
    /// The line being built, reused.
    line: Vec<u8>,
}

/// The JSON-lines writer of a run.
pub(crate) struct JsonLines {
    out: Arc<File>,
    state: Arc<Mutex<State>>,
    sender: mpsc::Sender<Queued>,
    /// Whether a writer thread runs (without one, lines are written at
    /// once, waiting if they must).
    has_thread: bool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// How an attempt to write at once ended.
enum Direct {
    /// This many bytes were written (maybe fewer than asked).
    Wrote(usize),
    /// The write would have waited.
    WouldBlock,
    /// This kind of file cannot be written without waiting.
    Unsupported,
    /// The write failed (the reader is gone).
    Failed,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl JsonLines {
    /// Writes to `out` (stdout, or a pipe in tests).
    pub(crate) fn start(out: OwnedFd) -> Self {
        let out = Arc::new(File::from(out));
        let state = Arc::new(Mutex::new(State {
            backlog: false,
            direct: cfg!(target_os = "linux"),
            closed: false,
            line: Vec::with_capacity(1024),
        }));
        let (sender, receiver) = mpsc::channel();
        let thread = {
            let (out, state) = (Arc::clone(&out), Arc::clone(&state));
            std::thread::Builder::new()
                .name("herald-json".into())
                .spawn(move || write_queued(&out, &receiver, &state))
                .ok()
        };
        let has_thread = thread.is_some();
        if !has_thread {
            lock(&state).direct = true;
        }
        Self {
            out,
            state,
            sender,
            has_thread,
            thread: Mutex::new(thread),
        }
    }

    /// Writes `event` as a line, now or through the writer thread.
    pub(crate) fn send(&self, event: &Event) {
        let mut state = lock(&self.state);
        if state.closed {
            return;
        }
        let mut line = std::mem::take(&mut state.line);
        line.clear();
        if herald_protocol::write_json(&mut line, event).is_err() {
            state.line = line;
            return;
        }
        line.push(b'\n');
        if matches!(event.kind, EventKind::RunCompleted { .. }) {
            // The last line of a run: nothing is written after it.
            state.closed = true;
        }
        // A server that did not start is also said on stderr (a script
        // reading stdout may not look for it), by the writer thread.
        let note = mcp_problem(&event.kind);
        let mut written = 0;
        if state.direct && !state.backlog && note.is_none() {
            loop {
                match self.write_now(&line[written..], !self.has_thread) {
                    Direct::Wrote(n) => {
                        written += n;
                        if written == line.len() {
                            state.line = line;
                            return;
                        }
                    }
                    Direct::WouldBlock => break,
                    Direct::Unsupported => {
                        state.direct = false;
                        break;
                    }
                    Direct::Failed => {
                        state.closed = true;
                        state.line = line;
                        return;
                    }
                }
            }
        }
        let bytes = line[written..].to_vec();
        state.line = line;
        if self.sender.send(Queued::Line { bytes, note }).is_ok() {
            state.backlog = true;
        } else {
            state.closed = true;
        }
    }

    /// Writes `bytes` without waiting (or, with `may_wait`, the plain way).
    fn write_now(&self, bytes: &[u8], may_wait: bool) -> Direct {
        if may_wait {
            return match (&*self.out).write(bytes) {
                Ok(0) | Err(_) => Direct::Failed,
                Ok(n) => Direct::Wrote(n),
            };
        }
        write_nowait(&self.out, bytes)
    }

    /// Waits until every line sent so far is written; later events are
    /// dropped.
    pub(crate) fn finish(&self) {
        lock(&self.state).closed = true;
        let _ = self.sender.send(Queued::Stop);
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

/// One `pwritev2(RWF_NOWAIT)` at the current position, retried on EINTR.
#[cfg(target_os = "linux")]
fn write_nowait(out: &File, bytes: &[u8]) -> Direct {
    use nix::libc;
    let iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    loop {
        // SAFETY: `iov` points into `bytes`, which outlives the call; the
        // kernel only reads from it. Offset -1 writes at the current
        // position, as write(2) does (and is what pipes accept).
        let n = unsafe { libc::pwritev2(out.as_raw_fd(), &iov, 1, -1, libc::RWF_NOWAIT) };
        if let Ok(n) = usize::try_from(n) {
            return if n == 0 && !bytes.is_empty() {
                Direct::Failed
            } else {
                Direct::Wrote(n)
            };
        }
        let err = std::io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) => Direct::WouldBlock,
            Some(libc::EOPNOTSUPP | libc::EINVAL | libc::ENOSYS | libc::ESPIPE) => {
                Direct::Unsupported
            }
            _ => Direct::Failed,
        };
    }
}

#[cfg(not(target_os = "linux"))]
fn write_nowait(_out: &File, _bytes: &[u8]) -> Direct {
    Direct::Unsupported
}

/// The writer thread: writes queued lines in order; once the queue is empty
/// it clears the backlog (under the lock, so no line slips in between) and
/// waits for more.
fn write_queued(out: &File, receiver: &mpsc::Receiver<Queued>, state: &Mutex<State>) {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    let next = |out: &mut std::io::BufWriter<&File>| -> Option<Queued> {
        match receiver.try_recv() {
            Ok(item) => return Some(item),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        if out.flush().is_err() {
            return None;
        }
        {
            let mut state = lock(state);
            match receiver.try_recv() {
                Ok(item) => return Some(item),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => state.backlog = false,
            }
        }
        receiver.recv().ok()
    };
    while let Some(item) = next(&mut out) {
        match item {
            Queued::Line { bytes, note } => {
                if let Some(note) = note {
                    eprintln!("herald: {note}");
                }
                if out.write_all(&bytes).is_err() {
                    lock(state).closed = true;
                    return;
                }
            }
            Queued::Stop => break,
        }
    }
    let _ = out.flush();
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Read;
    use std::time::Duration;

    use herald_protocol::EventKind;

    use super::*;

    fn text_event(text: String) -> Event {
        Event::new(
            "ses_t",
            "agent_t",
            EventKind::AssistantMessage {
                text,
                tool_calls: Vec::new(),
            },
        )
    }

    fn pipe() -> (OwnedFd, File) {
        let (read, write) = nix::unistd::pipe().unwrap();
        (write, File::from(read))
    }

    fn texts(output: &str) -> Vec<String> {
        output
            .lines()
            .map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                v["text"].as_str().unwrap_or_default().to_owned()
            })
            .collect()
    }

    #[test]
    fn a_slow_reader_gets_every_line_in_order_and_the_sender_never_waits() {
        let (write, mut read) = pipe();
        let sink = JsonLines::start(write);
        // Far more than a pipe holds (64 KiB), in lines of several sizes, so
        // some are written at once, some in part, some queued.
        let sent: Vec<String> = (0..400)
            .map(|i| format!("{i}:{}", "x".repeat((i * 37) % 3000)))
            .collect();
        let started = std::time::Instant::now();
        for text in &sent[..200] {
            sink.send(&text_event(text.clone()));
        }
        // Nobody has read yet, yet every send returned.
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            lock(&sink.state).backlog,
            "the pipe filled, so lines queued"
        );
        // A reader that drains a little at a time while more lines come:
        // the pipe has room again while older lines are still queued.
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            let mut buf = vec![0; 8192];
            loop {
                match read.read(&mut buf).unwrap() {
                    0 => break,
                    n => all.extend_from_slice(&buf[..n]),
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            String::from_utf8(all).unwrap()
        });
        for text in &sent[200..] {
            sink.send(&text_event(text.clone()));
            std::thread::sleep(Duration::from_micros(50));
        }
        sink.finish();
        drop(sink);
        let output = reader.join().unwrap();
        assert_eq!(texts(&output), sent);
    }

    #[test]
    fn lines_are_written_at_once_while_the_reader_keeps_up() {
        let (write, mut read) = pipe();
        let sink = JsonLines::start(write);
        sink.send(&text_event("one".into()));
        // Written by the sender itself: there before any thread ran.
        let mut buf = vec![0; 4096];
        let n = read.read(&mut buf).unwrap();
        assert_eq!(texts(std::str::from_utf8(&buf[..n]).unwrap()), ["one"]);
        assert!(!lock(&sink.state).backlog);
        sink.finish();
    }

    #[test]
    fn nothing_is_written_after_run_completed_or_after_finish() {
        let (write, mut read) = pipe();
        let sink = JsonLines::start(write);
        sink.send(&text_event("before".into()));
        sink.send(&Event::new(
            "ses_t",
            "agent_t",
            EventKind::RunCompleted {
                status: herald_protocol::RunStatus::Completed,
                exit_reason: "completed".into(),
                final_response: "done".into(),
                iterations: 1,
                usage: Default::default(),
                cost_usd: None,
                tree_usage: Default::default(),
                duration_ms: 1,
            },
        ));
        sink.send(&text_event("after".into()));
        sink.finish();
        // A sink still alive after the run writes nothing.
        sink.send(&text_event("late".into()));
        drop(sink);
        let mut output = String::new();
        read.read_to_string(&mut output).unwrap();
        let lines: Vec<&str> = output.lines().collect();
        assert_eq!(lines.len(), 2, "{output}");
        assert!(lines[1].contains("\"run.completed\""), "{output}");
    }

    #[test]
    fn a_regular_file_gets_every_line_through_the_writer_thread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let file = File::create(&path).unwrap();
        let sink = JsonLines::start(OwnedFd::from(file));
        let sent: Vec<String> = (0..50).map(|i| format!("line {i}")).collect();
        for text in &sent {
            sink.send(&text_event(text.clone()));
        }
        sink.finish();
        assert_eq!(texts(&std::fs::read_to_string(&path).unwrap()), sent);
    }

    #[test]
    fn a_reader_that_went_away_stops_the_output_without_failing_the_run() {
        let (write, read) = pipe();
        drop(read);
        let sink = JsonLines::start(write);
        for i in 0..10 {
            sink.send(&text_event(format!("{i}")));
        }
        assert!(lock(&sink.state).closed);
        sink.finish();
    }
}
