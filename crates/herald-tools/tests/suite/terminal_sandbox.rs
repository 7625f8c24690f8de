//! `terminal` and background processes under `ctx.sandbox`: writes outside
//! the roots and the network are refused by the kernel, and the result says
//! the sandbox was involved. Fails (does not skip) when Linux cannot confine.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;

use herald_protocol::ToolCall;
use herald_sandbox::{LandlockSupport, SandboxPolicy, landlock_support};
use herald_tools::builtin::default_registry;
use herald_tools::{AgentState, ToolContext, ToolResult};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The writable root and a directory outside it, neither under a temp dir
/// (those are always writable).
fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    assert!(
        matches!(landlock_support(), LandlockSupport::Available { .. }),
        "these tests need Landlock: {:?}",
        landlock_support()
    );
    let base = herald_testkit::dir_outside_temp(Path::new(env!("CARGO_TARGET_TMPDIR")));
    (
        tempfile::tempdir_in(&base).unwrap(),
        tempfile::tempdir_in(&base).unwrap(),
    )
}

fn confined_ctx(root: &Path, network: bool) -> ToolContext {
    let mut ctx = ToolContext::new(AgentState::new(root.to_owned()), CancellationToken::new());
    ctx.sandbox = Some(Arc::new(SandboxPolicy {
        writable_roots: vec![root.to_owned()],
        network,
    }));
    ctx
}

async fn call(ctx: &ToolContext, tool: &str, args: Value) -> ToolResult {
    let registry = default_registry(100_000);
    let call = ToolCall {
        id: "c1".into(),
        name: tool.into(),
        arguments: args.to_string(),
    };
    registry.execute(&call, ctx).await
}

/// The JSON part of a result and the `sandbox:` line after it, if any.
fn split(content: &str) -> (Value, Option<&str>) {
    match content.split_once("\nsandbox: ") {
        Some((json, note)) => (serde_json::from_str(json).unwrap(), Some(note)),
        None => (serde_json::from_str(content).unwrap(), None),
    }
}

#[tokio::test]
async fn a_confined_command_cannot_write_outside_and_the_result_says_sandbox() {
    let (root, outside) = dirs();
    let ctx = confined_ctx(root.path(), false);
    let target = outside.path().join("escaped");
    let result = call(
        &ctx,
        "terminal",
        json!({"command": format!("echo x > {}", target.display())}),
    )
    .await;
    assert!(!target.exists());
    assert!(result.content.contains("\nsandbox: "), "{}", result.content);
    let (value, note) = split(&result.content);
    assert_eq!(value["exit_code"], 1);
    assert!(
        value["output"]
            .as_str()
            .unwrap()
            .contains("Permission denied")
    );
    let note = note.unwrap();
    assert!(note.contains(&root.path().display().to_string()), "{note}");
    assert!(note.contains("network blocked"), "{note}");
    assert!(note.contains("unsandboxed: true"), "{note}");

    // Inside the root all is well, and a success carries no note.
    let result = call(
        &ctx,
        "terminal",
        json!({"command": "echo x > inside && mkdir d && cd d && pwd"}),
    )
    .await;
    let (value, note) = split(&result.content);
    assert_eq!(value["exit_code"], 0, "{}", result.content);
    assert!(note.is_none());
    assert!(root.path().join("inside").exists());
    // `cd` still sticks under confinement (the tracking file is in /tmp).
    assert!(ctx.state.cwd().ends_with("d"));
}

#[tokio::test]
async fn a_confined_command_has_no_network_unless_the_policy_allows_it() {
    let (root, _outside) = dirs();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let result = call(
        &confined_ctx(root.path(), false),
        "terminal",
        json!({ "command": command }),
    )
    .await;
    let (value, note) = split(&result.content);
    assert_ne!(value["exit_code"], 0, "{}", result.content);
    assert!(note.is_some(), "{}", result.content);

    let result = call(
        &confined_ctx(root.path(), true),
        "terminal",
        json!({ "command": command }),
    )
    .await;
    let (value, _) = split(&result.content);
    assert_eq!(value["output"], "connected\n", "{}", result.content);
}

#[tokio::test]
async fn background_processes_are_confined_and_report_the_sandbox() {
    let (root, outside) = dirs();
    let ctx = confined_ctx(root.path(), false);
    let target = outside.path().join("escaped");
    let started = call(
        &ctx,
        "terminal",
        json!({"command": format!("sleep 0.2; echo x > {}", target.display()), "background": true}),
    )
    .await;
    assert!(!started.is_error, "{}", started.content);
    let id = split(&started.content).0["process_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let waited = call(
        &ctx,
        "process",
        json!({"action": "wait", "process_id": id, "timeout": 10}),
    )
    .await;
    let (value, note) = split(&waited.content);
    assert_eq!(value["status"], "exited", "{}", waited.content);
    assert_eq!(value["exit_code"], 1, "{}", waited.content);
    assert!(note.is_some(), "{}", waited.content);
    assert!(!target.exists());
}

#[tokio::test]
async fn unsandboxed_is_accepted_and_without_a_sandbox_the_command_runs_unconfined() {
    let (root, outside) = dirs();
    let ctx = ToolContext::new(
        AgentState::new(root.path().to_owned()),
        CancellationToken::new(),
    );
    let target = outside.path().join("allowed");
    let result = call(
        &ctx,
        "terminal",
        json!({"command": format!("echo x > {}", target.display()), "unsandboxed": true}),
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    assert!(target.exists());
    let spec = default_registry(0).get("terminal").unwrap().spec().clone();
    let doc = spec.parameters["properties"]["unsandboxed"]["description"]
        .as_str()
        .unwrap()
        .to_owned();
    // The model is told what the flag does and that it needs the user.
    assert!(
        doc.contains("unsandboxed") && doc.contains("user approves"),
        "{doc}"
    );
}
