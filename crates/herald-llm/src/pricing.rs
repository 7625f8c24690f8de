//! What a model request costs, from a built-in price table that
//! `[pricing."model"]` in the config extends or overrides.

use std::sync::OnceLock;

use herald_protocol::Usage;

/// USD per million tokens of one model. `cache_write` is what a prompt
/// token written to the provider's cache costs (Anthropic charges 1.25×
/// input); `cache_read` what a token served from the cache costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Price {
    const fn builtin(input: f64, cache_read: f64, output: f64) -> Price {
        Price {
            input,
            output,
            cache_read,
            cache_write: input * 1.25,
        }
    }

    /// USD for one request's usage at this price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let uncached = usage
            .input_tokens
            .saturating_sub(usage.cached_tokens)
            .saturating_sub(usage.cache_creation_tokens) as f64;
        (uncached * self.input
            + usage.cached_tokens as f64 * self.cache_read
            + usage.cache_creation_tokens as f64 * self.cache_write
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// Prices of common models, matched by longest prefix.
const PRICES: &[(&str, Price)] = &[
    ("gpt-4.1-nano", Price::builtin(0.10, 0.025, 0.40)),
    ("gpt-4.1-mini", Price::builtin(0.40, 0.10, 1.60)),
    ("gpt-4.1", Price::builtin(2.00, 0.50, 8.00)),
    ("gpt-4o-mini", Price::builtin(0.15, 0.075, 0.60)),
    ("gpt-4o", Price::builtin(2.50, 1.25, 10.00)),
    ("gpt-5-mini", Price::builtin(0.25, 0.025, 2.00)),
    ("gpt-5-nano", Price::builtin(0.05, 0.005, 0.40)),
    ("gpt-5", Price::builtin(1.25, 0.125, 10.00)),
    ("o4-mini", Price::builtin(1.10, 0.275, 4.40)),
    ("o3", Price::builtin(2.00, 0.50, 8.00)),
    ("claude-opus-4", Price::builtin(15.00, 1.50, 75.00)),
    ("claude-sonnet-4", Price::builtin(3.00, 0.30, 15.00)),
    ("claude-3-7-sonnet", Price::builtin(3.00, 0.30, 15.00)),
    ("claude-3-5-haiku", Price::builtin(0.80, 0.08, 4.00)),
    ("claude-haiku-4", Price::builtin(1.00, 0.10, 5.00)),
];

/// The `[pricing]` entries of the config, installed once at start-up by the
/// binary (a process has one config); they win over the built-in table.
static OVERRIDES: OnceLock<Vec<(String, Price)>> = OnceLock::new();

/// Installs the config's price overrides for this process. A second call is
/// ignored and returns `false` (the first config loaded wins).
pub fn install_price_overrides(overrides: Vec<(String, Price)>) -> bool {
    OVERRIDES.set(overrides).is_ok()
}

/// The price of `model`: an override names the model exactly (after an
/// `org/` routing prefix as OpenRouter uses, or with it); the built-in
/// table matches by longest known prefix. `None` for an unknown model.
pub fn price_of(model: &str) -> Option<Price> {
    price_in(OVERRIDES.get().map(Vec::as_slice).unwrap_or(&[]), model)
}

fn price_in(overrides: &[(String, Price)], model: &str) -> Option<Price> {
    let name = model.rsplit('/').next().unwrap_or(model);
    if let Some((_, price)) = overrides
        .iter()
        .find(|(key, _)| key == model || key == name)
    {
        return Some(*price);
    }
    PRICES
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, price)| *price)
}

/// Cost of one request's usage for `model`; `None` when the model has no
/// price (shown as `null`, never a silent 0 — add it under `[pricing]`).
pub fn cost_usd(model: &str, usage: &Usage) -> Option<f64> {
    price_of(model).map(|price| price.cost(usage))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, cached: u64, creation: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cached_tokens: cached,
            cache_creation_tokens: creation,
        }
    }

    #[test]
    fn prices_known_models_and_cached_tokens() {
        let usage = usage(1_000_000, 1_000_000, 500_000, 0);
        let cost = cost_usd("gpt-4.1", &usage).unwrap();
        assert!((cost - (1.0 + 0.25 + 8.0)).abs() < 1e-9, "{cost}");
        let mini = cost_usd("openai/gpt-4.1-mini", &usage).unwrap();
        assert!((mini - (0.2 + 0.05 + 1.6)).abs() < 1e-9, "{mini}");
    }

    #[test]
    fn an_unknown_model_has_no_cost_not_zero() {
        assert_eq!(cost_usd("llama3:8b", &usage(10, 10, 0, 0)), None);
    }

    #[test]
    fn cache_writes_cost_a_quarter_more_than_input_by_default() {
        let price = price_in(&[], "claude-sonnet-4-5").unwrap();
        let cost = price.cost(&usage(1_000_000, 0, 0, 1_000_000));
        assert!((cost - 3.75).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn overrides_win_and_extend_the_table() {
        let custom = Price {
            input: 1.0,
            output: 2.0,
            cache_read: 0.5,
            cache_write: 1.5,
        };
        let overrides = vec![
            ("gpt-4.1".to_string(), custom),
            ("my-local".to_string(), custom),
        ];
        assert_eq!(price_in(&overrides, "gpt-4.1"), Some(custom));
        assert_eq!(price_in(&overrides, "vendor/my-local"), Some(custom));
        // An override names a model exactly; its longer names keep the table.
        assert_ne!(price_in(&overrides, "gpt-4.1-mini"), Some(custom));
        let cost = custom.cost(&usage(4_000_000, 1_000_000, 1_000_000, 1_000_000));
        assert!((cost - (2.0 + 0.5 + 1.5 + 2.0)).abs() < 1e-9, "{cost}");
    }
}
