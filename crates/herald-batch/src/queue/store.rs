//! The queue's operations, one statement (one round trip) each, over a
//! connection that is reopened when it breaks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::Mutex;
use tokio_postgres::Client;

use crate::results::{ItemResult, ItemStatus, Trajectory};
use crate::task::Task;

/// Why a queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("{0}")]
    Connect(String),
    #[error("PostgreSQL: {0}")]
    Sql(#[from] tokio_postgres::Error),
    #[error("{0}")]
    Invalid(String),
}

/// An item a worker holds: run it, heartbeat with its token, complete it.
#[derive(Debug, Clone)]
pub struct Claim {
    pub job: String,
    pub hash: String,
    pub task: Task,
    /// The lease token of this claim; the next claim of the item bumps it.
    pub token: i64,
    /// How many times the item has been claimed, this one included.
    pub attempt: i32,
}

/// Counts of one job.
#[derive(Debug, Clone, Default, Serialize)]
pub struct JobStatus {
    pub job: String,
    pub state: String,
    pub queued: i64,
    pub running: i64,
    pub done: i64,
    pub failed: i64,
    pub cancelled: i64,
    pub cost_usd: f64,
}

/// One worker's progress.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerStatus {
    pub id: String,
    pub host: String,
    pub pid: i32,
    /// Seconds since it was last heard from.
    pub last_seen_secs: f64,
    pub done: i32,
    pub failed: i32,
    /// Late results it sent that were rejected.
    pub rejected: i32,
    /// Items it holds a live lease on.
    pub running: i64,
}

/// A connection to the queue.
pub struct Queue {
    url: String,
    client: Mutex<Option<Arc<Client>>>,
    round_trips: AtomicU64,
}

impl Queue {
    /// Connects and creates or migrates the schema.
    pub async fn open(url: &str) -> Result<Self, QueueError> {
        let mut client = super::connect::connect(url)
            .await
            .map_err(QueueError::Connect)?;
        super::schema::migrate(&mut client).await?;
        Ok(Self {
            url: url.to_owned(),
            client: Mutex::new(Some(Arc::new(client))),
            round_trips: AtomicU64::new(3),
        })
    }

    /// Statements sent so far.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// The connection, reopened when it broke.
    async fn client(&self) -> Result<Arc<Client>, QueueError> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref().filter(|c| !c.is_closed()) {
            self.round_trips.fetch_add(1, Ordering::Relaxed);
            return Ok(Arc::clone(client));
        }
        *slot = None;
        let client = Arc::new(
            super::connect::connect(&self.url)
                .await
                .map_err(QueueError::Connect)?,
        );
        tracing::info!("connected to the queue");
        *slot = Some(Arc::clone(&client));
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        Ok(client)
    }

    /// Adds `tasks` to `job` (made if new); items already there (same
    /// content hash) are kept as they are. Returns how many were added.
    pub async fn enqueue(&self, job: &str, tasks: &[Task]) -> Result<u64, QueueError> {
        let client = self.client().await?;
        let items: Vec<Value> = tasks
            .iter()
            .map(|t| {
                serde_json::json!({
                    "hash": t.hash, "idx": t.index, "item_id": t.id,
                    "task": serde_json::to_value(t).unwrap_or(Value::Null),
                })
            })
            .collect();
        let items = Value::Array(items);
        let row = client
            .query_one(
                "WITH job AS (
                    INSERT INTO herald_batch_jobs (id) VALUES ($1)
                    ON CONFLICT (id) DO UPDATE SET state = 'active' RETURNING id
                 ), added AS (
                    INSERT INTO herald_batch_items (job_id, hash, idx, item_id, task)
                    SELECT (SELECT id FROM job), x->>'hash', (x->>'idx')::int, x->>'item_id', x->'task'
                    FROM jsonb_array_elements($2::jsonb) AS x
                    ON CONFLICT (job_id, hash) DO NOTHING RETURNING 1
                 ) SELECT count(*) FROM added",
                &[&job, &items],
            )
            .await?;
        Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
    }

    /// Records a worker (again) and when it was last seen.
    pub async fn register_worker(&self, id: &str, host: &str, pid: u32) -> Result<(), QueueError> {
        let client = self.client().await?;
        let pid = i32::try_from(pid).unwrap_or(0);
        client
            .execute(
                "INSERT INTO herald_batch_workers (id, host, pid) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO UPDATE SET last_seen = now()",
                &[&id, &host, &pid],
            )
            .await?;
        Ok(())
    }

    /// Claims the next item (of `job`, or of any active job): a queued one,
    /// or one whose lease expired (its worker is presumed dead).
    pub async fn claim(
        &self,
        worker: &str,
        job: Option<&str>,
        lease: Duration,
    ) -> Result<Option<Claim>, QueueError> {
        let client = self.client().await?;
        let lease_secs = lease.as_secs_f64();
        let row = client
            .query_opt(
                "WITH next AS (
                    SELECT i.job_id, i.hash FROM herald_batch_items i
                    JOIN herald_batch_jobs j ON j.id = i.job_id AND j.state = 'active'
                    WHERE (i.state = 'queued' OR (i.state = 'running' AND i.lease_expires < now()))
                      AND ($2::text IS NULL OR i.job_id = $2)
                    ORDER BY i.job_id, i.idx
                    LIMIT 1
                    FOR UPDATE OF i SKIP LOCKED
                 )
                 UPDATE herald_batch_items i
                 SET state = 'running', attempts = i.attempts + 1, lease_token = i.lease_token + 1,
                     worker = $1, lease_expires = now() + make_interval(secs => $3)
                 FROM next WHERE i.job_id = next.job_id AND i.hash = next.hash
                 RETURNING i.job_id, i.hash, i.task, i.lease_token, i.attempts",
                &[&worker, &job, &lease_secs],
            )
            .await?;
        let Some(row) = row else { return Ok(None) };
        let task: Value = row.get(2);
        let task: Task = serde_json::from_value(task)
            .map_err(|err| QueueError::Invalid(format!("a queued task is unreadable: {err}")))?;
        Ok(Some(Claim {
            job: row.get(0),
            hash: row.get(1),
            task,
            token: row.get(3),
            attempt: row.get(4),
        }))
    }

    /// Extends the lease; `false` when it is no longer this claim's (it
    /// expired and was reclaimed) or the job was cancelled.
    pub async fn heartbeat(
        &self,
        claim: &Claim,
        worker: &str,
        lease: Duration,
    ) -> Result<bool, QueueError> {
        let client = self.client().await?;
        let lease_secs = lease.as_secs_f64();
        let row = client
            .query_one(
                "WITH held AS (
                    UPDATE herald_batch_items i SET lease_expires = now() + make_interval(secs => $4)
                    FROM herald_batch_jobs j
                    WHERE i.job_id = $1 AND i.hash = $2 AND i.lease_token = $3 AND i.state = 'running'
                      AND j.id = i.job_id AND j.state = 'active'
                    RETURNING 1
                 ), seen AS (
                    UPDATE herald_batch_workers SET last_seen = now() WHERE id = $5 RETURNING 1
                 ) SELECT (SELECT count(*) FROM held), (SELECT count(*) FROM seen)",
                &[&claim.job, &claim.hash, &claim.token, &lease_secs, &worker],
            )
            .await?;
        Ok(row.get::<_, i64>(0) == 1)
    }

    /// Writes the result and trajectory of `claim` and the worker's counts
    /// in one statement. `false`: the claim was no longer current (a late
    /// result from a worker presumed dead), nothing of it was kept.
    pub async fn complete(
        &self,
        claim: &Claim,
        worker: &str,
        result: &ItemResult,
        trajectory: Option<&Trajectory>,
    ) -> Result<bool, QueueError> {
        let client = self.client().await?;
        let result_json = serde_json::to_value(result)
            .map_err(|err| QueueError::Invalid(format!("cannot encode a result: {err}")))?;
        let trajectory_json = trajectory
            .map(serde_json::to_value)
            .transpose()
            .map_err(|err| QueueError::Invalid(format!("cannot encode a trajectory: {err}")))?;
        let failed = i32::from(result.status != ItemStatus::Completed);
        let row = client
            .query_one(
                "WITH done AS (
                    UPDATE herald_batch_items SET state = 'done', result = $4, trajectory = $5,
                        finished_at = now(), lease_expires = NULL
                    WHERE job_id = $1 AND hash = $2 AND lease_token = $3 AND state = 'running'
                    RETURNING 1
                 ), counted AS (
                    UPDATE herald_batch_workers SET last_seen = now(),
                        done = done + (SELECT count(*) FROM done)::int,
                        failed = failed + $7 * (SELECT count(*) FROM done)::int,
                        rejected = rejected + 1 - (SELECT count(*) FROM done)::int
                    WHERE id = $6 RETURNING 1
                 ) SELECT (SELECT count(*) FROM done), (SELECT count(*) FROM counted)",
                &[
                    &claim.job,
                    &claim.hash,
                    &claim.token,
                    &result_json,
                    &trajectory_json,
                    &worker,
                    &failed,
                ],
            )
            .await?;
        Ok(row.get::<_, i64>(0) == 1)
    }

    /// Puts a claimed item back in the queue (its worker is stopping);
    /// `false` when the claim was no longer current.
    pub async fn release(&self, claim: &Claim) -> Result<bool, QueueError> {
        let client = self.client().await?;
        let n = client
            .execute(
                "UPDATE herald_batch_items SET state = 'queued', lease_expires = NULL, worker = NULL
                 WHERE job_id = $1 AND hash = $2 AND lease_token = $3 AND state = 'running'",
                &[&claim.job, &claim.hash, &claim.token],
            )
            .await?;
        Ok(n == 1)
    }

    /// Items of `job` (or of every active job) not done or cancelled.
    pub async fn unfinished(&self, job: Option<&str>) -> Result<i64, QueueError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT count(*) FROM herald_batch_items i JOIN herald_batch_jobs j ON j.id = i.job_id
                 WHERE j.state = 'active' AND i.state IN ('queued', 'running')
                   AND ($1::text IS NULL OR i.job_id = $1)",
                &[&job],
            )
            .await?;
        Ok(row.get(0))
    }

    /// Cancels `job`: queued items are cancelled, workers running its items
    /// lose their leases at the next heartbeat. Returns the items cancelled
    /// now, or `None` when there is no such job.
    pub async fn cancel(&self, job: &str) -> Result<Option<u64>, QueueError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "WITH j AS (UPDATE herald_batch_jobs SET state = 'cancelled' WHERE id = $1 RETURNING 1),
                 c AS (UPDATE herald_batch_items SET state = 'cancelled', lease_expires = NULL
                       WHERE job_id = $1 AND state IN ('queued', 'running') RETURNING 1)
                 SELECT (SELECT count(*) FROM j), (SELECT count(*) FROM c)",
                &[&job],
            )
            .await?;
        if row.get::<_, i64>(0) == 0 {
            return Ok(None);
        }
        Ok(Some(u64::try_from(row.get::<_, i64>(1)).unwrap_or(0)))
    }

    /// Counts per job (or of one) and every worker's progress.
    pub async fn status(
        &self,
        job: Option<&str>,
    ) -> Result<(Vec<JobStatus>, Vec<WorkerStatus>), QueueError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT j.id, j.state,
                    count(*) FILTER (WHERE i.state = 'queued'),
                    count(*) FILTER (WHERE i.state = 'running'),
                    count(*) FILTER (WHERE i.state = 'done'),
                    count(*) FILTER (WHERE i.state = 'done' AND i.result->>'status' <> 'completed'),
                    count(*) FILTER (WHERE i.state = 'cancelled'),
                    coalesce(sum((i.result->>'cost_usd')::float8), 0)
                 FROM herald_batch_jobs j LEFT JOIN herald_batch_items i ON i.job_id = j.id
                 WHERE $1::text IS NULL OR j.id = $1
                 GROUP BY j.id, j.state, j.created_at ORDER BY j.created_at",
                &[&job],
            )
            .await?;
        let jobs = rows
            .iter()
            .map(|r| JobStatus {
                job: r.get(0),
                state: r.get(1),
                queued: r.get(2),
                running: r.get(3),
                done: r.get(4),
                failed: r.get(5),
                cancelled: r.get(6),
                cost_usd: r.get(7),
            })
            .collect();
        let rows = client
            .query(
                "SELECT w.id, w.host, w.pid, extract(epoch FROM now() - w.last_seen)::float8,
                    w.done, w.failed, w.rejected,
                    (SELECT count(*) FROM herald_batch_items i WHERE i.worker = w.id
                       AND i.state = 'running' AND i.lease_expires > now())
                 FROM herald_batch_workers w ORDER BY w.started_at",
                &[],
            )
            .await?;
        let workers = rows
            .iter()
            .map(|r| WorkerStatus {
                id: r.get(0),
                host: r.get(1),
                pid: r.get(2),
                last_seen_secs: r.get(3),
                done: r.get(4),
                failed: r.get(5),
                rejected: r.get(6),
                running: r.get(7),
            })
            .collect();
        Ok((jobs, workers))
    }

    /// The results and trajectories of `job`'s finished items whose hash
    /// is not in `seen`, in file order: a waiting command collects each
    /// result once.
    pub async fn new_results(
        &self,
        job: &str,
        seen: &[String],
    ) -> Result<Vec<(ItemResult, Option<Trajectory>)>, QueueError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT result, trajectory FROM herald_batch_items
                 WHERE job_id = $1 AND state = 'done' AND NOT (hash = ANY($2)) ORDER BY idx",
                &[&job, &seen],
            )
            .await?;
        rows.iter().map(read_row).collect()
    }

    /// The results and trajectories of `job`'s finished items, in file order.
    pub async fn results(
        &self,
        job: &str,
    ) -> Result<Vec<(ItemResult, Option<Trajectory>)>, QueueError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT result, trajectory FROM herald_batch_items
                 WHERE job_id = $1 AND state = 'done' ORDER BY idx",
                &[&job],
            )
            .await?;
        rows.iter().map(read_row).collect()
    }
}

/// A finished item's row: its result and trajectory.
fn read_row(r: &tokio_postgres::Row) -> Result<(ItemResult, Option<Trajectory>), QueueError> {
    let result: Value = r.get(0);
    let trajectory: Option<Value> = r.get(1);
    let result = serde_json::from_value(result)
        .map_err(|err| QueueError::Invalid(format!("a stored result is unreadable: {err}")))?;
    let trajectory = trajectory
        .map(serde_json::from_value)
        .transpose()
        .map_err(|err| QueueError::Invalid(format!("a stored trajectory is unreadable: {err}")))?;
    Ok((result, trajectory))
}
