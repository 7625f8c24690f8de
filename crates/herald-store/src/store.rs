//! Opening the database: file location, connection settings, migrations.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::Connection;

use crate::busy;
use crate::error::{StoreError, classify, sql};
use crate::migrations;
use crate::search::{DEFAULT_SEARCH_BUDGET, SearchDeadline};

/// Handle on one herald state database.
///
/// Not `Sync` (SQLite connections are single-threaded); keep it on one thread
/// or behind a mutex. Several processes may open the same file at once, even
/// a file that does not exist yet: creation, the switch to WAL mode and the
/// migrations wait for each other. WAL lets readers run alongside the single
/// writer, and writers wait up to 5 s for a lock.
pub struct Store {
    pub(crate) conn: Connection,
    /// Where the database lives, for error messages (`:memory:` for tests).
    pub(crate) path: String,
    /// Interrupts bm25 ranking that runs past `search_budget`.
    pub(crate) deadline: Arc<SearchDeadline>,
    pub(crate) search_budget: Duration,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path`, creating missing
    /// parent directories, and upgrades its schema to [`crate::SCHEMA_VERSION`].
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let display = path.display().to_string();
        let conn = Connection::open(path).map_err(sql(&display, "opening the database"))?;
        Store::setup(conn, display)
    }

    /// A private database that lives only as long as the value; for tests and
    /// for runs started with persistence disabled.
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let display = ":memory:".to_owned();
        let conn = Connection::open_in_memory().map_err(sql(&display, "opening the database"))?;
        Store::setup(conn, display)
    }

    fn setup(mut conn: Connection, path: String) -> Result<Store, StoreError> {
        conn.busy_handler(Some(busy::busy_handler))
            .map_err(sql(&path, "setting the busy handler"))?;
        // Changing the journal mode needs the database to itself, and SQLite
        // answers SQLITE_BUSY at once (without the busy handler) while another
        // connection is creating or reading the new file: retry with backoff
        // up to the busy timeout. The answer is the resulting mode: "wal" for
        // files, "memory" in memory.
        // Before the switch: creating a new file's WAL then costs no fsync
        // of its own (with WAL, NORMAL syncs only at checkpoints).
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sql(&path, "setting synchronous=NORMAL"))?;
        let started = Instant::now();
        busy::retry_busy(started, || {
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))
        })
        .map_err(|(err, waited)| locked_after(&path, "switching to WAL mode", err, waited))?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(sql(&path, "enabling foreign keys"))?;
        // Up to 4 MiB of page cache (SQLite's default is 2 MiB). A single
        // session fills little of it: the 60-turn benchmark run grew by
        // 1.3 MB over a 256 KiB cache, with no change in CPU. A tree of
        // thousands of agents needs it: its group commits touch many pages
        // at once, and with 256 KiB SQLite spilled dirty pages into the WAL
        // before the commit and read index pages back from the file. 10,000
        // children took 6% less CPU (docs/BENCHMARKS.md, "10,000 children").
        conn.pragma_update(None, "cache_size", -4096)
            .map_err(sql(&path, "setting the page cache size"))?;
        // Savepoints (each write's unit inside a group, see `write_unit.rs`)
        // and statements inside a transaction keep the pages they change in
        // a sub-journal. In memory, that costs a copy; in a temporary file,
        // a write system call for every page.
        conn.pragma_update(None, "temp_store", "MEMORY")
            .map_err(sql(&path, "keeping temporary data in memory"))?;
        crate::schema::create_or_migrate(&mut conn, &path)?;
        let deadline = SearchDeadline::new();
        deadline
            .install(&mut conn)
            .map_err(sql(&path, "installing the search time budget"))?;
        Ok(Store {
            conn,
            path,
            deadline,
            search_budget: DEFAULT_SEARCH_BUDGET,
        })
    }

    /// The schema version of the open database (equals [`crate::SCHEMA_VERSION`]
    /// after a successful open); shown by `herald doctor`.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        migrations::current_version(&self.conn, &self.path)
    }

    /// Where this store lives (`:memory:` for in-memory stores).
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// `err` as a [`StoreError`]; a lock that outlasted the retries of
/// [`busy::retry_busy`] reports the `waited` time.
fn locked_after(
    path: &str,
    context: &'static str,
    err: rusqlite::Error,
    waited: Duration,
) -> StoreError {
    if busy::is_busy(&err) {
        StoreError::Locked {
            path: path.to_owned(),
            context,
            waited,
        }
    } else {
        classify(path, context, err)
    }
}

/// Current time in Unix milliseconds (0 if the clock is before 1970).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Saturating `u64` → SQLite integer.
pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// SQLite integer → `u64`, treating negatives (never written) as 0.
pub(crate) fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A fresh id such as `imp_019a3f2c7b1e_5d2c81f0`: `prefix`, the creation time
/// in hex milliseconds (so ids sort by age), and 32 bits that differ between
/// processes and calls. Used for imported sessions; callers may use it too.
pub fn new_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut x = u64::from(nanos) ^ (u64::from(std::process::id()) << 32) ^ count;
    // splitmix64 finaliser: spreads the bits of the inputs over the output.
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    format!("{prefix}_{:012x}_{:08x}", now_ms(), x & 0xFFFF_FFFF)
}
