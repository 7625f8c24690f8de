//! Scheduled jobs (schema v21): `cron_jobs` holds each job and when it
//! fires next; `cron_runs` is the ledger of its runs, each claimed by one
//! scheduler process before it starts and ended in a final state
//! ([`JobRunState`]). A job's "last run" is stamped when a run ends, never
//! when it is dispatched. Schedules are stored as written; parsing them is
//! `herald-cron`'s part.

use crate::write_unit::WriteUnit;
use herald_protocol::{CatchUp, DeliveryState, JobRunState, Overlap, RunTrigger};
use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use crate::error::{StoreError, sql};
use crate::owner::ProcessIdentity;
use crate::store::{Store, now_ms, to_i64, to_u64};

/// A job as the user defines it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CronJobSpec {
    pub name: String,
    /// As written (`0 9 * * 1-5`, `every 15m`, `at 2026-12-01 09:00`).
    pub schedule: String,
    /// IANA time zone the schedule is read in.
    pub tz: String,
    pub prompt: String,
    pub cwd: String,
    /// `None`: the configured model.
    pub model: Option<String>,
    /// `None`: the configured toolsets.
    pub toolsets: Option<Vec<String>>,
    /// The permission mode its runs get (never more than its creator's).
    pub mode: String,
    pub budget_usd: Option<f64>,
    /// Skills its prompt is sent with.
    pub skills: Option<Vec<String>>,
    /// Each run continues the job's session instead of starting one.
    pub resume_session: bool,
    pub catch_up: CatchUp,
    pub overlap: Overlap,
    /// POST each run's result here (JSON, signed when a secret is set).
    pub webhook_url: Option<String>,
    /// The environment variable holding the webhook's HMAC secret (its
    /// name only is stored).
    pub webhook_secret_env: Option<String>,
    /// Show each run's result as a desktop notification.
    pub notify: bool,
}

/// A stored job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CronJob {
    pub id: i64,
    #[serde(flatten)]
    pub spec: CronJobSpec,
    /// The session runs continue (with `resume_session`, after the first).
    pub session_id: Option<String>,
    pub paused: bool,
    /// Unix ms of the next fire time; `None` when it never fires again.
    pub next_fire_at: Option<i64>,
    /// When its last run ended (not when it was dispatched).
    pub last_run_at: Option<i64>,
    pub last_state: Option<JobRunState>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One run of a job, as the ledger holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CronRun {
    pub id: i64,
    pub job_id: i64,
    /// The fire time it is for (Unix ms).
    pub scheduled_for: i64,
    pub trigger: RunTrigger,
    pub state: JobRunState,
    pub claimed_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// The scheduler process that claimed it.
    pub owner: Option<ProcessIdentity>,
    pub session_id: Option<String>,
    /// The final answer (completed) or what the run said.
    pub result: Option<String>,
    /// Why it failed, was blocked, skipped or is unknown.
    pub error: Option<String>,
    pub cost_usd: Option<f64>,
    pub tokens: Option<u64>,
    pub delivery: DeliveryState,
    pub delivery_attempts: u32,
    pub delivery_error: Option<String>,
    pub delivered_at: Option<i64>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnd {
    pub state: JobRunState,
    pub result: Option<String>,
    pub error: Option<String>,
    pub cost_usd: Option<f64>,
    pub tokens: Option<u64>,
    pub delivery: DeliveryState,
}

const JOB_COLUMNS: &str = "id, name, schedule, tz, prompt, cwd, model, toolsets, mode, budget_usd, \
     skills, resume_session, catch_up, overlap, session_id, paused, next_fire_at, last_run_at, \
     last_state, created_at, updated_at, webhook_url, webhook_secret_env, notify";

const RUN_COLUMNS: &str = "id, job_id, scheduled_for, trigger, state, claimed_at, started_at, \
     finished_at, owner_pid, owner_started, session_id, result, error, cost_usd, tokens, delivery, \
     delivery_attempts, delivery_error, delivered_at";

fn list_of(text: Option<String>) -> Option<Vec<String>> {
    text.and_then(|t| serde_json::from_str(&t).ok())
}

fn list_text(list: &Option<Vec<String>>) -> Option<String> {
    list.as_ref()
        .map(|l| serde_json::to_string(l).unwrap_or_else(|_| "[]".to_owned()))
}

fn job_from_row(row: &Row<'_>) -> rusqlite::Result<CronJob> {
    Ok(CronJob {
        id: row.get(0)?,
        spec: CronJobSpec {
            name: row.get(1)?,
            schedule: row.get(2)?,
            tz: row.get(3)?,
            prompt: row.get(4)?,
            cwd: row.get(5)?,
            model: row.get(6)?,
            toolsets: list_of(row.get(7)?),
            mode: row.get(8)?,
            budget_usd: row.get(9)?,
            skills: list_of(row.get(10)?),
            resume_session: row.get(11)?,
            catch_up: row.get(12)?,
            overlap: row.get(13)?,
            webhook_url: row.get(21)?,
            webhook_secret_env: row.get(22)?,
            notify: row.get(23)?,
        },
        session_id: row.get(14)?,
        paused: row.get(15)?,
        next_fire_at: row.get(16)?,
        last_run_at: row.get(17)?,
        last_state: row.get(18)?,
        created_at: row.get(19)?,
        updated_at: row.get(20)?,
    })
}

fn run_from_row(row: &Row<'_>) -> rusqlite::Result<CronRun> {
    let pid: Option<i64> = row.get(8)?;
    let started: Option<i64> = row.get(9)?;
    Ok(CronRun {
        id: row.get(0)?,
        job_id: row.get(1)?,
        scheduled_for: row.get(2)?,
        trigger: row.get(3)?,
        state: row.get(4)?,
        claimed_at: row.get(5)?,
        started_at: row.get(6)?,
        finished_at: row.get(7)?,
        owner: pid.map(|pid| ProcessIdentity {
            pid: u32::try_from(pid).unwrap_or(0),
            started: started.map_or(0, to_u64),
        }),
        session_id: row.get(10)?,
        result: row.get(11)?,
        error: row.get(12)?,
        cost_usd: row.get(13)?,
        tokens: row.get::<_, Option<i64>>(14)?.map(to_u64),
        delivery: row.get(15)?,
        delivery_attempts: u32::try_from(row.get::<_, i64>(16)?).unwrap_or(0),
        delivery_error: row.get(17)?,
        delivered_at: row.get(18)?,
    })
}

impl Store {
    /// Adds a job that fires first at `next_fire_at`; refuses a taken name.
    pub fn add_cron_job(
        &mut self,
        spec: &CronJobSpec,
        next_fire_at: Option<i64>,
        created_at: i64,
    ) -> Result<CronJob, StoreError> {
        const CTX: &str = "adding a job";
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, CTX))?;
        let taken: bool = tx
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM cron_jobs WHERE name = ?1)")
            .and_then(|mut s| s.query_row([&spec.name], |r| r.get(0)))
            .map_err(sql(path, CTX))?;
        if taken {
            return Err(StoreError::JobExists(spec.name.clone()));
        }
        let id: i64 = tx
            .prepare_cached(
                "INSERT INTO cron_jobs (name, schedule, tz, prompt, cwd, model, toolsets, mode, \
                 budget_usd, skills, resume_session, catch_up, overlap, next_fire_at, created_at, \
                 updated_at, webhook_url, webhook_secret_env, notify) VALUES (?1, ?2, ?3, ?4, ?5, \
                 ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?15, ?16, ?17, ?18) RETURNING id",
            )
            .and_then(|mut s| {
                s.query_row(
                    params![
                        spec.name,
                        spec.schedule,
                        spec.tz,
                        spec.prompt,
                        spec.cwd,
                        spec.model,
                        list_text(&spec.toolsets),
                        spec.mode,
                        spec.budget_usd,
                        list_text(&spec.skills),
                        spec.resume_session,
                        spec.catch_up,
                        spec.overlap,
                        next_fire_at,
                        created_at,
                        spec.webhook_url,
                        spec.webhook_secret_env,
                        spec.notify
                    ],
                    |r| r.get(0),
                )
            })
            .map_err(sql(path, CTX))?;
        tx.commit().map_err(sql(path, CTX))?;
        self.cron_job_by_id(id)?
            .ok_or_else(|| StoreError::UnknownJob(spec.name.clone()))
    }

    fn cron_job_by_id(&self, id: i64) -> Result<Option<CronJob>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {JOB_COLUMNS} FROM cron_jobs WHERE id = ?1"
            ))
            .and_then(|mut s| s.query_row([id], job_from_row).optional())
            .map_err(sql(&self.path, "reading a job"))
    }

    /// The job named `name`, if any.
    pub fn cron_job(&self, name: &str) -> Result<Option<CronJob>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {JOB_COLUMNS} FROM cron_jobs WHERE name = ?1"
            ))
            .and_then(|mut s| s.query_row([name], job_from_row).optional())
            .map_err(sql(&self.path, "reading a job"))
    }

    /// Every job, by name.
    pub fn cron_jobs(&self) -> Result<Vec<CronJob>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {JOB_COLUMNS} FROM cron_jobs ORDER BY name"
            ))
            .and_then(|mut s| s.query_map([], job_from_row)?.collect())
            .map_err(sql(&self.path, "reading jobs"))
    }

    /// Writes a job's definition, pause flag and next fire time (after
    /// `edit`, `pause`, `resume`); its runs are untouched.
    pub fn update_cron_job(&mut self, job: &CronJob) -> Result<(), StoreError> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE cron_jobs SET schedule = ?2, tz = ?3, prompt = ?4, cwd = ?5, model = ?6, \
                 toolsets = ?7, mode = ?8, budget_usd = ?9, skills = ?10, resume_session = ?11, \
                 catch_up = ?12, overlap = ?13, paused = ?14, next_fire_at = ?15, updated_at = ?16, \
                 webhook_url = ?17, webhook_secret_env = ?18, notify = ?19, created_at = ?20 \
                 WHERE id = ?1",
            )
            .and_then(|mut s| {
                let spec = &job.spec;
                s.execute(params![
                    job.id,
                    spec.schedule,
                    spec.tz,
                    spec.prompt,
                    spec.cwd,
                    spec.model,
                    list_text(&spec.toolsets),
                    spec.mode,
                    spec.budget_usd,
                    list_text(&spec.skills),
                    spec.resume_session,
                    spec.catch_up,
                    spec.overlap,
                    job.paused,
                    job.next_fire_at,
                    now_ms(),
                    spec.webhook_url,
                    spec.webhook_secret_env,
                    spec.notify,
                    job.created_at
                ])
            })
            .map_err(sql(&self.path, "changing a job"))?;
        if changed == 0 {
            return Err(StoreError::UnknownJob(job.spec.name.clone()));
        }
        Ok(())
    }

    /// Deletes job `name` and its ledger; false when there was none.
    pub fn remove_cron_job(&mut self, name: &str) -> Result<bool, StoreError> {
        const CTX: &str = "removing a job";
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, CTX))?;
        tx.prepare_cached(
            "DELETE FROM cron_runs WHERE job_id = (SELECT id FROM cron_jobs WHERE name = ?1)",
        )
        .and_then(|mut s| s.execute([name]))
        .map_err(sql(path, CTX))?;
        let deleted = tx
            .prepare_cached("DELETE FROM cron_jobs WHERE name = ?1")
            .and_then(|mut s| s.execute([name]))
            .map_err(sql(path, CTX))?;
        tx.commit().map_err(sql(path, CTX))?;
        Ok(deleted > 0)
    }

    /// Claims the run of job `job_id` for fire time `scheduled_for` for
    /// `owner` and moves the job's next fire time to `next_fire_at`, in one
    /// transaction, so a slot is claimed once. With `state` `skipped` (or
    /// `blocked`) the run is final at once, with `error` saying why.
    #[allow(clippy::too_many_arguments)]
    pub fn claim_cron_run(
        &mut self,
        job_id: i64,
        scheduled_for: i64,
        trigger: RunTrigger,
        owner: &ProcessIdentity,
        next_fire_at: Option<i64>,
        state: JobRunState,
        error: Option<&str>,
    ) -> Result<i64, StoreError> {
        const CTX: &str = "claiming a job run";
        let path = &self.path;
        let now = now_ms();
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, CTX))?;
        let finished = (!state.is_open()).then_some(now);
        let id: i64 = tx
            .prepare_cached(
                "INSERT INTO cron_runs (job_id, scheduled_for, trigger, state, claimed_at, \
                 finished_at, owner_pid, owner_started, error) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
            )
            .and_then(|mut s| {
                s.query_row(
                    params![
                        job_id,
                        scheduled_for,
                        trigger,
                        state,
                        now,
                        finished,
                        i64::from(owner.pid),
                        to_i64(owner.started),
                        error
                    ],
                    |r| r.get(0),
                )
            })
            .map_err(sql(path, CTX))?;
        tx.prepare_cached("UPDATE cron_jobs SET next_fire_at = ?2 WHERE id = ?1")
            .and_then(|mut s| s.execute(params![job_id, next_fire_at]))
            .map_err(sql(path, CTX))?;
        if !state.is_open() {
            tx.prepare_cached(
                "UPDATE cron_jobs SET last_run_at = ?2, last_state = ?3 WHERE id = ?1",
            )
            .and_then(|mut s| s.execute(params![job_id, now, state]))
            .map_err(sql(path, CTX))?;
        }
        tx.commit().map_err(sql(path, CTX))?;
        Ok(id)
    }

    /// A claimed run started its session.
    pub fn start_cron_run(&mut self, run_id: i64, session_id: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "UPDATE cron_runs SET state = 'running', started_at = ?2, session_id = ?3 \
                 WHERE id = ?1 AND state = 'claimed'",
            )
            .and_then(|mut s| s.execute(params![run_id, now_ms(), session_id]))
            .map_err(sql(&self.path, "starting a job run"))?;
        Ok(())
    }

    /// Ends run `run_id` (if still open) and stamps its job's last run
    /// with the end; a job that continues its session remembers it.
    pub fn finish_cron_run(&mut self, run_id: i64, end: &RunEnd) -> Result<(), StoreError> {
        const CTX: &str = "ending a job run";
        let path = &self.path;
        let now = now_ms();
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, CTX))?;
        let changed = tx
            .prepare_cached(
                "UPDATE cron_runs SET state = ?2, finished_at = ?3, result = ?4, error = ?5, \
                 cost_usd = ?6, tokens = ?7, delivery = ?8 \
                 WHERE id = ?1 AND state IN ('claimed', 'running')",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run_id,
                    end.state,
                    now,
                    end.result,
                    end.error,
                    end.cost_usd,
                    end.tokens.map(to_i64),
                    end.delivery
                ])
            })
            .map_err(sql(path, CTX))?;
        if changed > 0 {
            tx.prepare_cached(
                "UPDATE cron_jobs SET last_run_at = ?2, last_state = ?3, \
                 session_id = CASE WHEN resume_session THEN \
                     coalesce((SELECT session_id FROM cron_runs WHERE id = ?4), session_id) \
                     ELSE session_id END \
                 WHERE id = (SELECT job_id FROM cron_runs WHERE id = ?4)",
            )
            .and_then(|mut s| s.execute(params![0, now, end.state, run_id]))
            .map_err(sql(path, CTX))?;
        }
        tx.commit().map_err(sql(path, CTX))?;
        Ok(())
    }

    /// Marks an open run `unknown` (its scheduler died with it open): it
    /// is final and never run again on its own.
    pub fn abandon_cron_run(&mut self, run_id: i64, reason: &str) -> Result<(), StoreError> {
        self.finish_cron_run(
            run_id,
            &RunEnd {
                state: JobRunState::Unknown,
                result: None,
                error: Some(reason.to_owned()),
                cost_usd: None,
                tokens: None,
                delivery: DeliveryState::None,
            },
        )
    }

    /// Runs still claimed or running, of every job.
    pub fn open_cron_runs(&self) -> Result<Vec<CronRun>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM cron_runs WHERE state IN ('claimed', 'running') \
                 ORDER BY id"
            ))
            .and_then(|mut s| s.query_map([], run_from_row)?.collect())
            .map_err(sql(&self.path, "reading open job runs"))
    }

    /// The newest `limit` runs of job `job_id`, newest first.
    pub fn cron_runs(&self, job_id: i64, limit: u32) -> Result<Vec<CronRun>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM cron_runs WHERE job_id = ?1 ORDER BY id DESC LIMIT ?2"
            ))
            .and_then(|mut s| s.query_map(params![job_id, limit], run_from_row)?.collect())
            .map_err(sql(&self.path, "reading job runs"))
    }

    /// Records how delivering run `run_id` went.
    pub fn set_cron_delivery(
        &mut self,
        run_id: i64,
        state: DeliveryState,
        attempts: u32,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let delivered_at = (state == DeliveryState::Delivered).then(now_ms);
        self.conn
            .prepare_cached(
                "UPDATE cron_runs SET delivery = ?2, delivery_attempts = ?3, delivery_error = ?4, \
                 delivered_at = ?5 WHERE id = ?1",
            )
            .and_then(|mut s| s.execute(params![run_id, state, attempts, error, delivered_at]))
            .map_err(sql(&self.path, "recording a delivery"))?;
        Ok(())
    }

    /// Finished runs whose delivery is still pending (a scheduler stopped
    /// while delivering them), oldest first.
    pub fn undelivered_cron_runs(&self) -> Result<Vec<CronRun>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM cron_runs WHERE delivery = 'pending' \
                 AND state NOT IN ('claimed', 'running') ORDER BY id"
            ))
            .and_then(|mut s| s.query_map([], run_from_row)?.collect())
            .map_err(sql(&self.path, "reading undelivered job runs"))
    }

    /// One run by id.
    pub fn cron_run(&self, run_id: i64) -> Result<Option<CronRun>, StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM cron_runs WHERE id = ?1"
            ))
            .and_then(|mut s| s.query_row([run_id], run_from_row).optional())
            .map_err(sql(&self.path, "reading a job run"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn spec(name: &str) -> CronJobSpec {
        CronJobSpec {
            name: name.into(),
            schedule: "every 15m".into(),
            tz: "UTC".into(),
            prompt: "check the build".into(),
            cwd: "/w".into(),
            model: None,
            toolsets: Some(vec!["terminal".into()]),
            mode: "workspace-write".into(),
            budget_usd: Some(0.5),
            skills: None,
            resume_session: true,
            catch_up: CatchUp::Once,
            overlap: Overlap::Skip,
            webhook_url: Some("http://127.0.0.1:9/hook".into()),
            webhook_secret_env: None,
            notify: false,
        }
    }

    #[test]
    fn a_job_is_added_once_changed_and_removed_with_its_runs() {
        let mut store = Store::open_in_memory().unwrap();
        let job = store.add_cron_job(&spec("ci"), Some(1_000), 10).unwrap();
        assert_eq!(job.spec, spec("ci"));
        assert_eq!(job.next_fire_at, Some(1_000));
        assert!(matches!(
            store.add_cron_job(&spec("ci"), None, 10),
            Err(StoreError::JobExists(_))
        ));
        let mut changed = job.clone();
        changed.paused = true;
        changed.spec.prompt = "check it again".into();
        store.update_cron_job(&changed).unwrap();
        let read = store.cron_job("ci").unwrap().unwrap();
        assert!(read.paused);
        assert_eq!(read.spec.prompt, "check it again");
        let me = ProcessIdentity::current();
        store
            .claim_cron_run(
                job.id,
                1_000,
                RunTrigger::Schedule,
                &me,
                Some(2_000),
                JobRunState::Claimed,
                None,
            )
            .unwrap();
        assert!(store.remove_cron_job("ci").unwrap());
        assert!(!store.remove_cron_job("ci").unwrap());
        assert!(store.cron_jobs().unwrap().is_empty());
        assert!(store.open_cron_runs().unwrap().is_empty());
    }

    #[test]
    fn the_ledger_stamps_the_last_run_at_its_end_not_its_claim() {
        let mut store = Store::open_in_memory().unwrap();
        let job = store.add_cron_job(&spec("ci"), Some(1_000), 10).unwrap();
        let me = ProcessIdentity::current();
        let run = store
            .claim_cron_run(
                job.id,
                1_000,
                RunTrigger::Schedule,
                &me,
                Some(2_000),
                JobRunState::Claimed,
                None,
            )
            .unwrap();
        let claimed = store.cron_job("ci").unwrap().unwrap();
        assert_eq!(claimed.next_fire_at, Some(2_000));
        assert_eq!(claimed.last_run_at, None, "not stamped at dispatch");
        assert_eq!(store.open_cron_runs().unwrap().len(), 1);
        store.start_cron_run(run, "ses_1").unwrap();
        store
            .finish_cron_run(
                run,
                &RunEnd {
                    state: JobRunState::Completed,
                    result: Some("green".into()),
                    error: None,
                    cost_usd: Some(0.01),
                    tokens: Some(1200),
                    delivery: DeliveryState::None,
                },
            )
            .unwrap();
        let done = store.cron_job("ci").unwrap().unwrap();
        assert!(done.last_run_at.is_some());
        assert_eq!(done.last_state, Some(JobRunState::Completed));
        assert_eq!(
            done.session_id.as_deref(),
            Some("ses_1"),
            "resume_session keeps it"
        );
        let runs = store.cron_runs(job.id, 10).unwrap();
        assert_eq!(runs[0].state, JobRunState::Completed);
        assert_eq!(runs[0].result.as_deref(), Some("green"));
        assert_eq!(runs[0].owner, Some(me));
        // A final run is never changed again.
        store.abandon_cron_run(run, "late").unwrap();
        assert_eq!(
            store.cron_run(run).unwrap().unwrap().state,
            JobRunState::Completed
        );
        // A skipped slot is final at once and moves the next fire time.
        store
            .claim_cron_run(
                job.id,
                2_000,
                RunTrigger::Schedule,
                &me,
                Some(3_000),
                JobRunState::Skipped,
                Some("the previous run was still going"),
            )
            .unwrap();
        let runs = store.cron_runs(job.id, 10).unwrap();
        assert_eq!(runs[0].state, JobRunState::Skipped);
        assert!(runs[0].finished_at.is_some());
        assert!(store.open_cron_runs().unwrap().is_empty());
    }
}
