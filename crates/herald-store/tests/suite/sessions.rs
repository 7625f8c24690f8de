#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{call, child_session, memory, new_session, session_with};
use herald_protocol::{Message, Usage};
use herald_store::{ListFilter, NewSession, SCHEMA_VERSION, SearchRequest, Store, StoreError};

#[test]
fn data_survives_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dirs/state.db");
    let original = vec![
        Message::user("hello there"),
        Message::assistant("", vec![call("c1", "terminal", r#"{"command":"ls -la"}"#)]),
        Message::tool_result(&call("c1", "terminal", "{}"), "total 0", true),
    ];
    {
        let mut store = Store::open(&path).unwrap();
        store.create_session(&new_session("s1", "/work")).unwrap();
        store.append_messages("s1", &original).unwrap();
        store
            .record_usage(
                "s1",
                "m",
                &Usage {
                    input_tokens: 10,
                    ..Usage::default()
                },
                Some(0.5),
            )
            .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let session = store.get_session("s1").unwrap().unwrap();
    assert_eq!(
        session.system_prompt,
        "You are a test.\n  Keep   spacing.\n"
    );
    assert_eq!(session.message_count, 3);
    assert_eq!(session.input_tokens, 10);
    let loaded: Vec<Message> = store
        .load_messages("s1")
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(loaded, original);
}

#[test]
fn appends_get_consecutive_positions_across_calls() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    let mut ids = store
        .append_messages(
            "s",
            &[Message::user("one"), Message::assistant("two", vec![])],
        )
        .unwrap();
    ids.extend(
        store
            .append_messages("s", &[Message::user("three")])
            .unwrap(),
    );
    assert!(store.append_messages("s", &[]).unwrap().is_empty());
    ids.extend(
        store
            .append_messages("s", &[Message::assistant("four", vec![])])
            .unwrap(),
    );
    let stored = store.load_messages("s").unwrap();
    assert_eq!(
        stored.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    assert_eq!(stored.iter().map(|m| m.id).collect::<Vec<_>>(), ids);
    let texts: Vec<&str> = stored.iter().map(|m| m.message.content.as_str()).collect();
    assert_eq!(texts, ["one", "two", "three", "four"]);
    assert_eq!(store.get_session("s").unwrap().unwrap().message_count, 4);
}

#[test]
fn title_comes_from_the_first_user_message_with_text() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    store
        .append_messages(
            "s",
            &[
                Message::assistant("greeting", vec![]),
                Message::user("  \n "),
            ],
        )
        .unwrap();
    assert_eq!(store.get_session("s").unwrap().unwrap().title, None);
    store
        .append_messages(
            "s",
            &[
                Message::user("\n  Fix the flaky test  \nin ci"),
                Message::user("other"),
            ],
        )
        .unwrap();
    store
        .append_messages("s", &[Message::user("later")])
        .unwrap();
    let title = store.get_session("s").unwrap().unwrap().title;
    assert_eq!(title.as_deref(), Some("Fix the flaky test"));

    store.create_session(&new_session("long", "/w")).unwrap();
    store
        .append_messages("long", &[Message::user("word ".repeat(40))])
        .unwrap();
    let title = store.get_session("long").unwrap().unwrap().title.unwrap();
    assert_eq!(title.chars().count(), 80);
    assert!(title.ends_with('…'));

    store.set_title("long", "custom").unwrap();
    assert_eq!(
        store.get_session("long").unwrap().unwrap().title.as_deref(),
        Some("custom")
    );
}

#[test]
fn unknown_and_duplicate_sessions_are_named_errors_and_change_nothing() {
    let mut store = memory();
    let err = store
        .append_messages("nope", &[Message::user("x")])
        .unwrap_err();
    assert!(matches!(&err, StoreError::UnknownSession(id) if id == "nope"));
    assert!(err.to_string().contains("'nope'"));
    assert!(matches!(
        store.load_messages("nope"),
        Err(StoreError::UnknownSession(_))
    ));
    assert!(matches!(
        store.end_session("nope", "done"),
        Err(StoreError::UnknownSession(_))
    ));
    assert!(matches!(
        store.record_usage("nope", "m", &Usage::default(), None),
        Err(StoreError::UnknownSession(_))
    ));
    assert!(store.get_session("nope").unwrap().is_none());
    assert!(!store.delete_session("nope").unwrap());

    session_with(&mut store, "s", &["first"]);
    let err = store
        .create_session(&new_session("s", "/elsewhere"))
        .unwrap_err();
    assert!(matches!(&err, StoreError::SessionExists(id) if id == "s"));
    let kept = store.get_session("s").unwrap().unwrap();
    assert_eq!(kept.cwd, "/work");
    assert_eq!(kept.message_count, 1);
}

#[test]
fn usage_is_recorded_per_request_and_totalled() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    let first = Usage {
        input_tokens: 100,
        output_tokens: 20,
        cached_tokens: 80,
        cache_creation_tokens: 5,
    };
    store.record_usage("s", "gpt", &first, Some(0.25)).unwrap();
    store.record_usage("s", "gpt", &first, None).unwrap();
    let s = store.get_session("s").unwrap().unwrap();
    assert_eq!(
        (
            s.input_tokens,
            s.output_tokens,
            s.cached_tokens,
            s.cache_creation_tokens
        ),
        (200, 40, 160, 10)
    );
    assert!((s.cost_usd - 0.25).abs() < 1e-9);
    let rows = store.session_usage("s").unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].cost_usd, Some(0.25));
    assert_eq!(rows[1].cost_usd, None);
    assert_eq!(rows[1].cached_tokens, 80);
}

#[test]
fn ending_and_reopening_a_session() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    store.end_session("s", "completed").unwrap();
    let s = store.get_session("s").unwrap().unwrap();
    assert!(s.ended_at.is_some());
    assert_eq!(s.end_reason.as_deref(), Some("completed"));
    store.reopen_session("s").unwrap();
    let s = store.get_session("s").unwrap().unwrap();
    assert_eq!((s.ended_at, s.end_reason), (None, None));
}

#[test]
fn listing_filters_and_orders_newest_first() {
    let mut store = memory();
    store.create_session(&new_session("a", "/one")).unwrap();
    store.create_session(&new_session("b", "/two")).unwrap();
    store.create_session(&new_session("c", "/one")).unwrap();
    store
        .create_session(&child_session("c-child", "c"))
        .unwrap();

    let ids = |filter: &ListFilter| -> Vec<String> {
        store
            .list_sessions(filter)
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect()
    };
    assert_eq!(ids(&ListFilter::default()), ["c", "b", "a"]);
    assert_eq!(
        ids(&ListFilter {
            include_subagents: true,
            ..ListFilter::default()
        }),
        ["c-child", "c", "b", "a"]
    );
    assert_eq!(
        ids(&ListFilter {
            cwd: Some("/one".into()),
            ..ListFilter::default()
        }),
        ["c", "a"]
    );
    assert_eq!(
        ids(&ListFilter {
            limit: 2,
            ..ListFilter::default()
        }),
        ["c", "b"]
    );
    assert_eq!(
        ids(&ListFilter {
            parent: Some("c".into()),
            ..ListFilter::default()
        }),
        ["c-child"]
    );
}

#[test]
fn listing_pages_and_filters_by_model_time_and_end() {
    let mut store = memory();
    for id in ["a", "b", "c", "d"] {
        store.create_session(&new_session(id, "/one")).unwrap();
    }
    store
        .create_session(&NewSession {
            model: "other-model".to_owned(),
            ..new_session("e", "/one")
        })
        .unwrap();
    store.end_session("b", "completed").unwrap();
    let ids = |filter: ListFilter| -> Vec<String> {
        store
            .list_sessions(&filter)
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect()
    };
    let page = |limit, offset| ListFilter {
        limit,
        offset,
        ..ListFilter::default()
    };
    assert_eq!(ids(page(2, 0)), ["e", "d"]);
    assert_eq!(ids(page(2, 2)), ["c", "b"]);
    assert_eq!(ids(page(2, 4)), ["a"]);
    assert_eq!(ids(page(0, 3)), ["b", "a"], "no limit, an offset");
    assert!(ids(page(2, 9)).is_empty());
    assert_eq!(
        ids(ListFilter {
            model: Some("other-model".into()),
            ..ListFilter::default()
        }),
        ["e"]
    );
    assert_eq!(
        ids(ListFilter {
            ended: Some(true),
            ..ListFilter::default()
        }),
        ["b"]
    );
    assert_eq!(
        ids(ListFilter {
            ended: Some(false),
            ..ListFilter::default()
        }),
        ["e", "d", "c", "a"]
    );
    let started: Vec<i64> = store
        .list_sessions(&ListFilter::default())
        .unwrap()
        .iter()
        .map(|s| s.started_at)
        .collect();
    let (newest, oldest) = (started[0], started[started.len() - 1]);
    assert_eq!(
        ids(ListFilter {
            started_from: Some(oldest),
            started_until: Some(newest + 1),
            ..ListFilter::default()
        })
        .len(),
        5
    );
    assert!(
        ids(ListFilter {
            started_from: Some(newest + 1),
            ..ListFilter::default()
        })
        .is_empty()
    );
    assert!(
        ids(ListFilter {
            started_until: Some(oldest),
            ..ListFilter::default()
        })
        .is_empty()
    );
}

#[test]
fn latest_session_is_the_most_recently_active_top_level_one() {
    let mut store = memory();
    assert!(store.latest_session_in("/one").unwrap().is_none());
    store.create_session(&new_session("old", "/one")).unwrap();
    store.create_session(&new_session("new", "/one")).unwrap();
    store.create_session(&new_session("other", "/two")).unwrap();
    assert_eq!(store.latest_session_in("/one").unwrap().unwrap().id, "new");
    std::thread::sleep(Duration::from_millis(5));
    store
        .append_messages("old", &[Message::user("resumed")])
        .unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let mut child = child_session("kid", "new");
    child.cwd = "/one".into();
    store.create_session(&child).unwrap();
    assert_eq!(store.latest_session_in("/one").unwrap().unwrap().id, "old");
}

#[test]
fn delete_removes_descendants_messages_usage_and_index_entries() {
    let mut store = memory();
    session_with(&mut store, "root", &["zebracorn in the root"]);
    store.create_session(&child_session("kid", "root")).unwrap();
    store
        .append_messages("kid", &[Message::user("zebracorn in the kid")])
        .unwrap();
    store
        .create_session(&child_session("grandkid", "kid"))
        .unwrap();
    store
        .append_messages("grandkid", &[Message::user("zebracorn in the grandkid")])
        .unwrap();
    store
        .record_usage("grandkid", "m", &Usage::default(), None)
        .unwrap();
    session_with(&mut store, "bystander", &["zebracorn elsewhere"]);

    let search = |store: &Store| {
        let request = SearchRequest {
            query: "zebracorn".into(),
            limit: 10,
            ..Default::default()
        };
        let mut ids: Vec<String> = store
            .search(&request)
            .unwrap()
            .into_iter()
            .map(|h| h.session.id)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(search(&store), ["bystander", "grandkid", "kid", "root"]);
    assert!(store.delete_session("root").unwrap());
    for gone in ["root", "kid", "grandkid"] {
        assert!(store.get_session(gone).unwrap().is_none(), "{gone}");
    }
    assert_eq!(search(&store), ["bystander"]);
    assert_eq!(store.load_messages("bystander").unwrap().len(), 1);
}

#[test]
fn prune_deletes_whole_trees_whose_activity_is_old() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    session_with(&mut store, "stale", &["old work"]);
    store
        .create_session(&child_session("stale-kid", "stale"))
        .unwrap();
    session_with(&mut store, "fresh", &["new work"]);
    store
        .create_session(&child_session("fresh-kid", "fresh"))
        .unwrap();
    session_with(&mut store, "old-root-new-kid", &["x"]);
    store
        .create_session(&child_session("busy-kid", "old-root-new-kid"))
        .unwrap();

    // Age sessions behind the store's back.
    let raw = rusqlite::Connection::open(&path).unwrap();
    let forty_days_ms: i64 = 40 * 24 * 3600 * 1000;
    raw.execute(
        "UPDATE sessions SET last_active_at = last_active_at - ?1, started_at = started_at - ?1 \
         WHERE id IN ('stale', 'stale-kid', 'fresh-kid', 'old-root-new-kid')",
        [forty_days_ms],
    )
    .unwrap();
    drop(raw);

    let deleted = store
        .prune_older_than(Duration::from_secs(30 * 24 * 3600))
        .unwrap();
    assert_eq!(deleted, 2);
    let mut left: Vec<String> = store
        .list_sessions(&ListFilter {
            include_subagents: true,
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    left.sort();
    assert_eq!(left, ["busy-kid", "fresh", "fresh-kid", "old-root-new-kid"]);
    assert_eq!(
        store.prune_older_than(Duration::from_secs(3600)).unwrap(),
        0
    );
}

/// Schema v1 exactly as released; frozen here so the upgrade path is tested
/// against the real old layout, not the current code's idea of it.
const FROZEN_V1: &str = r#"
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, parent_session_id TEXT, agent_id TEXT, source TEXT NOT NULL,
    cwd TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '', provider TEXT NOT NULL DEFAULT '',
    title TEXT, system_prompt TEXT NOT NULL DEFAULT '', started_at INTEGER NOT NULL,
    ended_at INTEGER, end_reason TEXT, last_active_at INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0, cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0, message_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_cwd_started ON sessions(cwd, started_at);
CREATE INDEX sessions_parent ON sessions(parent_session_id);
CREATE INDEX sessions_last_active ON sessions(last_active_at);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL DEFAULT '',
    tool_calls TEXT, tool_call_id TEXT, tool_name TEXT, is_error INTEGER NOT NULL DEFAULT 0,
    tokens INTEGER, created_at INTEGER NOT NULL,
    UNIQUE(session_id, seq)
);
PRAGMA user_version = 1;
INSERT INTO sessions (id, source, cwd, title, system_prompt, started_at, last_active_at, message_count)
VALUES ('legacy', 'cli', '/old', 'legacy work', 'old prompt', 1000, 2000, 2);
INSERT INTO messages (session_id, seq, role, content, created_at)
VALUES ('legacy', 1, 'user', 'how do I configure the flux-capacitor', 1500),
       ('legacy', 2, 'assistant', 'set flux.level in settings', 1600);
"#;

#[test]
fn a_version_1_database_is_upgraded_with_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(FROZEN_V1)
        .unwrap();

    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let legacy = store.get_session("legacy").unwrap().unwrap();
    assert_eq!(legacy.title.as_deref(), Some("legacy work"));
    assert_eq!(legacy.system_prompt, "old prompt");
    assert_eq!(store.load_messages("legacy").unwrap().len(), 2);

    // v2 backfilled the index from the old rows.
    let hits = store
        .search(&SearchRequest {
            query: "flux-capacitor".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message.as_ref().unwrap().seq, 1);
    // v3's table exists and works; new appends continue the old numbering.
    store
        .record_usage(
            "legacy",
            "m",
            &Usage {
                output_tokens: 7,
                ..Usage::default()
            },
            None,
        )
        .unwrap();
    store
        .append_messages("legacy", &[Message::user("and the warp-drive?")])
        .unwrap();
    assert_eq!(store.load_messages("legacy").unwrap()[2].seq, 3);
    let hits = store
        .search(&SearchRequest {
            query: "warp-drive".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(hits.len(), 1);
}

#[test]
fn a_file_that_is_not_a_database_is_reported_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(&path, vec![0x42u8; 8192]).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string()) && text.contains("move it aside"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        vec![0x42u8; 8192],
        "file left intact"
    );
}

#[test]
fn a_database_from_a_newer_herald_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 42;")
        .unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaTooNew { found: 42, .. }),
        "{err:?}"
    );
}

#[test]
fn an_uncreatable_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let err = Store::open(blocker.join("sub/state.db")).unwrap_err();
    assert!(matches!(err, StoreError::CreateDir { .. }), "{err:?}");
    assert!(err.to_string().contains("HERALD_HOME"));
}

#[test]
fn a_large_append_keeps_order_ids_and_index() {
    let mut store = memory();
    store.create_session(&new_session("big", "/w")).unwrap();
    store
        .append_messages("big", &[Message::user("first")])
        .unwrap();
    let batch: Vec<Message> = (0..301)
        .map(|i| Message::user(format!("row{i} text")))
        .collect();
    let ids = store.append_messages("big", &batch).unwrap();
    assert_eq!(ids.len(), 301);
    let stored = store.load_messages("big").unwrap();
    assert_eq!(stored.len(), 302);
    for (i, m) in stored.iter().enumerate() {
        assert_eq!(m.seq, i as i64 + 1);
    }
    assert_eq!(stored[1..].iter().map(|m| m.id).collect::<Vec<_>>(), ids);
    assert_eq!(stored[300].message.content, "row299 text");
    let hit = store
        .search(&SearchRequest {
            query: "row257".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(hit[0].message.as_ref().unwrap().seq, 259);
    assert_eq!(
        store.get_session("big").unwrap().unwrap().message_count,
        302
    );
}

#[test]
fn a_write_lock_held_too_long_is_reported_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    store.create_session(&new_session("s", "/w")).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();

    let started = std::time::Instant::now();
    let err = store
        .append_messages("s", &[Message::user("blocked")])
        .unwrap_err();
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "waits for the busy timeout first"
    );
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    assert!(
        err.to_string().contains("close other herald processes"),
        "{err}"
    );

    other.execute_batch("ROLLBACK").unwrap();
    store
        .append_messages("s", &[Message::user("now it works")])
        .unwrap();
    assert_eq!(store.load_messages("s").unwrap().len(), 1);
}

#[test]
fn the_store_can_move_to_another_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<Store>();
}

#[test]
fn committed_messages_survive_a_store_that_is_never_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    store.create_session(&new_session("s", "/w")).unwrap();
    store
        .append_messages("s", &[Message::user("must not be lost")])
        .unwrap();
    // No close, no checkpoint: like a process killed right after the append.
    std::mem::forget(store);
    let reopened = Store::open(&path).unwrap();
    let messages = reopened.load_messages("s").unwrap();
    assert_eq!(messages[0].message.content, "must not be lost");
}

#[test]
fn messages_inserted_in_the_middle_load_in_their_place_and_stay_searchable() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    let a = call("a", "terminal", "{}");
    let history = vec![
        Message::user("first"),
        Message::assistant("", vec![a.clone()]),
        Message::user("second"),
        Message::assistant("done", vec![]),
    ];
    store.append_messages("s", &history).unwrap();
    let repair = Message::tool_result(&a, "interrupted marker zebra", true);
    store
        .insert_messages_after("s", 2, std::slice::from_ref(&repair))
        .unwrap();
    let loaded = store.load_messages("s").unwrap();
    let seqs: Vec<i64> = loaded.iter().map(|m| m.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
    let messages: Vec<Message> = loaded.into_iter().map(|m| m.message).collect();
    let mut expected = history.clone();
    expected.insert(2, repair);
    assert_eq!(messages, expected);
    // Later appends continue after the moved messages.
    store
        .append_messages("s", &[Message::user("third")])
        .unwrap();
    assert_eq!(store.load_messages("s").unwrap().last().unwrap().seq, 6);
    let hits = store
        .search(&SearchRequest {
            query: "zebra".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(hits.len(), 1);
}

#[test]
fn delivering_append_marks_agents_and_clears_kept_results_atomically() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    store
        .save_pending_result(
            "s",
            &herald_store::PendingResult {
                call_id: "c1".into(),
                content: "partial".into(),
                is_error: false,
                images: Vec::new(),
            },
        )
        .unwrap();
    // An unknown session fails the whole transaction: nothing is cleared.
    assert!(
        store
            .append_messages_delivering("nope", &[Message::user("x")], &[], true)
            .is_err()
    );
    assert_eq!(store.pending_results("s").unwrap().len(), 1);
    store
        .append_messages_delivering("s", &[Message::user("results")], &["ag_1".into()], true)
        .unwrap();
    assert!(store.pending_results("s").unwrap().is_empty());
    assert_eq!(store.load_messages("s").unwrap().len(), 1);
}
