#![allow(clippy::unwrap_used, clippy::expect_used)]

use herald_store::{SearchRequest, Store, bench};

#[test]
fn generated_data_is_searchable_with_sample_queries() {
    let mut store = Store::open_in_memory().unwrap();
    let generated = bench::generate(&mut store, 20, 40).unwrap();
    assert_eq!(generated.messages, 800);
    assert!(generated.messages_per_second() > 0.0);
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
