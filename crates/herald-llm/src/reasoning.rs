//! How much a reasoning model may think: `reasoning_effort` for
//! OpenAI-compatible reasoning models, a thinking budget for Anthropic
//! extended thinking. Both are off unless configured.

/// The `reasoning_effort` an OpenAI-compatible reasoning model is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningEffort {
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    /// The wire (and config) spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

impl std::str::FromStr for ReasoningEffort {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.trim().to_ascii_lowercase().as_str() {
            "low" => Ok(ReasoningEffort::Low),
            "medium" => Ok(ReasoningEffort::Medium),
            "high" => Ok(ReasoningEffort::High),
            other => Err(format!(
                "unknown reasoning_effort '{other}'; use low, medium or high (or remove it for models that do not reason)"
            )),
        }
    }
}

/// The smallest thinking budget Anthropic accepts.
pub const MIN_THINKING_BUDGET: u32 = 1024;

/// Output tokens left for the answer when thinking is on and no
/// `max_tokens` is configured: `max_tokens` must exceed the budget.
pub(crate) const ANSWER_TOKENS: u32 = 8192;

/// The reasoning controls of one client. The default asks for nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReasoningConfig {
    /// Sent as `reasoning_effort` on the OpenAI wire (with
    /// `max_completion_tokens` in place of `max_tokens`, which reasoning
    /// models refuse). Ignored on the Anthropic wire.
    pub effort: Option<ReasoningEffort>,
    /// Anthropic extended thinking: `thinking: {type: "enabled",
    /// budget_tokens}`. Ignored on the OpenAI wire.
    pub thinking_budget: Option<u32>,
}

impl ReasoningConfig {
    /// The Anthropic `max_tokens` for a configured cap: the cap as set, or
    /// the default, raised past the thinking budget when none is set.
    pub(crate) fn anthropic_max_tokens(&self, configured: Option<u32>) -> u32 {
        match (configured, self.thinking_budget) {
            (Some(max), _) => max,
            (None, Some(budget)) => budget.saturating_add(ANSWER_TOKENS),
            (None, None) => ANSWER_TOKENS,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn effort_parses_the_three_levels_and_refuses_others() {
        assert_eq!("High".parse::<ReasoningEffort>(), Ok(ReasoningEffort::High));
        assert_eq!("low".parse::<ReasoningEffort>().unwrap().as_str(), "low");
        let err = "max".parse::<ReasoningEffort>().unwrap_err();
        assert!(err.contains("low, medium or high"), "{err}");
    }

    #[test]
    fn max_tokens_leaves_room_past_the_budget_only_when_unset() {
        let thinking = ReasoningConfig {
            thinking_budget: Some(4000),
            ..Default::default()
        };
        assert_eq!(thinking.anthropic_max_tokens(None), 12192);
        assert_eq!(thinking.anthropic_max_tokens(Some(5000)), 5000);
        assert_eq!(ReasoningConfig::default().anthropic_max_tokens(None), 8192);
    }
}
