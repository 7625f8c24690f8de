//! Automatic capture: failed calls are remembered per session and tool;
//! when a later call of the same tool in the same session succeeds on the
//! same target ([`Target::similar`]), the pair is offered to the model as a
//! candidate learning in one line appended to the successful result. The
//! model decides whether to save it.
//!
//! Memory is bounded ([`MAX_PENDING`] failures in all, oldest dropped) and
//! each failure is offered at most once (offering it forgets it). A
//! success with nothing pending costs one atomic load.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::recall::clip;
use super::target::Target;

/// Failures remembered at once, over every session of the process.
pub(crate) const MAX_PENDING: usize = 64;
/// Start of the candidate line (tests look for it).
pub(crate) const CANDIDATE_PREFIX: &str = "[learning] Candidate:";

/// A failed call waiting for a success on its target.
#[derive(Debug, Clone)]
struct Pending {
    session: String,
    tool: String,
    target: Target,
    /// What the call was (its command or path), one line.
    call: String,
    /// The first error line, one line.
    error: String,
}

/// The failures of every session waiting for their fix.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    pending: Mutex<VecDeque<Pending>>,
    /// `pending.len()`, read without the lock on the hot path.
    count: AtomicUsize,
}

impl Capture {
    /// Remembers a failed call; a newer failure on the same target replaces
    /// the older one.
    pub(crate) fn failed(
        &self,
        session: &str,
        tool: &str,
        target: Target,
        call: &str,
        error: &str,
    ) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.retain(|p| !(p.session == session && p.tool == tool && p.target == target));
        pending.push_back(Pending {
            session: session.to_owned(),
            tool: tool.to_owned(),
            target,
            call: clip(call, 80),
            error: clip(error, 120),
        });
        while pending.len() > MAX_PENDING {
            pending.pop_front();
        }
        self.count.store(pending.len(), Ordering::Release);
    }

    /// Whether any failure is pending (the cheap check before [`Self::succeeded`]).
    pub(crate) fn any_pending(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }

    /// A call of `tool` succeeded on `target`: the candidate line for the
    /// newest pending failure of this session and tool on a similar target
    /// (each such failure is forgotten), or `None`.
    pub(crate) fn succeeded(
        &self,
        session: &str,
        tool: &str,
        target: &Target,
        call: &str,
    ) -> Option<String> {
        if !self.any_pending() {
            return None;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let matches =
            |p: &Pending| p.session == session && p.tool == tool && p.target.similar(target);
        let newest = pending.iter().rev().find(|p| matches(p))?.clone();
        pending.retain(|p| !matches(p));
        self.count.store(pending.len(), Ordering::Release);
        Some(candidate_line(tool, &newest, &clip(call, 80)))
    }

    /// How many failures are pending.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.pending.lock().map(|p| p.len()).unwrap_or(0)
    }
}

/// The one line offered after a fix: what failed, what worked, and how to
/// save it.
fn candidate_line(tool: &str, failure: &Pending, call: &str) -> String {
    let error = if failure.error.is_empty() {
        String::new()
    } else {
        format!(" with \"{}\"", failure.error)
    };
    format!(
        "\n\n{CANDIDATE_PREFIX} {tool} `{}` failed earlier{error}; `{call}` now succeeded. If what changed would help next time, save it: learning action=save, tool={tool}, pattern (the error), error_type, fix.",
        failure.call
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::Path;

    fn target(args: &str) -> Target {
        Target::of(args, Path::new("/w"))
    }

    #[test]
    fn a_fix_on_the_same_target_is_offered_once() {
        let capture = Capture::default();
        assert!(!capture.any_pending());
        let failed = r#"{"command":"sh build.sh"}"#;
        capture.failed(
            "s1",
            "terminal",
            target(failed),
            "sh build.sh",
            "error: build cache missing",
        );
        assert!(capture.any_pending());
        // Another tool, session or target: nothing.
        let fixed = r#"{"command":"sh prepare.sh && sh build.sh"}"#;
        assert_eq!(
            capture.succeeded("s1", "execute_code", &target(fixed), "x"),
            None
        );
        assert_eq!(
            capture.succeeded("s2", "terminal", &target(fixed), "x"),
            None
        );
        assert_eq!(
            capture.succeeded("s1", "terminal", &target(r#"{"command":"ls"}"#), "ls"),
            None
        );
        let line = capture
            .succeeded(
                "s1",
                "terminal",
                &target(fixed),
                "sh prepare.sh && sh build.sh",
            )
            .unwrap();
        assert_eq!(
            line,
            "\n\n[learning] Candidate: terminal `sh build.sh` failed earlier with \"error: build cache missing\"; `sh prepare.sh && sh build.sh` now succeeded. If what changed would help next time, save it: learning action=save, tool=terminal, pattern (the error), error_type, fix."
        );
        assert_eq!(line.trim().lines().count(), 1);
        // Offered once.
        assert_eq!(
            capture.succeeded("s1", "terminal", &target(fixed), "again"),
            None
        );
        assert!(!capture.any_pending());
    }

    #[test]
    fn the_newest_failure_on_a_target_is_kept_and_memory_is_bounded() {
        let capture = Capture::default();
        let args = r#"{"path":"a.txt"}"#;
        capture.failed("s", "read_file", target(args), "a.txt", "first");
        capture.failed("s", "read_file", target(args), "a.txt", "second");
        assert_eq!(capture.len(), 1);
        let line = capture
            .succeeded("s", "read_file", &target(args), "a.txt")
            .unwrap();
        assert!(line.contains("\"second\""), "{line}");
        for i in 0..(MAX_PENDING + 10) {
            let args = format!(r#"{{"path":"f{i}"}}"#);
            capture.failed("s", "read_file", target(&args), "f", "e");
        }
        assert_eq!(capture.len(), MAX_PENDING);
        // The oldest were dropped.
        assert_eq!(
            capture.succeeded("s", "read_file", &target(r#"{"path":"f0"}"#), "f0"),
            None
        );
        assert!(
            capture
                .succeeded(
                    "s",
                    "read_file",
                    &target(&format!(r#"{{"path":"f{}"}}"#, MAX_PENDING + 9)),
                    "f"
                )
                .is_some()
        );
    }
}
