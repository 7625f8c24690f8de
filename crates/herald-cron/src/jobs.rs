//! Defining a job: what `herald cron add` and `edit` check before anything
//! is stored — a usable name, a schedule that parses in its time zone, a
//! directory that exists, a permission mode no higher than the creator's.

use std::path::PathBuf;

use chrono_tz::Tz;
use herald_permissions::Mode;
use herald_protocol::{CatchUp, Overlap};
use herald_store::CronJobSpec;

use crate::schedule::{Schedule, ScheduleError, local_time_zone, time_zone};

/// What a user asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRequest {
    pub name: String,
    pub schedule: String,
    /// IANA name; `None`: this machine's zone.
    pub tz: Option<String>,
    pub prompt: String,
    pub cwd: PathBuf,
    pub model: Option<String>,
    pub toolsets: Option<Vec<String>>,
    /// `None`: the creator's mode.
    pub mode: Option<String>,
    pub budget_usd: Option<f64>,
    pub skills: Option<Vec<String>>,
    pub resume_session: bool,
    pub catch_up: CatchUp,
    pub overlap: Overlap,
    pub webhook_url: Option<String>,
    /// The variable holding the webhook's signing secret.
    pub webhook_secret_env: Option<String>,
    /// A desktop notification per run.
    pub notify: bool,
}

/// Why a job cannot be defined as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JobError {
    #[error(
        "`{0}` is not a job name; use letters, digits, `-` and `_` (at most 64), starting with a letter or digit"
    )]
    Name(String),
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error("{0}")]
    Mode(String),
    #[error(
        "a job cannot get more than its creator's permission mode: `{asked}` asked, you run with `{creator}`"
    )]
    ModeAboveCreator { asked: String, creator: String },
    #[error("the job's directory {0} does not exist; give an existing one with --cwd")]
    Cwd(String),
    #[error("the prompt is empty; give it with --prompt TEXT or --prompt-file FILE")]
    EmptyPrompt,
    #[error("--budget-usd must be a positive number of dollars, not {0}")]
    Budget(f64),
    #[error("--webhook {0} is not an http:// or https:// URL")]
    Webhook(String),
    #[error(
        "--webhook-secret-env {0} is not a variable name (letters, digits and `_`); give the name of the variable holding the secret, not the secret"
    )]
    SecretEnv(String),
}

/// Pauses `job`, or resumes it at `now_ms`: fire times that passed while
/// it was paused are not caught up, it fires next at its first fire time
/// after now.
pub fn set_paused(job: &mut herald_store::CronJob, paused: bool, now_ms: i64) {
    job.paused = paused;
    if !paused && job.next_fire_at.is_some_and(|at| at <= now_ms) {
        job.next_fire_at = time_zone(&job.spec.tz)
            .and_then(|tz| Schedule::stored(&job.spec.schedule, tz, job.created_at))
            .ok()
            .and_then(|schedule| schedule.next_after(now_ms));
    }
}

/// How permissive a mode is (read-only < workspace-write < full-access).
fn rank(mode: Mode) -> u8 {
    match mode {
        Mode::ReadOnly => 0,
        Mode::WorkspaceWrite => 1,
        Mode::FullAccess => 2,
    }
}

/// Whether `name` can name a job.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Checks `request` made at `now_ms` by a user running with `creator`'s
/// permission mode; returns what to store and its parsed schedule.
pub fn define(
    request: &JobRequest,
    creator: Mode,
    now_ms: i64,
) -> Result<(CronJobSpec, Schedule), JobError> {
    if !valid_name(&request.name) {
        return Err(JobError::Name(request.name.clone()));
    }
    if request.prompt.trim().is_empty() {
        return Err(JobError::EmptyPrompt);
    }
    let tz: Tz = match &request.tz {
        Some(name) => time_zone(name)?,
        None => local_time_zone(),
    };
    let schedule = Schedule::parse(&request.schedule, tz, now_ms)?;
    let mode = match &request.mode {
        Some(text) => text
            .parse::<Mode>()
            .map_err(|err| JobError::Mode(err.to_string()))?,
        None => creator,
    };
    if rank(mode) > rank(creator) {
        return Err(JobError::ModeAboveCreator {
            asked: mode.as_str().to_owned(),
            creator: creator.as_str().to_owned(),
        });
    }
    let cwd = request
        .cwd
        .canonicalize()
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| JobError::Cwd(request.cwd.display().to_string()))?;
    if let Some(budget) = request.budget_usd
        && !(budget.is_finite() && budget > 0.0)
    {
        return Err(JobError::Budget(budget));
    }
    if let Some(url) = &request.webhook_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(JobError::Webhook(url.clone()));
    }
    if let Some(var) = &request.webhook_secret_env
        && (var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    {
        return Err(JobError::SecretEnv(var.clone()));
    }
    let spec = CronJobSpec {
        name: request.name.clone(),
        schedule: schedule.spec().to_owned(),
        tz: tz.name().to_owned(),
        prompt: request.prompt.clone(),
        cwd: cwd.display().to_string(),
        model: request.model.clone().filter(|m| !m.trim().is_empty()),
        toolsets: request.toolsets.clone(),
        mode: mode.as_str().to_owned(),
        budget_usd: request.budget_usd,
        skills: request.skills.clone().filter(|s| !s.is_empty()),
        resume_session: request.resume_session,
        catch_up: request.catch_up,
        overlap: request.overlap,
        webhook_url: request.webhook_url.clone(),
        webhook_secret_env: request.webhook_secret_env.clone(),
        notify: request.notify,
    };
    Ok((spec, schedule))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn request() -> JobRequest {
        JobRequest {
            name: "ci-review".into(),
            schedule: "0 9 * * 1-5".into(),
            tz: Some("Europe/Berlin".into()),
            prompt: "review yesterday's CI failures".into(),
            cwd: std::env::temp_dir(),
            model: None,
            toolsets: None,
            mode: None,
            budget_usd: Some(0.5),
            skills: None,
            resume_session: false,
            catch_up: CatchUp::Once,
            overlap: Overlap::Skip,
            webhook_url: None,
            webhook_secret_env: None,
            notify: false,
        }
    }

    #[test]
    fn a_good_request_is_stored_with_the_creators_mode() {
        let (spec, schedule) = define(&request(), Mode::WorkspaceWrite, 0).unwrap();
        assert_eq!(spec.mode, "workspace-write");
        assert_eq!(spec.tz, "Europe/Berlin");
        assert_eq!(spec.schedule, "0 9 * * 1-5");
        assert!(!schedule.is_once());
    }

    #[test]
    fn a_resumed_job_fires_next_after_now_and_catches_nothing_up() {
        let every = JobRequest {
            schedule: "every 15m".into(),
            tz: Some("UTC".into()),
            ..request()
        };
        let (spec, _) = define(&every, Mode::WorkspaceWrite, 0).unwrap();
        let mut job = herald_store::CronJob {
            id: 1,
            spec,
            session_id: None,
            paused: false,
            next_fire_at: Some(15 * 60_000),
            last_run_at: None,
            last_state: None,
            created_at: 0,
            updated_at: 0,
        };
        set_paused(&mut job, true, 0);
        assert!(job.paused);
        assert_eq!(job.next_fire_at, Some(15 * 60_000), "pausing keeps it");
        // Resumed two hours later: the next slot after now, not the missed ones.
        set_paused(&mut job, false, 120 * 60_000 + 1);
        assert!(!job.paused);
        assert_eq!(job.next_fire_at, Some(135 * 60_000));
    }

    #[test]
    fn bad_requests_say_what_to_change() {
        let cases: Vec<(JobRequest, &str)> = vec![
            (
                JobRequest {
                    name: "-x".into(),
                    ..request()
                },
                "not a job name",
            ),
            (
                JobRequest {
                    name: "a b".into(),
                    ..request()
                },
                "not a job name",
            ),
            (
                JobRequest {
                    prompt: " ".into(),
                    ..request()
                },
                "prompt is empty",
            ),
            (
                JobRequest {
                    tz: Some("Nowhere/Land".into()),
                    ..request()
                },
                "not a time zone",
            ),
            (
                JobRequest {
                    schedule: "sometimes".into(),
                    ..request()
                },
                "not a schedule",
            ),
            (
                JobRequest {
                    mode: Some("root".into()),
                    ..request()
                },
                "unknown permission mode",
            ),
            (
                JobRequest {
                    mode: Some("full-access".into()),
                    ..request()
                },
                "more than its creator's",
            ),
            (
                JobRequest {
                    cwd: "/no/such/dir".into(),
                    ..request()
                },
                "does not exist",
            ),
            (
                JobRequest {
                    budget_usd: Some(-1.0),
                    ..request()
                },
                "positive number",
            ),
        ];
        for (bad, wanted) in cases {
            let err = define(&bad, Mode::WorkspaceWrite, 0)
                .unwrap_err()
                .to_string();
            assert!(err.contains(wanted), "{bad:?}: {err}");
        }
        assert!(
            define(
                &JobRequest {
                    mode: Some("read-only".into()),
                    ..request()
                },
                Mode::WorkspaceWrite,
                0
            )
            .is_ok()
        );
    }
}
