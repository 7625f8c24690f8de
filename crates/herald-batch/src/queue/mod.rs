//! The PostgreSQL queue: `herald batch run --queue URL` enqueues items,
//! `herald worker --queue URL` on any number of machines claims them under
//! a lease (`FOR UPDATE SKIP LOCKED`), keeps the lease alive with
//! heartbeats, runs each item on its own embedded store, and writes the
//! result, usage and trajectory back in one statement. An item whose
//! worker died is reclaimed when its lease expires; every claim bumps the
//! item's lease token, and a result is accepted only with the current
//! token, so a late result from a presumed-dead worker is rejected.

pub mod connect;
pub mod schema;
pub mod store;
pub mod worker;

pub use store::{Claim, JobStatus, Queue, QueueError, WorkerStatus};
