//! `herald sessions import` / `export` at the store: every transcript format
//! in `tests/fixtures/import/` comes in with its tool calls paired, what
//! could not be mapped counted, and the JSONL export round-trips.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use common::{call, memory, new_session};
use herald_protocol::{Message, Reasoning, Role, Usage};
use herald_store::{ImportFormat, ImportReport, SessionSource, Store, StoreError};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

fn load(store: &Store, id: &str) -> Vec<Message> {
    store
        .load_messages(id)
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect()
}

/// What a provider requires: each call answered right after its assistant
/// message (only tool messages between), no result without its call, no
/// empty user or assistant message.
fn assert_valid(messages: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap();
                let at = open.iter().position(|c| *c == id);
                assert!(
                    at.is_some(),
                    "message {i}: result for {id} without an open call: {messages:#?}"
                );
                open.remove(at.unwrap());
            }
            _ => {
                assert!(
                    open.is_empty(),
                    "message {i}: calls {open:?} unanswered before it"
                );
                if m.role != Role::Assistant || m.tool_calls.is_empty() {
                    assert!(!m.content.trim().is_empty(), "message {i} is empty");
                }
                for c in &m.tool_calls {
                    assert!(seen.insert(c.id.clone()), "call id {} repeats", c.id);
                    open.push(c.id.clone());
                }
            }
        }
    }
    assert!(open.is_empty(), "calls {open:?} unanswered at the end");
}

fn import(store: &mut Store, name: &str) -> ImportReport {
    let report = store
        .import_jsonl(fixture(name), SessionSource::Cli)
        .unwrap();
    for session in &report.sessions {
        assert_valid(&load(store, &session.session_id));
    }
    report
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
}

#[test]
fn claude_code_session_keeps_calls_results_thinking_and_counts_the_rest() {
    let mut store = memory();
    let report = import(&mut store, "claude_code.jsonl");
    assert_eq!(report.format, ImportFormat::ClaudeCode);
    assert_eq!(
        report.skipped,
        counts(&[
            ("file-history-snapshot record", 1),
            ("image block", 1),
            ("meta user message (isMeta)", 1),
            ("sidechain record (subagent conversation)", 2),
            ("system record", 1),
        ])
    );
    assert_eq!(
        report.repaired,
        counts(&[
            ("tool call without a result (answered as an error)", 1),
            ("tool result without a matching call (dropped)", 1),
        ])
    );
    let session = store.get_session(&report.session_id).unwrap().unwrap();
    assert!(session.id.starts_with("imp_"));
    assert_eq!(
        session.title.as_deref(),
        Some("Fix the flaky date parser test")
    );
    assert_eq!(session.cwd, "/home/dev/calendar");
    assert_eq!(session.model, "claude-sonnet-4-5-20250929");
    assert_eq!(
        session.system_prompt, "",
        "herald builds its own at the first resume"
    );
    // 2025-10-02T09:14:02.900Z, the first record of the session (the /clear).
    assert_eq!(session.started_at, 1_759_396_442_900);
    let stored = store.load_messages(&report.session_id).unwrap();
    assert_eq!(stored[0].created_at, 1_759_396_443_000);
    let messages: Vec<Message> = stored.into_iter().map(|m| m.message).collect();
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    use Role::{Assistant as A, Tool as T, User as U};
    assert_eq!(roles, [U, A, T, A, T, A, T, U, U]);
    // The three records of msg_01QpYb7 are one message.
    assert_eq!(messages[1].content, "I'll start with the test itself.");
    assert_eq!(messages[1].tool_calls[0].id, "toolu_01Read");
    assert_eq!(
        messages[1].tool_calls[0].arguments,
        r#"{"file_path":"/home/dev/calendar/tests/dates.rs"}"#
    );
    assert!(
        matches!(&messages[1].reasoning[..], [Reasoning::Text { text }] if text.contains("weekly failure"))
    );
    assert_eq!(messages[2].tool_name.as_deref(), Some("Read"));
    assert!(messages[2].content.contains("parse_dates_across_dst"));
    assert_eq!(
        messages[4].content,
        "Only tests/dates.rs calls Local::now()."
    );
    // The interrupted Edit is answered as an error, before the user's next words.
    assert_eq!(messages[6].tool_call_id.as_deref(), Some("toolu_01Edit"));
    assert!(messages[6].is_error);
    assert_eq!(
        messages[7].content,
        "[Request interrupted by user for tool use]"
    );
}

#[test]
fn codex_rollout_maps_function_and_custom_calls() {
    let mut store = memory();
    let report = import(&mut store, "codex_rollout.jsonl");
    assert_eq!(report.format, ImportFormat::Codex);
    assert_eq!(
        report.skipped,
        counts(&[
            ("<environment_context> message (Codex's own context)", 1),
            ("encrypted reasoning item (no readable summary)", 1),
            ("event_msg record (repeats the response items)", 4),
            ("turn_context record", 1),
            ("web_search_call item", 1),
        ])
    );
    assert_eq!(
        report.repaired,
        counts(&[("tool call without a result (answered as an error)", 1)])
    );
    let session = store.get_session(&report.session_id).unwrap().unwrap();
    assert_eq!(session.cwd, "/home/dev/webshop");
    assert_eq!(session.model, "gpt-5-codex");
    assert_eq!(
        session.title.as_deref(),
        Some("Why does the cart total show NaN after removing the last item?")
    );
    let messages = load(&store, &report.session_id);
    let calls: Vec<(&str, &str)> = messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_Q1wE2rT3", "shell"),
            ("call_P9oI8uY7", "apply_patch"),
            ("call_Z5xC4vB3", "shell")
        ]
    );
    let results: Vec<&Message> = messages.iter().filter(|m| m.role == Role::Tool).collect();
    assert!(results[0].content.contains("sum / items.length"));
    assert!(results[1].content.contains("Success. Updated"));
    assert!(results[2].is_error, "the unanswered npm test");
    assert!(messages.last().unwrap().content.contains("0/0 = NaN"));
    assert!(
        matches!(&messages[1].reasoning[..], [Reasoning::Text { text }] if text.contains("cart total"))
    );
}

#[test]
fn legacy_codex_rollout_is_read() {
    let mut store = memory();
    let report = import(&mut store, "codex_legacy.jsonl");
    assert_eq!(report.format, ImportFormat::CodexLegacy);
    assert_eq!(report.skipped, counts(&[("state record", 3)]));
    assert!(report.repaired.is_empty());
    let messages = load(&store, &report.session_id);
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[1].tool_calls[0].id, "call_legacy_1");
    assert_eq!(messages[2].tool_name.as_deref(), Some("shell"));
    assert_eq!(messages[3].content, "There are 42 Rust files.");
    let session = store.get_session(&report.session_id).unwrap().unwrap();
    assert_eq!(session.started_at, 1_746_548_404_118);
}

#[test]
fn hermes_session_reads_its_meta_and_repairs_orphans_and_empties() {
    let mut store = memory();
    let report = import(&mut store, "hermes.jsonl");
    assert_eq!(report.format, ImportFormat::Hermes);
    assert_eq!(report.skipped, counts(&[("session_meta tool list", 1)]));
    assert_eq!(
        report.repaired,
        counts(&[
            ("empty user message (dropped)", 1),
            ("tool call without a result (answered as an error)", 1),
            ("tool result without a matching call (dropped)", 1),
        ])
    );
    let session = store.get_session(&report.session_id).unwrap().unwrap();
    assert_eq!(session.model, "anthropic/claude-sonnet-4");
    assert_eq!(
        session.title.as_deref(),
        Some("What is using port 8080 on this machine?")
    );
    let messages = load(&store, &report.session_id);
    assert_eq!(messages.len(), 7);
    assert_eq!(messages[2].tool_name.as_deref(), Some("terminal"));
    assert!(
        matches!(&messages[1].reasoning[..], [Reasoning::Text { text }] if text.contains("ss to list"))
    );
}

#[test]
fn openai_messages_lines_are_one_session_each() {
    let mut store = memory();
    let report = import(&mut store, "openai_messages.jsonl");
    assert_eq!(report.format, ImportFormat::OpenaiMessages);
    assert_eq!(report.sessions.len(), 2);
    assert_eq!(report.messages, 6);
    assert_eq!(
        report.skipped,
        counts(&[
            ("'metadata' field", 1),
            ("image_url block", 1),
            ("system message (herald builds its own system prompt)", 1),
        ])
    );
    let first = store
        .get_session(&report.sessions[0].session_id)
        .unwrap()
        .unwrap();
    assert_eq!(
        first.system_prompt, "",
        "herald builds its own at the first resume"
    );
    let second = store
        .get_session(&report.sessions[1].session_id)
        .unwrap()
        .unwrap();
    assert_eq!(second.model, "gpt-4o-2024-08-06");
    assert_eq!(load(&store, &second.id)[0].content, "Describe this chart.");
}

#[test]
fn whole_file_json_documents_are_read_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = memory();
    let one = dir.path().join("one.json");
    std::fs::write(
        &one,
        "{\n  \"messages\": [\n    {\"role\": \"user\", \"content\": \"pretty hello\"},\n    {\"role\": \"assistant\", \"content\": \"hi\"}\n  ]\n}\n",
    )
    .unwrap();
    let report = store.import_jsonl(&one, SessionSource::Cli).unwrap();
    assert_eq!(report.format, ImportFormat::OpenaiMessages);
    assert_eq!(load(&store, &report.session_id)[0].content, "pretty hello");
    let list = dir.path().join("list.json");
    std::fs::write(
        &list,
        "[\n {\"role\": \"user\", \"content\": \"array hello\"},\n {\"role\": \"assistant\", \"content\": \"hi\"}\n]\n",
    )
    .unwrap();
    let report = store.import_jsonl(&list, SessionSource::Cli).unwrap();
    assert_eq!(report.format, ImportFormat::ChatJsonl);
    assert_eq!(report.messages, 2);
    // The same array on one line.
    let text = std::fs::read_to_string(&list).unwrap().replace('\n', "");
    std::fs::write(&list, text).unwrap();
    let report = store.import_jsonl(&list, SessionSource::Cli).unwrap();
    assert_eq!(report.format, ImportFormat::ChatJsonl);
}

#[test]
fn bad_files_import_nothing_and_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = memory();
    let cases = [
        ("empty.jsonl", "\n  \n".to_owned(), "empty"),
        (
            "unknown.jsonl",
            "{\"hello\":\"world\"}\n".to_owned(),
            "unknown transcript format",
        ),
        (
            "broken.jsonl",
            {
                let good = std::fs::read_to_string(fixture("claude_code.jsonl")).unwrap();
                let mut lines: Vec<&str> = good.lines().collect();
                lines.insert(6, "{\"type\":\"user\",\"message\":");
                lines.join("\n")
            },
            "line 7: not valid JSON",
        ),
        (
            "nomessages.jsonl",
            "{\"type\":\"summary\",\"summary\":\"x\"}\n{\"type\":\"file-history-snapshot\"}\n"
                .to_owned(),
            "no messages to import",
        ),
    ];
    for (name, text, expected) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let err = store.import_jsonl(&file, SessionSource::Cli).unwrap_err();
        assert!(matches!(err, StoreError::BadImport { .. }), "{err:?}");
        assert!(err.to_string().contains(expected), "{name}: {err}");
        assert!(err.to_string().contains(name), "{err}");
    }
    assert!(store.recent_sessions(10, None).unwrap().is_empty());
    let err = store
        .import_jsonl(dir.path().join("missing.jsonl"), SessionSource::Cli)
        .unwrap_err();
    assert!(matches!(err, StoreError::Io { .. }));
}

fn exported_session(store: &mut Store) -> Vec<Message> {
    store
        .create_session(&new_session("ses_round", "/w"))
        .unwrap();
    let c = call("c9", "read_file", r#"{"path":"a.rs"}"#);
    let messages = vec![
        Message::user("read a.rs"),
        Message::assistant("reading", vec![c.clone()]).with_reasoning(vec![Reasoning::Thinking {
            thinking: "t".into(),
            signature: "s".into(),
        }]),
        Message::tool_result(&c, "fn main() {}", false),
        Message::tool_result(&c, "oops", true),
        Message::assistant("done", vec![]),
    ];
    store.append_messages("ses_round", &messages).unwrap();
    messages
}

#[test]
fn jsonl_export_round_trips_into_the_same_session() {
    let mut source = memory();
    let original = exported_session(&mut source);
    source
        .set_summary("ses_round", "Read a.rs; it has a main.")
        .unwrap();
    let mut out = Vec::new();
    source.export_jsonl("ses_round", &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), 1 + original.len());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, &text).unwrap();

    // Into another store: the same id, messages, times and metadata.
    let mut other = memory();
    let report = other.import_jsonl(&file, SessionSource::Api).unwrap();
    assert_eq!(report.format, ImportFormat::Herald);
    assert_eq!(report.session_id, "ses_round");
    assert!(
        report.skipped.is_empty() && report.repaired.is_empty(),
        "{report:?}"
    );
    let (a, b) = (
        source.get_session("ses_round").unwrap().unwrap(),
        other.get_session("ses_round").unwrap().unwrap(),
    );
    assert_eq!(
        (
            &b.title,
            &b.cwd,
            &b.model,
            &b.provider,
            &b.system_prompt,
            b.started_at
        ),
        (
            &a.title,
            &a.cwd,
            &a.model,
            &a.provider,
            &a.system_prompt,
            a.started_at
        )
    );
    assert_eq!(b.source, SessionSource::Api);
    assert_eq!(b.summary.as_deref(), Some("Read a.rs; it has a main."));
    let strip = |s: &Store| -> Vec<(i64, i64, Message)> {
        s.load_messages("ses_round")
            .unwrap()
            .into_iter()
            .map(|m| (m.seq, m.created_at, m.message))
            .collect()
    };
    assert_eq!(strip(&other), strip(&source));
    // Exported again, it is the same file.
    let mut again = Vec::new();
    other.export_jsonl("ses_round", &mut again).unwrap();
    let header = |t: &str| -> serde_json::Value {
        let mut v: serde_json::Value = serde_json::from_str(t.lines().next().unwrap()).unwrap();
        v["session"]["source"] = serde_json::Value::Null;
        v["session"]["last_active_at"] = serde_json::Value::Null;
        v
    };
    let again = String::from_utf8(again).unwrap();
    assert_eq!(header(&again), header(&text));
    assert_eq!(
        again.lines().skip(1).collect::<Vec<_>>(),
        text.lines().skip(1).collect::<Vec<_>>()
    );

    // Into the store that has it: a new id, said so.
    let report = source.import_jsonl(&file, SessionSource::Cli).unwrap();
    assert!(report.session_id.starts_with("imp_"));
    assert!(
        report.sessions[0]
            .note
            .as_deref()
            .unwrap()
            .contains("ses_round already exists")
    );
    assert_eq!(load(&source, &report.session_id), original);
}

#[test]
fn pretty_json_export_is_for_people_and_imports_too() {
    let mut store = memory();
    let original = exported_session(&mut store);
    store
        .record_usage(
            "ses_round",
            "m",
            &Usage {
                input_tokens: 3,
                ..Usage::default()
            },
            Some(0.1),
        )
        .unwrap();
    let doc = store.export_session("ses_round").unwrap();
    assert_eq!(doc["format"], "herald.session");
    assert_eq!(doc["session"]["source"], "cli");
    assert_eq!(doc["messages"][0]["seq"], 1);
    assert_eq!(doc["usage"][0]["input_tokens"], 3);
    assert!(matches!(
        store.export_session("nope"),
        Err(StoreError::UnknownSession(_))
    ));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let mut other = memory();
    let report = other.import_jsonl(&file, SessionSource::Cli).unwrap();
    assert_eq!(report.session_id, "ses_round");
    assert_eq!(load(&other, "ses_round"), original);
}

#[test]
fn an_imported_session_adopts_one_system_prompt_once() {
    let mut store = memory();
    let report = store
        .import_jsonl(fixture("codex_legacy.jsonl"), SessionSource::Cli)
        .unwrap();
    let id = report.session_id;
    assert_eq!(
        store
            .adopt_system_prompt(&id, "herald prompt", "/here")
            .unwrap(),
        "herald prompt"
    );
    assert_eq!(
        store.adopt_system_prompt(&id, "another", "/there").unwrap(),
        "herald prompt"
    );
    let session = store.get_session(&id).unwrap().unwrap();
    assert_eq!(session.cwd, "/here");
    assert!(matches!(
        store.adopt_system_prompt("nope", "x", "/"),
        Err(StoreError::UnknownSession(_))
    ));
}

#[test]
fn a_lenient_import_leaves_malformed_records_out_and_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = memory();
    let good = std::fs::read_to_string(fixture("claude_code.jsonl")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(6, "{\"type\":\"user\",\"message\":");
    lines.insert(2, "\u{0}not json");
    let file = dir.path().join("broken.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let report = store
        .import_transcript(&file, SessionSource::Cli, herald_store::ImportMode::Lenient)
        .unwrap();
    let lines: Vec<usize> = report.malformed.iter().map(|m| m.line).collect();
    assert_eq!(lines, [3, 8], "{:?}", report.malformed);
    assert!(report.malformed[1].reason.contains("not valid JSON"));
    assert!(report.messages > 2);
    // Strict: the same file imports nothing, as before.
    let err = store
        .import_transcript(&file, SessionSource::Cli, herald_store::ImportMode::Strict)
        .unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
    assert_eq!(store.recent_sessions(10, None).unwrap().len(), 1);
}
