//! A scripted LLM server for tests and benchmarks.
//!
//! [`ScriptedServer`] speaks both OpenAI Chat Completions and Anthropic
//! Messages over real HTTP with SSE streaming. A [`Script`] says what the
//! "model" answers per conversation and turn; every request is recorded
//! ([`RecordedRequest`]) and can be checked against the two invariants every
//! herald request must keep: each tool call has exactly one result
//! ([`check_pairing`]) and each request extends the previous request of its
//! conversation ([`check_prefix`]). The server checks both on every request
//! by itself: a violating request is answered with HTTP 400, and dropping the
//! server panics with a report of every violation unless the test opted out
//! with [`ScriptedServer::skip_invariants`] and a reason. Latency, HTTP errors, broken streams and
//! OpenAI server quirks can be injected.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use herald_testkit::{Reply, Script, ScriptedServer};
//! use serde_json::json;
//!
//! let server = ScriptedServer::start(
//!     Script::new().conversation(
//!         "list the files",
//!         vec![Reply::tool("list_dir", json!({"path": "."})), Reply::text("done")],
//!     ),
//! )
//! .await?;
//! // point a client at server.openai_base_url() or server.anthropic_base_url() ...
//! // Dropping `server` checks tool pairing and prefix stability of every request.
//! # Ok(())
//! # }
//! ```
//!
//! [`pty::PtySession`] runs a program (the `herald` binary) under a
//! pseudo-terminal with an emulated screen, for tests of what a person sees.

#![deny(missing_docs)]

mod body;
mod canonical;
mod child_env;
mod endless;
mod fault;
mod invariants;
mod normalize;
mod outside_temp;
pub mod png;
mod processes;
pub mod pty;
mod record;
mod render;
mod script;
mod server;
mod usage;
mod wait;
mod wire_anthropic;
mod wire_openai;

pub use body::Pace;
pub use canonical::{canonical_message, canonical_request, strip_cache_control};
pub use child_env::{in_child, rerun_with_env};
pub use fault::Fault;
pub use invariants::{
    FLUSH_INSTRUCTION_PREFIX, Predecessors, check_pairing, check_prefix, is_compaction,
    is_compaction_text, is_flush_request, is_summary_request, pairing_violations, prefix_stability,
    prefix_violations, request_violations, request_violations_after, violations,
};
pub use normalize::{Api, NormMessage, RequestView};
pub use outside_temp::{dir_outside_temp, is_under_temp};
pub use processes::{assert_gone_within, is_gone};
pub use record::RecordedRequest;
pub use script::{
    ENDLESS_CALL_PREFIX, Endless, Lookup, Reply, Script, ScriptedCall, ScriptedThinking,
};
pub use server::ScriptedServer;
pub use usage::TokenUsage;
pub use wait::{wait_until, wait_until_async};
pub use wire_openai::Quirks;
