#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{call, memory, new_session};
use herald_protocol::{Message, Role, Usage};
use herald_store::{SearchRequest, SessionSource, StoreError};

const TRANSCRIPT: &str = r#"{"role":"system","content":"You are helpful."}
{"role":"user","content":"Deploy the staging cluster\nwith care"}

{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"kubectl apply\"}"}}]}
this line is not json
{"role":"tool","tool_call_id":"call_1","name":"terminal","content":[{"type":"text","text":"deployment configured"}]}
{"role":"robot","content":"beep"}
{"role":"assistant","content":"Done."}
"#;

#[test]
fn import_keeps_good_lines_and_reports_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.jsonl");
    std::fs::write(&file, TRANSCRIPT).unwrap();
    let mut store = memory();
    let report = store.import_jsonl(&file, SessionSource::Cli).unwrap();
    assert!(
        report.session_id.starts_with("imp_"),
        "{}",
        report.session_id
    );
    assert_eq!(report.messages, 4);
    let lines: Vec<usize> = report.bad_lines.iter().map(|b| b.line).collect();
    assert_eq!(lines, [5, 7]);
    assert!(report.bad_lines[1].reason.contains("robot"));

    let session = store.get_session(&report.session_id).unwrap().unwrap();
    assert_eq!(session.system_prompt, "You are helpful.");
    assert_eq!(session.title.as_deref(), Some("Deploy the staging cluster"));
    assert_eq!(session.message_count, 4);
    let messages = store.load_messages(&report.session_id).unwrap();
    let roles: Vec<Role> = messages.iter().map(|m| m.message.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(
        messages[1].message.tool_calls[0].arguments,
        r#"{"command":"kubectl apply"}"#
    );
    assert_eq!(messages[2].message.tool_name.as_deref(), Some("terminal"));
    assert_eq!(messages[2].message.content, "deployment configured");

    let hits = store
        .search(&SearchRequest {
            query: "kubectl".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(hits[0].session.id, report.session_id);
}

#[test]
fn import_without_any_message_fails_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.jsonl");
    std::fs::write(&file, "{\"role\":\"system\",\"content\":\"x\"}\nnot json\n").unwrap();
    let mut store = memory();
    let err = store.import_jsonl(&file, SessionSource::Cli).unwrap_err();
    assert!(
        matches!(err, StoreError::EmptyImport { bad_lines: 1, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("line 2"), "{err}");
    assert!(store.recent_sessions(10, None).unwrap().is_empty());

    let err = store
        .import_jsonl(dir.path().join("missing.jsonl"), SessionSource::Cli)
        .unwrap_err();
    assert!(matches!(err, StoreError::Io { .. }));
    assert!(err.to_string().contains("missing.jsonl"));
}

#[test]
fn jsonl_export_round_trips_through_import() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    let c = call("c9", "read_file", r#"{"path":"a.rs"}"#);
    let original = vec![
        Message::user("read a.rs"),
        Message::assistant("reading", vec![c.clone()]),
        Message::tool_result(&c, "fn main() {}", false),
        Message::tool_result(&c, "oops", true),
        Message::assistant("done", vec![]),
    ];
    store.append_messages("s", &original).unwrap();
    let mut out = Vec::new();
    store.export_jsonl("s", &mut out).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, &out).unwrap();
    let report = store.import_jsonl(&file, SessionSource::Api).unwrap();
    assert!(report.bad_lines.is_empty());
    let imported: Vec<Message> = store
        .load_messages(&report.session_id)
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(imported, original);
    let session = store.get_session(&report.session_id).unwrap().unwrap();
    assert_eq!(
        session.system_prompt,
        "You are a test.\n  Keep   spacing.\n"
    );
    assert_eq!(session.source, SessionSource::Api);
}

#[test]
fn json_export_holds_session_messages_and_usage() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    store.append_messages("s", &[Message::user("hi")]).unwrap();
    store
        .record_usage(
            "s",
            "m",
            &Usage {
                input_tokens: 3,
                ..Usage::default()
            },
            Some(0.1),
        )
        .unwrap();
    let doc = store.export_session("s").unwrap();
    assert_eq!(doc["format"], "herald.session");
    assert_eq!(doc["session"]["id"], "s");
    assert_eq!(doc["session"]["source"], "cli");
    assert_eq!(doc["messages"][0]["seq"], 1);
    assert_eq!(doc["messages"][0]["role"], "user");
    assert_eq!(doc["messages"][0]["content"], "hi");
    assert_eq!(doc["usage"][0]["input_tokens"], 3);
    assert!(matches!(
        store.export_session("nope"),
        Err(StoreError::UnknownSession(_))
    ));
}
