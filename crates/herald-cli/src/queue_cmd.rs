//! The PostgreSQL queue on the command line: enqueueing (`batch run
//! --queue`), `herald worker`, `batch status`, `batch cancel` and
//! `batch fetch`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use herald_batch::queue::Queue;
use herald_batch::queue::worker::{WorkerOptions, run_worker};
use herald_batch::results::OutDir;
use herald_batch::{ItemRunner, Task};

use crate::args::{CommonArgs, ServiceArgs};
use crate::{CliError, Exit, signals};

#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// The queue: a PostgreSQL connection string (postgres://…; TLS unless
    /// sslmode=disable).
    #[arg(long, value_name = "URL")]
    pub queue: String,
    /// Items run at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub concurrency: u32,
    /// Only items of this job.
    #[arg(long)]
    pub job: Option<String>,
    /// Seconds a claim lasts without a heartbeat (heartbeats come every
    /// third of it); a worker silent this long is presumed dead and its
    /// items are run again elsewhere.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub lease_seconds: u64,
    /// Exit when nothing is left to run instead of waiting for more.
    #[arg(long)]
    pub drain: bool,
    /// Directory for the private copies of items with a `cwd`
    /// [default: $HERALD_HOME/batch-work].
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<std::path::PathBuf>,
    /// Keep each item's working copy after it finished (they are removed
    /// by default, git worktrees pruned).
    #[arg(long)]
    pub keep_workdirs: bool,
    #[command(flatten)]
    pub service: ServiceArgs,
}

async fn open(url: &str) -> Result<Queue, CliError> {
    Queue::open(url).await.map_err(CliError::failed)
}

/// `batch run --queue`: adds the items; items already in the job keep
/// their state (a re-run of an edited file adds only what changed).
pub(crate) async fn enqueue(
    url: &str,
    job: &str,
    tasks: &[Task],
    json: bool,
) -> Result<Exit, CliError> {
    let queue = open(url).await?;
    let added = queue.enqueue(job, tasks).await.map_err(CliError::failed)?;
    let kept = tasks.len() as u64 - added;
    if json {
        crate::sessions_cmd::print_json(
            &serde_json::json!({"job": job, "added": added, "kept": kept}),
        )?;
    } else {
        eprintln!(
            "job {job}: {added} items queued, {kept} already in the queue; run them with `herald worker --queue URL`"
        );
    }
    Ok(Exit::Completed)
}

pub(crate) async fn worker(common: &CommonArgs, args: WorkerArgs) -> Result<Exit, CliError> {
    let setup = crate::batch_cmd::runner_setup(common)?;
    let work = args
        .work_dir
        .clone()
        .unwrap_or_else(|| setup.home.join("batch-work"));
    let queue = Arc::new(open(&args.queue).await?);
    let runner = Arc::new(ItemRunner::new(setup, work).keep_workdirs(args.keep_workdirs));
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = signals::stop_on_signals(cancel.clone());
    let id = format!(
        "{}-{}-{:04x}",
        std::env::var("HOSTNAME").unwrap_or_else(|_| "host".to_owned()),
        std::process::id(),
        fastrand_u16()
    );
    eprintln!(
        "worker {id}: claiming items (concurrency {})",
        args.concurrency
    );
    let options = WorkerOptions {
        id: id.clone(),
        concurrency: args.concurrency as usize,
        job: args.job.clone(),
        lease: Duration::from_secs(args.lease_seconds),
        poll: Duration::from_millis(500),
        drain: args.drain,
    };
    let report = run_worker(queue, runner, options, cancel).await;
    let peak = peak_rss_kib().map_or_else(String::new, |k| format!(", peak RSS {} MiB", k / 1024));
    eprintln!(
        "worker {id}: {} items done, {} results rejected, {} PostgreSQL round trips{peak}",
        report.completed, report.rejected, report.round_trips
    );
    // A stop signal is how a worker is shut down: its items went back to
    // the queue, nothing is lost, so that is a success.
    if let Some(signal) = stop.received() {
        eprintln!(
            "worker {id}: stopped by signal {signal}; its unfinished items went back to the queue"
        );
    }
    Ok(Exit::Completed)
}

/// This process's peak resident set (`VmHWM`), on Linux.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn fastrand_u16() -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    (nanos ^ std::process::id()) as u16
}

pub(crate) async fn status(url: &str, job: Option<&str>, json: bool) -> Result<Exit, CliError> {
    let queue = open(url).await?;
    let (jobs, workers) = queue.status(job).await.map_err(CliError::failed)?;
    if let Some(job) = job
        && jobs.is_empty()
    {
        return Err(CliError::usage(anyhow::anyhow!(
            "no job `{job}` in the queue; `herald batch status --queue URL` lists them"
        )));
    }
    if json {
        crate::sessions_cmd::print_json(&serde_json::json!({"jobs": jobs, "workers": workers}))?;
        return Ok(Exit::Completed);
    }
    println!("job                      state      queued  running  done  failed  cancelled  cost");
    for j in &jobs {
        println!(
            "{:<24} {:<10} {:>6} {:>8} {:>5} {:>7} {:>10}  ${:.4}",
            j.job, j.state, j.queued, j.running, j.done, j.failed, j.cancelled, j.cost_usd
        );
    }
    println!("\nworker                          running  done  failed  rejected  last seen");
    for w in &workers {
        println!(
            "{:<31} {:>7} {:>5} {:>7} {:>9}  {:.0}s ago",
            w.id, w.running, w.done, w.failed, w.rejected, w.last_seen_secs
        );
    }
    Ok(Exit::Completed)
}

pub(crate) async fn cancel(url: &str, job: &str) -> Result<Exit, CliError> {
    let queue = open(url).await?;
    match queue.cancel(job).await.map_err(CliError::failed)? {
        Some(n) => {
            eprintln!("job {job} cancelled: {n} unfinished items stopped");
            Ok(Exit::Completed)
        }
        None => Err(CliError::usage(anyhow::anyhow!(
            "no job `{job}` in the queue; `herald batch status --queue URL` lists them"
        ))),
    }
}

pub(crate) async fn fetch(url: &str, job: &str, out: &Path) -> Result<Exit, CliError> {
    let queue = open(url).await?;
    let items = queue.results(job).await.map_err(CliError::failed)?;
    let out = OutDir::new(out);
    out.create().map_err(CliError::failed)?;
    let mut text = Vec::new();
    for (result, trajectory) in &items {
        if let Some(trajectory) = trajectory {
            out.write_trajectory(trajectory).map_err(CliError::failed)?;
        }
        serde_json::to_writer(&mut text, result).map_err(CliError::failed)?;
        text.push(b'\n');
    }
    herald_batch::results::write_atomic(&out.results_path(), &text).map_err(CliError::failed)?;
    eprintln!(
        "{} results of job {job} written to {}",
        items.len(),
        out.results_path().display()
    );
    Ok(Exit::Completed)
}
