//! Ctrl-C interrupts the running tool, answers the call, and exits 130.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Harness, Wire, parse_events};
use herald_testkit::{Reply, Script};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

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
    let mut cmd = h.command(Wire::OpenAi);
    cmd.arg("run")
        .arg("--json")
        .arg("sleep a while")
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let pid = child.id().unwrap() as i32;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        let started = line.contains("\"tool.started\"");
        seen.push(line);
        if started {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t0 = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    while let Some(line) = lines.next_line().await.unwrap() {
        seen.push(line);
    }
    let status = child.wait().await.unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    let events = parse_events(seen.join("\n").as_bytes());
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
