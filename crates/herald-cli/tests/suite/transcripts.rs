//! `herald sessions import` with the real binary: each transcript format
//! users have (fixtures in `herald-store/tests/fixtures/import/`) comes in
//! with a report of what was skipped and repaired, and resumes against the
//! testkit with herald's system prompt (stored once, byte-identical on the
//! next resume) and every tool call paired; `sessions export` round-trips;
//! bad files import nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;

use common::{Harness, Wire, last, stderr};
use herald_testkit::{Api, Reply, RequestView, Script};
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../herald-store/tests/fixtures/import")
        .join(name)
}

async fn herald(h: &Harness, args: &[&str]) -> std::process::Output {
    h.bare_command().args(args).output().await.unwrap()
}

/// The conversation the import stored, as `sessions export --format json` shows it.
async fn stored(h: &Harness, id: &str) -> Value {
    h.cli_json(&["sessions", "export", id, "--format", "json"])
        .await
}

fn view(request: &herald_testkit::RecordedRequest) -> RequestView {
    RequestView::from_body(request.api, &request.body).unwrap()
}

/// Each format, which wire resumes it, the words its first user message
/// holds (the testkit's conversation key), and call ids it must keep.
const CASES: &[(&str, &str, &str, &[&str])] = &[
    (
        "claude_code.jsonl",
        "claude-code",
        "parse_dates_across_dst fails",
        &["toolu_01Read", "toolu_01Task", "toolu_01Edit"],
    ),
    (
        "codex_rollout.jsonl",
        "codex",
        "cart total show NaN",
        &["call_Q1wE2rT3", "call_P9oI8uY7", "call_Z5xC4vB3"],
    ),
    (
        "codex_legacy.jsonl",
        "codex-legacy",
        "How many Rust files",
        &["call_legacy_1"],
    ),
    (
        "hermes.jsonl",
        "hermes",
        "using port 8080",
        &["call_h1", "call_h2"],
    ),
    (
        "openai_messages.jsonl",
        "openai-messages",
        "weather in Oslo",
        &["call_w1"],
    ),
];

#[tokio::test(flavor = "multi_thread")]
async fn every_format_imports_and_resumes_with_herald_prompt_and_paired_tools() {
    // Imported sessions already hold assistant turns: one reply for any turn.
    let h = Harness::new(Script::new().responder(|_| Reply::text("resumed fine"))).await;
    let work = h.work_path();
    for (i, (file, format, needle, calls)) in CASES.iter().enumerate() {
        let path = fixture(file);
        let output = herald(&h, &["sessions", "import", path.to_str().unwrap()]).await;
        assert!(output.status.success(), "{file}: {}", stderr(&output));
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        println!("{file}:\n{text}");
        assert!(text.starts_with("imported "), "{text}");
        assert!(
            text.lines()
                .next()
                .unwrap()
                .ends_with(&format!("({format} transcript)")),
            "{text}"
        );
        let id = text
            .split_whitespace()
            .find(|w| w.starts_with("imp_"))
            .unwrap()
            .to_owned();
        if *file == "claude_code.jsonl" {
            assert!(
                text.contains("2 × sidechain record (subagent conversation)"),
                "{text}"
            );
            assert!(text.contains("1 × file-history-snapshot record"), "{text}");
            assert!(
                text.contains("1 × tool result without a matching call (dropped)"),
                "{text}"
            );
            assert!(
                text.contains("\"Fix the flaky date parser test\""),
                "{text}"
            );
        }
        let before = stored(&h, &id).await;
        assert_eq!(before["session"]["system_prompt"], "", "{file}");

        // Resume it twice: Anthropic for Claude Code's, OpenAI for the rest.
        let wire = if i == 0 {
            Wire::Anthropic
        } else {
            Wire::OpenAi
        };
        let mut systems = Vec::new();
        for prompt in ["carry on", "once more"] {
            let (output, events) = h.run_json(wire, &["--resume", &id], prompt).await;
            assert!(
                output.status.success(),
                "{file}: {} {events:#?}",
                stderr(&output)
            );
            assert_eq!(last(&events)["session_id"], id.as_str());
            let request = h.requests_of(needle).pop().unwrap();
            let v = view(&request);
            assert_eq!(v.api, if i == 0 { Api::Anthropic } else { Api::OpenAi });
            assert!(v.system.contains("You are herald"), "{file}: {}", v.system);
            assert!(
                v.system
                    .contains(&format!("Working directory: {}", work.display())),
                "{file}: {}",
                v.system
            );
            assert!(
                herald_testkit::check_pairing(&v).is_empty(),
                "{file}: {:?}",
                herald_testkit::check_pairing(&v)
            );
            let sent_calls: Vec<&str> = v
                .messages
                .iter()
                .flat_map(|m| &m.tool_calls)
                .map(|(id, _, _)| id.as_str())
                .collect();
            let sent_results: Vec<&str> = v
                .messages
                .iter()
                .flat_map(|m| &m.tool_results)
                .map(|(id, _)| id.as_str())
                .collect();
            assert_eq!(sent_calls, *calls, "{file}");
            assert_eq!(sent_results, *calls, "{file}");
            assert!(
                v.messages.iter().all(|m| !m.text.trim().is_empty()
                    || !m.tool_calls.is_empty()
                    || !m.tool_results.is_empty()),
                "{file}: an empty message was sent"
            );
            assert_eq!(v.messages.last().unwrap().text, prompt);
            systems.push(v.system);
        }
        assert_eq!(
            systems[0], systems[1],
            "{file}: the system prompt changed between resumes"
        );
        let after = stored(&h, &id).await;
        assert_eq!(
            after["session"]["system_prompt"],
            systems[0].as_str(),
            "{file}"
        );
    }
    assert!(h.server.pairing_violations().is_empty());
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn export_then_import_gives_the_same_session() {
    let h = Harness::new(Script::new().conversation(
        "read the notes",
        vec![
            Reply::tool("read_file", json!({"path": "notes.txt"})),
            Reply::text("The notes say: ship it."),
            Reply::text("still shipping"),
        ],
    ))
    .await;
    std::fs::write(h.work.path().join("notes.txt"), "ship it\n").unwrap();
    let (output, events) = h.run_json(Wire::OpenAi, &[], "read the notes").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let id = last(&events)["session_id"].as_str().unwrap().to_owned();

    let output = herald(&h, &["sessions", "export", &id]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let jsonl = String::from_utf8(output.stdout).unwrap();
    let header: Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    assert_eq!(header["format"], "herald.session");
    assert_eq!(header["session"]["id"], id.as_str());
    assert!(
        header["session"]["system_prompt"]
            .as_str()
            .unwrap()
            .contains("You are herald")
    );
    assert_eq!(
        jsonl.lines().count(),
        1 + 4,
        "header + user, call, result, answer:\n{jsonl}"
    );
    let file = h.work.path().join("export.jsonl");
    std::fs::write(&file, &jsonl).unwrap();

    // Into another herald home: the same id and the same session.
    let other = tempfile::tempdir().unwrap();
    let output = herald_in(
        &h,
        other.path(),
        &["sessions", "import", file.to_str().unwrap(), "--json"],
    )
    .await;
    let report: Value = serde_json::from_slice(&output).unwrap();
    assert_eq!(report["format"], "herald");
    assert_eq!(report["session_id"], id.as_str());
    assert_eq!(report["skipped"], json!({}));
    assert_eq!(report["repaired"], json!({}));
    let original = stored(&h, &id).await;
    let copy: Value = serde_json::from_slice(
        &herald_in(
            &h,
            other.path(),
            &["sessions", "export", &id, "--format", "json"],
        )
        .await,
    )
    .unwrap();
    for key in [
        "id",
        "title",
        "cwd",
        "model",
        "provider",
        "system_prompt",
        "started_at",
    ] {
        assert_eq!(copy["session"][key], original["session"][key], "{key}");
    }
    // Every message field, seq and created_at alike (the row id is the store's own).
    let without_row_ids = |doc: &Value| -> Vec<Value> {
        doc["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let mut m = m.clone();
                m.as_object_mut().unwrap().remove("id");
                m
            })
            .collect()
    };
    assert_eq!(without_row_ids(&copy), without_row_ids(&original));
    assert_eq!(without_row_ids(&copy).len(), 4);
    // Exported again from there, it is the same file but for the source and activity time.
    let again =
        String::from_utf8(herald_in(&h, other.path(), &["sessions", "export", &id]).await).unwrap();
    assert_eq!(
        again.lines().skip(1).collect::<Vec<_>>(),
        jsonl.lines().skip(1).collect::<Vec<_>>()
    );

    // Into the same home: a new id, said so, and it resumes with the
    // original system prompt byte for byte.
    let output = herald(&h, &["sessions", "import", file.to_str().unwrap()]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        text.contains(&format!(
            "session {id} already exists here; imported as imp_"
        )),
        "{text}"
    );
    let copy_id = text
        .split_whitespace()
        .find(|w| w.starts_with("imp_"))
        .unwrap()
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .to_owned();
    let (output, _) = h
        .run_json(Wire::OpenAi, &["--resume", &copy_id], "and now?")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.requests_of("read the notes");
    let first = view(&requests[0]);
    let resumed = view(requests.last().unwrap());
    assert_eq!(resumed.system, first.system);
    // system, user, call, result, answer, then the new question.
    assert_eq!(resumed.messages.len(), 6, "{:#?}", resumed.messages);
    assert_eq!(resumed.messages[..4], view(&requests[1]).messages[..]);
    assert_eq!(resumed.messages[4].text, "The notes say: ship it.");
    h.server.assert_invariants();
}

/// Runs herald with `HERALD_HOME` at `home`; returns stdout.
async fn herald_in(h: &Harness, home: &std::path::Path, args: &[&str]) -> Vec<u8> {
    let output = h
        .bare_command()
        .env("HERALD_HOME", home)
        .args(args)
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    output.stdout
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_transcripts_get_their_error_and_import_nothing() {
    let h = Harness::new(Script::new()).await;
    let good = std::fs::read_to_string(fixture("codex_rollout.jsonl")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(
        7,
        "{\"timestamp\":\"2025-09-18T14:02:30Z\",\"type\":\"response_item\",\"payload\":{\"type\":",
    );
    let cases = [
        ("empty.jsonl", String::new(), "the file is empty"),
        (
            "unknown.jsonl",
            "{\"event\":\"login\",\"user\":\"bob\"}\n".to_owned(),
            "unknown transcript format",
        ),
        ("broken.jsonl", lines.join("\n"), "line 8: not valid JSON"),
        (
            "nomessages.jsonl",
            "{\"type\":\"summary\",\"summary\":\"only a title\"}\n".to_owned(),
            "no messages to import",
        ),
    ];
    for (name, text, expected) in cases {
        let path = h.work.path().join(name);
        std::fs::write(&path, text).unwrap();
        let output = herald(
            &h,
            &["sessions", "import", "--strict", path.to_str().unwrap()],
        )
        .await;
        assert_eq!(output.status.code(), Some(1), "{name}");
        let err = stderr(&output);
        assert!(err.contains(expected), "{name}: {err}");
        assert!(err.contains("nothing was imported"), "{name}: {err}");
    }
    let listed = h.cli_json(&["sessions", "list", "--json"]).await;
    assert_eq!(listed, json!([]));
    assert_eq!(h.server.requests().len(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_of_a_never_resumed_import_gets_herald_prompt_too() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("forked fine"))).await;
    let path = fixture("hermes.jsonl");
    let report = h
        .cli_json(&["sessions", "import", path.to_str().unwrap(), "--json"])
        .await;
    let id = report["session_id"].as_str().unwrap().to_owned();
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--fork", &id], "and the jar?")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let fork = last(&events)["session_id"].as_str().unwrap().to_owned();
    assert_ne!(fork, id);
    let request = h.server.requests().pop().unwrap();
    let v = view(&request);
    assert!(v.system.contains("You are herald"), "{}", v.system);
    assert_eq!(v.messages.last().unwrap().text, "and the jar?");
    assert_eq!(
        stored(&h, &fork).await["session"]["system_prompt"],
        v.system.as_str()
    );
    // The import itself is untouched until it is resumed.
    assert_eq!(stored(&h, &id).await["session"]["system_prompt"], "");
    h.server.assert_invariants();
}

/// One malformed record (a misspelt key, a line cut short) no longer costs
/// the whole transcript: the rest is imported, each record left out is
/// named with its line on stderr and in `--json`, and `--strict` imports
/// nothing.
#[tokio::test(flavor = "multi_thread")]
async fn malformed_records_are_left_out_and_reported_and_strict_refuses() {
    let h = Harness::new(Script::new()).await;
    let good = std::fs::read_to_string(fixture("claude_code.jsonl")).unwrap();
    let mut lines: Vec<String> = good.lines().map(str::to_owned).collect();
    // Line 4 becomes a user record whose content key is misspelt; a line
    // cut short goes in after line 6 (it becomes line 7).
    let mut record: Value = serde_json::from_str(&lines[3]).unwrap();
    let content = record["message"]["content"].take();
    record["message"].as_object_mut().unwrap().remove("content");
    record["message"]["contnt"] = content;
    lines[3] = record.to_string();
    lines.insert(6, "{\"type\":\"assistant\",\"message\":".to_owned());
    let path = h.work.path().join("damaged.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();

    let strict = herald(
        &h,
        &["sessions", "import", "--strict", path.to_str().unwrap()],
    )
    .await;
    assert_eq!(strict.status.code(), Some(1));
    assert!(
        stderr(&strict).contains("nothing was imported"),
        "{}",
        stderr(&strict)
    );
    assert_eq!(h.cli_json(&["sessions", "list", "--json"]).await, json!([]));

    let output = herald(
        &h,
        &["sessions", "import", path.to_str().unwrap(), "--json"],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(said.contains("skipped line 4:"), "{said}");
    assert!(said.contains("skipped line 7: not valid JSON"), "{said}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let malformed = report["malformed"].as_array().unwrap();
    let numbers: Vec<u64> = malformed
        .iter()
        .map(|m| m["line"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [7, 4], "{report}");
    assert!(report["messages"].as_u64().unwrap() > 2, "{report}");
    let listed = h.cli_json(&["sessions", "list", "--json"]).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
}
