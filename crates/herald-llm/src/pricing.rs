use herald_protocol::Usage;

/// USD per million tokens: (input, cached input, output). Prices of common
/// models; unknown models cost 0 (local servers are free).
const PRICES: &[(&str, f64, f64, f64)] = &[
    ("gpt-4.1-nano", 0.10, 0.025, 0.40),
    ("gpt-4.1-mini", 0.40, 0.10, 1.60),
    ("gpt-4.1", 2.00, 0.50, 8.00),
    ("gpt-4o-mini", 0.15, 0.075, 0.60),
    ("gpt-4o", 2.50, 1.25, 10.00),
    ("gpt-5-mini", 0.25, 0.025, 2.00),
    ("gpt-5-nano", 0.05, 0.005, 0.40),
    ("gpt-5", 1.25, 0.125, 10.00),
    ("o4-mini", 1.10, 0.275, 4.40),
    ("o3", 2.00, 0.50, 8.00),
    ("claude-opus-4", 15.00, 1.50, 75.00),
    ("claude-sonnet-4", 3.00, 0.30, 15.00),
    ("claude-3-7-sonnet", 3.00, 0.30, 15.00),
    ("claude-3-5-haiku", 0.80, 0.08, 4.00),
    ("claude-haiku-4", 1.00, 0.10, 5.00),
];

/// Cost of one request's usage for `model` (matched by longest known prefix,
/// ignoring an `org/` routing prefix as OpenRouter uses).
pub fn cost_usd(model: &str, usage: &Usage) -> f64 {
    let name = model.rsplit('/').next().unwrap_or(model);
    let Some(&(_, input, cached, output)) = PRICES
        .iter()
        .filter(|(prefix, ..)| name.starts_with(prefix))
        .max_by_key(|(prefix, ..)| prefix.len())
    else {
        return 0.0;
    };
    let uncached = usage.input_tokens.saturating_sub(usage.cached_tokens) as f64;
    let creation_premium = usage.cache_creation_tokens as f64 * input * 0.25;
    (uncached * input
        + usage.cached_tokens as f64 * cached
        + usage.output_tokens as f64 * output
        + creation_premium)
        / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_known_models_and_cached_tokens() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cached_tokens: 500_000,
            cache_creation_tokens: 0,
        };
        let cost = cost_usd("gpt-4.1", &usage);
        assert!((cost - (1.0 + 0.25 + 8.0)).abs() < 1e-9, "{cost}");
        let mini = cost_usd("openai/gpt-4.1-mini", &usage);
        assert!((mini - (0.2 + 0.05 + 1.6)).abs() < 1e-9, "{mini}");
        assert_eq!(cost_usd("llama3:8b", &usage), 0.0);
    }
}
