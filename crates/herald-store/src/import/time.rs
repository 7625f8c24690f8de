//! Timestamps as transcripts write them (RFC 3339 / ISO 8601 text, Unix
//! seconds or milliseconds), turned into the Unix milliseconds herald stores.

use serde_json::Value;

fn digits(s: &str, range: std::ops::Range<usize>) -> Option<i64> {
    let part = s.get(range)?;
    part.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| part.parse().ok())
        .flatten()
}

/// `2025-06-01T10:00:00.123Z`, `2025-06-01T10:00:00+02:00` or
/// `2026-04-18T19:26:00.214787` (no zone: read as UTC) in Unix ms.
pub(crate) fn parse_iso(text: &str) -> Option<i64> {
    let s = text.trim();
    let (y, mo, d) = (digits(s, 0..4)?, digits(s, 5..7)?, digits(s, 8..10)?);
    if !matches!(s.as_bytes().get(10), Some(b'T' | b' ')) {
        return None;
    }
    let (h, mi, sec) = (digits(s, 11..13)?, digits(s, 14..16)?, digits(s, 17..19)?);
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let month = ::time::Month::try_from(u8::try_from(mo).ok()?).ok()?;
    let date =
        ::time::Date::from_calendar_date(i32::try_from(y).ok()?, month, u8::try_from(d).ok()?)
            .ok()?;
    // Days since 1970-01-01 (Julian day 2,440,588).
    let days = i64::from(date.to_julian_day()) - 2_440_588;
    let mut rest = s.get(19..)?;
    let mut millis = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let len = frac.bytes().take_while(u8::is_ascii_digit).count();
        let mut ms_text: String = frac[..len].chars().take(3).collect();
        while ms_text.len() < 3 {
            ms_text.push('0');
        }
        millis = ms_text.parse().ok()?;
        rest = &frac[len..];
    }
    let offset_min = match rest {
        "" | "Z" | "z" => 0,
        zone => {
            let sign = match zone.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return None,
            };
            let zone = zone[1..].replace(':', "");
            sign * (digits(&zone, 0..2)? * 60 + digits(&zone, 2..4)?)
        }
    };
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    Some(secs * 1000 + millis)
}

/// A timestamp field: ISO text, or a number (seconds below 1e11, else ms).
pub(crate) fn timestamp(value: Option<&Value>) -> Option<i64> {
    match value? {
        Value::String(s) => parse_iso(s),
        Value::Number(n) => {
            let f = n.as_f64()?;
            #[allow(clippy::cast_possible_truncation)]
            let ms = if f.abs() < 1e11 { f * 1000.0 } else { f } as i64;
            Some(ms)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_forms_and_numbers() {
        assert_eq!(parse_iso("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_iso("2025-11-21T00:00:00.5Z"), Some(1_763_683_200_500));
        assert_eq!(
            parse_iso("2025-11-21T02:00:00.123456+02:00"),
            Some(1_763_683_200_123)
        );
        assert_eq!(parse_iso("2025-11-21T00:00:00"), Some(1_763_683_200_000));
        assert_eq!(parse_iso("yesterday"), None);
        assert_eq!(parse_iso("2025-13-01T00:00:00Z"), None);
        assert_eq!(
            timestamp(Some(&serde_json::json!(1_763_683_200))),
            Some(1_763_683_200_000)
        );
        assert_eq!(
            timestamp(Some(&serde_json::json!(1_763_683_200_123_i64))),
            Some(1_763_683_200_123)
        );
    }
}
