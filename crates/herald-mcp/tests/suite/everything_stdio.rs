//! herald-mcp against the real `@modelcontextprotocol/server-everything`
//! over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use herald_mcp::{CallRequest, McpServer, McpServerConfig, ProgressUpdate, mcp_tools};
use herald_sandbox::EnvFilter;
use herald_testkit::wait_until;
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn connect(config: &herald_mcp::McpServerConfig) -> Arc<McpServer> {
    McpServer::connect("everything", config, &EnvFilter::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn lists_tools_with_exposed_names_normalised_schemas_sorted() {
    let server = connect(&common::everything()).await;
    let tools = server.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.exposed_name.as_str()).collect();
    eprintln!("{names:?}");
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    assert!(names.contains(&"mcp__everything__get-sum"), "{names:?}");
    assert!(
        names.contains(&"mcp__everything__trigger-long-running-operation"),
        "{names:?}"
    );
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    for tool in tools {
        assert_eq!(tool.server, "everything");
        assert!(tool.exposed_name.len() <= 64);
        assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        assert!(tool.input_schema["properties"].is_object(), "{}", tool.name);
        assert!(tool.input_schema.get("$schema").is_none(), "{}", tool.name);
    }
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert!(echo.input_schema["properties"]["message"].is_object());
    assert!(!echo.description.is_empty());
    let image = tools.iter().find(|t| t.name == "get-tiny-image").unwrap();
    assert!(image.read_only_hint);
    assert!(
        server.skipped_tools().is_empty(),
        "{:?}",
        server.skipped_tools()
    );

    let adapters = mcp_tools(&server);
    assert_eq!(adapters.len(), tools.len());
    assert_eq!(adapters[0].spec().name, tools[0].exposed_name);
    assert!(adapters.iter().all(|t| t.toolset() == "mcp-everything"));
    server.shutdown().await;
}

#[tokio::test]
async fn echo_returns_text() {
    let server = connect(&common::everything()).await;
    let result = server
        .call(CallRequest::new("echo", json!({"message": "hello mcp"})))
        .await;
    assert!(!result.is_error, "{result:?}");
    assert!(result.content.contains("hello mcp"), "{result:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn image_becomes_a_placeholder_line() {
    let server = connect(&common::everything()).await;
    let result = server
        .call(CallRequest::new("get-tiny-image", json!({})))
        .await;
    assert!(!result.is_error, "{result:?}");
    assert!(
        result.content.contains("[image: image/png, "),
        "{}",
        result.content
    );
    assert!(result.content.contains(" bytes]"), "{}", result.content);
    assert_eq!(result.images.len(), 1);
    assert_eq!(result.images[0].mime_type, "image/png");
    // The base64 data itself never reaches the text.
    assert!(result.content.len() < 500, "{}", result.content);
    server.shutdown().await;
}

#[tokio::test]
async fn embedded_resources_and_resource_links_show_their_uris() {
    let server = connect(&common::everything()).await;
    let cancel = CancellationToken::new();
    let embedded = server
        .call(
            CallRequest::new(
                "get-resource-reference",
                json!({"resourceType": "Text", "resourceId": 2}),
            )
            .with_cancel(cancel.clone()),
        )
        .await;
    assert!(!embedded.is_error, "{embedded:?}");
    assert!(
        embedded.content.contains("[resource: demo://resource/"),
        "{}",
        embedded.content
    );

    let links = server
        .call(
            CallRequest::new("get-resource-links", json!({"count": 2})).with_cancel(cancel.clone()),
        )
        .await;
    assert!(!links.is_error, "{links:?}");
    assert_eq!(
        links.content.matches("[resource link: ").count(),
        2,
        "{}",
        links.content
    );

    let structured = server
        .call(
            CallRequest::new("get-structured-content", json!({"location": "New York"}))
                .with_cancel(cancel.clone()),
        )
        .await;
    assert!(!structured.is_error, "{structured:?}");
    assert!(
        structured.content.contains("temperature"),
        "{}",
        structured.content
    );
    server.shutdown().await;
}

#[tokio::test]
async fn tool_errors_are_error_results() {
    let server = connect(&common::everything()).await;
    let cancel = CancellationToken::new();
    let result = server
        .call(
            CallRequest::new(
                "get-resource-reference",
                json!({"resourceType": "Text", "resourceId": -1}),
            )
            .with_cancel(cancel.clone()),
        )
        .await;
    assert!(result.is_error, "{result:?}");
    assert!(result.content.contains("resourceId"), "{}", result.content);

    let unknown = server
        .call(CallRequest::new("no-such-tool", json!({})).with_cancel(cancel.clone()))
        .await;
    assert!(unknown.is_error, "{unknown:?}");
    assert!(
        unknown.content.contains("no-such-tool"),
        "{}",
        unknown.content
    );

    let not_object = server
        .call(CallRequest::new("echo", json!([1])).with_cancel(cancel.clone()))
        .await;
    assert!(not_object.is_error);
    assert!(
        not_object.content.contains("JSON object"),
        "{}",
        not_object.content
    );
    server.shutdown().await;
}

#[tokio::test]
async fn long_running_tool_reports_progress_and_can_be_cancelled() {
    let server = connect(&common::everything()).await;
    let updates: Arc<Mutex<Vec<ProgressUpdate>>> = Arc::default();
    let seen = updates.clone();
    server.set_progress_sink(Arc::new(move |update| seen.lock().unwrap().push(update)));

    // A short run to completion: one update per step, tagged with the call.
    let done = server
        .call(
            CallRequest::new(
                "trigger-long-running-operation",
                json!({"duration": 1, "steps": 4}),
            )
            .with_call_id("call-1"),
        )
        .await;
    assert!(!done.is_error, "{done:?}");
    assert!(done.content.contains("completed"), "{}", done.content);
    {
        let updates = updates.lock().unwrap();
        assert_eq!(updates.len(), 4, "{updates:?}");
        assert_eq!(updates[3].progress, 4.0);
        assert_eq!(updates[3].total, Some(4.0));
        assert!(
            updates
                .iter()
                .all(|u| u.call_id == "call-1" && u.server == "everything")
        );
        assert!(
            updates
                .iter()
                .all(|u| u.tool == "trigger-long-running-operation")
        );
    }

    // A long run, cancelled after its first progress update.
    updates.lock().unwrap().clear();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let watcher = updates.clone();
    let interrupter = tokio::spawn(async move {
        wait_until("a progress update", Duration::from_secs(20), || {
            !watcher.lock().unwrap().is_empty()
        })
        .await;
        trigger.cancel();
    });
    let start = Instant::now();
    let cancelled = server
        .call(
            CallRequest::new(
                "trigger-long-running-operation",
                json!({"duration": 30, "steps": 30}),
            )
            .with_cancel(cancel.clone()),
        )
        .await;
    let elapsed = start.elapsed();
    interrupter.await.unwrap();
    assert!(cancelled.is_error, "{cancelled:?}");
    assert!(
        cancelled.content.contains("cancelled"),
        "{}",
        cancelled.content
    );
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    // The server is still usable.
    let echo = server
        .call(CallRequest::new("echo", json!({"message": "still here"})))
        .await;
    assert!(echo.content.contains("still here"), "{echo:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn slow_tool_times_out_naming_tool_timeout_sec() {
    let mut config = common::everything();
    config.tool_timeout_sec = 1;
    let server = connect(&config).await;
    let start = Instant::now();
    let result = server
        .call(CallRequest::new(
            "trigger-long-running-operation",
            json!({"duration": 20, "steps": 5}),
        ))
        .await;
    let elapsed = start.elapsed();
    assert!(result.is_error, "{result:?}");
    assert!(
        result.content.contains("tool_timeout_sec"),
        "{}",
        result.content
    );
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(4),
        "{elapsed:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn include_and_exclude_filters() {
    let mut config = common::everything();
    config.include_tools = vec!["get-*".into(), "echo".into()];
    config.exclude_tools = vec!["get-env".into()];
    let server = connect(&config).await;
    let names: Vec<&str> = server.tools().iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(names.contains(&"get-sum"), "{names:?}");
    assert!(!names.contains(&"get-env"), "{names:?}");
    assert!(
        !names.contains(&"trigger-long-running-operation"),
        "{names:?}"
    );
    assert!(
        names.iter().all(|n| *n == "echo" || n.starts_with("get-")),
        "{names:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_and_drop_leave_no_process_behind() {
    let server = connect(&common::everything()).await;
    let pid = server.pid().await.expect("a stdio server has a pid");
    assert!(common::alive(pid));
    server.shutdown().await;
    assert!(
        common::gone_within(pid, Duration::from_secs(3)).await,
        "pid {pid} survived shutdown"
    );
    assert!(server.pid().await.is_none());
    let after = server
        .call(CallRequest::new("echo", json!({"message": "x"})))
        .await;
    assert!(
        after.is_error && after.content.contains("shut down"),
        "{after:?}"
    );

    let server = connect(&common::everything()).await;
    let pid = server.pid().await.unwrap();
    drop(server);
    assert!(
        common::gone_within(pid, Duration::from_secs(3)).await,
        "pid {pid} survived drop"
    );
}

#[tokio::test]
async fn disabled_server_is_not_started() {
    let mut config = McpServerConfig::stdio("definitely-not-run", Vec::<String>::new());
    config.enabled = false;
    let err = McpServer::connect("off", &config, &EnvFilter::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("disabled"), "{err}");
}
