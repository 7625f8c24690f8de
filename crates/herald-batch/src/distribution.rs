//! `--toolset-distribution FILE`: each toolset on with its own
//! probability, drawn per item from the item's hash (so a resumed run
//! draws the same toolsets), with at least one toolset on.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::BatchError;

/// Toolsets and the probability each is on for an item.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    sets: BTreeMap<String, f64>,
}

impl Distribution {
    /// Reads a JSON or YAML mapping of toolset name to probability (0–1).
    pub fn load(path: &Path) -> Result<Self, BatchError> {
        let text = std::fs::read_to_string(path).map_err(|err| BatchError::io(path, err))?;
        let sets: BTreeMap<String, f64> = serde_json::from_str(&text)
            .or_else(|_| serde_saphyr::from_str(&text))
            .map_err(|err| {
                BatchError::input(
                    path,
                    1,
                    format!("expected a mapping of toolset name to probability, like {{\"file\": 1.0, \"web\": 0.3}}: {err}"),
                )
            })?;
        Self::new(sets).map_err(|message| BatchError::input(path, 1, message))
    }

    /// Checks the probabilities: each within 0–1, at least one above 0.
    pub fn new(sets: BTreeMap<String, f64>) -> Result<Self, String> {
        if let Some((name, p)) = sets.iter().find(|(_, p)| !(0.0..=1.0).contains(*p)) {
            return Err(format!(
                "toolset `{name}` has probability {p}; each must be from 0 to 1"
            ));
        }
        if !sets.values().any(|p| *p > 0.0) {
            return Err(
                "every probability is 0; at least one toolset must be able to be on".to_owned(),
            );
        }
        Ok(Self { sets })
    }

    /// The toolsets of the item with this hash.
    pub fn sample(&self, hash: &str) -> Vec<String> {
        let seed = u64::from_str_radix(hash.get(..16).unwrap_or("0"), 16).unwrap_or(0);
        let mut rng = fastrand::Rng::with_seed(seed);
        for _ in 0..64 {
            let on: Vec<String> = self
                .sets
                .iter()
                .filter(|(_, p)| rng.f64() < **p)
                .map(|(name, _)| name.clone())
                .collect();
            if !on.is_empty() {
                return on;
            }
        }
        // Unlikely with any sane probabilities: the likeliest one alone.
        let best = self
            .sets
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(name, _)| name.clone());
        best.into_iter().collect()
    }

    /// The distribution as JSON, for the items' hashes.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(&self.sets).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn draws_follow_the_probabilities_and_never_come_out_empty() {
        let d = Distribution::new(BTreeMap::from([
            ("file".to_owned(), 1.0),
            ("web".to_owned(), 0.5),
            ("terminal".to_owned(), 0.0),
        ]))
        .unwrap();
        let mut web = 0;
        for i in 0..1000 {
            let hash = crate::hash::bytes_hash(format!("{i}").as_bytes());
            let sets = d.sample(&hash);
            assert!(sets.contains(&"file".to_owned()));
            assert!(!sets.contains(&"terminal".to_owned()));
            web += usize::from(sets.contains(&"web".to_owned()));
            assert_eq!(sets, d.sample(&hash), "the same item draws the same");
        }
        assert!((400..600).contains(&web), "{web}");
        assert!(Distribution::new(BTreeMap::from([("a".to_owned(), 0.0)])).is_err());
        assert!(Distribution::new(BTreeMap::from([("a".to_owned(), 1.5)])).is_err());
    }
}
