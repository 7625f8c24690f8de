//! Every tool process carries the herald process that started it in its
//! environment ([`OWNER_VAR`], set on the command before it is spawned, so
//! it is in place from the first instruction the process runs and every
//! descendant inherits it). A `kill -9`ed herald cannot end its tools, and
//! a process group it had started but not yet recorded is known to no
//! store; the mark is what still names them. [`kill_orphans_of`] finds the
//! processes marked by herald processes known to be dead (through `/proc`,
//! Linux only) and kills them.

use std::sync::OnceLock;

/// The environment variable naming the herald process (pid and start time)
/// that started a tool process, as `PID:STARTED`.
pub const OWNER_VAR: &str = "HERALD_TOOL_OWNER";

/// A herald process as a mark names it: its pid and its start time, so a
/// pid reused after a crash is not mistaken for the owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner {
    /// Its process id.
    pub pid: u32,
    /// Start time in clock ticks since boot (`/proc/PID/stat` field 22),
    /// the same number `herald_store::ProcessIdentity` records; 0 where
    /// unknown (such an owner is never swept: it cannot be proven dead).
    pub started: u64,
}

impl Owner {
    /// This process (read once).
    pub fn current() -> Self {
        static CURRENT: OnceLock<Owner> = OnceLock::new();
        *CURRENT.get_or_init(|| {
            let pid = std::process::id();
            Self {
                pid,
                started: imp::stat(pid).map_or(0, |s| s.started),
            }
        })
    }

    /// The value of [`OWNER_VAR`] that names this owner.
    pub fn mark(&self) -> String {
        format!("{}:{}", self.pid, self.started)
    }

    /// Reads a mark written by [`Owner::mark`].
    pub fn parse(value: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(value).ok()?;
        let (pid, started) = text.split_once(':')?;
        Some(Self {
            pid: pid.parse().ok()?,
            started: started.parse().ok()?,
        })
    }
}

/// Marks `cmd` as started by this herald process (see the module docs).
pub fn mark_command(cmd: &mut tokio::process::Command) {
    cmd.env(OWNER_VAR, Owner::current().mark());
}

/// [`mark_command`] for a `std` command.
pub fn mark_command_std(cmd: &mut std::process::Command) {
    cmd.env(OWNER_VAR, Owner::current().mark());
}

/// One process [`kill_orphans_of`] killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KilledProcess {
    /// Its process id.
    pub pid: u32,
    /// The dead herald process its mark named.
    pub owner: Owner,
    /// Its command line (for the log), possibly cut.
    pub command: String,
}

/// What one sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sweep {
    /// The processes killed, in the order they were.
    pub killed: Vec<KilledProcess>,
    /// Processes looked at over all passes.
    pub scanned: usize,
    /// Passes over `/proc` (a pass that killed something is followed by
    /// another, for what the killed processes forked meanwhile).
    pub passes: usize,
}

/// Kills every process whose mark names one of `dead` (and the groups such
/// processes lead), then every process marked by a process it killed (the
/// tools of a herald that was itself an orphaned tool), until a pass over
/// `/proc` finds nothing new. Only processes proven to belong to a dead
/// herald are touched: an owner still running (same pid and start time) is
/// left out, an owner whose start time is unknown too, and each process is
/// signalled through a pidfd whose process's start time is checked again
/// after the pidfd is opened, so a pid reused meanwhile is never hit.
/// Blocking (it reads `/proc`); Linux only, elsewhere it does nothing.
pub fn kill_orphans_of(dead: &[Owner]) -> Sweep {
    imp::kill_orphans_of(dead)
}

/// The value of [`OWNER_VAR`] in an `environ` block (NUL-separated
/// `NAME=value` entries), if any.
fn find_mark(environ: &[u8]) -> Option<Owner> {
    let prefix = OWNER_VAR.as_bytes();
    environ
        .split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(prefix)?.strip_prefix(b"="))
        .and_then(Owner::parse)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::HashSet;

    use rustix::process::{
        Pid, PidfdFlags, Signal, kill_process, kill_process_group, pidfd_open, pidfd_send_signal,
    };

    use super::{KilledProcess, Owner, Sweep, find_mark};

    /// Most passes over `/proc` in one sweep.
    const MAX_PASSES: usize = 8;

    /// What a sweep needs of `/proc/PID/stat`.
    #[derive(Debug, Clone, Copy)]
    pub(super) struct Stat {
        pub state: char,
        pub pgrp: u32,
        pub started: u64,
    }

    /// State, process group and start time from `/proc/PID/stat`. The
    /// command name (field 2) may hold spaces and parentheses, so fields are
    /// counted after its last `)`.
    pub(super) fn stat(pid: u32) -> Option<Stat> {
        let mut buf = Vec::with_capacity(512);
        read_into(&format!("/proc/{pid}/stat"), &mut buf).ok()?;
        let text = std::str::from_utf8(&buf).ok()?;
        let rest = &text[text.rfind(')')? + 1..];
        let mut fields = rest.split_whitespace();
        let state = fields.next()?.chars().next()?;
        let _ppid = fields.next()?;
        let pgrp = fields.next()?.parse().ok()?;
        // After the process group (field 5), field 22 is the 17th.
        let started = fields.nth(16)?.parse().ok()?;
        Some(Stat {
            state,
            pgrp,
            started,
        })
    }

    /// Reads the whole file at `path` into `buf` (cleared first): one open
    /// and as many reads as it takes, no `stat` (`/proc` sizes are 0).
    fn read_into(path: &str, buf: &mut Vec<u8>) -> std::io::Result<()> {
        use std::io::Read;
        buf.clear();
        std::fs::File::open(path)?.read_to_end(buf)?;
        Ok(())
    }

    /// Whether `owner` still runs: same pid, same start time, not a zombie.
    fn is_alive(owner: &Owner) -> bool {
        stat(owner.pid).is_some_and(|s| s.started == owner.started && !matches!(s.state, 'Z' | 'X'))
    }

    /// A marked process found by a pass.
    struct Found {
        pid: u32,
        stat: Stat,
        owner: Owner,
    }

    /// One pass over `/proc`: the live processes whose mark names one of
    /// `owners`, and how many processes were looked at.
    fn scan(owners: &HashSet<Owner>) -> (Vec<Found>, usize) {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return (Vec::new(), 0);
        };
        // A marked process started after its owner did.
        let earliest = owners.iter().map(|o| o.started).min().unwrap_or(0);
        let me = std::process::id();
        let mut found = Vec::new();
        let mut scanned = 0;
        let mut environ = Vec::with_capacity(16 * 1024);
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            scanned += 1;
            let Some(stat) = stat(pid) else {
                continue;
            };
            if matches!(stat.state, 'Z' | 'X') || stat.started < earliest {
                continue;
            }
            // Unreadable for processes of other users (and non-dumpable
            // ones): those are not herald's tools.
            if read_into(&format!("/proc/{pid}/environ"), &mut environ).is_err() {
                continue;
            }
            if let Some(owner) = find_mark(&environ).filter(|o| owners.contains(o)) {
                found.push(Found { pid, stat, owner });
            }
        }
        (found, scanned)
    }

    /// The command line of `pid` (for the log), at most 200 bytes.
    fn command_line(pid: u32) -> String {
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let text: String = String::from_utf8_lossy(&raw)
            .split('\0')
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        text.chars().take(200).collect()
    }

    /// SIGKILLs `found` (and the group it leads) unless its pid now names
    /// another process. True when it was signalled.
    fn kill(found: &Found) -> bool {
        let Some(pid) = i32::try_from(found.pid).ok().and_then(Pid::from_raw) else {
            return false;
        };
        // Opened first, checked second: if the start time still matches,
        // the pidfd refers to the process that was found.
        let pidfd = match pidfd_open(pid, PidfdFlags::empty()) {
            Ok(fd) => Some(fd),
            Err(rustix::io::Errno::NOSYS) => None,
            Err(_) => return false,
        };
        match stat(found.pid) {
            Some(now) if now.started == found.stat.started && !matches!(now.state, 'Z' | 'X') => {}
            _ => return false,
        }
        // The group kill may end the process before its own signal, which
        // then finds it exited (ESRCH): it was signalled all the same.
        let mut signalled = false;
        if found.stat.pgrp == found.pid {
            // It leads its group and is alive (checked just now), so the
            // group id is its own: nothing else can hold that number.
            signalled = kill_process_group(pid, Signal::KILL).is_ok();
        }
        let direct = match &pidfd {
            Some(fd) => pidfd_send_signal(fd, Signal::KILL).is_ok(),
            // A kernel older than 5.3: the start time was checked an
            // instant ago.
            None => kill_process(pid, Signal::KILL).is_ok(),
        };
        signalled || direct
    }

    /// The owners among `dead` that can be proven dead.
    fn provably_dead(dead: &[Owner]) -> HashSet<Owner> {
        dead.iter()
            .filter(|o| o.pid != 0 && o.started != 0 && !is_alive(o))
            .copied()
            .collect()
    }

    pub(super) fn kill_orphans_of(dead: &[Owner]) -> Sweep {
        let mut owners = provably_dead(dead);
        let mut sweep = Sweep::default();
        if owners.is_empty() {
            return sweep;
        }
        let mut killed: HashSet<(u32, u64)> = HashSet::new();
        while sweep.passes < MAX_PASSES {
            sweep.passes += 1;
            let (found, scanned) = scan(&owners);
            sweep.scanned += scanned;
            let fresh: Vec<Found> = found
                .into_iter()
                .filter(|f| !killed.contains(&(f.pid, f.stat.started)))
                .collect();
            if fresh.is_empty() {
                break;
            }
            for found in fresh {
                let command = command_line(found.pid);
                let identity = Owner {
                    pid: found.pid,
                    started: found.stat.started,
                };
                killed.insert((found.pid, found.stat.started));
                let signalled = kill(&found);
                if signalled {
                    sweep.killed.push(KilledProcess {
                        pid: found.pid,
                        owner: found.owner,
                        command,
                    });
                }
                // Killed now, or already gone (with the group of a leader
                // killed before it): whatever it had marked as its own (the
                // tools of a herald that was itself a tool) is orphaned too.
                if signalled || !is_alive(&identity) {
                    owners.insert(identity);
                }
            }
        }
        sweep
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Owner, Sweep};

    /// Start times are read from `/proc`, which exists only on Linux.
    pub(super) struct Stat {
        pub started: u64,
    }

    pub(super) fn stat(_pid: u32) -> Option<Stat> {
        None
    }

    pub(super) fn kill_orphans_of(_dead: &[Owner]) -> Sweep {
        Sweep::default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_round_trips_and_is_found_among_other_variables() {
        let owner = Owner {
            pid: 4321,
            started: 987_654,
        };
        assert_eq!(Owner::parse(owner.mark().as_bytes()), Some(owner));
        let environ = format!(
            "PATH=/bin\0{OWNER_VAR}X=1:2\0{OWNER_VAR}={}\0HOME=/h\0",
            owner.mark()
        );
        assert_eq!(find_mark(environ.as_bytes()), Some(owner));
        assert_eq!(find_mark(b"PATH=/bin\0HOME=/h\0"), None);
        assert_eq!(Owner::parse(b"12"), None);
        assert_eq!(Owner::parse(b"x:1"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_start_time_and_is_never_swept() {
        let me = Owner::current();
        assert_eq!(me.pid, std::process::id());
        assert_ne!(me.started, 0);
        // Alive: not an orphan's owner, whatever it marked.
        assert_eq!(kill_orphans_of(&[me]), Sweep::default());
    }
}
