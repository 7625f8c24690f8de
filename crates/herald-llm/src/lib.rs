//! Streaming clients for the two wire APIs herald speaks: OpenAI-compatible
//! Chat Completions and the Anthropic Messages API. Both turn a provider-neutral
//! [`ChatRequest`] into an [`AssistantReply`], retrying transient failures.

mod anthropic;
mod body;
mod chain;
mod client;
mod error;
pub mod governor;
mod openai;
mod pricing;
mod probe;
mod reasoning;
mod retry;
mod sse;
mod types;

pub use body::BodyCache;
pub use chain::PoolKey;
pub use client::{ClientConfig, LlmClient, ProviderKind, error_chain};
pub use error::{ErrorKind, LlmError};
pub use governor::DEFAULT_MAX_IN_FLIGHT;
pub use pricing::{Price, cost_usd, install_price_overrides, price_of};
pub use probe::{ProbeOutcome, models_url, probe};
pub use reasoning::{MIN_THINKING_BUDGET, ReasoningConfig, ReasoningEffort};
pub use retry::RetryPolicy;
pub use types::{AssistantReply, ChatRequest, EncodedTools, StreamUpdate};
