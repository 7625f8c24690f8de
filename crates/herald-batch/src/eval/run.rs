//! Running a suite: every task `repeat` times, each attempt in a fresh
//! directory (a copy of the task's `cwd`, or empty) after its `setup`,
//! as a batch item; then its checks, judged ones by the judge model.
//! Results and trajectories are written like a batch's (so `herald batch
//! export` reads an eval run too), then the reports.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::checks::{Check, CheckOutcome, grade};
use super::judge::Judge;
use super::metrics::{Attempt, compute};
use super::report::{Report, html, markdown};
use super::suite::{EvalTask, Suite};
use crate::progress::Progress;
use crate::results::{ItemResult, ItemStatus, OutDir, write_atomic};
use crate::{BatchError, ItemRunner, Task};

/// How a suite is run.
pub struct EvalOptions {
    /// Attempts per task (`--repeat`).
    pub repeat: u32,
    pub concurrency: usize,
    /// The judge of `judge` checks; required when the suite has any.
    pub judge: Option<Arc<Judge>>,
    /// The default model, for the report.
    pub model: String,
    /// The herald build, for the report.
    pub herald_version: String,
    /// Keep each attempt's directory after grading (`--keep-workdirs`).
    pub keep_workdirs: bool,
}

/// A file name from a task id.
pub(crate) fn safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The batch item of attempt `repeat` of `task`.
pub(crate) fn item(index: usize, task: &EvalTask, repeat: u32) -> Task {
    let hash = crate::hash::content_hash(&serde_json::json!({
        "id": task.id,
        "prompt": task.prompt,
        "cwd": task.cwd,
        "setup": task.setup,
        "model": task.model,
        "toolsets": task.toolsets,
        "max_turns": task.max_turns,
        "repeat": repeat,
    }));
    Task {
        index,
        id: format!("{}#{repeat}", task.id),
        prompt: task.prompt.clone(),
        cwd: None,
        model: task.model.clone(),
        toolsets: task.toolsets.clone(),
        budget_usd: None,
        max_turns: task.max_turns,
        output_schema: None,
        hash,
        eval: None,
    }
}

/// Every attempt of a suite in run order: repeat by repeat, task by task.
pub(crate) fn attempts_of(suite: &Suite, repeat: u32) -> Vec<(usize, EvalTask, u32)> {
    let mut all = Vec::new();
    for r in 0..repeat {
        for (index, task) in suite.tasks.iter().enumerate() {
            all.push((index, task.clone(), r));
        }
    }
    all
}

/// Makes the attempt's directory and runs the task's setup in it.
async fn prepare(task: &EvalTask, dir: &Path) -> Result<PathBuf, String> {
    match &task.cwd {
        Some(src) => {
            crate::workdir::prepare(src, dir)
                .await
                .map_err(|err| format!("its directory could not be prepared: {err}"))?;
        }
        None => {
            if dir.exists() {
                tokio::fs::remove_dir_all(dir)
                    .await
                    .map_err(|err| format!("{}: {err}", dir.display()))?;
            }
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|err| format!("{}: {err}", dir.display()))?;
        }
    }
    if let Some(setup) = &task.setup {
        let output = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(setup)
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .map_err(|err| format!("its setup could not run: {err}"))?;
        if !output.status.success() {
            return Err(format!(
                "its setup failed ({}): {}",
                output.status,
                herald_protocol::one_line(&String::from_utf8_lossy(&output.stderr))
            ));
        }
    }
    // The agent and the checks see the same path.
    dir.canonicalize()
        .map_err(|err| format!("{}: {err}", dir.display()))
}

/// What running an attempt on some machine came to, before judging.
pub(crate) struct Ran {
    pub result: ItemResult,
    pub trajectory: Option<crate::Trajectory>,
    /// The outcomes of the deterministic checks, in the suite's order.
    pub graded: Vec<CheckOutcome>,
    /// The directory it worked in (removed unless kept).
    pub workdir: String,
}

/// Prepares the attempt's directory, runs the agent in it, grades the
/// deterministic checks there (the ones that look at files or run
/// commands need it), and removes the directory unless `keep`.
pub(crate) async fn run_and_grade(
    runner: &ItemRunner,
    task: &EvalTask,
    item: &Task,
    dir: PathBuf,
    keep: bool,
    cancel: &CancellationToken,
) -> Ran {
    let workdir = match prepare(task, &dir).await {
        Ok(workdir) => workdir,
        Err(error) => {
            let result = ItemResult {
                id: item.id.clone(),
                hash: item.hash.clone(),
                status: ItemStatus::Failed,
                final_answer: None,
                output: None,
                repaired: false,
                tokens: Default::default(),
                cost_usd: None,
                requests: 0,
                duration_ms: 0,
                tool_sequence: Vec::new(),
                tool_stats: Default::default(),
                session_id: None,
                model: item.model.clone(),
                toolsets: item.toolsets.clone(),
                cwd: Some(dir.display().to_string()),
                error: Some(error),
                worker: None,
                checks: Vec::new(),
            };
            if !keep {
                crate::workdir::cleanup(task.cwd.as_deref(), &dir).await;
            }
            return Ran {
                result,
                trajectory: None,
                graded: Vec::new(),
                workdir: dir.display().to_string(),
            };
        }
    };
    let (result, trajectory) = runner.run_in(item, Some(workdir.clone()), cancel).await;
    let mut graded = Vec::with_capacity(task.checks.len());
    for check in &task.checks {
        if let Some(outcome) = grade(check, &result, &workdir).await {
            graded.push(outcome);
        }
    }
    if !keep {
        crate::workdir::cleanup(task.cwd.as_deref(), &workdir).await;
    }
    Ran {
        result,
        trajectory,
        graded,
        workdir: workdir.display().to_string(),
    }
}

/// The outcomes of every check of `task` in the suite's order: the
/// deterministic ones `graded` already (wherever the attempt ran), the
/// judged ones asked of `judge` now.
pub(crate) async fn judge_rest(
    judge: Option<&Judge>,
    task: &EvalTask,
    result: &ItemResult,
    graded: Vec<CheckOutcome>,
    cancel: &CancellationToken,
) -> Vec<CheckOutcome> {
    let mut graded = graded.into_iter();
    let mut checks: Vec<CheckOutcome> = Vec::with_capacity(task.checks.len());
    for check in &task.checks {
        let Check::Judge { rubric, pass_score } = check else {
            if let Some(outcome) = graded.next() {
                checks.push(outcome);
            }
            continue;
        };
        let threshold = pass_score.unwrap_or(0.5);
        let outcome = match judge {
            None => CheckOutcome {
                kind: check.kind().to_owned(),
                what: check.describe(),
                passed: false,
                detail: Some("no judge model".to_owned()),
                score: None,
                cached: false,
            },
            Some(judge) => match judge.judge(rubric, &task.prompt, result, cancel).await {
                Ok((verdict, cached)) => CheckOutcome {
                    kind: check.kind().to_owned(),
                    what: check.describe(),
                    passed: verdict.score >= threshold,
                    detail: Some(verdict.reasoning),
                    score: Some(verdict.score),
                    cached,
                },
                Err(error) => CheckOutcome {
                    kind: check.kind().to_owned(),
                    what: check.describe(),
                    passed: false,
                    detail: Some(error),
                    score: None,
                    cached: false,
                },
            },
        };
        checks.push(outcome);
    }
    checks
}

/// An attempt graded: passed when its turn completed and every check passed.
pub(crate) fn assemble(
    task: &EvalTask,
    repeat: u32,
    result: ItemResult,
    checks: Vec<CheckOutcome>,
    workdir: String,
) -> Attempt {
    let passed = result.status == ItemStatus::Completed && checks.iter().all(|c| c.passed);
    Attempt {
        task_id: task.id.clone(),
        repeat,
        passed,
        checks,
        result,
        workdir,
    }
}

/// One attempt to run: which task, which repeat, where.
struct Planned {
    task: EvalTask,
    item: Task,
    repeat: u32,
    dir: PathBuf,
    keep: bool,
}

/// One attempt on this machine, start to grade.
async fn attempt(
    runner: Arc<ItemRunner>,
    judge: Option<Arc<Judge>>,
    planned: Planned,
    cancel: CancellationToken,
) -> (Attempt, Option<crate::Trajectory>) {
    let Planned {
        task,
        item,
        repeat,
        dir,
        keep,
    } = planned;
    let ran = run_and_grade(&runner, &task, &item, dir, keep, &cancel).await;
    let checks = judge_rest(judge.as_deref(), &task, &ran.result, ran.graded, &cancel).await;
    (
        assemble(&task, repeat, ran.result, checks, ran.workdir),
        ran.trajectory,
    )
}

/// Refuses a suite with judged checks and no judge.
pub(crate) fn check_judge(suite: &Suite, options: &EvalOptions) -> Result<(), BatchError> {
    let has_judge_checks = suite
        .tasks
        .iter()
        .any(|t| t.checks.iter().any(|c| matches!(c, Check::Judge { .. })));
    if has_judge_checks && options.judge.is_none() {
        return Err(BatchError::Invalid(
            "the suite has judge checks but no judge model; pass --judge-model NAME".to_owned(),
        ));
    }
    Ok(())
}

/// Runs `suite` into `out` and writes its reports.
pub async fn run_eval(
    runner: Arc<ItemRunner>,
    suite: &Suite,
    out: &OutDir,
    options: &EvalOptions,
    progress: &mut Progress,
    cancel: &CancellationToken,
) -> Result<Report, BatchError> {
    check_judge(suite, options)?;
    out.create()?;
    let mut queue = attempts_of(suite, options.repeat).into_iter();
    let mut running = JoinSet::new();
    let mut attempts = Vec::new();
    loop {
        while running.len() < options.concurrency.max(1) && !cancel.is_cancelled() {
            let Some((index, task, repeat)) = queue.next() else {
                break;
            };
            let item = item(index, &task, repeat);
            let dir = out.work_root().join(format!("{}-{repeat}", safe(&task.id)));
            progress.started();
            running.spawn(attempt(
                Arc::clone(&runner),
                options.judge.clone(),
                Planned {
                    task,
                    item,
                    repeat,
                    dir,
                    keep: options.keep_workdirs,
                },
                cancel.clone(),
            ));
        }
        let Some(joined) = running.join_next().await else {
            break;
        };
        let (attempt, trajectory) = joined
            .map_err(|err| BatchError::Invalid(format!("an attempt's task stopped: {err}")))?;
        progress.finished(&attempt.result);
        if let Some(trajectory) = &trajectory {
            out.write_trajectory(trajectory)?;
        }
        out.append(&attempt.result)?;
        attempts.push(attempt);
    }
    progress.finish();
    write_reports(suite, out, options, attempts)
}

/// Computes the metrics of `attempts` and writes report.{json,md,html}.
pub(crate) fn write_reports(
    suite: &Suite,
    out: &OutDir,
    options: &EvalOptions,
    mut attempts: Vec<Attempt>,
) -> Result<Report, BatchError> {
    attempts.sort_by(|a, b| (a.repeat, &a.task_id).cmp(&(b.repeat, &b.task_id)));
    let order: Vec<String> = suite.tasks.iter().map(|t| t.id.clone()).collect();
    let (metrics, tasks) = compute(&order, &attempts, options.repeat);
    let report = Report {
        suite: suite.name.clone().unwrap_or_else(|| "suite".to_owned()),
        model: options.model.clone(),
        judge_model: options.judge.as_ref().map(|j| j.model().to_owned()),
        created_at: now(),
        herald_version: options.herald_version.clone(),
        metrics,
        tasks,
        attempts,
    };
    let json = serde_json::to_vec_pretty(&report)
        .map_err(|err| BatchError::Invalid(format!("cannot encode the report: {err}")))?;
    write_atomic(&out.dir.join("report.json"), &json)?;
    write_atomic(&out.dir.join("report.md"), markdown(&report).as_bytes())?;
    write_atomic(&out.dir.join("report.html"), html(&report).as_bytes())?;
    Ok(report)
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
