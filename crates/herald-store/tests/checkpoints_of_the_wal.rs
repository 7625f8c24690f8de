//! When the write-ahead log is copied back into the database: not before it
//! holds 16 MiB (SQLite's default is 4 MiB), and in full when the store
//! closes, so nothing is left behind and nothing is lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::new_session;
use herald_protocol::Message;
use herald_store::Store;

fn wal_len(db: &std::path::Path) -> u64 {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(0, |m| m.len())
}

#[test]
fn the_wal_grows_past_sqlites_default_and_is_folded_in_at_close() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let mut store = Store::open(&db).unwrap();
    store.create_session(&new_session("s", "/w")).unwrap();
    // 200 turns of 40 KB: about 8 MiB of pages, one transaction each. With
    // a checkpoint every 4 MiB the log would restart and stay near 4 MiB.
    let text = "x".repeat(40_000);
    for _ in 0..200 {
        store
            .append_messages("s", &[Message::user(text.as_str())])
            .unwrap();
    }
    let grown = wal_len(&db);
    assert!(
        grown > 6 * 1024 * 1024,
        "the WAL was checkpointed early: {grown} bytes"
    );
    drop(store);
    assert_eq!(wal_len(&db), 0, "closing the store leaves a WAL behind");
    let store = Store::open(&db).unwrap();
    assert_eq!(store.load_messages("s").unwrap().len(), 200);
}
