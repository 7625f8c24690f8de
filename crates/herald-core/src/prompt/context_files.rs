//! Finding the project context files (`AGENTS.md`, `CLAUDE.md`) that apply
//! to a working directory.

use std::path::{Path, PathBuf};

/// The file names read in each directory, in this order.
const NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Files larger than this are named but not read: nobody writes a 4 MB
/// instruction file on purpose, and reading one would stall session start.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// One project context file and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub text: String,
}

/// The context files that apply to `cwd`: `AGENTS.md` and `CLAUDE.md` in
/// `cwd` and each parent up to the repository root (the first directory
/// holding `.git`; the filesystem root when there is none), outermost first.
/// Empty and unreadable files are skipped, and a `CLAUDE.md` with the same
/// text as the `AGENTS.md` beside it (a common symlink) is read once.
pub fn find_context_files(cwd: &Path) -> Vec<ContextFile> {
    let mut found = Vec::new();
    for dir in cwd.ancestors() {
        let mut here: Vec<ContextFile> = Vec::new();
        for name in NAMES {
            let path = dir.join(name);
            let Some(text) = read_text(&path) else {
                continue;
            };
            if here.iter().any(|f| f.text == text) {
                continue;
            }
            here.push(ContextFile { path, text });
        }
        // Collected innermost first; reversed below, so keep each
        // directory's own order by pushing it reversed.
        found.extend(here.into_iter().rev());
        if dir.join(".git").exists() {
            break;
        }
    }
    found.reverse();
    found
}

/// The trimmed text of a regular file, or `None` when it is missing, empty,
/// too large or unreadable.
fn read_text(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes).trim().to_owned();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn walks_up_to_the_repository_root_outermost_first() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("AGENTS.md"), "above the repo").unwrap();
        let repo = outside.path().join("repo");
        let deep = repo.join("a").join("b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        std::fs::write(repo.join("AGENTS.md"), "root").unwrap();
        std::fs::write(repo.join("CLAUDE.md"), "root claude").unwrap();
        std::fs::write(repo.join("a").join("CLAUDE.md"), "   ").unwrap();
        std::fs::write(deep.join("AGENTS.md"), "deep").unwrap();
        std::fs::write(deep.join("CLAUDE.md"), "deep").unwrap();
        let files = find_context_files(&deep);
        let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, ["root", "root claude", "deep"]);
        assert_eq!(files[0].path, repo.join("AGENTS.md"));
        assert_eq!(files[2].path, deep.join("AGENTS.md"));
    }

    #[test]
    fn git_file_marks_a_worktree_root_and_no_files_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".git"), "gitdir: elsewhere").unwrap();
        assert!(find_context_files(dir.path()).is_empty());
    }
}
