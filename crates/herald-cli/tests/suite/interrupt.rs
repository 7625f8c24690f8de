//! Ctrl-C interrupts the running tool (its processes die), answers the call,
//! exits 130, and `--resume` continues the conversation from there.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Harness, LiveRun, Wire, assert_gone, last, of_type, sleeper_command, stderr};
use herald_testkit::{Reply, RequestView, Script};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn sigint_interrupts_a_running_tool_and_exits_130() {
    let h = Harness::new(Script::new().conversation(
        "sleep",
        vec![
            Reply::tool(
                "terminal",
                json!({"command": sleeper_command("sleep.pids")}),
            ),
            Reply::text("unreachable"),
        ],
    ))
    .await;
    let run = LiveRun::until(&h, Wire::OpenAi, "sleep a while", "tool.started").await;
    let pids = h.sleeper_pids("sleep.pids").await;
    let t0 = Instant::now();
    run.interrupt();
    let (status, events) = run.finish().await;
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    assert_gone(&pids, "the interrupted command").await;
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

#[tokio::test(flavor = "multi_thread")]
async fn resume_after_ctrl_c_carries_the_interrupted_result_once() {
    let h = Harness::new(Script::new().conversation(
        "resume after ctrl-c",
        vec![
            Reply::tool(
                "terminal",
                json!({"command": sleeper_command("resume.pids")}),
            ),
            Reply::text("picked up where we left off"),
        ],
    ))
    .await;
    let run = LiveRun::until(&h, Wire::OpenAi, "resume after ctrl-c", "tool.started").await;
    let call_id = run.last_event()["call_id"].as_str().unwrap().to_owned();
    let pids = h.sleeper_pids("resume.pids").await;
    run.interrupt();
    let (status, events) = run.finish().await;
    assert_eq!(status.code(), Some(130));
    assert_gone(&pids, "the interrupted command").await;
    assert_eq!(last(&events)["status"], "interrupted");
    let session = last(&events)["session_id"].as_str().unwrap().to_owned();
    assert_eq!(h.server.request_count(), 1);

    let (output, events) = h
        .run_json(Wire::OpenAi, &["--resume", &session], "carry on")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["session_id"], session.as_str());
    assert_eq!(
        last(&events)["final_response"],
        "picked up where we left off"
    );
    assert!(of_type(&events, "tool.started").is_empty());

    let requests = h.server.requests();
    assert_eq!(requests.len(), 2);
    let view = RequestView::from_body(requests[1].api, &requests[1].body).unwrap();
    // The interrupted call and its one result, then the new prompt.
    let calls: Vec<&str> = view
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|(id, _, _)| id.as_str()))
        .collect();
    assert_eq!(calls, [call_id.as_str()]);
    let results: Vec<&(String, String)> = view
        .messages
        .iter()
        .flat_map(|m| m.tool_results.iter())
        .collect();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].0, call_id);
    assert!(results[0].1.contains("interrupted"), "{}", results[0].1);
    let tail = view.messages.last().unwrap();
    assert_eq!(
        (tail.role.as_str(), tail.text.as_str()),
        ("user", "carry on")
    );
    // The resumed request extends the interrupted run's request, pairs every
    // call with one result, and nothing else broke either check.
    h.server.assert_invariants();
    assert_eq!(h.server.prefix_stability(), (1, 1));
}
