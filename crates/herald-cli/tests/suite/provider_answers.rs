//! Answers real servers give besides a clean event stream: a malformed chunk,
//! a plain JSON completion, a complete reply that never ends its stream, an
//! HTML page, and text streamed before a retry.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Harness, Wire, last, of_type, stderr};
use herald_testkit::{Fault, Reply, Script};
use serde_json::{Value, json};

const FAST_RETRY: &str = "[network]\nretry_base_delay_ms = 10\nstream_idle_timeout = 20\n";

/// Long enough to be streamed in several deltas, so a fault mid-stream comes
/// after some of it was already sent.
const ANSWER: &str = "The build is green: all forty-two tests pass on both targets.";

fn answer() -> Script {
    Script::new().conversation("status", vec![Reply::text(ANSWER)])
}

/// The `assistant.delta` text of a run, and how many `assistant.reset` events
/// it held.
fn streamed(events: &[Value]) -> (String, usize) {
    let text = of_type(events, "assistant.delta")
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    (text, of_type(events, "assistant.reset").len())
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_chunk_mid_stream_is_retried_like_a_truncated_stream() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let h = Harness::new(answer()).await;
        h.config(FAST_RETRY);
        h.server.inject(Fault::MalformedChunk);
        let (output, events) = h.run_json(wire, &[], "status").await;
        assert!(output.status.success(), "{wire:?}: {}", stderr(&output));
        assert_eq!(last(&events)["final_response"], ANSWER);
        assert_eq!(h.server.request_count(), 2, "{wire:?}");
        let retry = of_type(&events, "retry");
        assert_eq!(retry.len(), 1, "{wire:?}");
        assert!(
            retry[0]["reason"]
                .as_str()
                .unwrap()
                .contains("not valid JSON"),
            "{retry:?}"
        );
        h.server.assert_invariants();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_json_completion_is_accepted_on_both_wires() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let h = Harness::new(Script::new().conversation(
            "read notes",
            vec![
                Reply::ToolCalls {
                    text: "Reading the notes.".into(),
                    calls: vec![herald_testkit::ScriptedCall::new(
                        "read_file",
                        json!({"path": "notes.txt"}),
                    )],
                },
                Reply::text("The notes say hello."),
            ],
        ))
        .await;
        h.config(FAST_RETRY);
        std::fs::write(h.work_path().join("notes.txt"), "hello\n").unwrap();
        // The first answer ignores `stream: true`: one JSON document.
        h.server.inject(Fault::NonStreamingAnswer);
        let (output, events) = h.run_json(wire, &[], "read notes").await;
        assert!(output.status.success(), "{wire:?}: {}", stderr(&output));
        assert_eq!(h.server.request_count(), 2, "{wire:?}: no retry");
        assert!(of_type(&events, "retry").is_empty(), "{wire:?}");
        let message = of_type(&events, "assistant.message")[0];
        assert_eq!(message["text"], "Reading the notes.");
        assert_eq!(message["tool_calls"][0]["name"], "read_file");
        assert_eq!(
            message["tool_calls"][0]["arguments"],
            r#"{"path":"notes.txt"}"#
        );
        let completed = of_type(&events, "tool.completed");
        assert_eq!(completed.len(), 1);
        assert_eq!(completed[0]["status"], "ok", "{completed:?}");
        let usage = of_type(&events, "usage");
        assert!(usage[0]["input_tokens"].as_u64().unwrap() > 0, "{usage:?}");
        assert!(usage[0]["output_tokens"].as_u64().unwrap() > 0, "{usage:?}");
        assert_eq!(last(&events)["final_response"], "The notes say hello.");
        h.server.assert_invariants();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn complete_reply_without_end_marker_finishes_at_once() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let h = Harness::new(answer()).await;
        h.config(FAST_RETRY);
        // Finish reason and usage arrive, `[DONE]` / `message_stop` never
        // does and the connection stays open.
        h.server.inject(Fault::NoEndMarker);
        let started = Instant::now();
        let (output, events) = h.run_json(wire, &[], "status").await;
        let took = started.elapsed();
        assert!(output.status.success(), "{wire:?}: {}", stderr(&output));
        assert!(
            took < Duration::from_secs(5),
            "{wire:?}: took {took:?} with a 20 s idle timeout"
        );
        assert_eq!(h.server.request_count(), 1, "{wire:?}");
        assert!(of_type(&events, "retry").is_empty(), "{wire:?}");
        assert_eq!(last(&events)["final_response"], ANSWER);
        assert!(
            of_type(&events, "usage")[0]["output_tokens"]
                .as_u64()
                .unwrap()
                > 0
        );
        h.server.assert_invariants();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn html_answer_fails_at_once_naming_content_type_and_base_url() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let h = Harness::new(answer()).await;
        h.config(FAST_RETRY);
        h.server.inject(Fault::html_page());
        let mut cmd = h.command(wire);
        cmd.arg("run").arg("status");
        let output = cmd.output().await.unwrap();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{wire:?}: {err}");
        assert_eq!(h.server.request_count(), 1, "{wire:?}: must not retry");
        assert!(err.contains("text/html"), "{wire:?}: {err}");
        let base = match wire {
            Wire::OpenAi => h.server.openai_base_url(),
            Wire::Anthropic => h.server.anthropic_base_url(),
        };
        assert!(err.contains(&format!("'{base}'")), "{wire:?}: {err}");
        let var = match wire {
            Wire::OpenAi => "OPENAI_BASE_URL",
            Wire::Anthropic => "ANTHROPIC_BASE_URL",
        };
        assert!(err.contains(var), "{wire:?}: {err}");
        h.server.assert_invariants();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_does_not_repeat_text_sent_before_a_retry() {
    for (wire, fault) in [
        (Wire::OpenAi, Fault::AbortStream),
        (Wire::Anthropic, Fault::TruncatedStream),
        (Wire::OpenAi, Fault::MalformedChunk),
    ] {
        let h = Harness::new(answer()).await;
        h.config(FAST_RETRY);
        h.server.inject(fault.clone());
        let (output, events) = h.run_json(wire, &["--stream"], "status").await;
        assert!(output.status.success(), "{wire:?}: {}", stderr(&output));
        assert_eq!(h.server.request_count(), 2, "{wire:?} {fault:?}");
        // Text was streamed before the failure ...
        let retry_at = events.iter().position(|e| e["type"] == "retry").unwrap();
        assert!(
            events[..retry_at]
                .iter()
                .any(|e| e["type"] == "assistant.delta"),
            "{wire:?} {fault:?}: nothing streamed before the retry"
        );
        // ... and the deltas still add up to the answer exactly once.
        let (text, resets) = streamed(&events);
        assert_eq!(text, ANSWER, "{wire:?} {fault:?}");
        assert_eq!(resets, 0, "{wire:?} {fault:?}");
        assert_eq!(last(&events)["final_response"], ANSWER);
        h.server.assert_invariants();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_resets_when_the_retried_reply_differs() {
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    let script = Script::new().responder(move |_| {
        if counter.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::text("A first draft that the broken stream will cut short.")
        } else {
            Reply::text("The second, different answer.")
        }
    });
    let h = Harness::new(script).await;
    h.config(FAST_RETRY);
    h.server.inject(Fault::TruncatedStream);
    let (output, events) = h.run_json(Wire::OpenAi, &["--stream"], "status").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(served.load(Ordering::SeqCst), 2);
    let (_, resets) = streamed(&events);
    assert_eq!(resets, 1, "{events:?}");
    let reset_at = events
        .iter()
        .position(|e| e["type"] == "assistant.reset")
        .unwrap();
    let (before, _) = streamed(&events[..reset_at]);
    let (after, _) = streamed(&events[reset_at..]);
    assert!(before.starts_with("A first draft"), "{before:?}");
    assert_eq!(after, "The second, different answer.");
    assert_eq!(last(&events)["final_response"], after);
    h.server.assert_invariants();
}

/// A reply that reaches the output cap is a visible notice, and the tool
/// call the model was writing when it was cut is never run: the model is
/// told to send it again, and the turn goes on.
#[tokio::test(flavor = "multi_thread")]
async fn a_reply_cut_at_the_output_cap_runs_no_unfinished_call() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let script = Script::new().conversation(
            "write the long file",
            vec![
                Reply::tool(
                    "write_file",
                    json!({"path": "long.txt", "content": "cut short"}),
                )
                .cut(),
                Reply::text("the answer, cut").cut(),
            ],
        );
        let h = Harness::new(script).await;
        let (output, events) = h.run_json(wire, &[], "write the long file").await;
        assert!(output.status.success(), "{wire:?}");
        assert!(
            !h.work_path().join("long.txt").exists(),
            "{wire:?}: the cut call ran"
        );
        let notices: Vec<&str> = events
            .iter()
            .filter(|e| e["type"] == "error")
            .map(|e| e["message"].as_str().unwrap())
            .collect();
        assert_eq!(notices.len(), 2, "{wire:?}: {notices:?}");
        assert!(notices[0].contains("was not run"), "{notices:?}");
        assert!(notices[1].contains("is cut short"), "{notices:?}");
        let completed: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "tool.completed")
            .collect();
        assert!(completed.is_empty(), "{completed:?}");
        // What the model was told about its unfinished call.
        let requests = h.requests_of("write the long file");
        let view = requests.last().unwrap().view().unwrap();
        let (_, told) = view.tool_results().last().cloned().unwrap();
        assert!(
            told.starts_with("not run: your reply reached the output limit"),
            "{told}"
        );
        // Every request carries a cap.
        let first = &requests[0].body;
        let cap = first
            .get("max_tokens")
            .or_else(|| first.get("max_completion_tokens"));
        assert!(
            cap.and_then(Value::as_u64).is_some_and(|n| n > 0),
            "{first}"
        );
        assert_eq!(last(&events)["final_response"], "the answer, cut");
    }
}

/// The `error` events of a run: `(message, fatal)`.
fn notices(events: &[Value]) -> Vec<(String, bool)> {
    of_type(events, "error")
        .iter()
        .map(|e| {
            (
                e["message"].as_str().unwrap().to_owned(),
                e["fatal"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// A model that does not stop: a call whose arguments never close, then
/// text without end. Each reply ends only at the output cap or at the
/// request's time limit.
fn endless_rambler() -> Script {
    Script::new().conversation(
        "ramble on",
        vec![Reply::endless_call("write_file"), Reply::endless()],
    )
}

/// A small configured output cap stops a reply that would never end: the
/// server ends it at the cap it was sent (`length` / `max_tokens`), the
/// unfinished call is not run, and the run finishes with the notices.
#[tokio::test(flavor = "multi_thread")]
async fn a_small_output_cap_stops_an_endless_reply() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let h = Harness::new(endless_rambler()).await;
        h.config("max_tokens = 40\n");
        let t0 = Instant::now();
        let (output, events) = h.run_json(wire, &[], "ramble on").await;
        assert!(output.status.success(), "{wire:?}: {}", stderr(&output));
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        let requests = h.requests_of("ramble on");
        assert_eq!(requests.len(), 2, "{wire:?}");
        assert_eq!(requests[0].body["max_tokens"], 40, "{wire:?}");
        assert!(!h.work_path().join("endless.txt").exists(), "{wire:?}");
        let notices = notices(&events);
        assert_eq!(notices.len(), 2, "{wire:?}: {notices:?}");
        assert!(notices.iter().all(|(_, fatal)| !fatal), "{notices:?}");
        assert!(
            notices[0].0.contains("output limit (40 tokens)"),
            "{notices:?}"
        );
        assert!(notices[0].0.contains("was not run"), "{notices:?}");
        assert!(notices[1].0.contains("is cut short"), "{notices:?}");
        let view = requests[1].view().unwrap();
        let (_, told) = view.tool_results().last().cloned().unwrap();
        assert!(
            told.starts_with("not run: your reply reached the output limit"),
            "{told}"
        );
        // Every token up to the cap, and nothing after it.
        assert_eq!(
            last(&events)["final_response"],
            "lorem ".repeat(40),
            "{wire:?}"
        );
        assert_eq!(last(&events)["exit_reason"], "completed");
    }
}

/// The request's wall-clock limit ends a reply whose cap is far away,
/// within the limit plus slack; what had streamed is kept and stored, the
/// half-written call is not run, the notices are visible, and the run
/// ends normally.
#[tokio::test(flavor = "multi_thread")]
async fn the_request_time_limit_cuts_an_endless_reply_and_keeps_it() {
    const LIMIT: Duration = Duration::from_secs(2);
    const SLACK: Duration = Duration::from_millis(1500);
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let h = Harness::new(endless_rambler()).await;
        h.config("[network]\nrequest_timeout_seconds = 2\n");
        let t0 = Instant::now();
        let (output, events) = h.run_json(wire, &[], "ramble on").await;
        let took = t0.elapsed();
        assert!(output.status.success(), "{wire:?}: {}", stderr(&output));
        let requests = h.requests_of("ramble on");
        assert_eq!(requests.len(), 2, "{wire:?}: not retried");
        // The default cap (8,192 tokens at 200 a second) is 40 s away:
        // each request ended at the limit. The limit starts when the
        // client sends; the server stamps arrival, and the first request
        // pays for opening the connection, so its arrival may lag by a
        // few milliseconds more than the second's.
        let first = requests[1].received_at - requests[0].received_at;
        assert!(
            first >= LIMIT - Duration::from_millis(200) && first < LIMIT + SLACK,
            "{wire:?}: {first:?}"
        );
        assert!(
            took >= 2 * LIMIT && took < 2 * LIMIT + 2 * SLACK + Duration::from_secs(2),
            "{wire:?}: {took:?}"
        );
        assert!(!h.work_path().join("endless.txt").exists(), "{wire:?}");
        let notices = notices(&events);
        assert_eq!(notices.len(), 2, "{wire:?}: {notices:?}");
        assert!(notices.iter().all(|(_, fatal)| !fatal), "{notices:?}");
        assert!(
            notices[0].0.contains("after 2 s (request_timeout_seconds)")
                && notices[0].0.contains("was not run"),
            "{notices:?}"
        );
        assert!(notices[1].0.contains("is cut short"), "{notices:?}");
        let view = requests[1].view().unwrap();
        let (_, told) = view.tool_results().last().cloned().unwrap();
        assert!(
            told.starts_with("not run: your reply reached the time limit"),
            "{told}"
        );
        let done = last(&events);
        assert_eq!(done["type"], "run.completed");
        assert_eq!(done["exit_reason"], "completed");
        let answer = done["final_response"].as_str().unwrap().to_owned();
        assert!(answer.starts_with("lorem lorem "), "{wire:?}: {answer}");
        // Stored: the cut answer and what the model was told.
        let id = done["session_id"].as_str().unwrap();
        let shown = h.cli_json(&["sessions", "show", id, "--json"]).await;
        let stored = shown["messages"].as_array().unwrap();
        assert_eq!(stored.last().unwrap()["content"], answer.as_str());
        assert!(
            stored.iter().any(|m| m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("not run: your reply reached the time limit"))),
            "{wire:?}"
        );
        // Its output tokens are counted, not recorded as free.
        assert!(
            shown["session"]["output_tokens"].as_u64().unwrap() > 0,
            "{shown}"
        );
        h.server.assert_invariants();
    }
}

/// A request that reaches its time limit before any text or call arrived
/// is a clear error, not retried.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_with_nothing_by_its_time_limit_is_an_error_not_retried() {
    let h = Harness::new(answer()).await;
    h.config("[network]\nrequest_timeout_seconds = 1\n");
    h.server.set_latency(Duration::from_secs(4));
    let t0 = Instant::now();
    let (output, events) = h.run_json(Wire::OpenAi, &[], "status").await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert_eq!(h.server.request_count(), 1, "retried");
    let done = last(&events);
    assert_eq!(done["exit_reason"], "error");
    let error = done["error"].as_str().unwrap();
    assert!(
        error.contains("after 1 s (request_timeout_seconds)")
            && error.contains("Raise [network] request_timeout_seconds"),
        "{error}"
    );
}
