//! Context compression end to end: the real binary against the
//! scripted server, with a tiny context window so a few large tool outputs
//! trigger it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{Harness, Wire, last, of_type, stderr};
use herald_testkit::{
    Fault, RecordedRequest, Reply, RequestView, Script, canonical_message, check_pairing,
};
use serde_json::{Value, json};

const TASK: &str = "read big.txt six times and report";
const SUMMARY: &str = "## Goal\n- read big.txt six times\n## Constraints\n- none\n## Completed actions\n- read big.txt\n## Current state\n- reading\n## Decisions\n- none\n## Files\n- big.txt\n## Remaining work\n- more reads";

fn is_summary_request(view: &RequestView) -> bool {
    view.last()
        .is_some_and(|m| m.text.contains("Request for context compaction"))
}

fn has_summary(view: &RequestView) -> bool {
    view.messages
        .iter()
        .any(|m| m.text.contains("[herald] Summary of earlier turns"))
}

fn is_flush_request(view: &RequestView) -> bool {
    view.last()
        .is_some_and(|m| m.text.starts_with("[herald] Memory flush"))
}

/// A model that plans with `todo_write`, then calls `read_file` on a large
/// file `reads` times, then answers; summary requests get a summary and
/// memory flush requests a `DONE`. Counts the other requests in `calls`.
fn reader(reads: usize, calls: Arc<AtomicUsize>) -> Script {
    Script::new().responder(move |view| {
        if is_summary_request(view) {
            return Reply::text(SUMMARY);
        }
        if is_flush_request(view) {
            return Reply::text("DONE");
        }
        match calls.fetch_add(1, Ordering::SeqCst) {
            0 => Reply::tool(
                "todo_write",
                json!({"todos": [
                    {"id": "1", "content": "read the big file", "status": "in_progress"},
                    {"id": "2", "content": "write the report", "status": "pending"}
                ]}),
            ),
            n if n <= reads => Reply::tool("read_file", json!({"path": "big.txt"})),
            _ => Reply::text("all read"),
        }
    })
}

/// A harness with `big.txt` (~6,500 characters) in the work directory.
async fn harness(script: Script) -> Harness {
    let h = Harness::new(script).await;
    let text: String = (0..100)
        .map(|i| format!("line {i:03} {}\n", "abcdefghij".repeat(5)))
        .collect();
    std::fs::write(h.work.path().join("big.txt"), text).unwrap();
    h
}

/// Prompt tokens (body bytes / 4) of a fresh one-message request on `wire`:
/// the fixed system + tools part, measured rather than assumed so the test
/// follows the tool list as it grows.
async fn fixed_tokens(wire: Wire) -> u64 {
    let h = Harness::new(Script::new().responder(|_| Reply::text("hi"))).await;
    let (output, _) = h.run_json(wire, &[], "hi").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let body = &h.server.requests()[0].body;
    (body.to_string().len() / 4) as u64
}

/// `[compression]` with a window whose threshold (0.5) lies `room` tokens
/// above the fixed prompt.
fn small_window(fixed: u64, room: u64) -> String {
    format!(
        "[compression]\nenabled = true\nthreshold = 0.5\ncontext_window = {}\n",
        2 * (fixed + room)
    )
}

fn tools_of(r: &RecordedRequest) -> &Value {
    &r.body["tools"]
}

fn call_ids(requests: &[RecordedRequest]) -> BTreeSet<String> {
    requests
        .iter()
        .filter_map(|r| r.view().ok())
        .flat_map(|v| v.messages.into_iter().flat_map(|m| m.tool_calls))
        .map(|(id, _, _)| id)
        .collect()
}

async fn stored_messages(h: &Harness, id: &str) -> Vec<Value> {
    let output = h
        .bare_command()
        .args(["sessions", "show", id, "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    shown["messages"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn threshold_compaction_summarises_keeps_pairs_and_resumes() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let fixed = fixed_tokens(wire).await;
        let calls = Arc::new(AtomicUsize::new(0));
        let h = harness(reader(6, calls.clone())).await;
        h.config(&small_window(fixed, 4_000));
        let (output, events) = h.run_json(wire, &[], TASK).await;
        assert!(output.status.success(), "{wire:?}: {}", stderr(&output));
        assert_eq!(last(&events)["final_response"], "all read");

        // Compaction events with shrinking token counts.
        let compactions = of_type(&events, "compaction");
        assert!(!compactions.is_empty(), "{wire:?}: no compaction");
        for c in &compactions {
            let (before, after) = (
                c["tokens_before"].as_u64().unwrap(),
                c["tokens_after"].as_u64().unwrap(),
            );
            assert!(before > after, "{c}");
            assert!(before >= fixed + 4_000, "triggered at the threshold: {c}");
        }

        let requests = h.server.requests();
        let first = &requests[0];
        let first_view = first.view().unwrap();
        let summaries: Vec<usize> = (0..requests.len())
            .filter(|&i| is_summary_request(&requests[i].view().unwrap()))
            .collect();
        assert_eq!(summaries.len(), compactions.len(), "{wire:?}");
        for &s in &summaries {
            // The memory flush comes first: the conversation so far plus
            // its instruction, same system and tools.
            let flush = requests[s - 1].view().unwrap();
            assert!(is_flush_request(&flush), "{wire:?}: {:?}", flush.last());
            assert_eq!(flush.system, first_view.system);
            assert_eq!(tools_of(&requests[s - 1]), tools_of(first));
            assert!(!flush.tool_choice_none, "the flush may call memory");
            // The summary request reuses the conversation's system + tools
            // (cached prefix) and forbids tool calls.
            let ask = requests[s].view().unwrap();
            assert_eq!(ask.system, first_view.system);
            assert_eq!(tools_of(&requests[s]), tools_of(first));
            assert!(ask.tool_choice_none);
            assert!(check_pairing(&ask).is_empty());

            // The request after it carries the compacted history: same
            // system + tools, the protected head unchanged, the summary next,
            // tool calls still paired, open todo items at the end.
            let next = &requests[s + 1];
            let view = next.view().unwrap();
            assert!(
                has_summary(&view),
                "{wire:?}: request {} has no summary",
                s + 1
            );
            assert_eq!(view.system, first_view.system);
            assert_eq!(tools_of(next), tools_of(first));
            assert_eq!(check_pairing(&view), Vec::<String>::new());
            let summary_at = view
                .messages
                .iter()
                .position(|m| m.text.contains("[herald] Summary of earlier turns"))
                .unwrap();
            let before = requests[s - 2].body["messages"].as_array().unwrap();
            let after = next.body["messages"].as_array().unwrap();
            for k in 0..summary_at {
                assert_eq!(canonical_message(&before[k]), canonical_message(&after[k]));
            }
            assert!(view.messages[summary_at].text.contains("## Remaining work"));
            let tail = view.last().unwrap();
            assert!(tail.text.contains("read the big file"), "{tail:?}");
            assert!(tail.text.contains("write the report"), "{tail:?}");
            assert!(after.len() < before.len() + 2, "history got shorter");
        }
        // Tool pairing on every request; prefix stability everywhere except
        // the compactions themselves.
        h.server.assert_invariants();

        // Nothing lost: every tool call the model ever made is in the store,
        // followed by the compaction record and the compacted history.
        let id = last(&events)["session_id"].as_str().unwrap().to_owned();
        let stored = stored_messages(&h, &id).await;
        let stored_ids: BTreeSet<String> = stored
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(stored_ids, call_ids(&requests));
        let records = stored
            .iter()
            .filter(|m| m["role"] == "system")
            .filter(|m| {
                m["content"]
                    .as_str()
                    .unwrap()
                    .starts_with("[herald:compaction]")
            })
            .count();
        assert_eq!(records, compactions.len());

        // Resume continues from the compacted history, extending the last
        // request of the first run byte for byte.
        let (output, events) = h.run_json(wire, &["--resume", &id], "one more thing").await;
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(events[0]["resumed"], true);
        let all = h.server.requests();
        let resumed = all[requests.len()..]
            .iter()
            .map(|r| r.view().unwrap())
            .find(|v| !is_summary_request(v))
            .unwrap();
        assert!(has_summary(&resumed));
        assert_eq!(resumed.system, first_view.system);
        assert!(resumed.messages.len() < stored.len());
        h.server.assert_invariants();
    }
}

/// Builds a long stored conversation with compression off, then resumes it
/// with a window so small that compaction is due before the first request.
async fn long_session(wire: Wire, calls: Arc<AtomicUsize>) -> (Harness, String, u64) {
    let fixed = fixed_tokens(wire).await;
    let h = harness(reader(4, calls)).await;
    h.config("[compression]\nenabled = false\n");
    let (output, events) = h.run_json(wire, &[], TASK).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(of_type(&events, "compaction").is_empty());
    let id = last(&events)["session_id"].as_str().unwrap().to_owned();
    (h, id, fixed)
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_summary_call_drops_nothing() {
    let faults = [
        ("auth", Fault::status(401)),
        ("network", Fault::AbortStream),
    ];
    for (name, fault) in faults {
        let calls = Arc::new(AtomicUsize::new(0));
        let (h, id, fixed) = long_session(Wire::OpenAi, calls).await;
        let run1 = h.server.requests();
        h.config(&format!(
            "{}[network]\nmax_retries = 1\n",
            small_window(fixed, 1_000)
        ));
        // Compaction is due before the first request: the memory flush
        // goes first, then the summary request. Both fail.
        h.server.inject(fault.clone());
        h.server.inject(fault);
        let (output, events) = h
            .run_json(Wire::OpenAi, &["--resume", &id], "next step")
            .await;
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        assert_eq!(last(&events)["final_response"], "all read");
        assert!(of_type(&events, "compaction").is_empty(), "{name}");
        let flushes = of_type(&events, "memory.flush");
        assert_eq!(flushes.len(), 1, "{name}: {events:?}");
        assert_eq!(flushes[0]["status"], "failed", "{name}");
        assert_eq!(flushes[0]["requests"], 0, "{name}");
        let warnings: Vec<_> = of_type(&events, "error")
            .into_iter()
            .filter(|e| e["fatal"] == false)
            .collect();
        assert!(
            warnings.iter().any(|w| w["message"]
                .as_str()
                .unwrap()
                .contains("context compaction skipped")),
            "{name}: {events:?}"
        );

        // The summary request failed; the next request carries the whole
        // history (every earlier tool call) plus the new input, and no
        // trace of the flush (it got no reply).
        let all = h.server.requests();
        let flush = all[run1.len()].view().unwrap();
        assert!(
            flush
                .last()
                .unwrap()
                .text
                .starts_with("[herald] Memory flush"),
            "{name}: {:?}",
            flush.last()
        );
        let ask = &all[run1.len() + 1];
        assert!(is_summary_request(&ask.view().unwrap()), "{name}");
        let next = all[run1.len() + 2].view().unwrap();
        assert!(!has_summary(&next));
        assert!(
            next.messages
                .iter()
                .all(|m| !m.text.contains("Memory flush")),
            "{name}"
        );
        let earlier = call_ids(&run1);
        let now = call_ids(&all[run1.len() + 2..run1.len() + 3]);
        assert!(earlier.is_subset(&now), "{name}: history was cut");
        assert_eq!(next.last().unwrap().text, "next step");
        h.server.assert_invariants();
        // The store has no compaction record, and no flush instruction
        // (it got no reply).
        let stored = stored_messages(&h, &id).await;
        assert!(stored.iter().all(|m| m["role"] != "system"), "{name}");
        assert!(
            stored.iter().all(|m| !m["content"]
                .as_str()
                .unwrap_or_default()
                .contains("Memory flush")),
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn context_length_error_compresses_and_retries() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (h, id, _) = long_session(Wire::OpenAi, calls).await;
    let run1 = h.server.requests().len();
    // Default compression (on, model window from the table): the provider
    // says the prompt is too long, herald compacts once and retries.
    h.config("");
    h.server.inject(Fault::Status {
        code: 400,
        retry_after_secs: None,
        body: "This model's maximum context length is 4096 tokens. However, your messages resulted in 9000 tokens.".into(),
    });
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--resume", &id], "next step")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "all read");
    assert_eq!(of_type(&events, "compaction").len(), 1);
    let all = h.server.requests();
    assert_eq!(all[run1].status, 400);
    assert!(is_summary_request(&all[run1 + 1].view().unwrap()));
    let retried = all[run1 + 2].view().unwrap();
    assert!(has_summary(&retried));
    assert_eq!(check_pairing(&retried), Vec::<String>::new());
    assert!(
        retried.messages.iter().any(|m| m.text == "next step"),
        "the new input is kept"
    );
    assert!(retried.messages.len() < all[run1].view().unwrap().messages.len());
    h.server.assert_invariants();

    // With compression off the same error ends the run and names the cause.
    h.config("[compression]\nenabled = false\n");
    h.server.inject(Fault::Status {
        code: 400,
        retry_after_secs: None,
        body: "prompt is too long: 210000 tokens > 200000 maximum".into(),
    });
    let (output, events) = h.run_json(Wire::OpenAi, &["--resume", &id], "again").await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(of_type(&events, "compaction").is_empty());
    assert!(
        of_type(&events, "error")
            .iter()
            .any(|e| e["message"].as_str().unwrap().contains("context too long"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_compress_in_the_interactive_loop() {
    let calls = Arc::new(AtomicUsize::new(0));
    let h = harness(reader(2, calls)).await;
    h.config("[compression]\nprotect_first_n = 1\nprotect_last_n = 2\n");
    let mut cmd = h.command(Wire::OpenAi);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(format!("{TASK}\n/compress\n/exit\n").as_bytes())
            .await
            .unwrap();
    }
    let output = child.wait_with_output().await.unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains("compacted: ~") && err.contains("6 messages summarised"),
        "{err}"
    );
    let requests = h.server.requests();
    let ask = requests.last().unwrap().view().unwrap();
    assert!(is_summary_request(&ask));
    h.server.assert_invariants();

    // The compacted history is what the next turn (here: a resume) sends.
    let listed = h
        .bare_command()
        .args(["sessions", "list", "--json"])
        .output()
        .await
        .unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let id = listed[0]["id"].as_str().unwrap().to_owned();
    let (output, _) = h.run_json(Wire::OpenAi, &["--resume", &id], "thanks").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let next = h.server.requests().last().unwrap().view().unwrap();
    assert!(has_summary(&next));
    // system, task, summary, the final answer, the todo list, the new input
    assert_eq!(next.messages.len(), 6, "{:?}", next.messages);
    h.server.assert_invariants();
}

/// `reader` whose summary requests always fail: the model answers them
/// with no text (a failed summary, like any provider error).
fn reader_without_summaries(reads: usize, calls: Arc<AtomicUsize>) -> Script {
    Script::new().responder(move |view| {
        if is_summary_request(view) {
            return Reply::text("");
        }
        if is_flush_request(view) {
            return Reply::text("DONE");
        }
        match calls.fetch_add(1, Ordering::SeqCst) {
            n if n < reads => Reply::tool("read_file", json!({"path": "big.txt"})),
            _ => Reply::text("all read"),
        }
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_summaries_back_off_doubling_the_wait() {
    let fixed = fixed_tokens(Wire::OpenAi).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let h = harness(reader_without_summaries(18, calls)).await;
    h.config(&small_window(fixed, 1_000));
    let (output, events) = h.run_json(Wire::OpenAi, &[], TASK).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "all read");
    assert!(of_type(&events, "compaction").is_empty());

    // Model requests (not summaries, not flushes) before each summary attempt.
    let mut turns = 0;
    let mut attempts_at = Vec::new();
    for r in h.server.requests() {
        let view = r.view().unwrap();
        if is_summary_request(&view) {
            attempts_at.push(turns);
        } else if !is_flush_request(&view) {
            turns += 1;
        }
    }
    assert_eq!(turns, 19, "18 reads and the answer");
    // Compaction is due from the second request on; without backoff every
    // request would be preceded by an attempt. With it the waits double.
    assert!(attempts_at.len() >= 3, "{attempts_at:?}");
    let gaps: Vec<usize> = attempts_at.windows(2).map(|w| w[1] - w[0]).collect();
    let doubling: Vec<usize> = (0..gaps.len()).map(|i| 2 << i).collect();
    assert_eq!(gaps, doubling, "attempts before requests {attempts_at:?}");
    // Each failure is reported, none ends the run.
    let skipped = of_type(&events, "error")
        .into_iter()
        .filter(|e| {
            e["fatal"] == false
                && e["message"]
                    .as_str()
                    .unwrap()
                    .contains("context compaction skipped")
        })
        .count();
    assert_eq!(skipped, attempts_at.len());
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn compression_model_writes_the_summaries() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let fixed = fixed_tokens(wire).await;
        let h = harness(reader(6, Arc::default())).await;
        h.config(&format!(
            "{}model = \"cheap-summarizer\"\n",
            small_window(fixed, 4_000)
        ));
        let (output, events) = h.run_json(wire, &[], TASK).await;
        assert!(output.status.success(), "{wire:?}: {}", stderr(&output));
        assert!(!of_type(&events, "compaction").is_empty(), "{wire:?}");
        let requests = h.server.requests();
        let (summaries, others): (Vec<_>, Vec<_>) = requests
            .iter()
            .partition(|r| is_summary_request(&r.view().unwrap()));
        assert!(!summaries.is_empty(), "{wire:?}");
        for r in &summaries {
            assert_eq!(r.body["model"], "cheap-summarizer", "{wire:?}");
        }
        for r in &others {
            assert_ne!(r.body["model"], "cheap-summarizer", "{wire:?}");
            assert!(r.body["model"].is_string(), "{wire:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fixed_prompt_over_half_the_window_is_not_compacted_and_said_once() {
    let fixed = fixed_tokens(Wire::OpenAi).await;
    let h = harness(reader(4, Arc::default())).await;
    // The fixed prompt is two thirds of the window: compaction is due from
    // the first request, but could never free enough room.
    h.config(&format!(
        "[compression]\nthreshold = 0.5\ncontext_window = {}\n",
        fixed * 3 / 2
    ));
    let (output, events) = h.run_json(Wire::OpenAi, &[], TASK).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "all read");
    assert!(of_type(&events, "compaction").is_empty());
    let said: Vec<_> = of_type(&events, "error")
        .into_iter()
        .filter(|e| e["message"].as_str().unwrap().contains("over half"))
        .collect();
    assert_eq!(said.len(), 1, "{events:?}");
    assert_eq!(said[0]["fatal"], false);
    let window = (fixed * 3 / 2).to_string();
    assert!(said[0]["message"].as_str().unwrap().contains(&window));
    // No summary and no memory flush was asked for.
    for r in h.server.requests() {
        let view = r.view().unwrap();
        assert!(!is_summary_request(&view) && !is_flush_request(&view));
    }
    assert_eq!(h.server.requests().len(), 6, "todo, 4 reads, the answer");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_over_the_window_is_an_error_before_any_request() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let h = harness(reader(2, Arc::default())).await;
        // 1,000 tokens: less than the system prompt and tool schemas.
        h.config("[compression]\ncontext_window = 1000\n");
        let (output, events) = h.run_json(wire, &[], TASK).await;
        assert_eq!(
            output.status.code(),
            Some(1),
            "{wire:?}: {}",
            stderr(&output)
        );
        assert!(
            h.server.requests().is_empty(),
            "{wire:?}: a request was sent"
        );
        let errors = of_type(&events, "error");
        assert!(
            errors.iter().any(|e| {
                let m = e["message"].as_str().unwrap();
                m.contains("context window of 1000 tokens") && m.contains("nothing was sent")
            }),
            "{wire:?}: {events:?}"
        );
        // With compression off the window is still known and still checked.
        h.config("[compression]\nenabled = false\ncontext_window = 1000\n");
        let (output, _) = h.run_json(wire, &[], TASK).await;
        assert_eq!(output.status.code(), Some(1), "{wire:?}");
        assert!(h.server.requests().is_empty(), "{wire:?}");
    }
}
