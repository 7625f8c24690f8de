//! herald-mcp against the real `@modelcontextprotocol/server-filesystem`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use herald_mcp::{CallRequest, McpServer, McpServerConfig, mcp_tools};
use herald_sandbox::EnvFilter;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn lists_and_reads_files_in_the_directory_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "first line\nsecond line\n").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    let config = McpServerConfig::stdio(
        "node",
        [
            common::server_js("server-filesystem"),
            root.to_string_lossy().into_owned(),
        ],
    );
    let server = McpServer::connect("fs", &config, &EnvFilter::default())
        .await
        .unwrap();
    let names: Vec<&str> = server
        .tools()
        .iter()
        .map(|t| t.exposed_name.as_str())
        .collect();
    assert!(names.contains(&"mcp__fs__read_text_file"), "{names:?}");
    assert!(names.contains(&"mcp__fs__list_directory"), "{names:?}");
    let read = server
        .tools()
        .iter()
        .find(|t| t.name == "read_text_file")
        .unwrap();
    assert!(read.read_only_hint);
    let write = server
        .tools()
        .iter()
        .find(|t| t.name == "write_file")
        .unwrap();
    assert!(!write.read_only_hint);
    assert!(server.server_info().is_some());

    let cancel = CancellationToken::new();
    let listing = server
        .call(CallRequest::new("list_directory", json!({"path": root})).with_cancel(cancel.clone()))
        .await;
    assert!(!listing.is_error, "{listing:?}");
    assert!(
        listing.content.contains("[FILE] notes.txt"),
        "{}",
        listing.content
    );
    assert!(listing.content.contains("[DIR] sub"), "{}", listing.content);

    let text = server
        .call(
            CallRequest::new("read_text_file", json!({"path": root.join("notes.txt")}))
                .with_cancel(cancel.clone()),
        )
        .await;
    assert!(!text.is_error, "{text:?}");
    assert!(
        text.content.contains("first line\nsecond line"),
        "{}",
        text.content
    );

    // Outside the allowed directory: an error result, not a failure.
    let outside = server
        .call(
            CallRequest::new("read_text_file", json!({"path": "/etc/hostname"}))
                .with_cancel(cancel.clone()),
        )
        .await;
    assert!(outside.is_error, "{outside:?}");

    // Through the herald tool adapter.
    let tools = mcp_tools(&server);
    let adapter = tools
        .iter()
        .find(|t| t.spec().name == "mcp__fs__read_text_file")
        .unwrap();
    assert_eq!(adapter.toolset(), "mcp-fs");
    assert!(adapter.read_only());
    server.shutdown().await;
}
