#![allow(clippy::unwrap_used, clippy::expect_used)]

use herald_store::{ListFilter, SearchRequest, Store, bench};

#[test]
fn generated_data_is_searchable_with_sample_queries() {
    let mut store = Store::open_in_memory().unwrap();
    let generated = bench::generate(&mut store, 20, 40).unwrap();
    assert_eq!((generated.sessions, generated.messages), (20, 800));
    // The store holds exactly what the generator reports.
    let sessions = store
        .list_sessions(&ListFilter {
            limit: 0,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(sessions.len(), 20);
    let mut stored = 0;
    for session in &sessions {
        let messages = store.load_messages(&session.id).unwrap();
        assert_eq!(messages.len(), 40, "session {}", session.id);
        assert_eq!(session.message_count, 40, "session {}", session.id);
        stored += messages.len();
    }
    assert_eq!(stored, generated.messages);
    // The rate comes from the measured insert time, not a placeholder.
    assert!(generated.insert_time > std::time::Duration::ZERO);
    let rate = generated.messages_per_second();
    assert!(rate.is_finite(), "{rate}");
    let expected = 800.0 / generated.insert_time.as_secs_f64();
    assert!(
        (rate - expected).abs() <= expected * 1e-9,
        "{rate} != {expected}"
    );
    let queries = bench::sample_queries(50, 7);
    assert_eq!(queries, bench::sample_queries(50, 7), "deterministic");
    let mut found = 0;
    for q in &queries {
        let hits = store
            .search(&SearchRequest {
                query: q.clone(),
                ..Default::default()
            })
            .unwrap();
        found += usize::from(!hits.is_empty());
    }
    assert!(found > 10, "only {found} of 50 sample queries matched");
}
