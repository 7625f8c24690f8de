//! The time the scheduler reads. Real runs use the system clock; tests of
//! the real binary point `HERALD_CLOCK_FILE` at a file holding Unix
//! milliseconds, which they move forward instead of waiting.

use std::path::PathBuf;
use std::time::Duration;

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// Unix milliseconds now.
    fn now_ms(&self) -> i64;

    /// Longest the scheduler sleeps between looks at the clock: the time
    /// to the next fire time, capped so a moved file clock is seen soon.
    fn max_sleep(&self) -> Duration;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    fn max_sleep(&self) -> Duration {
        Duration::from_secs(30)
    }
}

/// A clock read from a file of Unix milliseconds (tests); the system clock
/// while the file is missing or unreadable.
#[derive(Debug, Clone)]
pub struct FileClock {
    path: PathBuf,
}

impl FileClock {
    /// The clock in `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

impl Clock for FileClock {
    fn now_ms(&self) -> i64 {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or_else(|| SystemClock.now_ms())
    }

    fn max_sleep(&self) -> Duration {
        Duration::from_millis(50)
    }
}

/// The clock `HERALD_CLOCK_FILE` names, else the system clock.
pub fn from_env(env: &std::collections::HashMap<String, String>) -> std::sync::Arc<dyn Clock> {
    match env.get("HERALD_CLOCK_FILE").filter(|p| !p.is_empty()) {
        Some(path) => std::sync::Arc::new(FileClock::new(path)),
        None => std::sync::Arc::new(SystemClock),
    }
}
