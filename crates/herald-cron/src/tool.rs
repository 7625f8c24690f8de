//! `cronjob`: the agent schedules too. It creates, lists, pauses, resumes
//! and removes jobs like `herald cron` does, with the same checks; a job
//! it creates runs in the session's directory with the session's
//! permission mode at most. Creating, pausing, resuming and removing are
//! not read-only, so `workspace-write` and `read-only` ask before each;
//! listing never asks. Scheduled runs themselves do not get the tool.

use std::path::PathBuf;
use std::sync::Arc;

use herald_core::StoreHandle;
use herald_permissions::Mode;
use herald_protocol::{CatchUp, Overlap};
use herald_tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::clock::Clock;
use crate::jobs::{JobRequest, define};
use crate::schedule::{describe_time, time_zone};

/// The toolset of `cronjob`.
pub const CRON_TOOLSET: &str = "cron";

/// Arguments of `cronjob`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CronjobArgs {
    /// create, list, pause, resume or remove.
    action: String,
    /// The job (all but list).
    name: Option<String>,
    /// For create: "0 9 * * 1-5", "every 15m", "at 2026-12-01 09:00" or "in 30m".
    schedule: Option<String>,
    /// For create: what each run is asked.
    prompt: Option<String>,
    /// For create: IANA time zone (default: the machine's).
    tz: Option<String>,
}

/// The `cronjob` tool of one session.
pub struct CronjobTool {
    store: StoreHandle,
    cwd: PathBuf,
    /// The session's permission mode: the most a created job gets.
    mode: Mode,
    clock: Arc<dyn Clock>,
}

impl CronjobTool {
    /// The tool for a session working in `cwd` with permission `mode`.
    pub fn new(store: StoreHandle, cwd: PathBuf, mode: Mode, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            cwd,
            mode,
            clock,
        }
    }

    async fn list(&self) -> Result<String, ToolError> {
        let jobs = self
            .store
            .call(|s| s.cron_jobs())
            .await
            .map_err(|err| ToolError::new(err.to_string()))?
            .map_err(|err| ToolError::new(err.to_string()))?;
        let listed: Vec<_> = jobs
            .iter()
            .map(|job| {
                let tz = time_zone(&job.spec.tz).unwrap_or(chrono_tz::Tz::UTC);
                json!({
                    "name": job.spec.name,
                    "schedule": job.spec.schedule,
                    "tz": job.spec.tz,
                    "prompt": job.spec.prompt,
                    "cwd": job.spec.cwd,
                    "paused": job.paused,
                    "next": job.next_fire_at.map(|at| describe_time(at, tz)),
                    "last_state": job.last_state,
                })
            })
            .collect();
        Ok(json!({ "jobs": listed }).to_string())
    }

    async fn create(&self, args: CronjobArgs, name: String) -> Result<String, ToolError> {
        let request = JobRequest {
            name,
            schedule: args
                .schedule
                .ok_or_else(|| ToolError::new("create needs `schedule`, such as \"every 1h\""))?,
            tz: args.tz,
            prompt: args
                .prompt
                .ok_or_else(|| ToolError::new("create needs `prompt`: what each run is asked"))?,
            cwd: self.cwd.clone(),
            model: None,
            toolsets: None,
            mode: None,
            budget_usd: None,
            skills: None,
            resume_session: false,
            catch_up: CatchUp::Once,
            overlap: Overlap::Skip,
            webhook_url: None,
            webhook_secret_env: None,
            notify: false,
        };
        let now = self.clock.now_ms();
        let (spec, schedule) =
            define(&request, self.mode, now).map_err(|err| ToolError::new(err.to_string()))?;
        let upcoming = schedule.upcoming(now, 3);
        let first = upcoming.first().copied();
        let job = self
            .store
            .call(move |s| s.add_cron_job(&spec, first, now))
            .await
            .map_err(|err| ToolError::new(err.to_string()))?
            .map_err(|err| ToolError::new(err.to_string()))?;
        Ok(json!({
            "created": job.spec.name,
            "schedule": job.spec.schedule,
            "tz": job.spec.tz,
            "mode": job.spec.mode,
            "next": upcoming.iter().map(|at| schedule.describe(*at)).collect::<Vec<_>>(),
            "note": "it runs while `herald daemon` (or `herald serve`) runs",
        })
        .to_string())
    }

    async fn set_paused(&self, name: String, paused: bool) -> Result<String, ToolError> {
        let now = self.clock.now_ms();
        let lookup = name.clone();
        let changed = self
            .store
            .call(move |s| -> Result<bool, herald_store::StoreError> {
                let Some(mut job) = s.cron_job(&lookup)? else {
                    return Ok(false);
                };
                crate::jobs::set_paused(&mut job, paused, now);
                s.update_cron_job(&job)?;
                Ok(true)
            })
            .await
            .map_err(|err| ToolError::new(err.to_string()))?
            .map_err(|err| ToolError::new(err.to_string()))?;
        if !changed {
            return Err(unknown(&name));
        }
        Ok(json!({ "name": name, "paused": paused }).to_string())
    }
}

fn unknown(name: &str) -> ToolError {
    ToolError::new(format!(
        "no job named '{name}'; call cronjob with action \"list\" to see the jobs"
    ))
}

impl TypedTool for CronjobTool {
    type Args = CronjobArgs;
    const NAME: &'static str = "cronjob";
    const TOOLSET: &'static str = CRON_TOOLSET;
    const DESCRIPTION: &'static str = "Schedule a prompt to run later or repeatedly in this directory, headless (action create, with name, schedule, prompt); list, pause, resume or remove jobs.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: CronjobArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let action = args.action.trim().to_ascii_lowercase();
        if action == "list" {
            return self.list().await;
        }
        let name = args
            .name
            .clone()
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| ToolError::new(format!("{action} needs `name`")))?;
        match action.as_str() {
            "create" => self.create(args, name).await,
            "pause" => self.set_paused(name, true).await,
            "resume" => self.set_paused(name, false).await,
            "remove" => {
                let lookup = name.clone();
                let removed = self
                    .store
                    .call(move |s| s.remove_cron_job(&lookup))
                    .await
                    .map_err(|err| ToolError::new(err.to_string()))?
                    .map_err(|err| ToolError::new(err.to_string()))?;
                if removed {
                    Ok(json!({ "removed": name }).to_string())
                } else {
                    Err(unknown(&name))
                }
            }
            other => Err(ToolError::new(format!(
                "unknown action '{other}'; use create, list, pause, resume or remove"
            ))),
        }
    }
}
