//! `herald batch`: run a task file (one headless session per item, on the
//! embedded store), export the trajectories for training. A thin front
//! end over `herald-batch`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand, ValueEnum};
use herald_batch::distribution::Distribution;
use herald_batch::export::{ExportFormat, export};
use herald_batch::local::{Existing, Summary, prepare_out, run_local};
use herald_batch::progress::Progress;
use herald_batch::results::OutDir;
use herald_batch::{ItemRunner, RunnerSetup, load_tasks};

use crate::args::{CommonArgs, ServiceArgs};
use crate::{CliError, Exit, setup, signals};

#[derive(Debug, Subcommand)]
pub(crate) enum BatchAction {
    /// Run every item of a task file (JSONL or CSV) as its own headless
    /// session; results go to OUT/results.jsonl, trajectories to
    /// OUT/trajectories/.
    Run(Box<BatchRunArgs>),
    /// Write the trajectories of a finished batch as training data (JSONL
    /// on stdout or --output); items with no final answer or with a call
    /// to a tool that does not exist are left out and counted.
    Export(ExportArgs),
    /// Per-job counts and per-worker progress of a PostgreSQL queue.
    Status {
        /// The queue's PostgreSQL connection string.
        #[arg(long, value_name = "URL")]
        queue: String,
        /// Only this job.
        #[arg(long)]
        job: Option<String>,
        /// Print the counts as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Cancel a job of a PostgreSQL queue: queued items are dropped,
    /// running ones stopped at their next heartbeat.
    Cancel {
        /// The queue's PostgreSQL connection string.
        #[arg(long, value_name = "URL")]
        queue: String,
        /// The job to cancel.
        #[arg(long)]
        job: String,
    },
    /// Copy a queued job's finished results and trajectories into OUT (a
    /// batch output directory, for `batch export` and reports).
    Fetch {
        /// The queue's PostgreSQL connection string.
        #[arg(long, value_name = "URL")]
        queue: String,
        /// The job whose results to copy.
        #[arg(long)]
        job: String,
        /// The directory to write results.jsonl and trajectories/ into.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

#[derive(Debug, Args)]
pub(crate) struct BatchRunArgs {
    /// The task file: `.csv`, or JSONL (one prompt string or object a line).
    pub tasks: PathBuf,
    /// Output directory [default: TASKS without its extension, plus `.batch`].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Items run at once (each backs off on 429 and Retry-After through
    /// the endpoint's shared rate-limit governor).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub concurrency: u32,
    /// Keep the completed results in OUT and run only the items whose
    /// content changed or that did not complete.
    #[arg(long, conflicts_with = "overwrite")]
    pub resume: bool,
    /// Delete the results in OUT and run everything again.
    #[arg(long)]
    pub overwrite: bool,
    /// JSON or YAML mapping of toolset to probability: items without their
    /// own `toolsets` draw theirs from it (at least one on).
    #[arg(long, value_name = "FILE")]
    pub toolset_distribution: Option<PathBuf>,
    /// Print the summary as JSON on stdout (and no progress).
    #[arg(long)]
    pub json: bool,
    /// Enqueue the items in this PostgreSQL queue (postgres://…) instead
    /// of running them; `herald worker --queue` runs them.
    #[arg(long, value_name = "URL", conflicts_with_all = ["resume", "overwrite"])]
    pub queue: Option<String>,
    /// The job's name in the queue [default: the task file's name].
    #[arg(long, requires = "queue")]
    pub job: Option<String>,
    /// Keep each item's private copy of its `cwd` after it finished (they
    /// are removed by default, git worktrees pruned).
    #[arg(long)]
    pub keep_workdirs: bool,
    #[command(flatten)]
    pub service: ServiceArgs,
}

/// A trajectory format.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum FormatArg {
    /// `{"conversations": [{"from": "system|human|gpt|tool", "value": …}]}`.
    Sharegpt,
    /// `{"messages": [...]}` in the OpenAI chat format, tool calls included.
    Openai,
}

#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The batch's output directory (or an eval run's directory).
    pub out: PathBuf,
    /// The trajectory format: sharegpt or openai.
    #[arg(long, value_enum)]
    pub format: FormatArg,
    /// Write here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub(crate) async fn batch(common: &CommonArgs, action: BatchAction) -> Result<Exit, CliError> {
    match action {
        BatchAction::Run(args) => run(common, *args).await,
        BatchAction::Export(args) => export_cmd(&args),
        BatchAction::Status { queue, job, json } => {
            crate::queue_cmd::status(&queue, job.as_deref(), json).await
        }
        BatchAction::Cancel { queue, job } => crate::queue_cmd::cancel(&queue, &job).await,
        BatchAction::Fetch { queue, job, out } => crate::queue_cmd::fetch(&queue, &job, &out).await,
    }
}

/// The default output directory of a task file.
pub(crate) fn default_out(tasks: &Path, suffix: &str) -> PathBuf {
    let stem = tasks
        .file_stem()
        .map_or_else(|| "tasks".into(), |s| s.to_string_lossy().into_owned());
    tasks
        .parent()
        .unwrap_or(Path::new("."))
        .join(format!("{stem}.{suffix}"))
}

/// What every item of a run starts from, checked once: a configuration
/// that cannot reach a model is a usage error before anything is written.
pub(crate) fn runner_setup(common: &CommonArgs) -> Result<RunnerSetup, CliError> {
    // Resolving once checks the configuration and the credentials.
    let settings = setup::settings(common)?;
    let env = setup::environment();
    let (home, config_path) = setup::config_location(common, &env);
    let config = crate::config_cmd::load(&config_path)?;
    let store = setup::open_store(&settings.home)?;
    let mut base = setup::overrides(common);
    base.cwd = Some(settings.cwd.clone());
    Ok(RunnerSetup {
        config,
        config_path,
        home,
        env,
        base,
        permission_mode: Some(settings.permissions.mode.clone()),
        store,
    })
}

async fn run(common: &CommonArgs, args: BatchRunArgs) -> Result<Exit, CliError> {
    let distribution = args
        .toolset_distribution
        .as_deref()
        .map(Distribution::load)
        .transpose()
        .map_err(CliError::usage)?;
    let tasks = load_tasks(&args.tasks, distribution.as_ref()).map_err(CliError::usage)?;
    if let Some(queue) = &args.queue {
        let job = args.job.clone().unwrap_or_else(|| {
            args.tasks
                .file_stem()
                .map_or_else(|| "batch".to_owned(), |s| s.to_string_lossy().into_owned())
        });
        return crate::queue_cmd::enqueue(queue, &job, &tasks, args.json).await;
    }
    let setup = runner_setup(common)?;
    let out = OutDir::new(
        args.out
            .clone()
            .unwrap_or_else(|| default_out(&args.tasks, "batch")),
    );
    let existing = match (args.resume, args.overwrite) {
        (true, _) => Existing::Resume,
        (_, true) => Existing::Overwrite,
        _ => Existing::Refuse,
    };
    let done = prepare_out(&out, existing).map_err(CliError::usage)?;
    let runner =
        Arc::new(ItemRunner::new(setup, out.work_root()).keep_workdirs(args.keep_workdirs));
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = signals::stop_on_signals(cancel.clone());
    let todo = tasks.iter().filter(|t| !done.contains(&t.hash)).count();
    let mut progress = Progress::new(todo, std::io::stderr().is_terminal(), args.json);
    let (summary, _) = run_local(
        runner,
        tasks,
        &done,
        &out,
        args.concurrency as usize,
        &mut progress,
        &cancel,
    )
    .await
    .map_err(CliError::failed)?;
    print_summary(&summary, &out, args.json)?;
    Ok(if stop.received().is_some() {
        stop.exit()
    } else if summary.failed > 0 {
        Exit::Failed
    } else {
        Exit::Completed
    })
}

fn print_summary(summary: &Summary, out: &OutDir, json: bool) -> Result<(), CliError> {
    if json {
        return crate::sessions_cmd::print_json(&serde_json::json!({
            "total": summary.total,
            "skipped": summary.skipped,
            "ran": summary.ran,
            "completed": summary.completed,
            "failed": summary.failed,
            "cost_usd": summary.cost_usd,
            "tokens": summary.tokens,
            "wall_ms": summary.wall_ms,
            "results": out.results_path(),
        }));
    }
    let secs = summary.wall_ms as f64 / 1000.0;
    let rate = if secs > 0.0 {
        summary.ran as f64 / secs
    } else {
        0.0
    };
    eprintln!(
        "batch: {} items: {} run ({} completed, {} failed), {} skipped as done; {:.1}s ({rate:.2} items/s), {} tokens, ${:.4}",
        summary.total,
        summary.ran,
        summary.completed,
        summary.failed,
        summary.skipped,
        secs,
        summary.tokens,
        summary.cost_usd
    );
    eprintln!("results: {}", out.results_path().display());
    Ok(())
}

fn export_cmd(args: &ExportArgs) -> Result<Exit, CliError> {
    let out = OutDir::new(&args.out);
    if !out.results_path().is_file() {
        return Err(CliError::usage(anyhow::anyhow!(
            "{} has no results.jsonl; pass the output directory of `herald batch run`",
            args.out.display()
        )));
    }
    let format = match args.format {
        FormatArg::Sharegpt => ExportFormat::ShareGpt,
        FormatArg::Openai => ExportFormat::OpenAi,
    };
    let mut buffer = Vec::new();
    let counts = export(&out, format, &mut buffer).map_err(CliError::failed)?;
    match &args.output {
        Some(path) => {
            herald_batch::results::write_atomic(path, &buffer).map_err(CliError::failed)?
        }
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(&buffer)
                .map_err(|err| CliError::failed(anyhow::anyhow!("cannot write stdout: {err}")))?;
        }
    }
    eprintln!(
        "exported {} trajectories; left out {} without a final answer, {} with unknown tool names, {} not completed, {} without a trajectory",
        counts.exported,
        counts.no_final_answer,
        counts.unknown_tool,
        counts.not_completed,
        counts.missing
    );
    Ok(Exit::Completed)
}
