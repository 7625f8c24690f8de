//! Measures the store against the performance targets: message
//! insert throughput (> 20,000/s) and `session_search` latency over 1,000,000
//! messages (< 10 ms p50).
//!
//! ```text
//! cargo run -p herald-store --release --example store_bench -- \
//!     [--messages 1000000] [--per-session 100] [--queries 300] [--db /tmp/herald-bench/state.db]
//! ```
//!
//! The database file is recreated on every run.

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use herald_protocol::{Message, Role};
use herald_store::{NewSession, SearchRequest, SearchSort, SessionSource, Store, bench};

struct Args {
    messages: usize,
    per_session: usize,
    queries: usize,
    db: PathBuf,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut args = Args {
        messages: 1_000_000,
        per_session: 100,
        queries: 300,
        db: std::env::temp_dir().join("herald-bench/state.db"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--messages" => args.messages = value.parse()?,
            "--per-session" => args.per_session = value.parse()?,
            "--queries" => args.queries = value.parse()?,
            "--db" => args.db = value.into(),
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    Ok(args)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(idx).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// Latencies of one query set.
struct Timings {
    times: Vec<Duration>,
    found: usize,
    /// Queries whose ranking ran out of budget and came back newest first.
    fell_back: usize,
}

/// Runs every query once.
fn time_queries(
    store: &Store,
    queries: &[String],
    make: impl Fn(&str) -> SearchRequest,
) -> Result<Timings, Box<dyn Error>> {
    let mut t = Timings {
        times: Vec::with_capacity(queries.len()),
        found: 0,
        fell_back: 0,
    };
    for q in queries {
        let request = make(q);
        let started = Instant::now();
        let hits = store.search(&request)?;
        t.times.push(started.elapsed());
        t.found += usize::from(!hits.is_empty());
        t.fell_back += usize::from(hits.iter().any(|h| h.sorted_by == SearchSort::Newest));
    }
    t.times.sort();
    Ok(t)
}

fn report(label: &str, t: &Timings) {
    println!(
        "{label:<40} p50 {}  p95 {}  p99 {}  max {}  ({}/{} with hits, {} newest-first)",
        ms(percentile(&t.times, 0.5)),
        ms(percentile(&t.times, 0.95)),
        ms(percentile(&t.times, 0.99)),
        ms(percentile(&t.times, 1.0)),
        t.found,
        t.times.len(),
        t.fell_back
    );
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    for suffix in ["", "-wal", "-shm"] {
        let mut p = args.db.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
    let mut store = Store::open(&args.db)?;
    let sessions = args.messages.div_ceil(args.per_session);

    let generated = bench::generate(&mut store, sessions, args.per_session)?;
    println!(
        "bulk insert: {} messages in {} sessions, {:.2} s, {:.0} messages/s",
        generated.messages,
        generated.sessions,
        generated.insert_time.as_secs_f64(),
        generated.messages_per_second()
    );

    // The agent's path: one append_messages call (one committed transaction)
    // per message, as a turn loop does.
    store.create_session(&NewSession {
        id: "turns".into(),
        parent_session_id: None,
        agent_id: None,
        source: SessionSource::Cli,
        cwd: "/bench".into(),
        model: "m".into(),
        provider: "openai".into(),
        system_prompt: String::new(),
    })?;
    let vocab = bench::Vocabulary::new();
    let mut rng = bench::Rng::new(11);
    let single: Vec<Message> = (0..5_000)
        .map(|_| Message::user(vocab.text(&mut rng, 40)))
        .collect();
    let started = Instant::now();
    for m in &single {
        store.append_messages("turns", std::slice::from_ref(m))?;
    }
    let elapsed = started.elapsed();
    println!(
        "append_messages, 1 message per transaction: {:.0} messages/s ({} per commit)",
        single.len() as f64 / elapsed.as_secs_f64(),
        ms(elapsed / single.len() as u32)
    );

    let size = std::fs::metadata(&args.db).map(|m| m.len()).unwrap_or(0);
    println!("database size: {:.0} MB", size as f64 / 1e6);

    let queries = bench::sample_queries(args.queries, 42);
    // Warm the page cache the way a long-running process would be warm.
    time_queries(&store, &queries[..queries.len().min(20)], |q| {
        SearchRequest {
            query: q.into(),
            ..Default::default()
        }
    })?;

    let t = time_queries(&store, &queries, |q| SearchRequest {
        query: q.into(),
        ..Default::default()
    })?;
    report("search (limit 3, window 5)", &t);
    let t = time_queries(&store, &queries, |q| SearchRequest {
        query: q.into(),
        limit: 10,
        window: 5,
        exclude_session: Some("turns".into()),
        ..Default::default()
    })?;
    report("search (limit 10, exclude current)", &t);
    let t = time_queries(&store, &queries, |q| SearchRequest {
        query: q.into(),
        role_filter: Some(vec![Role::User]),
        ..Default::default()
    })?;
    report("search (role_filter user)", &t);
    let common: Vec<String> = ["the", "error", "file build", "test failed", "config.toml"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let t = time_queries(&store, &common, |q| SearchRequest {
        query: q.into(),
        ..Default::default()
    })?;
    report("search, very common words (worst case)", &t);

    let recent = store.recent_sessions(10, None)?;
    let started = Instant::now();
    for s in &recent {
        store.session_overview(&s.id, 5)?;
    }
    println!(
        "session_overview (5+5 messages): {} each",
        ms(started.elapsed() / recent.len().max(1) as u32)
    );
    Ok(())
}
