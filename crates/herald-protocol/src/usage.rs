use serde::{Deserialize, Serialize};

/// Token usage of one model request as reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, including cached ones.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's prefix cache.
    pub cached_tokens: u64,
    /// Prompt tokens written to the cache (Anthropic only).
    pub cache_creation_tokens: u64,
}

impl Usage {
    /// Adds another request's usage to this running total.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cache_creation_tokens += other.cache_creation_tokens;
    }

    /// The compact summary used by `run.completed` and subagent results.
    pub fn totals(&self) -> TokenTotals {
        TokenTotals {
            input: self.input_tokens,
            output: self.output_tokens,
            cached: self.cached_tokens,
        }
    }
}

/// `{input, output, cached}` as it appears in events and results.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct TokenTotals {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
}

/// Tokens, cost and requests of an agent or a whole delegation tree, as
/// `run.completed` (`usage`, `tree_usage`), `subagent.completed` and
/// `agent_status` report them. `input` includes `cached` and
/// `cache_creation`; `cost_usd` is `null` once any request ran on a model
/// without a price.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UsageTotals {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
    #[serde(default)]
    pub cache_creation: u64,
    /// USD rounded to 1e-6; `null` when unknown.
    #[serde(default, with = "cost_serde")]
    #[schemars(with = "Option<f64>")]
    pub cost_usd: Option<f64>,
    /// Model requests answered.
    #[serde(default)]
    pub requests: u64,
}

impl Default for UsageTotals {
    fn default() -> Self {
        Self {
            input: 0,
            output: 0,
            cached: 0,
            cache_creation: 0,
            cost_usd: Some(0.0),
            requests: 0,
        }
    }
}

impl UsageTotals {
    /// The `{input, output, cached}` part.
    pub fn tokens(&self) -> TokenTotals {
        TokenTotals {
            input: self.input,
            output: self.output,
            cached: self.cached,
        }
    }
}

/// Rounds a USD amount to the nearest micro-dollar (1e-6), so sums of
/// per-request costs print as decimals (`0.01478`), not float noise
/// (`0.014779999999999998`).
pub fn round_cost(usd: f64) -> f64 {
    (usd * 1_000_000.0).round() / 1_000_000.0
}

/// Adds two costs where `None` means "unknown" (a model without a price):
/// one unknown part makes the whole sum unknown, never a silent 0.
pub fn add_cost(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

/// Serde helpers for an `Option<f64>` USD cost: written rounded to 1e-6,
/// `null` when unknown. Use as `#[serde(default, with = "herald_protocol::cost_serde")]`.
pub mod cost_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes the cost rounded to 1e-6, or `null`.
    pub fn serialize<S: Serializer>(cost: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match cost {
            Some(usd) => s.serialize_f64(super::round_cost(*usd)),
            None => s.serialize_none(),
        }
    }

    /// Writes a known cost (a stored total) rounded to 1e-6; for
    /// `#[serde(serialize_with = "herald_protocol::cost_serde::serialize_amount")]`.
    pub fn serialize_amount<S: Serializer>(usd: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(super::round_cost(*usd))
    }

    /// Reads a number or `null`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Option::<f64>::deserialize(d)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Wrap {
        #[serde(default, with = "cost_serde")]
        cost_usd: Option<f64>,
    }

    #[test]
    fn costs_serialise_rounded_or_null() {
        let noisy = Wrap {
            cost_usd: Some(0.014_779_999_999_999_998),
        };
        assert_eq!(
            serde_json::to_string(&noisy).unwrap(),
            r#"{"cost_usd":0.01478}"#
        );
        let sum = Wrap {
            cost_usd: add_cost(Some(0.1), Some(0.2)),
        };
        assert_eq!(serde_json::to_string(&sum).unwrap(), r#"{"cost_usd":0.3}"#);
        let tiny = Wrap {
            cost_usd: Some(0.000_000_4),
        };
        assert_eq!(serde_json::to_string(&tiny).unwrap(), r#"{"cost_usd":0.0}"#);
        let unknown = Wrap {
            cost_usd: add_cost(Some(1.0), None),
        };
        assert_eq!(
            serde_json::to_string(&unknown).unwrap(),
            r#"{"cost_usd":null}"#
        );
        let back: Wrap = serde_json::from_str(r#"{"cost_usd":null}"#).unwrap();
        assert_eq!(back.cost_usd, None);
        let back: Wrap = serde_json::from_str(r#"{"cost_usd":0.5}"#).unwrap();
        assert_eq!(back.cost_usd, Some(0.5));
    }
}
