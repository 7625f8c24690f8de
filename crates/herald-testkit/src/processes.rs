//! Checks that processes a test started through herald are really gone, for
//! the tests of interrupts, timeouts and crashes.

use std::time::{Duration, Instant};

/// Whether `pid` is gone: `kill(pid, 0)` fails with ESRCH, or only a zombie
/// is left (it runs nothing; an orphan waits for a PID 1 that may never reap
/// it).
///
/// # Panics
/// On any other `kill` error (the test cannot tell).
pub fn is_gone(pid: i32) -> bool {
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Err(nix::errno::Errno::ESRCH) => true,
        Err(e) => panic!("kill({pid}, 0): {e}"),
        Ok(()) => std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                // The state follows the parenthesised command name.
                stat.rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
            })
            .unwrap_or(true),
    }
}

/// Asserts every pid in `pids` is gone within `limit`; survivors are
/// SIGKILLed (so they do not outlive the test) and the test fails, naming
/// `what`.
///
/// # Panics
/// When a process is still running after `limit`.
pub async fn assert_gone_within(pids: &[i32], what: &str, limit: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if pids.iter().all(|&p| is_gone(p)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let alive: Vec<i32> = pids.iter().copied().filter(|&p| !is_gone(p)).collect();
    for &p in &alive {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(p),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    panic!("{what}: process(es) {alive:?} still running {limit:?} after herald stopped them");
}
