//! Providers that keep working: `[[fallback]]` endpoints tried when the
//! primary fails after its retries or answers 404 (unknown model), the
//! cooldown that sends requests back to the primary, and credential pools
//! rotated on 429. Two testkit servers: the primary speaks the OpenAI wire,
//! the fallback the Anthropic wire (so the request is re-encoded).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Harness, Wire, last, of_type, stderr};
use herald_testkit::{Fault, Reply, Script, ScriptedServer};
use serde_json::json;

/// Two tries per request, 10 ms apart: a failing primary gives up fast.
const FAST: &str = "[network]\nmax_retries = 2\nretry_base_delay_ms = 10\n";

fn hello() -> Script {
    Script::new().conversation("hello", vec![Reply::text("hi back")])
}

/// A turn of two requests: a tool call (`command`), then the answer.
fn two_requests(command: &str) -> Script {
    Script::new().conversation(
        "work",
        vec![
            Reply::tool("terminal", json!({ "command": command })),
            Reply::text("done"),
        ],
    )
}

/// Config with one Anthropic fallback at `backup` (key in `FALLBACK_KEY`).
fn config(backup: &ScriptedServer, extra: &str) -> String {
    format!(
        "{extra}\n[[fallback]]\nprovider = \"anthropic\"\nmodel = \"claude-backup\"\nbase_url = \"{}\"\napi_key_env = \"FALLBACK_KEY\"\n{FAST}",
        backup.anthropic_base_url()
    )
}

async fn run(
    h: &Harness,
    prompt: &str,
    env: &[(&str, &str)],
) -> (std::process::Output, Vec<serde_json::Value>) {
    let mut cmd = h.command(Wire::OpenAi);
    cmd.env("FALLBACK_KEY", "sk-fallback");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(["run", "--json", prompt]);
    let output = cmd.output().await.unwrap();
    let events = common::parse_events(&output.stdout);
    (output, events)
}

#[tokio::test(flavor = "multi_thread")]
async fn falls_back_on_503_after_retries_with_an_event() {
    let h = Harness::new(hello()).await;
    let backup = ScriptedServer::start(hello()).await.unwrap();
    h.config(&config(&backup, ""));
    h.server.inject(Fault::status(503));
    h.server.inject(Fault::status(503));
    let (output, events) = run(&h, "hello", &[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "hi back");
    // Both tries of the primary, then the fallback, on its own wire and key.
    let primary = h.server.requests();
    assert_eq!(primary.len(), 2);
    assert!(primary.iter().all(|r| r.status == 503));
    assert_eq!(of_type(&events, "retry").len(), 1);
    let sent = backup.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/messages");
    assert_eq!(sent[0].header("x-api-key"), Some("sk-fallback"));
    assert_eq!(sent[0].body["model"], "claude-backup");
    let fallback = of_type(&events, "provider.fallback");
    assert_eq!(fallback.len(), 1, "{events:?}");
    assert_eq!(
        fallback[0]["from"],
        json!({"provider": "openai", "model": "gpt-4.1-mini"})
    );
    assert_eq!(
        fallback[0]["to"],
        json!({"provider": "anthropic", "model": "claude-backup"})
    );
    let reason = fallback[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("503") && reason.contains("gave up after 2"),
        "{reason}"
    );
    h.server.assert_invariants();
    backup.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn falls_back_at_once_on_404_unknown_model_and_says_so_on_stderr() {
    let h = Harness::new(hello()).await;
    let backup = ScriptedServer::start(hello()).await.unwrap();
    h.config(&config(&backup, ""));
    h.server.inject(Fault::Status {
        code: 404,
        retry_after_secs: None,
        body: "The model `gpt-4.1-mini` does not exist".into(),
    });
    // Human mode: the switch is a line on stderr.
    let mut cmd = h.command(Wire::OpenAi);
    cmd.env("FALLBACK_KEY", "sk-fallback")
        .args(["run", "hello"]);
    let output = cmd.output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("hi back"));
    let err = stderr(&output);
    assert!(
        err.contains("switching provider: openai/gpt-4.1-mini -> anthropic/claude-backup")
            && err.contains("404"),
        "{err}"
    );
    // A 404 is not retried: one request to each server.
    assert_eq!(h.server.requests().len(), 1);
    assert_eq!(backup.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_stays_on_the_fallback_during_the_cooldown() {
    let h = Harness::new(two_requests("true")).await;
    let backup = ScriptedServer::start(two_requests("true")).await.unwrap();
    h.config(&config(&backup, "fallback_cooldown = 300"));
    h.server.inject(Fault::status(503));
    h.server.inject(Fault::status(503));
    let (output, events) = run(&h, "work", &[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "done");
    assert_eq!(h.server.requests().len(), 2);
    // Both requests of the turn went to the fallback; the tool list was
    // re-encoded for its wire.
    let sent = backup.requests();
    assert_eq!(sent.len(), 2);
    let names = |tools: &serde_json::Value, path: &str| -> Vec<String> {
        tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.pointer(path).unwrap().as_str().unwrap().to_owned())
            .collect()
    };
    let openai_names = names(&h.server.requests()[0].body["tools"], "/function/name");
    assert!(openai_names.contains(&"terminal".to_owned()));
    for request in &sent {
        assert_eq!(names(&request.body["tools"], "/name"), openai_names);
        assert!(request.body["tools"][0].get("input_schema").is_some());
    }
    assert_eq!(of_type(&events, "provider.fallback").len(), 1);
    backup.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn after_the_cooldown_the_primary_is_tried_again() {
    // The tool call outlasts the 1 s cooldown.
    let h = Harness::new(two_requests("sleep 1.3")).await;
    let backup = ScriptedServer::start(two_requests("sleep 1.3"))
        .await
        .unwrap();
    h.config(&config(&backup, "fallback_cooldown = 1"));
    h.server.inject(Fault::status(503));
    h.server.inject(Fault::status(503));
    let (output, events) = run(&h, "work", &[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "done");
    // Request 1: primary twice (503), then the fallback; request 2: the primary.
    assert_eq!(backup.requests().len(), 1);
    let primary = h.server.requests();
    assert_eq!(primary.len(), 3);
    assert_eq!(primary[2].status, 200);
    let switches = of_type(&events, "provider.fallback");
    assert_eq!(switches.len(), 2, "{events:?}");
    assert_eq!(switches[1]["from"]["provider"], "anthropic");
    assert_eq!(
        switches[1]["to"],
        json!({"provider": "openai", "model": "gpt-4.1-mini"})
    );
    assert!(
        switches[1]["reason"]
            .as_str()
            .unwrap()
            .contains("fallback_cooldown")
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_429_moves_to_the_next_key_at_once_and_the_pool_stays_there() {
    let h = Harness::new(two_requests("true")).await;
    h.config(&format!(
        "api_key_env = [\"POOL_KEY_A\", \"POOL_KEY_B\"]\n{FAST}"
    ));
    // Retry-After would make a backoff wait 5 s: the rotation does not wait.
    h.server.inject(Fault::rate_limited(5));
    let started = Instant::now();
    let (output, events) = run(
        &h,
        "work",
        &[("POOL_KEY_A", "sk-a"), ("POOL_KEY_B", "sk-b")],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let auth: Vec<_> = h
        .server
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or_default().to_owned())
        .collect();
    // Key A was limited; B answered, and the next request stays on B.
    assert_eq!(auth, ["Bearer sk-a", "Bearer sk-b", "Bearer sk-b"]);
    let retry = of_type(&events, "retry");
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0]["delay_ms"], 0);
    let reason = retry[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("POOL_KEY_A") && reason.contains("POOL_KEY_B"),
        "{reason}"
    );
    assert!(!reason.contains("sk-"), "keys are never shown: {reason}");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn when_every_key_is_limited_the_client_backs_off() {
    let h = Harness::new(hello()).await;
    h.config(&format!(
        "api_key_env = [\"POOL_KEY_A\", \"POOL_KEY_B\"]\n{FAST}"
    ));
    h.server.inject(Fault::status(429));
    h.server.inject(Fault::status(429));
    let (output, events) = run(
        &h,
        "hello",
        &[("POOL_KEY_A", "sk-a"), ("POOL_KEY_B", "sk-b")],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let retries = of_type(&events, "retry");
    assert_eq!(retries.len(), 2, "{retries:?}");
    assert_eq!(retries[0]["delay_ms"], 0);
    assert_eq!(retries[1]["attempt"], 1);
    assert_eq!(h.server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_fallback_and_pool_config_is_exit_2_and_sends_nothing() {
    let h = Harness::new(hello()).await;
    let cases = [
        ("[[fallback]]\nprovider = \"gemini\"\n", "[[fallback]] #1"),
        (
            "[[fallback]]\nprovider = \"openai\"\nbase_url = \"http://x\"\nmodle = \"m\"\n",
            "modle",
        ),
        ("[[fallback]]\nmodel = \"m\"\n", "provider is missing"),
        (
            "[[fallback]]\nprovider = \"anthropic\"\napi_key_env = \"NOT_SET_ANYWHERE\"\n",
            "NOT_SET_ANYWHERE",
        ),
        ("api_key_env = 3\n", "api_key_env must be"),
        (
            "api_key_env = [\"NOT_SET_1\", \"NOT_SET_2\"]\n",
            "NOT_SET_2",
        ),
        ("fallback_cooldown = -5\n", "fallback_cooldown"),
    ];
    for (text, needle) in cases {
        h.config(text);
        let (output, _) = run(&h, "hello", &[]).await;
        assert_eq!(output.status.code(), Some(2), "{text}: {}", stderr(&output));
        let err = stderr(&output);
        assert!(err.contains(needle), "{text}: {err}");
    }
    assert!(h.server.requests().is_empty());
}
