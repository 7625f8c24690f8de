//! `herald run` end to end against the scripted server, for both wire APIs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, last, of_type, stderr, tool_results};
use herald_testkit::{Reply, Script, ScriptedCall};
use serde_json::json;

fn multi_tool_script() -> Script {
    Script::new().conversation(
        "write the notes",
        vec![
            Reply::tool(
                "write_file",
                json!({"path": "notes/todo.txt", "content": "alpha\nbeta\ngamma\n"}),
            ),
            Reply::tools(vec![
                ScriptedCall::new("read_file", json!({"path": "notes/todo.txt"})),
                ScriptedCall::new("search_files", json!({"pattern": "beta"})),
            ]),
            Reply::tool(
                "patch",
                json!({"path": "notes/todo.txt", "old_string": "beta", "new_string": "BETA"}),
            ),
            Reply::tool(
                "terminal",
                json!({"command": "mkdir -p sub && cd sub && pwd"}),
            ),
            Reply::tool(
                "terminal",
                json!({"command": "pwd && cat ../notes/todo.txt"}),
            ),
            Reply::text("Done: notes written and patched."),
        ],
    )
}

async fn multi_tool_task(wire: Wire) {
    let h = Harness::new(multi_tool_script()).await;
    let (output, events) = h.run_json(wire, &[], "Please write the notes file").await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let done = last(&events);
    assert_eq!(done["type"], "run.completed");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["final_response"], "Done: notes written and patched.");
    assert_eq!(done["iterations"], 6);
    assert!(done["usage"]["input"].as_u64().unwrap() > 0);
    assert!(done["session_id"].as_str().unwrap().starts_with("ses_"));
    assert_eq!(events[0]["type"], "session.started");
    let completed = of_type(&events, "tool.completed");
    assert_eq!(completed.len(), 6);
    assert!(
        completed.iter().all(|e| e["status"] == "ok"),
        "{completed:?}"
    );
    assert_eq!(of_type(&events, "usage").len(), 6);
    let text = std::fs::read_to_string(h.work_path().join("notes/todo.txt")).unwrap();
    assert_eq!(text, "alpha\nBETA\ngamma\n");
    // The terminal kept its directory between calls.
    let requests = h.server.requests();
    assert_eq!(requests.len(), 6);
    let last_body = &requests[5].body;
    let dump = last_body.to_string();
    assert!(
        dump.contains("alpha\\\\nBETA") || dump.contains("alpha\\nBETA"),
        "{dump}"
    );
    assert!(dump.contains(&format!("{}/sub", h.work_path().display())));
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_multi_tool_task_is_prefix_stable() {
    multi_tool_task(Wire::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_multi_tool_task_is_prefix_stable() {
    multi_tool_task(Wire::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_request_shape_and_auth() {
    let h = Harness::new(Script::new().conversation("hi", vec![Reply::text("hello")])).await;
    let (output, _) = h.run_json(Wire::OpenAi, &[], "hi there").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let req = &h.server.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    let auth = req
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone());
    assert_eq!(auth.as_deref(), Some("Bearer sk-test-openai"));
    assert_eq!(req.body["stream"], true);
    assert_eq!(req.body["stream_options"]["include_usage"], true);
    assert_eq!(req.body["messages"][0]["role"], "system");
    let names: Vec<&str> = req.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "tools are sorted by name");
    for expected in [
        "patch",
        "process",
        "read_file",
        "search_files",
        "terminal",
        "write_file",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_request_shape_and_auth() {
    let h = Harness::new(Script::new().conversation("hi", vec![Reply::text("hello")])).await;
    let (output, events) = h.run_json(Wire::Anthropic, &[], "hi there").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "hello");
    let req = &h.server.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-api-key").as_deref(), Some("sk-ant-test"));
    assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
    assert_eq!(req.body["system"][0]["cache_control"]["type"], "ephemeral");
    assert!(req.body["max_tokens"].as_u64().unwrap() > 0);
    let last_msg = req.body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last_msg["content"][0]["cache_control"]["type"], "ephemeral");
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_run_prints_final_answer_and_reads_stdin() {
    let h = Harness::new(Script::new().conversation("from stdin", vec![Reply::text("the answer")]))
        .await;
    let mut cmd = h.command(Wire::OpenAi);
    cmd.arg("run")
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use tokio::io::AsyncWriteExt;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"question from stdin\n").await.unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "the answer\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_tool_calls_become_error_results_and_the_run_continues() {
    let script = Script::new().conversation(
        "bad calls",
        vec![
            Reply::ToolCalls {
                text: String::new(),
                calls: vec![ScriptedCall {
                    name: "read_file".into(),
                    arguments: "{\"path\": ".into(),
                }],
            },
            Reply::tool("read_file", json!({})),
            Reply::tool("read_file", json!({"path": 42})),
            Reply::tool("launch_rocket", json!({"target": "moon"})),
            Reply::tool("read_file", json!({"path": "missing.txt"})),
            Reply::text("gave up"),
        ],
    );
    let h = Harness::new(script).await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "bad calls please").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["status"], "completed");
    let completed = of_type(&events, "tool.completed");
    assert_eq!(completed.len(), 5);
    assert!(completed.iter().all(|e| e["status"] == "error"));
    let results = tool_results(&h.server.requests()[5].body);
    assert!(
        results[0].contains("not valid JSON") && results[0].contains("path (string, required)"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("missing required parameter 'path'"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("'path' must be string"),
        "{}",
        results[2]
    );
    assert!(
        results[3].contains("unknown tool 'launch_rocket'") && results[3].contains("read_file"),
        "{}",
        results[3]
    );
    assert!(
        results[4].to_lowercase().contains("missing.txt"),
        "{}",
        results[4]
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn iteration_limit_asks_for_a_summary_without_tools() {
    let h = Harness::new(Script::new().responder(|view| {
        if view.tool_choice_none {
            Reply::text("summary: looped")
        } else {
            Reply::tool("read_file", json!({"path": "nothing"}))
        }
    }))
    .await;
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--max-iterations", "2"], "loop forever")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let done = last(&events);
    assert_eq!(done["exit_reason"], "max_iterations");
    assert_eq!(done["final_response"], "summary: looped");
    assert_eq!(done["iterations"], 3);
    let requests = h.server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].body["tool_choice"], "none");
    // The tools stay in the request so the cached prefix is reused.
    assert_eq!(requests[2].body["tools"], requests[0].body["tools"]);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn toolsets_narrow_the_tool_list() {
    let h = Harness::new(Script::new().conversation("files only", vec![Reply::text("ok")])).await;
    let (output, _) = h
        .run_json(Wire::OpenAi, &["--toolsets", "file"], "files only")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let body = &h.server.requests()[0].body;
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"read_file") && !names.contains(&"terminal"),
        "{names:?}"
    );

    let (output, _) = h
        .run_json(Wire::OpenAi, &["--toolsets", "nope"], "files only")
        .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("unknown toolset 'nope'"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_server_quirks_are_tolerated_end_to_end() {
    let h = Harness::new(multi_tool_script()).await;
    h.server.set_quirks(herald_testkit::Quirks {
        usage_choice_with_empty_delta: true,
        empty_content_on_tool_deltas: true,
        stop_with_tool_calls: true,
        extra_spaces_after_data: true,
    });
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "Please write the notes file")
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(
        last(&events)["final_response"],
        "Done: notes written and patched."
    );
    assert_eq!(of_type(&events, "tool.completed").len(), 6);
    assert!(
        of_type(&events, "usage")
            .iter()
            .all(|u| u["input_tokens"].as_u64().unwrap() > 0)
    );
    h.server.assert_invariants();
}

/// A plain-http endpoint needs no certificates: with an empty certificate
/// store (as in a minimal container) herald still reaches a local server.
/// Before, building the client loaded the system's roots and failed.
#[tokio::test(flavor = "multi_thread")]
async fn a_plain_http_server_is_reached_with_an_empty_certificate_store() {
    let h =
        Harness::new(Script::new().conversation("no certs", vec![Reply::text("reached")])).await;
    let empty = tempfile::tempdir().unwrap();
    let pem = empty.path().join("empty.pem");
    std::fs::write(&pem, "").unwrap();
    for (wire, prompt) in [
        (Wire::OpenAi, "Please work with no certs on openai"),
        (Wire::Anthropic, "Please work with no certs on anthropic"),
    ] {
        let mut cmd = h.command(wire);
        cmd.env("SSL_CERT_FILE", &pem)
            .env("SSL_CERT_DIR", empty.path())
            .args(["run", "--json", prompt]);
        let output = cmd.output().await.unwrap();
        assert!(
            output.status.success(),
            "stdout: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            stderr(&output)
        );
        let events = common::parse_events(&output.stdout);
        assert_eq!(last(&events)["final_response"], "reached");
    }
    h.server.assert_invariants();
}

/// A run that ends normally closes the store: the write-ahead log is folded
/// into the database and removed, so the next herald does not scan it at
/// its start, and what the run stored is all there.
#[tokio::test(flavor = "multi_thread")]
async fn a_finished_run_leaves_no_write_ahead_log() {
    let h = Harness::new(multi_tool_script()).await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "write the notes").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let session = last(&events)["session_id"].as_str().unwrap().to_owned();
    let wal = h.home.path().join("state.db-wal");
    assert!(
        !wal.exists(),
        "the run left {} bytes of WAL",
        std::fs::metadata(&wal).map_or(0, |m| m.len())
    );
    let shown = h
        .cli_json(&["sessions", "show", &session, "--json"])
        .await
        .to_string();
    assert!(
        shown.contains("Done: notes written and patched."),
        "{shown}"
    );
}
