//! The prompt budget: what every request repeats — the default
//! system prompt and every default tool schema — stays under 13.5 KB on
//! the wire, measured on the first request the real binary sends. (It was
//! 12 KB until `web_extract` joined the default tools, +440 bytes, and
//! 12.5 KB until `agent_send` and `agent_followup` joined, with
//! `delegate_task`'s `model` and `private`, +826 bytes.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, stderr};
use herald_testkit::{Reply, Script};

/// Bytes of the system prompt and of the encoded tool array of the first
/// request on `wire`.
async fn fixed_bytes(wire: Wire) -> (usize, usize, usize) {
    let h = Harness::new(Script::new().responder(|_| Reply::text("ok"))).await;
    let (output, _) = h.run_json(wire, &[], "hello").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let body = &h.server.requests()[0].body;
    let system = match wire {
        Wire::OpenAi => body["messages"][0]["content"].as_str().unwrap().len(),
        Wire::Anthropic => body["system"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .map(str::len)
            .sum(),
    };
    let tools = body["tools"].as_array().unwrap();
    (system, body["tools"].to_string().len(), tools.len())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_prompt_and_tools_stay_under_13_5_kb() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let (system, tools, count) = fixed_bytes(wire).await;
        eprintln!(
            "{wire:?}: system prompt {system} + {count} tool schemas {tools} = {} bytes",
            system + tools
        );
        assert!(
            count >= 20,
            "{wire:?}: only {count} tools: the budget is for all of them"
        );
        assert!(
            system + tools < 13_500,
            "{wire:?}: system prompt {system} + {count} tool schemas {tools} = {} bytes, over the 13.5 KB budget (docs/BENCHMARKS.md)",
            system + tools
        );
    }
}
