//! Timestamps as transcripts write them (RFC 3339 / ISO 8601 text, Unix
//! seconds or milliseconds), turned into the Unix milliseconds herald stores.

use serde_json::Value;

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

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
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
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
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
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
