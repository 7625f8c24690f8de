//! Walking the prompt history with ↑/↓: which entry is shown, and the draft
//! that was being typed before, given back when ↓ passes the newest entry.

use super::textarea::Snapshot;

/// The prompts of this working directory, oldest first, and where ↑/↓ are.
#[derive(Debug, Default)]
pub(crate) struct History {
    entries: Vec<String>,
    /// The entry on screen while browsing.
    index: Option<usize>,
    /// What was in the composer when browsing started.
    draft: Option<Snapshot>,
}

/// Where a step through the history lands.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Recall {
    Entry(String),
    Draft(Snapshot),
}

impl History {
    /// The history loaded from the store (oldest first), capped like the store.
    pub fn new(mut entries: Vec<String>) -> Self {
        let excess = entries
            .len()
            .saturating_sub(herald_store::MAX_PROMPTS_PER_CWD);
        entries.drain(..excess);
        History {
            entries,
            index: None,
            draft: None,
        }
    }

    /// Every entry, oldest first (what Ctrl-R searches).
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Whether an entry (not the draft) is on screen.
    pub fn is_browsing(&self) -> bool {
        self.index.is_some()
    }

    /// Records a submitted prompt (not a repeat of the newest) and stops
    /// browsing.
    pub fn push(&mut self, text: String) {
        if !text.trim().is_empty() && self.entries.last() != Some(&text) {
            self.entries.push(text);
            if self.entries.len() > herald_store::MAX_PROMPTS_PER_CWD {
                self.entries.remove(0);
            }
        }
        self.reset();
    }

    /// Forgets the browsing position and the saved draft.
    pub fn reset(&mut self) {
        self.index = None;
        self.draft = None;
    }

    /// ↑: the next older entry that differs from the one shown (`current` is
    /// saved as the draft when browsing starts); `None` at the oldest.
    pub fn older(&mut self, current: Snapshot, current_text: &str) -> Option<String> {
        let end = self.index.unwrap_or(self.entries.len());
        let shown = self
            .index
            .and_then(|i| self.entries.get(i))
            .map_or(current_text, String::as_str);
        let found = self.entries[..end].iter().rposition(|e| e != shown)?;
        if self.index.is_none() {
            self.draft = Some(current);
        }
        self.index = Some(found);
        Some(self.entries[found].clone())
    }

    /// ↓: the next newer entry, or the draft after the newest; `None` when
    /// not browsing.
    pub fn newer(&mut self) -> Option<Recall> {
        let index = self.index?;
        let shown = &self.entries[index];
        match self.entries[index + 1..].iter().position(|e| e != shown) {
            Some(offset) => {
                self.index = Some(index + 1 + offset);
                Some(Recall::Entry(self.entries[index + 1 + offset].clone()))
            }
            None => {
                self.index = None;
                Some(Recall::Draft(self.draft.take().unwrap_or_default()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(entries: &[&str]) -> History {
        History::new(entries.iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn up_walks_back_skipping_repeats_and_down_returns_to_the_draft() {
        let mut h = history(&["one", "two", "two", "three"]);
        let draft = Snapshot::default();
        assert_eq!(h.older(draft.clone(), "typing").as_deref(), Some("three"));
        assert_eq!(h.older(draft.clone(), "three").as_deref(), Some("two"));
        assert_eq!(h.older(draft.clone(), "two").as_deref(), Some("one"));
        assert_eq!(h.older(draft.clone(), "one"), None);
        assert!(h.is_browsing());
        assert_eq!(h.newer(), Some(Recall::Entry("two".into())));
        assert_eq!(h.newer(), Some(Recall::Entry("three".into())));
        assert_eq!(h.newer(), Some(Recall::Draft(draft)));
        assert!(!h.is_browsing());
        assert_eq!(h.newer(), None);
    }

    #[test]
    fn the_newest_entry_equal_to_the_draft_is_skipped() {
        let mut h = history(&["one", "two"]);
        assert_eq!(h.older(Snapshot::default(), "two").as_deref(), Some("one"));
    }

    #[test]
    fn push_skips_a_repeat_and_blank_text() {
        let mut h = history(&["a"]);
        h.push("a".into());
        h.push("  ".into());
        h.push("b".into());
        assert_eq!(h.entries(), ["a", "b"]);
    }
}
