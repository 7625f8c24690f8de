//! `herald serve` starts its MCP servers once and every session shares
//! them: two chat completions call a tool of the real server-everything,
//! and one server process served both; it is gone after shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;

use common::{Serve, chat};
use herald_testkit::{Reply, Script};
use serde_json::json;

fn everything_js() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing: run .ci/install-mcp-servers (it installs the real MCP test servers from npm into .ci/mcp)",
        path.display()
    );
    path.canonicalize().unwrap().display().to_string()
}

/// Pids of processes whose environment holds `marker`.
fn processes_with_env(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ"))
            && String::from_utf8_lossy(&environ).contains(marker)
        {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_session_of_the_server_shares_one_connection_per_mcp_server() {
    let marker = format!("HERALD_MCP_SHARED_{}", std::process::id());
    let script = Script::new()
        .conversation(
            "first echo",
            vec![
                Reply::tool("mcp__ev__echo", json!({"message": "one"})),
                Reply::text("first done"),
            ],
        )
        .conversation(
            "second echo",
            vec![
                Reply::tool("mcp__ev__echo", json!({"message": "two"})),
                Reply::text("second done"),
            ],
        );
    let js = everything_js();
    let mark = marker.clone();
    let serve = Serve::start_with(script, move |config| {
        let mut server = herald_mcp::McpServerConfig::stdio("node", [js, "stdio".to_owned()]);
        server.env.insert(mark, "1".to_owned());
        config.settings.mcp_servers.insert("ev".to_owned(), server);
        config.settings.permissions.allow = vec!["mcp__ev__echo".into()];
    })
    .await;
    for (prompt, answer) in [("first echo", "first done"), ("second echo", "second done")] {
        let (status, _, body) = serve
            .post_json("/v1/chat/completions", &chat(prompt, false))
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["choices"][0]["message"]["content"], answer, "{body}");
    }
    for (prompt, word) in [("first echo", "one"), ("second echo", "two")] {
        let requests: Vec<_> = serve
            .upstream
            .requests()
            .into_iter()
            .filter(|r| r.conversation.contains(prompt))
            .collect();
        let last = &requests.last().unwrap().body;
        let result = last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap();
        assert!(
            result["content"].as_str().unwrap().contains(word),
            "{result}"
        );
    }
    let running = processes_with_env(&marker);
    assert_eq!(
        running.len(),
        1,
        "one server process for both sessions: {running:?}"
    );
    serve.stop().await;
    herald_testkit::assert_gone_within(
        &running,
        "the MCP server after shutdown",
        std::time::Duration::from_secs(5),
    )
    .await;
}
