//! Measures herald against its performance targets, driving the
//! real release binary against the scripted server over loopback HTTP.
//!
//! Run with `cargo run --release -p herald-bench` (it builds the `herald`
//! binary first). Prints a Markdown table for docs/BENCHMARKS.md.

mod child;
mod delegation_bench;
mod exec;
mod mcp_bench;
mod permissions_bench;
mod prompt;
mod serve_bench;
mod skills_bench;
mod stats;
mod store_bench;
mod tui_bench;
mod wire;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use herald_testkit::{Pace, Reply, Script, ScriptedServer};
use serde_json::json;

use child::run_measured;
use stats::{median, percentile};

/// The allocator herald itself runs on. The scripted server parses and
/// keeps every request it receives; on glibc's malloc that took half of its
/// CPU in the 10,000-child run, time taken from the herald it measures on a
/// two-core machine. In-process measurements (the store benchmark) then
/// also run on herald's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Locates (building if needed) the release `herald` binary next to this one.
fn herald_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot locate the benchmark executable")?;
    let dir = exe
        .parent()
        .context("benchmark executable has no directory")?;
    if let Ok(cargo) = std::env::var("CARGO") {
        let status = std::process::Command::new(cargo)
            .args(["build", "--release", "--quiet", "-p", "herald-cli"])
            .status()
            .context("cannot run cargo to build herald")?;
        if !status.success() {
            bail!("building herald failed");
        }
    }
    let bin = dir.join("herald");
    if !bin.exists() {
        bail!(
            "{} not found: run `cargo build --release -p herald-cli` first",
            bin.display()
        );
    }
    Ok(bin)
}

/// One scripted long run: `turns` tool calls, then an answer. Each call reads
/// a file of about `result_bytes` bytes whole, or with 0 three short lines.
struct TurnRun {
    requests: usize,
    cpu: Duration,
    max_rss_kb: u64,
    max_anon_kb: u64,
    first_request: Duration,
    /// Time at least one request was in the server's hands (see
    /// [`busy_time`]): the model's share of the wall time.
    model_time: Duration,
    /// From the server's last byte of the last reply to the process's exit.
    tail: Duration,
    /// Per turn: time from the end of a reply to the next request, with the
    /// number of messages that request carried.
    gaps: Vec<(usize, Duration)>,
    prefix: (usize, usize),
    prompt_bytes: usize,
    wall: Duration,
    /// Every request the server received, for the wire floor to replay.
    recorded: Vec<herald_testkit::RecordedRequest>,
}

async fn turn_run(
    herald: &Path,
    turns: usize,
    anthropic: bool,
    result_bytes: usize,
) -> Result<TurnRun> {
    let home = tempfile::tempdir()?;
    turn_run_in(herald, home.path(), turns, anthropic, result_bytes, None).await
}

/// The model of a turn run: `turns` read_file calls, then an answer.
fn turn_script(turns: usize, result_bytes: usize) -> Script {
    Script::new().responder(move |view| {
        if view.turn >= turns {
            Reply::text("all done")
        } else if result_bytes == 0 {
            Reply::tool("read_file", json!({"path": "small.txt", "limit": 3}))
        } else {
            // A different file each turn, as a model reading a codebase does.
            let path = format!("src/file{}.txt", view.turn % 8);
            Reply::tool("read_file", json!({ "path": path }))
        }
    })
}

/// [`turn_run`] with `$HERALD_HOME` at `home` (a used home keeps its
/// store between runs).
async fn turn_run_in(
    herald: &Path,
    home: &Path,
    turns: usize,
    anthropic: bool,
    result_bytes: usize,
    pace: Option<Pace>,
) -> Result<TurnRun> {
    let server = ScriptedServer::start(turn_script(turns, result_bytes)).await?;
    server.set_pace(pace);
    let work = tempfile::tempdir()?;
    std::fs::write(work.path().join("small.txt"), "one\ntwo\nthree\n")?;
    if result_bytes > 0 {
        std::fs::create_dir_all(work.path().join("src"))?;
        for i in 0..8 {
            std::fs::write(
                work.path().join(format!("src/file{i}.txt")),
                source_like_text(result_bytes, i),
            )?;
        }
    }
    // HERALD_BENCH_WRAP="perf record -g" (say) runs herald under a profiler.
    let wrap = std::env::var("HERALD_BENCH_WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    let mut cmd = match words.next() {
        Some(program) => {
            let mut cmd = std::process::Command::new(program);
            cmd.args(words).arg(herald);
            cmd
        }
        None => std::process::Command::new(herald),
    };
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HERALD_HOME", home)
        .arg("--cwd")
        .arg(work.path())
        .args(["--max-iterations", "1000"])
        .args(["run", "--json", "bench: read the file repeatedly"]);
    if anthropic {
        cmd.env("HERALD_PROVIDER", "anthropic")
            .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
            .env("ANTHROPIC_API_KEY", "bench");
    } else {
        cmd.env("OPENAI_BASE_URL", server.openai_base_url())
            .env("OPENAI_API_KEY", "bench");
    }
    let spawned_at = Instant::now();
    let measured = run_measured(cmd).await?;
    if !measured.success {
        bail!("herald run failed during the benchmark");
    }
    let requests = server.requests();
    let first_request = requests
        .first()
        .map(|r| r.received_at.duration_since(spawned_at))
        .unwrap_or_default();
    let mut gaps = Vec::new();
    for pair in requests.windows(2) {
        if let Some(done) = pair[0].responded_at {
            let messages = pair[1].body["messages"].as_array().map_or(0, Vec::len);
            gaps.push((
                messages,
                pair[1].received_at.saturating_duration_since(done),
            ));
        }
    }
    let first = requests.first().context("no request recorded")?;
    let prompt_bytes = if anthropic {
        first.body["system"][0]["text"].as_str().map_or(0, str::len)
            + first.body["tools"].to_string().len()
    } else {
        first.body["messages"][0]["content"]
            .as_str()
            .map_or(0, str::len)
            + first.body["tools"].to_string().len()
    };
    server.assert_invariants();
    let model_time = busy_time(&requests);
    let tail = requests
        .last()
        .and_then(|r| r.responded_at)
        .map_or(Duration::ZERO, |done| {
            (spawned_at + measured.wall).saturating_duration_since(done)
        });
    Ok(TurnRun {
        requests: requests.len(),
        cpu: measured.cpu,
        max_rss_kb: measured.max_rss_kb,
        max_anon_kb: measured.max_anon_kb,
        first_request,
        model_time,
        tail,
        gaps,
        prefix: server.prefix_stability(),
        prompt_bytes,
        wall: measured.wall,
        recorded: requests,
    })
}

/// How long at least one request was in the server's hands (received, not
/// yet answered to its last byte): the union of those intervals, since a
/// client may send its next request once a reply's content is complete,
/// before the stream's end marker.
fn busy_time(requests: &[herald_testkit::RecordedRequest]) -> Duration {
    let mut spans: Vec<(Instant, Instant)> = requests
        .iter()
        .filter_map(|r| Some((r.received_at, r.responded_at?)))
        .collect();
    spans.sort();
    let mut total = Duration::ZERO;
    let mut current: Option<(Instant, Instant)> = None;
    for (start, end) in spans {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                total += e - s;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    if let Some((s, e)) = current {
        total += e - s;
    }
    total
}

/// About `bytes` of source-like text (indented lines of words, quotes and
/// braces, so JSON escaping has its usual work), different per `seed`.
fn source_like_text(bytes: usize, seed: usize) -> String {
    let words = [
        "let",
        "value",
        "=",
        "match",
        "request",
        "{",
        "}",
        "\"text\"",
        "return",
        "Ok(()),",
        "self.inner",
        "// note:",
        "if",
        "else",
        "for",
        "item",
        "in",
        "list.iter()",
        "\tspan",
    ];
    let mut out = String::with_capacity(bytes + 80);
    let mut n = seed * 7;
    while out.len() < bytes {
        out.push_str("    ");
        for _ in 0..10 {
            out.push_str(words[n % words.len()]);
            out.push(' ');
            n = n.wrapping_mul(31).wrapping_add(17);
        }
        out.push('\n');
    }
    out
}

fn version_times(herald: &Path, runs: usize) -> Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t0 = Instant::now();
        let out = std::process::Command::new(herald)
            .arg("--version")
            .output()?;
        times.push(t0.elapsed());
        if !out.status.success() {
            bail!("herald --version failed");
        }
    }
    Ok(times)
}

/// Runs a scenario three times and keeps the run with the median CPU time.
fn best_of(
    runtime: &tokio::runtime::Runtime,
    herald: &Path,
    turns: usize,
    anthropic: bool,
    result_bytes: usize,
) -> Result<TurnRun> {
    let mut runs = Vec::with_capacity(3);
    for _ in 0..3 {
        runs.push(runtime.block_on(turn_run(herald, turns, anthropic, result_bytes))?);
    }
    runs.sort_by_key(|r| r.cpu);
    runs.into_iter().nth(1).context("no run")
}

/// Prints the wire floor of `run` (see [`wire`]): the median of three
/// replays of its bodies, and herald's CPU per request above it.
fn wire_floor_row(runtime: &tokio::runtime::Runtime, run: &TurnRun, bytes: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let bodies = dir.path().join("bodies");
    wire::save_bodies(&run.recorded, &bodies)?;
    let mut floors = Vec::with_capacity(3);
    for _ in 0..3 {
        floors.push(runtime.block_on(async {
            let server = ScriptedServer::start(turn_script(60, bytes)).await?;
            wire::floor(&server, &bodies).await
        })?);
    }
    let floor = median(&floors);
    let herald = run.cpu / run.requests as u32;
    println!(
        "| wire floor, {bytes}-byte results: a client that only POSTs herald's {} request bodies (reqwest, loopback) / herald above it, CPU per request | — | {:.3} / {:.3} ms |",
        run.recorded.len(),
        ms(floor),
        ms(herald.saturating_sub(floor))
    );
    Ok(())
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> Result<()> {
    // `herald-bench store|agent|turns|prompt|delegation|serve|permissions|mcp|tui|skills` runs one part; default all.
    let part = std::env::args().nth(1).unwrap_or_default();
    if part == wire::CLIENT_SUBCOMMAND {
        let (Some(url), Some(bodies)) = (std::env::args().nth(2), std::env::args().nth(3)) else {
            bail!(
                "usage: herald-bench {} BASE_URL BODIES",
                wire::CLIENT_SUBCOMMAND
            );
        };
        return wire::client_main(&url, Path::new(&bodies));
    }
    println!("| measure | target | result |");
    println!("|---|---|---|");
    if part.is_empty() || part == "store" {
        store_bench::run(10_000, 100)?;
    }
    if part.is_empty() || part == "agent" {
        agent_benchmarks()?;
    }
    if part == "realistic" {
        realistic(std::env::args().nth(2).as_deref())?;
    }
    if part == "turns" {
        // `herald-bench turns BYTES [anthropic]`: the 60-turn run alone.
        let bytes: usize = std::env::args()
            .nth(2)
            .unwrap_or_default()
            .parse()
            .context("usage: herald-bench turns RESULT_BYTES [anthropic]")?;
        let anthropic = std::env::args().nth(3).as_deref() == Some("anthropic");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let herald = herald_binary()?;
        let run = best_of(&runtime, &herald, 60, anthropic, bytes)?;
        println!(
            "| harness CPU per turn, 60-turn run, {bytes}-byte results | < 1 ms | {:.3} ms (peak RSS {:.1} MB, first request {:.2} ms, {} requests) |",
            ms(run.cpu) / run.requests as f64,
            run.max_rss_kb as f64 / 1024.0,
            ms(run.first_request),
            run.requests
        );
        if !anthropic {
            wire_floor_row(&runtime, &run, bytes)?;
        }
        // The first request on a fresh home (the store created) and on a
        // used one: the home of five 60-turn runs of these results.
        let used = tempfile::tempdir()?;
        for _ in 0..5 {
            runtime.block_on(turn_run_in(
                &herald,
                used.path(),
                60,
                anthropic,
                bytes,
                None,
            ))?;
        }
        let (mut fresh_first, mut used_first) = (Vec::new(), Vec::new());
        for _ in 0..7 {
            fresh_first.push(
                runtime
                    .block_on(turn_run(&herald, 1, anthropic, bytes))?
                    .first_request,
            );
            used_first.push(
                runtime
                    .block_on(turn_run_in(&herald, used.path(), 1, anthropic, bytes, None))?
                    .first_request,
            );
        }
        println!(
            "| first model request p50 of 7, fresh home / used home (5 earlier 60-turn runs) | < 20 ms | {:.2} / {:.2} ms |",
            ms(median(&fresh_first)),
            ms(median(&used_first))
        );
        // Runs do not index their messages for search: the first search
        // over the used home does, the next finds them indexed.
        let search = || -> Result<Duration> {
            let t0 = Instant::now();
            let out = std::process::Command::new(&herald)
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("HERALD_HOME", used.path())
                .args(["sessions", "search", "bench"])
                .output()?;
            if !out.status.success() {
                bail!(
                    "herald sessions search failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Ok(t0.elapsed())
        };
        let (first, next) = (search()?, search()?);
        println!(
            "| `herald sessions search` wall time on that home, first (indexes the 12 runs' messages) / next | — | {:.1} / {:.1} ms |",
            ms(first),
            ms(next)
        );
        // Flat as the context grows: the harness time of the first ten
        // turns against the last ten (whose requests carry ~100 more messages).
        let window = |turns: &[(usize, Duration)]| -> Vec<Duration> {
            turns.iter().map(|(_, gap)| *gap).collect()
        };
        let n = run.gaps.len();
        if n >= 20 {
            let (early, late) = (window(&run.gaps[..10]), window(&run.gaps[n - 10..]));
            println!(
                "| harness time per turn p50, turns 1-10 / last 10 ({} / {} messages), {bytes}-byte results | flat | {:.3} / {:.3} ms |",
                run.gaps[0].0,
                run.gaps[n - 1].0,
                ms(median(&early)),
                ms(median(&late))
            );
        }
    }
    if part.is_empty() || part == "exec" {
        exec::run()?;
    }
    if part.is_empty() || part == "prompt" {
        prompt::run(&herald_binary()?, part == "prompt")?;
    }
    if part.is_empty() || part == "delegation" {
        delegation_bench::run(&herald_binary()?)?;
    }
    if part.is_empty() || part == "serve" {
        serve_bench::run(&herald_binary()?)?;
    }
    if part.is_empty() || part == "permissions" {
        permissions_bench::run()?;
    }
    if part.is_empty() || part == "mcp" {
        mcp_bench::run(&herald_binary()?)?;
    }
    if part.is_empty() || part == "tui" {
        tui_bench::run(&herald_binary()?)?;
    }
    if part.is_empty() || part == "skills" {
        skills_bench::run()?;
    }
    Ok(())
}

/// The model of the realistic scenario: the first token after 300 ms, then
/// 50 tokens a second.
const REALISTIC_PACE: Pace = Pace {
    first_token: Duration::from_millis(300),
    tokens_per_second: 50.0,
};

/// `herald-bench realistic [BYTES]`: the 60-turn task against a model with
/// realistic latency ([`REALISTIC_PACE`]), 13 KB results unless told, three
/// runs. What a user feels: the harness's share of the wall time, the first
/// request, the memory herald allocated itself; and CPU per request.
fn realistic(bytes: Option<&str>) -> Result<()> {
    let bytes: usize = bytes
        .map_or(Ok(13_000), str::parse)
        .context("usage: herald-bench realistic [RESULT_BYTES]")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let herald = herald_binary()?;
    for round in 1..=3 {
        let home = tempfile::tempdir()?;
        let run = runtime.block_on(turn_run_in(
            &herald,
            home.path(),
            60,
            false,
            bytes,
            Some(REALISTIC_PACE),
        ))?;
        let overhead = run.wall.saturating_sub(run.model_time);
        println!(
            "| realistic 60-turn task, {bytes}-byte results, round {round}: wall / model / harness overhead | < 1% | {:.2} s / {:.2} s / {:.0} ms ({:.2}%) |",
            run.wall.as_secs_f64(),
            run.model_time.as_secs_f64(),
            ms(overhead),
            100.0 * overhead.as_secs_f64() / run.wall.as_secs_f64()
        );
        let mut gaps: Vec<Duration> = run.gaps.iter().map(|(_, gap)| *gap).collect();
        gaps.sort();
        println!(
            "| same run: time from a reply's last byte to the next request, p50 / p90 / sum; first request; from the last reply to exit | — | {:.2} / {:.2} / {:.0} ms; {:.1} ms; {:.1} ms |",
            ms(median(&gaps)),
            ms(percentile(&gaps, 0.9)),
            ms(gaps.iter().sum()),
            ms(run.first_request),
            ms(run.tail)
        );
        println!(
            "| same run: CPU per request / first request / anonymous RSS / VmHWM | ≤ 2.0 ms / < 20 ms / < 16 MB / — | {:.3} ms / {:.2} ms / {:.1} MB / {:.1} MB |",
            ms(run.cpu) / run.requests as f64,
            ms(run.first_request),
            run.max_anon_kb as f64 / 1024.0,
            run.max_rss_kb as f64 / 1024.0
        );
    }
    Ok(())
}

fn agent_benchmarks() -> Result<()> {
    let herald = herald_binary()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Warm the page cache so the first measured start is not a cold one.
    version_times(&herald, 3)?;
    let openai60 = best_of(&runtime, &herald, 60, false, 0)?;
    let anthropic60 = best_of(&runtime, &herald, 60, true, 0)?;
    let openai_1k = best_of(&runtime, &herald, 60, false, 1_000)?;
    let openai_13k = best_of(&runtime, &herald, 60, false, 13_000)?;
    let anthropic_13k = best_of(&runtime, &herald, 60, true, 13_000)?;
    let long = runtime.block_on(turn_run(&herald, 120, false, 0))?;
    let version = version_times(&herald, 50)?;

    let at_200: Vec<Duration> = long
        .gaps
        .iter()
        .filter(|(messages, _)| *messages >= 200)
        .map(|(_, gap)| *gap)
        .collect();
    let all_gaps: Vec<Duration> = openai60.gaps.iter().map(|(_, g)| *g).collect();

    println!(
        "| `herald --version` wall time (p50 / p95 of 50) | < 10 ms | {:.2} ms / {:.2} ms |",
        ms(median(&version)),
        ms(percentile(&version, 0.95))
    );
    for (name, run) in [("OpenAI", &openai60), ("Anthropic", &anthropic60)] {
        println!(
            "| harness CPU per turn, 60-turn run, {name} wire (process CPU / {} requests) | < 1 ms | {:.3} ms |",
            run.requests,
            ms(run.cpu) / run.requests as f64
        );
        println!(
            "| peak RSS of a 60-turn run, {name} wire | < 20 MB | {:.1} MB |",
            run.max_rss_kb as f64 / 1024.0
        );
        println!(
            "| first model request after process start, {name} wire | < 20 ms | {:.2} ms |",
            ms(run.first_request)
        );
        println!(
            "| prefix stability, {name} wire | 100% | {}/{} ({:.1}%) |",
            run.prefix.0,
            run.prefix.1,
            100.0 * run.prefix.0 as f64 / run.prefix.1.max(1) as f64
        );
    }
    let per_request = |run: &TurnRun| ms(run.cpu) / run.requests as f64;
    for (name, run) in [
        ("1 KB results, OpenAI wire", &openai_1k),
        ("13 KB results, OpenAI wire", &openai_13k),
        ("13 KB results, Anthropic wire", &anthropic_13k),
    ] {
        println!(
            "| harness CPU per turn, 60-turn run, {name} | < 1 ms | {:.3} ms (peak RSS {:.1} MB, first request {:.2} ms) |",
            per_request(run),
            run.max_rss_kb as f64 / 1024.0,
            ms(run.first_request)
        );
    }
    println!(
        "| growth of CPU per turn from 1 KB to 13 KB results, OpenAI wire | < 10% | {:+.1}% |",
        100.0 * (per_request(&openai_13k) / per_request(&openai_1k) - 1.0)
    );
    println!(
        "| harness time per turn, 60-turn run (p50 / p95) | — | {:.3} ms / {:.3} ms |",
        ms(median(&all_gaps)),
        ms(percentile(&all_gaps, 0.95))
    );
    println!(
        "| harness time per turn at ≥200 messages (p50 / p95 of {} turns) | < 2 ms p50 | {:.3} ms / {:.3} ms |",
        at_200.len(),
        ms(median(&at_200)),
        ms(percentile(&at_200, 0.95))
    );
    println!(
        "| default system prompt + tool schemas (OpenAI encoding) | < 4,000 tokens | {} bytes ≈ {} tokens |",
        openai60.prompt_bytes,
        openai60.prompt_bytes / 4
    );
    println!(
        "| 60-turn run wall time (zero latency), OpenAI / Anthropic | — | {:.0} ms / {:.0} ms |",
        ms(openai60.wall),
        ms(anthropic60.wall)
    );
    Ok(())
}
