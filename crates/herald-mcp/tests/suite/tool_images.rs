//! The image an MCP tool returns reaches the herald tool result: the real
//! `@modelcontextprotocol/server-everything`'s `get-tiny-image`, called
//! through its herald adapter and the tool registry (which drops images a
//! provider would refuse), keeps its PNG and its text line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use herald_mcp::{McpServer, mcp_tools};
use herald_protocol::ToolCall;
use herald_sandbox::EnvFilter;
use herald_tools::{AgentState, ToolContext, ToolRegistry};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn the_adapter_passes_the_image_on_with_its_text_line() {
    let server = McpServer::connect("everything", &common::everything(), &EnvFilter::default())
        .await
        .unwrap();
    let mut registry = ToolRegistry::new(50_000);
    for tool in mcp_tools(&server) {
        registry.register(tool);
    }
    let ctx = ToolContext::new(
        AgentState::new(std::env::temp_dir()),
        CancellationToken::new(),
    );
    let call = ToolCall {
        id: "c1".into(),
        name: "mcp__everything__get-tiny-image".into(),
        arguments: "{}".into(),
    };
    let result = registry.execute(&call, &ctx).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.images.len(), 1, "{}", result.content);
    let image = &result.images[0];
    assert_eq!(image.mime_type, "image/png");
    // A real PNG (the registry would have dropped it with a note otherwise).
    assert!(
        image.data.starts_with("iVBORw0KGgo"),
        "{}",
        &image.data[..20]
    );
    assert!(
        !result.content.contains("image dropped"),
        "{}",
        result.content
    );
    let line = format!("[image: image/png, {} bytes]", image.decoded_len());
    assert!(result.content.contains(&line), "{}", result.content);
    // The base64 stays out of the text the model reads.
    assert!(
        !result.content.contains(&image.data[..40]),
        "{}",
        result.content
    );
    server.shutdown().await;
}
