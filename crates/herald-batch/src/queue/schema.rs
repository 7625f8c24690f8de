//! The queue's tables, created and migrated by herald: each migration runs
//! once, in order, in one transaction under an advisory lock, so workers
//! starting at once do not race.

use tokio_postgres::Client;

/// The advisory lock key of migrations ("herald" in ASCII).
const MIGRATION_LOCK: i64 = 0x6865_7261_6c64;

/// The migrations, in order; the schema version is their count.
const MIGRATIONS: &[&str] = &[
    // 1: jobs, items, workers.
    "CREATE TABLE herald_batch_jobs (
        id text PRIMARY KEY,
        state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'cancelled')),
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE herald_batch_items (
        job_id text NOT NULL REFERENCES herald_batch_jobs(id),
        hash text NOT NULL,
        idx integer NOT NULL,
        item_id text NOT NULL,
        task jsonb NOT NULL,
        state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'cancelled')),
        attempts integer NOT NULL DEFAULT 0,
        lease_token bigint NOT NULL DEFAULT 0,
        worker text,
        lease_expires timestamptz,
        result jsonb,
        trajectory jsonb,
        finished_at timestamptz,
        PRIMARY KEY (job_id, hash)
    );
    CREATE INDEX herald_batch_items_claim ON herald_batch_items (state, lease_expires, job_id, idx);
    CREATE TABLE herald_batch_workers (
        id text PRIMARY KEY,
        host text NOT NULL,
        pid integer NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now(),
        last_seen timestamptz NOT NULL DEFAULT now(),
        done integer NOT NULL DEFAULT 0,
        failed integer NOT NULL DEFAULT 0,
        rejected integer NOT NULL DEFAULT 0
    );",
];

/// Brings the schema up to date; returns the version.
pub async fn migrate(client: &mut Client) -> Result<usize, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS herald_batch_schema (version integer NOT NULL)")
        .await?;
    let row = tx
        .query_opt("SELECT version FROM herald_batch_schema", &[])
        .await?;
    let current = match row {
        Some(row) => usize::try_from(row.get::<_, i32>(0)).unwrap_or(0),
        None => {
            tx.execute("INSERT INTO herald_batch_schema (version) VALUES (0)", &[])
                .await?;
            0
        }
    };
    for migration in MIGRATIONS.iter().skip(current) {
        tx.batch_execute(migration).await?;
    }
    let version = i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX);
    tx.execute("UPDATE herald_batch_schema SET version = $1", &[&version])
        .await?;
    tx.commit().await?;
    Ok(MIGRATIONS.len())
}
