//! Waiting for other connections' locks, and knowing how long we waited.
//!
//! SQLite's built-in `busy_timeout` cannot say how long it slept before it
//! gave up, and some operations (switching to WAL mode on a new file) return
//! `SQLITE_BUSY` without calling the busy handler at all. So the store
//! installs [`busy_handler`], which sleeps with backoff up to
//! [`BUSY_TIMEOUT`] and remembers, per thread, how long the wait that gave up
//! lasted; [`take_waited`] hands that to the error message. Operations SQLite
//! does not retry itself go through [`retry_busy`].

use std::cell::Cell;
use std::time::{Duration, Instant};

use rusqlite::ErrorCode;

/// How long a statement waits for another connection's lock before the store
/// reports [`crate::StoreError::Locked`].
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Sleeps between retries: short at first (most locks are brief), then
/// capped so a waiter notices a released lock quickly.
const BACKOFF_MS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

thread_local! {
    /// When the busy handler's current wait began (set on its first call).
    static WAIT_STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
    /// How long the last wait that gave up lasted; taken by the error path.
    static GAVE_UP_AFTER: Cell<Option<Duration>> = const { Cell::new(None) };
}

/// The pause before retry number `attempt` (0-based), never past `left`.
pub(crate) fn backoff(attempt: usize, left: Duration) -> Duration {
    let ms = BACKOFF_MS[attempt.min(BACKOFF_MS.len() - 1)];
    Duration::from_millis(ms).min(left)
}

/// The busy handler installed on every connection: `true` = retry after a
/// pause, `false` = give up (SQLite then returns `SQLITE_BUSY`).
pub(crate) fn busy_handler(count: i32) -> bool {
    let now = Instant::now();
    let started = if count == 0 {
        WAIT_STARTED.set(Some(now));
        GAVE_UP_AFTER.set(None);
        now
    } else {
        WAIT_STARTED.get().unwrap_or(now)
    };
    let waited = now.saturating_duration_since(started);
    if waited >= BUSY_TIMEOUT {
        GAVE_UP_AFTER.set(Some(waited));
        return false;
    }
    let attempt = usize::try_from(count).unwrap_or(0);
    std::thread::sleep(backoff(attempt, BUSY_TIMEOUT - waited));
    true
}

/// How long the busy handler waited before the failure being reported on
/// this thread; zero when SQLite reported the lock without waiting.
pub(crate) fn take_waited() -> Duration {
    GAVE_UP_AFTER.take().unwrap_or(Duration::ZERO)
}

/// Whether `err` means another connection holds a lock.
pub(crate) fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Runs `op` until it succeeds, fails with something other than a lock, or
/// [`BUSY_TIMEOUT`] has passed since `since`; for operations SQLite does not
/// retry through the busy handler. On a lock that outlasts the timeout the
/// error is returned with the time really waited.
pub(crate) fn retry_busy<T>(
    since: Instant,
    mut op: impl FnMut() -> rusqlite::Result<T>,
) -> Result<T, (rusqlite::Error, Duration)> {
    let mut attempt = 0;
    loop {
        match op() {
            Ok(value) => return Ok(value),
            Err(err) if is_busy(&err) => {
                let waited = since.elapsed();
                if waited >= BUSY_TIMEOUT {
                    return Err((err, waited));
                }
                std::thread::sleep(backoff(attempt, BUSY_TIMEOUT - waited));
                attempt += 1;
            }
            Err(err) => {
                let waited = since.elapsed();
                return Err((err, waited));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_never_passes_the_deadline() {
        assert_eq!(backoff(0, BUSY_TIMEOUT), Duration::from_millis(1));
        assert_eq!(backoff(500, BUSY_TIMEOUT), Duration::from_millis(100));
        assert_eq!(
            backoff(500, Duration::from_millis(7)),
            Duration::from_millis(7)
        );
    }

    #[test]
    fn retry_busy_retries_locks_and_returns_other_errors_at_once() {
        let mut calls = 0;
        let result = retry_busy(Instant::now(), || {
            calls += 1;
            if calls < 3 {
                Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                    None,
                ))
            } else {
                Ok(calls)
            }
        });
        assert!(matches!(result, Ok(3)));
        let mut calls = 0;
        let result: Result<(), _> = retry_busy(Instant::now(), || {
            calls += 1;
            Err(rusqlite::Error::QueryReturnedNoRows)
        });
        assert!(result.is_err());
        assert_eq!(calls, 1);
    }
}
