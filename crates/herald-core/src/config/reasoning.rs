//! Reasoning controls: top-level `reasoning_effort` (OpenAI-compatible
//! reasoning models; `--reasoning-effort` wins over it) and `[thinking]`
//! (Anthropic extended thinking), resolved into the client's
//! [`ReasoningConfig`].

use std::path::Path;

use herald_llm::{ReasoningConfig, ReasoningEffort};
use serde::{Deserialize, Serialize};

use super::ConfigError;

/// `[thinking]` (or `thinking = { budget_tokens = N }`): Anthropic extended
/// thinking. Off when `budget_tokens` is unset.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ThinkingConfig {
    /// Tokens the model may think per reply (at least 1024, below
    /// `max_tokens` when that is set).
    pub budget_tokens: Option<u32>,
}

/// The reasoning controls of the root agent. `flag` is
/// `--reasoning-effort`; `max_tokens` the configured output cap, which
/// must leave room past the thinking budget. (The budget's own range is
/// checked with the file, in `check.rs`.)
pub(crate) fn resolve(
    effort: Option<&str>,
    flag: Option<&str>,
    thinking: &ThinkingConfig,
    max_tokens: Option<u32>,
    config_path: &Path,
) -> Result<ReasoningConfig, ConfigError> {
    let effort =
        match (flag, effort) {
            (Some(value), _) => Some(
                value
                    .parse::<ReasoningEffort>()
                    .map_err(|err| ConfigError::Invalid(format!("--reasoning-effort: {err}")))?,
            ),
            (None, Some(value)) => Some(value.parse::<ReasoningEffort>().map_err(|err| {
                ConfigError::Invalid(format!("{}: {err}", config_path.display()))
            })?),
            (None, None) => None,
        };
    if let (Some(budget), Some(max)) = (thinking.budget_tokens, max_tokens)
        && budget >= max
    {
        return Err(ConfigError::Invalid(format!(
            "{}: [thinking] budget_tokens = {budget} must be below max_tokens = {max} (the answer needs room after the thinking); raise max_tokens or lower the budget",
            config_path.display()
        )));
    }
    Ok(ReasoningConfig {
        effort,
        thinking_budget: thinking.budget_tokens,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn budget(n: u32) -> ThinkingConfig {
        ThinkingConfig {
            budget_tokens: Some(n),
        }
    }

    #[test]
    fn the_flag_wins_and_unknown_levels_are_refused() {
        let path = Path::new("/h/config.toml");
        let none = ThinkingConfig::default();
        let got = resolve(Some("low"), Some("high"), &none, None, path).unwrap();
        assert_eq!(got.effort, Some(ReasoningEffort::High));
        let err = resolve(Some("extreme"), None, &none, None, path).unwrap_err();
        assert!(err.to_string().contains("/h/config.toml"), "{err}");
        let err = resolve(None, Some("x"), &none, None, path).unwrap_err();
        assert!(err.to_string().contains("--reasoning-effort"), "{err}");
        assert_eq!(
            resolve(None, None, &none, None, path).unwrap(),
            ReasoningConfig::default()
        );
    }

    #[test]
    fn the_budget_must_leave_room_below_max_tokens() {
        let path = Path::new("c.toml");
        let err = resolve(None, None, &budget(4096), Some(4096), path).unwrap_err();
        assert!(err.to_string().contains("raise max_tokens"), "{err}");
        let ok = resolve(None, None, &budget(4096), Some(8000), path).unwrap();
        assert_eq!(ok.thinking_budget, Some(4096));
        let unset = resolve(None, None, &budget(20_000), None, path).unwrap();
        assert_eq!(unset.thinking_budget, Some(20_000));
    }
}
