//! The scheduler: one per `$HERALD_HOME` at a time (it holds the lease
//! [`SCHEDULER_LEASE`]; another waits, standing by, and takes over when
//! the holder dies). Each pass over the jobs:
//!
//! 1. ends runs left open by a scheduler that died (its process is gone):
//!    they become `unknown` and are never run again on their own;
//! 2. for each job that is not paused and whose fire time has come:
//!    - fire times that passed while no scheduler ran are caught up once
//!      (`catch_up = once`: one run for the latest of them) or recorded
//!      `skipped` (`catch_up = skip`);
//!    - while the job's previous run goes on the slot is `skipped`
//!      (`overlap = skip`) or waits for it (`overlap = queue`);
//!    - beyond `max_parallel_jobs` running runs the slot waits;
//!    - otherwise the run is claimed (ledger row and next fire time in one
//!      transaction) and runs on a task of its own ([`runner::run_job`]);
//! 3. wakes the heartbeat sessions that are due, within their active hours
//!    and held by no other live process ([`heartbeat::wake`], each on a
//!    task of its own); a session another process holds stays due and is
//!    looked at again on the next pass;
//! 4. sleeps until the next fire time (at most the clock's `max_sleep`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use herald_protocol::{CatchUp, DeliveryState, JobRunState, Overlap, RunTrigger};
use herald_store::{CronJob, LeaseOutcome, ProcessIdentity};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::delivery;
use crate::heartbeat::{self, WakeOutcome};
use crate::runner::{self, RunContext};
use crate::schedule::{Schedule, time_zone};

/// The lease key the active scheduler of a home holds.
pub const SCHEDULER_LEASE: &str = "scheduler";

/// How often the lease is renewed and a standing-by scheduler tries again.
const LEASE_INTERVAL: Duration = Duration::from_secs(2);

/// The most fire times walked when catching up (an `every 1m` job after
/// two years away).
const MAX_WALK: usize = 1_100_000;

/// Limits of one scheduler.
#[derive(Debug, Clone, Copy)]
pub struct SchedulerOptions {
    /// Runs at once across all jobs.
    pub max_parallel_jobs: usize,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        Self {
            max_parallel_jobs: 4,
        }
    }
}

/// Why the scheduler stopped.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error("the session store failed: {0}")]
    Store(String),
}

impl From<herald_store::StoreError> for SchedulerError {
    fn from(err: herald_store::StoreError) -> Self {
        Self::Store(err.to_string())
    }
}

impl From<herald_core::StoreGone> for SchedulerError {
    fn from(err: herald_core::StoreGone) -> Self {
        Self::Store(err.to_string())
    }
}

/// What a scheduler tells the person who started it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// It holds the lease and runs jobs.
    Active,
    /// Another live scheduler holds the lease.
    StandingBy { pid: u32 },
    /// A run was claimed.
    Started { job: String, run_id: i64 },
    /// A run ended.
    Finished {
        job: String,
        run_id: i64,
        state: JobRunState,
    },
    /// A slot was recorded without running (skipped).
    Skipped { job: String, reason: String },
    /// An open run of a dead scheduler became `unknown`.
    Abandoned { job_id: i64, run_id: i64 },
    /// A heartbeat session is due but another live process holds it.
    HeartbeatHeld { session_id: String, pid: u32 },
    /// A heartbeat wake ended (a reply that needs attention is `Alert`;
    /// `HEARTBEAT_OK` is `Ok` and carries no text).
    HeartbeatWoke {
        session_id: String,
        outcome: WakeOutcome,
    },
}

/// A scheduler of one home.
pub struct Scheduler {
    ctx: RunContext,
    clock: Arc<dyn Clock>,
    options: SchedulerOptions,
    me: ProcessIdentity,
    /// When this scheduler became active: fire times before it were missed.
    active_since: i64,
    running: HashMap<i64, String>,
    tasks: JoinSet<(i64, String, i64, JobRunState)>,
    /// Heartbeat sessions being woken.
    waking: HashSet<String>,
    wakes: JoinSet<(String, WakeOutcome)>,
    /// Held heartbeat sessions already reported (once per holder).
    told_held: HashMap<String, u32>,
    notify: Arc<dyn Fn(Notice) + Send + Sync>,
}

impl Scheduler {
    /// A scheduler for `ctx`'s home reading `clock`; `notify` hears what
    /// it does.
    pub fn new(
        ctx: RunContext,
        clock: Arc<dyn Clock>,
        options: SchedulerOptions,
        notify: Arc<dyn Fn(Notice) + Send + Sync>,
    ) -> Self {
        Self {
            ctx,
            clock,
            options,
            me: ProcessIdentity::current(),
            active_since: 0,
            running: HashMap::new(),
            tasks: JoinSet::new(),
            waking: HashSet::new(),
            wakes: JoinSet::new(),
            told_held: HashMap::new(),
            notify,
        }
    }

    /// Runs until `stop`: stands by while another scheduler holds the
    /// lease, then runs due jobs. On `stop` it waits for the runs it
    /// started and gives the lease back.
    pub async fn run(mut self, stop: CancellationToken) -> Result<(), SchedulerError> {
        let mut told_standing_by = None;
        loop {
            let me = self.me;
            // A scheduler that died may have left its runs' tool processes:
            // they are ended before its lease is taken over.
            let swept = herald_core::sweep_dead_owners(&self.ctx.store, SCHEDULER_LEASE)
                .await
                .map_err(SchedulerError::Store)?;
            let outcome = self
                .ctx
                .store
                .call(move |s| s.acquire_lease(SCHEDULER_LEASE, &me, &swept))
                .await??;
            match outcome {
                LeaseOutcome::Acquired { .. } => break,
                // Died since the sweep: sweep again at once.
                LeaseOutcome::Unswept(_) => continue,
                LeaseOutcome::Busy(holder) => {
                    if told_standing_by != Some(holder.pid) {
                        (self.notify)(Notice::StandingBy { pid: holder.pid });
                        told_standing_by = Some(holder.pid);
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => return Ok(()),
                () = tokio::time::sleep(LEASE_INTERVAL) => {}
            }
        }
        (self.notify)(Notice::Active);
        self.active_since = self.clock.now_ms();
        {
            let ctx = self.ctx.clone();
            tokio::spawn(async move {
                if let Err(err) = deliver_leftovers(&ctx).await {
                    tracing::warn!("undelivered job runs: {err}");
                }
            });
        }
        let mut renewed = tokio::time::Instant::now();
        let result = loop {
            let wait = match self.pass().await {
                Ok(wait) => wait,
                Err(err) => break Err(err),
            };
            if renewed.elapsed() >= LEASE_INTERVAL {
                let me = self.me;
                let _ = self
                    .ctx
                    .store
                    .call(move |s| s.renew_lease(SCHEDULER_LEASE, &me))
                    .await;
                renewed = tokio::time::Instant::now();
            }
            tokio::select! {
                () = stop.cancelled() => break Ok(()),
                () = tokio::time::sleep(wait) => {}
                Some(done) = self.tasks.join_next(), if !self.tasks.is_empty() => self.finished(done),
                Some(done) = self.wakes.join_next(), if !self.wakes.is_empty() => self.woke(done),
            }
        };
        while let Some(done) = self.tasks.join_next().await {
            self.finished(done);
        }
        while let Some(done) = self.wakes.join_next().await {
            self.woke(done);
        }
        let me = self.me;
        let _ = self
            .ctx
            .store
            .call(move |s| s.release_lease(SCHEDULER_LEASE, &me))
            .await;
        result
    }

    fn finished(&mut self, done: Result<(i64, String, i64, JobRunState), tokio::task::JoinError>) {
        match done {
            Ok((job_id, job, run_id, state)) => {
                self.running.remove(&job_id);
                (self.notify)(Notice::Finished { job, run_id, state });
            }
            Err(err) => tracing::warn!("a job run's task failed: {err}"),
        }
    }

    fn woke(&mut self, done: Result<(String, WakeOutcome), tokio::task::JoinError>) {
        match done {
            Ok((session_id, outcome)) => {
                self.waking.remove(&session_id);
                (self.notify)(Notice::HeartbeatWoke {
                    session_id,
                    outcome,
                });
            }
            Err(err) => tracing::warn!("a heartbeat wake's task failed: {err}"),
        }
    }

    /// Starts the wakes of the heartbeats due at `now`; returns when the
    /// next one is due.
    async fn heartbeats(&mut self, now: i64) -> Result<Option<i64>, SchedulerError> {
        let all = self.ctx.store.call(|s| s.heartbeats()).await??;
        let mut next: Option<i64> = None;
        let mut soonest = |at: i64| next = Some(next.map_or(at, |n: i64| n.min(at)));
        for hb in all {
            if self.waking.contains(&hb.session_id) {
                continue;
            }
            if hb.next_due_at > now {
                soonest(hb.next_due_at);
                continue;
            }
            if !heartbeat::is_active(&hb, now) {
                let later = heartbeat::next_due(hb.next_due_at, hb.every_ms, now);
                let id = hb.session_id.clone();
                self.ctx
                    .store
                    .call(move |s| s.postpone_heartbeat(&id, later))
                    .await??;
                soonest(later);
                continue;
            }
            if let Some(pid) = heartbeat::holder(&self.ctx, &hb.session_id).await {
                if self.told_held.get(&hb.session_id) != Some(&pid) {
                    self.told_held.insert(hb.session_id.clone(), pid);
                    (self.notify)(Notice::HeartbeatHeld {
                        session_id: hb.session_id.clone(),
                        pid,
                    });
                }
                continue;
            }
            self.told_held.remove(&hb.session_id);
            self.waking.insert(hb.session_id.clone());
            let ctx = self.ctx.clone();
            let clock = Arc::clone(&self.clock);
            self.wakes.spawn(async move {
                let outcome = heartbeat::wake(&ctx, &hb.session_id).await;
                if !matches!(outcome, WakeOutcome::Held(_)) {
                    let at = clock.now_ms();
                    let later = heartbeat::next_due(hb.next_due_at, hb.every_ms, at);
                    let (id, word) = (hb.session_id.clone(), outcome.word());
                    let detail = outcome.detail().map(str::to_owned);
                    let recorded = ctx
                        .store
                        .call(move |s| {
                            s.record_heartbeat_wake(&id, at, word, detail.as_deref(), later)
                        })
                        .await;
                    if !matches!(recorded, Ok(Ok(_))) {
                        tracing::warn!(session = %hb.session_id, "a heartbeat wake was not recorded");
                    }
                }
                (hb.session_id, outcome)
            });
        }
        Ok(next)
    }

    /// One pass (see the module documentation); returns how long to sleep.
    pub async fn pass(&mut self) -> Result<Duration, SchedulerError> {
        while let Some(done) = self.tasks.try_join_next() {
            self.finished(done);
        }
        while let Some(done) = self.wakes.try_join_next() {
            self.woke(done);
        }
        self.abandon_orphans().await?;
        let now = self.clock.now_ms();
        let jobs = self.ctx.store.call(|s| s.cron_jobs()).await??;
        let mut next_wake: Option<i64> = None;
        for job in jobs {
            if job.paused {
                continue;
            }
            let Some(due) = job.next_fire_at else {
                continue;
            };
            if due > now {
                next_wake = Some(next_wake.map_or(due, |w| w.min(due)));
                continue;
            }
            if let Some(wake) = self.dispatch(job, now).await? {
                next_wake = Some(next_wake.map_or(wake, |w| w.min(wake)));
            }
        }
        if let Some(due) = self.heartbeats(now).await? {
            next_wake = Some(next_wake.map_or(due, |w| w.min(due)));
        }
        let max = self.clock.max_sleep();
        let wait = next_wake.map_or(max, |at| {
            Duration::from_millis(u64::try_from(at.saturating_sub(now)).unwrap_or(0)).min(max)
        });
        Ok(wait.max(Duration::from_millis(10)))
    }

    /// Ends the open runs whose scheduler is gone.
    async fn abandon_orphans(&self) -> Result<(), SchedulerError> {
        let open = self.ctx.store.call(|s| s.open_cron_runs()).await??;
        for run in open {
            let Some(owner) = run.owner else { continue };
            if owner == self.me || owner.is_alive() {
                continue;
            }
            let reason = format!(
                "its scheduler (process {}) died while the run was {}; whether it finished is not \
                 known, and it is not run again on its own",
                owner.pid, run.state
            );
            let id = run.id;
            self.ctx
                .store
                .call(move |s| s.abandon_cron_run(id, &reason))
                .await??;
            (self.notify)(Notice::Abandoned {
                job_id: run.job_id,
                run_id: run.id,
            });
        }
        Ok(())
    }

    /// Handles a job whose fire time has come; returns when to look at it
    /// again if it had to wait.
    async fn dispatch(&mut self, job: CronJob, now: i64) -> Result<Option<i64>, SchedulerError> {
        let Some(due) = job.next_fire_at else {
            return Ok(None);
        };
        let schedule = match time_zone(&job.spec.tz)
            .and_then(|tz| Schedule::stored(&job.spec.schedule, tz, job.created_at))
        {
            Ok(schedule) => schedule,
            Err(err) => {
                self.record(
                    &job,
                    due,
                    RunTrigger::Schedule,
                    None,
                    JobRunState::Blocked,
                    &err.to_string(),
                )
                .await?;
                return Ok(None);
            }
        };
        // The latest fire time that has come, and how many came.
        let (mut latest, mut count) = (due, 1usize);
        while count < MAX_WALK {
            match schedule.next_after(latest) {
                Some(next) if next <= now => {
                    latest = next;
                    count += 1;
                }
                _ => break,
            }
        }
        let next = schedule.next_after(now.max(latest));
        let missed = due < self.active_since;
        if self.running.contains_key(&job.id) {
            return match job.spec.overlap {
                Overlap::Queue => Ok(Some(now.saturating_add(1_000))),
                Overlap::Skip => {
                    let reason = "the job's previous run was still going (overlap = skip)";
                    self.record(
                        &job,
                        latest,
                        RunTrigger::Schedule,
                        next,
                        JobRunState::Skipped,
                        reason,
                    )
                    .await?;
                    Ok(None)
                }
            };
        }
        if missed && job.spec.catch_up == CatchUp::Skip {
            let reason = format!(
                "{count} fire time{} passed while no scheduler ran (catch_up = skip)",
                if count == 1 { "" } else { "s" }
            );
            self.record(
                &job,
                latest,
                RunTrigger::Schedule,
                next,
                JobRunState::Skipped,
                &reason,
            )
            .await?;
            return Ok(None);
        }
        if self.running.len() >= self.options.max_parallel_jobs.max(1) {
            return Ok(Some(now.saturating_add(1_000)));
        }
        let trigger = if missed {
            RunTrigger::CatchUp
        } else {
            RunTrigger::Schedule
        };
        self.start(job, latest, trigger, next).await?;
        Ok(None)
    }

    /// Records a slot that does not run (skipped or blocked) and moves the
    /// job on to `next`.
    async fn record(
        &self,
        job: &CronJob,
        slot: i64,
        trigger: RunTrigger,
        next: Option<i64>,
        state: JobRunState,
        reason: &str,
    ) -> Result<(), SchedulerError> {
        let (id, me, reason) = (job.id, self.me, reason.to_owned());
        let said = reason.clone();
        self.ctx
            .store
            .call(move |s| s.claim_cron_run(id, slot, trigger, &me, next, state, Some(&reason)))
            .await??;
        (self.notify)(Notice::Skipped {
            job: job.spec.name.clone(),
            reason: said,
        });
        Ok(())
    }

    /// Claims the run for `slot` and starts it on a task of its own.
    async fn start(
        &mut self,
        job: CronJob,
        slot: i64,
        trigger: RunTrigger,
        next: Option<i64>,
    ) -> Result<(), SchedulerError> {
        let (id, me) = (job.id, self.me);
        let run_id = self
            .ctx
            .store
            .call(move |s| {
                s.claim_cron_run(id, slot, trigger, &me, next, JobRunState::Claimed, None)
            })
            .await??;
        let name = job.spec.name.clone();
        (self.notify)(Notice::Started {
            job: name.clone(),
            run_id,
        });
        self.running.insert(job.id, name.clone());
        let ctx = self.ctx.clone();
        self.tasks.spawn(async move {
            let state = execute(&ctx, &job, run_id).await;
            (job.id, name, run_id, state)
        });
        Ok(())
    }
}

/// Runs claimed run `run_id` of `job`, records its end and delivers its
/// result ([`delivery`]); returns the final state.
pub async fn execute(ctx: &RunContext, job: &CronJob, run_id: i64) -> JobRunState {
    let mut end = runner::run_job(ctx, job, run_id).await;
    if delivery::has_sinks(job) {
        end.delivery = DeliveryState::Pending;
    }
    let state = end.state;
    let recorded = ctx
        .store
        .call(move |s| {
            s.finish_cron_run(run_id, &end)?;
            s.cron_run(run_id)
        })
        .await;
    match recorded {
        Ok(Ok(Some(run))) => {
            delivery::deliver(ctx, job, &run).await;
        }
        _ => tracing::warn!(run_id, "the end of a job run was not recorded"),
    }
    state
}

/// Delivers the runs a stopped scheduler left undelivered.
async fn deliver_leftovers(ctx: &RunContext) -> Result<(), SchedulerError> {
    let runs = ctx.store.call(|s| s.undelivered_cron_runs()).await??;
    if runs.is_empty() {
        return Ok(());
    }
    let jobs = ctx.store.call(|s| s.cron_jobs()).await??;
    for run in runs {
        if let Some(job) = jobs.iter().find(|j| j.id == run.job_id) {
            delivery::deliver(ctx, job, &run).await;
        }
    }
    Ok(())
}
