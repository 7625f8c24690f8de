//! Judges shell commands one simple command at a time: the judging half
//! of the [`Analyzer`] behind the `terminal` check in `Policy::check`.
//!
//! # How the parts fit
//!
//! [`analyse`] runs an [`Analyzer`] over one command line: an abstract
//! execution in source order, in two halves.
//!
//! * [`crate::shell`] parses the line with tree-sitter-bash and walks the
//!   tree (lists, pipelines, subshells, substitutions, here-documents),
//!   unquoting words and tracking `cd` and variables. It hands every simple
//!   command to [`Analyzer::simple`] and the redirections of a compound
//!   statement to [`Analyzer::judge_redirects_only`].
//! * This module and its children judge one simple command.
//!   [`Analyzer::simple`] judges its redirections, then
//!   1. [`wrappers`] strips `sudo`, `env`, `nice`, `timeout`, `xargs`, …
//!      down to the command proper;
//!   2. [`classify`] checks every path argument for credential reads and
//!      hands the command to the one family that judges its name, in a
//!      fixed order that is the precedence;
//!   3. the family raises the command's [`Judge`]: [`interpreters`]
//!      (shells, `eval`, `source`, python/node/perl/… code),
//!      [`file_system`] (rm, cp, mv, chmod, find, sed -i, …), [`archives`]
//!      (tar, unzip, gzip, …), [`system`] (disks, services, system
//!      settings), [`network`] (curl, wget, rsync, ssh, …), [`git`],
//!      [`package_managers`] (cargo, npm, pip, apt, …) or [`text_tools`]
//!      (what echo, printf, cat and base64 print; output-file options); a
//!      name no family claims is read-only, on the safe list, a program run
//!      by path, or unknown;
//!   4. the strictest judgement becomes the command's [`Finding`], and what
//!      it writes to stdout (a download, known text, file contents) flows
//!      into the next stage of its pipeline.
//!
//! The families share [`args`] (reading options and positionals),
//! [`targets`] (what writing, deleting or reading a path means: the floor,
//! protected files, the workspace, credentials), [`written`] (scripts
//! written earlier in the same line and then run) and [`tables`] (the
//! static command lists). [`code`] reads inline interpreter code, sed
//! scripts and `execute_code` scripts for the commands they run, the trees
//! they delete, the files they write and their network use.
//!
//! Code a command runs is judged where the check can see it: a shell
//! string, an `eval` text, a script written earlier in the line or a
//! command string in interpreter code is walked as a nested script (its
//! own findings), and the commands `find -exec`, `xargs` and an argv in
//! code build are judged as simple commands of their own.

mod archives;
mod args;
mod classify;
mod code;
mod file_system;
mod git;
mod interpreters;
mod network;
mod package_managers;
mod system;
mod tables;
mod targets;
mod text_tools;
mod wrappers;
mod written;

#[cfg(test)]
mod test_support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub(crate) use code::{Lang, analyse_script};

use self::args::join;
use self::wrappers::Unwrapped;
use self::written::Written;
use crate::paths::Workspace;
use crate::shell::{Finding, Redirect, Severity, Stream, Word, short};

/// Facts the walk needs that do not change within a call.
pub(crate) struct Env<'a> {
    pub home: Option<&'a Path>,
    pub ws: &'a Workspace<'a>,
}

/// Analyses a whole command line run in `cwd`: one finding per simple
/// command (and per redirected compound statement), in source order.
pub(crate) fn analyse(command: &str, cwd: &Path, env: &Env<'_>) -> Vec<Finding> {
    let mut a = Analyzer::new(env, cwd);
    a.script(command);
    a.findings
}

/// The abstract execution of one command line: the state the walk
/// carries from one simple command to the next.
pub(crate) struct Analyzer<'e> {
    pub env: &'e Env<'e>,
    /// The directory relative paths resolve against; `None` after a `cd`
    /// the check could not follow.
    pub cwd: Option<PathBuf>,
    /// Variables with a statically known value (`Some`) or known to be
    /// dynamic (`None`).
    pub vars: HashMap<String, Option<String>>,
    pub findings: Vec<Finding>,
    pub script_depth: u32,
    /// How deep the syntax-tree walk is ([`crate::shell`]).
    pub node_depth: u32,
    /// The stdin of the statement being analysed.
    pub stdin: Stream,
    /// PATH, LD_PRELOAD or similar were changed: a command name no longer
    /// says what runs.
    pub path_tainted: bool,
    /// Functions defined so far (calls to them are not external commands).
    pub functions: Vec<String>,
    /// Files this command line writes before it may run them, with their
    /// content when known (`echo 'rm -rf /' > x.sh && bash x.sh`).
    written: HashMap<PathBuf, Written>,
}

/// The strictest judgement seen so far for one simple command.
#[derive(Debug)]
struct Judge {
    sev: Severity,
    rule: &'static str,
    reason: String,
}

impl Judge {
    /// Nothing found yet: a command that only reads.
    fn new() -> Self {
        Self {
            sev: Severity::ReadOnly,
            rule: "read-only-command",
            reason: String::new(),
        }
    }

    /// [`Judge::raise`] formatting the reason only when it is kept.
    fn raise_with(&mut self, sev: Severity, rule: &'static str, reason: impl FnOnce() -> String) {
        if sev > self.sev || (sev == self.sev && self.reason.is_empty()) {
            self.sev = sev;
            self.rule = rule;
            self.reason = reason();
        }
    }

    /// Keeps `sev` if it is stricter than what was found so far (or as
    /// strict, when nothing has been said yet).
    fn raise(&mut self, sev: Severity, rule: &'static str, reason: impl Into<String>) {
        if sev > self.sev || (sev == self.sev && self.reason.is_empty()) {
            self.sev = sev;
            self.rule = rule;
            self.reason = reason.into();
        }
    }
}

impl<'e> Analyzer<'e> {
    /// A walk that has seen nothing yet, in `cwd`.
    pub(crate) fn new(env: &'e Env<'e>, cwd: &Path) -> Self {
        Self {
            env,
            cwd: Some(cwd.to_path_buf()),
            vars: HashMap::new(),
            findings: Vec::new(),
            script_depth: 0,
            node_depth: 0,
            stdin: Stream::default(),
            path_tainted: false,
            functions: Vec::new(),
            written: HashMap::new(),
        }
    }
}

impl Finding {
    /// The finding a judgement makes for `text`.
    fn of(j: Judge, text: &str) -> Self {
        Self {
            severity: j.sev,
            rule: j.rule,
            reason: j.reason,
            text: text.to_owned(),
            full_text: text.to_owned(),
            privileged: false,
        }
    }
}

impl Analyzer<'_> {
    /// Judges one simple command (pushing a [`Finding`]) and returns what it
    /// writes to stdout.
    pub fn simple(&mut self, full: Vec<Word>, redirects: &[Redirect], depth: u32) -> Stream {
        let full_text = join(&full);
        let mut j = Judge::new();
        let cwd = self.cwd.clone();
        for r in redirects {
            if r.write {
                self.write_target(
                    &mut j,
                    &r.target,
                    cwd.as_deref(),
                    &full_text,
                    "redirects output to",
                );
            } else {
                self.read_target(&mut j, &r.target, cwd.as_deref(), &full_text);
            }
        }
        let mut out = Stream::default();
        let mut un = Unwrapped {
            start: 0,
            words: full,
            privileged: None,
            cwd,
        };
        if !un.words.is_empty() {
            out = self.unwrap_and_classify(&mut un, &mut j, &full_text, depth);
        }
        for r in redirects.iter().filter(|r| r.write) {
            let content = match (&out.download, &out.known, r.stdout) {
                (Some(d), _, true) => Written::Download(d.clone()),
                (None, Some(k), true) => Written::Known(k.clone()),
                _ => Written::Unknown,
            };
            self.record_written(&r.target, content, r.append);
        }
        if let Some(p) = &un.privileged {
            j.raise_with(Severity::Risky, "privileged", || {
                format!("`{}` runs as root through {p}", short(&full_text))
            });
        }
        let text = if un.words.is_empty() {
            full_text.clone()
        } else {
            join(&un.words)
        };
        // An empty reason reads "`text` only reads", formatted only if it
        // becomes the verdict (see [`Finding::reason`]).
        self.findings.push(Finding {
            severity: j.sev,
            rule: j.rule,
            reason: j.reason,
            text,
            full_text,
            privileged: un.privileged.is_some(),
        });
        out
    }

    /// Judges redirections of a compound statement (`{ …; } > f`).
    pub fn judge_redirects_only(&mut self, redirects: &[Redirect], text: &str) {
        let mut j = Judge::new();
        let cwd = self.cwd.clone();
        for r in redirects {
            if r.write {
                self.write_target(
                    &mut j,
                    &r.target,
                    cwd.as_deref(),
                    text,
                    "redirects output to",
                );
            } else {
                self.read_target(&mut j, &r.target, cwd.as_deref(), text);
            }
        }
        self.push(j.sev, j.rule, j.reason, text);
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{findings, strictest};
    use super::*;

    #[test]
    fn a_judge_keeps_the_strictest_and_the_first_reason() {
        let mut j = Judge::new();
        assert_eq!((j.sev, j.rule), (Severity::ReadOnly, "read-only-command"));
        j.raise(Severity::Risky, "network", "uses the network");
        j.raise(Severity::Safe, "safe-list", "writes a file");
        j.raise(Severity::Risky, "git-push", "pushes");
        assert_eq!(
            (j.sev, j.rule, j.reason.as_str()),
            (Severity::Risky, "network", "uses the network")
        );
        j.raise_with(Severity::Floor, "floor", || "deletes /".into());
        assert_eq!((j.sev, j.rule), (Severity::Floor, "floor"));
    }

    #[test]
    fn a_judge_formats_only_the_reason_it_keeps() {
        let mut j = Judge::new();
        j.raise(Severity::Risky, "network", "uses the network");
        let mut formatted = false;
        j.raise_with(Severity::Safe, "safe-list", || {
            formatted = true;
            String::new()
        });
        assert!(!formatted);
        // An equal severity without a reason yet takes the new one.
        let mut j = Judge::new();
        j.raise_with(Severity::ReadOnly, "read-only-command", || "reads".into());
        assert_eq!(j.reason, "reads");
    }

    #[test]
    fn one_finding_per_simple_command_with_its_stripped_text() {
        let f = findings("sudo -u root git push && ls | wc -l");
        let texts: Vec<(&str, Severity)> =
            f.iter().map(|f| (f.text.as_str(), f.severity)).collect();
        assert_eq!(
            texts,
            [
                ("git push", Severity::Risky),
                ("ls", Severity::ReadOnly),
                ("wc -l", Severity::ReadOnly),
            ]
        );
        assert_eq!(f[0].full_text, "sudo -u root git push");
        assert!(f[0].privileged && !f[1].privileged);
    }

    #[test]
    fn redirections_are_judged_with_the_command() {
        assert_eq!(
            strictest("echo hi > /etc/passwd"),
            (Severity::Floor, "floor")
        );
        assert_eq!(
            strictest("ls < /etc/shadow"),
            (Severity::Risky, "credentials")
        );
        // A compound statement's redirections are judged on their own.
        let f = findings("{ echo a; echo b; } > /etc/hosts");
        assert!(
            f.iter()
                .any(|f| f.rule == "protected-path" && f.text.starts_with('{')),
            "{f:?}"
        );
    }
}
