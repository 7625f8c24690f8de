//! A worker: claims items of the queue while it has room, runs each on
//! this machine's store with a heartbeat keeping its lease, and writes
//! the result back. A lost lease (expired, reclaimed, or the job
//! cancelled) interrupts the item; its result would be rejected anyway.
//! A broken connection is reopened on the next statement, with a pause
//! between failed attempts.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::store::{Claim, Queue};
use crate::ItemRunner;

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// This worker's id in the queue (unique per process).
    pub id: String,
    /// Items at once.
    pub concurrency: usize,
    /// Only this job's items.
    pub job: Option<String>,
    pub lease: Duration,
    /// Wait between looks at an empty queue.
    pub poll: Duration,
    /// Exit once nothing is left to run (queued or running anywhere).
    pub drain: bool,
}

/// What a worker did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerReport {
    pub completed: u64,
    /// Results the queue rejected (the lease was lost).
    pub rejected: u64,
    /// Statements sent to PostgreSQL.
    pub round_trips: u64,
}

/// Runs until `cancel` (or, with `drain`, until the queue is empty).
pub async fn run_worker(
    queue: Arc<Queue>,
    runner: Arc<ItemRunner>,
    options: WorkerOptions,
    cancel: CancellationToken,
) -> WorkerReport {
    let mut report = WorkerReport::default();
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".to_owned());
    let mut backoff = Duration::from_millis(200);
    while let Err(err) = queue
        .register_worker(&options.id, &host, std::process::id())
        .await
    {
        tracing::warn!("cannot register with the queue: {err}; retrying");
        if sleep_or_cancel(backoff, &cancel).await {
            return report;
        }
        backoff = (backoff * 2).min(Duration::from_secs(10));
    }
    let mut running: JoinSet<Ended> = JoinSet::new();
    loop {
        let mut idle = false;
        while running.len() < options.concurrency.max(1) && !cancel.is_cancelled() {
            match queue
                .claim(&options.id, options.job.as_deref(), options.lease)
                .await
            {
                Ok(Some(claim)) => {
                    backoff = Duration::from_millis(200);
                    tracing::info!(item = %claim.task.id, attempt = claim.attempt, "claimed");
                    running.spawn(run_claim(
                        Arc::clone(&queue),
                        Arc::clone(&runner),
                        claim,
                        options.clone(),
                        cancel.clone(),
                    ));
                }
                Ok(None) => {
                    idle = true;
                    break;
                }
                Err(err) => {
                    tracing::warn!("the queue is unreachable: {err}; retrying in {backoff:?}");
                    idle = true;
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                    break;
                }
            }
        }
        if cancel.is_cancelled() && running.is_empty() {
            break;
        }
        if running.is_empty() && idle && options.drain {
            match queue.unfinished(options.job.as_deref()).await {
                Ok(0) => break,
                Ok(_) => {}
                Err(err) => tracing::warn!("the queue is unreachable: {err}"),
            }
        }
        let pause = if idle {
            options.poll.max(backoff.min(options.poll * 10))
        } else {
            options.poll
        };
        tokio::select! {
            joined = running.join_next(), if !running.is_empty() => {
                match joined {
                    Some(Ok(Ended::Accepted)) => report.completed += 1,
                    Some(Ok(Ended::Rejected)) => report.rejected += 1,
                    Some(Ok(Ended::Released)) => {}
                    Some(Err(err)) => tracing::warn!("an item's task stopped: {err}"),
                    None => {}
                }
            }
            () = tokio::time::sleep(pause), if idle || running.len() >= options.concurrency.max(1) => {}
            () = cancel.cancelled(), if !cancel.is_cancelled() => {}
        }
    }
    report.round_trips = queue.round_trips();
    report
}

/// How a claimed item ended for its worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// Its result was written.
    Accepted,
    /// Its result was refused: the claim was no longer current.
    Rejected,
    /// The worker stopped and put it back (or could not write it).
    Released,
}

/// Sleeps `d`; `true` when cancelled first.
async fn sleep_or_cancel(d: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(d) => false,
        () = cancel.cancelled() => true,
    }
}

/// Runs one claimed item with its heartbeat and writes its result.
async fn run_claim(
    queue: Arc<Queue>,
    runner: Arc<ItemRunner>,
    claim: Claim,
    options: WorkerOptions,
    cancel: CancellationToken,
) -> Ended {
    let item_cancel = cancel.child_token();
    let heartbeat = {
        let (queue, claim, options, item_cancel) = (
            Arc::clone(&queue),
            claim.clone(),
            options.clone(),
            item_cancel.clone(),
        );
        tokio::spawn(async move {
            let every = options.lease / 3;
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = item_cancel.cancelled() => return,
                }
                match queue.heartbeat(&claim, &options.id, options.lease).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(item = %claim.task.id, "the lease was lost (expired, reclaimed or cancelled); stopping the item");
                        item_cancel.cancel();
                        return;
                    }
                    Err(err) => tracing::warn!(item = %claim.task.id, "heartbeat failed: {err}"),
                }
            }
        })
    };
    let (mut result, trajectory) = match &claim.task.eval {
        Some(work) => {
            crate::eval::queued::run_queued(&runner, &claim.task, work, claim.token, &item_cancel)
                .await
        }
        None => runner.run(&claim.task, &item_cancel).await,
    };
    item_cancel.cancel();
    let _ = heartbeat.await;
    result.worker = Some(options.id.clone());
    if cancel.is_cancelled() {
        // The worker is stopping: the item goes back for another worker
        // (or this one's next start) instead of ending interrupted.
        if let Err(err) = queue.release(&claim).await {
            tracing::warn!(item = %claim.task.id, "cannot put the item back: {err}; its lease will expire");
        }
        return Ended::Released;
    }
    let mut backoff = Duration::from_millis(200);
    loop {
        match queue
            .complete(&claim, &options.id, &result, trajectory.as_ref())
            .await
        {
            Ok(true) => return Ended::Accepted,
            Ok(false) => {
                tracing::warn!(item = %claim.task.id, "the result was rejected: another worker holds the item now");
                return Ended::Rejected;
            }
            Err(err) => {
                tracing::warn!(item = %claim.task.id, "cannot write the result: {err}; retrying");
                if sleep_or_cancel(backoff, &cancel).await {
                    return Ended::Released;
                }
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
    }
}
