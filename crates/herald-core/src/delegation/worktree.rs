//! Worktree isolation: a child that runs with `isolation: "worktree"` works
//! in a new git worktree of its parent's repository, on its own branch
//! `herald/<agent-id>`, so parallel children never overwrite each other.
//!
//! Each worktree is journaled (`agent_worktrees`) before it is created and
//! marked removed after it is gone; it is locked (`git worktree lock`)
//! while its agent runs. Its result reports the branch, the commits made on
//! it, the diff stat and whether uncommitted changes are left. `herald
//! agents merge` brings a branch into the parent's checkout; `herald
//! agents worktrees --prune` removes what is no longer needed.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::StoreHandle;

/// The file in the repository's top level naming ignored files (`.env`,
/// local settings) each worktree gets a copy of; gitignore syntax.
pub const INCLUDE_FILE: &str = ".worktreeinclude";

/// Files copied from [`INCLUDE_FILE`] at most (a pattern matching a build
/// directory would otherwise copy it whole).
const MAX_INCLUDED_FILES: usize = 1_000;

/// Where a worktree's branch starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorktreeBase {
    /// The parent checkout's `HEAD` (its uncommitted changes are not
    /// carried over).
    Head,
    /// The remote's default branch (`origin/HEAD`), fetched first.
    Fresh,
    /// A branch, tag or commit.
    Ref(String),
}

impl WorktreeBase {
    /// Reads an `isolation` value: `"worktree"` (from `HEAD`),
    /// `"worktree:fresh"` or `"worktree:<ref>"`; `"none"` or empty is no
    /// isolation.
    pub fn parse(isolation: &str) -> Result<Option<Self>, String> {
        let text = isolation.trim();
        match text {
            "" | "none" => Ok(None),
            "worktree" | "worktree:head" => Ok(Some(Self::Head)),
            "worktree:fresh" => Ok(Some(Self::Fresh)),
            _ => match text.strip_prefix("worktree:") {
                Some(reference) if !reference.trim().is_empty() => {
                    Ok(Some(Self::Ref(reference.trim().to_owned())))
                }
                _ => Err(format!(
                    "isolation \"{isolation}\" is not known; use \"worktree\", \"worktree:fresh\" or \"worktree:<branch, tag or commit>\""
                )),
            },
        }
    }
}

/// A worktree a child runs in.
#[derive(Debug, Clone)]
pub(crate) struct Worktree {
    pub agent_id: String,
    /// The parent's repository (top level): the checkout the child may not
    /// write into.
    pub repo: PathBuf,
    pub path: PathBuf,
    pub branch: String,
    /// The commit the branch started from.
    pub base: String,
    /// The repository's git directory, which commits in the worktree write
    /// to (objects, refs): writable for the child's confined commands.
    pub git_dir: PathBuf,
    /// The child's working directory: the parent's, moved into the worktree.
    pub cwd: PathBuf,
}

/// What a worktree child's result says about its work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeReport {
    pub path: String,
    pub branch: String,
    pub base: String,
    /// Commits on the branch since `base`, oldest first: `<short sha> <subject>`.
    pub commits: Vec<String>,
    /// `git diff --shortstat` of the branch against its base, committed work only.
    pub diff_stat: String,
    /// Uncommitted changes are left in the worktree (not on the branch).
    pub dirty: bool,
}

/// Runs git in `dir` with the user's configuration (identity, hooks
/// off), and returns stdout, or stderr as the error.
pub(crate) async fn git<S: AsRef<OsStr>>(dir: &Path, args: &[S]) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.quotePath=false",
        ])
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = cmd
        .output()
        .await
        .map_err(|err| format!("cannot run git: {err}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        Err(if stderr.is_empty() { stdout } else { stderr })
    }
}

/// The directory worktrees of `repo` go in: under herald's home, outside
/// the repository, so the parent's checkout and `git status` stay clean.
fn worktrees_dir(home: &Path, repo: &Path) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    repo.hash(&mut hasher);
    let name = repo
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repo".to_owned());
    home.join("worktrees")
        .join(format!("{name}-{:08x}", hasher.finish() as u32))
}

/// Creates the worktree of `agent_id` from `cwd`'s repository (or
/// reattaches to it when a restarted agent's worktree is still there).
/// Errors are messages the model can read.
pub(crate) async fn open(
    home: &Path,
    cwd: &Path,
    agent_id: &str,
    base: &WorktreeBase,
    store: Option<&StoreHandle>,
) -> Result<Worktree, String> {
    let repo = git(cwd, &["rev-parse", "--show-toplevel"])
        .await
        .map(PathBuf::from)
        .map_err(|_| {
            format!(
                "isolation \"worktree\" needs a git repository, and {} is not in one; run the child without isolation, or `git init` first",
                cwd.display()
            )
        })?;
    let repo = repo.canonicalize().unwrap_or(repo);
    let git_dir = git(
        &repo,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .await
    .map(PathBuf::from)?;
    let branch = format!("herald/{agent_id}");
    let path = worktrees_dir(home, &repo).join(agent_id);
    let relative = cwd
        .canonicalize()
        .ok()
        .and_then(|c| c.strip_prefix(&repo).ok().map(Path::to_path_buf))
        .unwrap_or_default();
    let reattach = path.join(".git").exists();
    // A restarted agent keeps the base it was journaled with. A worktree
    // merged or pruned since is gone, and a follow-up starts a new one from
    // where the base is now: after a merge, that holds the agent's own work.
    let journaled_base = match store {
        Some(store) => {
            let id = agent_id.to_owned();
            store
                .call(move |s| s.worktree(&id))
                .await
                .ok()
                .and_then(Result::ok)
                .flatten()
                .filter(|w| w.removed_at.is_none())
                .map(|w| w.base)
        }
        None => None,
    };
    let base_commit = match journaled_base {
        Some(base) => base,
        None => resolve_base(&repo, base).await?,
    };
    if let Some(store) = store {
        let (id, r, p, b, c) = (
            agent_id.to_owned(),
            repo.display().to_string(),
            path.display().to_string(),
            branch.clone(),
            base_commit.clone(),
        );
        store
            .call(move |s| s.record_worktree(&id, &r, &p, &b, &c))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot journal the worktree: {e}"))?;
    }
    if !reattach {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
        }
        let path_text = path.display().to_string();
        // The branch survives its worktree when it holds unmerged work
        // (a prune, a crash): the worktree is made again on it.
        let branch_ref = format!("refs/heads/{branch}");
        // One `git worktree add` at a time per process: git writes each
        // new worktree's administrative files in steps, and a second add
        // (or a prune) reading them half-written fails.
        let _serial = creation_lock().lock().await;
        let has_branch = git(&repo, &["rev-parse", "--verify", "--quiet", &branch_ref])
            .await
            .is_ok();
        let added = if has_branch {
            git(&repo, &["worktree", "add", "--quiet", &path_text, &branch]).await
        } else {
            git(
                &repo,
                &[
                    "worktree",
                    "add",
                    "--quiet",
                    "-b",
                    &branch,
                    &path_text,
                    &base_commit,
                ],
            )
            .await
        };
        added.map_err(|err| format!("cannot create the worktree: {err}"))?;
        copy_included(&repo, &path).await;
    }
    Ok(Worktree {
        agent_id: agent_id.to_owned(),
        cwd: path.join(relative),
        repo,
        path,
        branch,
        base: base_commit,
        git_dir,
    })
}

/// Serialises worktree creation in this process (see [`open`]).
fn creation_lock() -> &'static tokio::sync::Mutex<()> {
    static LOCK: std::sync::OnceLock<tokio::sync::Mutex<()>> = std::sync::OnceLock::new();
    LOCK.get_or_init(|| tokio::sync::Mutex::new(()))
}

/// The commit `base` names in `repo`.
async fn resolve_base(repo: &Path, base: &WorktreeBase) -> Result<String, String> {
    let verify = |reference: String| async move {
        git(
            repo,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{reference}^{{commit}}"),
            ],
        )
        .await
        .ok()
        .filter(|sha| !sha.is_empty())
    };
    match base {
        WorktreeBase::Head => verify("HEAD".to_owned()).await.ok_or_else(|| {
            format!(
                "{} has no commit yet, so a worktree has nothing to start from; commit first",
                repo.display()
            )
        }),
        WorktreeBase::Ref(reference) => verify(reference.clone()).await.ok_or_else(|| {
            format!(
                "no branch, tag or commit \"{reference}\" in {}",
                repo.display()
            )
        }),
        WorktreeBase::Fresh => {
            git(repo, &["fetch", "--quiet", "origin"])
                .await
                .map_err(|err| {
                    format!("base \"fresh\" fetches the remote origin, which failed: {err}")
                })?;
            let default = git(
                repo,
                &["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"],
            )
            .await
            .ok();
            for candidate in default
                .into_iter()
                .chain(["origin/main".to_owned(), "origin/master".to_owned()])
            {
                if let Some(sha) = verify(candidate).await {
                    return Ok(sha);
                }
            }
            Err(
                "base \"fresh\" found no default branch of origin (origin/HEAD, main or master)"
                    .to_owned(),
            )
        }
    }
}

/// Copies the ignored files [`INCLUDE_FILE`] names into the new worktree
/// (a checkout has only tracked files). Best effort: a file that cannot
/// be copied is logged, not fatal.
async fn copy_included(repo: &Path, worktree: &Path) {
    let include = repo.join(INCLUDE_FILE);
    if !include.is_file() {
        return;
    }
    let mut builder = ignore::gitignore::GitignoreBuilder::new(repo);
    if let Some(err) = builder.add(&include) {
        tracing::warn!(%err, "cannot read {}", include.display());
    }
    let Ok(patterns) = builder.build() else {
        return;
    };
    let Ok(ignored) = git(
        repo,
        &[
            "ls-files",
            "--others",
            "--ignored",
            "--exclude-standard",
            "-z",
        ],
    )
    .await
    else {
        return;
    };
    let mut copied = 0;
    for relative in ignored.split('\0').filter(|p| !p.is_empty()) {
        let source = repo.join(relative);
        if !patterns
            .matched_path_or_any_parents(relative, false)
            .is_ignore()
        {
            continue;
        }
        if copied == MAX_INCLUDED_FILES {
            tracing::warn!(
                "{INCLUDE_FILE} matches more than {MAX_INCLUDED_FILES} files; the rest are not copied"
            );
            break;
        }
        let target = worktree.join(relative);
        let result = match target.parent() {
            Some(parent) => std::fs::create_dir_all(parent)
                .and_then(|()| std::fs::copy(&source, &target).map(|_| ())),
            None => Ok(()),
        };
        match result {
            Ok(()) => copied += 1,
            Err(err) => tracing::warn!(%err, "cannot copy {} into the worktree", source.display()),
        }
    }
}

impl Worktree {
    /// Locks the worktree while its agent runs, so `git worktree prune`
    /// and `herald agents worktrees --prune` leave it alone.
    pub(crate) async fn lock(&self) {
        let reason = format!(
            "herald agent {} is running in it (pid {})",
            self.agent_id,
            std::process::id()
        );
        let path = self.path.display().to_string();
        // Already locked (a reattach after a crash): the old reason goes.
        let _ = git(&self.repo, &["worktree", "unlock", &path]).await;
        if let Err(err) = git(
            &self.repo,
            &["worktree", "lock", "--reason", &reason, &path],
        )
        .await
        {
            tracing::warn!(%err, "cannot lock worktree {path}");
        }
    }

    /// Unlocks it when the agent is done.
    pub(crate) async fn unlock(&self) {
        let path = self.path.display().to_string();
        let _ = git(&self.repo, &["worktree", "unlock", &path]).await;
    }

    /// The branch's commits, diff stat and dirtiness, for the result.
    pub(crate) async fn report(&self) -> WorktreeReport {
        let range = format!("{}..HEAD", self.base);
        let commits = git(&self.path, &["log", "--reverse", "--format=%h %s", &range])
            .await
            .map(|text| text.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        let diff_stat = git(&self.path, &["diff", "--shortstat", &self.base, "HEAD"])
            .await
            .unwrap_or_default()
            .trim()
            .to_owned();
        let dirty = git(&self.path, &["status", "--porcelain"])
            .await
            .map(|text| !text.trim().is_empty())
            .unwrap_or(false);
        WorktreeReport {
            path: self.path.display().to_string(),
            branch: self.branch.clone(),
            base: self.base.clone(),
            commits,
            diff_stat,
            dirty,
        }
    }
}

/// A journaled worktree and what is known of it now.
#[derive(Debug, Clone, Serialize)]
pub struct WorktreeState {
    #[serde(flatten)]
    pub record: herald_store::AgentWorktree,
    /// Its agent's status; `None` when the agent record was pruned.
    pub agent_status: Option<herald_protocol::AgentStatus>,
    /// The directory is still there.
    pub exists: bool,
    /// Uncommitted changes are in it.
    pub dirty: bool,
    /// Commits on its branch since its base.
    pub commits: usize,
}

/// Why a merge did not happen; the message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("agent {0} has no worktree (it ran without isolation, or it was merged or pruned)")]
    NoWorktree(String),
    #[error("agent {0} is still running; wait for it to finish (or `herald agents cancel {0}`)")]
    Running(String),
    #[error(
        "{path} has uncommitted changes; commit them on {branch} in the worktree (or discard them) before merging"
    )]
    Dirty { path: String, branch: String },
    #[error(
        "merging {branch} into {repo} conflicts in: {files}. Nothing was changed (the merge was aborted); merge it by hand (`git merge {branch}`) and resolve them, or ask the agent for a follow-up on top of the current {repo}"
    )]
    Conflict {
        branch: String,
        repo: String,
        files: String,
    },
    #[error("git refused to merge {branch} into {repo}: {message}")]
    Git {
        branch: String,
        repo: String,
        message: String,
    },
    #[error("the store failed: {0}")]
    Store(String),
}

/// How a merge went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeKind {
    /// The checkout's branch moved forward to the agent's.
    FastForward,
    /// A merge commit joined them.
    MergeCommit,
    /// The branch had nothing the checkout lacks.
    UpToDate,
}

/// A merged worktree.
#[derive(Debug, Clone, Serialize)]
pub struct MergeOutcome {
    pub agent_id: String,
    pub branch: String,
    pub repo: String,
    pub kind: MergeKind,
    /// The checkout's `HEAD` after the merge.
    pub head: String,
    /// The worktree and its branch were removed (not with `--keep`).
    pub removed: bool,
}

async fn journaled(
    store: &StoreHandle,
    agent_id: &str,
) -> Result<
    (
        Option<herald_store::AgentWorktree>,
        Option<herald_protocol::AgentStatus>,
    ),
    String,
> {
    let id = agent_id.to_owned();
    store
        .call(move |s| {
            let worktree = s.worktree(&id)?;
            let status = s.get_agent(&id)?.map(|a| a.status);
            Ok::<_, herald_store::StoreError>((worktree, status))
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// Merges agent `agent_id`'s branch into its repository's checkout: a
/// fast-forward when possible, else a merge commit; on conflicts nothing
/// changes and the error lists them. Then removes the worktree and the
/// branch unless `keep`.
pub async fn merge(
    store: &StoreHandle,
    agent_id: &str,
    keep: bool,
) -> Result<MergeOutcome, MergeError> {
    let (record, status) = journaled(store, agent_id)
        .await
        .map_err(MergeError::Store)?;
    let record = record
        .filter(|r| r.removed_at.is_none())
        .ok_or_else(|| MergeError::NoWorktree(agent_id.to_owned()))?;
    if status.is_some_and(|s| !s.is_finished()) {
        return Err(MergeError::Running(agent_id.to_owned()));
    }
    let repo = PathBuf::from(&record.repo);
    let path = PathBuf::from(&record.path);
    if path.exists()
        && git(&path, &["status", "--porcelain"])
            .await
            .is_ok_and(|s| !s.trim().is_empty())
    {
        return Err(MergeError::Dirty {
            path: record.path.clone(),
            branch: record.branch.clone(),
        });
    }
    let git_error = |message: String| MergeError::Git {
        branch: record.branch.clone(),
        repo: record.repo.clone(),
        message,
    };
    let before = git(&repo, &["rev-parse", "HEAD"])
        .await
        .map_err(git_error)?;
    let tip = git(&repo, &["rev-parse", &record.branch])
        .await
        .map_err(git_error)?;
    let message = format!("Merge {} (herald agent {agent_id})", record.branch);
    if let Err(err) = git(
        &repo,
        &["merge", "--no-edit", "-m", &message, &record.branch],
    )
    .await
    {
        let conflicted = git(&repo, &["diff", "--name-only", "--diff-filter=U"])
            .await
            .unwrap_or_default();
        if conflicted.trim().is_empty() {
            return Err(git_error(err));
        }
        let _ = git(&repo, &["merge", "--abort"]).await;
        return Err(MergeError::Conflict {
            branch: record.branch.clone(),
            repo: record.repo.clone(),
            files: conflicted.lines().collect::<Vec<_>>().join(", "),
        });
    }
    let head = git(&repo, &["rev-parse", "HEAD"])
        .await
        .map_err(git_error)?;
    let kind = if head == before {
        MergeKind::UpToDate
    } else if head == tip {
        MergeKind::FastForward
    } else {
        MergeKind::MergeCommit
    };
    let removed = !keep && remove(store, &record, true).await.is_ok();
    Ok(MergeOutcome {
        agent_id: agent_id.to_owned(),
        branch: record.branch,
        repo: record.repo,
        kind,
        head,
        removed,
    })
}

/// Removes a journaled worktree (and its branch when `drop_branch`),
/// then marks it removed.
async fn remove(
    store: &StoreHandle,
    record: &herald_store::AgentWorktree,
    drop_branch: bool,
) -> Result<(), String> {
    let repo = Path::new(&record.repo);
    if Path::new(&record.path).exists() {
        let _ = git(repo, &["worktree", "unlock", &record.path]).await;
        git(repo, &["worktree", "remove", "--force", &record.path]).await?;
    }
    let _ = git(repo, &["worktree", "prune"]).await;
    if drop_branch {
        let _ = git(repo, &["branch", "-D", &record.branch]).await;
    }
    let id = record.agent_id.clone();
    store
        .call(move |s| s.mark_worktree_removed(&id))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Every journaled worktree not yet removed, with its state.
pub async fn list(store: &StoreHandle) -> Result<Vec<WorktreeState>, String> {
    let records = store
        .call(|s| {
            let records = s.present_worktrees()?;
            let mut out = Vec::with_capacity(records.len());
            for record in records {
                let status = s.get_agent(&record.agent_id)?.map(|a| a.status);
                out.push((record, status));
            }
            Ok::<_, herald_store::StoreError>(out)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let mut states = Vec::with_capacity(records.len());
    for (record, agent_status) in records {
        let path = Path::new(&record.path);
        let exists = path.join(".git").exists();
        let (dirty, commits) = if exists {
            let dirty = git(path, &["status", "--porcelain"])
                .await
                .is_ok_and(|s| !s.trim().is_empty());
            let range = format!("{}..{}", record.base, record.branch);
            let commits = git(path, &["rev-list", "--count", &range])
                .await
                .ok()
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
            (dirty, commits)
        } else {
            (false, 0)
        };
        states.push(WorktreeState {
            record,
            agent_status,
            exists,
            dirty,
            commits,
        });
    }
    Ok(states)
}

/// What pruning did with one worktree.
#[derive(Debug, Clone, Serialize)]
pub struct Pruned {
    pub agent_id: String,
    pub path: String,
    /// `removed`, `kept` (and why in `note`).
    pub removed: bool,
    pub note: String,
}

/// Removes the worktrees whose agents are no longer running (finished,
/// failed, interrupted by a crash, or pruned from the journal). A
/// worktree with uncommitted changes is kept unless `force`; a branch
/// with commits its repository's `HEAD` lacks is kept (only the worktree
/// goes), so no committed work is lost.
pub async fn prune(store: &StoreHandle, force: bool) -> Result<Vec<Pruned>, String> {
    let mut out = Vec::new();
    for state in list(store).await? {
        let record = &state.record;
        let running = state.agent_status.is_some_and(|s| !s.is_finished())
            && locked_by_live_process(record).await;
        let entry = |removed: bool, note: String| Pruned {
            agent_id: record.agent_id.clone(),
            path: record.path.clone(),
            removed,
            note,
        };
        if running {
            out.push(entry(false, "its agent is running".to_owned()));
            continue;
        }
        if state.dirty && !force {
            out.push(entry(
                false,
                "it has uncommitted changes; merge or commit them, or prune with --force"
                    .to_owned(),
            ));
            continue;
        }
        let unmerged = git(
            Path::new(&record.repo),
            &["rev-list", "--count", &format!("HEAD..{}", record.branch)],
        )
        .await
        .ok()
        .and_then(|n| n.trim().parse::<usize>().ok())
        .unwrap_or(0);
        match remove(store, record, unmerged == 0).await {
            Ok(()) if unmerged > 0 => out.push(entry(
                true,
                format!(
                    "branch {} kept: {unmerged} commits not in HEAD (`herald agents merge` no longer applies; `git merge {}`)",
                    record.branch, record.branch
                ),
            )),
            Ok(()) => out.push(entry(true, String::new())),
            Err(err) => out.push(entry(false, format!("could not remove it: {err}"))),
        }
    }
    Ok(out)
}

/// Whether the worktree's lock names a herald process that is alive.
async fn locked_by_live_process(record: &herald_store::AgentWorktree) -> bool {
    let Ok(text) = git(
        Path::new(&record.repo),
        &["worktree", "list", "--porcelain"],
    )
    .await
    else {
        return false;
    };
    let mut in_ours = false;
    for line in text.lines() {
        if let Some(path) = line.strip_prefix("worktree ") {
            in_ours = path == record.path;
        } else if in_ours && let Some(reason) = line.strip_prefix("locked") {
            return reason
                .split("(pid ")
                .nth(1)
                .and_then(|rest| rest.split(')').next())
                .and_then(|pid| pid.trim().parse::<u32>().ok())
                .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        }
    }
    false
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn run(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// `fresh` starts from the remote's default branch after a fetch, a
    /// ref from that ref, `head` from the checkout's HEAD; a sub-directory
    /// working directory moves into the worktree.
    #[tokio::test]
    async fn bases_start_where_they_say() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let origin = root.join("origin.git");
        let upstream = root.join("upstream");
        let repo = root.join("repo");
        std::fs::create_dir_all(&upstream).unwrap();
        run(&upstream, &["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(upstream.join("src")).unwrap();
        std::fs::write(upstream.join("src/a.txt"), "1").unwrap();
        run(&upstream, &["add", "."]);
        run(&upstream, &["commit", "-q", "-m", "one"]);
        run(&upstream, &["tag", "v1"]);
        run(&root, &["clone", "-q", "--bare", "upstream", "origin.git"]);
        run(&root, &["clone", "-q", "origin.git", "repo"]);
        // The remote moves on after the clone.
        std::fs::write(upstream.join("src/a.txt"), "2").unwrap();
        run(&upstream, &["commit", "-q", "-am", "two"]);
        run(&upstream, &["push", "-q", origin.to_str().unwrap(), "main"]);
        let remote_tip = run(&upstream, &["rev-parse", "HEAD"]);
        let local_head = run(&repo, &["rev-parse", "HEAD"]);
        let home = root.join("home");
        let cwd = repo.join("src");

        let fresh = open(&home, &cwd, "agt_fresh", &WorktreeBase::Fresh, None)
            .await
            .unwrap();
        assert_eq!(fresh.base, remote_tip);
        assert_eq!(run(&fresh.path, &["rev-parse", "HEAD"]), remote_tip);
        assert_eq!(fresh.cwd, fresh.path.join("src"));
        assert!(fresh.path.starts_with(home.join("worktrees")));
        assert_eq!(fresh.branch, "herald/agt_fresh");

        let head = open(&home, &cwd, "agt_head", &WorktreeBase::Head, None)
            .await
            .unwrap();
        assert_eq!(head.base, local_head);

        let tagged = open(
            &home,
            &cwd,
            "agt_tag",
            &WorktreeBase::Ref("v1".into()),
            None,
        )
        .await
        .unwrap();
        assert_eq!(tagged.base, local_head);
        let err = open(
            &home,
            &cwd,
            "agt_bad",
            &WorktreeBase::Ref("nope".into()),
            None,
        )
        .await
        .unwrap_err();
        assert!(err.contains("no branch, tag or commit \"nope\""), "{err}");

        // Without a remote, fresh says what it needs.
        let err = open(&home, &upstream, "agt_noremote", &WorktreeBase::Fresh, None)
            .await
            .unwrap_err();
        assert!(err.contains("fetches the remote origin"), "{err}");
    }

    /// A follow-up after a merge gets a new worktree that holds the
    /// merged work, not one at the base the first run started from.
    #[tokio::test]
    async fn after_a_merge_a_new_worktree_starts_from_the_merged_head() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let repo = root.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        run(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("a.txt"), "greet\n").unwrap();
        run(&repo, &["add", "."]);
        run(&repo, &["commit", "-q", "-m", "start"]);
        let home = root.join("home");
        let store = StoreHandle::open(&root.join("state.db")).unwrap();

        let first = open(&home, &repo, "agt_f", &WorktreeBase::Head, Some(&store))
            .await
            .unwrap();
        std::fs::write(first.path.join("a.txt"), "welcome\n").unwrap();
        run(&first.path, &["commit", "-q", "-am", "rename"]);
        let merged = merge(&store, "agt_f", false).await.unwrap();
        assert!(merged.removed);
        assert!(!first.path.exists());
        let head = run(&repo, &["rev-parse", "HEAD"]);

        let again = open(&home, &repo, "agt_f", &WorktreeBase::Head, Some(&store))
            .await
            .unwrap();
        assert_eq!(again.base, head);
        assert_eq!(run(&again.path, &["rev-parse", "HEAD"]), head);
        assert_eq!(
            std::fs::read_to_string(again.path.join("a.txt")).unwrap(),
            "welcome\n"
        );
        let journaled = store
            .call(|s| s.worktree("agt_f"))
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(journaled.base, head);
        assert!(journaled.removed_at.is_none(), "{journaled:?}");
    }

    #[test]
    fn isolation_values_parse_or_say_what_is_allowed() {
        assert_eq!(WorktreeBase::parse("").unwrap(), None);
        assert_eq!(WorktreeBase::parse("none").unwrap(), None);
        assert_eq!(
            WorktreeBase::parse("worktree").unwrap(),
            Some(WorktreeBase::Head)
        );
        assert_eq!(
            WorktreeBase::parse("worktree:fresh").unwrap(),
            Some(WorktreeBase::Fresh)
        );
        assert_eq!(
            WorktreeBase::parse("worktree:v1.2").unwrap(),
            Some(WorktreeBase::Ref("v1.2".into()))
        );
        for bad in ["container", "worktree:", "worktrees"] {
            let err = WorktreeBase::parse(bad).unwrap_err();
            assert!(err.contains("\"worktree:fresh\""), "{bad}: {err}");
        }
    }
}
