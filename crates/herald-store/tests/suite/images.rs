//! Images of tool results survive the store (messages, kept batch results,
//! export and import) and stay out of the full-text index.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{call, memory, new_session};
use herald_protocol::{ImageData, Message};
use herald_store::{PendingResult, SearchRequest, SessionSource, Store};

/// A 1x1 PNG; its last base64 word is what the index must not hold.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const BASE64_WORD: &str = "M9QDwADhgGAWjR9awAAAABJRU5ErkJggg";

fn history() -> Vec<Message> {
    let shot = call("c1", "mcp__browser__screenshot", "{}");
    let read = call("c2", "read_file", r#"{"path":"a"}"#);
    vec![
        Message::user("take a screenshot"),
        Message::assistant("", vec![shot.clone(), read.clone()]),
        Message::tool_result(&shot, "[image: image/png, 70 bytes] zebrashot", false).with_images(
            vec![
                ImageData::new("image/png", PNG),
                ImageData::new("image/png", PNG),
            ],
        ),
        Message::tool_result(&read, "plain", false),
    ]
}

fn search(store: &Store, query: &str) -> Vec<String> {
    store
        .search(&SearchRequest {
            query: query.into(),
            limit: 10,
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|h| h.session.id)
        .collect()
}

#[test]
fn images_survive_a_reopen_and_are_not_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let original = history();
    {
        let mut store = Store::open(&path).unwrap();
        store.create_session(&new_session("s1", "/w")).unwrap();
        store.append_messages("s1", &original).unwrap();
        // The control: the same base64 as text is found, so the search
        // below would find it if the images column were indexed.
        store.create_session(&new_session("s2", "/w")).unwrap();
        store
            .append_messages("s2", &[Message::user(format!("pasted {PNG}"))])
            .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let loaded: Vec<Message> = store
        .load_messages("s1")
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(loaded, original);
    assert_eq!(loaded[2].images.len(), 2);
    assert_eq!(search(&store, BASE64_WORD), ["s2"]);
    // The text line describing the image is searchable as usual.
    assert_eq!(search(&store, "zebrashot"), ["s1"]);

    // Messages without images leave the column NULL: the rows are what
    // they were before images existed.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let nulls: Vec<bool> = conn
        .prepare("SELECT images IS NULL FROM messages WHERE session_id = 's1' ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(nulls, [true, true, false, true]);
}

#[test]
fn kept_batch_results_keep_their_images() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    let kept = PendingResult {
        call_id: "c1".into(),
        content: "[image: image/png, 70 bytes]".into(),
        is_error: false,
        images: vec![ImageData::new("image/png", PNG)],
    };
    store.save_pending_result("s", &kept).unwrap();
    let plain = PendingResult {
        call_id: "c2".into(),
        content: "text".into(),
        is_error: true,
        images: Vec::new(),
    };
    store.save_pending_result("s", &plain).unwrap();
    assert_eq!(store.pending_results("s").unwrap(), [kept, plain]);
}

#[test]
fn export_and_import_carry_images() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    store.append_messages("s", &history()).unwrap();
    let mut out = Vec::new();
    store.export_jsonl("s", &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    // Lines of messages without images are as before (no "images" key).
    assert_eq!(text.matches("\"images\"").count(), 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, &text).unwrap();
    let report = store.import_jsonl(&file, SessionSource::Cli).unwrap();
    assert!(
        report.skipped.is_empty() && report.repaired.is_empty(),
        "{report:?}"
    );
    let imported: Vec<Message> = store
        .load_messages(&report.session_id)
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(imported, history());
}
