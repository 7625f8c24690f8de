//! The on-disk format of a memory file and its usage figure.

use std::fmt;

use super::ENTRY_SEPARATOR;
use crate::fsutil::thousands;

/// Splits a memory file into entries: text between lines holding only `§`,
/// trimmed, empty ones dropped (a hand-edited file may have stray blanks).
pub fn parse_entries(text: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.trim() == ENTRY_SEPARATOR {
            push_entry(&mut entries, &current);
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    push_entry(&mut entries, &current);
    entries
}

fn push_entry(entries: &mut Vec<String>, text: &str) {
    let trimmed = text.trim();
    if !trimmed.is_empty() {
        entries.push(trimmed.to_owned());
    }
}

/// Joins entries with separator lines: the text whose length counts
/// against the limit (the file adds one final newline).
pub fn render_entries(entries: &[String]) -> String {
    entries.join(&format!("\n{ENTRY_SEPARATOR}\n"))
}

/// How full a memory file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Chars of the rendered entries.
    pub used: usize,
    /// The configured limit in chars.
    pub limit: usize,
}

impl Usage {
    /// The usage of `entries` against `limit`.
    pub fn of(entries: &[String], limit: usize) -> Self {
        Self {
            used: render_entries(entries).chars().count(),
            limit,
        }
    }

    /// Rounded percentage of the limit in use.
    pub fn percent(&self) -> usize {
        if self.limit == 0 {
            return if self.used == 0 { 0 } else { 100 };
        }
        (self.used * 100 + self.limit / 2) / self.limit
    }
}

/// `[68% — 1,496/2,200 chars]`
impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}% — {}/{} chars]",
            self.percent(),
            thousands(self.used),
            thousands(self.limit)
        )
    }
}

/// Numbered entries for error messages and tool results, so the model can
/// quote a unique part of the one it means.
pub(crate) fn list_entries(entries: &[String]) -> String {
    if entries.is_empty() {
        return "(no entries)".to_owned();
    }
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{}. {e}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_separator_lines_and_drops_blanks() {
        let text = "first\n§\n  second line\nwith two lines \n §\n\n§\nthird\n";
        assert_eq!(
            parse_entries(text),
            ["first", "second line\nwith two lines", "third"]
        );
        assert!(parse_entries("").is_empty());
        assert!(parse_entries("§\n§\n").is_empty());
        // A § inside a line is content, not a separator.
        assert_eq!(parse_entries("a § b"), ["a § b"]);
    }

    #[test]
    fn render_round_trips() {
        let entries = vec!["a".to_owned(), "b\nc".to_owned()];
        assert_eq!(render_entries(&entries), "a\n§\nb\nc");
        assert_eq!(parse_entries(&render_entries(&entries)), entries);
    }

    #[test]
    fn usage_header_matches_the_spec_format() {
        let usage = Usage {
            used: 1496,
            limit: 2200,
        };
        assert_eq!(usage.to_string(), "[68% — 1,496/2,200 chars]");
        let entries = vec!["abc".to_owned(), "de".to_owned()];
        // "abc\n§\nde" is 8 chars.
        assert_eq!(Usage::of(&entries, 100).used, 8);
        assert_eq!(Usage { used: 5, limit: 0 }.percent(), 100);
    }
}
