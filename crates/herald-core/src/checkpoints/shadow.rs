//! The shadow git repository: snapshots of a working tree taken with `git`
//! under `$HERALD_HOME/checkpoints/`, never in the user's own `.git`.
//!
//! Every call is blocking (it runs `git`): callers use `spawn_blocking`.
//! `git` runs with a cleared environment (only `PATH`, `HOME` and the
//! repository variables below), the user's global and system configuration
//! off, no hooks, no fsmonitor and a fixed author, so nothing of the user's
//! git setup changes what a snapshot holds or runs code.
//!
//! What a snapshot leaves out: the user's `.git` (git never adds a `.git`),
//! files ignored by the `.gitignore` files of the tree (and the user's
//! `.git/info/exclude` and global ignore file), nested git repositories,
//! files larger than [`MAX_FILE_BYTES`], and `$HERALD_HOME` itself when it
//! lies inside the tree. A rewind leaves all of these untouched.
//!
//! The index is shared per working tree (`herald-index`), so git's stat
//! cache makes a snapshot of an unchanged tree cheap; each snapshot works on
//! a private copy and renames it back, so two herald processes in the same
//! directory never fight over `index.lock`. Each snapshot is a commit
//! without parents kept by its own ref, `refs/herald/snapshots/<commit>`,
//! so pruning can drop any one of them; `refs/herald/sessions/<id>` names a
//! session's latest snapshot, and a snapshot whose tree equals it reuses
//! it. (Older versions chained a session's snapshots as parents; pruning
//! converts such chains, see `prune`.) A snapshot holds the repository's
//! lock shared, pruning holds it exclusively ([`RepositoryLock`]).

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use herald_store::ChangeStats;
use sha2::{Digest, Sha256};

/// Files larger than this are left out of snapshots (and left alone by a
/// rewind): 5 MiB.
pub const MAX_FILE_BYTES: u64 = 5 * 1024 * 1024;
/// A snapshot that would add more new files than this is skipped.
const MAX_NEW_FILES: usize = 100_000;
/// A snapshot that would add more new bytes than this is skipped.
const MAX_NEW_BYTES: u64 = 1 << 30;

/// Why a snapshot or a restore did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ShadowError {
    /// `git` is not installed (or not on `PATH`).
    #[error("git was not found on PATH; install git to get file checkpoints")]
    GitMissing,
    /// A `git` command failed.
    #[error("`git {command}` failed: {detail}")]
    Git { command: String, detail: String },
    /// Reading or writing a file failed.
    #[error("{0}")]
    Io(String),
    /// The tree is not one to snapshot (too large, the home directory).
    #[error("{0}")]
    Skipped(String),
}

/// One snapshot: a commit of the shadow repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub commit: String,
    /// Whether a new commit was made (false: the tree equalled the chain's tip).
    pub created: bool,
    /// Files left out for their size, relative to the working tree.
    pub too_large: Vec<PathBuf>,
}

/// What a restore does to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Changed since the snapshot: its content (and mode) come back.
    Restore,
    /// Created since the snapshot: it is deleted.
    Delete,
    /// Deleted since the snapshot: it comes back.
    Recreate,
    /// In the snapshot but absent from the current one while the file
    /// exists (ignored now, or too large to snapshot): left as it is.
    Keep,
}

/// One path a restore acts on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileChange {
    /// Relative to the working tree.
    pub path: PathBuf,
    pub action: Action,
}

/// The shadow repository of one working tree.
#[derive(Debug, Clone)]
pub struct Shadow {
    git_dir: PathBuf,
    work_tree: PathBuf,
    max_file_bytes: u64,
}

/// Tells temporary index files of one process apart.
static TEMP_INDEX: AtomicU64 = AtomicU64::new(0);

impl Shadow {
    /// The shadow repository of `work_tree` (made canonical) under
    /// `home/checkpoints/`. Nothing is created yet.
    pub fn for_work_tree(home: &Path, work_tree: &Path) -> Result<Shadow, ShadowError> {
        let work_tree = work_tree.canonicalize().map_err(|err| {
            ShadowError::Io(format!(
                "cannot resolve the working directory {}: {err}",
                work_tree.display()
            ))
        })?;
        Ok(Shadow {
            git_dir: home.join("checkpoints").join(repository_name(&work_tree)),
            work_tree,
            max_file_bytes: MAX_FILE_BYTES,
        })
    }

    /// The shadow repository at `git_dir` itself, for maintenance that
    /// never touches a working tree (pruning; the tree may be gone).
    pub(super) fn repository(git_dir: PathBuf) -> Shadow {
        Shadow {
            work_tree: git_dir.clone(),
            git_dir,
            max_file_bytes: MAX_FILE_BYTES,
        }
    }

    /// The same with another size bound (tests).
    pub fn with_max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// Where the shadow repository lives.
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The working tree it snapshots (canonical).
    pub fn work_tree(&self) -> &Path {
        &self.work_tree
    }

    /// Snapshots the working tree as a commit on session `session_id`'s
    /// chain (reusing the tip when nothing changed). `message` is the
    /// commit message.
    pub fn snapshot(&self, session_id: &str, message: &str) -> Result<Snapshot, ShadowError> {
        self.refuse_huge_roots()?;
        let _lock = RepositoryLock::shared(&self.git_dir)?;
        self.ensure_repository()?;
        let index = TempIndex::copy_of(&self.shared_index())?;
        let listing = self.git(
            &[
                "ls-files",
                "-z",
                "-t",
                "--others",
                "--modified",
                "--exclude-standard",
            ],
            None,
            Some(index.path()),
        )?;
        let mut too_large = Vec::new();
        let mut tracked_too_large = Vec::new();
        let mut nested = Vec::new();
        let (mut new_files, mut new_bytes) = (0usize, 0u64);
        for entry in listing.split(|b| *b == 0).filter(|e| e.len() > 2) {
            let (tag, path) = (entry[0], &entry[2..]);
            if path.ends_with(b"/") {
                // An untracked directory git lists whole: a nested repository.
                nested.push(PathBuf::from(OsStr::from_bytes(&path[..path.len() - 1])));
                continue;
            }
            let rel = PathBuf::from(OsStr::from_bytes(path));
            let Ok(meta) = std::fs::symlink_metadata(self.work_tree.join(&rel)) else {
                continue;
            };
            if meta.is_file() && meta.len() > self.max_file_bytes {
                if tag != b'?' {
                    tracked_too_large.push(rel.clone());
                }
                too_large.push(rel);
            } else if tag == b'?' {
                new_files += 1;
                new_bytes += meta.len();
            }
        }
        too_large.sort();
        if new_files > MAX_NEW_FILES || new_bytes > MAX_NEW_BYTES {
            return Err(ShadowError::Skipped(format!(
                "{} holds {new_files} files ({} MiB) not snapshotted yet, more than a checkpoint takes ({MAX_NEW_FILES} files, {} MiB); add the bulky directories to .gitignore to get file checkpoints",
                self.work_tree.display(),
                new_bytes >> 20,
                MAX_NEW_BYTES >> 20
            )));
        }
        if !tracked_too_large.is_empty() {
            let stdin = nul_joined(tracked_too_large.iter().map(|p| p.as_os_str()));
            self.git(
                &["update-index", "-z", "--force-remove", "--stdin"],
                Some(&stdin),
                Some(index.path()),
            )?;
        }
        let mut pathspecs = vec![OsString::from(".")];
        // `$HERALD_HOME` inside the tree: neither the snapshots nor herald's
        // state (its database above all) are ever snapshotted or restored.
        let own = self
            .git_dir
            .parent()
            .and_then(Path::parent)
            .and_then(|dir| dir.canonicalize().ok())
            .and_then(|dir| {
                dir.strip_prefix(&self.work_tree)
                    .ok()
                    .map(Path::to_path_buf)
            })
            .filter(|rel| !rel.as_os_str().is_empty());
        for path in too_large.iter().chain(&nested).chain(own.as_ref()) {
            let mut spec = OsString::from(":(exclude,literal)");
            spec.push(path);
            pathspecs.push(spec);
        }
        let stdin = nul_joined(pathspecs.iter().map(OsString::as_os_str));
        // --ignore-errors: a file that cannot be read is left out instead of
        // failing the snapshot (git then exits 1; write-tree decides).
        let added = self.git(
            &[
                "add",
                "-A",
                "--ignore-errors",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            Some(&stdin),
            Some(index.path()),
        );
        match added {
            Ok(_) => {}
            // A fatal error leaves the index as it was: a snapshot of it
            // would claim an old state.
            Err(ShadowError::Git { detail, .. }) if detail.contains("fatal:") => {
                return Err(ShadowError::Git {
                    command: "add".to_owned(),
                    detail,
                });
            }
            Err(err) => {
                tracing::warn!(work_tree = %self.work_tree.display(), "checkpoint: some files were left out: {err}");
            }
        }
        let tree = text(self.git(&["write-tree"], None, Some(index.path()))?);
        let reference = session_ref(session_id)?;
        let tip = text(self.git(
            &[
                "for-each-ref",
                "--format=%(objectname) %(tree)",
                reference.as_str(),
            ],
            None,
            None,
        )?);
        let (tip_commit, tip_tree) = tip.split_once(' ').unwrap_or(("", ""));
        let snapshot = if !tip_commit.is_empty() && tip_tree == tree {
            Snapshot {
                commit: tip_commit.to_owned(),
                created: false,
                too_large,
            }
        } else {
            let commit =
                text(self.git(&["commit-tree", tree.as_str(), "-m", message], None, None)?);
            let old = if tip_commit.is_empty() {
                "0000000000000000000000000000000000000000"
            } else {
                tip_commit
            };
            let refs = format!(
                "update {reference} {commit} {old}\ncreate {} {commit}\n",
                snapshot_ref(&commit)
            );
            self.git(&["update-ref", "--stdin"], Some(refs.as_bytes()), None)?;
            Snapshot {
                commit,
                created: true,
                too_large,
            }
        };
        index.keep_as(&self.shared_index());
        Ok(snapshot)
    }

    /// Lines added and removed and files changed from snapshot `from` to
    /// snapshot `to`.
    pub fn stats(&self, from: &str, to: &str) -> Result<ChangeStats, ShadowError> {
        let mut stats = ChangeStats::default();
        if from == to {
            return Ok(stats);
        }
        let out = self.git(
            &[
                "diff-tree",
                "-r",
                "--no-renames",
                "--numstat",
                "-z",
                from,
                to,
            ],
            None,
            None,
        )?;
        for entry in out.split(|b| *b == 0).filter(|e| !e.is_empty()) {
            let mut fields = entry.splitn(3, |b| *b == b'\t');
            let (Some(added), Some(removed)) = (fields.next(), fields.next()) else {
                continue;
            };
            stats.files_changed += 1;
            stats.insertions += number(added);
            stats.deletions += number(removed);
        }
        Ok(stats)
    }

    /// What restoring snapshot `target` over the tree whose snapshot is
    /// `current` does to each path that differs (nested repositories left
    /// out), sorted by path.
    pub fn changes(&self, current: &str, target: &str) -> Result<Vec<FileChange>, ShadowError> {
        if current == target {
            return Ok(Vec::new());
        }
        let out = self.git(
            &[
                "diff-tree",
                "-r",
                "--no-renames",
                "--raw",
                "-z",
                current,
                target,
            ],
            None,
            None,
        )?;
        let mut changes = Vec::new();
        let mut fields = out.split(|b| *b == 0);
        while let Some(meta) = fields.next() {
            if meta.is_empty() {
                continue;
            }
            let Some(path) = fields.next() else { break };
            // ":oldmode newmode oldsha newsha status"
            let meta = String::from_utf8_lossy(meta);
            let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            let [old_mode, new_mode, _, _, status] = parts.as_slice() else {
                continue;
            };
            if *old_mode == "160000" || *new_mode == "160000" {
                continue;
            }
            let path = PathBuf::from(OsString::from_vec(path.to_vec()));
            let action = match status.chars().next() {
                Some('A') => {
                    if std::fs::symlink_metadata(self.work_tree.join(&path)).is_ok() {
                        Action::Keep
                    } else {
                        Action::Recreate
                    }
                }
                Some('D') => Action::Delete,
                _ => Action::Restore,
            };
            changes.push(FileChange { path, action });
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(changes)
    }

    /// Applies `changes` (from [`Shadow::changes`]) with the content of
    /// snapshot `target`: deletes what was created, writes back what was
    /// changed or deleted (with its mode), removes directories left empty.
    pub fn restore(&self, target: &str, changes: &[FileChange]) -> Result<(), ShadowError> {
        for change in changes.iter().filter(|c| c.action == Action::Delete) {
            let path = self.work_tree.join(&change.path);
            match std::fs::remove_file(&path) {
                Ok(()) => self.remove_empty_parents(&path),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(ShadowError::Io(format!(
                        "cannot delete {}: {err}",
                        path.display()
                    )));
                }
            }
        }
        let write: Vec<&OsStr> = changes
            .iter()
            .filter(|c| matches!(c.action, Action::Restore | Action::Recreate))
            .map(|c| c.path.as_os_str())
            .collect();
        if write.is_empty() {
            return Ok(());
        }
        let index = TempIndex::copy_of(&self.shared_index())?;
        self.git(
            &[
                "--literal-pathspecs",
                "checkout",
                target,
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            Some(&nul_joined(write.into_iter())),
            Some(index.path()),
        )?;
        Ok(())
    }

    /// Removes the directories above `path` that are empty now, up to the
    /// working tree (never it).
    fn remove_empty_parents(&self, path: &Path) {
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == self.work_tree || !d.starts_with(&self.work_tree) {
                break;
            }
            if std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }

    /// The home directory and `/` are not project trees: snapshotting them
    /// would copy far too much.
    fn refuse_huge_roots(&self) -> Result<(), ShadowError> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .and_then(|h| h.canonicalize().ok());
        if self.work_tree.parent().is_none() || home.as_deref() == Some(self.work_tree.as_path()) {
            return Err(ShadowError::Skipped(format!(
                "{} is your home directory or /, not a project; start herald in a project directory to get file checkpoints",
                self.work_tree.display()
            )));
        }
        Ok(())
    }

    /// Creates the shadow repository when missing and refreshes its
    /// exclude file (the user's `.git/info/exclude` applies too).
    fn ensure_repository(&self) -> Result<(), ShadowError> {
        if !self.git_dir.join("HEAD").exists() {
            if let Some(parent) = self.git_dir.parent() {
                std::fs::create_dir_all(parent).map_err(|err| {
                    ShadowError::Io(format!("cannot create {}: {err}", parent.display()))
                })?;
            }
            let dir = self.git_dir.as_os_str().to_owned();
            self.run(
                &[
                    OsStr::new("init"),
                    OsStr::new("--quiet"),
                    OsStr::new("--bare"),
                    // No template: sample hooks and the like are never used
                    // here, and copying them was most of the first snapshot.
                    OsStr::new("--template="),
                    &dir,
                ],
                None,
                None,
                false,
            )?;
            let _ = std::fs::write(
                self.git_dir.join("description"),
                format!(
                    "herald checkpoints of {}\n",
                    self.work_tree.to_string_lossy()
                ),
            );
        }
        let mut exclude =
            String::from("# written by herald: the user's .git/info/exclude follows\n");
        if let Ok(user) = std::fs::read_to_string(self.work_tree.join(".git/info/exclude")) {
            exclude.push_str(&user);
        }
        let info = self.git_dir.join("info");
        let path = info.join("exclude");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(exclude.as_str()) {
            std::fs::create_dir_all(&info)
                .and_then(|()| std::fs::write(&path, exclude))
                .map_err(|err| {
                    ShadowError::Io(format!("cannot write {}: {err}", path.display()))
                })?;
        }
        Ok(())
    }

    fn shared_index(&self) -> PathBuf {
        self.git_dir.join("herald-index")
    }

    /// Runs `git args` on this repository and returns its stdout.
    pub(super) fn git(
        &self,
        args: &[&str],
        stdin: Option<&[u8]>,
        index: Option<&Path>,
    ) -> Result<Vec<u8>, ShadowError> {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        self.run(&args, stdin, index, true)
    }

    fn run(
        &self,
        args: &[&OsStr],
        stdin: Option<&[u8]>,
        index: Option<&Path>,
        in_repository: bool,
    ) -> Result<Vec<u8>, ShadowError> {
        let mut cmd = Command::new(git_program());
        cmd.env_clear();
        for key in ["PATH", "HOME"] {
            if let Some(value) = std::env::var_os(key) {
                cmd.env(key, value);
            }
        }
        cmd.env("LC_ALL", "C")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", "herald")
            .env("GIT_AUTHOR_EMAIL", "herald@localhost")
            .env("GIT_COMMITTER_NAME", "herald")
            .env("GIT_COMMITTER_EMAIL", "herald@localhost");
        if in_repository {
            cmd.env("GIT_DIR", &self.git_dir)
                .env("GIT_WORK_TREE", &self.work_tree);
        }
        if let Some(index) = index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        cmd.current_dir(&self.work_tree)
            .args([
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "core.fsmonitor=false",
                "-c",
                "core.autocrlf=false",
                "-c",
                "core.safecrlf=false",
                "-c",
                "core.quotePath=false",
                "-c",
                "core.untrackedCache=true",
                "-c",
                "gc.auto=0",
                "-c",
                "commit.gpgSign=false",
                "-c",
                "advice.addEmbeddedRepo=false",
            ])
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let command = args
            .iter()
            .take(2)
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let mut child = cmd.spawn().map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                ShadowError::GitMissing
            } else {
                ShadowError::Io(format!("cannot run git: {err}"))
            }
        })?;
        let writer = match (stdin, child.stdin.take()) {
            (Some(bytes), Some(mut pipe)) => {
                let bytes = bytes.to_vec();
                Some(std::thread::spawn(move || pipe.write_all(&bytes)))
            }
            _ => None,
        };
        let output = child
            .wait_with_output()
            .map_err(|err| ShadowError::Io(format!("git {command}: {err}")))?;
        if let Some(writer) = writer {
            let _ = writer.join();
        }
        if !output.status.success() {
            let detail = String::from_utf8_lossy(&output.stderr).trim().to_owned();
            return Err(ShadowError::Git {
                command,
                detail: if detail.is_empty() {
                    format!("exit status {}", output.status)
                } else {
                    detail
                },
            });
        }
        Ok(output.stdout)
    }
}

/// A private copy of the shared index, removed on drop unless kept.
struct TempIndex {
    path: PathBuf,
    kept: bool,
}

impl TempIndex {
    fn copy_of(shared: &Path) -> Result<TempIndex, ShadowError> {
        let n = TEMP_INDEX.fetch_add(1, Ordering::Relaxed);
        let path = shared.with_file_name(format!("herald-index.{}.{n}", std::process::id()));
        match std::fs::copy(shared, &path) {
            Ok(_) => keep_modified_time(shared, &path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(ShadowError::Io(format!(
                    "cannot copy the checkpoint index {}: {err}",
                    shared.display()
                )));
            }
        }
        Ok(TempIndex { path, kept: false })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Makes this copy the shared index (the last writer wins; every
    /// version is a valid index of the tree).
    fn keep_as(mut self, shared: &Path) {
        self.kept = std::fs::rename(&self.path, shared).is_ok();
    }
}

/// Gives the copy `to` the modification time of `from`. git trusts an
/// index entry's cached file times only when the entry is older than the
/// index file itself ("racy git"); a copy stamped now would make a
/// same-size change written in the same clock tick as the last snapshot
/// look unchanged. Best effort: without it that rare change is missed.
fn keep_modified_time(from: &Path, to: &Path) {
    let Ok(modified) = std::fs::metadata(from).and_then(|m| m.modified()) else {
        return;
    };
    let set = std::fs::File::options()
        .write(true)
        .open(to)
        .and_then(|file| file.set_modified(modified));
    if let Err(err) = set {
        tracing::debug!("cannot keep the checkpoint index's time: {err}");
    }
}

impl Drop for TempIndex {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// `<last path component>-<16 hex digits of the path's SHA-256>.git`.
fn repository_name(work_tree: &Path) -> String {
    let digest = Sha256::digest(work_tree.as_os_str().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let base: String = work_tree
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".to_owned())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    format!("{base}-{hex}.git")
}

/// The ref that keeps snapshot `commit`.
pub(super) fn snapshot_ref(commit: &str) -> String {
    format!("{SNAPSHOT_REFS}{commit}")
}

/// Where the refs of single snapshots live.
pub(super) const SNAPSHOT_REFS: &str = "refs/herald/snapshots/";

/// Where the refs naming each session's latest snapshot live.
pub(super) const SESSION_REFS: &str = "refs/herald/sessions/";

/// A lock beside a shadow repository (`<name>.lock` next to `<name>.git`):
/// snapshots hold it shared, so any number run at once; pruning holds it
/// exclusively, so no snapshot reuses an object while unreachable ones are
/// deleted. Released when dropped (and when the process dies).
pub(super) struct RepositoryLock {
    _file: std::fs::File,
}

impl RepositoryLock {
    fn open(git_dir: &Path) -> Result<std::fs::File, ShadowError> {
        let path = git_dir.with_extension("lock");
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| {
                ShadowError::Io(format!("cannot create {}: {err}", parent.display()))
            })?;
        }
        std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|err| ShadowError::Io(format!("cannot open {}: {err}", path.display())))
    }

    /// Waits for the lock, shared.
    pub(super) fn shared(git_dir: &Path) -> Result<RepositoryLock, ShadowError> {
        let file = Self::open(git_dir)?;
        file.lock_shared()
            .map_err(|err| ShadowError::Io(format!("cannot lock {}: {err}", git_dir.display())))?;
        Ok(RepositoryLock { _file: file })
    }

    /// Waits for the lock, exclusively.
    pub(super) fn exclusive(git_dir: &Path) -> Result<RepositoryLock, ShadowError> {
        let file = Self::open(git_dir)?;
        file.lock()
            .map_err(|err| ShadowError::Io(format!("cannot lock {}: {err}", git_dir.display())))?;
        Ok(RepositoryLock { _file: file })
    }
}

/// `refs/herald/sessions/<id>`; ids of other characters than letters,
/// digits, `_` and `-` are refused.
fn session_ref(session_id: &str) -> Result<String, ShadowError> {
    if session_id.is_empty()
        || !session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(ShadowError::Io(format!(
            "'{session_id}' is not a session id herald makes"
        )));
    }
    Ok(format!("{SESSION_REFS}{session_id}"))
}

fn nul_joined<'a>(items: impl Iterator<Item = &'a OsStr>) -> Vec<u8> {
    let mut out = Vec::new();
    for item in items {
        out.extend_from_slice(item.as_bytes());
        out.push(0);
    }
    out
}

fn text(out: Vec<u8>) -> String {
    String::from_utf8_lossy(&out).trim().to_owned()
}

/// A `--numstat` count; `-` (a binary file) counts 0.
fn number(field: &[u8]) -> u64 {
    std::str::from_utf8(field)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The `git` to run: found once on `PATH` (every snapshot runs git several
/// times, and a bare name makes each start search `PATH` again); a bare
/// `git` when it is not there, so starting it fails as before.
fn git_program() -> &'static OsStr {
    static PROGRAM: std::sync::OnceLock<OsString> = std::sync::OnceLock::new();
    PROGRAM.get_or_init(|| {
        std::env::var_os("PATH")
            .and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join("git"))
                    .find(|candidate| is_executable(candidate))
            })
            .map_or_else(|| OsString::from("git"), PathBuf::into_os_string)
    })
}

/// Whether `path` is a file this process may execute.
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}
