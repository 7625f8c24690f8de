//! Finding the project context files (`AGENTS.md`, `CLAUDE.md`) that apply
//! to a working directory, and loading the files they import with `@path`.
//!
//! Files load from the repository root (the nearest directory above the
//! working directory holding `.git`) down to the working directory, root
//! first. Without a repository every parent up to the filesystem root is
//! read, as before. An `@path` token (at the start of a line or after
//! whitespace, outside code spans and fenced blocks, as Claude Code reads
//! it) names a file to load right after the one that imports it; the path
//! is relative to the importing file (or `~/…`, or absolute). Imports nest
//! at most [`MAX_IMPORT_DEPTH`] deep, each file loads once (so a cycle
//! ends), and a target must lie inside the repository, `~/.claude` or
//! `$HERALD_HOME`. An import that is not loaded stays as written followed
//! by a short `[import not loaded: why]` note, and is listed in
//! [`ContextFiles::imports`].

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

/// The file names read in each directory, in this order.
const NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Files larger than this are named but not read: nobody writes a 4 MB
/// instruction file on purpose, and reading one would stall session start.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// How many `@` hops an import chain may take from a context file (the
/// limit Claude Code uses), so a long chain cannot stall session start.
pub const MAX_IMPORT_DEPTH: usize = 5;

/// Places outside the repository an import may still reach: the user's own
/// instruction files, which Claude Code users import from `~/.claude`, and
/// herald's home.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportRoots {
    /// The user's home directory: `~/` expands to it and `~/.claude` is allowed.
    pub user_home: Option<PathBuf>,
    /// `$HERALD_HOME`, allowed as a whole.
    pub herald_home: Option<PathBuf>,
}

/// One loaded file: a context file found by the walk, or a file one of them
/// imports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// Where it was found.
    pub path: PathBuf,
    /// Its trimmed text, with a note after each import that was not loaded;
    /// empty when [`problem`](Self::problem) is set.
    pub text: String,
    /// The 1-based line of the file where `text` starts (leading blank lines
    /// are trimmed), so a cut can say where to continue reading.
    pub first_line: usize,
    /// The file whose `@path` loaded this one; `None` for the walk's files.
    pub imported_by: Option<PathBuf>,
    /// Import hops from the walk's file (0 for the walk's own files).
    pub depth: usize,
    /// Why a context file that exists could not be read (unreadable, binary,
    /// a directory, too large); it is still named in the prompt.
    pub problem: Option<String>,
}

/// What became of one `@path` import.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportStatus {
    /// Loaded as its own section after the importing file.
    Loaded,
    /// Already loaded earlier (a context file, or imported before).
    AlreadyIncluded,
    /// The file imports one of the files importing it; loaded once.
    Cycle,
    /// Not loaded; the reason is noted in the text and in the record.
    NotLoaded,
}

/// One `@path` token found in a loaded file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Import {
    /// The file holding the token.
    pub from: PathBuf,
    /// Its 1-based line in that file.
    pub line: usize,
    /// The token as written, `@` included.
    pub written: String,
    /// The path it resolves to (before symlinks are followed).
    pub path: PathBuf,
    /// What happened.
    pub status: ImportStatus,
    /// Why it was not loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The context files of a working directory with their imports, in prompt
/// order (root first; each import right after the file importing it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextFiles {
    /// The repository root, when the working directory is in one.
    pub repo_root: Option<PathBuf>,
    /// Every loaded (or unreadable) file.
    pub files: Vec<ContextFile>,
    /// Every `@path` token, loaded or not.
    pub imports: Vec<Import>,
}

/// The nearest directory at or above `cwd` holding `.git` (a directory, or a
/// file as in worktrees and submodules).
pub fn repository_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The context files that apply to `cwd`: `AGENTS.md` then `CLAUDE.md` in
/// each directory from the repository root (the filesystem root when there
/// is none) down to `cwd`, each followed by the files it imports. Missing and
/// empty files are skipped; a `CLAUDE.md` with the same text as the
/// `AGENTS.md` beside it (a common symlink) is read once; a file that exists
/// but cannot be read is kept with its [`problem`](ContextFile::problem).
pub fn find_context_files(cwd: &Path, roots: &ImportRoots) -> ContextFiles {
    let repo_root = repository_root(cwd);
    let top = repo_root.as_deref();
    let mut dirs: Vec<&Path> = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir);
        if Some(dir) == top {
            break;
        }
    }
    dirs.reverse();
    let mut loader = Loader {
        allowed: allowed_roots(repo_root.as_deref(), roots),
        user_home: roots.user_home.clone(),
        seen: HashSet::new(),
        out: ContextFiles {
            repo_root: repo_root.clone(),
            ..ContextFiles::default()
        },
    };
    for dir in dirs {
        let mut texts_here: Vec<String> = Vec::new();
        for name in NAMES {
            let path = dir.join(name);
            let read = read_file(&path);
            if let Read::Text { text, .. } = &read {
                if texts_here.contains(text) {
                    continue;
                }
                texts_here.push(text.clone());
            }
            // Without a repository, imports stay in the importing file's tree.
            let boundary = match &repo_root {
                Some(_) => None,
                None => canonical(dir),
            };
            loader.load(path, read, None, 0, &[], boundary.as_deref());
        }
    }
    loader.out
}

/// The canonical directories an import may reach besides the repository.
fn allowed_roots(repo_root: Option<&Path>, roots: &ImportRoots) -> Vec<PathBuf> {
    let candidates = [
        repo_root.map(Path::to_path_buf),
        roots.user_home.as_ref().map(|home| home.join(".claude")),
        roots.herald_home.clone(),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter_map(|p| canonical(&p))
        .collect()
}

fn canonical(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok()
}

/// Walks files and their imports, depth first, loading each file once.
struct Loader {
    allowed: Vec<PathBuf>,
    user_home: Option<PathBuf>,
    /// Canonical paths of the files loaded so far.
    seen: HashSet<PathBuf>,
    out: ContextFiles,
}

impl Loader {
    /// Adds `path` (already read into `read`) and then, recursively, the
    /// files it imports. `chain` holds the canonical paths of the importing
    /// files; `boundary` is the extra allowed tree when there is no repository.
    fn load(
        &mut self,
        path: PathBuf,
        read: Read,
        imported_by: Option<PathBuf>,
        depth: usize,
        chain: &[PathBuf],
        boundary: Option<&Path>,
    ) {
        let key = canonical(&path).unwrap_or_else(|| path.clone());
        let (text, first_line) = match read {
            Read::Missing | Read::Empty => return,
            Read::Problem(problem) => {
                if self.seen.insert(key) {
                    self.out.files.push(ContextFile {
                        path,
                        text: String::new(),
                        first_line: 1,
                        imported_by,
                        depth,
                        problem: Some(problem),
                    });
                }
                return;
            }
            Read::Text { text, first_line } => (text, first_line),
        };
        if !self.seen.insert(key.clone()) {
            return;
        }
        let index = self.out.files.len();
        self.out.files.push(ContextFile {
            path: path.clone(),
            text: String::new(),
            first_line,
            imported_by,
            depth,
            problem: None,
        });
        let boundary = boundary.map(Path::to_path_buf);
        let mut chain = chain.to_vec();
        chain.push(key);
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let mut noted = String::with_capacity(text.len());
        let mut copied = 0;
        for token in import_tokens(&text) {
            let line = first_line + text[..token.start].matches('\n').count();
            let target = self.resolve(&dir, &token.path);
            let (status, reason, loaded) = match target {
                None => (
                    ImportStatus::NotLoaded,
                    Some("~ needs a home directory (HOME is not set)".to_owned()),
                    None,
                ),
                Some(target) => self
                    .check(&target, depth + 1, &chain, boundary.as_deref())
                    .map_or_else(
                        |(status, reason)| (status, reason, None),
                        |read| (ImportStatus::Loaded, None, Some((target.clone(), read))),
                    ),
            };
            if let Some(reason) = &reason {
                noted.push_str(&text[copied..token.end]);
                noted.push_str(&format!(" [import not loaded: {reason}]"));
                copied = token.end;
            }
            self.out.imports.push(Import {
                from: path.clone(),
                line,
                written: text[token.start..token.end].to_owned(),
                path: self.resolve(&dir, &token.path).unwrap_or_default(),
                status,
                reason,
            });
            if let Some((target, read)) = loaded {
                self.load(
                    target,
                    read,
                    Some(path.clone()),
                    depth + 1,
                    &chain,
                    boundary.as_deref(),
                );
            }
        }
        noted.push_str(&text[copied..]);
        self.out.files[index].text = noted;
    }

    /// Where an import token points: `~/` from the user's home, an absolute
    /// path as is, anything else relative to the importing file's directory.
    fn resolve(&self, dir: &Path, written: &str) -> Option<PathBuf> {
        if let Some(rest) = written.strip_prefix("~/") {
            return self.user_home.as_ref().map(|home| home.join(rest));
        }
        let path = Path::new(written);
        Some(if path.is_absolute() {
            path.to_path_buf()
        } else {
            normalize(&dir.join(path))
        })
    }

    /// Whether `target` may be loaded at `depth`: the file read, or the
    /// status and reason it is not loaded with.
    fn check(
        &self,
        target: &Path,
        depth: usize,
        chain: &[PathBuf],
        boundary: Option<&Path>,
    ) -> Result<Read, (ImportStatus, Option<String>)> {
        let refuse = |reason: String| (ImportStatus::NotLoaded, Some(reason));
        if depth > MAX_IMPORT_DEPTH {
            return Err(refuse(format!(
                "imports nest deeper than {MAX_IMPORT_DEPTH} levels"
            )));
        }
        // A missing file is judged by where it would be, so a refusal
        // does not depend on (or reveal) what exists outside.
        let real = canonical(target);
        let place = real.clone().unwrap_or_else(|| {
            let parent = target.parent().and_then(canonical);
            match (parent, target.file_name()) {
                (Some(parent), Some(name)) => parent.join(name),
                _ => target.to_path_buf(),
            }
        });
        let inside = self
            .allowed
            .iter()
            .map(PathBuf::as_path)
            .chain(boundary)
            .any(|root| place.starts_with(root));
        if !inside {
            return Err(refuse(
                "outside the repository (imports may reach only the repository, ~/.claude and $HERALD_HOME)"
                    .to_owned(),
            ));
        }
        let Some(real) = real else {
            return Err(refuse("not found".to_owned()));
        };
        if chain.contains(&real) {
            return Err((ImportStatus::Cycle, None));
        }
        if self.seen.contains(&real) {
            return Err((ImportStatus::AlreadyIncluded, None));
        }
        match read_file(target) {
            Read::Missing => Err(refuse("not found".to_owned())),
            Read::Empty => Err(refuse("the file is empty".to_owned())),
            Read::Problem(problem) => Err(refuse(problem)),
            read @ Read::Text { .. } => Ok(read),
        }
    }
}

/// `path` with `.` and `..` components folded (without touching the disk),
/// so a refused import names the place it points at.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// A file as read for the prompt.
enum Read {
    Missing,
    Empty,
    /// It exists but cannot be used; the reason, for a note.
    Problem(String),
    Text {
        text: String,
        first_line: usize,
    },
}

/// Reads `path` as trimmed text, saying why when it cannot: missing, empty,
/// a directory or other non-file, too large, unreadable or binary (a NUL
/// byte). Invalid UTF-8 is replaced rather than refused.
fn read_file(path: &Path) -> Read {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Read::Missing,
        Err(err) => return Read::Problem(format!("cannot read it: {err}")),
    };
    if meta.is_dir() {
        return Read::Problem("it is a directory".to_owned());
    }
    if !meta.is_file() {
        return Read::Problem("it is not a regular file".to_owned());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Read::Problem(format!(
            "it is {} bytes, over the {} MiB limit for context files",
            meta.len(),
            MAX_FILE_BYTES / 1024 / 1024
        ));
    }
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) => return Read::Problem(format!("cannot read it: {err}")),
    };
    if bytes.contains(&0) {
        return Read::Problem("it is a binary file".to_owned());
    }
    let whole = String::from_utf8_lossy(&bytes);
    let text = whole.trim();
    if text.is_empty() {
        return Read::Empty;
    }
    let lead = whole.len() - whole.trim_start().len();
    Read::Text {
        text: text.to_owned(),
        first_line: 1 + whole[..lead].matches('\n').count(),
    }
}

/// An `@path` token: byte range of `@path` in the text, and the path.
#[derive(Debug, PartialEq, Eq)]
struct Token {
    start: usize,
    end: usize,
    path: String,
}

/// The `@path` tokens of a Markdown text, outside fenced code blocks and
/// inline code spans. A token starts at a line start or after whitespace
/// (so `a@b.c` is no import) and must look like a path — holding a `/` or a
/// `.`, like `@AGENTS.md`, `@docs/x`, `@~/.claude/y.md` — so a mention such
/// as `@alice` is left alone. Trailing punctuation is not part of it, `\ `
/// is an escaped space and a `#fragment` is dropped.
fn import_tokens(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let offset = line_start;
        line_start += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        let trimmed = body.trim_start();
        let indent = body.len() - trimmed.len();
        if let Some(ch) = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')
            && indent <= 3
        {
            let run = trimmed.chars().take_while(|c| *c == ch).count();
            if run >= 3 {
                match fence {
                    None => fence = Some((ch, run)),
                    Some((open, len))
                        if open == ch && run >= len && trimmed[run..].trim().is_empty() =>
                    {
                        fence = None;
                    }
                    Some(_) => {}
                }
                continue;
            }
        }
        if fence.is_some() {
            continue;
        }
        line_tokens(body, offset, &mut tokens);
    }
    tokens
}

/// The tokens of one line outside code spans, `offset` being the line's
/// byte position in the whole text.
fn line_tokens(line: &str, offset: usize, tokens: &mut Vec<Token>) {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => {
                let run = bytes[i..].iter().take_while(|b| **b == b'`').count();
                let after = i + run;
                i = closing_backticks(bytes, after, run).unwrap_or(after);
            }
            b'@' if i == 0 || bytes[i - 1].is_ascii_whitespace() => {
                let (end, path) = token_path(line, i + 1);
                let looks_like_path = path.contains('/') || path.contains('.');
                if looks_like_path && !path.starts_with('@') {
                    tokens.push(Token {
                        start: offset + i,
                        end: offset + end,
                        path,
                    });
                }
                i = end.max(i + 1);
            }
            _ => i += 1,
        }
    }
}

/// The position after the run of exactly `run` backticks closing a code
/// span opened before `from`, if the line has one.
fn closing_backticks(bytes: &[u8], from: usize, run: usize) -> Option<usize> {
    let mut j = from;
    while j < bytes.len() {
        if bytes[j] == b'`' {
            let len = bytes[j..].iter().take_while(|b| **b == b'`').count();
            if len == run {
                return Some(j + len);
            }
            j += len;
        } else {
            j += 1;
        }
    }
    None
}

/// The path after an `@` at `start`: up to whitespace (a `\ ` is an escaped
/// space), minus trailing punctuation and a `#fragment`. Returns the byte
/// position where the token ends and the path.
fn token_path(line: &str, start: usize) -> (usize, String) {
    let mut end = start;
    let mut path = String::new();
    let mut chars = line[start..].char_indices().peekable();
    while let Some((at, ch)) = chars.next() {
        if ch.is_whitespace() {
            break;
        }
        if ch == '\\' && chars.peek().is_some_and(|(_, next)| *next == ' ') {
            chars.next();
            path.push(' ');
            end = start + at + 2;
            continue;
        }
        path.push(ch);
        end = start + at + ch.len_utf8();
    }
    while let Some(last) = path.chars().last()
        && matches!(
            last,
            '.' | ',' | ';' | ':' | '!' | '?' | ')' | ']' | '}' | '"' | '\'' | '>'
        )
    {
        path.pop();
        end -= last.len_utf8();
    }
    if let Some(hash) = path.find('#') {
        path.truncate(hash);
    }
    (end, path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A repository in a temp dir (canonical path) and its root.
    fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        (dir, root)
    }

    fn texts(found: &ContextFiles) -> Vec<&str> {
        found.files.iter().map(|f| f.text.as_str()).collect()
    }

    fn none() -> ImportRoots {
        ImportRoots::default()
    }

    #[test]
    fn walks_up_to_the_repository_root_outermost_first() {
        let (outside, repo) = repo();
        write(&outside.path().join("AGENTS.md"), "above the repo");
        let deep = repo.join("a").join("b");
        std::fs::create_dir_all(&deep).unwrap();
        write(&repo.join("AGENTS.md"), "root");
        write(&repo.join("CLAUDE.md"), "root claude");
        write(&repo.join("a").join("CLAUDE.md"), "   ");
        write(&repo.join("a").join("AGENTS.md"), "middle");
        write(&deep.join("AGENTS.md"), "deep");
        write(&deep.join("CLAUDE.md"), "deep");
        let found = find_context_files(&deep, &none());
        assert_eq!(texts(&found), ["root", "root claude", "middle", "deep"]);
        assert_eq!(found.files[0].path, repo.join("AGENTS.md"));
        assert_eq!(found.files[3].path, deep.join("AGENTS.md"));
        assert_eq!(found.repo_root.as_deref(), Some(repo.as_path()));
        assert!(found.imports.is_empty());
    }

    #[test]
    fn git_file_marks_a_worktree_root_and_no_files_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".git"), "gitdir: elsewhere").unwrap();
        let found = find_context_files(dir.path(), &none());
        assert!(found.files.is_empty());
        assert_eq!(found.repo_root.as_deref(), Some(dir.path()));
    }

    #[test]
    fn without_a_repository_every_parent_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        let sub = top.join("x").join("y");
        write(&top.join("AGENTS.md"), "top");
        write(&sub.join("AGENTS.md"), "sub");
        let found = find_context_files(&sub, &none());
        assert_eq!(found.repo_root, None);
        assert_eq!(texts(&found), ["top", "sub"]);
    }

    #[test]
    fn an_import_chain_loads_each_file_after_its_importer() {
        let (_dir, repo) = repo();
        write(
            &repo.join("CLAUDE.md"),
            "Read @docs/a.md first.\nThen the rest.",
        );
        write(&repo.join("docs/a.md"), "A says: see @../notes/b.md");
        write(&repo.join("notes/b.md"), "B says: @./c.md");
        write(&repo.join("notes/c.md"), "C, the end");
        let found = find_context_files(&repo, &none());
        assert_eq!(
            texts(&found),
            [
                "Read @docs/a.md first.\nThen the rest.",
                "A says: see @../notes/b.md",
                "B says: @./c.md",
                "C, the end"
            ]
        );
        let by: Vec<_> = found.files.iter().map(|f| f.imported_by.clone()).collect();
        assert_eq!(
            by,
            [
                None,
                Some(repo.join("CLAUDE.md")),
                Some(repo.join("docs/a.md")),
                Some(repo.join("notes/b.md"))
            ]
        );
        assert_eq!(found.files[3].depth, 3);
        assert!(
            found
                .imports
                .iter()
                .all(|i| i.status == ImportStatus::Loaded)
        );
        assert_eq!(found.imports[0].written, "@docs/a.md");
        assert_eq!(found.imports[0].line, 1);
        assert_eq!(found.imports[1].path, repo.join("notes/b.md"));
    }

    #[test]
    fn a_cycle_loads_each_file_once() {
        let (_dir, repo) = repo();
        write(&repo.join("AGENTS.md"), "root @a.md");
        write(&repo.join("a.md"), "a @b.md");
        write(&repo.join("b.md"), "b @a.md and @AGENTS.md");
        let found = find_context_files(&repo, &none());
        assert_eq!(
            texts(&found),
            ["root @a.md", "a @b.md", "b @a.md and @AGENTS.md"]
        );
        let statuses: Vec<_> = found.imports.iter().map(|i| i.status).collect();
        assert_eq!(
            statuses,
            [
                ImportStatus::Loaded,
                ImportStatus::Loaded,
                ImportStatus::Cycle,
                ImportStatus::Cycle
            ]
        );
    }

    #[test]
    fn claude_md_importing_the_agents_md_beside_it_adds_nothing() {
        let (_dir, repo) = repo();
        write(&repo.join("AGENTS.md"), "the rules");
        write(&repo.join("CLAUDE.md"), "@AGENTS.md");
        let found = find_context_files(&repo, &none());
        assert_eq!(texts(&found), ["the rules", "@AGENTS.md"]);
        assert_eq!(found.imports[0].status, ImportStatus::AlreadyIncluded);
    }

    #[test]
    fn imports_stop_at_the_depth_limit() {
        let (_dir, repo) = repo();
        write(&repo.join("AGENTS.md"), "@f1.md");
        for n in 1..=7 {
            write(
                &repo.join(format!("f{n}.md")),
                &format!("level {n} @f{}.md", n + 1),
            );
        }
        let found = find_context_files(&repo, &none());
        // The walk's file and five hops.
        assert_eq!(found.files.len(), 1 + MAX_IMPORT_DEPTH);
        let last = found.files.last().unwrap();
        assert_eq!(last.depth, MAX_IMPORT_DEPTH);
        assert_eq!(
            last.text,
            "level 5 @f6.md [import not loaded: imports nest deeper than 5 levels]"
        );
        assert_eq!(
            found.imports.last().unwrap().status,
            ImportStatus::NotLoaded
        );
    }

    #[test]
    fn imports_outside_the_repository_are_refused() {
        let (dir, repo) = repo();
        write(&dir.path().join("secret.md"), "SECRET");
        write(&repo.join("AGENTS.md"), "see @../secret.md please");
        std::os::unix::fs::symlink(dir.path().join("secret.md"), repo.join("link.md")).unwrap();
        write(&repo.join("CLAUDE.md"), "and @link.md too");
        let found = find_context_files(&repo, &none());
        assert_eq!(
            texts(&found),
            [
                "see @../secret.md [import not loaded: outside the repository (imports may reach only the repository, ~/.claude and $HERALD_HOME)] please",
                "and @link.md [import not loaded: outside the repository (imports may reach only the repository, ~/.claude and $HERALD_HOME)] too",
            ]
        );
        assert_eq!(
            found.imports[0].path,
            dir.path().canonicalize().unwrap().join("secret.md")
        );
        assert!(
            found
                .imports
                .iter()
                .all(|i| i.status == ImportStatus::NotLoaded)
        );
    }

    #[test]
    fn home_claude_and_herald_home_are_allowed() {
        let (dir, repo) = repo();
        let home = dir.path().canonicalize().unwrap().join("home");
        let herald = dir.path().canonicalize().unwrap().join("herald");
        write(&home.join(".claude/mine.md"), "MINE");
        write(&home.join("other.md"), "OTHER");
        write(&herald.join("shared.md"), "SHARED");
        write(
            &repo.join("AGENTS.md"),
            &format!(
                "@~/.claude/mine.md @~/other.md @{}",
                herald.join("shared.md").display()
            ),
        );
        let roots = ImportRoots {
            user_home: Some(home.clone()),
            herald_home: Some(herald),
        };
        let found = find_context_files(&repo, &roots);
        let loaded: Vec<_> = found.files[1..].iter().map(|f| f.text.as_str()).collect();
        assert_eq!(loaded, ["MINE", "SHARED"]);
        assert_eq!(found.imports[1].status, ImportStatus::NotLoaded);
        assert_eq!(found.imports[1].path, home.join("other.md"));
        // Without those roots, none of them loads.
        let found = find_context_files(&repo, &none());
        assert_eq!(found.files.len(), 1);
    }

    #[test]
    fn bad_imports_get_a_note_and_change_nothing_else() {
        let (_dir, repo) = repo();
        std::fs::create_dir_all(repo.join("adir.md")).unwrap();
        std::fs::write(repo.join("bin.md"), b"\x7fELF\x00\x01").unwrap();
        write(&repo.join("empty.md"), "\n\n");
        write(&repo.join("good.md"), "GOOD");
        write(
            &repo.join("AGENTS.md"),
            "@adir.md\n@bin.md\n@missing.md\n@empty.md\n@good.md",
        );
        let found = find_context_files(&repo, &none());
        assert_eq!(
            texts(&found),
            [
                "@adir.md [import not loaded: it is a directory]\n@bin.md [import not loaded: it is a binary file]\n@missing.md [import not loaded: not found]\n@empty.md [import not loaded: the file is empty]\n@good.md",
                "GOOD"
            ]
        );
    }

    #[test]
    fn an_unreadable_context_file_is_named_with_its_problem() {
        let (_dir, repo) = repo();
        std::fs::write(repo.join("AGENTS.md"), b"bin\x00ary").unwrap();
        write(&repo.join("CLAUDE.md"), "fine");
        let found = find_context_files(&repo, &none());
        assert_eq!(found.files.len(), 2);
        assert_eq!(
            found.files[0].problem.as_deref(),
            Some("it is a binary file")
        );
        assert_eq!(found.files[0].text, "");
        assert_eq!(found.files[1].text, "fine");
    }

    #[test]
    fn a_fifo_is_named_not_read_so_session_start_never_blocks() {
        let (_dir, repo) = repo();
        nix::unistd::mkfifo(&repo.join("AGENTS.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        nix::unistd::mkfifo(&repo.join("pipe.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        write(&repo.join("CLAUDE.md"), "@pipe.md then text");
        let found = find_context_files(&repo, &none());
        assert_eq!(
            found.files[0].problem.as_deref(),
            Some("it is not a regular file")
        );
        assert_eq!(
            found.files[1].text,
            "@pipe.md [import not loaded: it is not a regular file] then text"
        );
        assert_eq!(found.files.len(), 2);
    }

    #[test]
    fn tokens_skip_code_mentions_and_emails() {
        let text = "@a.md and x@y.com, `@b.md` or ``x @c.md``, @alice\n\
                    ```sh\n@d.md\n```\n\
                    - see @docs/e.md. And @f\\ g.md#part (@h.md)";
        let paths: Vec<String> = import_tokens(text).into_iter().map(|t| t.path).collect();
        assert_eq!(paths, ["a.md", "docs/e.md", "f g.md"]);
        let tokens = import_tokens("x @docs/e.md.");
        assert_eq!(
            &"x @docs/e.md."[tokens[0].start..tokens[0].end],
            "@docs/e.md"
        );
    }

    #[test]
    fn first_line_counts_trimmed_blank_lines() {
        let (_dir, repo) = repo();
        write(&repo.join("AGENTS.md"), "\n\n  \nhello\n@missing.md");
        let found = find_context_files(&repo, &none());
        assert_eq!(found.files[0].first_line, 4);
        assert_eq!(found.imports[0].line, 5);
    }
}
