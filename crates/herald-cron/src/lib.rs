//! herald's scheduled jobs.
//!
//! - [`schedule`]: when a job fires (cron expressions in a time zone,
//!   `every`, `at`, `in`).
//! - [`jobs`]: defining a job (`herald cron add` / `edit`).
//! - [`runner`]: running one job headless through the session runtime.
//! - [`scheduler`]: the one active scheduler of a home, its ledger rules.
//! - [`heartbeat`]: sessions that wake on their own with `HEARTBEAT.md`.
//! - [`tool`]: `cronjob`, the agent's way to schedule.
//! - [`clock`]: the time the scheduler reads (a file clock for tests).

pub mod clock;
pub mod delivery;
pub mod heartbeat;
pub mod jobs;
pub mod runner;
pub mod schedule;
pub mod scheduler;
pub mod tool;

pub use clock::{Clock, FileClock, SystemClock};
pub use herald_permissions::Mode as PermissionMode;
pub use jobs::{JobError, JobRequest, define, valid_name};
pub use schedule::{Schedule, ScheduleError, describe_time, local_time_zone, time_zone};
pub use scheduler::{Notice, SCHEDULER_LEASE, Scheduler, SchedulerError, SchedulerOptions};
pub use tool::{CRON_TOOLSET, CronjobTool};
