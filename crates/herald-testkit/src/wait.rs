//! Waiting for a condition with a deadline, for tests that would otherwise
//! sleep a fixed time and hope that something has happened by then.

use std::time::{Duration, Instant};

/// How often [`wait_until`] and [`wait_until_async`] check their condition.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Waits until `done` returns true, checking it every 20 ms.
///
/// ```no_run
/// # async fn demo(path: &std::path::Path) {
/// use std::time::Duration;
/// herald_testkit::wait_until("the marker file", Duration::from_secs(20), || path.exists()).await;
/// # }
/// ```
///
/// # Panics
/// When `timeout` passes before `done` returns true; the message names
/// `what`.
pub async fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// [`wait_until`] for a condition that has to await (a command, a request).
///
/// # Panics
/// When `timeout` passes before `done` returns true; the message names
/// `what`.
pub async fn wait_until_async(what: &str, timeout: Duration, mut done: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    loop {
        if done().await {
            return;
        }
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}
