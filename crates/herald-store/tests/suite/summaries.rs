//! Session summaries (schema v15): stored at the end of a session, found by
//! search with the title, and the period filter (`ActiveBetween`) of search
//! and browse.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{child_session, new_session, session_with};
use herald_protocol::Role;
use herald_store::{ActiveBetween, SearchHit, SearchRequest, SearchSort, Store, StoreError};

const DAY_MS: i64 = 86_400_000;

fn search(store: &Store, q: &str, active: ActiveBetween) -> Vec<SearchHit> {
    store
        .search(&SearchRequest {
            query: q.into(),
            limit: 10,
            active,
            ..Default::default()
        })
        .unwrap()
}

fn ids(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.session.id.as_str()).collect()
}

/// Sets a session's start and last activity behind the store's back.
fn set_times(path: &std::path::Path, id: &str, started: i64, last: i64) {
    let raw = rusqlite::Connection::open(path).unwrap();
    raw.execute(
        "UPDATE sessions SET started_at = ?2, last_active_at = ?3 WHERE id = ?1",
        rusqlite::params![id, started, last],
    )
    .unwrap();
}

#[test]
fn a_summary_is_stored_shown_and_found_without_a_matching_message() {
    let mut store = Store::open_in_memory().unwrap();
    session_with(&mut store, "s1", &["fix the build", "done"]);
    session_with(
        &mut store,
        "s2",
        &["write docs", "the capybara chapter is written"],
    );
    assert_eq!(store.get_session("s1").unwrap().unwrap().summary, None);
    assert!(search(&store, "pangolin", ActiveBetween::default()).is_empty());

    store
        .set_summary("s1", "Repaired the pangolin linker flags; CI green again.")
        .unwrap();
    assert_eq!(
        store.get_session("s1").unwrap().unwrap().summary.as_deref(),
        Some("Repaired the pangolin linker flags; CI green again.")
    );
    let hits = search(&store, "pangolin", ActiveBetween::default());
    assert_eq!(ids(&hits), ["s1"]);
    assert!(hits[0].summary_match);
    assert!(hits[0].message.is_none(), "no message holds the word");
    assert!(hits[0].before.is_empty() && hits[0].after.is_empty());

    // A session found through a message and its summary shows the message.
    store
        .set_summary("s2", "Wrote the capybara chapter.")
        .unwrap();
    let hits = search(&store, "capybara", ActiveBetween::default());
    assert_eq!(ids(&hits), ["s2"]);
    assert!(hits[0].summary_match);
    assert_eq!(
        hits[0].message.as_ref().unwrap().message.content,
        "the capybara chapter is written"
    );

    // Replacing the summary re-indexes it; the old words are gone.
    store.set_summary("s1", "Nothing about animals.").unwrap();
    assert!(search(&store, "pangolin", ActiveBetween::default()).is_empty());
    assert_eq!(
        ids(&search(&store, "animals", ActiveBetween::default())),
        ["s1"]
    );

    // A role filter asks for messages: summaries do not count then.
    let hits = store
        .search(&SearchRequest {
            query: "animals".into(),
            role_filter: Some(vec![Role::User]),
            ..Default::default()
        })
        .unwrap();
    assert!(hits.is_empty());

    // The searching session is never its own hit.
    let hits = store
        .search(&SearchRequest {
            query: "animals".into(),
            exclude_session: Some("s1".into()),
            ..Default::default()
        })
        .unwrap();
    assert!(hits.is_empty());

    // Unknown session: an error, nothing stored.
    assert!(matches!(
        store.set_summary("nope", "x"),
        Err(StoreError::UnknownSession(_))
    ));
}

#[test]
fn titles_are_searchable_and_the_index_follows_deletes_and_subagents_stay_out() {
    let mut store = Store::open_in_memory().unwrap();
    session_with(&mut store, "root", &["migrate the okapi database", "ok"]);
    store
        .create_session(&child_session("child", "root"))
        .unwrap();
    store
        .append_messages("child", &[herald_protocol::Message::user("okapi subtask")])
        .unwrap();
    store
        .set_summary("child", "okapi summary of a child")
        .unwrap();
    // The child is found through its message, never through its title or
    // summary (only top-level sessions are in the session index).
    let hits = search(&store, "okapi", ActiveBetween::default());
    let root = hits.iter().find(|h| h.session.id == "root").unwrap();
    assert!(root.summary_match, "the title matched");
    let child = hits.iter().find(|h| h.session.id == "child").unwrap();
    assert!(!child.summary_match);
    assert!(child.message.is_some());

    store.set_title("root", "database move").unwrap();
    let hits = search(&store, "move", ActiveBetween::default());
    assert_eq!(ids(&hits), ["root"]);
    assert!(hits[0].message.is_none());

    assert!(store.delete_session("root").unwrap());
    assert!(search(&store, "move", ActiveBetween::default()).is_empty());
    assert!(search(&store, "okapi", ActiveBetween::default()).is_empty());
}

#[test]
fn the_period_filter_limits_search_and_browse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    let now = 100 * DAY_MS;
    // old: days 10-11; middle: days 50-70 (long-running); new: day 95.
    for (id, started, last) in [("old", 10, 11), ("middle", 50, 70), ("new", 95, 95)] {
        session_with(&mut store, id, &[&format!("{id} walrus notes"), "ok"]);
        set_times(&path, id, started * DAY_MS, last * DAY_MS);
    }
    let store = Store::open(&path).unwrap();
    let all = search(&store, "walrus", ActiveBetween::default());
    assert_eq!(all.len(), 3);
    let since = |d: i64| ActiveBetween {
        since_ms: Some(d * DAY_MS),
        until_ms: None,
    };
    let until = |d: i64| ActiveBetween {
        since_ms: None,
        until_ms: Some(d * DAY_MS),
    };
    let recent = search(&store, "walrus", since(60));
    let mut found = ids(&recent);
    found.sort_unstable();
    assert_eq!(found, ["middle", "new"], "middle was active on day 70");
    assert_eq!(ids(&search(&store, "walrus", until(50))), ["old"]);
    let between = ActiveBetween {
        since_ms: Some(20 * DAY_MS),
        until_ms: Some(90 * DAY_MS),
    };
    assert_eq!(ids(&search(&store, "walrus", between)), ["middle"]);
    assert!(search(&store, "walrus", since(now / DAY_MS + 1)).is_empty());

    // Browse mode, newest activity first, with the same filter.
    let browse = |active| {
        store
            .recent_sessions_in(10, None, active)
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(browse(ActiveBetween::default()), ["new", "middle", "old"]);
    assert_eq!(browse(since(60)), ["new", "middle"]);
    assert_eq!(browse(between), ["middle"]);
    assert_eq!(browse(until(11)), ["old"]);
}

#[test]
fn newest_first_orders_summary_matches_by_last_activity() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    session_with(&mut store, "a", &["first", "ok"]);
    session_with(&mut store, "b", &["second", "ok"]);
    store.set_summary("a", "the heron report").unwrap();
    store.set_summary("b", "another heron report").unwrap();
    set_times(&path, "a", DAY_MS, 9 * DAY_MS);
    set_times(&path, "b", 2 * DAY_MS, 3 * DAY_MS);
    let store = Store::open(&path).unwrap();
    let hits = store
        .search(&SearchRequest {
            query: "heron".into(),
            sort: SearchSort::Newest,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(ids(&hits), ["a", "b"]);
    assert!(hits.iter().all(|h| h.sorted_by == SearchSort::Newest));
}

/// Deleting a session finds its row in the session index by key
/// (`search_rowid`): pruning thousands stays linear. (Deleting by
/// `session_id`, a scan per session, took ~10 s here for 6,000.)
#[test]
fn pruning_many_summarised_sessions_stays_fast() {
    let mut store = Store::open_in_memory().unwrap();
    for i in 0..6_000 {
        let id = format!("s{i}");
        store.create_session(&new_session(&id, "/w")).unwrap();
        store.set_title(&id, &format!("task number {i}")).unwrap();
        store.set_summary(&id, "a summary of some work").unwrap();
    }
    let started = std::time::Instant::now();
    let ids: Vec<String> = (0..6_000).map(|i| format!("s{i}")).collect();
    assert_eq!(store.delete_session_trees(&ids).unwrap(), 6_000);
    let took = started.elapsed();
    eprintln!("deleting 6,000 summarised sessions took {took:?}");
    assert!(search(&store, "summary", ActiveBetween::default()).is_empty());
    assert!(took < std::time::Duration::from_secs(4), "{took:?}");
}
