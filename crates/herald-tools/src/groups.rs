//! Every process group a tool started and that still runs, known in two
//! places: a fixed table a signal handler can read (so a second Ctrl-C or
//! SIGTERM that ends herald at once still kills the tools' processes), and
//! an optional [`ProcessJournal`] that records them durably (so the next run
//! can end the groups a `kill -9`ed run left behind).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

/// Tool process groups tracked at once; more still run, untracked.
const SLOTS: usize = 1024;

static GROUPS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

/// Told when tools start and end process groups (the store records them).
pub trait ProcessJournal: Send + Sync + std::fmt::Debug {
    /// A group led by `pgid` started running `command`.
    fn started(&self, pgid: u32, background: bool, command: &str, log: Option<&std::path::Path>);
    /// The group led by `pgid` ended (or was killed).
    fn ended(&self, pgid: u32);
    /// Where a background process's output is copied, so it survives this
    /// process; `None` keeps it in memory only.
    fn log_path(&self, _process_id: &str) -> Option<PathBuf> {
        None
    }
}

/// Membership of one group in the table (and the journal) until dropped.
#[derive(Debug)]
pub struct GroupGuard {
    slot: Option<usize>,
    pgid: u32,
    journal: Option<Arc<dyn ProcessJournal>>,
}

/// Tracks the group led by `pgid` until the guard is dropped.
pub fn track_group(
    pgid: u32,
    background: bool,
    command: &str,
    log: Option<&std::path::Path>,
    journal: Option<Arc<dyn ProcessJournal>>,
) -> GroupGuard {
    let raw = i32::try_from(pgid).unwrap_or(0);
    let slot = (raw > 0)
        .then(|| {
            GROUPS.iter().position(|s| {
                s.compare_exchange(0, raw, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            })
        })
        .flatten();
    if let Some(journal) = &journal {
        journal.started(pgid, background, command, log);
    }
    GroupGuard {
        slot,
        pgid,
        journal,
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            GROUPS[slot].store(0, Ordering::Release);
        }
        if let Some(journal) = &self.journal {
            journal.ended(self.pgid);
        }
    }
}

/// SIGKILLs every tracked group. Async-signal-safe (atomics and `kill`
/// only), for a signal handler that is about to end the process.
pub fn kill_tracked_groups() {
    for slot in &GROUPS {
        let pgid = slot.load(Ordering::Acquire);
        if pgid > 0 {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// How many groups are tracked now (for tests).
pub fn tracked_groups() -> usize {
    GROUPS
        .iter()
        .filter(|s| s.load(Ordering::Relaxed) > 0)
        .count()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Debug, Default)]
    struct Log(Mutex<Vec<String>>);

    impl ProcessJournal for Log {
        fn started(&self, pgid: u32, background: bool, command: &str, _: Option<&std::path::Path>) {
            self.0
                .lock()
                .unwrap()
                .push(format!("start {pgid} {background} {command}"));
        }
        fn ended(&self, pgid: u32) {
            self.0.lock().unwrap().push(format!("end {pgid}"));
        }
    }

    #[test]
    fn a_guard_tracks_until_dropped_and_tells_the_journal() {
        let log = Arc::new(Log::default());
        let journal: Arc<dyn ProcessJournal> = log.clone();
        let guard = track_group(999_999, true, "sleep 1", None, Some(journal));
        assert!(GROUPS.iter().any(|s| s.load(Ordering::Relaxed) == 999_999));
        drop(guard);
        assert!(!GROUPS.iter().any(|s| s.load(Ordering::Relaxed) == 999_999));
        assert_eq!(
            *log.0.lock().unwrap(),
            vec![
                "start 999999 true sleep 1".to_owned(),
                "end 999999".to_owned()
            ]
        );
    }
}
