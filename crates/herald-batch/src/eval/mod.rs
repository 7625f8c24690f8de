//! Evaluation: a suite of tasks, each run as a batch item in its own
//! working directory, then graded by its checks — deterministic ones on
//! the trajectory and the files, judged ones by a judge model — with
//! metrics per task and per suite, repeats (pass@k), reports and the
//! comparison of two runs.

pub mod checks;
pub mod compare;
pub mod judge;
pub mod metrics;
pub mod queued;
pub mod report;
pub mod run;
pub mod suite;

pub use checks::{Check, CheckOutcome, SequenceMode};
pub use suite::{EvalTask, Suite, load_suite};
