use std::time::Duration;

/// How transient failures are retried: exponential backoff with jitter,
/// honouring the provider's `Retry-After` when it sends one.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Total tries including the first.
    pub max_attempts: u32,
    /// Delay before the first retry; doubles each time.
    pub base_delay: Duration,
    /// Upper bound for any single wait.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(1000),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Wait before retry number `attempt` (1 = first retry). A server hint
    /// wins (capped at `max_delay`); otherwise backoff with 50–100% jitter.
    pub fn delay(&self, attempt: u32, retry_after_ms: Option<u64>) -> Duration {
        if let Some(ms) = retry_after_ms {
            return Duration::from_millis(ms).min(self.max_delay);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let capped = exp.min(self.max_delay);
        capped.mul_f64(0.5 + fastrand::f64() * 0.5)
    }
}

/// Reads `retry-after-ms` or `retry-after` (seconds; HTTP dates are ignored).
pub(crate) fn retry_after_ms(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    let value = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = value("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(ms.max(0.0) as u64);
    }
    value("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|secs| (secs.max(0.0) * 1000.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let policy = RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
        };
        for _ in 0..50 {
            let first = policy.delay(1, None);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let second = policy.delay(2, None);
            assert!(second >= Duration::from_millis(100) && second <= Duration::from_millis(200));
            let capped = policy.delay(9, None);
            assert!(capped <= Duration::from_millis(350));
        }
    }

    #[test]
    fn retry_after_wins_but_is_capped() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay(1, Some(2000)), Duration::from_secs(2));
        assert_eq!(policy.delay(1, Some(600_000)), Duration::from_secs(60));
    }

    #[test]
    fn parses_retry_after_headers() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            "retry-after",
            reqwest::header::HeaderValue::from_static("3"),
        );
        assert_eq!(retry_after_ms(&headers), Some(3000));
        headers.insert(
            "retry-after-ms",
            reqwest::header::HeaderValue::from_static("250"),
        );
        assert_eq!(retry_after_ms(&headers), Some(250));
        let mut dated = reqwest::header::HeaderMap::new();
        dated.insert(
            "retry-after",
            reqwest::header::HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after_ms(&dated), None);
    }
}
