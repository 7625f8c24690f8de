//! Faulty servers (tests/fixtures/fault-server.mjs): startup failures,
//! crashes, bad schemas, and what herald tells the server on cancel.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use herald_mcp::{CallRequest, McpError, McpServer, McpServerConfig};
use herald_sandbox::EnvFilter;
use herald_testkit::wait_until;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn fault(mode: &str) -> McpServerConfig {
    let mut config = McpServerConfig::stdio("node", [common::fixture("fault-server.mjs")]);
    config.env.insert("FAULT".into(), mode.into());
    config
}

async fn connect(config: &McpServerConfig) -> Result<std::sync::Arc<McpServer>, McpError> {
    McpServer::connect("faulty", config, &EnvFilter::default()).await
}

#[tokio::test]
async fn server_that_exits_immediately_gives_a_clear_error() {
    let start = Instant::now();
    let err = connect(&fault("exit")).await.unwrap_err();
    let text = err.to_string();
    eprintln!("{text}");
    assert!(matches!(err, McpError::Startup { .. }), "{text}");
    assert!(text.contains("MCP server `faulty`"), "{text}");
    assert!(text.contains("before answering initialize"), "{text}");
    assert!(
        text.contains("cannot open its database"),
        "stderr is quoted: {text}"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn missing_program_is_a_spawn_error() {
    let config =
        McpServerConfig::stdio("/nonexistent/herald-mcp-test-server", Vec::<String>::new());
    let err = connect(&config).await.unwrap_err();
    assert!(matches!(err, McpError::Spawn { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("/nonexistent/herald-mcp-test-server"),
        "{err}"
    );
}

#[tokio::test]
async fn server_that_never_answers_initialize_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let mut config = fault("silent");
    config.startup_timeout_sec = 1;
    config.env.insert(
        "GRANDCHILD_PID_FILE".into(),
        pid_file.to_string_lossy().into(),
    );
    let start = Instant::now();
    let err = connect(&config).await.unwrap_err();
    let elapsed = start.elapsed();
    let text = err.to_string();
    eprintln!("{text}");
    assert!(matches!(err, McpError::StartupTimeout { .. }), "{text}");
    assert!(text.contains("startup_timeout_sec = 1"), "{text}");
    assert!(text.contains("initialize"), "{text}");
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    // Nothing of it is left running.
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        common::gone_within(grandchild, Duration::from_secs(3)).await,
        "grandchild {grandchild} left behind"
    );
}

#[tokio::test]
async fn crash_on_call_is_explained_then_restarted_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = fault("crash");
    config.env.insert(
        "CRASH_MARKER".into(),
        dir.path().join("crashed").to_string_lossy().into(),
    );
    let server = connect(&config).await.unwrap();
    let first_pid = server.pid().await.unwrap();
    let cancel = CancellationToken::new();

    let crashed = server
        .call(CallRequest::new("ok", json!({})).with_cancel(cancel.clone()))
        .await;
    eprintln!("{}", crashed.content);
    assert!(crashed.is_error, "{crashed:?}");
    assert!(
        crashed.content.contains("stopped during this call"),
        "{}",
        crashed.content
    );
    assert!(
        crashed.content.contains("restart the server once"),
        "{}",
        crashed.content
    );
    assert!(
        crashed.content.contains("segfault in tool handler"),
        "stderr quoted: {}",
        crashed.content
    );

    let restarted = server
        .call(CallRequest::new("ok", json!({})).with_cancel(cancel.clone()))
        .await;
    eprintln!("{}", restarted.content);
    assert!(!restarted.is_error, "{restarted:?}");
    assert!(
        restarted.content.contains("restarted it for this call"),
        "{}",
        restarted.content
    );
    assert!(
        restarted.content.contains("ok from pid"),
        "{}",
        restarted.content
    );
    let second_pid = server.pid().await.unwrap();
    assert_ne!(first_pid, second_pid);

    // Healthy again: no note any more.
    let normal = server
        .call(CallRequest::new("ok", json!({})).with_cancel(cancel.clone()))
        .await;
    assert_eq!(normal.content, format!("ok from pid {second_pid}"));
    server.shutdown().await;
    assert!(common::gone_within(second_pid, Duration::from_secs(3)).await);
}

#[tokio::test]
async fn second_crash_reports_the_server_down() {
    let mut config = fault("crash");
    config.env.insert("CRASH_ALWAYS".into(), "1".into());
    let server = connect(&config).await.unwrap();
    let cancel = CancellationToken::new();

    let first = server
        .call(CallRequest::new("ok", json!({})).with_cancel(cancel.clone()))
        .await;
    assert!(
        first.is_error && first.content.contains("stopped during this call"),
        "{first:?}"
    );
    // Restarted for this call, and crashes again.
    let second = server
        .call(CallRequest::new("ok", json!({})).with_cancel(cancel.clone()))
        .await;
    assert!(second.is_error, "{second:?}");
    assert!(
        second.content.contains("restarted it for this call"),
        "{}",
        second.content
    );
    assert!(second.content.contains("is now down"), "{}", second.content);
    // No more restarts.
    let start = Instant::now();
    let third = server
        .call(CallRequest::new("ok", json!({})).with_cancel(cancel.clone()))
        .await;
    eprintln!("{}\n{}", second.content, third.content);
    assert!(third.is_error, "{third:?}");
    assert!(third.content.contains("is down"), "{}", third.content);
    assert!(
        third.content.contains("continue without them"),
        "{}",
        third.content
    );
    assert!(start.elapsed() < Duration::from_millis(500));
    assert!(server.pid().await.is_none());
}

#[tokio::test]
async fn invalid_schemas_are_normalised_or_skipped_with_a_reason() {
    let server = connect(&fault("bad-schemas")).await.unwrap();
    let tools = server.tools();
    let by_name = |name: &str| tools.iter().find(|t| t.name == name);

    let untyped = by_name("untyped").expect("a schema without type is fixed");
    assert_eq!(
        untyped.input_schema,
        json!({"type": "object", "properties": {"a": {"type": "string"}}})
    );
    let no_schema = by_name("no-schema").expect("a missing schema means no arguments");
    assert_eq!(
        no_schema.input_schema,
        json!({"type": "object", "properties": {}})
    );

    let dotted = by_name("has.dots and spaces").unwrap();
    assert_eq!(dotted.exposed_name, "mcp__faulty__has_dots_and_spaces");
    let long = by_name(&"x".repeat(80)).unwrap();
    assert_eq!(long.exposed_name.len(), 64);
    for tool in tools {
        assert!(
            tool.exposed_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        );
    }

    let skipped = server.skipped_tools();
    let skipped_names: Vec<&str> = skipped.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(skipped_names, ["array-root", "string-schema"]);
    assert!(
        skipped[0].reason.contains("rather than an object"),
        "{:?}",
        skipped[0]
    );
    assert!(by_name("array-root").is_none());

    // The good tool works; odd names are called by their original name.
    let cancel = CancellationToken::new();
    assert!(
        !server
            .call(CallRequest::new("ok", json!({})).with_cancel(cancel.clone()))
            .await
            .is_error
    );
    assert!(
        !server
            .call(CallRequest::new("has.dots and spaces", json!({})).with_cancel(cancel.clone()))
            .await
            .is_error
    );
    server.shutdown().await;
}

#[tokio::test]
async fn cancel_and_timeout_send_notifications_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancelled.log");
    let calls = dir.path().join("calls.log");
    let mut config = fault("probe");
    config
        .env
        .insert("CANCEL_LOG".into(), log.to_string_lossy().into());
    config
        .env
        .insert("CALL_LOG".into(), calls.to_string_lossy().into());
    config.tool_timeout_sec = 1;
    let server = connect(&config).await.unwrap();

    // Interrupted by the user, once the server has the call.
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let interrupter = tokio::spawn(async move {
        wait_until(
            "the server to get the call",
            Duration::from_secs(20),
            || std::fs::read_to_string(&calls).is_ok_and(|text| text.contains("hang")),
        )
        .await;
        trigger.cancel();
    });
    let interrupted = server
        .call(CallRequest::new("hang", json!({})).with_cancel(cancel.clone()))
        .await;
    interrupter.await.unwrap();
    assert!(
        interrupted.is_error && interrupted.content.contains("cancelled"),
        "{interrupted:?}"
    );

    // Timed out.
    let timed_out = server.call(CallRequest::new("hang", json!({}))).await;
    assert!(
        timed_out.content.contains("tool_timeout_sec = 1"),
        "{timed_out:?}"
    );

    // Dropped (the caller gave up on the future).
    let dropped = tokio::time::timeout(
        Duration::from_millis(200),
        server.call(CallRequest::new("hang", json!({}))),
    )
    .await;
    assert!(dropped.is_err());

    let mut lines = Vec::new();
    for _ in 0..40 {
        lines = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .collect();
        if lines.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(lines.len(), 3, "{lines:?}");
    let reasons: Vec<&str> = lines
        .iter()
        .map(|l| l["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        ["cancelled by the user", "timed out", "request abandoned"]
    );
    assert!(lines.iter().all(|l| !l["requestId"].is_null()));
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let mut config = fault("probe");
    config.env.insert(
        "GRANDCHILD_PID_FILE".into(),
        pid_file.to_string_lossy().into(),
    );
    let server = connect(&config).await.unwrap();
    let pid = server.pid().await.unwrap();
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(common::alive(grandchild));
    assert!(common::children_of(pid).contains(&grandchild));
    server.shutdown().await;
    assert!(common::gone_within(pid, Duration::from_secs(3)).await);
    assert!(
        common::gone_within(grandchild, Duration::from_secs(3)).await,
        "grandchild survived shutdown"
    );

    // And on drop.
    std::fs::remove_file(&pid_file).unwrap();
    let server = connect(&config).await.unwrap();
    let pid = server.pid().await.unwrap();
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    drop(server);
    assert!(common::gone_within(pid, Duration::from_secs(3)).await);
    assert!(
        common::gone_within(grandchild, Duration::from_secs(3)).await,
        "grandchild survived drop"
    );
}

#[tokio::test]
async fn server_killed_while_idle_is_restarted_on_the_next_call() {
    let server = connect(&fault("probe")).await.unwrap();
    let pid = server.pid().await.unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert!(common::gone_within(pid, Duration::from_secs(3)).await);
    let result = server.call(CallRequest::new("ok", json!({}))).await;
    assert!(!result.is_error, "{result:?}");
    assert!(result.content.contains("had stopped"), "{}", result.content);
    assert!(
        result.content.contains("restarted it for this call"),
        "{}",
        result.content
    );
    let new_pid = server.pid().await.unwrap();
    assert_ne!(new_pid, pid);
    assert!(
        result.content.ends_with(&format!("ok from pid {new_pid}")),
        "{}",
        result.content
    );
    server.shutdown().await;
}
