//! What a tool call works on, so a later call of the same tool can be
//! recognised as another attempt at the same thing (automatic capture).
//!
//! The rule:
//! * a call with a `path` argument targets that path (resolved against the
//!   agent's directory, `.` and `..` removed): same path, same target;
//! * a call with a `command` argument (`terminal`) targets the heads of its
//!   simple commands (program name plus its first non-option word, `cd`
//!   segments, environment assignments and wrappers such as `sudo` left
//!   out): two commands sharing a head are the same target, so `cargo build`
//!   failing and `apt-get install -y gcc && cargo build --release`
//!   succeeding are a pair;
//! * any other call targets the words of its string arguments: at least
//!   half of them shared ([`WORDS_SIMILARITY`]) is the same target.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

/// Share of argument words two calls need in common to be the same target.
pub(crate) const WORDS_SIMILARITY: f64 = 0.5;

/// Words of a command that run the next word as the real program.
const WRAPPERS: &[&str] = &[
    "sudo", "env", "time", "nohup", "exec", "command", "nice", "timeout",
];

/// What one call works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A file or directory.
    Path(PathBuf),
    /// The heads of a command line's simple commands (`cargo build`).
    Command(BTreeSet<String>),
    /// The words of the arguments.
    Words(BTreeSet<String>),
}

impl Target {
    /// The target of a call with these (JSON) arguments, run in `cwd`.
    pub(crate) fn of(arguments: &str, cwd: &Path) -> Target {
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        if let Some(path) = args.get("path").and_then(Value::as_str) {
            return Target::Path(normalize(&cwd.join(path)));
        }
        if let Some(command) = args.get("command").and_then(Value::as_str) {
            return Target::Command(command_heads(command));
        }
        let mut words = BTreeSet::new();
        collect_words(&args, &mut words);
        Target::Words(words)
    }

    /// Whether a call on `other` is another attempt at this target.
    pub(crate) fn similar(&self, other: &Target) -> bool {
        match (self, other) {
            (Target::Path(a), Target::Path(b)) => a == b,
            (Target::Command(a), Target::Command(b)) => a.intersection(b).next().is_some(),
            (Target::Words(a), Target::Words(b)) => {
                if a.is_empty() || b.is_empty() {
                    return a.is_empty() && b.is_empty();
                }
                let shared = a.intersection(b).count() as f64;
                shared / a.union(b).count() as f64 >= WORDS_SIMILARITY
            }
            _ => false,
        }
    }

    /// Words that name the target, for a recall query: a path's file name,
    /// a command's heads, the first argument words.
    pub(crate) fn query_words(&self) -> String {
        match self {
            Target::Path(path) => path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            Target::Command(heads) => heads.iter().cloned().collect::<Vec<_>>().join(" "),
            Target::Words(words) => words.iter().take(8).cloned().collect::<Vec<_>>().join(" "),
        }
    }
}

/// `path` with `.` removed and `..` applied, without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The heads of the simple commands of a command line (see the module doc).
/// Splitting on operator characters without quote awareness is rough on
/// purpose: a head only needs to be stable between two attempts.
pub(crate) fn command_heads(command: &str) -> BTreeSet<String> {
    // `2>&1` and `&>` are redirections, not operators.
    command
        .replace(">&", "> ")
        .replace("&>", " >")
        .split(['&', '|', ';', '\n', '(', ')'])
        .filter_map(head)
        .collect()
}

/// `program first-argument` of one simple command, `None` for `cd` and
/// empty segments.
fn head(segment: &str) -> Option<String> {
    let mut words = segment
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\'' || c == '`'))
        .filter(|w| !w.is_empty())
        .skip_while(|w| is_assignment(w) || WRAPPERS.contains(w));
    let program = words.next()?;
    let program = program.rsplit('/').next().unwrap_or(program);
    if program.is_empty() || program == "cd" {
        return None;
    }
    match words.find(|w| !w.starts_with('-')) {
        Some(arg) => Some(format!("{program} {arg}")),
        None => Some(program.to_owned()),
    }
}

/// `NAME=value` before a program.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Lowercase words (alphanumeric runs of 2+ characters) of every string in
/// a JSON value.
fn collect_words(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::String(text) => out.extend(
            text.split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.chars().count() >= 2)
                .map(str::to_lowercase),
        ),
        Value::Array(items) => items.iter().for_each(|v| collect_words(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_words(v, out)),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn t(args: &str) -> Target {
        Target::of(args, Path::new("/work/app"))
    }

    fn same(a: &str, b: &str) -> bool {
        t(a).similar(&t(b))
    }

    #[test]
    fn paths_are_the_same_target_after_resolving() {
        assert!(same(
            r#"{"path":"src/main.rs"}"#,
            r#"{"path":"/work/app/./src/../src/main.rs","offset":3}"#
        ));
        assert!(!same(
            r#"{"path":"src/main.rs"}"#,
            r#"{"path":"src/lib.rs"}"#
        ));
        assert_eq!(t(r#"{"path":"a/b.toml"}"#).query_words(), "b.toml");
    }

    #[test]
    fn commands_are_the_same_target_when_they_share_a_head() {
        assert_eq!(
            command_heads("cd app && FOO=1 sudo /usr/bin/cargo build --release | tee log"),
            ["cargo build", "tee log"]
                .into_iter()
                .map(String::from)
                .collect()
        );
        // The fix ran first, then the same command.
        assert!(same(
            r#"{"command":"cargo build"}"#,
            r#"{"command":"apt-get install -y gcc && cargo build --release"}"#
        ));
        assert!(same(
            r#"{"command":"python3 app.py"}"#,
            r#"{"command":"pip install pyyaml; python3 app.py --verbose"}"#
        ));
        // Flags before the first argument do not change the head.
        assert!(same(
            r#"{"command":"npm --silent test 2>&1"}"#,
            r#"{"command":"npm test -- --watch=false &> log"}"#
        ));
        assert!(!same(
            r#"{"command":"make 2>&1"}"#,
            r#"{"command":"cargo check 2>&1"}"#
        ));
        // Another subcommand or file is another target.
        assert!(!same(
            r#"{"command":"cargo build"}"#,
            r#"{"command":"cargo test"}"#
        ));
        assert!(!same(
            r#"{"command":"ls missing"}"#,
            r#"{"command":"ls present"}"#
        ));
        // Only cd in common is nothing in common.
        assert!(!same(
            r#"{"command":"cd app && make"}"#,
            r#"{"command":"cd app && npm test"}"#
        ));
        assert!(!same(r#"{"command":"cd app"}"#, r#"{"command":"cd app"}"#));
    }

    #[test]
    fn other_calls_compare_their_argument_words() {
        assert!(same(
            r#"{"query":"deploy staging cluster"}"#,
            r#"{"query":"deploy the staging cluster"}"#
        ));
        assert!(!same(
            r#"{"query":"deploy staging cluster"}"#,
            r#"{"query":"rollback production"}"#
        ));
        assert!(same("{}", "{}"));
        assert!(!same("{}", r#"{"query":"x1"}"#));
        // Different kinds of target never match.
        assert!(!same(r#"{"path":"make"}"#, r#"{"command":"make"}"#));
        // Unparseable arguments are an empty target, not a panic.
        assert_eq!(t("not json"), Target::Words(BTreeSet::new()));
    }
}
