//! Numbers as a person reads them in one line of progress: sizes, token
//! counts, durations and costs, short and without float noise. Shared by
//! the TUI and `herald run`'s progress lines, so both say the same.

/// A size in bytes: `812 B`, `3.4 KB`, `1.5 MB` (powers of 1024).
pub fn bytes(n: u64) -> String {
    const KB: f64 = 1024.0;
    let value = n as f64;
    if n < 1024 {
        format!("{n} B")
    } else if value < KB * KB {
        format!("{:.1} KB", value / KB)
    } else if value < KB * KB * KB {
        format!("{:.1} MB", value / (KB * KB))
    } else {
        format!("{:.1} GB", value / (KB * KB * KB))
    }
}

/// A token count: `812`, `12.3k`, `1.2M`.
pub fn tokens(n: u64) -> String {
    let value = n as f64;
    if n < 1000 {
        n.to_string()
    } else if n < 999_950 {
        format!("{:.1}k", value / 1000.0)
    } else {
        format!("{:.1}M", value / 1_000_000.0)
    }
}

/// A duration: `12 ms` under a second, `1.2 s` under a minute, then
/// `3 min 05 s`.
pub fn duration_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 59_950 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        let seconds = (ms + 500) / 1000;
        format!("{} min {:02} s", seconds / 60, seconds % 60)
    }
}

/// A cost in US dollars: `$0` for nothing, 2 decimals from $1, 4 from
/// a cent, below that up to 6 significant decimals (trailing zeros
/// dropped); `None` (no price known for the model) is `cost unknown`.
pub fn cost(usd: Option<f64>) -> String {
    let Some(usd) = usd else {
        return "cost unknown".to_owned();
    };
    if !usd.is_finite() || usd <= 0.0 {
        return "$0".to_owned();
    }
    let text = if usd >= 1.0 {
        format!("{usd:.2}")
    } else if usd >= 0.01 {
        format!("{usd:.4}")
    } else {
        let fixed = format!("{usd:.6}");
        let trimmed = fixed.trim_end_matches('0');
        if trimmed.ends_with('.') {
            // Below a millionth of a dollar.
            return "<$0.000001".to_owned();
        }
        trimmed.to_owned()
    };
    format!("${text}")
}

/// `part` as a whole percentage of `whole` (`None` when `whole` is 0).
pub fn percent(part: u64, whole: u64) -> Option<u64> {
    (whole > 0).then(|| ((part as f64 / whole as f64) * 100.0).round() as u64)
}

/// `1 iteration`, `4 iterations`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(3482), "3.4 KB");
        assert_eq!(bytes(1_572_864), "1.5 MB");
    }

    #[test]
    fn token_counts() {
        assert_eq!(tokens(812), "812");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(999_949), "999.9k");
        assert_eq!(tokens(999_999), "1.0M");
        assert_eq!(tokens(1_250_000), "1.2M");
    }

    #[test]
    fn durations() {
        assert_eq!(duration_ms(12), "12 ms");
        assert_eq!(duration_ms(1_234), "1.2 s");
        assert_eq!(duration_ms(59_940), "59.9 s");
        assert_eq!(duration_ms(59_960), "1 min 00 s");
        assert_eq!(duration_ms(185_000), "3 min 05 s");
    }

    #[test]
    fn costs_have_no_float_noise() {
        assert_eq!(cost(None), "cost unknown");
        assert_eq!(cost(Some(0.0)), "$0");
        assert_eq!(cost(Some(0.1 + 0.2)), "$0.3000");
        assert_eq!(cost(Some(0.014_799_999_9)), "$0.0148");
        assert_eq!(cost(Some(0.000_123_000_1)), "$0.000123");
        assert_eq!(cost(Some(0.000_000_2)), "<$0.000001");
        assert_eq!(cost(Some(12.345_6)), "$12.35");
    }

    #[test]
    fn shares_and_counts() {
        assert_eq!(percent(63, 100), Some(63));
        assert_eq!(percent(2, 3), Some(67));
        assert_eq!(percent(1, 0), None);
        assert_eq!(count(1, "iteration", "iterations"), "1 iteration");
        assert_eq!(count(4, "iteration", "iterations"), "4 iterations");
    }
}
