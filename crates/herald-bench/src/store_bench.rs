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
        "| message insert throughput, bulk ({} messages, FTS triggers on) | > 20,000 msgs/s | {:.0} msgs/s |",
        generated.messages,
        generated.messages_per_second()
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
