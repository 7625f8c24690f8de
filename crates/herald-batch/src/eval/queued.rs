//! A suite over the PostgreSQL queue: every attempt becomes a queue item
//! carrying its task (setup, template directory, checks). A `herald
//! worker` prepares the attempt's directory, runs the agent, grades the
//! deterministic checks in that directory right after it (the outcomes
//! travel back inside the result) and removes the directory. The
//! enqueuing command waits for the results, asks the judge model for the
//! judged checks itself (one judge configuration and one cache for the
//! whole run, whatever the workers' settings), and writes the same
//! reports as a run on this machine.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::metrics::Attempt;
use super::report::Report;
use super::run::{
    EvalOptions, assemble, attempts_of, check_judge, item, judge_rest, run_and_grade, write_reports,
};
use super::suite::{EvalTask, Suite};
use crate::progress::Progress;
use crate::queue::Queue;
use crate::results::{ItemResult, OutDir};
use crate::{BatchError, ItemRunner, Task, Trajectory};

/// What a worker needs to run and grade one eval attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalWork {
    /// The suite's task; its `cwd`, if any, is an absolute path that must
    /// exist on the worker too (a shared or identical checkout).
    pub task: EvalTask,
    /// Which repeat, from 0.
    pub repeat: u32,
}

/// Runs a queued attempt on a worker: a fresh directory under the
/// runner's work root (per claim, so a reclaimed attempt never shares
/// one), the agent, the deterministic checks, the directory removed
/// unless the runner keeps them. The outcomes go in `result.checks`.
pub async fn run_queued(
    runner: &ItemRunner,
    item: &Task,
    work: &EvalWork,
    claim_token: i64,
    cancel: &CancellationToken,
) -> (ItemResult, Option<Trajectory>) {
    let dir = runner
        .work_root()
        .join("eval")
        .join(format!("{}-{claim_token}", item.hash));
    let ran = run_and_grade(
        runner,
        &work.task,
        item,
        dir,
        runner.keeps_workdirs(),
        cancel,
    )
    .await;
    let mut result = ran.result;
    result.checks = ran.graded;
    (result, ran.trajectory)
}

/// Where and how the enqueuing command waits.
pub struct QueuedRun<'a> {
    pub queue: &'a Queue,
    /// The job the attempts go in; naming an existing job collects its
    /// finished attempts instead of running them again.
    pub job: &'a str,
    /// Wait between looks at the queue.
    pub poll: Duration,
}

/// Enqueues every attempt of `suite`, waits for the workers' results,
/// judges them, and writes results, trajectories and the reports to `out`.
pub async fn run_eval_queued(
    run: &QueuedRun<'_>,
    suite: &Suite,
    out: &OutDir,
    options: &EvalOptions,
    progress: &mut Progress,
    cancel: &CancellationToken,
) -> Result<Report, BatchError> {
    check_judge(suite, options)?;
    out.create()?;
    let mut planned: HashMap<String, (EvalTask, u32)> = HashMap::new();
    let mut items = Vec::new();
    for (position, (index, task, repeat)) in
        attempts_of(suite, options.repeat).into_iter().enumerate()
    {
        let mut it = item(index, &task, repeat);
        it.index = position;
        it.eval = Some(EvalWork {
            task: task.clone(),
            repeat,
        });
        planned.insert(it.hash.clone(), (task, repeat));
        items.push(it);
    }
    let total = items.len();
    let queue = run.queue;
    queue
        .enqueue(run.job, &items)
        .await
        .map_err(|err| BatchError::Invalid(format!("cannot enqueue the attempts: {err}")))?;
    drop(items);
    let mut seen: HashSet<String> = HashSet::new();
    let mut judging: JoinSet<Attempt> = JoinSet::new();
    let mut attempts = Vec::with_capacity(total);
    let concurrency = options.concurrency.max(1);
    let judge = options.judge.clone();
    while seen.len() < total {
        let known: Vec<String> = seen.iter().cloned().collect();
        let fresh = match queue.new_results(run.job, &known).await {
            Ok(fresh) => fresh,
            Err(err) => {
                tracing::warn!("the queue is unreachable: {err}; retrying");
                Vec::new()
            }
        };
        for (mut result, trajectory) in fresh {
            let Some((task, repeat)) = planned.get(&result.hash).cloned() else {
                continue;
            };
            if !seen.insert(result.hash.clone()) {
                continue;
            }
            progress.finished(&result);
            if let Some(trajectory) = &trajectory {
                out.write_trajectory(trajectory)?;
            }
            let graded = std::mem::take(&mut result.checks);
            out.append(&result)?;
            while judging.len() >= concurrency {
                if let Some(done) = judging.join_next().await {
                    attempts.push(done.map_err(|err| {
                        BatchError::Invalid(format!("a judge's task stopped: {err}"))
                    })?);
                }
            }
            let (judge, cancel) = (judge.clone(), cancel.clone());
            judging.spawn(async move {
                let workdir = result.cwd.clone().unwrap_or_default();
                let checks = judge_rest(judge.as_deref(), &task, &result, graded, &cancel).await;
                assemble(&task, repeat, result, checks, workdir)
            });
        }
        if seen.len() >= total {
            break;
        }
        if let Ok((jobs, _)) = queue.status(Some(run.job)).await
            && let Some(job) = jobs.first()
            && job.state == "cancelled"
        {
            return Err(BatchError::Invalid(format!(
                "job `{}` was cancelled with {} of {total} attempts finished; no report was written",
                run.job,
                seen.len()
            )));
        }
        tokio::select! {
            () = tokio::time::sleep(run.poll) => {}
            () = cancel.cancelled() => {
                return Err(BatchError::Invalid(format!(
                    "stopped waiting with {} of {total} attempts finished; the workers go on with job `{}`: \
                     run the same command with `--job {}` to collect it",
                    seen.len(),
                    run.job,
                    run.job
                )));
            }
        }
    }
    while let Some(done) = judging.join_next().await {
        attempts.push(
            done.map_err(|err| BatchError::Invalid(format!("a judge's task stopped: {err}")))?,
        );
    }
    progress.finish();
    write_reports(suite, out, options, attempts)
}
