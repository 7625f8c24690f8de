//! The message search index is caught up when searched (schema v18): a
//! stored message waits outside the index until the next search, which
//! finds it as if it had been indexed at once; edits, deletes and reused
//! ids keep the index consistent with its content table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{new_session, query, session_with};
use herald_protocol::Message;
use herald_store::Store;

/// FTS5's own check that the index matches the `messages` rows it covers;
/// it fails with "database disk image is malformed" otherwise.
fn assert_index_consistent(path: &std::path::Path) {
    let raw = rusqlite::Connection::open(path).unwrap();
    raw.execute(
        "INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)",
        [],
    )
    .unwrap();
}

/// Rows in the index, counted from FTS5's document-size table.
fn indexed_rows(path: &std::path::Path) -> i64 {
    let raw = rusqlite::Connection::open(path).unwrap();
    raw.query_row("SELECT count(*) FROM messages_fts_docsize", [], |r| {
        r.get(0)
    })
    .unwrap()
}

#[test]
fn storing_does_not_index_and_the_next_search_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    let ids = session_with(&mut store, "s", &["hello", "a quokka appeared"]);
    assert_eq!(store.unindexed_messages().unwrap(), 2);
    assert_eq!(indexed_rows(&path), 0);

    let hits = query(&store, "quokka");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message.as_ref().unwrap().id, ids[1]);
    assert_eq!(store.unindexed_messages().unwrap(), 0);
    assert_eq!(indexed_rows(&path), 2);
    // Nothing new: catching up again indexes nothing and changes nothing.
    assert_eq!(store.catch_up_search_index().unwrap(), 0);
    assert_eq!(indexed_rows(&path), 2);
    assert_index_consistent(&path);

    // A second batch of messages is found by the next search too.
    store
        .append_messages("s", &[Message::user("then a wombat")])
        .unwrap();
    assert_eq!(store.unindexed_messages().unwrap(), 1);
    assert_eq!(query(&store, "wombat").len(), 1);
    assert_eq!(indexed_rows(&path), 3);
    assert_index_consistent(&path);
}

#[test]
fn a_backlog_larger_than_one_batch_is_indexed_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    store.create_session(&new_session("big", "/work")).unwrap();
    let messages: Vec<Message> = (0..1_234)
        .map(|i| Message::user(format!("message number{i} about capybaras")))
        .collect();
    store.append_messages("big", &messages).unwrap();
    assert_eq!(store.catch_up_search_index().unwrap(), 1_234);
    assert_eq!(store.unindexed_messages().unwrap(), 0);
    assert_eq!(indexed_rows(&path), 1_234);
    // The first, a middle and the last message are all found.
    for term in ["number0", "number617", "number1233"] {
        assert_eq!(query(&store, term).len(), 1, "{term}");
    }
    assert_index_consistent(&path);
}

#[test]
fn large_messages_are_indexed_across_several_batches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    store.create_session(&new_session("logs", "/work")).unwrap();
    // Five 400 KB tool outputs: more text than one batch takes.
    let messages: Vec<Message> = (0..5)
        .map(|i| Message::user(format!("{} marker{i}", "build log line ".repeat(27_000))))
        .collect();
    store.append_messages("logs", &messages).unwrap();
    assert_eq!(store.catch_up_search_index().unwrap(), 5);
    assert_eq!(store.unindexed_messages().unwrap(), 0);
    for i in 0..5 {
        assert_eq!(query(&store, &format!("marker{i}")).len(), 1);
    }
    assert_index_consistent(&path);
}

#[test]
fn deleting_indexed_and_unindexed_messages_keeps_the_index_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    session_with(&mut store, "old", &["an indexed platypus"]);
    assert_eq!(query(&store, "platypus").len(), 1);
    session_with(&mut store, "new", &["an unindexed echidna"]);
    assert_eq!(store.unindexed_messages().unwrap(), 1);

    // Deleting a session never indexed must not issue FTS deletes for rows
    // the index never held (that corrupts an external-content index).
    assert!(store.delete_session("new").unwrap());
    assert_index_consistent(&path);
    assert_eq!(indexed_rows(&path), 1);
    // Deleting an indexed one removes its rows from the index.
    assert!(store.delete_session("old").unwrap());
    assert_index_consistent(&path);
    assert_eq!(indexed_rows(&path), 0);
    assert!(query(&store, "platypus").is_empty());
    assert!(query(&store, "echidna").is_empty());
}

#[test]
fn a_reused_message_id_below_the_watermark_is_indexed_when_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    session_with(&mut store, "keep", &["first session"]);
    let gone = session_with(&mut store, "gone", &["the newest message"]);
    store.catch_up_search_index().unwrap();
    // Deleting the newest row lets SQLite hand its id out again, below the
    // watermark: the insert trigger indexes it at once.
    assert!(store.delete_session("gone").unwrap());
    let reused = session_with(&mut store, "again", &["a reused narwhal"]);
    assert_eq!(
        reused, gone,
        "SQLite reuses the highest rowid after a delete"
    );
    assert_eq!(store.unindexed_messages().unwrap(), 0);
    assert_eq!(indexed_rows(&path), 2);
    assert_index_consistent(&path);
    assert_eq!(query(&store, "narwhal").len(), 1);
}

#[test]
fn an_edited_message_is_reindexed_only_once_it_is_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    let ids = session_with(&mut store, "s", &["hello", "a quokka appeared"]);
    let raw = rusqlite::Connection::open(&path).unwrap();
    // Edited before it was indexed: no trigger work, the catch-up indexes
    // the new text.
    raw.execute(
        "UPDATE messages SET content = 'a wombat appeared' WHERE id = ?1",
        [ids[1]],
    )
    .unwrap();
    assert!(query(&store, "quokka").is_empty());
    assert_eq!(query(&store, "wombat").len(), 1);
    // Edited after: the update trigger swaps the indexed text.
    raw.execute(
        "UPDATE messages SET content = 'a dingo appeared' WHERE id = ?1",
        [ids[1]],
    )
    .unwrap();
    assert!(query(&store, "wombat").is_empty());
    assert_eq!(query(&store, "dingo").len(), 1);
    assert_index_consistent(&path);
}

#[test]
fn two_connections_catching_up_at_once_index_each_message_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    store.create_session(&new_session("s", "/work")).unwrap();
    let messages: Vec<Message> = (0..3_000)
        .map(|i| Message::user(format!("line{i} of a long log")))
        .collect();
    store.append_messages("s", &messages).unwrap();
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || Store::open(&path).unwrap().catch_up_search_index())
        })
        .collect();
    let indexed: u64 = threads
        .into_iter()
        .map(|t| t.join().unwrap().unwrap())
        .sum();
    assert_eq!(indexed, 3_000);
    assert_eq!(indexed_rows(&path), 3_000);
    assert_index_consistent(&path);
}
