//! Which process owns something stored: a pid plus the kernel's start time
//! of that process, so a pid reused by an unrelated process after a crash is
//! not mistaken for the original owner.

/// A running (or once running) process, as recorded with leases and tool
/// processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ProcessIdentity {
    pub pid: u32,
    /// Start time in clock ticks since boot (`/proc/PID/stat` field 22); 0
    /// where unknown, which then trusts the pid alone.
    pub started: u64,
}

impl ProcessIdentity {
    /// This process.
    pub fn current() -> Self {
        let pid = std::process::id();
        Self {
            pid,
            started: start_time(pid).unwrap_or(0),
        }
    }

    /// Another process by pid, with its start time read now.
    pub fn of(pid: u32) -> Option<Self> {
        start_time(pid).map(|started| Self { pid, started })
    }

    /// Whether this very process still runs: the pid exists, is not a
    /// zombie, and (when recorded) has the same start time.
    pub fn is_alive(&self) -> bool {
        if self.pid == 0 {
            return false;
        }
        match proc_stat(self.pid) {
            Some((state, started)) => {
                state != 'Z' && state != 'X' && (self.started == 0 || started == self.started)
            }
            None => !cfg!(target_os = "linux") && signal_zero(self.pid),
        }
    }
}

/// `kill(pid, 0)` as a liveness probe where `/proc` is not available.
fn signal_zero(pid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The start time of `pid`, or `None` when no such process exists.
fn start_time(pid: u32) -> Option<u64> {
    proc_stat(pid).map(|(_, started)| started)
}

/// State letter and start time from `/proc/PID/stat`. The command name (field
/// 2) may hold spaces and parentheses, so fields are counted after its last `)`.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // After the state (field 3), field 22 is the 19th.
    let started = fields.nth(18)?.parse().ok()?;
    Some((state, started))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reused_pid_is_not() {
        let me = ProcessIdentity::current();
        assert!(me.is_alive());
        if cfg!(target_os = "linux") {
            assert_ne!(me.started, 0);
            let impostor = ProcessIdentity {
                pid: me.pid,
                started: me.started + 1,
            };
            assert!(!impostor.is_alive());
        }
    }

    #[test]
    fn an_exited_process_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let id = ProcessIdentity::of(child.id());
        child.wait().unwrap();
        if let Some(id) = id {
            assert!(!id.is_alive());
        }
        assert!(!ProcessIdentity { pid: 0, started: 0 }.is_alive());
    }
}
