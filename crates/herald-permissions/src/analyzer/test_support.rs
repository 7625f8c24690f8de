//! Helpers for the analyzer's unit tests: analyse a command line in a
//! fixed setting (working directory `/work/project`, home `/home/user`,
//! the temp directories writable, as the policy sets them up) and read
//! back the findings.

use std::path::Path;

use super::{Env, analyse};
use crate::paths::{self, Workspace};
use crate::shell::{Finding, Severity};

const CWD: &str = "/work/project";
const HOME: &str = "/home/user";

/// Every finding of `cmd`, in source order.
pub(super) fn findings(cmd: &str) -> Vec<Finding> {
    let roots = paths::temp_roots();
    let ws = Workspace::new(Path::new(CWD), &roots);
    let env = Env {
        home: Some(Path::new(HOME)),
        ws: &ws,
    };
    analyse(cmd, Path::new(CWD), &env)
}

/// The strictest finding of `cmd` (the first among equals): its severity
/// and rule.
pub(super) fn strictest(cmd: &str) -> (Severity, &'static str) {
    let mut strictest = (Severity::ReadOnly, "read-only-command");
    for f in findings(cmd) {
        if f.severity > strictest.0 {
            strictest = (f.severity, f.rule);
        }
    }
    strictest
}
