//! Simulated token accounting: tokens are bytes / 4, and a per-conversation
//! prefix cache credits the bytes a request shares with its predecessor.

use std::collections::HashMap;

use serde_json::Value;

use crate::canonical::{canonical_request, common_prefix_len};
use crate::normalize::Api;
use crate::script::Reply;

/// Token numbers reported for one reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Whole prompt: request body bytes / 4.
    pub prompt_tokens: u64,
    /// Prompt tokens served from the simulated prefix cache.
    pub cached_tokens: u64,
    /// Anthropic only: prompt tokens written to the cache (everything not read
    /// from it, when the request carries a `cache_control` breakpoint).
    pub cache_creation_tokens: u64,
    /// Generated content bytes / 4, at least 1.
    pub completion_tokens: u64,
}

impl TokenUsage {
    /// Anthropic's `input_tokens`: prompt tokens neither read from nor written
    /// to the cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.prompt_tokens
            .saturating_sub(self.cached_tokens)
            .saturating_sub(self.cache_creation_tokens)
    }
}

/// The last canonical request text seen per conversation.
#[derive(Debug, Default)]
pub(crate) struct PrefixCache {
    last: HashMap<String, String>,
}

impl PrefixCache {
    /// Records `body` as the newest request of `conversation` and returns the
    /// byte length shared with the previous one (0 for the first).
    pub(crate) fn observe(&mut self, conversation: &str, body: &Value) -> usize {
        let text = canonical_request(body);
        let shared = self
            .last
            .get(conversation)
            .map_or(0, |prev| common_prefix_len(prev, &text));
        self.last.insert(conversation.to_string(), text);
        shared
    }
}

/// Computes the usage reported for `reply` to a request of `body_len` bytes
/// sharing `cached_prefix_bytes` with its predecessor.
pub(crate) fn usage_for(
    api: Api,
    body: &Value,
    body_len: usize,
    cached_prefix_bytes: usize,
    reply: &Reply,
) -> TokenUsage {
    let prompt_tokens = (body_len / 4) as u64;
    let cached_tokens = ((cached_prefix_bytes / 4) as u64).min(prompt_tokens);
    let cache_creation_tokens = match api {
        Api::Anthropic if has_cache_control(body) => prompt_tokens - cached_tokens,
        _ => 0,
    };
    TokenUsage {
        prompt_tokens,
        cached_tokens,
        cache_creation_tokens,
        completion_tokens: ((reply.content_bytes() / 4) as u64).max(1),
    }
}

fn has_cache_control(v: &Value) -> bool {
    match v {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k == "cache_control" || has_cache_control(v)),
        Value::Array(items) => items.iter().any(has_cache_control),
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prefix_cache_credits_shared_bytes() {
        let mut cache = PrefixCache::default();
        let r1 = json!({"messages": [{"role": "user", "content": "hello there"}]});
        let r2 = json!({"messages": [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "x"}]});
        assert_eq!(cache.observe("c", &r1), 0);
        let shared = cache.observe("c", &r2);
        assert_eq!(shared, canonical_request(&r1).len());
        assert_eq!(cache.observe("other", &r2), 0);
    }

    #[test]
    fn usage_numbers() {
        let body = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]}]});
        let u = usage_for(Api::Anthropic, &body, 400, 200, &Reply::text("12345678"));
        assert_eq!(u.prompt_tokens, 100);
        assert_eq!(u.cached_tokens, 50);
        assert_eq!(u.cache_creation_tokens, 50);
        assert_eq!(u.uncached_input_tokens(), 0);
        assert_eq!(u.completion_tokens, 2);
        let u = usage_for(Api::OpenAi, &body, 40, 4000, &Reply::text(""));
        assert_eq!(u.cached_tokens, 10);
        assert_eq!(u.cache_creation_tokens, 0);
        assert_eq!(u.completion_tokens, 1);
        let plain = json!({"messages": []});
        let u = usage_for(Api::Anthropic, &plain, 40, 0, &Reply::text("x"));
        assert_eq!(u.cache_creation_tokens, 0);
        assert_eq!(u.uncached_input_tokens(), 10);
    }
}
