//! `herald eval run SUITE --queue URL`: the suite of the eval tests (every
//! check kind, a template directory with a setup, judged checks), twice
//! over, spread over two `herald worker`s of a real PostgreSQL. The
//! workers grade the checks that need the attempt's directory; the
//! enqueuing command judges and writes the report, which grades every
//! check of every attempt as a run on this machine does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use herald_batch::queue::Queue;
use serde_json::Value;

use crate::common::pg::Postgres;
use crate::common::{Harness, Wire, stderr};
use crate::suite::eval::{model, report, suite_dir};

/// An attempt's pass/fail and `(kind, passed)` of each of its checks.
type Graded = (bool, Vec<(String, bool)>);

/// `(task, repeat)` → how that attempt was graded, in a report.
fn grades(report: &Value) -> BTreeMap<(String, u64), Graded> {
    report["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let checks = a["checks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c["kind"].as_str().unwrap().to_owned(),
                        c["passed"].as_bool().unwrap(),
                    )
                })
                .collect();
            (
                (
                    a["task_id"].as_str().unwrap().to_owned(),
                    a["repeat"].as_u64().unwrap(),
                ),
                (a["passed"].as_bool().unwrap(), checks),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_suite_over_the_queue_with_two_workers_grades_like_a_local_run() {
    let pg = Postgres::start();
    let url = pg.url();
    let h = Harness::new(model(Arc::new(AtomicUsize::new(0)))).await;
    h.server
        .skip_invariants("repeated attempts share a first message across system prompts");
    h.server.set_latency(Duration::from_millis(100));
    let dir = suite_dir();
    let suite = dir.path().join("suite.yaml");
    let local = dir.path().join("local");
    let out = h
        .command(Wire::OpenAi)
        .args([
            "eval",
            "run",
            suite.to_str().unwrap(),
            "--out",
            local.to_str().unwrap(),
            "--repeat",
            "2",
            "--judge-model",
            "gpt-4.1-judge",
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let local_report = report(&local);

    // A bad queue: refused before anything is written.
    let refused = dir.path().join("refused");
    let out = h
        .command(Wire::OpenAi)
        .args([
            "eval",
            "run",
            suite.to_str().unwrap(),
            "--out",
            refused.to_str().unwrap(),
            "--queue",
            "postgres://postgres@127.0.0.1:1/x?sslmode=disable",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot connect to PostgreSQL"),
        "{}",
        stderr(&out)
    );
    assert!(!refused.exists(), "nothing written for a refused queue");
    let out = h
        .command(Wire::OpenAi)
        .args(["eval", "run", suite.to_str().unwrap(), "--job", "x"])
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "--job needs --queue: {}",
        stderr(&out)
    );

    // The same suite over the queue: the command enqueues and waits.
    let queued = dir.path().join("queued");
    let eval = h
        .command(Wire::OpenAi)
        .args([
            "eval",
            "run",
            suite.to_str().unwrap(),
            "--out",
            queued.to_str().unwrap(),
            "--repeat",
            "2",
            "--judge-model",
            "gpt-4.1-judge",
            "--queue",
            &url,
            "--job",
            "evq",
        ])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let q = Queue::open(&url).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (jobs, _) = q.status(Some("evq")).await.unwrap();
        if jobs.first().is_some_and(|j| j.queued == 6) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the attempts were never enqueued"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let work = dir.path().join("worker-work");
    let workers: Vec<tokio::process::Child> = (0..2)
        .map(|_| {
            h.command(Wire::OpenAi)
                .args([
                    "worker",
                    "--queue",
                    &url,
                    "--concurrency",
                    "2",
                    "--drain",
                    "--work-dir",
                    work.to_str().unwrap(),
                ])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for worker in workers {
        let out = tokio::time::timeout(Duration::from_secs(120), worker.wait_with_output())
            .await
            .expect("a worker did not finish")
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = tokio::time::timeout(Duration::from_secs(60), eval.wait_with_output())
        .await
        .expect("the eval command did not finish")
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let queued_report = report(&queued);
    let (a, b) = (grades(&local_report), grades(&queued_report));
    assert_eq!(a.len(), 6);
    assert_eq!(a, b, "the queued run grades every check as the local one");
    for key in [
        "pass_rate",
        "pass_at_k",
        "completion_rate",
        "tool_calls_per_task",
    ] {
        assert_eq!(
            local_report["metrics"][key], queued_report["metrics"][key],
            "{key}"
        );
    }
    // Both workers ran attempts; each attempt's directory is gone.
    let ran_by: BTreeSet<&str> = queued_report["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["result"]["worker"].as_str().unwrap())
        .collect();
    assert_eq!(ran_by.len(), 2, "{ran_by:?}");
    let left: Vec<_> = std::fs::read_dir(work.join("eval"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "attempt directories left: {left:?}");
    // The results and trajectories are there for `batch export`.
    let lines = std::fs::read_to_string(queued.join("results.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 6);
    assert!(
        !lines.contains("\"checks\""),
        "the report holds the checks: {lines}"
    );
    for md in ["report.md", "report.html"] {
        assert!(queued.join(md).is_file(), "{md}");
    }

    // A job cancelled while the command waits ends it with an error and
    // no report.
    let cancelled = dir.path().join("cancelled");
    let eval = h
        .command(Wire::OpenAi)
        .args([
            "eval",
            "run",
            suite.to_str().unwrap(),
            "--out",
            cancelled.to_str().unwrap(),
            "--queue",
            &url,
            "--job",
            "evc",
        ])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (jobs, _) = q.status(Some("evc")).await.unwrap();
        if jobs.first().is_some_and(|j| j.queued == 3) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the attempts were never enqueued"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(q.cancel("evc").await.unwrap(), Some(3));
    let out = tokio::time::timeout(Duration::from_secs(30), eval.wait_with_output())
        .await
        .expect("the eval command did not notice the cancel")
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("job `evc` was cancelled with 0 of 3 attempts finished"),
        "{}",
        stderr(&out)
    );
    assert!(!cancelled.join("report.json").exists());
}
