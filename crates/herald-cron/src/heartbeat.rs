//! Heartbeats: a session that wakes on its own every so often while idle
//! and reads `HEARTBEAT.md` — a standing checklist the person keeps — as a
//! new user turn at the end of its conversation (nothing earlier changes,
//! so the provider's prompt cache still hits). A reply of `HEARTBEAT_OK`
//! means nothing needs attention: it is recorded, never shown or passed
//! on. A missing or empty `HEARTBEAT.md` skips the wake without a model
//! request; ticks missed while the session could not wake coalesce into
//! one wake; outside its active hours it does not wake.
//!
//! The scheduler ([`crate::Scheduler`]) wakes heartbeat sessions no live
//! process holds, through [`wake`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{TimeZone, Timelike};
use chrono_tz::Tz;
use herald_core::runtime::{ClarifyPolicy, OpenMode, SessionOptions, TurnResult, open_session};
use herald_core::{ApprovalMode, Overrides, Settings};
use herald_protocol::ExitReason;
use herald_store::Heartbeat;

use crate::runner::{self, RunContext};
use crate::schedule::{ScheduleError, parse_duration, time_zone};

/// The file whose text a wake sends.
pub const HEARTBEAT_FILE: &str = "HEARTBEAT.md";

/// The reply that means "nothing needs attention".
pub const HEARTBEAT_OK: &str = "HEARTBEAT_OK";

/// The longest reply still read as [`HEARTBEAT_OK`] when it carries a few
/// words besides the token.
pub const OK_MAX_CHARS: usize = 300;

/// The shortest interval: a heartbeat is a check-in, not a loop.
pub const MIN_EVERY: Duration = Duration::from_secs(60);

/// What is wrong with a heartbeat's settings; each message says what to
/// write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeartbeatError {
    /// The interval is not a duration, or the zone is unknown.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// The interval is under [`MIN_EVERY`].
    #[error("`--every {0}` is too often; the shortest heartbeat is one minute (1m)")]
    TooOften(String),
    /// The active hours are not `HH:MM-HH:MM` (or start where they end).
    #[error(
        "`{0}` is not a span of hours; write it like 08:00-22:00 (start and end differ; \
         22:00-06:00 spans midnight)"
    )]
    Hours(String),
}

/// The hours of the day a heartbeat may wake in, in its time zone: from
/// `start` up to (not including) `end`, in minutes of the day; a span with
/// `end < start` runs over midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveHours {
    start: u32,
    end: u32,
}

impl ActiveHours {
    /// `08:00-22:00` (`24:00` may end a span).
    pub fn parse(text: &str) -> Result<Self, HeartbeatError> {
        let bad = || HeartbeatError::Hours(text.to_owned());
        let (start, end) = text.trim().split_once('-').ok_or_else(bad)?;
        let minute = |part: &str, end: bool| -> Option<u32> {
            let (h, m) = part.trim().split_once(':')?;
            if h.is_empty() || h.len() > 2 || m.len() != 2 {
                return None;
            }
            let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
            match (h, m) {
                (24, 0) if end => Some(1440),
                (0..=23, 0..=59) => Some(h * 60 + m),
                _ => None,
            }
        };
        let start = minute(start, false).ok_or_else(bad)?;
        let end = minute(end, true).ok_or_else(bad)?;
        if start == end {
            return Err(bad());
        }
        Ok(Self { start, end })
    }

    /// Whether `minute` of the day lies in the span.
    pub fn contains(&self, minute: u32) -> bool {
        if self.start < self.end {
            (self.start..self.end).contains(&minute)
        } else {
            minute >= self.start || minute < self.end
        }
    }
}

impl fmt::Display for ActiveHours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:02}:{:02}-{:02}:{:02}",
            self.start / 60,
            self.start % 60,
            self.end / 60,
            self.end % 60
        )
    }
}

/// A heartbeat's settings, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatSettings {
    /// Milliseconds between wakes.
    pub every_ms: i64,
    /// The hours it may wake in; `None`: any hour.
    pub active_hours: Option<ActiveHours>,
    /// The zone the active hours are read in.
    pub tz: Tz,
}

/// Checks what `herald heartbeat on` was given: `every` like `30m` or
/// `1h30m` (at least a minute), `hours` like `08:00-22:00`, `tz` an IANA
/// name (default: this machine's zone).
pub fn define(
    every: &str,
    hours: Option<&str>,
    tz: Option<&str>,
) -> Result<HeartbeatSettings, HeartbeatError> {
    let text = every.trim();
    let text = text.strip_prefix("every ").unwrap_or(text);
    let interval = parse_duration(text)?;
    if interval < MIN_EVERY {
        return Err(HeartbeatError::TooOften(every.to_owned()));
    }
    let every_ms = i64::try_from(interval.as_millis())
        .map_err(|_| ScheduleError::Duration(every.to_owned()))?;
    let active_hours = hours.map(ActiveHours::parse).transpose()?;
    let tz = match tz {
        Some(name) => time_zone(name)?,
        None => crate::schedule::local_time_zone(),
    };
    Ok(HeartbeatSettings {
        every_ms,
        active_hours,
        tz,
    })
}

/// Whether `hb` may wake at `now_ms` (stored hours that no longer parse
/// do not stop it).
pub fn is_active(hb: &Heartbeat, now_ms: i64) -> bool {
    let Some(hours) = hb
        .active_hours
        .as_deref()
        .and_then(|h| ActiveHours::parse(h).ok())
    else {
        return true;
    };
    let tz = time_zone(&hb.tz).unwrap_or(Tz::UTC);
    match tz.timestamp_millis_opt(now_ms).single() {
        Some(local) => hours.contains(local.hour() * 60 + local.minute()),
        None => true,
    }
}

/// The first tick after `now_ms` of a heartbeat due at `due` every
/// `every_ms`: the ticks in between coalesce.
pub fn next_due(due: i64, every_ms: i64, now_ms: i64) -> i64 {
    let every = every_ms.max(1);
    if due > now_ms {
        return due;
    }
    let behind = now_ms.saturating_sub(due) / every + 1;
    due.saturating_add(behind.saturating_mul(every))
}

/// Where a session in `cwd` finds its `HEARTBEAT.md`: the project's if it
/// has one, else the one in `home`.
pub fn heartbeat_file(cwd: &Path, home: &Path) -> PathBuf {
    let project = cwd.join(HEARTBEAT_FILE);
    if project.exists() {
        project
    } else {
        home.join(HEARTBEAT_FILE)
    }
}

/// The text a wake sends, or `None` when the file is missing, unreadable
/// or holds only whitespace.
pub fn heartbeat_text(cwd: &Path, home: &Path) -> Option<String> {
    let text = std::fs::read_to_string(heartbeat_file(cwd, home)).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// Whether `reply` says nothing needs attention: it begins or ends with
/// [`HEARTBEAT_OK`] (markup and punctuation around it aside) and is at most
/// [`OK_MAX_CHARS`] characters long.
pub fn is_ok_reply(reply: &str) -> bool {
    let text = reply.trim();
    if text.chars().count() > OK_MAX_CHARS {
        return false;
    }
    let strip = |c: char| c.is_whitespace() || (c.is_ascii_punctuation() && c != '_');
    let text = text.trim_matches(strip);
    text.starts_with(HEARTBEAT_OK) || text.ends_with(HEARTBEAT_OK)
}

/// How a wake ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WakeOutcome {
    /// The reply was `HEARTBEAT_OK`: recorded, not passed on.
    Ok,
    /// The reply needs attention; it is passed on.
    Alert(String),
    /// No model request was made: `HEARTBEAT.md` is missing or empty.
    Skipped(String),
    /// The wake could not run or its turn failed.
    Failed(String),
    /// Another live process holds the session: not woken, still due.
    Held(u32),
}

impl WakeOutcome {
    /// The outcome's word as stored (`ok`, `alert`, `skipped`, `failed`,
    /// `held`).
    pub fn word(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Alert(_) => "alert",
            Self::Skipped(_) => "skipped",
            Self::Failed(_) => "failed",
            Self::Held(_) => "held",
        }
    }

    /// What is recorded with the outcome besides its word.
    pub fn detail(&self) -> Option<&str> {
        match self {
            Self::Alert(text) | Self::Skipped(text) | Self::Failed(text) => Some(text),
            Self::Ok | Self::Held(_) => None,
        }
    }
}

/// The live process holding `session_id`, if any — this one included
/// (`herald serve` runs sessions and the scheduler in one process): a held
/// session is busy with someone else and is not woken.
pub async fn holder(ctx: &RunContext, session_id: &str) -> Option<u32> {
    let id = session_id.to_owned();
    let held = ctx.store.call(move |s| s.lease_holder(&id)).await;
    match held {
        Ok(Ok(Some(holder))) if holder.is_alive() => Some(holder.pid),
        _ => None,
    }
}

/// Wakes `session_id` once: resumes it headless (asks are denied, nobody is
/// asked), sends its `HEARTBEAT.md` as one user turn, and closes it.
pub async fn wake(ctx: &RunContext, session_id: &str) -> WakeOutcome {
    let id = session_id.to_owned();
    let record = match ctx.store.call(move |s| s.get_session(&id)).await {
        Ok(Ok(Some(record))) => record,
        Ok(Ok(None)) => return WakeOutcome::Failed("its session no longer exists".to_owned()),
        Ok(Err(err)) => return WakeOutcome::Failed(err.to_string()),
        Err(_) => return WakeOutcome::Failed("the store thread stopped".to_owned()),
    };
    if let Some(pid) = holder(ctx, session_id).await {
        return WakeOutcome::Held(pid);
    }
    let cwd = PathBuf::from(&record.cwd);
    if !cwd.is_dir() {
        return WakeOutcome::Failed(format!(
            "its directory {} is gone; `herald heartbeat off {session_id}` stops it",
            record.cwd
        ));
    }
    let Some(text) = heartbeat_text(&cwd, &ctx.home) else {
        return WakeOutcome::Skipped(format!(
            "{HEARTBEAT_FILE} is missing or empty (in {} and {})",
            cwd.display(),
            ctx.home.display()
        ));
    };
    let overrides = Overrides {
        cwd: Some(cwd),
        ..Overrides::default()
    };
    let settings = match Settings::resolve(
        &ctx.config,
        &ctx.config_path,
        ctx.home.clone(),
        &ctx.env,
        &overrides,
    ) {
        Ok(settings) => settings,
        Err(err) => return WakeOutcome::Failed(err.to_string()),
    };
    let mut options = SessionOptions::new(settings, ctx.store.clone());
    options.open = OpenMode::Resume(session_id.to_owned());
    options.clarify = ClarifyPolicy::Unavailable;
    options.approvals = ApprovalMode::Headless;
    // Not one-shot: a one-shot session flushes memory after its turn, a
    // second request on every wake. The wake's session is closed without
    // the flush; one that is owed is made later, like any owed flush.
    options.one_shot = false;
    let session = match open_session(options).await {
        Ok(session) => session,
        Err(herald_core::runtime::RuntimeError::SessionInUse(_)) => return WakeOutcome::Held(0),
        Err(err) => return WakeOutcome::Failed(format!("its session could not be opened: {err}")),
    };
    let outcome = runner::run_turn(&session, text, None).await;
    let _ = session.shutdown_now().await;
    match outcome {
        Ok((result, _)) => outcome_of(Some(result)),
        Err(err) => WakeOutcome::Failed(err),
    }
}

/// What a wake's turn came to (`None`: the session ended during it): a
/// turn that did not end normally — failed, interrupted — is `Failed`,
/// never an alert made of a cut-off reply.
pub fn outcome_of(result: Option<TurnResult>) -> WakeOutcome {
    let Some(result) = result else {
        return WakeOutcome::Failed("the session ended during the wake".to_owned());
    };
    match (result.exit_reason, result.error) {
        (ExitReason::Completed | ExitReason::MaxIterations, None) => {
            if is_ok_reply(&result.final_response) {
                WakeOutcome::Ok
            } else {
                WakeOutcome::Alert(result.final_response)
            }
        }
        (_, Some(error)) => WakeOutcome::Failed(error),
        (reason, None) => WakeOutcome::Failed(format!("the turn ended: {reason}")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ok_replies_are_short_and_carry_the_token_at_an_end() {
        assert!(is_ok_reply("HEARTBEAT_OK"));
        assert!(is_ok_reply("  **HEARTBEAT_OK**.\n"));
        assert!(is_ok_reply("All quiet. HEARTBEAT_OK"));
        assert!(is_ok_reply("HEARTBEAT_OK — nothing new"));
        assert!(!is_ok_reply(
            "The build is red; HEARTBEAT_OK is not the answer today"
        ));
        assert!(!is_ok_reply("HEARTBEAT_NOT"));
        assert!(!is_ok_reply(""));
        let long = format!("HEARTBEAT_OK {}", "x".repeat(OK_MAX_CHARS));
        assert!(!is_ok_reply(&long));
    }

    #[test]
    fn active_hours_parse_and_span_midnight() {
        let day = ActiveHours::parse("08:00-22:00").unwrap();
        assert!(day.contains(8 * 60) && day.contains(21 * 60 + 59));
        assert!(!day.contains(22 * 60) && !day.contains(7 * 60 + 59));
        let night = ActiveHours::parse("22:00-06:00").unwrap();
        assert!(night.contains(23 * 60) && night.contains(0) && !night.contains(12 * 60));
        assert_eq!(
            ActiveHours::parse("9:30-24:00").unwrap().to_string(),
            "09:30-24:00"
        );
        for bad in [
            "",
            "08:00",
            "8-22",
            "08:00-08:00",
            "25:00-26:00",
            "08:60-09:00",
            "24:00-08:00",
            "08:00-22:00-23:00",
            "a:bc-22:00",
        ] {
            let err = ActiveHours::parse(bad).unwrap_err();
            assert!(err.to_string().contains("08:00-22:00"), "{bad}: {err}");
        }
    }

    #[test]
    fn settings_are_checked() {
        let ok = define("30m", Some("08:00-22:00"), Some("Europe/Berlin")).unwrap();
        assert_eq!(ok.every_ms, 1_800_000);
        assert_eq!(
            define("every 1h", None, Some("UTC")).unwrap().every_ms,
            3_600_000
        );
        assert!(matches!(
            define("30s", None, Some("UTC")),
            Err(HeartbeatError::TooOften(_))
        ));
        assert!(define("soon", None, Some("UTC")).is_err());
        assert!(define("30m", Some("8am"), Some("UTC")).is_err());
        assert!(define("30m", None, Some("Mars/Olympus")).is_err());
    }

    #[test]
    fn missed_ticks_coalesce_into_the_next_one_after_now() {
        assert_eq!(next_due(100, 10, 50), 100);
        assert_eq!(next_due(100, 10, 100), 110);
        assert_eq!(next_due(100, 10, 135), 140);
    }
}
