//! A batch on this machine: items run concurrently (at most
//! `concurrency` at once) on the embedded store, results appended as each
//! finishes, and with `--resume` items whose content hash already has a
//! completed result are skipped.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::progress::Progress;
use crate::results::{ItemResult, ItemStatus, OutDir};
use crate::{BatchError, ItemRunner, Task};

/// How a local run treats an output directory that has results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refuse to touch it.
    Refuse,
    /// Keep completed results and run the rest (`--resume`).
    Resume,
    /// Start over (`--overwrite`).
    Overwrite,
}

/// What a run came to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Items in the task file.
    pub total: usize,
    /// Items skipped by `--resume`.
    pub skipped: usize,
    /// Items run now.
    pub ran: usize,
    pub completed: usize,
    /// Items run now that did not complete.
    pub failed: usize,
    pub cost_usd: f64,
    pub tokens: u64,
    pub wall_ms: u64,
}

/// Checks the output directory against `existing` and returns the hashes
/// of items already done. Nothing is written when it refuses.
pub fn prepare_out(out: &OutDir, existing: Existing) -> Result<HashSet<String>, BatchError> {
    let results = out.read_results()?;
    match existing {
        Existing::Refuse if !results.is_empty() => Err(BatchError::Invalid(format!(
            "{} already has results; pass --resume to run only what is not done, or --overwrite to start over",
            out.dir.display()
        ))),
        Existing::Overwrite => {
            for path in [out.results_path(), out.dir.join("trajectories")] {
                let removed = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                match removed {
                    Ok(()) => {}
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                    Err(err) => return Err(BatchError::io(&path, err)),
                }
            }
            out.create()?;
            Ok(HashSet::new())
        }
        _ => {
            out.create()?;
            Ok(results
                .into_iter()
                .filter(|r| r.status == ItemStatus::Completed)
                .map(|r| r.hash)
                .collect())
        }
    }
}

/// Runs `tasks` not in `done`, `concurrency` at once, appending each
/// result (and trajectory) as it finishes; at the end `results.jsonl` is
/// rewritten with one line per item of the file, in file order.
pub async fn run_local(
    runner: Arc<ItemRunner>,
    tasks: Vec<Task>,
    done: &HashSet<String>,
    out: &OutDir,
    concurrency: usize,
    progress: &mut Progress,
    cancel: &CancellationToken,
) -> Result<(Summary, Vec<ItemResult>), BatchError> {
    let started = std::time::Instant::now();
    let order: Vec<String> = tasks.iter().map(|t| t.hash.clone()).collect();
    let mut summary = Summary {
        total: tasks.len(),
        ..Summary::default()
    };
    let mut pending = tasks.into_iter().filter(|t| !done.contains(&t.hash));
    summary.skipped = summary.total - pending.clone().count();
    let mut running: JoinSet<(ItemResult, Option<crate::Trajectory>)> = JoinSet::new();
    let mut write_error = None;
    loop {
        while running.len() < concurrency.max(1) && !cancel.is_cancelled() {
            let Some(task) = pending.next() else { break };
            let runner = Arc::clone(&runner);
            let cancel = cancel.clone();
            progress.started();
            running.spawn(async move { runner.run(&task, &cancel).await });
        }
        let Some(joined) = running.join_next().await else {
            break;
        };
        let (result, trajectory) = match joined {
            Ok(done) => done,
            Err(err) => {
                return Err(BatchError::Invalid(format!(
                    "an item's task stopped: {err}"
                )));
            }
        };
        progress.finished(&result);
        summary.ran += 1;
        if result.status == ItemStatus::Completed {
            summary.completed += 1;
        } else {
            summary.failed += 1;
        }
        summary.cost_usd += result.cost_usd.unwrap_or(0.0);
        summary.tokens += result.tokens.input + result.tokens.output;
        // The trajectory first: a result line means its trajectory exists.
        if let Some(trajectory) = &trajectory
            && let Err(err) = out.write_trajectory(trajectory)
        {
            write_error.get_or_insert(err);
        }
        if let Err(err) = out.append(&result) {
            write_error.get_or_insert(err);
            cancel.cancel();
        }
    }
    progress.finish();
    if let Some(err) = write_error {
        return Err(err);
    }
    let results = out.compact(&order)?;
    summary.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok((summary, results))
}
