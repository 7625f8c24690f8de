//! Reasoning controls end to end against the scripted server: Anthropic
//! extended thinking (blocks kept and sent back byte for byte across tool
//! use and a resume), `reasoning_effort` with `max_completion_tokens` on the
//! OpenAI wire, and streamed `reasoning_content` (emitted and stored, never
//! sent back). Bad values stop the run before any request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, of_type, stderr};
use herald_testkit::{Reply, Script, ScriptedThinking};
use serde_json::{Value, json};

const THOUGHT: &str = "The user wants \"notes.txt\".\nI should read it first — then answer.";
const SIGNATURE: &str = "EqQBCkgIARABGAIiQL+/9xYz==";
const REDACTED: &str = "EmwKAhgBEgy3va3pzix/LafPsn4a+opaque==";

fn read_with_thinking() -> Reply {
    Reply::tool("read_file", json!({"path": "notes.txt"})).with_thinking(vec![
        ScriptedThinking::thinking(THOUGHT, SIGNATURE),
        ScriptedThinking::redacted(REDACTED),
    ])
}

/// The blocks as the API expects them back.
fn expected_blocks() -> [Value; 2] {
    [
        json!({"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE}),
        json!({"type": "redacted_thinking", "data": REDACTED}),
    ]
}

fn reasoning_text(events: &[Value]) -> String {
    of_type(events, "assistant.reasoning")
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect()
}

fn session_of(events: &[Value]) -> String {
    events[0]["session_id"].as_str().unwrap().to_owned()
}

async fn export(h: &Harness, wire: Wire, session: &str) -> Value {
    let output = h
        .command(wire)
        .args(["sessions", "export", session, "--format", "json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test]
async fn anthropic_thinking_blocks_round_trip_byte_identical_across_a_tool_call_and_a_resume() {
    let h = Harness::new(Script::new().conversation(
        "read notes",
        vec![
            read_with_thinking(),
            Reply::text("It says hello.").with_thinking(vec![ScriptedThinking::thinking(
                "Short.", "sig2",
            )]),
            Reply::text("Still hello."),
        ],
    ))
    .await;
    std::fs::write(h.work.path().join("notes.txt"), "hello\n").unwrap();
    h.config("[thinking]\nbudget_tokens = 2048\n");
    let shown = h
        .command(Wire::Anthropic)
        .args(["config", "show", "--json"])
        .output()
        .await
        .unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["thinking"]["budget_tokens"], 2048, "{shown}");
    let (output, events) = h
        .run_json(Wire::Anthropic, &["--stream"], "read notes.txt")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.server.requests();
    assert_eq!(requests.len(), 2);
    // Thinking is asked for, with room for the answer past the budget.
    for r in &requests {
        assert_eq!(
            r.body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(r.body["max_tokens"], 2048 + 8192);
    }
    // The blocks go back first in the assistant message, unchanged.
    let assistant = &requests[1].body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    let content = assistant["content"].as_array().unwrap();
    assert_eq!(content[..2], expected_blocks());
    assert_eq!(content[2]["type"], "tool_use");
    // The readable thinking streamed as events; the redacted block did not.
    assert_eq!(reasoning_text(&events), format!("{THOUGHT}Short."));
    h.server.assert_invariants();

    // Stored: a resumed session sends the same bytes again.
    let session = session_of(&events);
    let (output, _) = h
        .run_json(Wire::Anthropic, &["--resume", &session], "and now?")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.server.requests();
    assert_eq!(requests.len(), 3);
    let resumed = requests[2].body["messages"].as_array().unwrap();
    assert_eq!(resumed[1], requests[1].body["messages"][1]);
    assert_eq!(
        resumed[3]["content"][0],
        json!({"type": "thinking", "thinking": "Short.", "signature": "sig2"})
    );
    h.server.assert_invariants();
}

#[tokio::test]
async fn reasoning_effort_and_max_completion_tokens_go_on_the_openai_wire() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("ok"))).await;
    h.config("reasoning_effort = \"high\"\nmax_tokens = 3000\n");
    let (output, _) = h.run_json(Wire::OpenAi, &[], "first").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let (output, _) = h
        .run_json(Wire::OpenAi, &["--reasoning-effort", "low"], "second")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.server.requests();
    assert_eq!(requests.len(), 2);
    let shown = h
        .command(Wire::OpenAi)
        .args(["config", "show", "--json"])
        .output()
        .await
        .unwrap();
    assert!(shown.status.success(), "{}", stderr(&shown));
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["reasoning_effort"], "high", "{shown}");
    assert!(shown["thinking"]["budget_tokens"].is_null(), "{shown}");
    assert_eq!(requests[0].body["reasoning_effort"], "high");
    assert_eq!(requests[1].body["reasoning_effort"], "low");
    for r in &requests {
        assert_eq!(r.body["max_completion_tokens"], 3000);
        assert!(r.body.get("max_tokens").is_none(), "{}", r.body);
        assert!(r.body.get("thinking").is_none(), "{}", r.body);
    }
    // Without it, nothing changes on the wire.
    h.config("max_tokens = 3000\n");
    let (output, _) = h.run_json(Wire::OpenAi, &[], "third").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let plain = &h.server.requests()[2].body;
    assert_eq!(plain["max_tokens"], 3000);
    assert!(plain.get("reasoning_effort").is_none(), "{plain}");
    assert!(plain.get("max_completion_tokens").is_none(), "{plain}");
    // On the Anthropic wire the effort is not sent.
    h.config("reasoning_effort = \"medium\"\n");
    let (output, _) = h.run_json(Wire::Anthropic, &[], "fourth").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let anthropic = &h.server.requests()[3].body;
    assert!(anthropic.get("reasoning_effort").is_none(), "{anthropic}");
    assert!(anthropic.get("thinking").is_none(), "{anthropic}");
    h.server.assert_invariants();
}

#[tokio::test]
async fn reasoning_content_is_emitted_and_stored_but_not_sent_back() {
    let h = Harness::new(Script::new().conversation(
        "read notes",
        vec![read_with_thinking(), Reply::text("It says hello.")],
    ))
    .await;
    std::fs::write(h.work.path().join("notes.txt"), "hello\n").unwrap();
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--stream"], "read notes.txt")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(reasoning_text(&events), THOUGHT);
    let requests = h.server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body.to_string();
    assert!(!second.contains("reasoning"), "{second}");
    assert!(!second.contains("first — then"), "{second}");
    // (The testkit also refuses a request that sends reasoning back.)
    h.server.assert_invariants();
    let exported = export(&h, Wire::OpenAi, &session_of(&events)).await;
    let stored: Vec<&Value> = exported["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.get("reasoning").is_some())
        .collect();
    assert_eq!(stored.len(), 1, "{exported:#}");
    assert_eq!(
        stored[0]["reasoning"],
        json!([{"type": "text", "text": THOUGHT}])
    );
}

#[tokio::test]
async fn bad_reasoning_values_exit_2_before_any_request() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("ok"))).await;
    let cases: [(&str, &[&str], &str); 5] = [
        (
            "reasoning_effort = \"extreme\"\n",
            &[],
            "low, medium or high",
        ),
        ("", &["--reasoning-effort", "max"], "--reasoning-effort"),
        ("[thinking]\nbudget_tokens = 100\n", &[], "budget_tokens"),
        (
            "max_tokens = 2000\n[thinking]\nbudget_tokens = 4096\n",
            &[],
            "raise max_tokens",
        ),
        (
            "thinking = { budget_tokens = \"lots\" }\n",
            &[],
            "budget_tokens",
        ),
    ];
    for (config, flags, says) in cases {
        h.config(config);
        for wire in [Wire::OpenAi, Wire::Anthropic] {
            let (output, events) = h.run_json(wire, flags, "hello").await;
            assert_eq!(output.status.code(), Some(2), "{config} {flags:?}");
            let err = stderr(&output);
            assert!(err.contains(says), "{config}: {err}");
            assert!(events.is_empty(), "{config}: {events:?}");
        }
    }
    assert!(h.server.requests().is_empty());
    // Nothing was recorded either: no session exists.
    let output = h
        .command(Wire::OpenAi)
        .args(["sessions", "list", "--json", "--all"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listed, json!([]));
}
