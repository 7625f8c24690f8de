//! A stdio server's environment: herald's, filtered, plus its `env` table.
//! In a test binary of its own because it sets process variables.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use herald_mcp::{CallRequest, McpServer};
use herald_sandbox::EnvFilter;
use serde_json::json;

async fn connect(config: &herald_mcp::McpServerConfig) -> std::sync::Arc<McpServer> {
    McpServer::connect("everything", config, &EnvFilter::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn child_environment_is_filtered_plus_configured_variables() {
    // SAFETY: no other thread of this test binary reads these variables.
    unsafe {
        std::env::set_var("HERALD_MCP_TEST_API_KEY", "sk-should-not-pass");
        std::env::set_var("HERALD_MCP_TEST_PLAIN", "plain-value");
    }
    let mut config = common::everything();
    config.env.insert(
        "HERALD_MCP_TEST_CONFIGURED".into(),
        "configured-value".into(),
    );
    let server = connect(&config).await;
    let result = server.call(CallRequest::new("get-env", json!({}))).await;
    assert!(!result.is_error, "{result:?}");
    assert!(
        result.content.contains("plain-value"),
        "inherits ordinary variables"
    );
    assert!(
        result.content.contains("configured-value"),
        "gets its configured variables"
    );
    assert!(
        !result.content.contains("sk-should-not-pass"),
        "secret-looking variables are dropped"
    );
    server.shutdown().await;
}
