//! Ctrl-C interrupts the running tool, answers the call, and exits 130.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Harness, LiveRun, Wire};
use herald_testkit::{Reply, Script};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn sigint_interrupts_a_running_tool_and_exits_130() {
    let h = Harness::new(Script::new().conversation(
        "sleep",
        vec![
            Reply::tool("terminal", json!({"command": "sleep 30"})),
            Reply::text("unreachable"),
        ],
    ))
    .await;
    let run = LiveRun::until(&h, Wire::OpenAi, "sleep a while", "tool.started").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t0 = Instant::now();
    run.interrupt();
    let (status, events) = run.finish().await;
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    let done = events.last().unwrap();
    assert_eq!(done["type"], "run.completed");
    assert_eq!(done["status"], "interrupted");
    let completed: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .collect();
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0]["status"], "error");
    // Only the first request was made; the interrupted call was answered in history.
    assert_eq!(h.server.requests().len(), 1);
}
