//! Pruning: checkpoints older than `[checkpoints] keep_days` are deleted,
//! and while the shadow repositories together take more than
//! `max_size_mb` the oldest quarter of the rest goes, round after round.
//! A deleted checkpoint's turn can no longer be rewound (the conversation
//! is untouched); its snapshots go once nothing else keeps them.
//!
//! In each shadow repository, under its exclusive lock (no snapshot runs
//! meanwhile, in this process or another):
//! - a snapshot ref goes when no remaining checkpoint names its commit, it
//!   is no session's latest snapshot, and it is older than the cutoff (a
//!   rewind's "files as they were" snapshots are kept that long too);
//! - a session ref goes when the session has no checkpoint left and its
//!   snapshot is older than the cutoff;
//! - every commit a checkpoint names, and every session's latest, gets its
//!   own ref if it lacks one; a session ref that still heads a chain of
//!   parents (from older versions) is replaced by a copy without parents,
//!   so the chain's old commits go once no checkpoint names them;
//! - then `git gc --prune=now` deletes what is unreachable; a repository
//!   with no ref left is removed whole.
//!
//! Every step is safe to interrupt: rows go first, then refs, then objects,
//! and the next prune finishes what one left.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use herald_store::{CheckpointReferences, StoreError};
use serde::Serialize;

use super::shadow::{
    RepositoryLock, SESSION_REFS, SNAPSHOT_REFS, Shadow, ShadowError, snapshot_ref,
};
use crate::StoreHandle;
use crate::config::CheckpointsConfig;

/// Rounds of the size limit: each drops the oldest quarter of what is
/// left, so twelve leave about 3 %.
const MAX_SIZE_ROUNDS: usize = 12;

/// How often the prune at start runs.
pub const PRUNE_INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// The file whose modification time says when a prune last finished.
const LAST_PRUNE_FILE: &str = "last-prune";

/// How long and how large checkpoints may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Checkpoints older than this are deleted; `None` keeps them at any age.
    pub keep_for: Option<Duration>,
    /// Largest size of all shadow repositories together; `None` = no limit.
    pub max_bytes: Option<u64>,
}

impl Retention {
    /// The retention `[checkpoints]` asks for (0 = no limit, for both).
    pub fn from_config(config: &CheckpointsConfig) -> Retention {
        Retention {
            keep_for: (config.keep_days > 0)
                .then(|| Duration::from_secs(u64::from(config.keep_days) * 86_400)),
            max_bytes: (config.max_size_mb > 0).then(|| config.max_size_mb.saturating_mul(1 << 20)),
        }
    }
}

/// What a prune did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PruneReport {
    /// Checkpoint rows deleted (their turns can no longer be rewound).
    pub checkpoints_removed: u64,
    /// Snapshot and session refs deleted.
    pub snapshots_removed: u64,
    /// Shadow repositories looked at.
    pub repositories: u64,
    /// Shadow repositories deleted because nothing in them was kept.
    pub repositories_removed: u64,
    /// Size of `$HERALD_HOME/checkpoints/` before and after, in bytes.
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Repositories that could not be pruned, each with why (the next
    /// prune tries again).
    pub failures: Vec<String>,
}

/// Why a prune stopped before it looked at the repositories.
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    #[error("cannot prune checkpoints: {0}")]
    Store(#[from] StoreError),
    #[error("cannot prune checkpoints: {0}")]
    StoreGone(#[from] crate::persist::StoreGone),
    #[error("cannot prune checkpoints: the pruning task failed: {0}")]
    Task(String),
}

/// Whether the prune at start is due: `home` has checkpoints and no prune
/// finished there in the last [`PRUNE_INTERVAL`].
pub fn prune_due(home: &Path) -> bool {
    let root = home.join("checkpoints");
    if !root.is_dir() {
        return false;
    }
    let last = std::fs::metadata(root.join(LAST_PRUNE_FILE)).and_then(|m| m.modified());
    match last {
        Ok(when) => when.elapsed().map_or(true, |age| age >= PRUNE_INTERVAL),
        Err(_) => true,
    }
}

/// Prunes the checkpoints of `home` to `retention` (see the module
/// documentation) and records when it finished.
pub async fn prune(
    store: &StoreHandle,
    home: &Path,
    retention: Retention,
) -> Result<PruneReport, PruneError> {
    let root = home.join("checkpoints");
    let mut report = PruneReport {
        bytes_before: size_of(&root).await?,
        ..PruneReport::default()
    };
    let now = now_ms();
    let mut cutoff = retention
        .keep_for
        .map(|keep| now.saturating_sub(i64::try_from(keep.as_millis()).unwrap_or(i64::MAX)));
    let mut size = report.bytes_before;
    for _ in 0..MAX_SIZE_ROUNDS {
        if let Some(cutoff) = cutoff {
            report.checkpoints_removed += store
                .call(move |s| s.delete_checkpoints_before(cutoff))
                .await??;
            let keep = store.call(|s| s.checkpoint_references()).await??;
            let dir = root.clone();
            let swept = tokio::task::spawn_blocking(move || sweep_all(&dir, &keep, cutoff))
                .await
                .map_err(|err| PruneError::Task(err.to_string()))?;
            report.snapshots_removed += swept.snapshots_removed;
            report.repositories = report.repositories.max(swept.repositories);
            report.repositories_removed += swept.repositories_removed;
            report.failures.extend(swept.failures);
            size = size_of(&root).await?;
        }
        let Some(max) = retention.max_bytes else {
            break;
        };
        if size <= max {
            break;
        }
        // Over the limit: the next round also drops the oldest quarter of
        // the checkpoints left (at least one), or, with none left, every
        // snapshot no session needs.
        let (count, _) = store.call(|s| s.checkpoint_age_at(0)).await??;
        let next = if count == 0 {
            now.saturating_add(1)
        } else {
            match store
                .call(move |s| s.checkpoint_age_at(count / 4))
                .await??
            {
                (_, Some(at)) => at.saturating_add(1),
                (_, None) => now.saturating_add(1),
            }
        };
        if cutoff.is_some_and(|c| c >= next) {
            break;
        }
        cutoff = Some(next);
    }
    report.bytes_after = size;
    if root.is_dir() {
        let marker = root.join(LAST_PRUNE_FILE);
        if let Err(err) = std::fs::write(&marker, b"") {
            tracing::warn!(
                "cannot record the checkpoint prune in {}: {err}",
                marker.display()
            );
        }
    }
    Ok(report)
}

/// What sweeping the repositories did.
#[derive(Debug, Default)]
struct Swept {
    snapshots_removed: u64,
    repositories: u64,
    repositories_removed: u64,
    failures: Vec<String>,
}

/// Sweeps every shadow repository under `root` (blocking).
fn sweep_all(root: &Path, keep: &CheckpointReferences, cutoff_ms: i64) -> Swept {
    let mut swept = Swept::default();
    let Ok(entries) = std::fs::read_dir(root) else {
        return swept;
    };
    let mut repositories: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "git") && p.is_dir())
        .collect();
    repositories.sort();
    for git_dir in repositories {
        swept.repositories += 1;
        // git's commit times are whole seconds.
        match sweep(&git_dir, keep, cutoff_ms.div_euclid(1000) + 1) {
            Ok(outcome) => {
                swept.snapshots_removed += outcome.refs_removed;
                swept.repositories_removed += u64::from(outcome.removed);
            }
            Err(err) => {
                tracing::warn!(repository = %git_dir.display(), "checkpoint prune: {err}");
                swept.failures.push(format!("{}: {err}", git_dir.display()));
            }
        }
    }
    swept
}

/// What sweeping one repository did.
struct Outcome {
    refs_removed: u64,
    /// The repository was deleted (nothing in it was kept).
    removed: bool,
}

/// One ref under `refs/herald/`.
struct Ref {
    name: String,
    commit: String,
    /// Committer time, Unix seconds.
    time: i64,
    tree: String,
    has_parents: bool,
}

fn parse_refs(listing: &str) -> Vec<Ref> {
    listing
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let name = fields.next()?.to_owned();
            let commit = fields.next()?.to_owned();
            let time = fields.next()?.parse().ok()?;
            let tree = fields.next()?.to_owned();
            let has_parents = fields.any(|p| !p.is_empty());
            Some(Ref {
                name,
                commit,
                time,
                tree,
                has_parents,
            })
        })
        .collect()
}

/// Sweeps one repository under its exclusive lock (see the module
/// documentation); `cutoff` in Unix seconds.
fn sweep(git_dir: &Path, keep: &CheckpointReferences, cutoff: i64) -> Result<Outcome, ShadowError> {
    let _lock = RepositoryLock::exclusive(git_dir)?;
    let repo = Shadow::repository(git_dir.to_path_buf());
    let listing = repo.git(
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname) %(committerdate:unix) %(tree) %(parent)",
            "refs/herald/",
        ],
        None,
        None,
    )?;
    let refs = parse_refs(&String::from_utf8_lossy(&listing));
    let mut updates = String::new();
    let mut removed = 0u64;
    let mut tips: HashSet<String> = HashSet::new();
    let mut kept_refs = 0usize;
    for r in refs.iter().filter(|r| r.name.starts_with(SESSION_REFS)) {
        let session = &r.name[SESSION_REFS.len()..];
        if !keep.sessions.contains(session) && r.time < cutoff {
            updates.push_str(&format!("delete {} {}\n", r.name, r.commit));
            removed += 1;
            continue;
        }
        kept_refs += 1;
        tips.insert(r.commit.clone());
        if r.has_parents {
            let message = format!("latest snapshot of session {session}");
            let copy = repo.git(&["commit-tree", &r.tree, "-m", &message], None, None)?;
            let copy = String::from_utf8_lossy(&copy).trim().to_owned();
            updates.push_str(&format!("update {} {copy} {}\n", r.name, r.commit));
            tips.insert(copy);
        }
    }
    let mut held: HashSet<&str> = HashSet::new();
    for r in refs.iter().filter(|r| r.name.starts_with(SNAPSHOT_REFS)) {
        let commit = &r.name[SNAPSHOT_REFS.len()..];
        if !keep.commits.contains(commit) && !tips.contains(commit) && r.time < cutoff {
            updates.push_str(&format!("delete {} {}\n", r.name, r.commit));
            removed += 1;
        } else {
            held.insert(commit);
            kept_refs += 1;
        }
    }
    // Every commit a checkpoint names (or a session's latest) that is in
    // this repository keeps its own ref.
    let wanted: Vec<&String> = keep
        .commits
        .iter()
        .chain(tips.iter())
        .filter(|c| !held.contains(c.as_str()) && is_commit_id(c))
        .collect();
    if !wanted.is_empty() {
        let mut query = String::new();
        for commit in &wanted {
            query.push_str(commit);
            query.push('\n');
        }
        let found = repo.git(
            &["cat-file", "--batch-check=%(objectname) %(objecttype)"],
            Some(query.as_bytes()),
            None,
        )?;
        let mut created = HashSet::new();
        for line in String::from_utf8_lossy(&found).lines() {
            if let Some((commit, "commit")) = line.split_once(' ')
                && created.insert(commit.to_owned())
            {
                updates.push_str(&format!("create {} {commit}\n", snapshot_ref(commit)));
                kept_refs += 1;
            }
        }
    }
    if !updates.is_empty() {
        repo.git(&["update-ref", "--stdin"], Some(updates.as_bytes()), None)?;
    }
    if kept_refs == 0 {
        std::fs::remove_dir_all(git_dir).map_err(|err| {
            ShadowError::Io(format!("cannot remove {}: {err}", git_dir.display()))
        })?;
        return Ok(Outcome {
            refs_removed: removed,
            removed: true,
        });
    }
    if removed > 0 {
        repo.git(
            &[
                "-c",
                "gc.reflogExpire=now",
                "-c",
                "gc.reflogExpireUnreachable=now",
                "gc",
                "--quiet",
                "--prune=now",
            ],
            None,
            None,
        )?;
    }
    Ok(Outcome {
        refs_removed: removed,
        removed: false,
    })
}

/// Whether `text` looks like a full commit id (so it is safe to hand to git).
fn is_commit_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The size of every file under `dir`, in bytes (0 when it is missing).
async fn size_of(dir: &Path) -> Result<u64, PruneError> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || tree_size(&dir))
        .await
        .map_err(|err| PruneError::Task(err.to_string()))
}

fn tree_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => tree_size(&entry.path()),
            Ok(kind) if kind.is_file() => entry.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
