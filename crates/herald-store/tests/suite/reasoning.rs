//! An assistant message's reasoning (thinking blocks with their signatures,
//! streamed reasoning text) survives the store byte for byte: a resumed
//! session must send Anthropic thinking blocks back unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{call, memory, new_session};
use herald_protocol::{Message, Reasoning};
use herald_store::SessionSource;

fn history() -> Vec<Message> {
    let read = call("c1", "read_file", r#"{"path":"a"}"#);
    vec![
        Message::user("look"),
        Message::assistant("", vec![read.clone()]).with_reasoning(vec![
            Reasoning::Thinking {
                thinking: "I should read \"a\".\n".into(),
                signature: "EqQBCkgIARABGAIiQ+/=".into(),
            },
            Reasoning::RedactedThinking {
                data: "EmwKAhgBEgy3va3pzix/LafPsn4a".into(),
            },
        ]),
        Message::tool_result(&read, "text", false),
        Message::assistant("done", vec![]).with_reasoning(vec![Reasoning::Text {
            text: "it is text".into(),
        }]),
    ]
}

fn load(store: &herald_store::Store, id: &str) -> Vec<Message> {
    store
        .load_messages(id)
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect()
}

#[test]
fn reasoning_round_trips_through_the_store_and_export() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    store.append_messages("s", &history()).unwrap();
    assert_eq!(load(&store, "s"), history());
    let mut out = Vec::new();
    store.export_jsonl("s", &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.matches("\"reasoning\"").count(), 2, "{text}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, &text).unwrap();
    let report = store.import_jsonl(&file, SessionSource::Cli).unwrap();
    assert!(
        report.skipped.is_empty() && report.repaired.is_empty(),
        "{report:?}"
    );
    assert_eq!(load(&store, &report.session_id), history());
}
