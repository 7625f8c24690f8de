//! Which files are watched: those under the working directory that git
//! would not ignore. Nothing under a `.git` directory is, nor what the
//! `.gitignore` files (from the repository's root down to the file's
//! directory), `.git/info/exclude` or the user's global excludes file
//! ignore. The rules are read once per directory and session.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The ignore rules of one working directory.
#[derive(Debug)]
pub(crate) struct IgnoreRules {
    /// The working directory, with symbolic links resolved.
    root: PathBuf,
    /// The repository's top directory (the nearest one with `.git` at or
    /// above `root`), or `root` outside a repository.
    repo: PathBuf,
    /// `.git/info/exclude`, then the global excludes file.
    fallbacks: Vec<Gitignore>,
    /// Each directory's `.gitignore`, read once.
    per_dir: Mutex<HashMap<PathBuf, Arc<Gitignore>>>,
}

impl IgnoreRules {
    /// The rules for files under `cwd`.
    pub(crate) fn new(cwd: &Path) -> Self {
        let root = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let repo = root
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(&root)
            .to_path_buf();
        let mut fallbacks = Vec::new();
        let exclude = repo.join(".git").join("info").join("exclude");
        if exclude.is_file() {
            let mut builder = GitignoreBuilder::new(&repo);
            let _ = builder.add(&exclude);
            if let Ok(rules) = builder.build() {
                fallbacks.push(rules);
            }
        }
        let (global, _) = GitignoreBuilder::new(&repo).build_global();
        fallbacks.push(global);
        Self {
            root,
            repo,
            fallbacks,
            per_dir: Mutex::default(),
        }
    }

    /// The working directory the rules are for (symbolic links resolved).
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `path` (absolute, symbolic links resolved) is left alone:
    /// outside the working directory, under `.git`, or ignored by git.
    pub(crate) fn ignores(&self, path: &Path) -> bool {
        if !path.starts_with(&self.root) || path == self.root {
            return true;
        }
        let Ok(in_repo) = path.strip_prefix(&self.repo) else {
            return true;
        };
        if in_repo.components().any(|c| c.as_os_str() == ".git") {
            return true;
        }
        // The deepest `.gitignore` that says anything decides.
        let mut dir = path.parent();
        while let Some(current) = dir {
            if !current.starts_with(&self.repo) {
                break;
            }
            let rules = self.rules_of(current);
            if let Ok(relative) = path.strip_prefix(current) {
                match rules.matched_path_or_any_parents(relative, false) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            dir = current.parent();
        }
        self.fallbacks.iter().any(|rules| {
            rules
                .matched_path_or_any_parents(in_repo, false)
                .is_ignore()
        })
    }

    /// The `.gitignore` of `dir` (empty when it has none).
    fn rules_of(&self, dir: &Path) -> Arc<Gitignore> {
        let mut per_dir = self.per_dir.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(rules) = per_dir.get(dir) {
            return Arc::clone(rules);
        }
        let file = dir.join(".gitignore");
        let rules = if file.is_file() {
            let (rules, _) = Gitignore::new(&file);
            rules
        } else {
            Gitignore::empty()
        };
        let rules = Arc::new(rules);
        per_dir.insert(dir.to_path_buf(), Arc::clone(&rules));
        rules
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn git_internals_and_gitignored_paths_are_ignored() {
        let dir = tree(&[
            (".git/HEAD", "ref: refs/heads/main\n"),
            (".gitignore", "target/\n*.log\n/build\n!keep.log\n"),
            ("src/.gitignore", "generated.rs\n!important.log\n"),
            ("src/main.rs", ""),
        ]);
        let rules = IgnoreRules::new(dir.path());
        let root = rules.root().to_path_buf();
        let ignored = |p: &str| rules.ignores(&root.join(p));
        assert!(ignored(".git/HEAD"));
        assert!(ignored(".git/refs/heads/main"));
        assert!(ignored("target/debug/app"));
        assert!(
            ignored("src/target/x.rs"),
            "an unanchored directory pattern"
        );
        assert!(ignored("build/out.txt"));
        assert!(!ignored("src/build/out.txt"), "`/build` is anchored");
        assert!(ignored("app.log"));
        assert!(ignored("src/deep/app.log"));
        assert!(!ignored("keep.log"));
        assert!(ignored("src/generated.rs"), "a nested .gitignore");
        assert!(!ignored("src/important.log"), "a nested whitelist wins");
        assert!(!ignored("src/main.rs"));
        assert!(!ignored("README.md"));
        assert!(
            !ignored(".github/workflows/ci.yml"),
            "hidden is not ignored"
        );
    }

    #[test]
    fn paths_outside_the_working_directory_are_ignored() {
        let dir = tree(&[("inner/a.txt", "")]);
        let rules = IgnoreRules::new(&dir.path().join("inner"));
        let root = rules.root().to_path_buf();
        assert!(!rules.ignores(&root.join("a.txt")));
        assert!(rules.ignores(&root));
        assert!(rules.ignores(&root.parent().unwrap().join("b.txt")));
        assert!(rules.ignores(Path::new("/etc/hosts")));
    }

    #[test]
    fn rules_of_the_repository_above_the_working_directory_apply() {
        let dir = tree(&[
            (".git/info/exclude", "*.tmp\n"),
            (".gitignore", "vendor/\n"),
            ("app/src/a.rs", ""),
        ]);
        let rules = IgnoreRules::new(&dir.path().join("app"));
        let root = rules.root().to_path_buf();
        assert!(rules.ignores(&root.join("vendor/x.rs")));
        assert!(rules.ignores(&root.join("src/scratch.tmp")), "info/exclude");
        assert!(!rules.ignores(&root.join("src/a.rs")));
    }

    #[test]
    fn without_a_repository_gitignore_files_still_count() {
        let dir = tree(&[(".gitignore", "out/\n")]);
        let rules = IgnoreRules::new(dir.path());
        let root = rules.root().to_path_buf();
        assert!(rules.ignores(&root.join("out/x")));
        assert!(!rules.ignores(&root.join("in/x")));
    }
}
