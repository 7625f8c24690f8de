//! Tool processes do not inherit herald's secret-named variables, and what
//! they print of a known secret is redacted. The secrets are set in a child
//! process of the test binary (see `herald_testkit::rerun_with_env`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use herald_protocol::ToolCall;
use herald_sandbox::{EnvFilter, Redactor};
use herald_tools::builtin::default_registry;
use herald_tools::{AgentState, ToolContext, ToolRegistry};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const FAKE_KEY: &str = "sk-test0123456789abcdefghijklmnop";

async fn call(registry: &ToolRegistry, ctx: &ToolContext, tool: &str, args: Value) -> Value {
    let call = ToolCall {
        id: "c1".into(),
        name: tool.into(),
        arguments: args.to_string(),
    };
    let result = registry.execute(&call, ctx).await;
    assert!(!result.is_error, "{}", result.content);
    serde_json::from_str(&result.content).unwrap()
}

fn names(env_output: &str) -> Vec<&str> {
    env_output
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .collect()
}

/// Runs [`terminal_and_background_processes_see_no_secrets_in_child`] in a child process with secrets in its environment.
#[test]
fn terminal_and_background_processes_see_no_secrets() {
    herald_testkit::rerun_with_env(
        "suite::terminal_env::terminal_and_background_processes_see_no_secrets_in_child",
        &[
            ("HERALD_TEST_API_KEY", FAKE_KEY),
            ("HERALD_TEST_SERVICE_TOKEN", "tok-0123456789"),
            ("herald_test_lower_secret", "lower-0123456789"),
            ("HERALD_TEST_PASSWORD", "hunter2hunter2"),
            ("HERALD_TEST_KEPT_TOKEN", "kept-0123456789"),
            ("HERALD_TEST_EXCLUDED", "excluded"),
            ("HERALD_TEST_PLAIN", "plain"),
        ],
    );
}

#[test]
#[ignore = "run by terminal_and_background_processes_see_no_secrets with the variables set"]
fn terminal_and_background_processes_see_no_secrets_in_child() {
    if !herald_testkit::in_child(
        "suite::terminal_env::terminal_and_background_processes_see_no_secrets_in_child",
    ) {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(
            AgentState::new(dir.path().to_owned()),
            CancellationToken::new(),
        );

        // The default registry: every secret-named variable dropped.
        let registry = default_registry(100_000);
        let out = call(&registry, &ctx, "terminal", json!({"command": "env"})).await;
        let output = out["output"].as_str().unwrap();
        let seen = names(output);
        for secret in [
            "HERALD_TEST_API_KEY",
            "HERALD_TEST_SERVICE_TOKEN",
            "herald_test_lower_secret",
            "HERALD_TEST_PASSWORD",
            "HERALD_TEST_KEPT_TOKEN",
        ] {
            assert!(!seen.contains(&secret), "{secret} leaked: {seen:?}");
        }
        assert!(!output.contains(FAKE_KEY));
        assert!(seen.contains(&"HERALD_TEST_PLAIN"), "{seen:?}");
        assert!(seen.contains(&"PATH"), "{seen:?}");

        // keep / exclude from the registry's filter; the redactor removes a
        // known value the command prints anyway.
        let mut registry = default_registry(100_000);
        registry.set_secrets(
            Arc::new(EnvFilter {
                keep: vec!["HERALD_TEST_KEPT_TOKEN".into()],
                exclude: vec!["HERALD_TEST_EXCLUDED".into()],
            }),
            Arc::new(Redactor::from_env([])),
        );
        let out = call(&registry, &ctx, "terminal", json!({"command": "env"})).await;
        let output = out["output"].as_str().unwrap();
        let seen = names(output);
        assert!(seen.contains(&"HERALD_TEST_KEPT_TOKEN"), "{seen:?}");
        assert!(!seen.contains(&"HERALD_TEST_EXCLUDED"), "{seen:?}");
        assert!(!seen.contains(&"HERALD_TEST_API_KEY"), "{seen:?}");
        assert!(
            output.contains("HERALD_TEST_KEPT_TOKEN=[REDACTED]"),
            "the kept token's value is still a known secret: {output}"
        );
        let out = call(
            &registry,
            &ctx,
            "terminal",
            json!({"command": format!("echo {FAKE_KEY}")}),
        )
        .await;
        assert_eq!(out["output"], "[REDACTED]\n");

        // Background processes get the same environment.
        let started = call(
            &registry,
            &ctx,
            "terminal",
            json!({"command": "env", "background": true}),
        )
        .await;
        let id = started["process_id"].as_str().unwrap();
        let waited = call(
            &registry,
            &ctx,
            "process",
            json!({"action": "wait", "process_id": id, "timeout": 10}),
        )
        .await;
        assert_eq!(waited["status"], "exited");
        let seen = names(waited["output"].as_str().unwrap());
        assert!(seen.contains(&"HERALD_TEST_PLAIN"), "{seen:?}");
        assert!(seen.contains(&"HERALD_TEST_KEPT_TOKEN"), "{seen:?}");
        for secret in [
            "HERALD_TEST_API_KEY",
            "HERALD_TEST_SERVICE_TOKEN",
            "HERALD_TEST_PASSWORD",
            "HERALD_TEST_EXCLUDED",
        ] {
            assert!(!seen.contains(&secret), "{secret} leaked: {seen:?}");
        }
    });
}
