//! Order statistics over durations.

use std::time::Duration;

/// The `q` quantile (nearest rank) of `values`; zero when empty.
pub(crate) fn percentile(values: &[Duration], q: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The median of `values`.
pub(crate) fn median(values: &[Duration]) -> Duration {
    percentile(values, 0.5)
}
