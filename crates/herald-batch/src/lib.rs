//! Batch runs and evaluation. A task file (JSONL or CSV) becomes items;
//! each item is one headless session through the session runtime of
//! `herald-core`, run locally with bounded concurrency or claimed from a
//! PostgreSQL queue by workers on many machines. Results and trajectories
//! are written per item; eval suites add checks, a judge and reports.

pub mod distribution;
pub mod error;
pub mod eval;

pub mod export;
pub mod hash;
pub mod item;
pub mod local;
pub mod output;
pub mod progress;
pub mod queue;
pub mod results;
pub mod task;
pub mod template;
pub mod workdir;

pub use error::BatchError;
pub use item::{ItemRunner, RunnerSetup};
pub use results::{ItemResult, ItemStatus, ToolStat, Trajectory};
pub use task::{Task, load_tasks};
