//! When a job fires. Four forms, all read in the job's time zone:
//!
//! - a 5-field cron expression (`0 9 * * 1-5`: minute, hour, day of month,
//!   month, day of week; names, ranges, steps and the `@daily`-style macros
//!   work);
//! - `every 15m` (`s`, `m`, `h`, `d`, combinable as `1h30m`; at least a
//!   minute), counted from when the job was created;
//! - `at 2026-12-01 09:00`: once;
//! - `in 30m`: once, that long after it was added (stored as `at …`).
//!
//! Daylight-saving changes: a cron time that does not exist on a day (the
//! hour skipped in spring) fires at the first minute after the gap; a time
//! that occurs twice (the hour repeated in autumn) fires once, at its first
//! occurrence. `every` intervals are exact durations, unaffected by them.
//! An `at` time inside a gap is refused; one in the repeated hour means the
//! first.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

/// The shortest `every` interval.
const MIN_INTERVAL: Duration = Duration::from_secs(60);

/// What is wrong with a schedule or time zone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error(
        "`{0}` is not a schedule; use a 5-field cron expression (\"0 9 * * 1-5\"), \
         \"every 15m\", \"at 2026-12-01 09:00\" or \"in 30m\""
    )]
    Unknown(String),
    #[error("`{spec}` is not a valid cron expression: {reason}")]
    Cron { spec: String, reason: String },
    #[error("`{0}` is not a duration; write it like 15m, 2h, 1d or 1h30m")]
    Duration(String),
    #[error("`every {0}` is too often; the shortest interval is one minute")]
    TooOften(String),
    #[error("`{0}` is not a time; write it like 2026-12-01 09:00")]
    Time(String),
    #[error("{time} does not exist in {tz} (the clocks skip it for daylight saving time)")]
    SkippedTime { time: String, tz: String },
    #[error("`at {time}` has passed; give a later time")]
    Past { time: String },
    #[error("`{0}` is not a time zone; use an IANA name such as Europe/Berlin or UTC")]
    TimeZone(String),
}

/// The time zone named `name` (IANA, such as `Europe/Berlin`).
pub fn time_zone(name: &str) -> Result<Tz, ScheduleError> {
    Tz::from_str(name.trim()).map_err(|_| ScheduleError::TimeZone(name.to_owned()))
}

/// This machine's time zone (IANA name), UTC when it cannot be told.
pub fn local_time_zone() -> Tz {
    iana_time_zone::get_timezone()
        .ok()
        .and_then(|name| Tz::from_str(&name).ok())
        .unwrap_or(Tz::UTC)
}

#[derive(Debug, Clone)]
enum Kind {
    Cron(Box<croner::Cron>),
    Every { every: Duration, anchor_ms: i64 },
    At { at_ms: i64 },
}

/// A parsed schedule in its time zone.
#[derive(Debug, Clone)]
pub struct Schedule {
    kind: Kind,
    tz: Tz,
    /// The stored form (`in …` becomes `at …`).
    spec: String,
}

impl Schedule {
    /// Parses what a user wrote, at `now_ms` (the anchor of `every`, the
    /// start of `in`).
    pub fn parse(spec: &str, tz: Tz, now_ms: i64) -> Result<Schedule, ScheduleError> {
        let spec = spec.trim();
        let (word, rest) = spec.split_once(char::is_whitespace).unwrap_or((spec, ""));
        match word.to_ascii_lowercase().as_str() {
            "in" => {
                let after = parse_duration(rest.trim())?;
                let at_ms = now_ms.saturating_add(millis(after));
                let text = local_text(at_ms, tz);
                Ok(Schedule {
                    kind: Kind::At { at_ms },
                    tz,
                    spec: format!("at {text}"),
                })
            }
            "at" => {
                let schedule = Self::stored(spec, tz, now_ms)?;
                if let Kind::At { at_ms } = schedule.kind
                    && at_ms <= now_ms
                {
                    return Err(ScheduleError::Past {
                        time: rest.trim().to_owned(),
                    });
                }
                Ok(schedule)
            }
            _ => Self::stored(spec, tz, now_ms),
        }
    }

    /// Reads a stored schedule (`anchor_ms`: when its job was created).
    pub fn stored(spec: &str, tz: Tz, anchor_ms: i64) -> Result<Schedule, ScheduleError> {
        let spec = spec.trim();
        let (word, rest) = spec.split_once(char::is_whitespace).unwrap_or((spec, ""));
        let rest = rest.trim();
        let kind = match word.to_ascii_lowercase().as_str() {
            "every" => {
                let every = parse_duration(rest)?;
                if every < MIN_INTERVAL {
                    return Err(ScheduleError::TooOften(rest.to_owned()));
                }
                Kind::Every { every, anchor_ms }
            }
            "at" => Kind::At {
                at_ms: parse_local_time(rest, tz)?,
            },
            "in" => return Err(ScheduleError::Unknown(spec.to_owned())),
            _ => Kind::Cron(Box::new(parse_cron(spec)?)),
        };
        Ok(Schedule {
            kind,
            tz,
            spec: normalize(spec),
        })
    }

    /// The form to store (and show).
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The time zone it is read in.
    pub fn tz(&self) -> Tz {
        self.tz
    }

    /// Whether it fires once only.
    pub fn is_once(&self) -> bool {
        matches!(self.kind, Kind::At { .. })
    }

    /// The first fire time strictly after `after_ms` (Unix ms); `None` when
    /// it never fires again.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match &self.kind {
            Kind::At { at_ms } => (*at_ms > after_ms).then_some(*at_ms),
            Kind::Every { every, anchor_ms } => {
                let step = millis(*every).max(1);
                if after_ms < *anchor_ms {
                    return Some(anchor_ms.saturating_add(step));
                }
                let n = (after_ms - anchor_ms) / step + 1;
                Some(anchor_ms.saturating_add(n.saturating_mul(step)))
            }
            Kind::Cron(cron) => {
                let after =
                    DateTime::<Utc>::from_timestamp_millis(after_ms)?.with_timezone(&self.tz);
                cron.find_next_occurrence(&after, false)
                    .ok()
                    .map(|next| next.timestamp_millis())
            }
        }
    }

    /// The next `count` fire times after `after_ms`.
    pub fn upcoming(&self, after_ms: i64, count: usize) -> Vec<i64> {
        let mut out = Vec::with_capacity(count);
        let mut at = after_ms;
        while out.len() < count {
            let Some(next) = self.next_after(at) else {
                break;
            };
            out.push(next);
            at = next;
        }
        out
    }

    /// `at_ms` as local time of this schedule's zone, for people:
    /// `2026-12-01 09:00 CET (Tue)`.
    pub fn describe(&self, at_ms: i64) -> String {
        describe_time(at_ms, self.tz)
    }
}

/// `at_ms` in `tz` for people: `2026-12-01 09:00 CET (Tue)`.
pub fn describe_time(at_ms: i64, tz: Tz) -> String {
    DateTime::<Utc>::from_timestamp_millis(at_ms)
        .map(|t| {
            t.with_timezone(&tz)
                .format("%Y-%m-%d %H:%M %Z (%a)")
                .to_string()
        })
        .unwrap_or_else(|| at_ms.to_string())
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// `at_ms` as `YYYY-MM-DD HH:MM` in `tz`.
fn local_text(at_ms: i64, tz: Tz) -> String {
    DateTime::<Utc>::from_timestamp_millis(at_ms)
        .map(|t| t.with_timezone(&tz).format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_default()
}

/// One space between words; the keyword in lower case.
fn normalize(spec: &str) -> String {
    let mut words: Vec<String> = spec.split_whitespace().map(str::to_owned).collect();
    if let Some(first) = words.first_mut()
        && matches!(first.to_ascii_lowercase().as_str(), "every" | "at")
    {
        *first = first.to_ascii_lowercase();
    }
    words.join(" ")
}

fn parse_cron(spec: &str) -> Result<croner::Cron, ScheduleError> {
    let fields = spec.split_whitespace().count();
    if fields != 5 && !(fields == 1 && spec.starts_with('@')) {
        return Err(if fields == 1 {
            ScheduleError::Unknown(spec.to_owned())
        } else {
            ScheduleError::Cron {
                spec: spec.to_owned(),
                reason: format!(
                    "it has {fields} fields; give five: minute hour day-of-month month day-of-week"
                ),
            }
        });
    }
    croner::Cron::from_str(spec).map_err(|err| ScheduleError::Cron {
        spec: spec.to_owned(),
        reason: err.to_string(),
    })
}

/// `15m`, `2h`, `1d`, `90s`, `1h30m`.
pub fn parse_duration(text: &str) -> Result<Duration, ScheduleError> {
    let bad = || ScheduleError::Duration(text.to_owned());
    let mut total = 0u64;
    let mut digits = String::new();
    let mut any = false;
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c.to_ascii_lowercase() {
            's' => 1,
            'm' => 60,
            'h' => 3_600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
        digits.clear();
        any = true;
    }
    if !digits.is_empty() || !any || total == 0 {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// `2026-12-01 09:00` (also with `T`, with seconds) in `tz`.
fn parse_local_time(text: &str, tz: Tz) -> Result<i64, ScheduleError> {
    let text = text.trim();
    let naive = [
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
    ]
    .iter()
    .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
    .ok_or_else(|| ScheduleError::Time(text.to_owned()))?;
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) => Ok(t.timestamp_millis()),
        LocalResult::Ambiguous(first, _) => Ok(first.timestamp_millis()),
        LocalResult::None => Err(ScheduleError::SkippedTime {
            time: text.to_owned(),
            tz: tz.name().to_owned(),
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Unix ms of a local time in `tz` (first occurrence).
    fn at(tz: Tz, text: &str) -> i64 {
        parse_local_time(text, tz).unwrap()
    }

    fn local(ms: i64, tz: Tz) -> String {
        local_text(ms, tz)
    }

    const BERLIN: Tz = Tz::Europe__Berlin;
    const NEW_YORK: Tz = Tz::America__New_York;

    #[test]
    fn weekday_mornings_skip_the_weekend() {
        let s = Schedule::parse("0 9 * * 1-5", BERLIN, 0).unwrap();
        // Friday 2026-11-27 10:00: next Monday, Tuesday, …
        let from = at(BERLIN, "2026-11-27 10:00");
        let next: Vec<String> = s
            .upcoming(from, 3)
            .into_iter()
            .map(|t| local(t, BERLIN))
            .collect();
        assert_eq!(
            next,
            ["2026-11-30 09:00", "2026-12-01 09:00", "2026-12-02 09:00"]
        );
        assert_eq!(
            s.describe(s.next_after(from).unwrap()),
            "2026-11-30 09:00 CET (Mon)"
        );
    }

    #[test]
    fn month_ends_and_leap_days_are_found() {
        let s = Schedule::parse("0 12 31 * *", Tz::UTC, 0).unwrap();
        let from = at(Tz::UTC, "2027-01-31 13:00");
        let next: Vec<String> = s
            .upcoming(from, 3)
            .into_iter()
            .map(|t| local(t, Tz::UTC))
            .collect();
        // February, April and June have no 31st.
        assert_eq!(
            next,
            ["2027-03-31 12:00", "2027-05-31 12:00", "2027-07-31 12:00"]
        );
        let leap = Schedule::parse("0 0 29 2 *", Tz::UTC, 0).unwrap();
        assert_eq!(
            local(
                leap.next_after(at(Tz::UTC, "2026-03-01 00:00")).unwrap(),
                Tz::UTC
            ),
            "2028-02-29 00:00"
        );
    }

    #[test]
    fn a_cron_time_skipped_by_daylight_saving_fires_after_the_gap_and_a_repeated_one_once() {
        // Berlin springs forward on 2027-03-28 at 02:00 → 03:00.
        let s = Schedule::parse("30 2 * * *", BERLIN, 0).unwrap();
        let from = at(BERLIN, "2027-03-27 03:00");
        let next: Vec<i64> = s.upcoming(from, 2);
        assert_eq!(local(next[0], BERLIN), "2027-03-28 03:00", "after the gap");
        assert_eq!(local(next[1], BERLIN), "2027-03-29 02:30");
        // New York falls back on 2026-11-01 at 02:00 → 01:00: 01:30 occurs
        // twice, the job fires once.
        let s = Schedule::parse("30 1 * * *", NEW_YORK, 0).unwrap();
        let from = at(NEW_YORK, "2026-10-31 12:00");
        let next = s.upcoming(from, 2);
        assert_eq!(local(next[0], NEW_YORK), "2026-11-01 01:30");
        assert_eq!(local(next[1], NEW_YORK), "2026-11-02 01:30");
        // An hourly job keeps firing every real hour through the change.
        let hourly = Schedule::parse("0 * * * *", BERLIN, 0).unwrap();
        let from = at(BERLIN, "2027-03-28 00:30");
        let next = hourly.upcoming(from, 3);
        assert_eq!(next[1] - next[0], 3_600_000);
        assert_eq!(next[2] - next[1], 3_600_000);
    }

    #[test]
    fn every_counts_from_creation_and_in_becomes_at() {
        let created = at(Tz::UTC, "2026-11-28 10:07");
        let s = Schedule::parse("every 15m", Tz::UTC, created).unwrap();
        assert_eq!(s.spec(), "every 15m");
        assert_eq!(
            local(s.next_after(created).unwrap(), Tz::UTC),
            "2026-11-28 10:22"
        );
        let later = at(Tz::UTC, "2026-11-28 11:00");
        assert_eq!(
            local(s.next_after(later).unwrap(), Tz::UTC),
            "2026-11-28 11:07"
        );
        let stored = Schedule::stored(s.spec(), Tz::UTC, created).unwrap();
        assert_eq!(stored.next_after(later), s.next_after(later));

        let once = Schedule::parse("in 30m", BERLIN, created).unwrap();
        assert!(once.is_once());
        assert_eq!(once.spec(), "at 2026-11-28 11:37");
        assert_eq!(once.next_after(created), Some(created + 1_800_000));
        assert_eq!(once.next_after(created + 1_800_000), None);
        let again = Schedule::stored(once.spec(), BERLIN, 0).unwrap();
        assert_eq!(again.next_after(created), Some(created + 1_800_000));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
    }

    #[test]
    fn bad_schedules_say_what_to_write() {
        let now = at(Tz::UTC, "2026-11-28 10:00");
        for (spec, wanted) in [
            ("whenever", "is not a schedule"),
            ("0 9 * *", "it has 4 fields"),
            ("0 9 * * * *", "it has 6 fields"),
            ("61 9 * * *", "not a valid cron expression"),
            ("every 10s", "too often"),
            ("every soon", "not a duration"),
            ("every 5x", "not a duration"),
            ("in 0m", "not a duration"),
            ("at tomorrow", "not a time"),
            ("at 2026-11-27 09:00", "has passed"),
        ] {
            let err = Schedule::parse(spec, Tz::UTC, now).unwrap_err().to_string();
            assert!(err.contains(wanted), "{spec}: {err}");
        }
        let err = Schedule::parse("at 2027-03-28 02:30", BERLIN, now).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
        assert!(time_zone("Mars/Olympus").is_err());
        assert_eq!(time_zone("Europe/Berlin").unwrap(), BERLIN);
    }
}
