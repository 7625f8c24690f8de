//! Providers that keep working: a pool of API keys rotated on 429 and an
//! ordered list of fallback endpoints used when the current one fails after
//! its retries. Both live behind [`LlmClient::complete`], so every agent
//! that shares a client (the root and its subagents) shares them too.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use herald_protocol::ToolSpec;
use tokio_util::sync::CancellationToken;

use crate::{
    AssistantReply, ChatRequest, EncodedTools, ErrorKind, LlmClient, LlmError, ProviderKind,
    StreamUpdate, anthropic, openai,
};

/// One key of a credential pool and the variable it came from (named in
/// messages, never the key itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolKey {
    /// The environment variable (or config key) that held it.
    pub source: String,
    /// The key.
    pub value: String,
}

/// The keys of one endpoint. The current key is shared by every clone of
/// the client, so a key that hit its rate limit is left for all agents.
#[derive(Debug, Default)]
pub(crate) struct KeyPool {
    keys: Vec<PoolKey>,
    current: AtomicUsize,
}

impl KeyPool {
    pub(crate) fn new(keys: Vec<PoolKey>) -> Self {
        Self {
            keys,
            current: AtomicUsize::new(0),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The key to use now and its index.
    pub(crate) fn current(&self) -> (usize, Option<&PoolKey>) {
        let index = self.current.load(Ordering::Relaxed) % self.keys.len().max(1);
        (index, self.keys.get(index))
    }

    /// Moves past the key at `from` when it is still the current one
    /// (another agent may have moved on already); returns the key now current.
    pub(crate) fn rotate_from(&self, from: usize) -> Option<&PoolKey> {
        let next = (from + 1) % self.keys.len().max(1);
        let _ = self
            .current
            .compare_exchange(from, next, Ordering::Relaxed, Ordering::Relaxed);
        self.current().1
    }
}

/// Whether an error (already retried where that helps) sends the request to
/// the next provider: rate limits, server errors and connection failures that
/// outlived their retries, and answers that will not change on this endpoint
/// (401 bad key, 403 forbidden model, 404 unknown model or URL).
pub(crate) fn switches_provider(kind: ErrorKind) -> bool {
    kind.is_retryable()
        || matches!(
            kind,
            ErrorKind::Auth | ErrorKind::Forbidden | ErrorKind::NotFound
        )
}

/// Where requests go while the primary is failing.
#[derive(Debug)]
struct State {
    /// 0 = the primary, `i` = fallback `i - 1`.
    active: usize,
    /// When the session moved off the primary.
    since: Instant,
}

/// The fallback endpoints of a client, in order, and which one is in use.
#[derive(Debug)]
pub(crate) struct Chain {
    fallbacks: Vec<LlmClient>,
    cooldown: Duration,
    state: Mutex<State>,
    /// Tool lists re-encoded for the other wire (keyed by the original JSON).
    tools: Mutex<Vec<(std::sync::Arc<str>, EncodedTools)>>,
}

impl Chain {
    pub(crate) fn new(fallbacks: Vec<LlmClient>, cooldown: Duration) -> Self {
        Self {
            fallbacks,
            cooldown,
            state: Mutex::new(State {
                active: 0,
                since: Instant::now(),
            }),
            tools: Mutex::new(Vec::new()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The entry to start from: the one in use, or the primary again once
    /// the cooldown is over (said with a `Fallback` update).
    fn start(
        &self,
        primary: &LlmClient,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
    ) -> usize {
        let back_from = {
            let mut state = self.state();
            if state.active != 0 && state.since.elapsed() >= self.cooldown {
                let from = state.active;
                state.active = 0;
                Some(from)
            } else {
                return state.active;
            }
        };
        if let Some(from) = back_from {
            let from = self.entry(primary, from);
            let reason = format!(
                "fallback_cooldown of {} s is over: trying the primary provider again",
                self.cooldown.as_secs_f64()
            );
            on_update(StreamUpdate::Fallback {
                from_provider: from.provider().as_str(),
                from_model: from.model(),
                to_provider: primary.provider().as_str(),
                to_model: primary.model(),
                reason: &reason,
            });
        }
        0
    }

    fn entry<'a>(&'a self, primary: &'a LlmClient, index: usize) -> &'a LlmClient {
        match index {
            0 => primary,
            i => self.fallbacks.get(i - 1).unwrap_or(primary),
        }
    }

    /// Sends the request to the entry in use, moving down the list while
    /// entries fail in a way another provider may not.
    pub(crate) async fn complete(
        &self,
        primary: &LlmClient,
        req: ChatRequest<'_>,
        cache: Option<&crate::BodyCache>,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, LlmError> {
        let mut index = self.start(primary, on_update);
        loop {
            let client = self.entry(primary, index);
            let tools = self.tools_for(client.provider(), req.tools);
            let request = ChatRequest {
                tools: tools.as_ref().unwrap_or(req.tools),
                ..req
            };
            let mut streamed = false;
            let result = {
                let mut forward = |update: StreamUpdate<'_>| {
                    if matches!(update, StreamUpdate::TextDelta(_)) {
                        streamed = true;
                    }
                    on_update(update);
                };
                client
                    .complete_here(request, cache, &mut forward, cancel)
                    .await
            };
            match result {
                Err(err) if switches_provider(err.kind) && index < self.fallbacks.len() => {
                    if streamed {
                        on_update(StreamUpdate::TextRestart);
                    }
                    let next = self.entry(primary, index + 1);
                    on_update(StreamUpdate::Fallback {
                        from_provider: client.provider().as_str(),
                        from_model: client.model(),
                        to_provider: next.provider().as_str(),
                        to_model: next.model(),
                        reason: &err.message,
                    });
                    index += 1;
                    let mut state = self.state();
                    state.active = index;
                    state.since = Instant::now();
                }
                other => return other,
            }
        }
    }

    /// The tool list in `provider`'s wire format: `None` when `tools`
    /// already is (it was encoded by the primary's provider).
    fn tools_for(&self, provider: ProviderKind, tools: &EncodedTools) -> Option<EncodedTools> {
        let encoded_for = encoded_provider(tools)?;
        if encoded_for == provider {
            return None;
        }
        let mut cache = self
            .tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, hit)) = cache.iter().find(|(json, _)| *json == tools.json) {
            return Some(hit.clone());
        }
        let specs = decode_tools(encoded_for, &tools.json);
        let encoded = match provider {
            ProviderKind::OpenAi => openai::encode_tools(&specs),
            ProviderKind::Anthropic => anthropic::encode_tools(&specs),
        };
        if cache.len() >= 8 {
            cache.remove(0);
        }
        cache.push((tools.json.clone(), encoded.clone()));
        Some(encoded)
    }
}

/// Which wire a tool list was encoded for (`None` for an empty list).
fn encoded_provider(tools: &EncodedTools) -> Option<ProviderKind> {
    if tools.count == 0 {
        return None;
    }
    if tools.json.starts_with(r#"[{"type":"function""#) {
        Some(ProviderKind::OpenAi)
    } else {
        Some(ProviderKind::Anthropic)
    }
}

/// The tool specs back from an encoded list of either wire.
fn decode_tools(provider: ProviderKind, json: &str) -> Vec<ToolSpec> {
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str(json) else {
        return Vec::new();
    };
    let text = |v: Option<&serde_json::Value>| {
        v.and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    items
        .iter()
        .map(|item| {
            let (tool, schema) = match provider {
                ProviderKind::OpenAi => {
                    let f = item.get("function").unwrap_or(item);
                    (f, f.get("parameters"))
                }
                ProviderKind::Anthropic => (item, item.get("input_schema")),
            };
            ToolSpec {
                name: text(tool.get("name")),
                description: text(tool.get("description")),
                parameters: schema.cloned().unwrap_or(serde_json::Value::Null),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u32) -> PoolKey {
        PoolKey {
            source: format!("K{n}"),
            value: format!("sk-{n}"),
        }
    }

    #[test]
    fn pool_rotates_once_per_limited_key_and_wraps() {
        let pool = KeyPool::new(vec![key(1), key(2), key(3)]);
        assert_eq!(pool.current().0, 0);
        assert_eq!(pool.rotate_from(0).map(|k| k.value.as_str()), Some("sk-2"));
        // A second agent that also saw key 0 limited does not skip key 1.
        assert_eq!(pool.rotate_from(0).map(|k| k.value.as_str()), Some("sk-2"));
        assert_eq!(pool.rotate_from(1).map(|k| k.value.as_str()), Some("sk-3"));
        assert_eq!(pool.rotate_from(2).map(|k| k.value.as_str()), Some("sk-1"));
        let empty = KeyPool::new(Vec::new());
        assert!(empty.current().1.is_none());
        assert!(empty.rotate_from(0).is_none());
    }

    #[test]
    fn only_failures_another_provider_may_not_have_switch() {
        for kind in [
            ErrorKind::RateLimited,
            ErrorKind::Server,
            ErrorKind::Network,
            ErrorKind::IdleTimeout,
            ErrorKind::Truncated,
            ErrorKind::Auth,
            ErrorKind::Forbidden,
            ErrorKind::NotFound,
        ] {
            assert!(switches_provider(kind), "{kind:?}");
        }
        for kind in [
            ErrorKind::ContextTooLong,
            ErrorKind::BadRequest,
            ErrorKind::Protocol,
            ErrorKind::Cancelled,
        ] {
            assert!(!switches_provider(kind), "{kind:?}");
        }
    }

    #[test]
    fn tools_convert_between_wires_without_loss() {
        let specs = crate::types::golden_specs();
        let open = openai::encode_tools(&specs);
        let anth = anthropic::encode_tools(&specs);
        assert_eq!(encoded_provider(&open), Some(ProviderKind::OpenAi));
        assert_eq!(encoded_provider(&anth), Some(ProviderKind::Anthropic));
        assert_eq!(decode_tools(ProviderKind::OpenAi, &open.json), specs);
        assert_eq!(decode_tools(ProviderKind::Anthropic, &anth.json), specs);
        let chain = Chain::new(Vec::new(), Duration::from_secs(1));
        let converted = chain.tools_for(ProviderKind::Anthropic, &open);
        assert_eq!(converted.map(|t| t.json), Some(anth.json.clone()));
        assert!(chain.tools_for(ProviderKind::OpenAi, &open).is_none());
        assert!(
            chain
                .tools_for(ProviderKind::OpenAi, &openai::encode_tools(&[]))
                .is_none()
        );
    }
}
