//! The table of one agent's background processes (`terminal(background=true)`),
//! which the `process` tool inspects and controls.

use std::fmt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use herald_sandbox::{EnvFilter, Prepared};
use nix::sys::signal::Signal;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::shell::{OutputBuffer, Spawned, exit_code, lock, signal_group, spawn_bash};
use crate::{ProcessJournal, ToolError};

/// Output kept per background process (the newest bytes).
const BUFFER_BYTES: usize = 1024 * 1024;
/// Most output one `poll`/`wait` returns (the newest part).
const POLL_MAX_BYTES: usize = 64 * 1024;
/// Most output one `log` returns (the newest part).
const LOG_MAX_BYTES: usize = 256 * 1024;
/// Finished processes beyond this count are forgotten, oldest first.
const MAX_ENTRIES: usize = 64;
/// How long the exit is held back for the last output to be read.
const DRAIN: Duration = Duration::from_millis(500);

/// Background processes of one agent. Every process still running when the
/// table is dropped is killed with its whole process group.
#[derive(Default)]
pub struct ProcessTable {
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    next_id: u64,
    procs: Vec<Arc<BackgroundProcess>>,
}

impl fmt::Debug for ProcessTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<String> = lock(&self.inner)
            .procs
            .iter()
            .map(|p| p.id.clone())
            .collect();
        f.debug_struct("ProcessTable").field("ids", &ids).finish()
    }
}

impl Drop for ProcessTable {
    fn drop(&mut self) {
        self.kill_all();
    }
}

impl ProcessTable {
    /// SIGKILLs every process still running, with its whole group. A
    /// session calls it before it gives up its lease: until the lease is
    /// released, a `kill -9` of herald leaves a record that makes the next
    /// run end these processes; after, nothing would.
    pub fn kill_all(&self) {
        for proc in &lock(&self.inner).procs {
            if proc.exit().is_none() {
                signal_group(proc.pid, Signal::SIGKILL);
            }
        }
    }

    /// Starts `command` under `bash -c` in `cwd` with piped stdin, collecting
    /// its combined output; unconfined, with the default environment filter
    /// (no secret-named variables). Must be called inside a tokio runtime.
    pub fn spawn(&self, command: &str, cwd: &Path) -> Result<Arc<BackgroundProcess>, ToolError> {
        self.spawn_journaled(command, cwd, None, None, &EnvFilter::default())
    }

    /// [`ProcessTable::spawn`] that tells `journal` about the process group
    /// and copies its output to the journal's log file, so both outlive a
    /// killed herald. The process runs confined by `sandbox` when given,
    /// with herald's environment as `env` filters it.
    pub fn spawn_journaled(
        &self,
        command: &str,
        cwd: &Path,
        journal: Option<Arc<dyn ProcessJournal>>,
        sandbox: Option<&Prepared>,
        env: &EnvFilter,
    ) -> Result<Arc<BackgroundProcess>, ToolError> {
        let Spawned {
            mut child,
            pid,
            output,
        } = spawn_bash(&format!("{command}\n"), cwd, Stdio::piped(), sandbox, env)?;
        let stdin = child.stdin.take();
        let proc = {
            let mut entries = lock(&self.inner);
            entries.next_id += 1;
            let proc = Arc::new(BackgroundProcess {
                id: format!("proc_{}", entries.next_id),
                command: command.to_owned(),
                pid,
                started: Instant::now(),
                output: Arc::new(Mutex::new(OutputBuffer::new(0, BUFFER_BYTES))),
                polled: Mutex::new(0),
                exit: watch::Sender::new(None),
                stdin: tokio::sync::Mutex::new(stdin),
                sandbox: sandbox.cloned(),
            });
            entries.procs.push(Arc::clone(&proc));
            while entries.procs.len() > MAX_ENTRIES {
                match entries.procs.iter().position(|p| p.exit().is_some()) {
                    Some(i) => drop(entries.procs.remove(i)),
                    None => break,
                }
            }
            proc
        };
        let log = journal.as_ref().and_then(|j| j.log_path(&proc.id));
        let group = crate::track_group(pid, true, command, log.as_deref(), journal);
        let mut reader = tokio::spawn(pump_logged(output, Arc::clone(&proc.output), log));
        let watcher = Arc::clone(&proc);
        tokio::spawn(async move {
            let _group = group;
            let code = child.wait().await.ok().map(exit_code);
            // Let the reader catch the last output; children that outlive the
            // shell may keep the pipe open, so do not wait for EOF.
            let _ = tokio::time::timeout(DRAIN, &mut reader).await;
            watcher.stdin.lock().await.take();
            watcher.exit.send_replace(Some(Exit {
                code,
                at: Instant::now(),
            }));
        });
        Ok(proc)
    }

    /// Adds a process that a killed herald run had started and this run
    /// stopped: listed as exited, with `output` (its saved log) and `note`
    /// saying what happened, so `process list/log` still show it.
    pub fn adopt_stopped(
        &self,
        command: &str,
        pid: u32,
        output: &[u8],
        note: &str,
    ) -> Arc<BackgroundProcess> {
        let mut buffer = OutputBuffer::new(0, BUFFER_BYTES);
        buffer.push(output);
        buffer.push(format!("\n[herald] {note}\n").as_bytes());
        let mut entries = lock(&self.inner);
        entries.next_id += 1;
        let now = Instant::now();
        let proc = Arc::new(BackgroundProcess {
            id: format!("proc_{}", entries.next_id),
            command: command.to_owned(),
            pid,
            started: now,
            output: Arc::new(Mutex::new(buffer)),
            polled: Mutex::new(0),
            exit: watch::Sender::new(Some(Exit {
                code: None,
                at: now,
            })),
            stdin: tokio::sync::Mutex::new(None),
            sandbox: None,
        });
        entries.procs.push(Arc::clone(&proc));
        proc
    }

    /// Looks a process up by id (`proc_3`, or just `3`).
    pub fn get(&self, id: &str) -> Option<Arc<BackgroundProcess>> {
        let entries = lock(&self.inner);
        let id = id.trim();
        entries
            .procs
            .iter()
            .find(|p| p.id == id || p.id.strip_prefix("proc_") == Some(id))
            .cloned()
    }

    /// Every known process, oldest first.
    pub fn list(&self) -> Vec<Arc<BackgroundProcess>> {
        lock(&self.inner).procs.clone()
    }

    /// Comma-separated ids for error messages, or a hint when there are none.
    pub fn known_ids(&self) -> String {
        let ids: Vec<String> = self.list().iter().map(|p| p.id.clone()).collect();
        if ids.is_empty() {
            "none (start one with terminal(background=true))".to_owned()
        } else {
            ids.join(", ")
        }
    }
}

/// Most output copied to a background process's log file.
const LOG_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// [`super::shell::pump`] that also appends the output to `log` (up to
/// [`LOG_FILE_BYTES`]); a log that cannot be written is given up, the
/// in-memory capture goes on.
async fn pump_logged(
    mut output: tokio::net::unix::pipe::Receiver,
    buffer: Arc<Mutex<OutputBuffer>>,
    log: Option<std::path::PathBuf>,
) {
    use tokio::io::AsyncReadExt;
    let mut file = match &log {
        Some(path) => tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .await
            .ok(),
        None => None,
    };
    let mut written = 0u64;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match output.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                lock(&buffer).push(&chunk[..n]);
                if let Some(f) = file.as_mut() {
                    if written < LOG_FILE_BYTES && f.write_all(&chunk[..n]).await.is_ok() {
                        written += n as u64;
                    } else {
                        file = None;
                    }
                }
            }
        }
    }
    if let Some(mut f) = file {
        let _ = f.flush().await;
    }
}

/// How a background process ended.
#[derive(Debug, Clone, Copy)]
pub struct Exit {
    /// Exit code (128+signal when killed); `None` if it could not be read.
    pub code: Option<i32>,
    at: Instant,
}

/// One background process and its captured output.
pub struct BackgroundProcess {
    /// `proc_N`.
    pub id: String,
    /// The command line it runs.
    pub command: String,
    /// Process id of its shell, also the process group id.
    pub pid: u32,
    started: Instant,
    output: Arc<Mutex<OutputBuffer>>,
    /// Output offset up to which `poll` has reported.
    polled: Mutex<u64>,
    exit: watch::Sender<Option<Exit>>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// The sandbox it runs in, if confined.
    sandbox: Option<Prepared>,
}

/// What [`BackgroundProcess::wait`] observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// The process has exited.
    Exited,
    /// The timeout passed first.
    TimedOut,
    /// The call was cancelled first.
    Cancelled,
}

impl BackgroundProcess {
    /// The exit, once the process has ended.
    pub fn exit(&self) -> Option<Exit> {
        *self.exit.borrow()
    }

    /// Whether it runs in the sandbox.
    pub fn confined(&self) -> bool {
        self.sandbox.is_some()
    }

    /// The `sandbox:` note for a confined process that exited non-zero with
    /// `output` that looks like the sandbox stopped it.
    pub fn sandbox_note(&self, output: &str) -> Option<String> {
        let failed = self.exit()?.code != Some(0);
        let sandbox = self.sandbox.as_ref()?;
        if failed {
            sandbox.denial_note(output)
        } else {
            None
        }
    }

    /// Time since start, up to the exit if it has ended.
    pub fn runtime(&self) -> Duration {
        let end = self.exit().map_or_else(Instant::now, |e| e.at);
        end.saturating_duration_since(self.started)
    }

    /// Output produced since the previous call (the newest 64 KB at most).
    pub fn take_new_output(&self) -> String {
        let mut polled = lock(&self.polled);
        let buffer = lock(&self.output);
        let text = buffer.since(*polled, POLL_MAX_BYTES);
        *polled = buffer.total();
        text
    }

    /// All kept output (the newest 256 KB at most).
    pub fn log(&self) -> String {
        lock(&self.output).since(0, LOG_MAX_BYTES)
    }

    /// Waits for the exit, the timeout or cancellation, whichever is first.
    pub async fn wait(&self, timeout: Duration, cancel: &CancellationToken) -> WaitOutcome {
        let mut rx = self.exit.subscribe();
        tokio::select! {
            res = rx.wait_for(Option::is_some) => match res {
                Ok(_) => WaitOutcome::Exited,
                Err(_) => WaitOutcome::Cancelled,
            },
            () = tokio::time::sleep(timeout) => WaitOutcome::TimedOut,
            () = cancel.cancelled() => WaitOutcome::Cancelled,
        }
    }

    /// Kills the whole process group (SIGTERM, then SIGKILL after a grace)
    /// and waits briefly for the exit to be recorded.
    pub async fn kill(&self) {
        if self.exit().is_some() {
            return;
        }
        let never = CancellationToken::new();
        signal_group(self.pid, Signal::SIGTERM);
        if self.wait(Duration::from_secs(1), &never).await == WaitOutcome::Exited {
            return;
        }
        signal_group(self.pid, Signal::SIGKILL);
        self.wait(DRAIN + Duration::from_secs(1), &never).await;
    }

    /// Writes `input` to the process's stdin.
    pub async fn write(&self, input: &str) -> Result<(), ToolError> {
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(ToolError::new(format!(
                "{} has exited; its stdin is closed",
                self.id
            )));
        };
        let written = async {
            pipe.write_all(input.as_bytes()).await?;
            pipe.flush().await
        };
        match tokio::time::timeout(Duration::from_secs(10), written).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(err)) => {
                stdin.take();
                Err(ToolError::new(format!(
                    "could not write to {}: {err}; the process no longer reads its stdin",
                    self.id
                )))
            }
            Err(_) => Err(ToolError::new(format!(
                "writing to {} timed out after 10s: it is not reading its stdin",
                self.id
            ))),
        }
    }
}
