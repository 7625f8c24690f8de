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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenTotals {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
}
