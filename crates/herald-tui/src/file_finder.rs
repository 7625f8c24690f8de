//! The fuzzy file finder behind `@path` completion in the composer: the
//! paths of the working directory that git would track (`.gitignore`,
//! `.ignore` and hidden files are skipped), listed once and ranked on every
//! keystroke with `nucleo-matcher`.

use std::path::{Component, Path};

use ignore::WalkBuilder;
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32String};

/// At most this many paths are indexed: a home directory or a monorepo must
/// not cost seconds or hundreds of megabytes to list.
pub const MAX_PATHS: usize = 20_000;

/// How deep below the root the walk goes.
pub const MAX_DEPTH: usize = 12;

/// The paths below a root directory, relative to it with `/` separators,
/// directories with a trailing `/`. Built once (off the async runtime: the
/// walk reads the disk) and shared with the composer behind an `Arc`.
#[derive(Debug, Default)]
pub struct FileIndex {
    entries: Vec<Entry>,
    truncated: bool,
}

#[derive(Debug)]
struct Entry {
    path: String,
    /// The path as the matcher wants it, converted once.
    haystack: Utf32String,
}

impl FileIndex {
    /// Walks `root` (synchronously: call it from `spawn_blocking`), honouring
    /// `.gitignore` even outside a git repository, skipping hidden entries
    /// and `.git`, not following symlinks, up to [`MAX_DEPTH`] levels and
    /// [`MAX_PATHS`] paths. Unreadable entries and paths that are not UTF-8
    /// are left out.
    pub fn build(root: &Path) -> FileIndex {
        let walk = WalkBuilder::new(root)
            .standard_filters(true)
            .require_git(false)
            .follow_links(false)
            .max_depth(Some(MAX_DEPTH))
            .sort_by_file_name(|a, b| a.cmp(b))
            .filter_entry(|entry| entry.file_name() != ".git")
            .build();
        let mut index = FileIndex::default();
        for entry in walk.flatten() {
            if entry.depth() == 0 {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(root) else {
                continue;
            };
            let Some(mut path) = slash_path(relative) else {
                continue;
            };
            if entry.file_type().is_some_and(|kind| kind.is_dir()) {
                path.push('/');
            }
            if index.entries.len() == MAX_PATHS {
                index.truncated = true;
                break;
            }
            index.entries.push(Entry {
                haystack: Utf32String::from(path.as_str()),
                path,
            });
        }
        index
    }

    /// How many paths are indexed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was found below the root.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether the walk stopped at [`MAX_PATHS`] (some paths cannot be found).
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// The best `limit` paths for `query`, best first: fuzzy-matched with
    /// path-aware bonuses (a match right after `/` counts more), ties going
    /// to the shorter path. An empty query lists the shortest paths (the
    /// top of the tree) first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<String> {
        let query = query.trim();
        let mut ranked: Vec<(u32, &str)> = if query.is_empty() {
            self.entries.iter().map(|e| (0, e.path.as_str())).collect()
        } else {
            let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
            let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
            self.entries
                .iter()
                .filter_map(|e| {
                    let score = pattern.score(e.haystack.slice(..), &mut matcher)?;
                    Some((score, e.path.as_str()))
                })
                .collect()
        };
        ranked.sort_unstable_by(|a, b| {
            b.0.cmp(&a.0)
                .then(a.1.len().cmp(&b.1.len()))
                .then(a.1.cmp(b.1))
        });
        ranked
            .into_iter()
            .take(limit)
            .map(|(_, path)| path.to_owned())
            .collect()
    }
}

/// `relative` with `/` between its parts; `None` when a part is not UTF-8
/// (such a path could not be typed back as text) or not a plain name.
fn slash_path(relative: &Path) -> Option<String> {
    let mut out = String::new();
    for component in relative.components() {
        let Component::Normal(part) = component else {
            return None;
        };
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(part.to_str()?);
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            "Cargo.toml",
            "README.md",
            "src/main.rs",
            "src/composer/mod.rs",
            "src/composer/textarea.rs",
            "target/debug/herald",
            "notes/secret.log",
            ".hidden/config",
            ".git/HEAD",
            "docs/ARCHITECTURE.md",
        ] {
            let path = root.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x").unwrap();
        }
        fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        fs::write(root.join(".ignore"), "docs/\n").unwrap();
        dir
    }

    #[test]
    fn ignored_hidden_and_git_paths_are_left_out() {
        let dir = tree();
        let index = FileIndex::build(dir.path());
        let mut all = index.search("", usize::MAX);
        all.sort();
        assert_eq!(
            all,
            [
                "Cargo.toml",
                "README.md",
                "notes/",
                "src/",
                "src/composer/",
                "src/composer/mod.rs",
                "src/composer/textarea.rs",
                "src/main.rs",
            ]
        );
        assert!(!index.is_truncated());
        assert_eq!(index.len(), 8);
    }

    #[test]
    fn fuzzy_queries_rank_path_matches_first() {
        let dir = tree();
        let index = FileIndex::build(dir.path());
        assert_eq!(index.search("textarea", 8), ["src/composer/textarea.rs"]);
        let hits = index.search("srcmain", 8);
        assert_eq!(hits.first().map(String::as_str), Some("src/main.rs"));
        let composer = index.search("comp", 3);
        assert_eq!(
            composer.first().map(String::as_str),
            Some("src/composer/"),
            "{composer:?}"
        );
        assert!(index.search("zzzz", 8).is_empty());
    }

    #[test]
    fn an_empty_query_lists_the_shortest_paths_first_up_to_the_limit() {
        let dir = tree();
        let index = FileIndex::build(dir.path());
        assert_eq!(index.search("", 3), ["src/", "notes/", "README.md"]);
    }

    #[test]
    fn the_walk_stops_at_the_depth_limit() {
        let dir = tempfile::tempdir().unwrap();
        let deep: std::path::PathBuf = (0..MAX_DEPTH + 3).map(|i| format!("d{i}")).collect();
        fs::create_dir_all(dir.path().join(&deep)).unwrap();
        let index = FileIndex::build(dir.path());
        assert_eq!(index.len(), MAX_DEPTH);
        let deepest = index.search("", usize::MAX).pop().unwrap();
        assert_eq!(deepest.matches('/').count(), MAX_DEPTH);
    }

    #[test]
    fn a_missing_root_is_an_empty_index() {
        let index = FileIndex::build(Path::new("/definitely/not/here"));
        assert!(index.is_empty());
        assert!(index.search("x", 8).is_empty());
    }
}
