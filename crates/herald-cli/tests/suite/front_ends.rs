//! Every front end reaches its session only through the protocol's
//! operations: the runtime logs each operation it is given, and what each
//! front end does shows up there as exactly the operations it maps to, with
//! the events of a turn carrying its operation's id.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Harness, Wire};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

fn answers() -> Script {
    Script::new().responder(|_| Reply::text("fine"))
}

#[tokio::test(flavor = "multi_thread")]
async fn herald_run_submits_one_turn_and_its_events_carry_its_id() {
    let h = Harness::new(answers()).await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "hello").await;
    assert!(output.status.success());
    let ops = h.submitted_ops();
    let kinds: Vec<&str> = ops.iter().map(|(op, _)| op.as_str()).collect();
    assert_eq!(kinds, ["user_turn"]);
    let id = &ops[0].1;
    assert_eq!(events[0]["type"], "session.started");
    assert!(events[0].get("submission_id").is_none());
    let end = events.last().unwrap();
    assert_eq!(end["type"], "run.completed");
    assert_eq!(end["submission_id"], id.as_str(), "{end}");
    for event in &events[1..] {
        if event["type"] != "mcp.server" && event["type"] != "error" {
            assert_eq!(event["submission_id"], id.as_str(), "{event}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_line_loop_submits_a_turn_a_compaction_and_the_end() {
    let h = Harness::new(answers()).await;
    let mut cmd = h.command(Wire::OpenAi);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n/compress\n/exit\n").await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(h.submitted_op_kinds(), ["user_turn", "compact", "shutdown"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_submits_a_turn_a_compaction_and_the_end() {
    let h = Harness::new(answers()).await;
    let pty = h.tui(&[], 30, 100);
    let wait = Duration::from_secs(20);
    pty.wait_for(|s| s.contains("Ask herald"), wait).unwrap();
    pty.send_str("hello\r");
    pty.wait_for(|s| s.contains("fine"), wait).unwrap();
    pty.send_str("/compress\r");
    pty.wait_for(|s| s.contains("compact"), wait).unwrap();
    pty.send(herald_testkit::pty::keys::CTRL_D);
    pty.wait_exit(wait).expect("herald exits on Ctrl+D");
    assert_eq!(h.submitted_op_kinds(), ["user_turn", "compact", "shutdown"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn herald_serve_submits_what_its_routes_and_the_ops_route_are_given() {
    let h = Harness::new(answers()).await;
    let mut cmd = h.command(Wire::OpenAi);
    cmd.args(["serve", "--port", "0", "--token", "t"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = line
        .strip_prefix("herald serve listening on ")
        .unwrap()
        .to_owned();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let post = |path: String, body: Value| {
        let client = client.clone();
        async move {
            let response = client
                .post(path)
                .bearer_auth("t")
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (status, created) = post(format!("{url}/api/sessions"), json!({})).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let (status, turn) = post(
        format!("{url}/api/sessions/{id}/turns?wait=true"),
        json!({"input": "hello"}),
    )
    .await;
    assert_eq!(status, 200, "{turn}");
    let (status, accepted) = post(
        format!("{url}/api/sessions/{id}/ops"),
        json!({"type": "compact"}),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    let ops = h.submitted_ops();
    let kinds: Vec<&str> = ops.iter().map(|(op, _)| op.as_str()).collect();
    assert_eq!(kinds, ["user_turn", "compact", "shutdown"]);
    // The ops route answers with the id the runtime logged.
    assert_eq!(accepted["submission_id"], ops[1].1.as_str());
}
