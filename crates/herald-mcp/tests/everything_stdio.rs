//! herald-mcp against the real `@modelcontextprotocol/server-everything`
//! over stdio.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use herald_mcp::{McpServer, ProgressUpdate, mcp_tools};
use herald_sandbox::EnvFilter;
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
        .call(
            "echo",
            json!({"message": "hello mcp"}),
            &CancellationToken::new(),
        )
        .await;
    assert!(!result.is_error, "{result:?}");
    assert!(result.content.contains("hello mcp"), "{result:?}");
    server.shutdown().await;
}
