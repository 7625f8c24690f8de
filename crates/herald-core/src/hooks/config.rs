//! `[[hooks]]` entries as written in `config.toml` or a project's
//! `.herald/hooks.toml`, and their check: a known event, a command, a
//! tool-name glob that compiles and a timeout within its bounds. A bad
//! entry is an error naming the file, the entry and the key.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The timeout of a hook without `timeout`, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// Allowed values of `timeout`, in seconds.
pub const TIMEOUT_RANGE: std::ops::RangeInclusive<i64> = 1..=600;

/// When a hook runs (the protocol's type).
pub use herald_protocol::HookEvent;

/// What `matcher` is matched against for `event`, if anything: the tool
/// name for tool events, the kind of a notification.
pub fn matcher_subject(event: HookEvent) -> Option<&'static str> {
    match event {
        HookEvent::PreTool | HookEvent::PostTool => Some("the tool name"),
        HookEvent::Notification => Some("the notification kind (approval_needed, turn_done)"),
        HookEvent::FileChanged => Some("the file's path under the working directory"),
        _ => None,
    }
}

/// One `[[hooks]]` table as written. Unknown keys are an error (a typo
/// such as `matchr` would otherwise run a hook on every tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// The event name (`pre_tool`, ...).
    pub event: String,
    /// Tool-name glob (`terminal`, `mcp__*`, `write_file|patch`); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// Run with `bash -c` in the session's working directory.
    pub command: String,
    /// Seconds before the command is killed (default 60, 1-600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
}

/// Where a hook was configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOrigin {
    /// The user's `config.toml`.
    User,
    /// A project's `.herald/hooks.toml` (runs only once approved).
    Project,
}

/// A checked hook.
#[derive(Debug, Clone)]
pub struct HookSpec {
    pub event: HookEvent,
    /// The matcher as written (`None`: every tool / notification).
    pub matcher: Option<String>,
    /// The compiled matcher.
    pub(crate) pattern: Option<Matcher>,
    pub command: String,
    pub timeout: Duration,
    pub origin: HookOrigin,
}

impl HookSpec {
    /// Whether the hook applies to `subject` (a tool name or notification
    /// kind); hooks without a matcher apply to everything.
    pub fn matches(&self, subject: &str) -> bool {
        self.pattern.as_ref().is_none_or(|m| m.is_match(subject))
    }
}

/// A tool-name glob with `|` between alternatives.
#[derive(Debug, Clone)]
pub(crate) struct Matcher(Vec<globset::GlobMatcher>);

impl Matcher {
    fn new(text: &str) -> Result<Self, String> {
        let mut globs = Vec::new();
        for alternative in text.split('|') {
            let alternative = alternative.trim();
            if alternative.is_empty() {
                return Err("an alternative between `|` is empty".to_owned());
            }
            let glob = globset::GlobBuilder::new(alternative)
                .literal_separator(false)
                .build()
                .map_err(|err| err.kind().to_string())?;
            globs.push(glob.compile_matcher());
        }
        Ok(Self(globs))
    }

    fn is_match(&self, subject: &str) -> bool {
        self.0.iter().any(|g| g.is_match(subject))
    }
}

/// Checks `entries` (from `file`, named in messages) and compiles them.
/// The first bad entry is an error naming the file, the entry (1-based)
/// and the key.
pub fn check_hooks(
    entries: &[HookEntry],
    origin: HookOrigin,
    file: &std::path::Path,
) -> Result<Vec<HookSpec>, String> {
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            check_entry(entry, origin).map_err(|(key, problem)| {
                format!(
                    "{}: [[hooks]] entry {} {key}: {problem}",
                    file.display(),
                    i + 1
                )
            })
        })
        .collect()
}

fn check_entry(entry: &HookEntry, origin: HookOrigin) -> Result<HookSpec, (&'static str, String)> {
    let event = HookEvent::parse(entry.event.trim()).ok_or_else(|| {
        let names: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
        (
            "event",
            format!(
                "unknown event `{}`; use one of {}",
                entry.event,
                names.join(", ")
            ),
        )
    })?;
    if entry.command.trim().is_empty() {
        return Err((
            "command",
            "is empty; give the shell command to run (it gets the event as JSON on stdin)"
                .to_owned(),
        ));
    }
    let timeout = entry.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS as i64);
    if !TIMEOUT_RANGE.contains(&timeout) {
        return Err((
            "timeout",
            format!(
                "{timeout} is out of range; allowed: {} to {} seconds (default {DEFAULT_TIMEOUT_SECS})",
                TIMEOUT_RANGE.start(),
                TIMEOUT_RANGE.end()
            ),
        ));
    }
    let pattern = match entry.matcher.as_deref() {
        None => None,
        Some(text) => {
            let Some(subject) = matcher_subject(event) else {
                return Err((
                    "matcher",
                    format!(
                        "`{}` hooks take no matcher (only pre_tool, post_tool, notification and file_changed do); remove it",
                        event.as_str()
                    ),
                ));
            };
            let matcher = Matcher::new(text).map_err(|err| {
                (
                    "matcher",
                    format!("`{text}` is not a valid glob of {subject}: {err}"),
                )
            })?;
            Some(matcher)
        }
    };
    Ok(HookSpec {
        event,
        matcher: entry.matcher.clone(),
        pattern,
        command: entry.command.clone(),
        timeout: Duration::from_secs(timeout.unsigned_abs()),
        origin,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::Path;

    fn entry(event: &str, matcher: Option<&str>, command: &str, timeout: Option<i64>) -> HookEntry {
        HookEntry {
            event: event.into(),
            matcher: matcher.map(Into::into),
            command: command.into(),
            timeout,
        }
    }

    fn check(entries: &[HookEntry]) -> Result<Vec<HookSpec>, String> {
        check_hooks(entries, HookOrigin::User, Path::new("/h/config.toml"))
    }

    #[test]
    fn a_good_entry_gets_its_defaults() {
        let specs = check(&[
            entry("pre_tool", Some("terminal"), "guard.sh", None),
            entry("session_end", None, "log.sh", Some(5)),
        ])
        .unwrap();
        assert_eq!(specs[0].event, HookEvent::PreTool);
        assert_eq!(specs[0].timeout, Duration::from_secs(60));
        assert_eq!(specs[1].timeout, Duration::from_secs(5));
    }

    #[test]
    fn bad_entries_name_the_file_entry_and_key() {
        for (bad, key, needle) in [
            (
                entry("pre_tol", None, "x", None),
                "event",
                "unknown event `pre_tol`; use one of session_start",
            ),
            (entry("post_tool", None, "  ", None), "command", "is empty"),
            (
                entry("pre_tool", Some("[oops"), "x", None),
                "matcher",
                "`[oops` is not a valid glob of the tool name",
            ),
            (
                entry("pre_tool", Some("a||b"), "x", None),
                "matcher",
                "empty",
            ),
            (
                entry("session_start", Some("x"), "x", None),
                "matcher",
                "take no matcher",
            ),
            (
                entry("pre_tool", None, "x", Some(0)),
                "timeout",
                "0 is out of range; allowed: 1 to 600",
            ),
            (entry("pre_tool", None, "x", Some(601)), "timeout", "601"),
        ] {
            let err = check(&[entry("session_start", None, "ok", None), bad]).unwrap_err();
            assert!(
                err.starts_with(&format!("/h/config.toml: [[hooks]] entry 2 {key}: ")),
                "{err}"
            );
            assert!(err.contains(needle), "{err}");
        }
    }

    #[test]
    fn matchers_are_globs_with_alternatives() {
        let specs = check(&[
            entry("pre_tool", Some("write_file|patch"), "x", None),
            entry("pre_tool", Some("mcp__*"), "x", None),
            entry("post_tool", None, "x", None),
            entry("notification", Some("turn_done"), "x", None),
        ])
        .unwrap();
        assert!(specs[0].matches("patch") && specs[0].matches("write_file"));
        assert!(!specs[0].matches("write_file_x") && !specs[0].matches("terminal"));
        assert!(specs[1].matches("mcp__fs__read") && !specs[1].matches("terminal"));
        assert!(specs[2].matches("anything"));
        assert!(specs[3].matches("turn_done") && !specs[3].matches("approval_needed"));
    }

    #[test]
    fn event_names_round_trip() {
        for &event in HookEvent::ALL {
            assert_eq!(HookEvent::parse(event.as_str()), Some(event));
            // The hooks index their table by the event's number.
            assert_eq!(HookEvent::ALL[event as usize], event);
        }
    }
}
