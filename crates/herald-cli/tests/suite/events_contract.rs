//! The event contract through the real binary: `run.completed` is
//! the last line of every run, every event of a run is stored with its
//! session under increasing ids and shown by `herald sessions show ID
//! --events`, `execute_code`'s inner calls are readable rows, and the log
//! under `$HERALD_HOME/logs/` explains what the event stream cannot.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Harness, Wire, last, of_type, parse_events, stderr};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

/// A child that stays busy long after its parent's turn ends.
fn napping_child(needle: &str) -> (String, Vec<Reply>) {
    (
        needle.to_owned(),
        vec![
            Reply::tool("terminal", json!({"command": "sleep 30"})),
            Reply::text("unreachable"),
        ],
    )
}

/// The types of `events`, in order.
fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// Asserts `run.completed` is the one and last line, and that every
/// subagent that started also completed before it.
fn assert_run_completed_last(events: &[Value]) {
    let kinds = types(events);
    assert_eq!(kinds.last(), Some(&"run.completed"), "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "run.completed").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(
        of_type(events, "subagent.started").len(),
        of_type(events, "subagent.completed").len(),
        "every started subagent reports before run.completed: {kinds:?}"
    );
    // The root's usage and the whole tree's, with every field; the tree
    // holds at least the root's requests.
    let end = events.last().unwrap();
    for totals in ["usage", "tree_usage"] {
        for field in ["input", "output", "cached", "cache_creation", "requests"] {
            assert!(end[totals][field].is_u64(), "{totals}.{field}: {end}");
        }
        assert!(
            end[totals]["cost_usd"].is_f64() || end[totals]["cost_usd"].is_null(),
            "{end}"
        );
    }
    assert!(end["tree_usage"]["requests"].as_u64() >= end["usage"]["requests"].as_u64());
}

/// `herald sessions show ID --events [--json]` output.
async fn show_events(h: &Harness, session: &str, json: bool) -> String {
    let mut cmd = h.command(Wire::OpenAi);
    cmd.args(["sessions", "show", session, "--events"]);
    if json {
        cmd.arg("--json");
    }
    let output = cmd.output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    String::from_utf8(output.stdout).unwrap()
}

/// Everything written under `$HERALD_HOME/logs/`.
fn read_logs(h: &Harness) -> String {
    let dir = h.home.path().join("logs");
    let mut text = String::new();
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no log directory {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("herald.") && name.ends_with(".log"),
            "unexpected file in logs/: {name}"
        );
        text.push_str(&std::fs::read_to_string(&path).unwrap());
    }
    text
}

#[tokio::test(flavor = "multi_thread")]
async fn run_completed_is_last_when_the_iteration_limit_hits_with_a_background_agent_running() {
    let (child, child_replies) = napping_child("capped child");
    let h = Harness::new(
        Script::new()
            .conversation(
                "work until the cap",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "capped child: nap"}),
                    ),
                    Reply::text("summary at the cap"),
                ],
            )
            .conversation(&child, child_replies),
    )
    .await;
    let t0 = Instant::now();
    let (output, events) = h
        .run_json(
            Wire::OpenAi,
            &["--max-iterations", "1"],
            "work until the cap",
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert_run_completed_last(&events);
    let done = last(&events);
    assert_eq!(done["exit_reason"], "max_iterations");
    assert_eq!(done["final_response"], "summary at the cap");
    let finished = of_type(&events, "subagent.completed");
    assert_eq!(finished.len(), 1, "{:?}", types(&events));
    assert_eq!(finished[0]["status"], "interrupted");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn run_completed_is_last_after_a_provider_error_with_a_background_agent_running() {
    let (child, child_replies) = napping_child("stranded child");
    // The root's second request finds its script exhausted: HTTP 400.
    let h = Harness::new(
        Script::new()
            .conversation(
                "fail while delegating",
                vec![Reply::tool(
                    "delegate_task",
                    json!({"background": true, "goal": "stranded child: nap"}),
                )],
            )
            .conversation(&child, child_replies),
    )
    .await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "fail while delegating").await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_run_completed_last(&events);
    let done = last(&events);
    assert_eq!(done["status"], "failed");
    assert_eq!(done["exit_reason"], "error");
    let fatal: Vec<_> = of_type(&events, "error")
        .into_iter()
        .filter(|e| e["fatal"] == true)
        .collect();
    assert_eq!(fatal.len(), 1, "{:?}", types(&events));
    assert_eq!(
        of_type(&events, "subagent.completed")[0]["status"],
        "interrupted"
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_show_events_replays_the_run_in_order_with_increasing_ids() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "record everything",
                vec![
                    Reply::tool("terminal", json!({"command": "echo recorded"})),
                    Reply::tool("delegate_task", json!({"goal": "listed child: report"})),
                    Reply::text("all recorded"),
                ],
            )
            .conversation(
                "listed child",
                vec![
                    Reply::tool("terminal", json!({"command": "echo from-child"})),
                    Reply::text("child report"),
                ],
            ),
    )
    .await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "record everything").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let session = last(&events)["session_id"].as_str().unwrap().to_owned();

    let stored = parse_events(show_events(&h, &session, true).await.as_bytes());
    let ids: Vec<i64> = stored.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let kinds = types(&stored);
    for kind in [
        "session.started",
        "assistant.message",
        "tool.started",
        "tool.completed",
        "usage",
        "subagent.started",
        "subagent.tool",
        "subagent.completed",
        "run.completed",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    assert_eq!(kinds.first(), Some(&"session.started"));
    assert_eq!(kinds.last(), Some(&"run.completed"));
    // Exactly what the run printed, in the same order.
    let without_ids: Vec<Value> = stored
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect();
    assert_eq!(without_ids, events);

    // The child's own conversation is stored with the child's session, not
    // with the root's.
    let child_session = of_type(&events, "subagent.started")[0]["child_session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let child_agent = of_type(&events, "subagent.started")[0]["agent_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        stored
            .iter()
            .filter(|e| e["agent_id"] == child_agent.as_str())
            .all(|e| e["type"].as_str().unwrap().starts_with("subagent.")),
        "only subagent.* of the child go with the root session"
    );
    let child = parse_events(show_events(&h, &child_session, true).await.as_bytes());
    let child_kinds = types(&child);
    assert!(
        child_kinds.contains(&"tool.started") && child_kinds.contains(&"usage"),
        "{child_kinds:?}"
    );
    assert!(child.iter().all(|e| e["agent_id"] == child_agent.as_str()));
    // Ids are one sequence for the whole database (writes of different
    // sessions are batched separately, so they may interleave in any order):
    // never shared between sessions, increasing within each.
    let child_ids: Vec<i64> = child.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert!(child_ids.windows(2).all(|w| w[0] < w[1]), "{child_ids:?}");
    assert!(
        child_ids.iter().all(|id| !ids.contains(id)),
        "ids are unique across sessions of one database"
    );

    // Readable lines, and "after id N" for a replay.
    let human = show_events(&h, &session, false).await;
    assert!(
        human.contains(&format!("#{} ", ids[0])) && human.contains("session.started"),
        "{human}"
    );
    assert!(
        human.contains("tool.started terminal {\"command\":\"echo recorded\"}"),
        "{human}"
    );
    assert!(human.contains("run.completed completed"), "{human}");
    let output = h
        .command(Wire::OpenAi)
        .args([
            "sessions", "show", &session, "--events", "--json", "--after",
        ])
        .arg(ids[ids.len() - 2].to_string())
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let tail = parse_events(&output.stdout);
    assert_eq!(tail.len(), 1);
    assert_eq!(tail[0]["type"], "run.completed");
    h.server.assert_invariants();
}

const INNER_CALLS: &str = r#"
from herald_tools import write_file, read_file
write_file("notes/inner.txt", "inner text\n")
print(read_file("notes/inner.txt"))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn execute_code_inner_calls_are_readable_rows() {
    if let Err(err) = herald_exec::find_python("") {
        panic!("this test needs Python 3 on PATH (execute_code runs Python scripts): {err}");
    }
    let h = Harness::new(Script::new().conversation(
        "script the files",
        vec![
            Reply::tool("execute_code", json!({ "code": INNER_CALLS })),
            Reply::text("scripted"),
        ],
    ))
    .await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "script the files").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let session = last(&events)["session_id"].as_str().unwrap().to_owned();
    let call_id = of_type(&events, "tool.started")[0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let stored = parse_events(show_events(&h, &session, true).await.as_bytes());
    let inner = of_type(&stored, "sandbox.call");
    assert_eq!(inner.len(), 2, "{:?}", types(&stored));
    assert_eq!(inner[0]["name"], "write_file");
    assert_eq!(inner[1]["name"], "read_file");
    for row in &inner {
        assert_eq!(row["status"], "ok");
        assert_eq!(row["parent_call_id"], call_id.as_str());
        assert!(row["duration_ms"].is_u64());
        assert!(
            row["arguments"]
                .as_str()
                .unwrap()
                .contains("notes/inner.txt")
        );
    }
    // Between the execute_code call's start and its completion.
    let position = |ty: &str| types(&stored).iter().position(|k| *k == ty).unwrap();
    assert!(position("tool.started") < position("sandbox.call"));
    assert!(position("sandbox.call") < position("tool.completed"));

    let human = show_events(&h, &session, false).await;
    let line = human
        .lines()
        .find(|l| l.contains("sandbox.call read_file"))
        .unwrap_or_else(|| panic!("no readable sandbox.call row:\n{human}"));
    assert!(line.contains(" ok in "), "{line}");
    assert!(line.contains("notes/inner.txt"), "{line}");
    assert!(line.contains(&call_id), "{line}");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_log_names_the_session_and_stays_off_the_terminal() {
    let h = Harness::new(Script::new().conversation("log me", vec![Reply::text("logged")])).await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "log me").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let session = last(&events)["session_id"].as_str().unwrap().to_owned();
    let logs = read_logs(&h);
    assert!(
        logs.contains(&session),
        "session id missing from the log:\n{logs}"
    );
    assert!(logs.contains("session started"), "{logs}");
    assert!(
        !stderr(&output).contains(&session),
        "logs reached the terminal: {}",
        stderr(&output)
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_that_never_reaches_the_model_leaves_a_diagnostic_dump_in_the_log() {
    // Accepts connections (kernel backlog) but never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let h = Harness::new(Script::new().conversation(
        "delegate into silence",
        vec![
            Reply::tool(
                "delegate_task",
                json!({"goal": "mute child: never answered"}),
            ),
            Reply::text("noted"),
        ],
    ))
    .await;
    h.config(&format!(
        "[delegation]\nchild_timeout_seconds = 1\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
    ));
    let (output, events) = h.run_json(Wire::OpenAi, &[], "delegate into silence").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        of_type(&events, "subagent.completed")[0]["status"],
        "timeout"
    );
    let child = of_type(&events, "subagent.started")[0]["agent_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let logs = read_logs(&h);
    let dump = logs
        .lines()
        .find(|l| l.contains("child timed out without reaching the model"))
        .unwrap_or_else(|| panic!("no diagnostic dump in the log:\n{logs}"));
    for needle in [
        child.as_str(),
        "model=gpt-4.1-mini",
        "provider=\"openai\"",
        &format!("127.0.0.1:{port}"),
        "connect_timeout=",
        "retry.max_attempts=",
        "api_key=set",
        "elapsed_ms=",
        "last_activity_ms_ago=",
        "last_error=",
    ] {
        assert!(
            dump.contains(needle),
            "{needle} missing from the dump: {dump}"
        );
    }
    assert!(
        !logs.contains("sk-test-openai"),
        "the key leaked into the log"
    );
    h.server.assert_invariants();
    drop(silent);
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_completed_carries_the_output_the_failure_reason_and_the_exit_code() {
    let h = Harness::new(Script::new().conversation(
        "show me the results",
        vec![
            Reply::tool("terminal", json!({"command": "echo boom; exit 3"})),
            Reply::tool("read_file", json!({"path": "missing/nowhere.rs"})),
            Reply::tool("terminal", json!({"command": "seq 1 3000"})),
            Reply::text("seen"),
        ],
    ))
    .await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "show me the results").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let completed = of_type(&events, "tool.completed");
    assert_eq!(completed.len(), 3, "{completed:?}");

    let command = completed[0];
    assert_eq!(command["status"], "ok");
    assert_eq!(command["exit_code"], 3);
    assert!(
        command["output"].as_str().unwrap().contains("boom"),
        "{command}"
    );
    assert!(command.get("error").is_none(), "{command}");

    let failed = completed[1];
    assert_eq!(failed["status"], "error");
    let reason = failed["error"].as_str().unwrap();
    assert!(reason.contains("missing/nowhere.rs"), "{reason}");
    assert!(!reason.contains('\n'), "{reason}");
    assert!(failed.get("exit_code").is_none(), "{failed}");

    // A long result: head and tail with the size of what was left out.
    let long = completed[2];
    let text = long["output"].as_str().unwrap();
    assert!(long["output_bytes"].as_u64().unwrap() > 10_000, "{long}");
    assert!(text.len() < 4_200, "{}", text.len());
    assert!(text.contains("bytes omitted"), "{text}");
    assert!(
        text.contains("\"exit_code\":0") || text.contains("2999"),
        "{text}"
    );
    assert_eq!(long["exit_code"], 0);

    // Stored and read back with the same fields.
    let session = last(&events)["session_id"].as_str().unwrap().to_owned();
    let stored = parse_events(show_events(&h, &session, true).await.as_bytes());
    let stored_completed = of_type(&stored, "tool.completed");
    assert_eq!(stored_completed[0]["exit_code"], 3);
    assert_eq!(stored_completed[1]["error"], failed["error"]);
    h.server.assert_invariants();
}
