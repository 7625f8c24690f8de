//! The memory flush, session summaries and `session_search` since/until
//!, end to end: the real binary against the scripted
//! server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Harness, Wire, last, of_type, stderr};
use herald_testkit::{
    Fault, RecordedRequest, Reply, RequestView, Script, ScriptedCall, check_prefix,
    wait_until_async,
};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

const FLUSH: &str = "[herald] Memory flush";
const TASK: &str = "read big.txt six times and report";
const SUMMARY: &str = "## Goal\n- read big.txt\n## Constraints\n- none\n## Completed actions\n- reads\n## Current state\n- reading\n## Decisions\n- none\n## Files\n- big.txt\n## Remaining work\n- more reads";

fn is_summary_request(view: &RequestView) -> bool {
    view.last()
        .is_some_and(|m| m.text.contains("Request for context compaction"))
}

/// The request that opens a flush: its last message is the instruction.
fn opens_flush(view: &RequestView) -> bool {
    view.last().is_some_and(|m| m.text.contains(FLUSH))
}

/// A request inside a flush after its first reply.
fn continues_flush(view: &RequestView) -> bool {
    !opens_flush(view) && view.messages.iter().any(|m| m.text.contains(FLUSH))
}

fn memory_add(target: &str, content: &str) -> Reply {
    Reply::tool(
        "memory",
        json!({"action": "add", "target": target, "content": content}),
    )
}

fn views(requests: &[RecordedRequest]) -> Vec<RequestView> {
    requests.iter().map(|r| r.view().unwrap()).collect()
}

async fn latest_session(h: &Harness) -> Value {
    h.cli_json(&["sessions", "list", "--json"]).await[0].clone()
}

/// The message count of the newest stored session, if there is one.
async fn latest_message_count(h: &Harness) -> Option<u64> {
    h.cli_json(&["sessions", "list", "--json"]).await[0]["message_count"].as_u64()
}

async fn stored_events(h: &Harness, id: &str) -> Vec<Value> {
    let output = h
        .bare_command()
        .args(["sessions", "show", id, "--events", "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    common::parse_events(&output.stdout)
}

fn memory_file(h: &Harness, name: &str) -> String {
    std::fs::read_to_string(h.home.path().join("memories").join(name)).unwrap_or_default()
}

// ----- before a compaction ------------------------------------------------

/// Prompt tokens (body bytes / 4) of a one-message request: the fixed
/// system + tools part.
async fn fixed_tokens(wire: Wire) -> u64 {
    let h = Harness::new(Script::new().responder(|_| Reply::text("hi"))).await;
    let (output, _) = h.run_json(wire, &[], "hi").await;
    assert!(output.status.success(), "{}", stderr(&output));
    (h.server.requests()[0].body.to_string().len() / 4) as u64
}

/// Reads big.txt six times (compaction is due along the way), answers a
/// flush with one `memory add` then DONE, a summary request with a summary.
fn compacting_reader(calls: Arc<AtomicUsize>, flushes: Arc<AtomicUsize>) -> Script {
    Script::new().responder(move |view| {
        if is_summary_request(view) {
            return Reply::text(SUMMARY);
        }
        if opens_flush(view) {
            let n = flushes.fetch_add(1, Ordering::SeqCst);
            return memory_add(
                "memory",
                &format!("big.txt holds 100 numbered lines (note {n})"),
            );
        }
        if continues_flush(view) {
            return Reply::text("DONE");
        }
        match calls.fetch_add(1, Ordering::SeqCst) {
            n if n < 6 => Reply::tool("read_file", json!({"path": "big.txt"})),
            _ => Reply::text("all read"),
        }
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compaction_is_preceded_by_a_flush_whose_memory_call_is_saved() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let fixed = fixed_tokens(wire).await;
        let (calls, flushes) = (Arc::default(), Arc::default());
        let h = Harness::new(compacting_reader(calls, Arc::clone(&flushes))).await;
        let text: String = (0..100)
            .map(|i| format!("line {i:03} {}\n", "abcdefghij".repeat(5)))
            .collect();
        std::fs::write(h.work.path().join("big.txt"), text).unwrap();
        h.config(&format!(
            "[compression]\nthreshold = 0.5\ncontext_window = {}\n",
            2 * (fixed + 4_000)
        ));
        let (output, events) = h.run_json(wire, &[], TASK).await;
        assert!(output.status.success(), "{wire:?}: {}", stderr(&output));
        assert_eq!(last(&events)["type"], "run.completed");
        assert_eq!(last(&events)["final_response"], "all read");

        let compactions = of_type(&events, "compaction");
        let flush_events = of_type(&events, "memory.flush");
        assert!(!compactions.is_empty(), "{wire:?}: no compaction");
        assert_eq!(flush_events.len(), compactions.len(), "{wire:?}");
        for f in &flush_events {
            assert_eq!(f["reason"], "compaction");
            assert_eq!(f["status"], "done");
            assert_eq!(
                (f["requests"].as_u64(), f["saved"].as_u64()),
                (Some(2), Some(1))
            );
            assert_eq!(f["refused"], 0);
        }

        // Order: ..., the last regular request, the flush (opening request
        // and the one after its memory call), the summary request, the
        // compacted conversation.
        let requests = h.server.requests();
        let views = views(&requests);
        let summaries: Vec<usize> = (0..views.len())
            .filter(|&i| is_summary_request(&views[i]))
            .collect();
        assert_eq!(summaries.len(), compactions.len());
        for &s in &summaries {
            let (open, after_call, before) = (&views[s - 2], &views[s - 1], &requests[s - 3]);
            assert!(opens_flush(open), "{wire:?}: {:?}", open.last());
            assert!(continues_flush(after_call), "{wire:?}");
            // The same system prompt and tool list (the cached prefix), tool
            // calls allowed, and the conversation before it extended.
            assert_eq!(open.system, views[0].system);
            assert_eq!(requests[s - 2].body["tools"], requests[0].body["tools"]);
            assert!(!open.tool_choice_none);
            assert_eq!(
                check_prefix(&before.body, &requests[s - 2].body),
                Vec::<String>::new()
            );
            // The memory call's result came back to the model.
            let results: Vec<&(String, String)> = after_call
                .messages
                .iter()
                .flat_map(|m| &m.tool_results)
                .collect();
            let (_, result) = results.last().unwrap();
            assert!(!result.contains("refused"), "{result}");
            // The compacted conversation does not carry the flush.
            let next = &views[s + 1];
            assert!(next.messages.iter().all(|m| !m.text.contains(FLUSH)));
            assert!(
                next.messages
                    .iter()
                    .any(|m| m.text.contains("[herald] Summary of earlier turns"))
            );
        }
        // Each request got one usage event (the flush's included), and the
        // flush's opening request was served mostly from the cache.
        let usage = of_type(&events, "usage");
        assert_eq!(usage.len(), requests.len(), "{wire:?}");
        let open = &usage[summaries[0] - 2];
        assert!(
            open["cached_tokens"].as_u64().unwrap() * 2 > open["input_tokens"].as_u64().unwrap(),
            "{wire:?}: {open}"
        );
        // Usage rows: the session's totals hold every request's tokens.
        let id = last(&events)["session_id"].as_str().unwrap().to_owned();
        let shown = h.cli_json(&["sessions", "show", &id, "--json"]).await;
        let output_sum: u64 = usage
            .iter()
            .map(|u| u["output_tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(
            shown["session"]["output_tokens"].as_u64().unwrap(),
            output_sum
        );
        // The flush messages are stored (before the compaction record).
        let stored = shown["messages"].as_array().unwrap();
        let flush_at = stored
            .iter()
            .position(|m| m["content"].as_str().unwrap_or_default().starts_with(FLUSH))
            .unwrap();
        let record_at = stored
            .iter()
            .position(|m| {
                m["content"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("[herald:compaction]")
            })
            .unwrap();
        assert!(flush_at < record_at);
        assert_eq!(stored[flush_at + 1]["tool_calls"][0]["name"], "memory");
        // What the model saved is in MEMORY.md.
        let memory = memory_file(&h, "MEMORY.md");
        for n in 0..flushes.load(Ordering::SeqCst) {
            assert!(
                memory.contains(&format!("(note {n})")),
                "{wire:?}: {memory}"
            );
        }
        assert!(!memory.is_empty());
        h.server.assert_invariants();
    }
}

// ----- at the end of a session ---------------------------------------------

/// Answers prompts with `answer N`; a flush gets `first` then `then`.
fn ender(first: Reply, then: &'static str) -> Script {
    let n = AtomicUsize::new(0);
    Script::new().responder(move |view| {
        if opens_flush(view) {
            first.clone()
        } else if continues_flush(view) {
            Reply::text(then)
        } else {
            Reply::text(format!("answer {}", n.fetch_add(1, Ordering::SeqCst) + 1))
        }
    })
}

const END_SUMMARY: &str = "We tuned the narwhal cache and wrote the okapi report.";

fn end_reply() -> &'static str {
    "DONE\n\nSummary: We tuned the narwhal cache and wrote the okapi report."
}

/// The interactive line loop with stdin piped.
struct Repl {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
}

impl Repl {
    fn start(h: &Harness) -> Self {
        let mut cmd = h.command(Wire::OpenAi);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        Self { child, stdin }
    }

    async fn send(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        self.stdin.flush().await.unwrap();
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id().unwrap() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
    }

    async fn finish(self) -> std::process::Output {
        let Self { child, stdin } = self;
        drop(stdin);
        tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("herald exits")
            .unwrap()
    }
}

/// Waits (at most 20 s) until the server got `n` requests.
async fn requests_reach(h: &Harness, n: usize) {
    let t0 = Instant::now();
    while h.server.request_count() < n {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{} requests",
            h.server.request_count()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs `prompts` in the line loop and leaves with `/exit`.
async fn interactive(h: &Harness, prompts: &[&str]) -> std::process::Output {
    let mut repl = Repl::start(h);
    for prompt in prompts {
        repl.send(prompt).await;
    }
    repl.send("/exit").await;
    let output = repl.finish().await;
    assert!(output.status.success(), "{}", stderr(&output));
    output
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_session_flushes_at_its_end_and_keeps_the_summary() {
    let h = Harness::new(ender(
        memory_add("user", "Prefers tabs over spaces"),
        end_reply(),
    ))
    .await;
    h.config("[memory]\nflush_min_turns = 3\n");
    interactive(&h, &["first question", "second question", "third question"]).await;

    let requests = h.server.requests();
    let views = views(&requests);
    assert_eq!(views.len(), 5, "three turns and a flush of two requests");
    assert!(
        views[..3]
            .iter()
            .all(|v| !v.messages.iter().any(|m| m.text.contains(FLUSH)))
    );
    let open = &views[3];
    assert!(opens_flush(open));
    assert!(
        open.last().unwrap().text.contains("Summary:"),
        "asks for the summary"
    );
    assert!(open.last().unwrap().text.contains("target=user"));
    // It extends the last turn's request by that turn's answer.
    assert_eq!(
        check_prefix(&requests[2].body, &requests[3].body),
        Vec::<String>::new()
    );
    assert_eq!(open.messages[open.messages.len() - 2].text, "answer 3");
    assert!(continues_flush(&views[4]));
    assert!(memory_file(&h, "USER.md").contains("Prefers tabs over spaces"));

    // The summary is stored and found by search, also by words only it holds
    // among the session's title and summary.
    let session = latest_session(&h).await;
    let id = session["id"].as_str().unwrap().to_owned();
    let shown = h.cli_json(&["sessions", "show", &id, "--json"]).await;
    assert_eq!(shown["session"]["summary"], END_SUMMARY);
    let events = stored_events(&h, &id).await;
    let flush = of_type(&events, "memory.flush");
    assert_eq!(flush.len(), 1);
    assert_eq!(
        (
            flush[0]["reason"].as_str(),
            flush[0]["status"].as_str(),
            flush[0]["saved"].as_u64()
        ),
        (Some("session_end"), Some("done"), Some(1))
    );
    // The flush's replies are stored, not shown as answers.
    let answers: Vec<&str> = of_type(&events, "assistant.message")
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(answers, ["answer 1", "answer 2", "answer 3"]);
    let found = h.cli_json(&["sessions", "search", "okapi", "--json"]).await;
    assert_eq!(found[0]["session"]["id"], id.as_str());
    assert_eq!(found[0]["summary_match"], true);
    assert_eq!(found[0]["session"]["summary"], END_SUMMARY);

    // Resuming continues after the flush (its messages are part of the
    // conversation); one more turn is below the minimum: no new flush.
    let (output, _) = h
        .run_json(Wire::OpenAi, &["--resume", &id], "fourth question")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let all = h.server.requests();
    assert_eq!(all.len(), 6);
    let resumed = all[5].view().unwrap();
    assert!(resumed.messages.iter().any(|m| m.text.contains(FLUSH)));
    assert_eq!(
        check_prefix(&all[4].body, &all[5].body),
        Vec::<String>::new()
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn no_end_flush_below_the_minimum_or_with_memory_disabled() {
    // Two turns with a minimum of three.
    let h = Harness::new(ender(memory_add("memory", "never"), end_reply())).await;
    h.config("[memory]\nflush_min_turns = 3\n");
    interactive(&h, &["one", "two"]).await;
    assert_eq!(h.server.request_count(), 2);
    let session = latest_session(&h).await;
    assert_eq!(session["summary"], Value::Null);
    let events = stored_events(&h, session["id"].as_str().unwrap()).await;
    assert!(of_type(&events, "memory.flush").is_empty());
    h.server.assert_invariants();

    // Enough turns, but MEMORY.md is disabled.
    let h = Harness::new(ender(memory_add("memory", "never"), end_reply())).await;
    h.config("[memory]\nflush_min_turns = 3\nmemory_enabled = false\n");
    interactive(&h, &["one", "two", "three"]).await;
    assert_eq!(h.server.request_count(), 3);
    assert!(!h.home.path().join("memories").join("MEMORY.md").exists());
    h.server.assert_invariants();

    // flush_min_turns = 0: never at the end.
    let h = Harness::new(ender(memory_add("memory", "never"), end_reply())).await;
    h.config("[memory]\nflush_min_turns = 0\n");
    let (output, events) = h.run_json(Wire::OpenAi, &[], "one").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(of_type(&events, "memory.flush").is_empty());
    assert_eq!(h.server.request_count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_one_shot_run_flushes_before_run_completed_and_refuses_other_tools() {
    let first = Reply::tools(vec![
        ScriptedCall::new("terminal", json!({"command": "touch flushed.txt"})),
        ScriptedCall::new(
            "memory",
            json!({"action": "add", "target": "memory", "content": "The project builds with make"}),
        ),
    ]);
    let h = Harness::new(ender(first, end_reply())).await;
    h.config("[memory]\nflush_min_turns = 1\n");
    let (output, events) = h.run_json(Wire::OpenAi, &["--yolo"], "build it").await;
    assert!(output.status.success(), "{}", stderr(&output));
    // run.completed stays last and carries the turn's answer.
    let done = last(&events);
    assert_eq!(done["type"], "run.completed");
    assert_eq!(done["final_response"], "answer 1");
    let flush = of_type(&events, "memory.flush");
    assert_eq!(flush.len(), 1);
    assert_eq!(
        (flush[0]["saved"].as_u64(), flush[0]["refused"].as_u64()),
        (Some(1), Some(1))
    );
    // The terminal call never ran (even with --yolo); its result says why.
    assert!(!h.work.path().join("flushed.txt").exists());
    let requests = h.server.requests();
    assert_eq!(requests.len(), 3);
    let after = requests[2].view().unwrap();
    let results: Vec<&(String, String)> = after
        .messages
        .iter()
        .flat_map(|m| &m.tool_results)
        .collect();
    assert_eq!(results.len(), 2);
    assert!(
        results[0].1.starts_with("refused:") && results[0].1.contains("`terminal`"),
        "{}",
        results[0].1
    );
    assert!(!results[1].1.contains("refused"), "{}", results[1].1);
    assert!(memory_file(&h, "MEMORY.md").contains("The project builds with make"));
    let failed: Vec<_> = of_type(&events, "tool.completed")
        .into_iter()
        .filter(|e| e["status"] == "error")
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["name"], "terminal");
    // The summary of a one-shot session is stored too.
    let id = done["session_id"].as_str().unwrap();
    let shown = h.cli_json(&["sessions", "show", id, "--json"]).await;
    assert_eq!(shown["session"]["summary"], END_SUMMARY);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_memory_flush_route_runs_the_flush_on_its_model() {
    let first = Reply::tool(
        "memory",
        json!({"action": "add", "target": "memory", "content": "The project builds with make"}),
    );
    let h = Harness::new(ender(first, end_reply())).await;
    h.config(
        "[memory]\nflush_min_turns = 1\n\n[[routing.rules]]\nrole = \"memory_flush\"\nmodel = \"flush-model\"\n",
    );
    let (output, events) = h.run_json(Wire::OpenAi, &[], "build it").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "answer 1");
    let models: Vec<String> = h
        .server
        .requests()
        .iter()
        .map(|r| r.view().unwrap().model)
        .collect();
    assert_eq!(models.len(), 3, "{models:?}");
    assert_ne!(
        models[0], "flush-model",
        "the turn runs on the session's model"
    );
    assert_eq!(models[1..], ["flush-model", "flush-model"], "the flush");
    let routed = of_type(&events, "model.routed");
    assert!(
        routed
            .iter()
            .any(|e| e["role"] == "memory_flush" && e["model"] == "flush-model"),
        "{routed:?}"
    );
    assert!(memory_file(&h, "MEMORY.md").contains("The project builds with make"));
    h.server.assert_invariants();
}

// ----- leaving quickly -------------------------------------------------------

/// What the scripted model saves when a flush asks it to.
const FACT: &str = "The okapi build runs with make";

/// A session whose flush request never gets an answer (an idle stream).
async fn stuck_flush(config: &str) -> (Harness, Repl) {
    let h = Harness::new(ender(memory_add("memory", FACT), end_reply())).await;
    h.config(&format!("[memory]\nflush_min_turns = 1\n{config}"));
    let mut repl = Repl::start(&h);
    repl.send("one").await;
    requests_reach(&h, 1).await;
    // Let the turn finish (its reply is stored) before the idle stream is
    // queued for the flush.
    wait_until_async(
        "the first reply to be stored",
        Duration::from_secs(20),
        async || latest_message_count(&h).await >= Some(2),
    )
    .await;
    h.server.inject(Fault::IdleStream);
    repl.send("/exit").await;
    requests_reach(&h, 2).await;
    (h, repl)
}

async fn flush_status(h: &Harness) -> String {
    let session = latest_session(h).await;
    let events = stored_events(h, session["id"].as_str().unwrap()).await;
    let flush = of_type(&events, "memory.flush");
    assert_eq!(flush.len(), 1, "{events:?}");
    flush[0]["status"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_end_flush_stops_at_its_timeout() {
    let (h, repl) = stuck_flush("flush_timeout_seconds = 1\n").await;
    let t0 = Instant::now();
    let output = repl.finish().await;
    let took = t0.elapsed();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert_eq!(flush_status(&h).await, "timeout");
    h.server
        .skip_invariants("the flush request was cut off by the client on purpose");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_and_ctrl_c_end_the_flush_at_once() {
    use nix::sys::signal::Signal;
    for (signal, code) in [(Signal::SIGTERM, Some(143)), (Signal::SIGINT, Some(0))] {
        let (h, repl) = stuck_flush("flush_timeout_seconds = 120\n").await;
        let t0 = Instant::now();
        repl.signal(signal);
        let output = repl.finish().await;
        let took = t0.elapsed();
        assert!(took < Duration::from_secs(5), "{signal:?}: {took:?}");
        assert_eq!(
            output.status.code(),
            code,
            "{signal:?}: {}",
            stderr(&output)
        );
        assert_eq!(flush_status(&h).await, "interrupted", "{signal:?}");
        h.server
            .skip_invariants("the flush request was cut off by the client on purpose");
    }
}

// ----- session_search since/until and summaries ------------------------------

/// Session A (words: walrus) ends with a flush summary; session B calls
/// `session_search` with each of `calls` in turn, then answers.
async fn search_sessions(calls: Vec<Value>) -> (Harness, Vec<String>, String) {
    let n_calls = calls.len();
    let step = AtomicUsize::new(0);
    let script = Script::new().responder(move |view| {
        if view.conversation.contains("walrus") {
            return if opens_flush(view) {
                Reply::text("DONE\nSummary: Counted the capybara herd for the zoo.")
            } else {
                Reply::text("noted the walrus")
            };
        }
        let at = step.fetch_add(1, Ordering::SeqCst);
        match calls.get(at) {
            Some(args) => Reply::tool("session_search", args.clone()),
            None => Reply::text("searched"),
        }
    });
    let h = Harness::new(script).await;
    h.config("[memory]\nflush_min_turns = 1\n");
    let (output, events) = h.run_json(Wire::OpenAi, &[], "walrus notes").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let a = last(&events)["session_id"].as_str().unwrap().to_owned();
    // Session B is too short for the flush at its end.
    h.config("");
    let (output, events) = h.run_json(Wire::OpenAi, &[], "look things up").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "searched");
    let requests = h.requests_of("look things up");
    assert_eq!(requests.len(), n_calls + 1);
    let last_view = requests.last().unwrap().view().unwrap();
    let results = last_view
        .messages
        .iter()
        .flat_map(|m| m.tool_results.iter().map(|(_, r)| r.clone()))
        .collect();
    (h, results, a)
}

#[tokio::test(flavor = "multi_thread")]
async fn session_search_filters_by_period_and_finds_summaries() {
    let (h, results, a) = search_sessions(vec![
        json!({"query": "capybara"}),
        json!({"query": "walrus", "since": "1h"}),
        json!({"query": "walrus", "until": "2000-01-01"}),
        json!({"since": "7d"}),
        json!({"query": "walrus", "since": "yesterday"}),
        json!({"query": "walrus", "since": "1d", "until": "2d"}),
        json!({"session_id": "x", "since": "1d"}),
    ])
    .await;
    let parsed = |i: usize| -> Value { serde_json::from_str(&results[i]).unwrap() };
    // Found by its summary; the result shows it.
    let by_summary = parsed(0);
    assert_eq!(by_summary["results"][0]["session_id"], a.as_str());
    assert_eq!(by_summary["results"][0]["matched_summary"], true);
    assert_eq!(
        by_summary["results"][0]["summary"],
        "Counted the capybara herd for the zoo."
    );
    // Active in the last hour: found; started before 2000: nothing.
    assert_eq!(parsed(1)["results"][0]["session_id"], a.as_str());
    assert_eq!(parsed(2)["results"], json!([]));
    // Browsing with a period.
    assert_eq!(parsed(3)["sessions"][0]["session_id"], a.as_str());
    assert_eq!(
        parsed(3)["sessions"][0]["summary"],
        "Counted the capybara herd for the zoo."
    );
    // Bad values are tool errors naming the value and what to use.
    assert!(
        results[4].contains("since 'yesterday' is not a time") && results[4].contains("7d"),
        "{}",
        results[4]
    );
    assert!(results[5].contains("not before until"), "{}", results[5]);
    assert!(
        results[6].contains("leave them out when reading a session"),
        "{}",
        results[6]
    );
    // The failed calls changed nothing: the first session is as it was.
    let shown = h.cli_json(&["sessions", "show", &a, "--json"]).await;
    assert_eq!(
        shown["session"]["summary"],
        "Counted the capybara herd for the zoo."
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_search_takes_since_and_until() {
    let (h, _, a) = search_sessions(Vec::new()).await;
    let found = h
        .cli_json(&["sessions", "search", "walrus", "--since", "1h", "--json"])
        .await;
    assert_eq!(found.as_array().unwrap().len(), 1);
    assert_eq!(found[0]["session"]["id"], a.as_str());
    let found = h
        .cli_json(&[
            "sessions",
            "search",
            "walrus",
            "--until",
            "2000-01-01",
            "--json",
        ])
        .await;
    assert_eq!(found, json!([]));
    let found = h
        .cli_json(&["sessions", "search", "capybara", "--json"])
        .await;
    assert_eq!(found[0]["summary_match"], true);
    assert_eq!(
        found[0]["message"]["content"]
            .as_str()
            .map(|t| t.contains("capybara")),
        Some(true)
    );
    // A bad value: exit 2, the message says what to use, nothing printed.
    let output = h
        .bare_command()
        .args(["sessions", "search", "walrus", "--since", "last tuesday"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.contains("--since 'last tuesday' is not a time") && err.contains("7d"),
        "{err}"
    );
    assert!(output.stdout.is_empty());
    // Text output shows the summary.
    let output = h
        .bare_command()
        .args(["sessions", "search", "capybara"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("summary: Counted the capybara herd for the zoo."),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_end_flush_is_bounded_to_three_seconds_by_default() {
    let (h, repl) = stuck_flush("").await;
    let t0 = Instant::now();
    let output = repl.finish().await;
    let took = t0.elapsed();
    assert!(output.status.success(), "{}", stderr(&output));
    // 3 s, and at most the grace a tool that ignores the cancel gets.
    assert!(took < Duration::from_secs(7), "{took:?}");
    assert_eq!(flush_status(&h).await, "timeout");
    h.server
        .skip_invariants("the flush request was cut off by the client on purpose");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_says_it_is_saving_memory_and_esc_skips_it() {
    use herald_testkit::pty::keys;
    let wait = Duration::from_secs(20);
    let h = Harness::new(ender(memory_add("memory", "x"), end_reply())).await;
    // A long bound: only Esc can end the flush quickly.
    h.config("[memory]\nflush_min_turns = 1\nflush_timeout_seconds = 60\n");
    let pty = h.tui(&[], 30, 100);
    pty.wait_for(|s| s.contains("Ask herald"), wait).unwrap();
    pty.send_str("one\r");
    requests_reach(&h, 1).await;
    wait_until_async(
        "the first reply to be stored",
        Duration::from_secs(20),
        async || latest_message_count(&h).await >= Some(2),
    )
    .await;
    h.server.inject(Fault::IdleStream);
    pty.send(keys::CTRL_D);
    pty.wait_for(|s| s.contains("saving memory… (Esc to skip)"), wait)
        .unwrap_or_else(|err| panic!("no saving notice: {err}"));
    requests_reach(&h, 2).await;
    let t0 = Instant::now();
    pty.send(keys::ESC);
    let status = pty.wait_exit(wait).expect("herald exits after Esc");
    assert!(status.success(), "{status:?}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(flush_status(&h).await, "interrupted");
    h.server
        .skip_invariants("the flush request was cut off by the client on purpose");
}

// ----- owed flushes run at the next start -------------------------------------

/// The `memory.flush` events stored for session `id`: `(reason, status)`.
async fn flushes_of(h: &Harness, id: &str) -> Vec<(String, String)> {
    of_type(&stored_events(h, id).await, "memory.flush")
        .iter()
        .map(|f| {
            (
                f["reason"].as_str().unwrap().to_owned(),
                f["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A one-shot run of another task; this home's flush minimum stays at its
/// default (6 turns), so only flushes other sessions owe are made.
async fn another_run(h: &Harness, prompt: &str) {
    h.config("[memory]\nflush_timeout_seconds = 20\n");
    let (output, events) = h.run_json(Wire::OpenAi, &[], prompt).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["type"], "run.completed");
    assert!(of_type(&events, "memory.flush").is_empty(), "{events:?}");
}

/// The lines of this home's logs that contain `needle`.
fn log_lines(h: &Harness, needle: &str) -> Vec<String> {
    std::fs::read_dir(h.home.path().join("logs"))
        .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_else(|_| Vec::new())
        .iter()
        .filter_map(|path: &std::path::PathBuf| std::fs::read_to_string(path).ok())
        .flat_map(|text| {
            text.lines()
                .filter(|l| l.contains(needle))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_end_flush_that_timed_out_runs_at_the_next_start_and_only_once() {
    let (h, repl) = stuck_flush("flush_timeout_seconds = 1\n").await;
    let output = repl.finish().await;
    assert!(output.status.success(), "{}", stderr(&output));
    let first = latest_session(&h).await["id"].as_str().unwrap().to_owned();
    assert_eq!(
        flushes_of(&h, &first).await,
        [("session_end".to_owned(), "timeout".to_owned())]
    );
    assert!(!memory_file(&h, "MEMORY.md").contains(FACT));
    assert_eq!(h.requests_of("one").len(), 2);

    // The next start, in another session, makes the flush the first one owes.
    another_run(&h, "second task").await;
    assert!(
        memory_file(&h, "MEMORY.md").contains(FACT),
        "{}",
        memory_file(&h, "MEMORY.md")
    );
    assert_eq!(
        flushes_of(&h, &first).await,
        [
            ("session_end".to_owned(), "timeout".to_owned()),
            ("deferred".to_owned(), "done".to_owned())
        ]
    );
    let shown = h.cli_json(&["sessions", "show", &first, "--json"]).await;
    assert_eq!(shown["session"]["summary"], END_SUMMARY);
    // The request its end flush would have sent: the session's system
    // prompt and tools, its conversation extended by the instruction.
    let requests = h.requests_of("one");
    assert_eq!(
        requests.len(),
        4,
        "the turn, the stuck flush, the deferred flush of two requests"
    );
    let deferred = requests[2].view().unwrap();
    assert!(opens_flush(&deferred), "{:?}", deferred.last());
    assert!(deferred.last().unwrap().text.contains("ended earlier"));
    assert_eq!(requests[2].body["tools"], requests[0].body["tools"]);
    assert_eq!(
        check_prefix(&requests[0].body, &requests[2].body),
        Vec::<String>::new()
    );

    // Done is done: later starts do not flush that stretch again.
    another_run(&h, "third task").await;
    assert_eq!(h.requests_of("one").len(), 4);
    assert_eq!(flushes_of(&h, &first).await.len(), 2);
    h.server
        .skip_invariants("the stuck flush request was cut off by the client on purpose");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_process_killed_before_its_end_flush_leaves_it_for_the_next_start() {
    let h = Harness::new(ender(memory_add("memory", FACT), end_reply())).await;
    h.config("[memory]\nflush_min_turns = 1\n");
    let mut repl = Repl::start(&h);
    repl.send("one").await;
    requests_reach(&h, 1).await;
    wait_until_async(
        "the first reply to be stored",
        Duration::from_secs(20),
        async || latest_message_count(&h).await >= Some(2),
    )
    .await;
    // The owed flush is marked right after the turn's messages.
    tokio::time::sleep(Duration::from_millis(500)).await;
    repl.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = repl.finish().await;
    assert_eq!(h.server.request_count(), 1, "no flush before the kill");
    let first = latest_session(&h).await["id"].as_str().unwrap().to_owned();
    assert!(flushes_of(&h, &first).await.is_empty());

    another_run(&h, "second task").await;
    assert!(memory_file(&h, "MEMORY.md").contains(FACT));
    assert_eq!(
        flushes_of(&h, &first).await,
        [("deferred".to_owned(), "done".to_owned())]
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_another_live_process_holds_is_not_flushed_from_outside() {
    let h = Harness::new(ender(memory_add("memory", FACT), end_reply())).await;
    h.config("[memory]\nflush_min_turns = 1\n");
    let mut repl = Repl::start(&h);
    repl.send("one").await;
    requests_reach(&h, 1).await;
    wait_until_async(
        "the first reply to be stored",
        Duration::from_secs(20),
        async || latest_message_count(&h).await >= Some(2),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The session owes its flush, but its process still runs it.
    another_run(&h, "second task").await;
    assert_eq!(h.requests_of("one").len(), 1, "flushed from outside");
    assert!(!memory_file(&h, "MEMORY.md").contains(FACT));
    // It was owed and seen, and left for its owner.
    let left = log_lines(&h, "deferred memory flush left for later");
    assert!(
        left.iter()
            .any(|l| l.contains("is in use by herald process")),
        "{left:?}"
    );
    // Its own end flush does it.
    h.config("[memory]\nflush_min_turns = 1\n");
    repl.send("/exit").await;
    let output = repl.finish().await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(memory_file(&h, "MEMORY.md").contains(FACT));
    let first = h
        .cli_json(&["sessions", "list", "--json"])
        .await
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["title"].as_str().is_some_and(|t| t.contains("one")))
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .unwrap();
    assert_eq!(
        flushes_of(&h, &first).await,
        [("session_end".to_owned(), "done".to_owned())]
    );
    h.server.assert_invariants();
}
