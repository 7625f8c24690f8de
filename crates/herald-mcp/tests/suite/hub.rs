//! `McpHub` against the real server-everything: servers start in the
//! background, a session's tool list comes from the live server or the
//! cache, a deferred hub starts nothing until released, and shutdown ends
//! the processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use herald_mcp::{McpHub, ServerStatus, ToolCache};
use herald_sandbox::EnvFilter;

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

async fn assert_all_gone(marker: &str, what: &str) {
    for pid in processes_with_env(marker) {
        assert!(
            common::gone_within(pid as u32, Duration::from_secs(5)).await,
            "{what} (pid {pid}) is still running"
        );
    }
}

fn servers(marker: &str) -> BTreeMap<String, herald_mcp::McpServerConfig> {
    let mut config = common::everything();
    config.env.insert(marker.to_owned(), "1".to_owned());
    BTreeMap::from([("ev".to_owned(), config)])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deferred_hub_starts_nothing_until_released_then_serves_from_the_cache() {
    let marker = format!("HERALD_HUB_DEFER_{}", std::process::id());
    let home = tempfile::tempdir().unwrap();

    // First hub, not deferred: no cache yet, so the session waits for the
    // server and the live list is recorded.
    let hub = McpHub::start(
        &servers(&marker),
        &EnvFilter::default(),
        Some(ToolCache::in_home(home.path())),
    );
    let first = hub.session_tools(None).await;
    assert_eq!(
        first.reports[0].status,
        ServerStatus::Ready,
        "{:?}",
        first.reports
    );
    let names: Vec<String> = first.tools.iter().map(|t| t.spec().name.clone()).collect();
    hub.shutdown().await;
    // The cache is written off the async threads; give it a moment.
    for _ in 0..50 {
        if !ToolCache::in_home(home.path()).load().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_all_gone(&marker, "the first hub's server").await;

    // Deferred hub with the cache: the session gets the same tools at once
    // and no process exists until release.
    let hub = McpHub::start_deferred(
        &servers(&marker),
        &EnvFilter::default(),
        Some(ToolCache::in_home(home.path())),
    );
    let second = hub.session_tools(None).await;
    assert_eq!(second.reports[0].status, ServerStatus::Cached);
    let again: Vec<String> = second.tools.iter().map(|t| t.spec().name.clone()).collect();
    assert_eq!(again, names, "the cached list is the live one");
    // A fixed window: a process that never starts has no event to wait for.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        processes_with_env(&marker).is_empty(),
        "nothing starts before release"
    );
    hub.release();
    let outcome = second.pending[0].outcome().await;
    assert_eq!(outcome.status, ServerStatus::Ready, "{outcome:?}");
    assert_eq!(processes_with_env(&marker).len(), 1);
    hub.shutdown().await;
    assert_all_gone(&marker, "the deferred hub's server").await;
}
