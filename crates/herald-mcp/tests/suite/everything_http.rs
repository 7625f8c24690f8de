//! herald-mcp against the real `@modelcontextprotocol/server-everything`
//! in its streamable HTTP mode, on a loopback port.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use herald_mcp::{CallRequest, McpError, McpServer, McpServerConfig, ProgressUpdate};
use herald_sandbox::EnvFilter;
use herald_testkit::wait_until;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The server process, killed on drop.
struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_http_server() -> HttpServer {
    let script = common::server_js("server-everything");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let server = HttpServer { child, port };
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "server-everything did not listen on 127.0.0.1:{port}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server
}

#[tokio::test]
async fn lists_and_calls_tools_over_streamable_http() {
    let http = start_http_server().await;
    let config = McpServerConfig::http(format!("http://127.0.0.1:{}/mcp", http.port));
    let server = McpServer::connect("everything", &config, &EnvFilter::default())
        .await
        .unwrap();
    assert!(server.pid().await.is_none());
    let names: Vec<&str> = server
        .tools()
        .iter()
        .map(|t| t.exposed_name.as_str())
        .collect();
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);

    let cancel = CancellationToken::new();
    let echo = server
        .call(CallRequest::new("echo", json!({"message": "over http"})).with_cancel(cancel.clone()))
        .await;
    assert!(!echo.is_error, "{echo:?}");
    assert!(echo.content.contains("over http"), "{}", echo.content);

    let image = server
        .call(CallRequest::new("get-tiny-image", json!({})).with_cancel(cancel.clone()))
        .await;
    assert!(
        image.content.contains("[image: image/png"),
        "{}",
        image.content
    );

    // Progress arrives over the response stream too.
    let updates: Arc<Mutex<Vec<ProgressUpdate>>> = Arc::default();
    let seen = updates.clone();
    server.set_progress_sink(Arc::new(move |u| seen.lock().unwrap().push(u)));
    let done = server
        .call(
            CallRequest::new(
                "trigger-long-running-operation",
                json!({"duration": 1, "steps": 2}),
            )
            .with_cancel(cancel.clone()),
        )
        .await;
    assert!(!done.is_error, "{done:?}");
    assert_eq!(updates.lock().unwrap().len(), 2);

    // Cancel mid-call (after its first progress update) returns promptly
    // and the session stays usable.
    updates.lock().unwrap().clear();
    let interrupt = CancellationToken::new();
    let trigger = interrupt.clone();
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
            .with_cancel(interrupt.clone()),
        )
        .await;
    assert!(
        cancelled.is_error && cancelled.content.contains("cancelled"),
        "{cancelled:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    interrupter.await.unwrap();
    let again = server
        .call(CallRequest::new("echo", json!({"message": "after"})).with_cancel(cancel.clone()))
        .await;
    assert!(again.content.contains("after"), "{again:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn unreachable_url_fails_to_start() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = McpServerConfig::http(format!("http://127.0.0.1:{port}/mcp"));
    config.startup_timeout_sec = 2;
    let err = McpServer::connect("nowhere", &config, &EnvFilter::default())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("MCP server `nowhere`"), "{text}");
    assert!(
        matches!(
            err,
            McpError::Startup { .. } | McpError::StartupTimeout { .. }
        ),
        "{text}"
    );
}

#[tokio::test]
async fn missing_bearer_token_variable_is_a_config_error() {
    let mut config = McpServerConfig::http("http://127.0.0.1:9/mcp");
    config.bearer_token_env_var = Some("HERALD_MCP_TEST_UNSET_TOKEN_VARIABLE".into());
    let err = McpServer::connect("web", &config, &EnvFilter::default())
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Config { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("HERALD_MCP_TEST_UNSET_TOKEN_VARIABLE"),
        "{err}"
    );
}
