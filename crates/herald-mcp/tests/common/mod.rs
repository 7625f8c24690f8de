//! Helpers for the tests against real MCP servers (installed by
//! `.ci/install-mcp-servers` into `<repo>/.ci/mcp`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use herald_mcp::McpServerConfig;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `dist/index.js` of an installed `@modelcontextprotocol/<package>`;
/// panics (test failure) with the fix when it is missing.
pub fn server_js(package: &str) -> String {
    let path = repo_root()
        .join(".ci/mcp/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing: run .ci/install-mcp-servers (it installs the real MCP test servers \
         from npm into .ci/mcp)",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

pub fn everything() -> McpServerConfig {
    McpServerConfig::stdio("node", [server_js("server-everything"), "stdio".to_owned()])
}

pub fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Whether `pid` is a running process (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

/// Waits up to `limit` for `pid` to be gone.
pub async fn gone_within(pid: u32, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    !alive(pid)
}

/// Processes whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat"))
                && let Some((_, rest)) = stat.rsplit_once(')')
                && rest.split_whitespace().nth(1) == Some(pid.to_string().as_str())
            {
                found.push(child);
            }
        }
    }
    found
}
