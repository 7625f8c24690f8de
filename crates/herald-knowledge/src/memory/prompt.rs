//! The memory snapshot placed in a new session's system prompt.

use std::path::Path;

use super::entries::{Usage, render_entries};
use super::{MemoryLimits, MemoryStore, MemoryTarget};

/// The memory section of the system prompt: each enabled, non-empty file
/// under a heading with its usage (`MEMORY (your notes) [68% — 1,496/2,200
/// chars]`), entries separated by `§` lines. `None` when there is nothing to
/// show. Call it once when a session starts: the prompt must stay
/// byte-identical afterwards, so writes made during the session appear only
/// in the `memory` tool's results and in the next session's snapshot.
///
/// A file edited by hand past its limit is shown only up to the limit, so a
/// runaway file cannot swell every request.
pub fn memory_prompt_block(home: &Path, limits: &MemoryLimits) -> Option<String> {
    let store = MemoryStore::new(home, *limits);
    let sections: Vec<String> = MemoryTarget::ALL
        .into_iter()
        .filter_map(|target| {
            let snapshot = store.read(target).ok()?;
            if snapshot.entries.is_empty() {
                return None;
            }
            Some(format!(
                "{} {}\n{}",
                target.label(),
                snapshot.usage,
                shown(&snapshot.entries, snapshot.usage)
            ))
        })
        .collect();
    if sections.is_empty() {
        return None;
    }
    Some(format!(
        "# Memory (as of session start)\n\n{}",
        sections.join("\n\n")
    ))
}

fn shown(entries: &[String], usage: Usage) -> String {
    let text = render_entries(entries);
    if usage.used <= usage.limit {
        return text;
    }
    let cut: String = text.chars().take(usage.limit).collect();
    format!(
        "{cut}\n[... {} more chars not shown: this file is over its limit; read and consolidate it with the memory tool]",
        usage.used - usage.limit
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn none_when_empty_or_disabled() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            memory_prompt_block(dir.path(), &MemoryLimits::default()),
            None
        );
        let store = MemoryStore::new(dir.path(), MemoryLimits::default());
        store.add(MemoryTarget::Memory, "a fact").unwrap();
        let off = MemoryLimits {
            memory_enabled: false,
            ..MemoryLimits::default()
        };
        assert_eq!(memory_prompt_block(dir.path(), &off), None);
    }

    #[test]
    fn shows_both_files_with_usage_headers() {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::new(dir.path(), MemoryLimits::default());
        store.add(MemoryTarget::Memory, "Repo uses Poetry").unwrap();
        store.add(MemoryTarget::Memory, "CI runs on push").unwrap();
        store.add(MemoryTarget::User, "Name is Ada").unwrap();
        let block = memory_prompt_block(dir.path(), &MemoryLimits::default()).unwrap();
        assert_eq!(
            block,
            "# Memory (as of session start)\n\n\
             MEMORY (your notes) [2% — 34/2,200 chars]\nRepo uses Poetry\n§\nCI runs on push\n\n\
             USER PROFILE (about the user) [1% — 11/1,375 chars]\nName is Ada"
        );
    }

    #[test]
    fn oversized_files_are_cut_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("memories")).unwrap();
        std::fs::write(dir.path().join("memories/MEMORY.md"), "x".repeat(5000)).unwrap();
        let block = memory_prompt_block(dir.path(), &MemoryLimits::default()).unwrap();
        assert!(block.contains("[227% — 5,000/2,200 chars]"), "{block}");
        assert!(block.contains("2800 more chars not shown"), "{block}");
        assert!(block.len() < 2600, "{}", block.len());
    }
}
