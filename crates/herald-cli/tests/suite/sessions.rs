//! Sessions persist in SQLite across processes, resume byte-identically,
//! survive kill -9 mid-tool, and are found by `herald sessions`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, kill_leftovers, last, sleeper_command, stderr};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test(flavor = "multi_thread")]
async fn sessions_persist_resume_and_search() {
    let h = Harness::new(Script::new().conversation(
        "remember the zebra",
        vec![
            Reply::tool("read_file", json!({"path": "nope.txt"})),
            Reply::text("The zebra is noted."),
            Reply::text("Still about the zebra."),
        ],
    ))
    .await;
    for wire in [Wire::OpenAi] {
        let (output, events) = h.run_json(wire, &[], "Please remember the zebra").await;
        assert!(output.status.success(), "{}", stderr(&output));
        let id = last(&events)["session_id"].as_str().unwrap().to_owned();
        assert_eq!(events[0]["resumed"], false);

        // Another process sees the stored session and all four messages.
        let shown = h.cli_json(&["sessions", "show", &id, "--json"]).await;
        let messages = shown["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 4, "{shown}");
        assert_eq!(shown["session"]["title"], "Please remember the zebra");
        assert!(shown["session"]["input_tokens"].as_u64().unwrap() > 0);

        // Resume: the new request extends the stored history byte for byte.
        let (output, events) = h.run_json(wire, &["--resume", &id], "and again").await;
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(events[0]["resumed"], true);
        assert_eq!(last(&events)["session_id"], id.as_str());
        assert_eq!(last(&events)["final_response"], "Still about the zebra.");
        let requests = h.server.requests();
        assert_eq!(requests.len(), 3);
        h.server.assert_invariants();

        let listed = h.cli_json(&["sessions", "list", "--json"]).await;
        assert_eq!(listed.as_array().unwrap().len(), 1);
        let found = h.cli_json(&["sessions", "search", "zebra", "--json"]).await;
        assert_eq!(found[0]["session"]["id"], id.as_str());
        let none = h
            .cli_json(&["sessions", "search", "C++ (x AND", "--json"])
            .await;
        assert!(none.as_array().unwrap().is_empty());
        let exported = h
            .cli_json(&["sessions", "export", &id, "--format", "json"])
            .await;
        assert!(exported.to_string().contains("zebra"));
        let deleted = h
            .cli_json(&["sessions", "delete", &id, "--yes", "--json"])
            .await;
        assert_eq!(deleted["deleted"], true);
        let listed = h.cli_json(&["sessions", "list", "--json"]).await;
        assert!(listed.as_array().unwrap().is_empty());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_picks_the_latest_session_of_this_directory() {
    let h = Harness::new(Script::new().conversation(
        "first question",
        vec![Reply::text("one"), Reply::text("two")],
    ))
    .await;
    let (_, first) = h.run_json(Wire::Anthropic, &[], "first question").await;
    let (output, events) = h
        .run_json(Wire::Anthropic, &["--continue"], "follow up")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["session_id"], last(&first)["session_id"]);
    assert_eq!(last(&events)["final_response"], "two");
    h.server.assert_invariants();

    let output = h
        .bare_command()
        .args(["--resume", "ses_missing", "run", "x"])
        .env("OPENAI_API_KEY", "k")
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("no session 'ses_missing'"));
}

#[tokio::test(flavor = "multi_thread")]
async fn fork_starts_a_new_session_from_a_copy_of_the_conversation() {
    let h =
        Harness::new(Script::new().responder(|view| Reply::text(format!("reply {}", view.turn))))
            .await;
    let (_, first) = h
        .run_json(Wire::OpenAi, &[], "remember the word kumquat")
        .await;
    let source = last(&first)["session_id"].as_str().unwrap().to_owned();
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--fork", &source], "which word?")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let fork = last(&events)["session_id"].as_str().unwrap().to_owned();
    assert_ne!(fork, source);
    assert_eq!(events[0]["resumed"], false);
    // The fork's request carried the source's conversation.
    let body = h.server.requests().last().unwrap().body.clone();
    let text = body["messages"].to_string();
    assert!(
        text.contains("kumquat") && text.contains("which word?"),
        "{text}"
    );
    // The source kept its own conversation only.
    let export = h
        .command(Wire::OpenAi)
        .args(["sessions", "export", &source])
        .output()
        .await
        .unwrap();
    assert!(!String::from_utf8_lossy(&export.stdout).contains("which word?"));
    // A fork of nothing is a usage error that stores nothing.
    let (output, _) = h
        .run_json(Wire::OpenAi, &["--fork", "ses_missing"], "x")
        .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("no session 'ses_missing'"));
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_mid_tool_keeps_the_call_and_resume_answers_it() {
    let h = Harness::new(Script::new().conversation(
        "long task",
        vec![
            Reply::tool("terminal", json!({"command": sleeper_command("long.pids")})),
            Reply::text("recovered"),
        ],
    ))
    .await;
    let (mut child, _output, session_id) = run_until_tool_started(&h, "a long task").await;
    // Killed once the command runs (its shell has written its pids).
    let pids = h.sleeper_pids("long.pids").await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    let shown = h
        .cli_json(&["sessions", "show", &session_id, "--json"])
        .await;
    let messages = shown["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{shown}");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[1]["tool_calls"][0]["name"], "terminal");

    let (output, events) = h
        .run_json(Wire::OpenAi, &["--resume", &session_id], "continue please")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "recovered");
    let body = &h.server.requests()[1].body;
    let tool_msg = &body["messages"][3];
    assert_eq!(tool_msg["role"], "tool");
    assert!(
        tool_msg["content"]
            .as_str()
            .unwrap()
            .starts_with("interrupted")
    );
    kill_leftovers(&pids);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn import_prune_and_bad_inputs() {
    let h = Harness::new(Script::new()).await;
    let path = h.work.path().join("t.jsonl");
    std::fs::write(
        &path,
        "{\"role\":\"user\",\"content\":\"imported walrus question\"}\n\n{\"role\":\"assistant\",\"content\":\"walrus answer\"}\n",
    )
    .unwrap();
    let report = h
        .cli_json(&["sessions", "import", path.to_str().unwrap(), "--json"])
        .await;
    assert_eq!(report["messages"], 2);
    assert_eq!(report["format"], "chat-jsonl");
    let found = h
        .cli_json(&["sessions", "search", "walrus", "--json"])
        .await;
    assert_eq!(found.as_array().unwrap().len(), 1);
    let pruned = h
        .cli_json(&["sessions", "prune", "--older-than", "30d", "--json"])
        .await;
    assert_eq!(pruned["pruned"], 0);
    let output = h
        .bare_command()
        .args(["sessions", "prune", "--older-than", "soon"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let output = h
        .bare_command()
        .args(["sessions", "show", "ses_nope"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn session_search_tool_finds_other_sessions_but_not_this_one() {
    let h = Harness::new(
        Script::new()
            .conversation("the zebra plan", vec![Reply::text("zebra plan stored")])
            .conversation(
                "find the zebra",
                vec![
                    Reply::tool("session_search", json!({"query": "zebra"})),
                    Reply::tool(
                        "session_search",
                        json!({"query": "C++ (x AND \"", "limit": 50, "window": 99}),
                    ),
                    Reply::tool("session_search", json!({})),
                    Reply::tool(
                        "session_search",
                        json!({"role_filter": ["robot"], "query": "zebra"}),
                    ),
                    Reply::text("found it"),
                ],
            ),
    )
    .await;
    let (_, first) = h.run_json(Wire::OpenAi, &[], "the zebra plan").await;
    let first_id = last(&first)["session_id"].as_str().unwrap().to_owned();
    let (output, events) = h.run_json(Wire::OpenAi, &[], "find the zebra").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let current = last(&events)["session_id"].as_str().unwrap().to_owned();
    let results = common::tool_results(&h.server.requests().last().unwrap().body);
    let search: Value = serde_json::from_str(&results[0]).unwrap();
    let ids: Vec<&str> = search["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [first_id.as_str()],
        "current session {current} must be excluded"
    );
    assert!(
        search["results"][0]["match"]["text"]
            .as_str()
            .unwrap()
            .contains("zebra")
    );
    let odd: Value = serde_json::from_str(&results[1]).unwrap();
    assert_eq!(odd["mode"], "search");
    let browse: Value = serde_json::from_str(&results[2]).unwrap();
    assert_eq!(browse["sessions"].as_array().unwrap().len(), 1);
    assert!(
        results[3].contains("unknown role 'robot'"),
        "{}",
        results[3]
    );
    h.server.assert_invariants();
}

/// A session another herald process is running is refused by `sessions
/// delete` as by `DELETE /api/sessions/{id}`: exit 2, and nothing deleted.
#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_session_another_process_runs_is_refused_and_keeps_it() {
    let h = Harness::new(Script::new().conversation(
        "hold it",
        vec![
            Reply::tool("terminal", json!({"command": "sleep 30"})),
            Reply::text("done"),
        ],
    ))
    .await;
    let (mut child, _output, session_id) = run_until_tool_started(&h, "hold it").await;
    let output = h
        .bare_command()
        .args(["sessions", "delete", &session_id, "--yes"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("session {session_id} is in use by herald process")),
        "{}",
        stderr(&output)
    );
    let shown = h
        .cli_json(&["sessions", "show", &session_id, "--json"])
        .await;
    assert_eq!(shown["session"]["id"], session_id.as_str(), "{shown}");
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    // Once nobody runs it, the same command deletes it.
    let deleted = h
        .cli_json(&["sessions", "delete", &session_id, "--yes", "--json"])
        .await;
    assert_eq!(deleted["deleted"], true, "{deleted}");
}

/// `sessions prune` keeps a session another herald process is running,
/// says so, and prunes the rest.
#[tokio::test(flavor = "multi_thread")]
async fn prune_keeps_a_session_another_process_runs() {
    let h = Harness::new(
        Script::new()
            .conversation("idle one", vec![Reply::text("done")])
            .conversation(
                "hold it",
                vec![
                    Reply::tool("terminal", json!({"command": "sleep 30"})),
                    Reply::text("done"),
                ],
            ),
    )
    .await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "idle one").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let idle = last(&events)["session_id"].as_str().unwrap().to_owned();
    let (mut child, _output, held) = run_until_tool_started(&h, "hold it").await;
    let output = h
        .bare_command()
        .args(["sessions", "prune", "--older-than", "0s", "--yes", "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["in_use"], json!([held.as_str()]), "{report}");
    assert_eq!(report["sessions"], json!([idle.as_str()]), "{report}");
    assert!(stderr(&output).contains("kept 1 session(s) another herald process is running"));
    let kept = h.cli_json(&["sessions", "show", &held, "--json"]).await;
    assert_eq!(kept["session"]["id"], held.as_str());
    child.start_kill().unwrap();
    child.wait().await.unwrap();
}

/// Starts `herald run --json PROMPT` and returns once its first tool call
/// has started: the process (which holds the session's lease), its output
/// (kept open so it goes on writing) and the session id.
async fn run_until_tool_started(
    h: &Harness,
    prompt: &str,
) -> (
    tokio::process::Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    String,
) {
    let mut cmd = h.command(Wire::OpenAi);
    cmd.args(["run", "--json", prompt])
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "tool.started" {
            let session_id = event["session_id"].as_str().unwrap().to_owned();
            return (child, lines, session_id);
        }
    }
    panic!("herald run ended before its first tool call started");
}
