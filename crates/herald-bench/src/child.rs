//! Runs a child process and measures its CPU time (from `wait4`) and peak
//! RSS (`VmHWM` sampled from /proc while it runs: `ru_maxrss` is inherited
//! across fork+exec and would report the benchmark's own size).

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// What a measured child used.
pub(crate) struct Measured {
    pub success: bool,
    pub cpu: Duration,
    pub max_rss_kb: u64,
    /// Peak anonymous memory (heap, stacks: what the process itself
    /// allocated, without the binary's shared, droppable text pages), from
    /// `/proc/PID/smaps_rollup` sampled every 20 ms (every second for a
    /// process over 256 MB).
    pub max_anon_kb: u64,
    pub wall: Duration,
}

/// This process's own CPU time so far (user and system, all threads), for
/// the parts of a benchmark that time themselves.
pub(crate) fn own_cpu() -> Duration {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is valid for the call.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn vm_hwm_kb(pid: libc::pid_t) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn anonymous_kb(pid: libc::pid_t) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let line = rollup.lines().find(|l| l.starts_with("Anonymous:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Above this peak RSS the anonymous memory is sampled rarely.
const LARGE_KB: u64 = 256 * 1024;

/// Spawns `cmd` (stdout discarded) and waits for it on a blocking thread.
pub(crate) async fn run_measured(mut cmd: std::process::Command) -> Result<Measured> {
    cmd.stdout(Stdio::null()).stdin(Stdio::null());
    let started = Instant::now();
    let child = cmd.spawn().context("cannot start herald")?;
    let pid = child.id() as libc::pid_t;
    let (status, usage, peak, anon) = tokio::task::spawn_blocking(move || {
        let mut status: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let (mut peak, mut anon) = (0, 0);
        for tick in 0u64.. {
            // SAFETY: `pid` is our own un-reaped child; the pointers are valid for the call.
            let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
            if rc == pid {
                return (Some(status), usage, peak, anon);
            }
            if rc < 0 {
                break;
            }
            if let Some(kb) = vm_hwm_kb(pid) {
                peak = peak.max(kb);
            }
            // smaps_rollup walks the page tables, at a cost that grows with
            // the process: every 20 ms while it is small, every second once
            // it is large (at 700 MB one read takes ~6 ms of CPU, and
            // sampling every 20 ms took 12 s of the two cores a 10,000-child
            // run needs for itself).
            let every = if peak < LARGE_KB { 20 } else { 1_000 };
            if tick % every == 0
                && let Some(kb) = anonymous_kb(pid)
            {
                anon = anon.max(kb);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        (None, usage, peak, anon)
    })
    .await?;
    let wall = started.elapsed();
    drop(child);
    let Some(status) = status else {
        bail!("wait4 failed for pid {pid}");
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok(Measured {
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kb: peak,
        max_anon_kb: anon,
        wall,
    })
}
