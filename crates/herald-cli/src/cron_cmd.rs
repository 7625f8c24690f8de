//! `herald cron …` and `herald daemon`: argument handling and rendering;
//! `herald_cron` defines jobs, keeps the ledger's rules and runs them.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use herald_core::StoreHandle;
use herald_cron::PermissionMode as Mode;
use herald_cron::runner::RunContext;
use herald_cron::{JobRequest, Notice, Schedule, SchedulerOptions, describe_time, time_zone};
use herald_protocol::{CatchUp, JobRunState, Overlap, RunTrigger, one_line};
use herald_store::{CronJob, CronRun, ProcessIdentity};
use serde_json::json;

use crate::args::CommonArgs;
use crate::sessions_cmd::{call, print_json};
use crate::{CliError, Exit, setup};

/// What a job is: the options of `cron add` (all optional for `edit`).
#[derive(Debug, Args, Default)]
pub(crate) struct JobOptions {
    /// When it runs: a 5-field cron expression ("0 9 * * 1-5"), "every
    /// 15m", "at 2026-12-01 09:00" or "in 30m".
    #[arg(long, value_name = "SPEC")]
    schedule: Option<String>,
    /// The time zone the schedule is read in (IANA name; default: this
    /// machine's).
    #[arg(long, value_name = "ZONE")]
    tz: Option<String>,
    /// The prompt each run sends.
    #[arg(long, value_name = "TEXT", conflicts_with = "prompt_file")]
    prompt: Option<String>,
    /// Read the prompt from a file.
    #[arg(long, value_name = "FILE")]
    prompt_file: Option<PathBuf>,
    /// The directory it runs in (default: the current one).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The model (default: the configured one).
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// Toolsets, comma-separated (default: the configured ones).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    toolsets: Option<Vec<String>>,
    /// Its permission mode: read-only, workspace-write or full-access, no
    /// more than yours (default: yours).
    #[arg(long, value_name = "MODE")]
    mode: Option<String>,
    /// Stop a run that spends more than this many US dollars.
    #[arg(long, value_name = "USD")]
    budget_usd: Option<f64>,
    /// Skills whose instructions come with the prompt, comma-separated.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    skills: Option<Vec<String>>,
    /// Each run continues the job's session (default: a new session each run).
    #[arg(long)]
    resume_session: bool,
    /// Fire times missed while no scheduler ran: run once, or skip them.
    #[arg(long, value_name = "once|skip", value_parser = parse_catch_up)]
    catch_up: Option<CatchUp>,
    /// A fire time while the previous run goes on: skip it, or queue it.
    #[arg(long, value_name = "skip|queue", value_parser = parse_overlap)]
    overlap: Option<Overlap>,
    /// POST each run's result (JSON) to this URL.
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    /// The variable holding the secret the webhook's body is signed with
    /// (HMAC-SHA256, header X-Herald-Signature-256).
    #[arg(long, value_name = "VAR")]
    webhook_secret_env: Option<String>,
    /// Show each run's result as a desktop notification.
    #[arg(long)]
    notify: bool,
}

fn parse_catch_up(text: &str) -> Result<CatchUp, String> {
    CatchUp::parse(text).ok_or_else(|| format!("'{text}' is not once or skip"))
}

fn parse_overlap(text: &str) -> Result<Overlap, String> {
    Overlap::parse(text).ok_or_else(|| format!("'{text}' is not skip or queue"))
}

/// `herald cron …`.
#[derive(Debug, Subcommand)]
pub(crate) enum CronAction {
    /// Add a job; prints its next five fire times.
    Add {
        /// Its name: letters, digits, `-` and `_`.
        name: String,
        #[command(flatten)]
        options: JobOptions,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Every job with its schedule, next fire time and last run.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One job, with its latest runs.
    Show {
        /// The job's name.
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Change a job: only the options given change.
    Edit {
        /// The job's name.
        name: String,
        #[command(flatten)]
        options: JobOptions,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Stop a job from firing until `resume`.
    Pause {
        /// The job's name.
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Let a paused job fire again (from its next fire time after now).
    Resume {
        /// The job's name.
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run a job once now, in this process, and print how it ended.
    RunNow {
        /// The job's name.
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete a job and its ledger.
    Remove {
        /// The job's name.
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The ledger of a job's runs, newest first.
    Runs {
        /// The job's name.
        name: String,
        /// How many runs.
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `herald daemon`.
#[derive(Debug, Args)]
pub(crate) struct DaemonArgs {
    #[command(subcommand)]
    action: Option<DaemonAction>,
    /// Runs at once across all jobs.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=1000))]
    max_parallel_jobs: u16,
}

#[derive(Debug, Subcommand)]
enum DaemonAction {
    /// Write a systemd user unit (a launchd agent on macOS) that keeps
    /// `herald daemon` running, and say how to enable it.
    Install,
}

/// What the commands share: the store, the configuration and the clock.
pub(crate) struct Context {
    pub(crate) store: StoreHandle,
    pub(crate) run: RunContext,
    pub(crate) clock: Arc<dyn herald_cron::Clock>,
    /// The mode the person running the command has.
    mode: Mode,
    /// `--cwd` before the subcommand, the directory a job runs in when
    /// `cron add` gets none.
    pub(crate) cwd: Option<PathBuf>,
}

pub(crate) fn context(common: &CommonArgs) -> Result<Context, CliError> {
    let env = setup::environment();
    let (home, config_path) = setup::config_location(common, &env);
    let config = if config_path.exists() {
        crate::config_cmd::load(&config_path)?
    } else {
        herald_core::Config::default()
    };
    let mode_text = if common.yolo {
        "full-access".to_owned()
    } else {
        common
            .mode
            .clone()
            .unwrap_or_else(|| config.permissions.mode.clone())
    };
    let mode = mode_text.parse::<Mode>().map_err(CliError::usage)?;
    let store = setup::open_store(&home)?;
    let clock = herald_cron::clock::from_env(&env);
    Ok(Context {
        run: RunContext {
            config,
            config_path,
            home,
            env,
            store: store.clone(),
        },
        store,
        clock,
        mode,
        cwd: common.cwd.clone(),
    })
}

async fn job(store: &StoreHandle, name: &str) -> Result<CronJob, CliError> {
    let lookup = name.to_owned();
    call(store, move |s| s.cron_job(&lookup))
        .await?
        .ok_or_else(|| {
            CliError::usage(anyhow::anyhow!(
                "no job named '{name}'; `herald cron list` shows the jobs"
            ))
        })
}

fn schedule_of(job: &CronJob) -> Result<Schedule, CliError> {
    time_zone(&job.spec.tz)
        .and_then(|tz| Schedule::stored(&job.spec.schedule, tz, job.created_at))
        .map_err(CliError::failed)
}

fn prompt_of(options: &JobOptions) -> Result<Option<String>, CliError> {
    match (&options.prompt, &options.prompt_file) {
        (Some(text), _) => Ok(Some(text.clone())),
        (None, Some(path)) => std::fs::read_to_string(path).map(Some).map_err(|err| {
            CliError::usage(anyhow::anyhow!("cannot read {}: {err}", path.display()))
        }),
        (None, None) => Ok(None),
    }
}

/// `herald cron …`.
pub(crate) async fn cron(common: &CommonArgs, action: CronAction) -> Result<Exit, CliError> {
    let ctx = context(common)?;
    match action {
        CronAction::Add {
            name,
            options,
            json,
        } => add(&ctx, name, options, json).await,
        CronAction::List { json } => list(&ctx, json).await,
        CronAction::Show { name, json } => show(&ctx, &name, json).await,
        CronAction::Edit {
            name,
            options,
            json,
        } => edit(&ctx, &name, options, json).await,
        CronAction::Pause { name, json } => set_paused(&ctx, &name, true, json).await,
        CronAction::Resume { name, json } => set_paused(&ctx, &name, false, json).await,
        CronAction::RunNow { name, json } => run_now(&ctx, &name, json).await,
        CronAction::Remove { name, json } => {
            let lookup = name.clone();
            if !call(&ctx.store, move |s| s.remove_cron_job(&lookup)).await? {
                return Err(CliError::usage(anyhow::anyhow!(
                    "no job named '{name}'; `herald cron list` shows the jobs"
                )));
            }
            if json {
                print_json(&json!({ "removed": name }))?;
            } else {
                println!("removed job {name} and its runs");
            }
            Ok(Exit::Completed)
        }
        CronAction::Runs { name, limit, json } => runs(&ctx, &name, limit, json).await,
    }
}

async fn add(
    ctx: &Context,
    name: String,
    options: JobOptions,
    json: bool,
) -> Result<Exit, CliError> {
    let Some(schedule) = options.schedule.clone() else {
        return Err(CliError::usage(anyhow::anyhow!(
            "a job needs --schedule, such as --schedule \"0 9 * * 1-5\" or --schedule \"every 15m\""
        )));
    };
    let prompt = prompt_of(&options)?.unwrap_or_default();
    let cwd = match options.cwd.as_ref().or(ctx.cwd.as_ref()) {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(CliError::failed)?,
    };
    let request = JobRequest {
        name,
        schedule,
        tz: options.tz.clone(),
        prompt,
        cwd,
        model: options.model.clone(),
        toolsets: options.toolsets.clone(),
        mode: options.mode.clone(),
        budget_usd: options.budget_usd,
        skills: options.skills.clone(),
        resume_session: options.resume_session,
        catch_up: options.catch_up.unwrap_or(CatchUp::Once),
        overlap: options.overlap.unwrap_or(Overlap::Skip),
        webhook_url: options.webhook.clone(),
        webhook_secret_env: options.webhook_secret_env.clone(),
        notify: options.notify,
    };
    let now = ctx.clock.now_ms();
    let (spec, schedule) = herald_cron::define(&request, ctx.mode, now).map_err(CliError::usage)?;
    let upcoming = schedule.upcoming(now, 5);
    let first = upcoming.first().copied();
    let stored = match ctx
        .store
        .call(move |s| s.add_cron_job(&spec, first, now))
        .await
    {
        Ok(Ok(job)) => job,
        Ok(Err(err @ herald_store::StoreError::JobExists(_))) => return Err(CliError::usage(err)),
        Ok(Err(err)) => return Err(CliError::failed(err)),
        Err(err) => return Err(CliError::failed(err)),
    };
    if let Err(reason) = herald_cron::runner::check(&ctx.run, &stored)
        && !json
    {
        eprintln!("herald: warning: as configured now its runs would be blocked: {reason}");
    }
    print_job(&stored, &schedule, &upcoming, json, "added")
}

fn print_job(
    job: &CronJob,
    schedule: &Schedule,
    upcoming: &[i64],
    json: bool,
    verb: &str,
) -> Result<Exit, CliError> {
    if json {
        let mut value = serde_json::to_value(job).map_err(CliError::failed)?;
        value["upcoming"] = json!(upcoming);
        print_json(&value)?;
        return Ok(Exit::Completed);
    }
    println!(
        "{verb} job {}: {} ({}), mode {}, in {}",
        job.spec.name, job.spec.schedule, job.spec.tz, job.spec.mode, job.spec.cwd
    );
    if upcoming.is_empty() {
        println!("it will not fire again");
    } else {
        println!("next fire times:");
        for at in upcoming {
            println!("  {}", schedule.describe(*at));
        }
    }
    Ok(Exit::Completed)
}

async fn list(ctx: &Context, json: bool) -> Result<Exit, CliError> {
    let jobs = call(&ctx.store, |s| s.cron_jobs()).await?;
    if json {
        print_json(&jobs)?;
        return Ok(Exit::Completed);
    }
    if jobs.is_empty() {
        println!("no jobs; add one with `herald cron add NAME --schedule SPEC --prompt TEXT`");
        return Ok(Exit::Completed);
    }
    println!("{:<20} {:<22} {:<30} last run", "name", "schedule", "next");
    for job in &jobs {
        let tz = time_zone(&job.spec.tz).unwrap_or(chrono_tz::Tz::UTC);
        let next = if job.paused {
            "paused".to_owned()
        } else {
            job.next_fire_at
                .map_or_else(|| "—".to_owned(), |at| describe_time(at, tz))
        };
        let last = match (job.last_run_at, job.last_state) {
            (Some(at), Some(state)) => format!("{state} at {}", describe_time(at, tz)),
            _ => "never".to_owned(),
        };
        println!(
            "{:<20} {:<22} {:<30} {last}",
            job.spec.name, job.spec.schedule, next
        );
    }
    Ok(Exit::Completed)
}

async fn show(ctx: &Context, name: &str, json: bool) -> Result<Exit, CliError> {
    let job = job(&ctx.store, name).await?;
    let id = job.id;
    let runs = call(&ctx.store, move |s| s.cron_runs(id, 5)).await?;
    let schedule = schedule_of(&job)?;
    let upcoming = if job.paused {
        Vec::new()
    } else {
        job.next_fire_at
            .map(|first| {
                let mut times = vec![first];
                times.extend(schedule.upcoming(first, 4));
                times
            })
            .unwrap_or_default()
    };
    if json {
        let mut value = serde_json::to_value(&job).map_err(CliError::failed)?;
        value["upcoming"] = json!(upcoming);
        value["runs"] = serde_json::to_value(&runs).map_err(CliError::failed)?;
        print_json(&value)?;
        return Ok(Exit::Completed);
    }
    let spec = &job.spec;
    println!(
        "job {}{}",
        spec.name,
        if job.paused { " (paused)" } else { "" }
    );
    println!("  schedule   {} ({})", spec.schedule, spec.tz);
    println!("  directory  {}", spec.cwd);
    println!("  mode       {}", spec.mode);
    if let Some(model) = &spec.model {
        println!("  model      {model}");
    }
    if let Some(toolsets) = &spec.toolsets {
        println!("  toolsets   {}", toolsets.join(","));
    }
    if let Some(skills) = &spec.skills {
        println!("  skills     {}", skills.join(","));
    }
    if let Some(budget) = spec.budget_usd {
        println!("  budget     ${budget} per run");
    }
    println!(
        "  session    {}",
        if spec.resume_session {
            job.session_id
                .as_deref()
                .unwrap_or("continued from its first run")
        } else {
            "a new one each run"
        }
    );
    println!("  catch-up   {}, overlap {}", spec.catch_up, spec.overlap);
    println!("  prompt     {}", one_line(&spec.prompt));
    for at in &upcoming {
        println!("  next       {}", schedule.describe(*at));
    }
    if runs.is_empty() {
        println!("  no runs yet");
    }
    for run in &runs {
        println!("  {}", run_line(run, &schedule));
    }
    Ok(Exit::Completed)
}

async fn edit(
    ctx: &Context,
    name: &str,
    options: JobOptions,
    json: bool,
) -> Result<Exit, CliError> {
    let mut job = job(&ctx.store, name).await?;
    let spec = job.spec.clone();
    let request = JobRequest {
        name: spec.name.clone(),
        schedule: options.schedule.clone().unwrap_or(spec.schedule.clone()),
        tz: Some(options.tz.clone().unwrap_or(spec.tz.clone())),
        prompt: prompt_of(&options)?.unwrap_or(spec.prompt.clone()),
        cwd: options
            .cwd
            .clone()
            .unwrap_or_else(|| PathBuf::from(&spec.cwd)),
        model: options.model.clone().or(spec.model.clone()),
        toolsets: options.toolsets.clone().or(spec.toolsets.clone()),
        mode: Some(options.mode.clone().unwrap_or(spec.mode.clone())),
        budget_usd: options.budget_usd.or(spec.budget_usd),
        skills: options.skills.clone().or(spec.skills.clone()),
        resume_session: options.resume_session || spec.resume_session,
        catch_up: options.catch_up.unwrap_or(spec.catch_up),
        overlap: options.overlap.unwrap_or(spec.overlap),
        webhook_url: options.webhook.clone().or(spec.webhook_url.clone()),
        webhook_secret_env: options
            .webhook_secret_env
            .clone()
            .or(spec.webhook_secret_env.clone()),
        notify: options.notify || spec.notify,
    };
    let now = ctx.clock.now_ms();
    let rescheduled = options.schedule.is_some() || options.tz.is_some();
    let (new_spec, schedule) =
        herald_cron::define(&request, ctx.mode, now).map_err(CliError::usage)?;
    job.spec = new_spec;
    if rescheduled {
        // A new schedule counts from now (its `every` anchor too).
        job.created_at = now;
        job.next_fire_at = schedule.next_after(now);
    }
    let schedule = schedule_of(&job)?;
    let stored = job.clone();
    call(&ctx.store, move |s| s.update_cron_job(&stored)).await?;
    let upcoming = job
        .next_fire_at
        .map(|first| {
            let mut times = vec![first];
            times.extend(schedule.upcoming(first, 4));
            times
        })
        .unwrap_or_default();
    print_job(&job, &schedule, &upcoming, json, "changed")
}

async fn set_paused(ctx: &Context, name: &str, paused: bool, json: bool) -> Result<Exit, CliError> {
    let mut job = job(&ctx.store, name).await?;
    herald_cron::jobs::set_paused(&mut job, paused, ctx.clock.now_ms());
    let stored = job.clone();
    call(&ctx.store, move |s| s.update_cron_job(&stored)).await?;
    if json {
        print_json(&job)?;
    } else if paused {
        println!("paused job {name}; `herald cron resume {name}` lets it fire again");
    } else {
        let tz = time_zone(&job.spec.tz).unwrap_or(chrono_tz::Tz::UTC);
        println!(
            "resumed job {name}; next fire time {}",
            job.next_fire_at
                .map_or_else(|| "none".to_owned(), |at| describe_time(at, tz))
        );
    }
    Ok(Exit::Completed)
}

async fn run_now(ctx: &Context, name: &str, json: bool) -> Result<Exit, CliError> {
    let job = job(&ctx.store, name).await?;
    let (id, next) = (job.id, job.next_fire_at);
    let me = ProcessIdentity::current();
    let now = ctx.clock.now_ms();
    let run_id = call(&ctx.store, move |s| {
        s.claim_cron_run(
            id,
            now,
            RunTrigger::Manual,
            &me,
            next,
            JobRunState::Claimed,
            None,
        )
    })
    .await?;
    let state = herald_cron::scheduler::execute(&ctx.run, &job, run_id).await;
    let run = call(&ctx.store, move |s| s.cron_run(run_id))
        .await?
        .ok_or_else(|| {
            CliError::failed(anyhow::anyhow!("run {run_id} vanished from the ledger"))
        })?;
    if json {
        print_json(&run)?;
    } else {
        println!("{}", run_line(&run, &schedule_of(&job)?));
        if let Some(result) = &run.result
            && state == JobRunState::Completed
        {
            println!("{result}");
        }
    }
    Ok(match state {
        JobRunState::Completed => Exit::Completed,
        _ => Exit::Failed,
    })
}

async fn runs(ctx: &Context, name: &str, limit: u32, json: bool) -> Result<Exit, CliError> {
    let job = job(&ctx.store, name).await?;
    let id = job.id;
    let runs = call(&ctx.store, move |s| s.cron_runs(id, limit.max(1))).await?;
    if json {
        print_json(&runs)?;
        return Ok(Exit::Completed);
    }
    if runs.is_empty() {
        println!("job {name} has not run yet");
    }
    let schedule = schedule_of(&job)?;
    for run in &runs {
        println!("{}", run_line(run, &schedule));
    }
    Ok(Exit::Completed)
}

/// One run as a line: `#12 for 2026-11-30 09:00 CET (Mon) · completed · $0.0123 · ses_… · result`.
fn run_line(run: &CronRun, schedule: &Schedule) -> String {
    let mut parts = vec![
        format!("#{} for {}", run.id, schedule.describe(run.scheduled_for)),
        match run.trigger {
            RunTrigger::Schedule => run.state.to_string(),
            trigger => format!("{} ({trigger})", run.state),
        },
    ];
    if let Some(at) = run.finished_at {
        parts.push(format!("ended {}", schedule.describe(at)));
    }
    if let Some(cost) = run.cost_usd {
        parts.push(format!("${cost:.4}"));
    }
    if let Some(session) = &run.session_id {
        parts.push(session.clone());
    }
    let text = run.error.as_deref().or(run.result.as_deref()).map(one_line);
    if let Some(text) = text {
        let cut: String = text.chars().take(100).collect();
        parts.push(cut);
    }
    parts.join(" · ")
}

/// `herald daemon [install]`.
pub(crate) async fn daemon(common: &CommonArgs, args: DaemonArgs) -> Result<Exit, CliError> {
    if let Some(DaemonAction::Install) = args.action {
        return install(common);
    }
    let stop = tokio_util::sync::CancellationToken::new();
    let signal = crate::signals::stop_on_signals(stop.clone());
    let ctx = context(common)?;
    let scheduler = herald_cron::Scheduler::new(
        ctx.run,
        ctx.clock,
        SchedulerOptions {
            max_parallel_jobs: usize::from(args.max_parallel_jobs),
        },
        notices("herald daemon"),
    );
    scheduler.run(stop).await.map_err(CliError::failed)?;
    Ok(signal.exit())
}

/// Runs the scheduler of this home on a task of this process until `stop`
/// (`herald serve` does, unless `--no-scheduler`); what it does goes to
/// stderr after `who`.
pub(crate) fn start_scheduler(
    common: &CommonArgs,
    stop: tokio_util::sync::CancellationToken,
    who: &'static str,
) -> Result<(), CliError> {
    let ctx = context(common)?;
    let scheduler = herald_cron::Scheduler::new(
        ctx.run,
        ctx.clock,
        SchedulerOptions::default(),
        notices(who),
    );
    tokio::spawn(async move {
        if let Err(err) = scheduler.run(stop).await {
            eprintln!("{who}: the scheduler stopped: {err}");
        }
    });
    Ok(())
}

/// Prints what a scheduler does on stderr, after `who`.
fn notices(who: &'static str) -> Arc<dyn Fn(Notice) + Send + Sync> {
    Arc::new(move |notice| match notice {
        Notice::Active => eprintln!(
            "{who}: running scheduled jobs (process {})",
            std::process::id()
        ),
        Notice::StandingBy { pid } => eprintln!(
            "{who}: standing by: the scheduler of process {pid} is active; this one takes over when it stops"
        ),
        Notice::Started { job, run_id } => eprintln!("{who}: {job}: run #{run_id} started"),
        Notice::Finished { job, run_id, state } => {
            eprintln!("{who}: {job}: run #{run_id} {state}")
        }
        Notice::Skipped { job, reason } => eprintln!("{who}: {job}: skipped: {reason}"),
        Notice::HeartbeatHeld { session_id, pid } => eprintln!(
            "{who}: heartbeat {session_id}: held by process {pid}; it wakes once that process lets it go"
        ),
        Notice::HeartbeatWoke {
            session_id,
            outcome,
        } => match outcome {
            // HEARTBEAT_OK: nothing needs attention, nothing is shown.
            herald_cron::heartbeat::WakeOutcome::Ok => {
                eprintln!("{who}: heartbeat {session_id}: ok")
            }
            herald_cron::heartbeat::WakeOutcome::Held(pid) => eprintln!(
                "{who}: heartbeat {session_id}: held by process {pid}; it wakes once that process lets it go"
            ),
            other => eprintln!(
                "{who}: heartbeat {session_id}: {}: {}",
                other.word(),
                other.detail().map(one_line).unwrap_or_default()
            ),
        },
        Notice::Abandoned { job_id, run_id } => eprintln!(
            "{who}: run #{run_id} of job {job_id} was left open by a scheduler that died; it is marked unknown"
        ),
    })
}

/// `herald daemon install`.
fn install(common: &CommonArgs) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (home, _) = setup::config_location(common, &env);
    let exe = std::env::current_exe().map_err(CliError::failed)?;
    let user_home = env
        .get("HOME")
        .map(PathBuf::from)
        .ok_or_else(|| CliError::failed(anyhow::anyhow!("HOME is not set")))?;
    let (path, text, enable) = service_file(&user_home, &exe, &home);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|err| {
            CliError::failed(anyhow::anyhow!("cannot create {}: {err}", dir.display()))
        })?;
    }
    std::fs::write(&path, text).map_err(|err| {
        CliError::failed(anyhow::anyhow!("cannot write {}: {err}", path.display()))
    })?;
    println!("wrote {}", path.display());
    println!("enable it with: {enable}");
    Ok(Exit::Completed)
}

/// The service definition for this platform: its path, its text and the
/// command that enables it.
#[cfg(not(target_os = "macos"))]
fn service_file(
    user_home: &std::path::Path,
    exe: &std::path::Path,
    herald_home: &std::path::Path,
) -> (PathBuf, String, String) {
    let path = user_home.join(".config/systemd/user/herald-daemon.service");
    let text = format!(
        "[Unit]\nDescription=herald scheduled jobs\n\n[Service]\nExecStart={} daemon\n\
         Environment=HERALD_HOME={}\nRestart=on-failure\nRestartSec=5\n\n[Install]\nWantedBy=default.target\n",
        exe.display(),
        herald_home.display()
    );
    let enable = "systemctl --user daemon-reload && systemctl --user enable --now herald-daemon \
                  (and `loginctl enable-linger $USER` to keep it running after you log out)"
        .to_owned();
    (path, text, enable)
}

#[cfg(target_os = "macos")]
fn service_file(
    user_home: &std::path::Path,
    exe: &std::path::Path,
    herald_home: &std::path::Path,
) -> (PathBuf, String, String) {
    let path = user_home.join("Library/LaunchAgents/dev.herald.daemon.plist");
    let text = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\"><dict>\n<key>Label</key><string>dev.herald.daemon</string>\n\
         <key>ProgramArguments</key><array><string>{}</string><string>daemon</string></array>\n\
         <key>EnvironmentVariables</key><dict><key>HERALD_HOME</key><string>{}</string></dict>\n\
         <key>RunAtLoad</key><true/>\n<key>KeepAlive</key><true/>\n</dict></plist>\n",
        exe.display(),
        herald_home.display()
    );
    let enable = format!("launchctl load -w {}", path.display());
    (path, text, enable)
}
