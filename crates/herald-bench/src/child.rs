//! Runs a child process and reads its own CPU time and peak RSS from `wait4`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// What a measured child used.
pub(crate) struct Measured {
    pub success: bool,
    pub cpu: Duration,
    pub max_rss_kb: u64,
    pub wall: Duration,
}

/// Spawns `cmd` (stdout discarded) and waits for it on a blocking thread.
pub(crate) async fn run_measured(mut cmd: std::process::Command) -> Result<Measured> {
    cmd.stdout(Stdio::null()).stdin(Stdio::null());
    let started = Instant::now();
    let child = cmd.spawn().context("cannot start herald")?;
    let pid = child.id() as libc::pid_t;
    let (status, usage) = tokio::task::spawn_blocking(move || {
        let mut status: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our own un-reaped child; the pointers are valid for the call.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        (if rc == pid { Some(status) } else { None }, usage)
    })
    .await?;
    let wall = started.elapsed();
    let Some(status) = status else {
        bail!("wait4 failed for pid {pid}");
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok(Measured {
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kb: usage.ru_maxrss as u64,
        wall,
    })
}
