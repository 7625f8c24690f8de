//! The interpreter process: started as the leader of its own process group,
//! its stdout and stderr captured within limits, stopped on timeout
//! (SIGTERM to the group, SIGKILL 5 s later) or at once on interrupt. Nothing
//! it started outlives the run: the group is killed when the script ends and
//! when the run is dropped half-way.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use herald_sandbox::Prepared;

use crate::capture::{Capture, pump};

/// stdout kept for the model: 50 KB, 60% head and 40% tail.
const STDOUT_LIMIT: usize = 50 * 1024;
/// stderr kept: 10 KB, mostly the tail (where a traceback ends).
const STDERR_LIMIT: usize = 10 * 1024;
/// Between SIGTERM and SIGKILL on timeout.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(5);
/// How long output is still read after the group is gone.
const DRAIN: Duration = Duration::from_millis(250);
/// How long a killed process may take to be reaped.
const REAP: Duration = Duration::from_secs(5);

/// How to start the script.
pub(crate) struct Launch<'a> {
    pub python: &'a Path,
    pub script: &'a Path,
    pub cwd: &'a Path,
    pub env: Vec<(String, String)>,
    pub confinement: Option<&'a Prepared>,
}

/// Why the script stopped.
#[derive(Debug)]
pub(crate) enum Ending {
    /// It exited on its own.
    Exited(ExitStatus),
    /// It ran out of time and was stopped.
    TimedOut,
    /// The user interrupted the turn.
    Interrupted,
    /// Waiting for it failed.
    Lost(String),
}

/// A finished script.
#[derive(Debug)]
pub(crate) struct Finished {
    pub ending: Ending,
    pub stdout: Capture,
    pub stderr: String,
}

/// Kills the whole process group when dropped, unless already done.
struct GroupGuard(Option<Pid>);

impl GroupGuard {
    fn signal(&self, signal: Signal) {
        if let Some(pid) = self.0 {
            // The group may already be gone; nothing to do then.
            let _ = killpg(pid, signal);
        }
    }

    /// Kills what is left of the group and disarms the guard.
    fn finish(&mut self) {
        self.signal(Signal::SIGKILL);
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}

/// Starts the interpreter on the script, marked as started by this herald
/// process (so a later run finds it if herald is killed while it runs).
pub(crate) fn spawn(launch: Launch<'_>) -> std::io::Result<Child> {
    let mut cmd = Command::new(launch.python);
    cmd.arg(launch.script)
        .current_dir(launch.cwd)
        .env_clear()
        .envs(launch.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    herald_sandbox::mark_command(&mut cmd);
    if let Some(confinement) = launch.confinement {
        confinement.apply(&mut cmd);
    }
    cmd.spawn()
}

/// Runs `child` to its end, `timeout` or `cancel`, whichever comes first,
/// capturing its output.
pub(crate) async fn supervise(
    mut child: Child,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Finished {
    let mut group = GroupGuard(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
    );
    let mut stdout = Capture::new(STDOUT_LIMIT, 60);
    let mut stderr = Capture::new(STDERR_LIMIT, 20);
    let out_pipe = child.stdout.take();
    let err_pipe = child.stderr.take();
    let ending = {
        let pumps = async {
            let out = async {
                if let Some(pipe) = out_pipe {
                    pump(pipe, &mut stdout).await;
                }
            };
            let err = async {
                if let Some(pipe) = err_pipe {
                    pump(pipe, &mut stderr).await;
                }
            };
            tokio::join!(out, err);
        };
        tokio::pin!(pumps);
        let mut pumped = false;
        let ending = {
            let waiting = wait_for_end(&mut child, &group, timeout, cancel);
            tokio::pin!(waiting);
            loop {
                tokio::select! {
                    ending = &mut waiting => break ending,
                    () = &mut pumps, if !pumped => pumped = true,
                }
            }
        };
        // The leader is gone: kill anything it left running (which may hold
        // the pipes open), then read what is still buffered.
        group.finish();
        if !pumped {
            let _ = tokio::time::timeout(DRAIN, &mut pumps).await;
        }
        ending
    };
    Finished {
        ending,
        stdout,
        stderr: stderr.render("stderr"),
    }
}

/// Waits for the leader to exit, stopping it on timeout or interrupt.
async fn wait_for_end(
    child: &mut Child,
    group: &GroupGuard,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Ending {
    tokio::select! {
        biased;
        () = cancel.cancelled() => {
            group.signal(Signal::SIGKILL);
            reap(child).await;
            Ending::Interrupted
        }
        status = child.wait() => match status {
            Ok(status) => Ending::Exited(status),
            Err(err) => Ending::Lost(format!("cannot wait for the script: {err}")),
        },
        () = tokio::time::sleep(timeout) => {
            group.signal(Signal::SIGTERM);
            tokio::select! {
                _ = tokio::time::timeout(KILL_GRACE, child.wait()) => {}
                () = cancel.cancelled() => {}
            }
            group.signal(Signal::SIGKILL);
            reap(child).await;
            Ending::TimedOut
        }
    }
}

/// Collects a killed leader's exit status (bounded, in case it is stuck in
/// the kernel).
async fn reap(child: &mut Child) {
    let _ = tokio::time::timeout(REAP, child.wait()).await;
}
