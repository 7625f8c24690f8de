//! The PostgreSQL queue against a real PostgreSQL started by the test:
//! leases and their tokens (a late result is rejected), cancel, and three
//! `herald worker` processes on one job, one killed with SIGKILL mid-item
//! and every connection cut once: every item ends exactly once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use herald_batch::queue::Queue;
use herald_batch::results::{ItemResult, ItemStatus};
use herald_batch::{Task, load_tasks};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

use crate::common::pg::Postgres;
use crate::common::{Harness, Wire, assert_gone, sleeper_command, stderr};

fn tasks(dir: &Path, n: usize, prefix: &str) -> (std::path::PathBuf, Vec<Task>) {
    let path = dir.join(format!("{prefix}.jsonl"));
    let text: String = (0..n)
        .map(|i| format!("{}\n", json!(format!("{prefix} item {i:03}"))))
        .collect();
    std::fs::write(&path, text).unwrap();
    let tasks = load_tasks(&path, None).unwrap();
    (path, tasks)
}

fn result(claim: &herald_batch::queue::Claim, worker: &str) -> ItemResult {
    ItemResult {
        id: claim.task.id.clone(),
        hash: claim.hash.clone(),
        status: ItemStatus::Completed,
        final_answer: Some(format!("by {worker}")),
        output: None,
        repaired: false,
        tokens: Default::default(),
        cost_usd: Some(0.5),
        requests: 1,
        duration_ms: 1,
        tool_sequence: vec![],
        tool_stats: Default::default(),
        session_id: None,
        model: None,
        toolsets: None,
        cwd: None,
        error: None,
        worker: Some(worker.to_owned()),
        checks: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn leases_reject_a_late_result_and_cancel_stops_a_job() {
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    // Opening twice migrates once; the schema is herald's.
    let q = Queue::open(&pg.url()).await.unwrap();
    let _again = Queue::open(&pg.url()).await.unwrap();
    assert_eq!(pg.sql("SELECT version FROM herald_batch_schema"), "1");
    let (_, items) = tasks(dir.path(), 1, "late");
    assert_eq!(q.enqueue("late", &items).await.unwrap(), 1);
    assert_eq!(
        q.enqueue("late", &items).await.unwrap(),
        0,
        "same content: kept, not added"
    );
    q.register_worker("a", "h", 1).await.unwrap();
    q.register_worker("b", "h", 2).await.unwrap();
    let lease = Duration::from_millis(800);
    let a = q.claim("a", Some("late"), lease).await.unwrap().unwrap();
    assert!(
        q.claim("b", Some("late"), lease).await.unwrap().is_none(),
        "held under a lease"
    );
    assert!(q.heartbeat(&a, "a", lease).await.unwrap());
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // A's lease expired: B reclaims the item with the next token.
    let b = q.claim("b", Some("late"), lease).await.unwrap().unwrap();
    assert_eq!(b.hash, a.hash);
    assert_eq!(b.token, a.token + 1);
    assert_eq!(b.attempt, 2);
    assert!(
        !q.heartbeat(&a, "a", lease).await.unwrap(),
        "A lost its lease"
    );
    assert!(
        !q.complete(&a, "a", &result(&a, "a"), None).await.unwrap(),
        "A's late result is rejected"
    );
    assert!(q.complete(&b, "b", &result(&b, "b"), None).await.unwrap());
    assert!(
        !q.complete(&b, "b", &result(&b, "b"), None).await.unwrap(),
        "only once"
    );
    let results = q.results("late").await.unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0.final_answer.as_deref(), Some("by b"));
    let (jobs, workers) = q.status(Some("late")).await.unwrap();
    assert_eq!((jobs[0].done, jobs[0].queued, jobs[0].running), (1, 0, 0));
    assert_eq!(jobs[0].cost_usd, 0.5);
    let wa = workers.iter().find(|w| w.id == "a").unwrap();
    let wb = workers.iter().find(|w| w.id == "b").unwrap();
    assert_eq!((wa.done, wa.rejected), (0, 1));
    assert_eq!((wb.done, wb.rejected), (1, 1));

    // A stopping worker puts its item back; the next claim takes it.
    let (_, items) = tasks(dir.path(), 1, "returned");
    q.enqueue("returned", &items).await.unwrap();
    let first = q
        .claim("a", Some("returned"), lease)
        .await
        .unwrap()
        .unwrap();
    assert!(q.release(&first).await.unwrap());
    assert!(
        !q.release(&first).await.unwrap(),
        "only the current claim releases"
    );
    let second = q
        .claim("b", Some("returned"), lease)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (second.hash.as_str(), second.token),
        (first.hash.as_str(), first.token + 1)
    );
    assert!(
        !q.complete(&first, "a", &result(&first, "a"), None)
            .await
            .unwrap()
    );

    // Cancel: queued items are dropped, a running one loses its lease.
    let (_, items) = tasks(dir.path(), 3, "doomed");
    q.enqueue("doomed", &items).await.unwrap();
    let held = q
        .claim("a", Some("doomed"), Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(q.cancel("doomed").await.unwrap(), Some(3));
    assert!(q.claim("a", Some("doomed"), lease).await.unwrap().is_none());
    assert!(!q.heartbeat(&held, "a", lease).await.unwrap());
    assert!(
        !q.complete(&held, "a", &result(&held, "a"), None)
            .await
            .unwrap()
    );
    assert_eq!(q.cancel("no-such-job").await.unwrap(), None);
    assert_eq!(q.unfinished(Some("doomed")).await.unwrap(), 0);
}

/// The model: reads notes.txt, then answers naming the prompt.
fn model() -> Script {
    Script::new().responder(|view| {
        let prompt = view
            .messages
            .iter()
            .find(|m| m.role == "user")
            .map(|m| m.text.clone())
            .unwrap_or_default();
        if view.turn == 0 {
            Reply::tool("read_file", json!({"path": "notes.txt"}))
        } else {
            Reply::text(format!("done: {prompt}"))
        }
    })
}

async fn status(h: &Harness, url: &str) -> Value {
    let out = h
        .bare_command()
        .args([
            "batch", "status", "--queue", url, "--job", "fleet", "--json",
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn three_workers_one_killed_mid_item_and_connections_cut_every_item_ends_exactly_once() {
    let pg = Postgres::start();
    let url = pg.url();
    let h = Harness::new(model()).await;
    std::fs::write(h.work_path().join("notes.txt"), "calm\n").unwrap();
    h.server.set_latency(Duration::from_millis(150));
    // A killed worker's item is run again from scratch: the same first
    // message twice, from another process.
    h.server
        .skip_invariants("a reclaimed item repeats its conversation");
    let dir = tempfile::tempdir().unwrap();
    let items = 30;
    let (path, _) = tasks(dir.path(), items, "fleet");
    let out = h
        .command(Wire::OpenAi)
        .args([
            "batch",
            "run",
            path.to_str().unwrap(),
            "--queue",
            &url,
            "--json",
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let enq: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(enq, json!({"job": "fleet", "added": items, "kept": 0}));
    let mut workers: Vec<tokio::process::Child> = (0..3)
        .map(|_| {
            h.command(Wire::OpenAi)
                .args([
                    "worker",
                    "--queue",
                    &url,
                    "--concurrency",
                    "2",
                    "--lease-seconds",
                    "2",
                    "--drain",
                ])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let victim = workers[0].id().unwrap();
    // Wait until the victim holds an item and some are done.
    let deadline = Instant::now() + Duration::from_secs(60);
    let victim_id = loop {
        let s = status(&h, &url).await;
        let holder = s["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["pid"] == victim && w["running"].as_i64().unwrap() > 0)
            .map(|w| w["id"].as_str().unwrap().to_owned());
        if let Some(id) = holder
            && s["jobs"][0]["done"].as_i64().unwrap() >= 3
        {
            break id;
        }
        assert!(Instant::now() < deadline, "no progress: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(victim as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // What it held when it died (its leases have not expired yet, so no
    // other worker has taken these).
    let held = pg.sql(&format!(
        "SELECT string_agg(hash, ',') FROM herald_batch_items \
         WHERE worker = '{victim_id}' AND state = 'running'"
    ));
    let held: Vec<String> = held
        .split(',')
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect();
    assert!(
        !held.is_empty(),
        "the victim held nothing when it was killed"
    );
    let _ = workers[0].wait().await;
    // Cut every herald connection once: the survivors reconnect.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cut = pg.sql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE application_name = 'herald' AND pid <> pg_backend_pid()",
    );
    assert!(cut.parse::<u32>().unwrap() >= 2, "{cut}");
    let mut reports = Vec::new();
    for worker in workers.drain(1..) {
        let out = tokio::time::timeout(Duration::from_secs(120), worker.wait_with_output())
            .await
            .expect("a worker did not finish")
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        reports.push(stderr(&out));
    }
    let s = status(&h, &url).await;
    let job = &s["jobs"][0];
    assert_eq!(job["done"], items, "{s}");
    assert_eq!(
        (
            job["queued"].as_i64(),
            job["running"].as_i64(),
            job["failed"].as_i64()
        ),
        (Some(0), Some(0), Some(0)),
        "{s}"
    );
    // Fetched: one result per item, every one completed.
    let fetched = dir.path().join("fetched");
    let out = h
        .bare_command()
        .args([
            "batch",
            "fetch",
            "--queue",
            &url,
            "--job",
            "fleet",
            "--out",
            fetched.to_str().unwrap(),
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = std::fs::read_to_string(fetched.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), items);
    let ids: BTreeSet<&str> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), items);
    for l in &lines {
        assert_eq!(l["status"], "completed", "{l}");
        assert!(
            l["final_answer"]
                .as_str()
                .unwrap()
                .starts_with("done: fleet item"),
            "{l}"
        );
    }
    // What the victim held ran again from scratch elsewhere, and its
    // result is the other worker's.
    for hash in &held {
        let row = pg.sql(&format!(
            "SELECT attempts || ' ' || state || ' ' || (result->>'worker') FROM herald_batch_items WHERE hash = '{hash}'"
        ));
        let parts: Vec<&str> = row.split(' ').collect();
        assert!(parts[0].parse::<u32>().unwrap() >= 2, "{row}");
        assert_eq!(parts[1], "done", "{row}");
        assert_ne!(parts[2], victim_id, "{row}");
    }
    // The fetched trajectories export.
    let out = h
        .bare_command()
        .args([
            "batch",
            "export",
            fetched.to_str().unwrap(),
            "--format",
            "openai",
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), items);
    for report in &reports {
        println!("{}", report.lines().last().unwrap_or_default());
    }
    // Bad requests to the queue say what to do and change nothing.
    let out = h
        .bare_command()
        .args(["batch", "cancel", "--queue", &url, "--job", "nope"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no job `nope`"), "{}", stderr(&out));
    let out = h
        .bare_command()
        .args([
            "batch",
            "status",
            "--queue",
            "postgres://postgres@127.0.0.1:1/x?sslmode=disable",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot connect to PostgreSQL"),
        "{}",
        stderr(&out)
    );
    assert_eq!(status(&h, &url).await["jobs"][0]["done"], items);
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_puts_a_workers_item_back_exits_0_and_leaves_no_process() {
    let pg = Postgres::start();
    let url = pg.url();
    // The first attempt at "slow" runs a command that sleeps; every other
    // answer is immediate.
    let first = Arc::new(AtomicBool::new(true));
    let script = {
        let first = Arc::clone(&first);
        Script::new().responder(move |view| {
            let prompt = view
                .messages
                .iter()
                .find(|m| m.role == "user")
                .map(|m| m.text.clone())
                .unwrap_or_default();
            if prompt.contains("slow") && view.turn == 0 && first.swap(false, Ordering::SeqCst) {
                Reply::tool("terminal", json!({"command": sleeper_command("term.pids")}))
            } else {
                Reply::text(format!("done: {prompt}"))
            }
        })
    };
    let h = Harness::new(script).await;
    h.server
        .skip_invariants("a released item repeats its conversation");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("term.jsonl");
    std::fs::write(&path, "\"slow item\"\n\"fast item 1\"\n\"fast item 2\"\n").unwrap();
    let out = h
        .command(Wire::OpenAi)
        .args(["batch", "run", path.to_str().unwrap(), "--queue", &url])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let worker = h
        .command(Wire::OpenAi)
        .args(["--yolo", "worker", "--queue", &url, "--concurrency", "1"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Mid-item: its command is running.
    let pids = h.sleeper_pids("term.pids").await;
    let claimed = pg.sql("SELECT state || ' ' || attempts FROM herald_batch_items WHERE task->>'prompt' = 'slow item'");
    assert_eq!(claimed, "running 1");
    let t0 = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(worker.id().unwrap() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(20), worker.wait_with_output())
        .await
        .expect("the worker did not stop on SIGTERM")
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t0.elapsed()
    );
    assert!(
        stderr(&out).contains("its unfinished items went back to the queue"),
        "{}",
        stderr(&out)
    );
    assert_gone(&pids, "the stopped item's command").await;
    // The item is back in the queue, nothing was written for it, and the
    // items it never claimed are untouched.
    assert_eq!(
        pg.sql("SELECT string_agg(state || ' ' || attempts || ' ' || (result IS NULL), ',' ORDER BY idx) FROM herald_batch_items WHERE job_id = 'term'"),
        "queued 1 true,queued 0 true,queued 0 true"
    );
    // Another worker finishes the job: each item once.
    let out = h
        .command(Wire::OpenAi)
        .args(["--yolo", "worker", "--queue", &url, "--drain"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("3 items done"), "{}", stderr(&out));
    assert_eq!(
        pg.sql("SELECT string_agg(state || ' ' || attempts || ' ' || (result->>'final_answer'), ',' ORDER BY idx) FROM herald_batch_items WHERE job_id = 'term'"),
        "done 2 done: slow item,done 1 done: fast item 1,done 1 done: fast item 2"
    );
    assert_eq!(
        h.requests_of("slow item").len(),
        2,
        "one aborted attempt, one whole"
    );
}

/// The queue benchmark of docs/BENCHMARKS.md: `BENCH_ITEMS` items (1,000
/// by default) × 3 scripted model calls, 4 `herald worker` processes
/// (concurrency 1 each) on one PostgreSQL. Run with
/// `cargo test -p herald-cli --test all queue_benchmark -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a benchmark: run it on purpose"]
async fn queue_benchmark() {
    let n: usize = std::env::var("BENCH_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let pg = Postgres::start();
    let url = pg.url();
    let h = Harness::new(Script::new().responder(|view| match view.turn {
        0 | 1 => Reply::tool("read_file", json!({"path": "notes.txt"})),
        _ => Reply::text("done"),
    }))
    .await;
    std::fs::write(h.work_path().join("notes.txt"), "calm\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = tasks(dir.path(), n, "fleet");
    let out = h
        .command(Wire::OpenAi)
        .args(["batch", "run", path.to_str().unwrap(), "--queue", &url])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let started = Instant::now();
    let workers: Vec<tokio::process::Child> = (0..4)
        .map(|_| {
            h.command(Wire::OpenAi)
                .args(["worker", "--queue", &url, "--concurrency", "1", "--drain"])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut trips = 0u64;
    let mut done = 0u64;
    let mut peak = 0u64;
    for worker in workers {
        let out = worker.wait_with_output().await.unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let line = stderr(&out).lines().last().unwrap_or_default().to_owned();
        // "worker ID: N items done, R results rejected, T PostgreSQL round trips, peak RSS M MiB"
        let words: Vec<&str> = line.split_whitespace().collect();
        done += words[2].parse::<u64>().unwrap();
        trips += words[8].parse::<u64>().unwrap();
        peak = peak.max(words[words.len() - 2].parse::<u64>().unwrap());
    }
    let took = started.elapsed();
    assert_eq!(done as usize, n);
    println!(
        "queue benchmark: {n} items x 3 calls, 4 workers: {:.1} s, {:.1} items/s, {:.2} PostgreSQL round trips per item, peak RSS of a worker {} MiB",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64(),
        trips as f64 / n as f64,
        peak
    );
}
