//! Time bounds as people and models type them, for `session_search` and
//! `herald sessions search --since/--until`: a date (`2026-11-20`), a date
//! and time (`2026-11-20T14:30`, `2026-11-20 14:30:05`, optional `Z`), all
//! UTC, or an age before now (`30m`, `24h`, `7d`, `2w`).

use herald_store::ActiveBetween;

const MINUTE_MS: i64 = 60_000;
const DAY_MS: i64 = 86_400_000;

/// Which end of a period a bound is: a bare date means the start of that
/// day for `Since` and its end (the next midnight) for `Until`, so
/// `since=2026-11-20 until=2026-11-20` is that whole day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Since,
    Until,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Self::Since => "since",
            Self::Until => "until",
        }
    }
}

/// The period `since`..`until` (either may be missing), checked: each bound
/// parses (see [`parse_time_bound`]) and `since` is not after `until`. The
/// error names the bad value and the accepted forms.
pub fn parse_period(
    since: Option<&str>,
    until: Option<&str>,
    now_ms: i64,
) -> Result<ActiveBetween, String> {
    let bound = |text: Option<&str>, side| {
        text.map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| parse_time_bound(t, now_ms, side))
            .transpose()
    };
    let since_ms = bound(since, Side::Since)?;
    let until_ms = bound(until, Side::Until)?;
    if let (Some(s), Some(u)) = (since_ms, until_ms)
        && s >= u
    {
        return Err(format!(
            "since ({}) is not before until ({}); give an earlier since or a later until",
            since.unwrap_or_default().trim(),
            until.unwrap_or_default().trim()
        ));
    }
    Ok(ActiveBetween { since_ms, until_ms })
}

/// One bound in Unix milliseconds. `now_ms` anchors ages (`7d` = seven days
/// before now).
pub fn parse_time_bound(text: &str, now_ms: i64, side: Side) -> Result<i64, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "{} '{text}' is not a time: use a date (2026-11-20), a date and time (2026-11-20T14:30), both UTC, or an age such as 30m, 24h, 7d, 2w",
            side.name()
        )
    };
    if let Some(age) = parse_age(text) {
        return age
            .map(|ms| now_ms.saturating_sub(ms))
            .ok_or_else(|| format!("{} '{text}' is too far back", side.name()));
    }
    let (date, time) = match text.find(['T', 't', ' ']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let day = parse_date(date).ok_or_else(bad)?;
    let start = day.checked_mul(DAY_MS).ok_or_else(bad)?;
    match time {
        None => Ok(match side {
            Side::Since => start,
            Side::Until => start + DAY_MS,
        }),
        Some(time) => {
            let time = time.strip_suffix(['Z', 'z']).unwrap_or(time);
            Ok(start + parse_clock(time).ok_or_else(bad)?)
        }
    }
}

/// `N` followed by s, m, h, d or w: `Some(Some(ms))`; `Some(None)` when
/// the number overflows; `None` when it is no age at all.
fn parse_age(text: &str) -> Option<Option<i64>> {
    let unit = text.chars().last()?;
    let number = text[..text.len() - unit.len_utf8()].trim();
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let per = match unit {
        's' => 1_000,
        'm' => MINUTE_MS,
        'h' => 60 * MINUTE_MS,
        'd' => DAY_MS,
        'w' => 7 * DAY_MS,
        _ => return None,
    };
    Some(number.parse::<i64>().ok().and_then(|n| n.checked_mul(per)))
}

/// `YYYY-MM-DD` as days since 1970-01-01, checked (month 1-12, the day
/// within that month).
fn parse_date(text: &str) -> Option<i64> {
    let mut parts = text.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let month = time::Month::try_from(m.parse::<u8>().ok()?).ok()?;
    let date = time::Date::from_calendar_date(y.parse().ok()?, month, d.parse().ok()?).ok()?;
    Some(i64::from(date.to_julian_day() - UNIX_EPOCH_JULIAN_DAY))
}

/// `HH:MM` or `HH:MM:SS` as milliseconds after midnight.
fn parse_clock(text: &str) -> Option<i64> {
    let parts: Vec<&str> = text.split(':').collect();
    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.len() != 2) {
        return None;
    }
    let field = |i: usize, max: i64| {
        parts.get(i).map_or(Some(0), |p| {
            p.parse::<i64>().ok().filter(|v| (0..=max).contains(v))
        })
    };
    Some(((field(0, 23)? * 60 + field(1, 59)?) * 60 + field(2, 59)?) * 1_000)
}

/// The Julian day number of 1970-01-01.
const UNIX_EPOCH_JULIAN_DAY: i32 = 2_440_588;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const NOW: i64 = 1_763_683_200_000; // 2025-11-21 00:00 UTC

    #[test]
    fn dates_times_and_ages() {
        assert_eq!(
            parse_time_bound("2025-11-21", NOW, Side::Since).unwrap(),
            NOW
        );
        assert_eq!(
            parse_time_bound("2025-11-20", NOW, Side::Until).unwrap(),
            NOW,
            "until a date includes that whole day"
        );
        assert_eq!(parse_time_bound("1970-01-01", NOW, Side::Since).unwrap(), 0);
        assert_eq!(
            parse_time_bound("2024-02-29", NOW, Side::Since).unwrap(),
            1_709_164_800_000
        );
        let at = NOW + (14 * 60 + 30) * MINUTE_MS;
        for text in [
            "2025-11-21T14:30",
            "2025-11-21 14:30",
            "2025-11-21t14:30:00Z",
        ] {
            assert_eq!(
                parse_time_bound(text, NOW, Side::Until).unwrap(),
                at,
                "{text}"
            );
        }
        assert_eq!(
            parse_time_bound("2025-11-21T14:30:05", NOW, Side::Since).unwrap(),
            at + 5_000
        );
        assert_eq!(
            parse_time_bound("7d", NOW, Side::Since).unwrap(),
            NOW - 7 * DAY_MS
        );
        assert_eq!(
            parse_time_bound(" 24h ", NOW, Side::Since).unwrap(),
            NOW - DAY_MS
        );
        assert_eq!(
            parse_time_bound("2w", NOW, Side::Until).unwrap(),
            NOW - 14 * DAY_MS
        );
        assert_eq!(
            parse_time_bound("90s", NOW, Side::Since).unwrap(),
            NOW - 90_000
        );
        assert_eq!(
            parse_time_bound("30m", NOW, Side::Since).unwrap(),
            NOW - 30 * MINUTE_MS
        );
    }

    #[test]
    fn bad_values_say_what_to_use() {
        for text in [
            "",
            "yesterday",
            "7",
            "d",
            "-7d",
            "7y",
            "2025-13-01",
            "2025-02-29",
            "2025-11-31",
            "25-11-21",
            "2025/11/21",
            "2025-11-21T25:00",
            "2025-11-21T14",
            "2025-11-21T14:30+02:00",
            "2025-11-21-01",
        ] {
            let err = parse_time_bound(text, NOW, Side::Since).unwrap_err();
            assert!(err.contains("since '"), "{text}: {err}");
            assert!(err.contains("7d"), "{text}: {err}");
        }
        let err = parse_time_bound("99999999999999999d", NOW, Side::Until).unwrap_err();
        assert!(err.contains("too far back"), "{err}");
    }

    #[test]
    fn periods_are_checked() {
        let p = parse_period(Some("7d"), Some("2025-11-20"), NOW).unwrap();
        assert_eq!(p.since_ms, Some(NOW - 7 * DAY_MS));
        assert_eq!(p.until_ms, Some(NOW));
        let open = parse_period(None, Some("  "), NOW).unwrap();
        assert_eq!(open, ActiveBetween::default());
        let err = parse_period(Some("2025-11-21"), Some("7d"), NOW).unwrap_err();
        assert!(err.contains("not before until"), "{err}");
        let err = parse_period(Some("1d"), Some("soon"), NOW).unwrap_err();
        assert!(err.starts_with("until 'soon'"), "{err}");
    }
}
