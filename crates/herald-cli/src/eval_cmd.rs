//! `herald eval`: run a suite (checks, judge, repeats, reports) and
//! compare two runs. A thin front end over `herald_batch::eval`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use herald_batch::eval::compare::{compare, load_report, markdown as compare_markdown};
use herald_batch::eval::judge::Judge;
use herald_batch::eval::load_suite;
use herald_batch::eval::queued::{QueuedRun, run_eval_queued};
use herald_batch::eval::run::{EvalOptions, run_eval};
use herald_batch::local::{Existing, prepare_out};
use herald_batch::progress::Progress;
use herald_batch::queue::Queue;
use herald_batch::results::OutDir;
use herald_batch::{ItemRunner, Task};

use crate::args::{CommonArgs, ServiceArgs};
use crate::{CliError, Exit, signals};

#[derive(Debug, Subcommand)]
pub(crate) enum EvalAction {
    /// Run a suite (YAML, or JSONL one task a line): each task in a fresh
    /// directory, graded by its checks; writes OUT/report.{json,md,html}.
    Run(Box<EvalRunArgs>),
    /// Compare two eval runs (their output directories or report.json):
    /// suite metrics, per-task differences and a significance note.
    Compare {
        /// The first run (A): its output directory or report.json.
        a: PathBuf,
        /// The second run (B).
        b: PathBuf,
        /// Print the comparison as JSON instead of markdown.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct EvalRunArgs {
    /// The suite file.
    pub suite: PathBuf,
    /// Output directory [default: SUITE without its extension, plus `.eval`].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Attempts per task (pass@k and variance are over them).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Attempts run at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub concurrency: u32,
    /// The model that grades `judge` checks [default: the agent's model].
    #[arg(long, value_name = "NAME")]
    pub judge_model: Option<String>,
    /// Delete the results in OUT first.
    #[arg(long)]
    pub overwrite: bool,
    /// Print report.json on stdout instead of report.md.
    #[arg(long)]
    pub json: bool,
    /// Keep each attempt's directory after it is graded (they are removed
    /// by default).
    #[arg(long)]
    pub keep_workdirs: bool,
    /// Spread the attempts over `herald worker`s of this PostgreSQL queue
    /// (postgres://…) and wait for their results; the report is the same.
    #[arg(long, value_name = "URL")]
    pub queue: Option<String>,
    /// The job's name in the queue [default: the suite's name and the
    /// time]; naming a job again collects its finished attempts.
    #[arg(long, requires = "queue")]
    pub job: Option<String>,
    #[command(flatten)]
    pub service: ServiceArgs,
}

pub(crate) async fn eval(common: &CommonArgs, action: EvalAction) -> Result<Exit, CliError> {
    match action {
        EvalAction::Run(args) => run(common, *args).await,
        EvalAction::Compare { a, b, json } => {
            let ra = load_report(&a).map_err(CliError::usage)?;
            let rb = load_report(&b).map_err(CliError::usage)?;
            let c = compare(&ra, &a.display().to_string(), &rb, &b.display().to_string());
            if json {
                crate::sessions_cmd::print_json(&c)?;
            } else {
                print!("{}", compare_markdown(&c));
            }
            Ok(Exit::Completed)
        }
    }
}

async fn run(common: &CommonArgs, args: EvalRunArgs) -> Result<Exit, CliError> {
    let suite = load_suite(&args.suite).map_err(CliError::usage)?;
    // An unreachable queue is refused before anything is written.
    let queue = match &args.queue {
        Some(url) => Some(Queue::open(url).await.map_err(CliError::failed)?),
        None => None,
    };
    let setup = crate::batch_cmd::runner_setup(common)?;
    let home = setup.home.clone();
    let out = OutDir::new(
        args.out
            .clone()
            .unwrap_or_else(|| crate::batch_cmd::default_out(&args.suite, "eval")),
    );
    let existing = if args.overwrite {
        Existing::Overwrite
    } else {
        Existing::Refuse
    };
    let runner =
        Arc::new(ItemRunner::new(setup, out.work_root()).keep_workdirs(args.keep_workdirs));
    // The agent's default settings, and the judge's.
    let probe = Task {
        index: 0,
        id: String::new(),
        prompt: String::new(),
        cwd: None,
        model: None,
        toolsets: None,
        budget_usd: None,
        max_turns: None,
        output_schema: None,
        hash: String::new(),
        eval: None,
    };
    let agent_settings = runner
        .settings(&probe, None)
        .map_err(|e| CliError::usage(anyhow::anyhow!(e)))?;
    // `--judge-model`, else the `[routing]` rule for role `judge`.
    let judge_model = match &args.judge_model {
        Some(model) => Some(model.clone()),
        None => herald_core::routing::side_route(
            &agent_settings,
            herald_core::routing::Role::Judge,
            &agent_settings.model,
        )
        .map_err(|e| CliError::usage(anyhow::anyhow!(e)))?
        .map(|route| route.model),
    };
    let judge_settings = runner
        .settings(
            &Task {
                model: judge_model,
                ..probe
            },
            None,
        )
        .map_err(|e| CliError::usage(anyhow::anyhow!(e)))?;
    let judge_client = runner
        .client(&judge_settings)
        .map_err(|e| CliError::usage(anyhow::anyhow!("the judge model cannot be used: {e}")))?;
    let judge = Arc::new(Judge::new(
        judge_client,
        home.join("eval").join("judge-cache.jsonl"),
    ));
    prepare_out(&out, existing).map_err(CliError::usage)?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = signals::stop_on_signals(cancel.clone());
    let total = suite.tasks.len() * args.repeat as usize;
    let mut progress = Progress::new(total, std::io::stderr().is_terminal(), args.json);
    let options = EvalOptions {
        repeat: args.repeat,
        concurrency: args.concurrency as usize,
        judge: Some(judge),
        model: agent_settings.model.clone(),
        herald_version: env!("CARGO_PKG_VERSION").to_owned(),
        keep_workdirs: args.keep_workdirs,
    };
    let report = match &queue {
        None => run_eval(runner, &suite, &out, &options, &mut progress, &cancel)
            .await
            .map_err(CliError::failed)?,
        Some(queue) => {
            let job = args.job.clone().unwrap_or_else(|| default_job(&suite));
            if !args.json {
                eprintln!(
                    "job {job}: {total} attempts queued; run them with `herald worker --queue URL`"
                );
            }
            let queued = QueuedRun {
                queue,
                job: &job,
                poll: std::time::Duration::from_millis(250),
            };
            run_eval_queued(&queued, &suite, &out, &options, &mut progress, &cancel)
                .await
                .map_err(CliError::failed)?
        }
    };
    if args.json {
        crate::sessions_cmd::print_json(&report)?;
    } else {
        print!("{}", herald_batch::eval::report::markdown(&report));
        eprintln!("reports: {}/report.{{md,json,html}}", out.dir.display());
    }
    Ok(if stop.received().is_some() {
        stop.exit()
    } else {
        Exit::Completed
    })
}

/// A job name of its own for a queued run: the suite's name and the time.
fn default_job(suite: &herald_batch::eval::Suite) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("eval-{}-{secs}", suite.name.as_deref().unwrap_or("suite"))
}
