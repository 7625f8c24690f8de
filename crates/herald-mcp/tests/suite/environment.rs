//! A stdio server's environment: herald's, filtered, plus its `env` table.
//! The variables are set in a child process of the test binary (see
//! `herald_testkit::rerun_with_env`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use herald_mcp::{CallRequest, McpServer};
use herald_sandbox::EnvFilter;
use serde_json::json;

async fn connect(config: &herald_mcp::McpServerConfig) -> std::sync::Arc<McpServer> {
    McpServer::connect("everything", config, &EnvFilter::default())
        .await
        .unwrap()
}

/// Runs [`child_environment_is_filtered_plus_configured_variables_in_child`] in a child process with secrets in its environment.
#[test]
fn child_environment_is_filtered_plus_configured_variables() {
    herald_testkit::rerun_with_env(
        "suite::environment::child_environment_is_filtered_plus_configured_variables_in_child",
        &[
            ("HERALD_MCP_TEST_API_KEY", "sk-should-not-pass"),
            ("HERALD_MCP_TEST_PLAIN", "plain-value"),
        ],
    );
}

#[tokio::test]
#[ignore = "run by child_environment_is_filtered_plus_configured_variables with the variables set"]
async fn child_environment_is_filtered_plus_configured_variables_in_child() {
    if !herald_testkit::in_child(
        "suite::environment::child_environment_is_filtered_plus_configured_variables_in_child",
    ) {
        return;
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
