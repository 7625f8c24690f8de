//! Session store benchmarks: insert throughput (bulk and one commit per
//! turn) and `session_search` latency over a generated 1,000,000-message store.

use std::time::{Duration, Instant};

use anyhow::Result;
use herald_protocol::Message;
use herald_store::{NewSession, SearchRequest, SessionSource, Store, bench};

use crate::ms;
use crate::stats::{median, percentile};

/// Runs the store benchmarks and prints table rows.
pub(crate) fn run(sessions: usize, per_session: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let mut store = Store::open(dir.path().join("state.db"))?;

    let generated = bench::generate(&mut store, sessions, per_session)?;
    println!(
        "| message insert throughput, bulk ({} messages; indexed for search later) | > 20,000 msgs/s | {:.0} msgs/s |",
        generated.messages,
        generated.messages_per_second()
    );
    // What storing no longer pays: the first search indexes the backlog.
    let started = Instant::now();
    let indexed = store.catch_up_search_index()?;
    let elapsed = started.elapsed();
    println!(
        "| search index catch-up of the bulk insert ({indexed} messages, batches of 500) | — | {:.0} msgs/s ({:.0} ms) |",
        indexed as f64 / elapsed.as_secs_f64().max(f64::EPSILON),
        ms(elapsed)
    );
    println!(
        "| insert and index together, bulk | > 20,000 msgs/s | {:.0} msgs/s |",
        generated.messages as f64
            / (generated.insert_time + elapsed)
                .as_secs_f64()
                .max(f64::EPSILON)
    );

    // The agent's real path: one committed transaction per turn.
    store.create_session(&NewSession {
        id: "bench_turns".into(),
        parent_session_id: None,
        agent_id: None,
        source: SessionSource::Cli,
        cwd: "/bench".into(),
        model: "m".into(),
        provider: "openai".into(),
        system_prompt: "s".into(),
    })?;
    let turns = 2_000;
    let started = Instant::now();
    for i in 0..turns {
        let batch = [
            Message::assistant(format!("turn {i}: reading the parser module"), Vec::new()),
            Message::user(format!("result {i}: fn parse(input: &str) -> Ast")),
        ];
        store.append_messages("bench_turns", &batch)?;
    }
    let elapsed = started.elapsed();
    println!(
        "| message insert throughput, one commit per turn (2 messages each, {turns} commits) | — | {:.0} msgs/s ({:.3} ms per commit) |",
        (turns * 2) as f64 / elapsed.as_secs_f64(),
        ms(elapsed) / turns as f64
    );

    // The first search after the 2,000 turns indexes their 4,000 messages.
    let started = Instant::now();
    store.search(&SearchRequest {
        query: "parser".into(),
        ..SearchRequest::default()
    })?;
    println!(
        "| first search after those turns (indexes their {} messages first) | — | {:.2} ms |",
        turns * 2,
        ms(started.elapsed())
    );

    let queries = bench::sample_queries(300, 42);
    let mut times: Vec<Duration> = Vec::with_capacity(queries.len());
    let mut hits = 0;
    for query in &queries {
        let request = SearchRequest {
            query: query.clone(),
            ..SearchRequest::default()
        };
        let t0 = Instant::now();
        hits += store.search(&request)?.len();
        times.push(t0.elapsed());
    }
    println!(
        "| `session_search` over {} messages (limit 3, window 5; p50 / p95 of {} queries, {} hits) | < 10 ms p50 | {:.2} ms / {:.2} ms |",
        generated.messages + turns * 2,
        queries.len(),
        hits,
        ms(median(&times)),
        ms(percentile(&times, 0.95))
    );
    Ok(())
}
