//! Shared plumbing of `terminal` and `process`: spawning `bash -c` in its own
//! process group with stdout and stderr on one pipe, bounded output capture,
//! and killing a whole group.

use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use herald_sandbox::{EnvFilter, Prepared};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};

use super::ansi::strip_ansi;
use crate::{ToolContext, ToolError};

/// How long a group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(1);

/// A started shell: the child (its pid is also its process group id) and the
/// read end of the pipe carrying its interleaved stdout and stderr.
pub struct Spawned {
    /// The `bash` process.
    pub child: Child,
    /// Process id, equal to the process group id.
    pub pid: u32,
    /// Combined stdout+stderr.
    pub output: pipe::Receiver,
}

/// The sandbox a call's processes must run in: `None` when the call is not
/// confined (`ctx.sandbox` unset), an error when it is but the kernel cannot
/// enforce it; the command must then not run at all.
pub fn prepare_sandbox(
    ctx: &ToolContext,
    extra_writable: &[&Path],
) -> Result<Option<Prepared>, ToolError> {
    let Some(policy) = &ctx.sandbox else {
        return Ok(None);
    };
    policy.prepare(extra_writable).map(Some).map_err(|err| {
        ToolError::new(format!(
            "the command did not run: it must run in the sandbox, which this system cannot provide ({err}). \
             It was not run unconfined. Ask the user to allow it outside the sandbox, or to change the permission mode"
        ))
    })
}

/// Starts `bash -c script` in `cwd` as the leader of a new process group.
/// stdout and stderr share one pipe, so their lines interleave as written.
/// The shell inherits herald's environment as `env` filters it, and runs
/// confined by `sandbox` when given.
pub fn spawn_bash(
    script: &str,
    cwd: &Path,
    stdin: Stdio,
    sandbox: Option<&Prepared>,
    env: &EnvFilter,
) -> Result<Spawned, ToolError> {
    let io_err = |what: &str, err: std::io::Error| {
        ToolError::new(format!("could not {what} for the command: {err}"))
    };
    let (reader, writer) = std::io::pipe().map_err(|e| io_err("create a pipe", e))?;
    let writer_err = writer.try_clone().map_err(|e| io_err("create a pipe", e))?;
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(stdin)
        .stdout(writer)
        .stderr(writer_err)
        .process_group(0)
        .kill_on_drop(true);
    env.apply(&mut cmd);
    if let Some(sandbox) = sandbox {
        sandbox.apply(&mut cmd);
    }
    let child = cmd.spawn().map_err(|e| io_err("start bash", e))?;
    // The command holds the pipe's write ends; drop it so EOF arrives when the
    // shell and its children are done.
    drop(cmd);
    let pid = child.id().unwrap_or_default();
    let output = pipe::Receiver::from_owned_fd(reader.into())
        .map_err(|e| io_err("read the output pipe", e))?;
    Ok(Spawned { child, pid, output })
}

/// Sends `signal` to every process of the group led by `pid`. Errors (the
/// group is already gone) are ignored.
pub fn signal_group(pid: u32, signal: Signal) {
    if let Ok(raw) = i32::try_from(pid)
        && raw > 0
    {
        let _ = killpg(Pid::from_raw(raw), signal);
    }
}

/// Kills the group of `child`: SIGTERM, then SIGKILL if the leader has not
/// exited after a short grace. Returns the leader's exit status if reaped.
pub async fn terminate(child: &mut Child, pid: u32) -> Option<ExitStatus> {
    signal_group(pid, Signal::SIGTERM);
    if let Ok(Ok(status)) = tokio::time::timeout(KILL_GRACE, child.wait()).await {
        // Stragglers of the group that ignored SIGTERM.
        signal_group(pid, Signal::SIGKILL);
        return Some(status);
    }
    signal_group(pid, Signal::SIGKILL);
    tokio::time::timeout(KILL_GRACE, child.wait())
        .await
        .ok()
        .and_then(Result::ok)
}

/// The shell convention for an exit status: the code, or 128+signal.
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

/// Reads `output` to EOF into `buffer`, calling `on_data` after each chunk.
pub async fn pump(
    mut output: pipe::Receiver,
    buffer: Arc<Mutex<OutputBuffer>>,
    on_data: impl Fn() + Send,
) {
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match output.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                lock(&buffer).push(&chunk[..n]);
                on_data();
            }
        }
    }
}

/// Locks a mutex, ignoring poisoning (the data are plain bytes).
pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Bounded capture of a command's output: the first `head_cap` bytes and the
/// last `tail_cap` bytes, with a count of everything written.
#[derive(Debug)]
pub struct OutputBuffer {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: u64,
}

impl OutputBuffer {
    /// A buffer keeping at most `head_cap + tail_cap` bytes.
    pub fn new(head_cap: usize, tail_cap: usize) -> Self {
        Self {
            head: Vec::new(),
            head_cap,
            tail: VecDeque::new(),
            tail_cap,
            total: 0,
        }
    }

    /// Appends bytes, dropping the oldest tail bytes beyond the cap.
    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let room = self.head_cap.saturating_sub(self.head.len());
        if room > 0 {
            let take = room.min(data.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if data.len() >= self.tail_cap {
            self.tail.clear();
            self.tail
                .extend(&data[data.len().saturating_sub(self.tail_cap)..]);
        } else {
            let excess = (self.tail.len() + data.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..excess);
            self.tail.extend(data);
        }
    }

    /// Bytes ever written.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Everything kept, as text without ANSI escapes; a marker notes the
    /// bytes dropped between head and tail.
    pub fn text(&self) -> String {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.total > kept {
            text.push_str(&format!(
                "\n[... {} bytes of output omitted ...]\n",
                self.total - kept
            ));
        }
        let (a, b) = self.tail.as_slices();
        text.push_str(&String::from_utf8_lossy(&[a, b].concat()));
        strip_ansi(&text)
    }

    /// Tail-only text written at or after byte `offset` (at most `max` bytes,
    /// the newest), with a note when older bytes are no longer kept.
    pub fn since(&self, offset: u64, max: usize) -> String {
        let tail_start = self.total - self.tail.len() as u64;
        let wanted_from = offset.max(self.total.saturating_sub(max as u64));
        let from = wanted_from.max(tail_start);
        let skip = usize::try_from(from - tail_start).unwrap_or(usize::MAX);
        let bytes: Vec<u8> = self.tail.iter().skip(skip).copied().collect();
        let mut text = String::new();
        if from > offset {
            text.push_str(&format!(
                "[... {} earlier bytes not shown ...]\n",
                from - offset
            ));
        }
        text.push_str(&String::from_utf8_lossy(&bytes));
        strip_ansi(&text)
    }
}

/// Quotes `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn buffer_keeps_head_and_tail() {
        let mut buf = OutputBuffer::new(4, 4);
        buf.push(b"abcdefgh");
        buf.push(b"ijkl");
        assert_eq!(buf.total(), 12);
        assert_eq!(
            buf.text(),
            "abcd\n[... 4 bytes of output omitted ...]\nijkl"
        );
    }

    #[test]
    fn since_returns_new_tail_bytes_and_notes_dropped() {
        let mut buf = OutputBuffer::new(0, 5);
        buf.push(b"0123456789");
        assert_eq!(buf.since(7, 100), "789");
        assert_eq!(
            buf.since(0, 100),
            "[... 5 earlier bytes not shown ...]\n56789"
        );
        assert_eq!(buf.since(0, 2), "[... 8 earlier bytes not shown ...]\n89");
        assert_eq!(buf.since(10, 100), "");
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
    }
}
