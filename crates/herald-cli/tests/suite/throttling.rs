//! Fan-out on a rate-limited endpoint: twenty children against a provider
//! that admits four requests at once. The endpoint's governor lowers the
//! requests in flight after the first 429s (`provider.throttled`), honours
//! `Retry-After` for the whole tree, and every child finishes without
//! running out of tries.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

use crate::common::{Harness, Wire, last, of_type, stderr, tool_results};

const CHILDREN: usize = 20;

#[tokio::test(flavor = "multi_thread")]
async fn a_429_storm_across_twenty_children_slows_the_tree_and_every_child_finishes() {
    let tasks: Vec<Value> = (0..CHILDREN)
        .map(|i| json!({"goal": format!("storm child {i:02}: look and report")}))
        .collect();
    let mut script = Script::new().conversation(
        "fan out into the storm",
        vec![
            Reply::tool("delegate_task", json!({"tasks": tasks})),
            Reply::text("the storm passed"),
        ],
    );
    for i in 0..CHILDREN {
        script = script.conversation(
            &format!("storm child {i:02}"),
            vec![
                Reply::tool("read_file", json!({"path": "notes.txt"})),
                Reply::text(format!("child {i:02} done")),
            ],
        );
    }
    let h = Harness::new(script).await;
    std::fs::write(h.work_path().join("notes.txt"), "calm\n").unwrap();
    h.config(
        "[delegation]\nmax_concurrent_children = 20\n[network]\nmax_retries = 3\nretry_base_delay_ms = 100\n",
    );
    h.server.set_latency(Duration::from_millis(200));
    h.server.limit_concurrency(Some((4, Some(1))));
    let t0 = Instant::now();
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "fan out into the storm")
        .await;
    let took = t0.elapsed();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "the storm passed");
    let parent = h.requests_of("fan out into the storm");
    let result: Value =
        serde_json::from_str(&tool_results(&parent.last().unwrap().body)[0]).unwrap();
    let results = result["results"].as_array().unwrap();
    assert_eq!(results.len(), CHILDREN);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["status"], "completed", "{r}");
        assert_eq!(r["summary"], format!("child {i:02} done"), "{r}");
    }
    // The storm happened, and the tree backed off.
    let refused = h.server.throttled_count();
    assert!(refused > 0, "the provider never refused a request");
    let throttled = of_type(&events, "provider.throttled");
    assert!(!throttled.is_empty(), "no provider.throttled event");
    let lowest = throttled
        .iter()
        .map(|e| e["limit"].as_u64().unwrap())
        .min()
        .unwrap();
    assert!(
        lowest <= 4,
        "the limit never came down to the provider's: {lowest}"
    );
    assert!(
        throttled.iter().any(|e| e["pause_ms"] == 1000),
        "{throttled:?}"
    );
    // Far fewer refusals than requests: once throttled, the tree mostly
    // waited instead of being refused again.
    let admitted = h.server.request_count();
    assert_eq!(
        admitted,
        1 + CHILDREN * 2 + 1,
        "every request admitted once"
    );
    assert!(
        refused < admitted,
        "{refused} refusals for {admitted} admitted requests"
    );
    assert!(h.server.peak_in_flight() <= 4);
    eprintln!(
        "storm: {admitted} admitted, {refused} refused, lowest limit {lowest}, {} throttle events, {:.1} s",
        throttled.len(),
        took.as_secs_f64()
    );
    h.server.assert_invariants();
}

/// `[network] max_requests_in_flight` bounds the requests (and so the
/// connections) the whole tree has in flight to one endpoint before any
/// 429: twelve children at once, three requests at a time, all finishing.
#[tokio::test(flavor = "multi_thread")]
async fn the_configured_ceiling_bounds_a_fan_out_before_any_429() {
    const WIDE: usize = 12;
    let tasks: Vec<Value> = (0..WIDE)
        .map(|i| json!({"goal": format!("bounded child {i:02}: look and report")}))
        .collect();
    let mut script = Script::new().conversation(
        "fan out under a ceiling",
        vec![
            Reply::tool("delegate_task", json!({"tasks": tasks})),
            Reply::text("all reported"),
        ],
    );
    for i in 0..WIDE {
        script = script.conversation(
            &format!("bounded child {i:02}"),
            vec![
                Reply::tool("read_file", json!({"path": "notes.txt"})),
                Reply::text(format!("child {i:02} done")),
            ],
        );
    }
    let h = Harness::new(script).await;
    std::fs::write(h.work_path().join("notes.txt"), "calm\n").unwrap();
    h.config("[delegation]\nmax_concurrent_children = 12\n[network]\nmax_requests_in_flight = 3\n");
    h.server.set_latency(Duration::from_millis(100));
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "fan out under a ceiling")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "all reported");
    let parent = h.requests_of("fan out under a ceiling");
    let result: Value =
        serde_json::from_str(&tool_results(&parent.last().unwrap().body)[0]).unwrap();
    let results = result["results"].as_array().unwrap();
    assert_eq!(results.len(), WIDE);
    assert!(
        results.iter().all(|r| r["status"] == "completed"),
        "{result}"
    );
    // Never more than three at once, and nothing was refused or throttled.
    assert_eq!(h.server.peak_in_flight(), 3);
    assert_eq!(h.server.throttled_count(), 0);
    assert!(of_type(&events, "provider.throttled").is_empty());
    assert_eq!(h.server.request_count(), 1 + WIDE * 2 + 1);
    h.server.assert_invariants();
}
