//! Running one job: its settings are built from the configuration as it
//! is now plus the job's own (model, toolsets, directory, permission
//! mode); a job whose settings cannot work — no provider key, an unknown
//! skill, its directory gone — ends `blocked` without a model request.
//! Otherwise it runs one headless turn (asks are denied, nobody is asked)
//! in a new session or, with `resume_session`, in the job's session, and
//! its spend is watched: past `budget_usd` the turn is interrupted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use herald_core::runtime::{
    ClarifyPolicy, OpenMode, Session, SessionOptions, TurnResult, open_session,
};
use herald_core::{ApprovalMode, Config, Overrides, Settings, StoreHandle};
use herald_protocol::{DeliveryState, EventKind, ExitReason, JobRunState, Op};
use herald_store::{CronJob, RunEnd, SessionSource};

/// What every run needs: the configuration and where herald lives.
#[derive(Clone)]
pub struct RunContext {
    pub config: Config,
    pub config_path: PathBuf,
    pub home: PathBuf,
    pub env: HashMap<String, String>,
    pub store: StoreHandle,
}

/// A prepared run: settings that work and the prompt to send.
struct Prepared {
    settings: Settings,
    prompt: String,
}

/// Why a job is blocked, or its prepared run.
fn prepare(ctx: &RunContext, job: &CronJob) -> Result<Prepared, String> {
    let spec = &job.spec;
    let cwd = PathBuf::from(&spec.cwd);
    if !cwd.is_dir() {
        return Err(format!(
            "its directory {} is gone; `herald cron edit {} --cwd DIR` gives it another",
            spec.cwd, spec.name
        ));
    }
    let overrides = Overrides {
        model: spec.model.clone(),
        toolsets: spec.toolsets.clone(),
        cwd: Some(cwd.clone()),
        ..Overrides::default()
    };
    let mut settings = Settings::resolve(
        &ctx.config,
        &ctx.config_path,
        ctx.home.clone(),
        &ctx.env,
        &overrides,
    )
    .map_err(|err| err.to_string())?;
    settings.permissions.mode.clone_from(&spec.mode);
    let prompt = with_skills(&ctx.home, &cwd, &spec.skills, &spec.prompt)?;
    Ok(Prepared { settings, prompt })
}

/// `prompt` preceded by the instructions of `skills`; an unknown skill is
/// the reason the job is blocked.
fn with_skills(
    home: &Path,
    cwd: &Path,
    skills: &Option<Vec<String>>,
    prompt: &str,
) -> Result<String, String> {
    let Some(skills) = skills.as_ref().filter(|s| !s.is_empty()) else {
        return Ok(prompt.to_owned());
    };
    let roots = herald_knowledge::SkillRoots::new(home, cwd);
    let mut text = String::new();
    for name in skills {
        let skill = roots
            .find(name)
            .map_err(|err| format!("its skill `{name}` cannot be loaded: {err}"))?;
        let body = herald_knowledge::skills::render_skill(&skill)
            .map_err(|err| format!("its skill `{name}` cannot be read: {err}"))?;
        text.push_str(&format!(
            "Use the skill `{name}` for this request. Its instructions:\n\n{body}\n\n\
             Its files are in {}; read them with read_file.\n\n",
            skill.dir.display()
        ));
    }
    text.push_str("Request: ");
    text.push_str(prompt);
    Ok(text)
}

/// Whether `job` could run now: `Err` says why it would be blocked.
pub fn check(ctx: &RunContext, job: &CronJob) -> Result<(), String> {
    prepare(ctx, job).map(|_| ())
}

/// Runs `job` as run `run_id` of the ledger (already claimed) and returns
/// how it ended; the ledger's `running` state is recorded on the way.
pub async fn run_job(ctx: &RunContext, job: &CronJob, run_id: i64) -> RunEnd {
    let prepared = match prepare(ctx, job) {
        Ok(prepared) => prepared,
        Err(reason) => return ended(JobRunState::Blocked, None, Some(reason), None),
    };
    let mut options = SessionOptions::new(prepared.settings, ctx.store.clone());
    options.open = match (&job.spec.resume_session, &job.session_id) {
        (true, Some(id)) => OpenMode::Resume(id.clone()),
        _ => OpenMode::New,
    };
    options.source = SessionSource::Cron;
    options.clarify = ClarifyPolicy::Unavailable;
    options.approvals = ApprovalMode::Headless;
    options.one_shot = true;
    let session = match open_session(options).await {
        Ok(session) => session,
        Err(err) => {
            return ended(
                JobRunState::Failed,
                None,
                Some(format!("its session could not be opened: {err}")),
                None,
            );
        }
    };
    let session_id = session.id().to_owned();
    let started = ctx
        .store
        .call({
            let session_id = session_id.clone();
            move |s| s.start_cron_run(run_id, &session_id)
        })
        .await;
    if !matches!(started, Ok(Ok(()))) {
        tracing::warn!(run_id, "the job run's start was not recorded");
    }
    let outcome = run_turn(&session, prepared.prompt, job.spec.budget_usd).await;
    let _ = session.shutdown().await;
    match outcome {
        Ok((result, over_budget)) => {
            let cost = result.tree_usage.cost_usd;
            let tokens = Some(result.tree_usage.input + result.tree_usage.output);
            let (state, error) = match (result.exit_reason, over_budget) {
                (_, Some(spent)) => (
                    JobRunState::Failed,
                    Some(format!(
                        "stopped: it spent ${spent:.4}, over its budget of ${:.4}",
                        job.spec.budget_usd.unwrap_or_default()
                    )),
                ),
                (ExitReason::Completed | ExitReason::MaxIterations, None) => {
                    (JobRunState::Completed, None)
                }
                (reason, None) => (
                    JobRunState::Failed,
                    Some(
                        result
                            .error
                            .clone()
                            .unwrap_or_else(|| format!("the turn ended: {reason}")),
                    ),
                ),
            };
            let mut end = ended(state, Some(result.final_response), error, cost);
            end.tokens = tokens;
            end
        }
        Err(err) => ended(JobRunState::Failed, None, Some(err), None),
    }
}

/// Sends the prompt and waits for the turn, interrupting it once the tree
/// has spent more than `budget`; returns the turn and, when it was
/// stopped for its budget, what had been spent.
pub(crate) async fn run_turn(
    session: &Session,
    prompt: String,
    budget: Option<f64>,
) -> Result<(TurnResult, Option<f64>), String> {
    let mut events = session.events(Some(session.opened_after()));
    let turn = session
        .submit(Op::UserTurn {
            text: prompt,
            images: Vec::new(),
        })
        .map_err(|err| format!("the turn could not start: {err}"))?;
    let mut spent = 0.0;
    let mut over = None;
    while let Some(event) = events.next().await {
        match &event.kind {
            EventKind::Usage {
                cost_usd: Some(cost),
                ..
            } => {
                spent += cost;
                if let Some(limit) = budget
                    && spent > limit
                    && over.is_none()
                {
                    over = Some(spent);
                    let _ = session.submit(Op::Interrupt {});
                }
            }
            kind if event.submission_id.as_ref() == Some(&turn) => {
                if let Some(result) = TurnResult::from_event(kind) {
                    return Ok((result, over));
                }
            }
            _ => {}
        }
    }
    Err("the session ended before its turn finished".to_owned())
}

fn ended(
    state: JobRunState,
    result: Option<String>,
    error: Option<String>,
    cost_usd: Option<f64>,
) -> RunEnd {
    RunEnd {
        state,
        result,
        error,
        cost_usd,
        tokens: None,
        delivery: DeliveryState::None,
    }
}
