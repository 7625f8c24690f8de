//! Runs one hook command: `bash -c COMMAND` in the session's working
//! directory, in its own process group, with the scrubbed environment tool
//! processes get, the event's JSON on stdin and a timeout. When the command
//! exits (or times out) whatever it left running in its group is killed, so
//! a hook never leaves a process behind.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use herald_sandbox::EnvFilter;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::decision::{Ending, Finished};

/// Bytes of stdout kept (a replacement tool output may be large).
const STDOUT_LIMIT: usize = 4 * 1024 * 1024;
/// Bytes of stderr kept (a reason or an error message).
const STDERR_LIMIT: usize = 64 * 1024;

/// Runs `command` with `input` on stdin; see the module docs.
pub(crate) async fn run_command(
    command: &str,
    cwd: &Path,
    input: &[u8],
    env: &EnvFilter,
    timeout: Duration,
) -> Finished {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    env.apply(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(err) => {
            return Finished {
                ending: Ending::NotStarted(format!("bash: {err}")),
                stdout: String::new(),
                stderr: String::new(),
            };
        }
    };
    let pid = child.id().unwrap_or_default();
    let _running = Running {
        pid,
        _tracked: herald_tools::track_group(pid, false, command, None, None),
    };
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let work = async {
        let write = async {
            if let Some(stdin) = stdin.as_mut() {
                // A hook that does not read its input closes the pipe early.
                let _ = stdin.write_all(input).await;
                let _ = stdin.shutdown().await;
            }
            drop(stdin.take());
        };
        let wait = async {
            let status = child.wait().await;
            // Whatever the command left in its group goes with it (and the
            // pipes it holds close, so the reads below end).
            kill_group(pid);
            status
        };
        let (_, status, out, err) = tokio::join!(
            write,
            wait,
            read_capped(stdout, STDOUT_LIMIT),
            read_capped(stderr, STDERR_LIMIT)
        );
        (status, out, err)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((status, stdout, stderr)) => Finished {
            ending: match status {
                Ok(status) => Ending::Exited(exit_code(status)),
                Err(err) => Ending::NotStarted(format!("waiting for it failed: {err}")),
            },
            stdout,
            stderr,
        },
        Err(_) => {
            kill_group(pid);
            // Reaped, so no zombie stays behind either.
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            Finished {
                ending: Ending::TimedOut,
                stdout: String::new(),
                stderr: String::new(),
            }
        }
    }
}

/// A started command's group: known to the signal handler that kills tool
/// groups on a second Ctrl-C, and killed when this is dropped (also when
/// the run is abandoned half way, e.g. herald shutting down).
struct Running {
    pid: u32,
    _tracked: herald_tools::GroupGuard,
}

impl Drop for Running {
    fn drop(&mut self) {
        kill_group(self.pid);
    }
}

/// SIGKILLs the process group led by `pid` (gone already: ignored).
fn kill_group(pid: u32) {
    if let Ok(raw) = i32::try_from(pid)
        && raw > 0
    {
        let _ = killpg(Pid::from_raw(raw), Signal::SIGKILL);
    }
}

/// The shell convention for an exit status: the code, or 128+signal.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

/// Reads `pipe` to its end, keeping the first `limit` bytes (the rest is
/// read and dropped, so the writer never blocks on a full pipe).
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, limit: usize) -> String {
    let Some(mut pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut chunk = vec![0u8; 8 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = limit.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env() -> EnvFilter {
        EnvFilter {
            keep: Vec::new(),
            exclude: Vec::new(),
        }
    }

    #[tokio::test]
    async fn stdin_stdout_stderr_and_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let done = run_command(
            "cat; echo err >&2; pwd >&2; exit 3",
            dir.path(),
            b"{\"event\":\"x\"}",
            &env(),
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(done.ending, Ending::Exited(3));
        assert_eq!(done.stdout, "{\"event\":\"x\"}");
        let cwd = dir.path().canonicalize().unwrap();
        assert_eq!(done.stderr, format!("err\n{}\n", cwd.display()));
    }

    #[tokio::test]
    async fn a_command_that_ignores_its_input_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let big = vec![b'x'; 1024 * 1024];
        let done = run_command("echo hi", dir.path(), &big, &env(), Duration::from_secs(10)).await;
        assert_eq!(
            (done.ending, done.stdout.as_str()),
            (Ending::Exited(0), "hi\n")
        );
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let done = run_command(
            "sleep 300 & echo $! > bg.pid; sleep 300",
            dir.path(),
            b"",
            &env(),
            Duration::from_millis(500),
        )
        .await;
        assert_eq!(done.ending, Ending::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        herald_testkit::assert_gone_within(
            &[pid],
            "the hook's background sleep",
            Duration::from_secs(5),
        )
        .await;
    }

    #[tokio::test]
    async fn what_a_finished_command_left_running_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let done = run_command(
            "sleep 300 & echo $! > bg.pid; echo done",
            dir.path(),
            b"",
            &env(),
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(
            (done.ending, done.stdout.as_str()),
            (Ending::Exited(0), "done\n")
        );
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        herald_testkit::assert_gone_within(
            &[pid],
            "the hook's background sleep",
            Duration::from_secs(5),
        )
        .await;
    }
}
