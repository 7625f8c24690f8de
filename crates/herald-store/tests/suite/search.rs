#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{call, child_session, memory, new_session, query, session_with};
use herald_protocol::{Message, Role};
use herald_store::{
    MAX_SEARCH_LIMIT, MAX_WINDOW, MatchMode, SearchHit, SearchRequest, SearchSort, Store,
    StoreError, sanitize_fts_query,
};

fn session_ids(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.session.id.as_str()).collect()
}

#[test]
fn index_follows_inserts_updates_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    assert!(query(&store, "quokka").is_empty());
    // The first user message is the title (indexed with the session); the
    // quokka is only in the assistant's reply.
    let ids = session_with(&mut store, "s", &["nothing here", "a quokka appeared"]);
    assert_eq!(
        query(&store, "quokka")[0].message.as_ref().unwrap().id,
        ids[1]
    );

    // Update trigger: edit the row behind the store's back.
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute(
        "UPDATE messages SET content = 'a wombat appeared' WHERE id = ?1",
        [ids[1]],
    )
    .unwrap();
    assert!(query(&store, "quokka").is_empty());
    assert_eq!(query(&store, "wombat").len(), 1);
    // Delete trigger on a direct row delete.
    raw.execute("DELETE FROM messages WHERE id = ?1", [ids[1]])
        .unwrap();
    assert!(query(&store, "wombat").is_empty());
    // And the index is still consistent with its content table.
    raw.execute(
        "INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)",
        [],
    )
    .unwrap();
}

#[test]
fn sessions_are_ranked_by_their_best_message_with_one_hit_each() {
    let mut store = memory();
    session_with(
        &mut store,
        "weak",
        &[
            "a long message that mentions kubernetes once among many many other words \
           about databases caching networking compilers and assorted unrelated topics",
        ],
    );
    session_with(
        &mut store,
        "strong",
        &["kubernetes kubernetes", "kubernetes pods", "x"],
    );
    let hits = query(&store, "kubernetes");
    assert_eq!(session_ids(&hits), ["strong", "weak"]);
    assert_eq!(
        hits[0].message.as_ref().unwrap().seq,
        1,
        "best message of the session"
    );
    assert!(hits[0].score > hits[1].score);
    assert_eq!(hits[0].match_mode, MatchMode::AllTerms);
}

#[test]
fn hits_carry_their_neighbours_in_order() {
    let mut store = memory();
    let texts: Vec<String> = (1..=9).map(|i| format!("message number {i}")).collect();
    let mut refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    refs[4] = "the needle is here";
    session_with(&mut store, "s", &refs);
    let hit = &store
        .search(&SearchRequest {
            query: "needle".into(),
            window: 2,
            ..Default::default()
        })
        .unwrap()[0];
    assert_eq!(hit.message.as_ref().unwrap().seq, 5);
    assert_eq!(hit.before.iter().map(|m| m.seq).collect::<Vec<_>>(), [3, 4]);
    assert_eq!(hit.after.iter().map(|m| m.seq).collect::<Vec<_>>(), [6, 7]);
    assert_eq!(hit.session.title.as_deref(), Some("message number 1"));

    refs[4] = "x";
    refs[0] = "the needle first";
    session_with(&mut store, "t", &refs);
    let hits = store
        .search(&SearchRequest {
            query: "needle first".into(),
            window: 3,
            ..Default::default()
        })
        .unwrap();
    assert!(hits[0].before.is_empty());
    assert_eq!(hits[0].after.len(), 3);
}

#[test]
fn role_filter_and_excluded_session() {
    let mut store = memory();
    store.create_session(&new_session("by-tool", "/w")).unwrap();
    let c = call("c1", "terminal", r#"{"command":"make"}"#);
    store
        .append_messages(
            "by-tool",
            &[
                Message::user("run it"),
                Message::assistant("", vec![c.clone()]),
                Message::tool_result(&c, "segfault in module", true),
            ],
        )
        .unwrap();
    session_with(&mut store, "by-user", &["why the segfault?"]);
    session_with(&mut store, "current", &["segfault again"]);

    let run = |roles: Option<Vec<Role>>, exclude: Option<&str>| {
        let hits = store
            .search(&SearchRequest {
                query: "segfault".into(),
                limit: 10,
                role_filter: roles,
                exclude_session: exclude.map(str::to_owned),
                ..Default::default()
            })
            .unwrap();
        let mut ids: Vec<String> = hits.into_iter().map(|h| h.session.id).collect();
        ids.sort();
        ids
    };
    assert_eq!(run(None, None), ["by-tool", "by-user", "current"]);
    assert_eq!(run(Some(vec![Role::User]), None), ["by-user", "current"]);
    assert_eq!(run(Some(vec![Role::Tool]), None), ["by-tool"]);
    assert_eq!(
        run(Some(vec![]), None).len(),
        3,
        "empty filter means any role"
    );
    assert_eq!(run(None, Some("current")), ["by-tool", "by-user"]);
    assert_eq!(run(Some(vec![Role::User]), Some("current")), ["by-user"]);
}

#[test]
fn filters_widen_the_candidate_set_when_top_matches_are_excluded() {
    let mut store = memory();
    // 300 strong matches in the excluded session outrank the single weak one.
    store.create_session(&new_session("noisy", "/w")).unwrap();
    let spam: Vec<Message> = (0..300)
        .map(|_| Message::user("ferret ferret ferret"))
        .collect();
    store.append_messages("noisy", &spam).unwrap();
    session_with(
        &mut store,
        "quiet",
        &["one ferret among a great many other ordinary words here"],
    );
    let hits = store
        .search(&SearchRequest {
            query: "ferret".into(),
            exclude_session: Some("noisy".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(session_ids(&hits), ["quiet"]);
}

#[test]
fn limit_and_window_are_clamped() {
    let mut store = memory();
    for i in 0..12 {
        let texts: Vec<String> = (0..30).map(|j| format!("filler {j}")).collect();
        let mut refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        refs[25] = "capybara sighting";
        session_with(&mut store, &format!("s{i}"), &refs);
    }
    let run = |limit, window| {
        store
            .search(&SearchRequest {
                query: "capybara".into(),
                limit,
                window,
                ..Default::default()
            })
            .unwrap()
    };
    assert_eq!(run(0, 5).len(), 1);
    assert_eq!(run(100, 5).len(), MAX_SEARCH_LIMIT);
    let hits = run(1, 0);
    assert_eq!((hits[0].before.len(), hits[0].after.len()), (1, 1));
    let hits = run(1, 1000);
    assert_eq!(hits[0].before.len(), MAX_WINDOW);
    assert_eq!(hits[0].after.len(), 4, "only 4 messages follow the match");
}

#[test]
fn hostile_queries_never_raise() {
    let mut store = memory();
    session_with(
        &mut store,
        "s",
        &["C++ templates (x and y) a AND b col:x ^x {x} NEAR stuff"],
    );
    let nasty = [
        "C++",
        "(x",
        "a AND",
        "AND",
        "OR",
        "NOT",
        "***",
        "\"unbalanced",
        "{x}",
        "NEAR(",
        "NEAR(a b",
        "col:x",
        "^x",
        "",
        "   ",
        "\t\n",
        "a OR",
        "-x",
        "+x",
        "x*",
        "*x",
        "\"\"",
        "'",
        "a\"b",
        "foo:bar:baz",
        "(((",
        ")))",
        "a NOT",
        "NOT a",
        "x^2",
        "ñandú",
        "日本語",
        "emoji 🦀 crab",
        "[brackets]",
        "back\\slash",
        "semi;colon",
        "-- . / ...",
        "a.b.c-d/e_f",
        "_",
        "__init__",
        "@user #tag $var %p &amp |pipe ~tilde `tick` =eq <lt> >gt ?q !bang",
    ];
    for raw in nasty {
        let result = store.search(&SearchRequest {
            query: raw.into(),
            ..Default::default()
        });
        assert!(result.is_ok(), "query {raw:?} failed: {:?}", result.err());
        if let Some(fts) = sanitize_fts_query(raw) {
            assert!(!fts.is_empty(), "{raw:?}");
        }
    }
    assert_eq!(query(&store, "C++").len(), 1);
    assert_eq!(query(&store, "col:x").len(), 1);
    assert!(
        query(&store, "AND").is_empty(),
        "a bare operator is not a search term"
    );
    assert!(query(&store, "***").is_empty());
}

#[test]
fn hyphenated_dotted_and_path_terms_match_as_phrases() {
    let mut store = memory();
    session_with(
        &mut store,
        "phrase",
        &["please use foo-bar here with v1.2.3 and config.toml"],
    );
    session_with(
        &mut store,
        "scattered",
        &["foo and bar, v1 then 2.3, config of the toml"],
    );
    session_with(&mut store, "path", &["edit src/store/main.rs now"]);
    assert_eq!(session_ids(&query(&store, "foo-bar")), ["phrase"]);
    assert_eq!(session_ids(&query(&store, "v1.2.3")), ["phrase"]);
    assert_eq!(session_ids(&query(&store, "config.toml")), ["phrase"]);
    assert_eq!(session_ids(&query(&store, "src/store/main.rs")), ["path"]);
    assert_eq!(
        query(&store, "foo").len(),
        2,
        "a part still finds the whole"
    );
}

#[test]
fn any_term_fallback_when_no_message_has_all_terms() {
    let mut store = memory();
    session_with(&mut store, "a", &["alpha only"]);
    session_with(&mut store, "b", &["gamma only"]);
    session_with(&mut store, "both", &["alpha and gamma together"]);
    let hits = query(&store, "alpha gamma");
    assert_eq!(session_ids(&hits), ["both"]);
    assert_eq!(hits[0].match_mode, MatchMode::AllTerms);

    let hits = query(&store, "alpha zeta");
    let mut ids = session_ids(&hits);
    ids.sort();
    assert_eq!(ids, ["a", "both"]);
    assert!(hits.iter().all(|h| h.match_mode == MatchMode::AnyTerm));
    assert!(query(&store, "zeta omega").is_empty());
}

#[test]
fn explicit_prefix_and_tool_call_arguments_are_searchable() {
    let mut store = memory();
    store.create_session(&new_session("s", "/w")).unwrap();
    let c = call("c1", "terminal", r#"{"command":"cargo build --release"}"#);
    store
        .append_messages(
            "s",
            &[
                Message::user("ship the deployment"),
                Message::assistant("", vec![c]),
            ],
        )
        .unwrap();
    assert_eq!(query(&store, "deploy*").len(), 1);
    assert!(query(&store, "deploy").is_empty());
    let hits = query(&store, "cargo build");
    assert_eq!(hits[0].message.as_ref().unwrap().seq, 2);
    assert_eq!(
        hits[0].message.as_ref().unwrap().message.tool_calls[0].name,
        "terminal"
    );
}

#[test]
fn newest_sort_puts_the_latest_match_first() {
    let mut store = memory();
    session_with(&mut store, "old", &["lemur lemur lemur"]);
    std::thread::sleep(std::time::Duration::from_millis(3));
    session_with(
        &mut store,
        "new",
        &["one lemur among many other words in this message"],
    );
    let by = |sort| {
        let hits = store
            .search(&SearchRequest {
                query: "lemur".into(),
                sort,
                ..Default::default()
            })
            .unwrap();
        hits.into_iter().map(|h| h.session.id).collect::<Vec<_>>()
    };
    assert_eq!(by(SearchSort::Relevance), ["old", "new"]);
    assert_eq!(by(SearchSort::Newest), ["new", "old"]);
}

#[test]
fn browse_mode_lists_recent_top_level_sessions() {
    let mut store = memory();
    session_with(&mut store, "a", &["x"]);
    store.create_session(&new_session("empty", "/w")).unwrap();
    session_with(&mut store, "b", &["x"]);
    store.create_session(&child_session("kid", "b")).unwrap();
    store.append_messages("kid", &[Message::user("y")]).unwrap();
    session_with(&mut store, "current", &["x"]);
    std::thread::sleep(std::time::Duration::from_millis(3));
    store
        .append_messages("a", &[Message::user("newer activity")])
        .unwrap();
    let ids: Vec<String> = store
        .recent_sessions(5, Some("current"))
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(store.recent_sessions(0, None).unwrap().len(), 1);
}

#[test]
fn read_mode_shows_head_and_tail() {
    let mut store = memory();
    let texts: Vec<String> = (1..=30).map(|i| format!("m{i}")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    session_with(&mut store, "long", &refs);
    let o = store.session_overview("long", 3).unwrap();
    assert_eq!(o.head.iter().map(|m| m.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(
        o.tail.iter().map(|m| m.seq).collect::<Vec<_>>(),
        [28, 29, 30]
    );
    assert_eq!(o.omitted, 24);

    session_with(&mut store, "short", &["a", "b", "c", "d"]);
    let o = store.session_overview("short", 3).unwrap();
    assert_eq!(o.head.len() + o.tail.len(), 4);
    assert_eq!(o.omitted, 0);
    let seqs: Vec<i64> = o.head.iter().chain(&o.tail).map(|m| m.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);

    let o = store.session_overview("long", 0).unwrap();
    assert_eq!((o.head.len(), o.tail.len()), (1, 1));
    assert!(matches!(
        store.session_overview("ghost", 3),
        Err(StoreError::UnknownSession(_))
    ));
}

#[test]
fn scroll_mode_windows_around_a_message() {
    let mut store = memory();
    let texts: Vec<String> = (1..=10).map(|i| format!("m{i}")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let ids = session_with(&mut store, "s", &refs);
    let other = session_with(&mut store, "t", &["elsewhere"]);
    let w = store.message_window("s", ids[8], 3).unwrap();
    assert_eq!(w.message.seq, 9);
    assert_eq!(
        w.before.iter().map(|m| m.seq).collect::<Vec<_>>(),
        [6, 7, 8]
    );
    assert_eq!(w.after.iter().map(|m| m.seq).collect::<Vec<_>>(), [10]);

    let err = store.message_window("s", other[0], 3).unwrap_err();
    assert!(
        matches!(&err, StoreError::MessageNotInSession { session_id, message_id }
            if session_id == "s" && *message_id == other[0])
    );
    assert!(err.to_string().contains(&other[0].to_string()));
    let err = store.message_window("ghost", ids[0], 3).unwrap_err();
    assert!(err.to_string().contains("'ghost'"));
}

#[test]
fn ranking_past_its_time_budget_falls_back_to_newest_first() {
    let mut store = memory();
    for i in 0..40 {
        let texts: Vec<String> = (0..50).map(|j| format!("common word {i} {j}")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        session_with(&mut store, &format!("s{i:02}"), &refs);
    }
    let request = SearchRequest {
        query: "common".into(),
        ..Default::default()
    };
    let ranked = store.search(&request).unwrap();
    assert!(ranked.iter().all(|h| h.sorted_by == SearchSort::Relevance));

    store.set_search_budget(std::time::Duration::ZERO);
    let hits = store.search(&request).unwrap();
    assert_eq!(hits.len(), 3);
    assert!(
        hits.iter()
            .all(|h| h.sorted_by == SearchSort::Newest && h.score == 0.0)
    );
    assert_eq!(session_ids(&hits), ["s39", "s38", "s37"]);
    assert_eq!(
        hits[0].message.as_ref().unwrap().seq,
        50,
        "the session's newest match"
    );

    // The budget only applies to ranking; other queries on the store still work.
    store.set_search_budget(herald_store::DEFAULT_SEARCH_BUDGET);
    assert_eq!(store.load_messages("s00").unwrap().len(), 50);
    assert!(store.search(&request).unwrap()[0].sorted_by == SearchSort::Relevance);
}
