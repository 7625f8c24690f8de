//! Context window sizes by model name, so compression knows when a
//! conversation is getting close to the limit without asking the provider.

/// Used when the model is not in the table and no override is configured.
/// Conservative for hosted models; a local server with a smaller window
/// answers "context too long", which shrinks the window the agent assumes.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// Known model-name prefixes and their context windows in tokens. The
/// longest matching prefix wins, so specific entries may follow general ones.
const WINDOWS: &[(&str, u64)] = &[
    ("gpt-3.5-turbo", 16_385),
    ("gpt-4", 8_192),
    ("gpt-4-32k", 32_768),
    ("gpt-4-turbo", 128_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5", 128_000),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude", 200_000),
    ("gemini", 1_048_576),
    ("llama", 8_192),
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama-4", 1_048_576),
    ("mistral", 32_768),
    ("mistral-large", 131_072),
    ("qwen", 32_768),
    ("qwen3", 40_960),
    ("deepseek", 65_536),
    ("grok", 131_072),
];

/// The context window to plan with: `override_tokens` when it is set (not
/// 0), else the table entry for `model`, else [`DEFAULT_CONTEXT_WINDOW`].
/// Provider prefixes (`openrouter/anthropic/...`) and letter case are
/// ignored.
pub fn context_window(model: &str, override_tokens: u64) -> u64 {
    if override_tokens > 0 {
        return override_tokens;
    }
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    WINDOWS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(DEFAULT_CONTEXT_WINDOW, |(_, tokens)| *tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_override_beats_the_table() {
        assert_eq!(context_window("gpt-4.1-mini", 0), 1_047_576);
        assert_eq!(context_window("gpt-4o-mini", 0), 128_000);
        assert_eq!(context_window("gpt-4", 0), 8_192);
        assert_eq!(context_window("claude-sonnet-4-5", 0), 200_000);
        assert_eq!(
            context_window("openrouter/anthropic/Claude-3.5-Sonnet", 0),
            200_000
        );
        assert_eq!(context_window("llama3.1:8b", 0), 131_072);
        assert_eq!(context_window("llama2", 0), 8_192);
        assert_eq!(context_window("my-local-model", 0), DEFAULT_CONTEXT_WINDOW);
        assert_eq!(context_window("gpt-4.1", 2_000), 2_000);
    }
}
