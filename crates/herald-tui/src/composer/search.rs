//! Ctrl-R: reverse incremental search through the prompt history, as in
//! bash. Typed characters narrow the search, Ctrl-R again steps to the
//! next older match; the draft is kept for a cancel.

use std::ops::Range;

use super::textarea::Snapshot;

/// An open search.
#[derive(Debug)]
pub(crate) struct Search {
    /// What was typed since Ctrl-R.
    pub query: String,
    /// The history entry shown (its index).
    pub found: Option<usize>,
    /// The last step found nothing (the previous match stays shown).
    pub failed: bool,
    /// The composer's content when the search opened.
    pub draft: Snapshot,
}

impl Search {
    /// Opens a search over the history, keeping `draft` for a cancel.
    pub fn new(draft: Snapshot) -> Self {
        Search {
            query: String::new(),
            found: None,
            failed: false,
            draft,
        }
    }

    /// Adds `c` to the query: the shown entry stays if it still matches,
    /// else the next older match is looked for.
    pub fn push(&mut self, c: char, entries: &[String]) {
        self.query.push(c);
        let end = self.found.map_or(entries.len(), |i| i + 1);
        self.settle(find(entries, &self.query, end));
    }

    /// Backspace: shortens the query and searches again from the newest.
    pub fn pop(&mut self, entries: &[String]) {
        self.query.pop();
        if self.query.is_empty() {
            self.found = None;
            self.failed = false;
        } else {
            self.settle(find(entries, &self.query, entries.len()));
        }
    }

    /// Ctrl-R again: the next older entry that matches and differs from the
    /// one shown.
    pub fn next_older(&mut self, entries: &[String]) {
        let end = self.found.unwrap_or(entries.len());
        let shown = self.found.and_then(|i| entries.get(i));
        let mut end = end;
        loop {
            match find(entries, &self.query, end) {
                Some(i) if Some(&entries[i]) == shown => end = i,
                other => return self.settle(other),
            }
        }
    }

    fn settle(&mut self, found: Option<usize>) {
        self.failed = found.is_none();
        if found.is_some() {
            self.found = found;
        }
    }

    /// Where the query matches in `text` (for highlighting).
    pub fn match_range(&self, text: &str) -> Option<Range<usize>> {
        find_in(text, &self.query)
    }
}

/// The newest entry before index `end` that contains `query`.
fn find(entries: &[String], query: &str, end: usize) -> Option<usize> {
    entries[..end.min(entries.len())]
        .iter()
        .rposition(|entry| find_in(entry, query).is_some())
}

/// The first place `query` occurs in `text`; case-insensitive unless the
/// query has an upper-case letter (smart case).
fn find_in(text: &str, query: &str) -> Option<Range<usize>> {
    let sensitive = query.chars().any(char::is_uppercase);
    let fold = |c: char| {
        if sensitive {
            c
        } else {
            c.to_lowercase().next().unwrap_or(c)
        }
    };
    text.char_indices().find_map(|(start, _)| {
        let mut rest = text[start..].char_indices();
        let mut end = start;
        for q in query.chars() {
            let (offset, c) = rest.next()?;
            if fold(c) != fold(q) {
                return None;
            }
            end = start + offset + c.len_utf8();
        }
        Some(start..end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<String> {
        [
            "cargo build",
            "ls -la",
            "cargo test",
            "Cargo fmt",
            "git status",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn typing_narrows_and_ctrl_r_steps_back() {
        let entries = entries();
        let mut s = Search::new(Snapshot::default());
        for c in "car".chars() {
            s.push(c, &entries);
        }
        assert_eq!(s.found, Some(3), "case-insensitive: Cargo fmt");
        s.push('g', &entries);
        s.push('o', &entries);
        s.push(' ', &entries);
        s.push('t', &entries);
        assert_eq!(s.found, Some(2));
        s.next_older(&entries);
        assert_eq!(s.found, Some(2), "no older match: stays");
        assert!(s.failed);
        s.pop(&entries);
        assert_eq!(s.found, Some(3));
        assert!(!s.failed);
        s.next_older(&entries);
        assert_eq!(s.found, Some(2));
        s.next_older(&entries);
        assert_eq!(s.found, Some(0));
    }

    #[test]
    fn an_upper_case_query_is_case_sensitive() {
        let entries = entries();
        let mut s = Search::new(Snapshot::default());
        s.push('C', &entries);
        assert_eq!(s.found, Some(3));
        s.next_older(&entries);
        assert!(s.failed);
    }

    #[test]
    fn an_empty_query_walks_the_whole_history() {
        let entries = entries();
        let mut s = Search::new(Snapshot::default());
        s.next_older(&entries);
        assert_eq!(s.found, Some(4));
        s.next_older(&entries);
        assert_eq!(s.found, Some(3));
    }

    #[test]
    fn the_match_is_located_for_highlighting() {
        let mut s = Search::new(Snapshot::default());
        s.query = "TEST".into();
        assert_eq!(s.match_range("cargo TEST x"), Some(6..10));
        s.query = "über".into();
        assert_eq!(s.match_range("Grüß ÜBER"), Some(7..12));
    }
}
