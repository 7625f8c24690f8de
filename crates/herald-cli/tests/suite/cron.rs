//! Scheduled jobs end to end: `herald cron` defines them, `herald daemon`
//! runs them against the scripted model. The daemon reads its time from
//! a clock file (`HERALD_CLOCK_FILE`) the tests move forward, so no test
//! waits for a real fire time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::clocked::{Clocked, Logged, MINUTE, T0};
use common::{Harness, stderr};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

/// The model: a job's prompt gets an answer naming it; "slow" prompts run
/// a long command first.
fn model() -> Script {
    Script::new().responder(|view| {
        let prompt = view
            .messages
            .iter()
            .rfind(|m| m.role == "user" && m.tool_results.is_empty())
            .map(|m| m.text.clone())
            .unwrap_or_default();
        let answered = view.messages.iter().any(|m| m.role == "assistant");
        if prompt.contains("slow") && !answered {
            return Reply::tool("terminal", json!({"command": "sleep 60"}));
        }
        if prompt.contains("quiet") {
            return Reply::text("[SILENT] nothing needs attention");
        }
        Reply::text(format!("report for: {prompt}"))
    })
}

impl Clocked {
    async fn runs(&self, job: &str) -> Vec<Value> {
        self.json(&["cron", "runs", job, "--json"])
            .await
            .as_array()
            .unwrap()
            .clone()
    }

    /// Waits until `job` has `count` runs in a final state.
    async fn until_final(&self, job: &str, count: usize) -> Vec<Value> {
        let t0 = Instant::now();
        loop {
            let runs = self.runs(job).await;
            let done = runs
                .iter()
                .filter(|r| !matches!(r["state"].as_str(), Some("claimed" | "running")))
                .count();
            if done >= count {
                return runs;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{job}: {count} final runs expected: {runs:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// How many requests the conversation of `prompt` made.
    fn requests_for(&self, prompt: &str) -> usize {
        self.h.requests_of(prompt).len()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn jobs_are_added_shown_changed_paused_and_removed() {
    let c = Clocked::new(model()).await;
    let added = c
        .json(&[
            "cron",
            "add",
            "ci",
            "--schedule",
            "0 9 * * 1-5",
            "--tz",
            "Europe/Berlin",
            "--prompt",
            "review CI",
            "--budget-usd",
            "0.5",
            "--json",
        ])
        .await;
    assert_eq!(added["name"], "ci");
    assert_eq!(added["mode"], "workspace-write");
    let upcoming: Vec<i64> = added["upcoming"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    // Monday 09:00 Berlin is 08:00 UTC = T0 itself, so the first is Tuesday.
    assert_eq!(upcoming.len(), 5);
    assert_eq!(upcoming[0], T0 + 24 * 60 * MINUTE);
    assert_eq!(
        upcoming[4],
        T0 + 7 * 24 * 60 * MINUTE,
        "the weekend is skipped"
    );
    let text = c
        .herald(&[
            "cron",
            "add",
            "nightly",
            "--schedule",
            "every 15m",
            "--prompt",
            "x",
        ])
        .await;
    assert!(text.status.success(), "{}", stderr(&text));
    let out = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(out.contains("next fire times:"), "{out}");
    assert_eq!(out.matches("  2026-").count(), 5, "{out}");

    let list = c.json(&["cron", "list", "--json"]).await;
    assert_eq!(list.as_array().unwrap().len(), 2);

    let edited = c
        .json(&[
            "cron",
            "edit",
            "ci",
            "--prompt",
            "review CI again",
            "--json",
        ])
        .await;
    assert_eq!(edited["prompt"], "review CI again");
    assert_eq!(edited["schedule"], "0 9 * * 1-5", "unchanged options stay");
    let paused = c.json(&["cron", "pause", "ci", "--json"]).await;
    assert_eq!(paused["paused"], true);
    let resumed = c.json(&["cron", "resume", "ci", "--json"]).await;
    assert_eq!(resumed["paused"], false);
    let shown = c.json(&["cron", "show", "ci", "--json"]).await;
    assert_eq!(shown["runs"], json!([]));
    assert_eq!(shown["budget_usd"], 0.5);

    // Bad input: each gets its error, exit 2, and nothing changes.
    let before = c.json(&["cron", "list", "--json"]).await;
    for (args, wanted) in [
        (
            vec![
                "cron",
                "add",
                "ci",
                "--schedule",
                "every 1h",
                "--prompt",
                "x",
            ],
            "exists",
        ),
        (
            vec![
                "cron",
                "add",
                "b",
                "--schedule",
                "whenever",
                "--prompt",
                "x",
            ],
            "not a schedule",
        ),
        (
            vec![
                "cron",
                "add",
                "b",
                "--schedule",
                "every 1h",
                "--tz",
                "Mars/Base",
                "--prompt",
                "x",
            ],
            "not a time zone",
        ),
        (
            vec![
                "cron",
                "add",
                "b",
                "--schedule",
                "every 1h",
                "--prompt",
                "x",
                "--mode",
                "full-access",
            ],
            "creator's permission mode",
        ),
        (
            vec!["cron", "add", "b", "--prompt", "x"],
            "needs --schedule",
        ),
        (
            vec![
                "cron",
                "add",
                "b c",
                "--schedule",
                "every 1h",
                "--prompt",
                "x",
            ],
            "not a job name",
        ),
        (
            vec![
                "cron",
                "add",
                "b",
                "--schedule",
                "every 1h",
                "--prompt",
                "x",
                "--cwd",
                "/no/such/dir",
            ],
            "does not exist",
        ),
        (
            vec![
                "cron",
                "add",
                "b",
                "--schedule",
                "at 2026-11-29 09:00",
                "--prompt",
                "x",
            ],
            "has passed",
        ),
        (
            vec!["cron", "edit", "ci", "--schedule", "every 5s"],
            "too often",
        ),
        (vec!["cron", "show", "nope"], "no job named 'nope'"),
        (vec!["cron", "remove", "nope"], "no job named 'nope'"),
    ] {
        let output = c.herald(&args).await;
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(wanted),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    assert_eq!(c.json(&["cron", "list", "--json"]).await, before);

    let removed = c.json(&["cron", "remove", "nightly", "--json"]).await;
    assert_eq!(removed["removed"], "nightly");
    assert_eq!(
        c.json(&["cron", "list", "--json"])
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_daemon_runs_a_due_job_and_stamps_the_last_run_at_its_end() {
    let c = Clocked::new(model()).await;
    let job = c
        .json(&[
            "cron",
            "add",
            "check",
            "--schedule",
            "every 15m",
            "--prompt",
            "check the build",
            "--json",
        ])
        .await;
    assert_eq!(job["next_fire_at"], T0 + 15 * MINUTE);
    let mut daemon = c.daemon();
    daemon.said("running scheduled jobs", &[]).await;
    // Not due yet: nothing runs.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(c.requests_for("check the build"), 0);
    c.set_clock(T0 + 15 * MINUTE);
    daemon.said("run #1 completed", &[]).await;
    let runs = c.runs("check").await;
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["state"], "completed");
    assert_eq!(run["trigger"], "schedule");
    assert_eq!(run["scheduled_for"], T0 + 15 * MINUTE);
    assert_eq!(run["result"], "report for: check the build");
    assert!(run["session_id"].as_str().unwrap().starts_with("ses_"));
    let shown = c.json(&["cron", "show", "check", "--json"]).await;
    assert_eq!(shown["last_state"], "completed");
    assert!(shown["last_run_at"].as_i64().unwrap() >= run["started_at"].as_i64().unwrap());
    assert_eq!(
        shown["last_run_at"], run["finished_at"],
        "stamped at the end"
    );
    assert_eq!(shown["next_fire_at"], T0 + 30 * MINUTE);
    // The run's session is a stored session.
    let session =
        c.h.cli_json(&[
            "sessions",
            "show",
            run["session_id"].as_str().unwrap(),
            "--json",
        ])
        .await;
    assert_eq!(session["session"]["source"], "cron");
    daemon.stop().await;
    assert_eq!(c.requests_for("check the build"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_daemons_fire_each_job_once_and_the_second_takes_over() {
    let c = Clocked::new(model()).await;
    c.json(&[
        "cron",
        "add",
        "tick",
        "--schedule",
        "every 1m",
        "--prompt",
        "tick job",
        "--json",
    ])
    .await;
    let mut first = c.daemon();
    first.said("running scheduled jobs", &[]).await;
    let mut second = c.daemon();
    second.said("standing by", &[]).await;
    for minute in 1..=3 {
        c.set_clock(T0 + minute * MINUTE);
        c.until_final("tick", minute as usize).await;
    }
    assert_eq!(c.requests_for("tick job"), 3, "each slot fired once");
    first.kill_9();
    second.said("running scheduled jobs", &[]).await;
    c.set_clock(T0 + 4 * MINUTE);
    let runs = c.until_final("tick", 4).await;
    assert_eq!(c.requests_for("tick job"), 4);
    let slots: Vec<i64> = runs
        .iter()
        .map(|r| r["scheduled_for"].as_i64().unwrap())
        .collect();
    assert_eq!(slots, [4, 3, 2, 1].map(|m| T0 + m * MINUTE));
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_open_when_its_daemon_dies_is_unknown_and_not_run_again() {
    let c = Clocked::new(model()).await;
    c.json(&[
        "cron",
        "add",
        "slowjob",
        "--schedule",
        "every 15m",
        "--prompt",
        "slow report",
        "--json",
    ])
    .await;
    let mut daemon = c.daemon();
    daemon.said("running scheduled jobs", &[]).await;
    c.set_clock(T0 + 15 * MINUTE);
    daemon.said("run #1 started", &[]).await;
    // Its command runs: the run is `running`.
    let t0 = Instant::now();
    while c.runs("slowjob").await[0]["state"] != "running" {
        assert!(t0.elapsed() < Duration::from_secs(20));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    daemon.kill_9();
    let _ = daemon.child.wait().await;
    let requests = c.requests_for("slow report");

    let mut next = c.daemon();
    next.said("marked unknown", &[]).await;
    let runs = c.runs("slowjob").await;
    assert_eq!(runs.len(), 1, "not run again: {runs:?}");
    assert_eq!(runs[0]["state"], "unknown");
    assert!(
        runs[0]["error"].as_str().unwrap().contains("died"),
        "{runs:?}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        c.requests_for("slow report"),
        requests,
        "no request for the lost slot"
    );
    // The next slot runs.
    c.set_clock(T0 + 30 * MINUTE);
    next.said("run #2 started", &[]).await;
    let runs = c.runs("slowjob").await;
    assert_eq!(runs[0]["scheduled_for"], T0 + 30 * MINUTE);
    next.child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn after_downtime_a_job_catches_up_once_or_skips() {
    let c = Clocked::new(model()).await;
    c.json(&[
        "cron",
        "add",
        "once",
        "--schedule",
        "every 15m",
        "--prompt",
        "catch up once",
        "--json",
    ])
    .await;
    c.json(&[
        "cron",
        "add",
        "skipper",
        "--schedule",
        "every 15m",
        "--prompt",
        "skip missed",
        "--catch-up",
        "skip",
        "--json",
    ])
    .await;
    // Two hours pass with no daemon: eight slots each.
    c.set_clock(T0 + 120 * MINUTE + 30_000);
    let mut daemon = c.daemon();
    daemon.said("running scheduled jobs", &[]).await;
    let runs = c.until_final("once", 1).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["trigger"], "catch_up");
    assert_eq!(
        runs[0]["scheduled_for"],
        T0 + 120 * MINUTE,
        "the latest missed slot"
    );
    assert_eq!(runs[0]["state"], "completed");
    let skipped = c.until_final("skipper", 1).await;
    assert_eq!(skipped[0]["state"], "skipped");
    assert!(
        skipped[0]["error"]
            .as_str()
            .unwrap()
            .contains("8 fire times passed"),
        "{skipped:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(c.requests_for("catch up once"), 1);
    assert_eq!(c.requests_for("skip missed"), 0);
    for name in ["once", "skipper"] {
        let shown = c.json(&["cron", "show", name, "--json"]).await;
        assert_eq!(shown["next_fire_at"], T0 + 135 * MINUTE, "{name}");
    }
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_that_cannot_work_is_blocked_without_a_model_request() {
    let c = Clocked::new(model()).await;
    let gone = tempfile::tempdir().unwrap();
    let dir = gone.path().display().to_string();
    c.json(&[
        "cron",
        "add",
        "moved",
        "--schedule",
        "every 15m",
        "--prompt",
        "blocked one",
        "--cwd",
        &dir,
        "--json",
    ])
    .await;
    c.json(&[
        "cron",
        "add",
        "noskill",
        "--schedule",
        "every 15m",
        "--prompt",
        "blocked two",
        "--skills",
        "no-such-skill",
        "--json",
    ])
    .await;
    drop(gone);
    let mut daemon = c.daemon();
    daemon.said("running scheduled jobs", &[]).await;
    c.set_clock(T0 + 15 * MINUTE);
    let moved = c.until_final("moved", 1).await;
    assert_eq!(moved[0]["state"], "blocked");
    assert!(
        moved[0]["error"].as_str().unwrap().contains("is gone"),
        "{moved:?}"
    );
    let noskill = c.until_final("noskill", 1).await;
    assert_eq!(noskill[0]["state"], "blocked");
    assert!(
        noskill[0]["error"]
            .as_str()
            .unwrap()
            .contains("no-such-skill"),
        "{noskill:?}"
    );
    assert_eq!(c.requests_for("blocked"), 0);
    daemon.stop().await;

    // run-now runs a job here and now, without a daemon.
    c.json(&[
        "cron",
        "add",
        "manual",
        "--schedule",
        "every 1h",
        "--prompt",
        "by hand",
        "--json",
    ])
    .await;
    let run = c.json(&["cron", "run-now", "manual", "--json"]).await;
    assert_eq!(run["state"], "completed");
    assert_eq!(run["trigger"], "manual");
    assert_eq!(run["result"], "report for: by hand");
    let blocked = c.herald(&["cron", "run-now", "moved"]).await;
    assert_eq!(blocked.status.code(), Some(1));
}

/// `herald serve` runs due jobs too, unless `--no-scheduler`.
#[tokio::test(flavor = "multi_thread")]
async fn herald_serve_runs_jobs_unless_told_not_to() {
    let c = Clocked::new(model()).await;
    c.json(&[
        "cron",
        "add",
        "served",
        "--schedule",
        "every 15m",
        "--prompt",
        "served job",
        "--json",
    ])
    .await;
    let serve = |extra: &[&str]| {
        let mut cmd = c.command();
        cmd.args(["serve", "--port", "0", "--token", "t"])
            .args(extra);
        Logged::spawn(cmd)
    };
    let mut quiet = serve(&["--no-scheduler"]);
    c.set_clock(T0 + 15 * MINUTE);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        c.runs("served").await.is_empty(),
        "--no-scheduler runs nothing"
    );
    quiet.child.kill().await.unwrap();
    quiet.drain();

    let mut server = serve(&[]);
    server.said("running scheduled jobs", &[]).await;
    server.said("run #1 completed", &[]).await;
    assert_eq!(c.requests_for("served job"), 1);
    server.stop().await;
}

/// The agent schedules with `cronjob` (toolset `cron`, only when asked
/// for; it is not among the default tools): creating asks in workspace-write
/// (so a headless run is refused and nothing is stored), listing never
/// asks, and in full-access the job is created with that mode at most.
#[tokio::test(flavor = "multi_thread")]
async fn the_agent_schedules_with_the_cronjob_tool() {
    let create = json!({
        "action": "create", "name": "nightly", "schedule": "every 1h", "prompt": "tidy the logs"
    });
    let h = Harness::new(
        Script::new()
            .conversation(
                "schedule it, asking",
                vec![
                    Reply::tool("cronjob", create.clone()),
                    Reply::text("scheduled"),
                ],
            )
            .conversation(
                "schedule it in full access",
                vec![
                    Reply::tool("cronjob", create.clone()),
                    Reply::text("scheduled"),
                ],
            )
            .conversation(
                "what is scheduled",
                vec![
                    Reply::tool("cronjob", json!({"action": "list"})),
                    Reply::text("listed"),
                ],
            ),
    )
    .await;
    let c = Clocked::with(h);
    let output = c
        .herald(&["run", "--toolsets", "cron", "--json", "schedule it, asking"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results =
        common::tool_results(&c.h.requests_of("schedule it, asking").last().unwrap().body);
    assert!(results[0].contains("needs approval"), "{results:?}");
    assert!(
        c.json(&["cron", "list", "--json"])
            .await
            .as_array()
            .unwrap()
            .is_empty()
    );

    let output = c
        .herald(&[
            "run",
            "--toolsets",
            "cron",
            "--mode",
            "full-access",
            "--json",
            "schedule it in full access",
        ])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = common::tool_results(
        &c.h.requests_of("schedule it in full access")
            .last()
            .unwrap()
            .body,
    );
    assert!(
        results[0].contains("\"created\":\"nightly\""),
        "{results:?}"
    );
    let job = c.json(&["cron", "show", "nightly", "--json"]).await;
    assert_eq!(job["prompt"], "tidy the logs");
    assert_eq!(job["mode"], "full-access");
    assert_eq!(job["next_fire_at"], T0 + 60 * MINUTE);
    assert_eq!(
        job["cwd"],
        c.h.work_path()
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    );

    let output = c
        .herald(&[
            "run",
            "--toolsets",
            "cron,terminal",
            "--json",
            "what is scheduled",
        ])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = common::tool_results(&c.h.requests_of("what is scheduled").last().unwrap().body);
    assert!(
        results[0].contains("\"nightly\""),
        "listing never asks: {results:?}"
    );
}

/// One request a webhook receiver got: its headers (lower-case names) and body.
#[derive(Debug, Clone)]
struct Received {
    headers: std::collections::HashMap<String, String>,
    body: String,
}

/// A webhook receiver on loopback: answers 500 to its first request and
/// 200 after, recording each.
async fn receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Received>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&got);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut data = Vec::new();
            let mut buf = [0u8; 4096];
            let (head, body) = loop {
                let n = socket.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    break (String::new(), String::new());
                }
                data.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&data).into_owned();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if body.len() >= length {
                        break (head.to_owned(), body[..length].to_owned());
                    }
                }
            };
            let headers = head
                .lines()
                .skip(1)
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                .collect();
            let first = {
                let mut all = seen.lock().unwrap();
                all.push(Received { headers, body });
                all.len() == 1
            };
            let status = if first {
                "500 Internal Server Error"
            } else {
                "200 OK"
            };
            let _ = socket
                .write_all(
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .as_bytes(),
                )
                .await;
        }
    });
    (url, got)
}

/// A run's result goes to its webhook, signed, retried after a failure;
/// the delivery is recorded apart from the run. A `[SILENT]` reply is kept
/// and not delivered.
#[tokio::test(flavor = "multi_thread")]
async fn results_are_delivered_signed_and_retried_and_silent_ones_kept() {
    let c = Clocked::new(model()).await;
    let (url, got) = receiver().await;
    let hook_log = c.h.home.path().join("hook.log");
    c.h.config(&format!(
        "[[hooks]]\nevent = \"notification\"\nmatcher = \"job_completed\"\ncommand = \"cat >> {}; echo >> {}\"\n",
        hook_log.display(),
        hook_log.display()
    ));
    c.json(&[
        "cron",
        "add",
        "hooked",
        "--schedule",
        "every 15m",
        "--prompt",
        "report please",
        "--webhook",
        &url,
        "--webhook-secret-env",
        "HOOK_SECRET",
        "--json",
    ])
    .await;
    c.json(&[
        "cron",
        "add",
        "quiet",
        "--schedule",
        "every 15m",
        "--prompt",
        "quiet check",
        "--webhook",
        &url,
        "--json",
    ])
    .await;
    let bad = c
        .herald(&[
            "cron",
            "add",
            "b",
            "--schedule",
            "every 1h",
            "--prompt",
            "x",
            "--webhook",
            "ftp://x",
        ])
        .await;
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    let mut cmd = c.command();
    cmd.env("HOOK_SECRET", "s3cret").arg("daemon");
    let mut daemon = Logged::spawn(cmd);
    daemon.said("running scheduled jobs", &[]).await;
    c.set_clock(T0 + 15 * MINUTE);
    let t0 = Instant::now();
    let run = loop {
        let runs = c.runs("hooked").await;
        if runs.first().is_some_and(|r| r["delivery"] == "delivered") {
            break runs[0].clone();
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "{runs:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(run["state"], "completed");
    assert_eq!(run["delivery_attempts"], 2, "the first try got a 500");
    assert!(run["delivered_at"].is_i64());
    let received = got.lock().unwrap().clone();
    assert_eq!(received.len(), 2, "{received:?}");
    for r in &received {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["job"], "hooked");
        assert_eq!(body["result"], "report for: report please");
        assert_eq!(
            r.headers.get("x-herald-signature-256").map(String::as_str),
            Some(herald_cron::delivery::signature(b"s3cret", r.body.as_bytes()).as_str())
        );
    }
    c.until_final("quiet", 1).await;
    let t0 = Instant::now();
    let quiet = loop {
        let runs = c.runs("quiet").await;
        if runs[0]["delivery"] != "pending" {
            break runs;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{runs:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(quiet[0]["state"], "completed");
    assert_eq!(quiet[0]["delivery"], "silent");
    assert_eq!(quiet[0]["result"], "[SILENT] nothing needs attention");
    assert_eq!(
        got.lock().unwrap().len(),
        2,
        "nothing sent for the silent run"
    );
    daemon.stop().await;
}

/// A run that spends more than its job's `--budget-usd` is interrupted
/// and ends `failed`, saying so (its long command does not run to the end).
#[tokio::test(flavor = "multi_thread")]
async fn a_run_over_its_budget_is_stopped() {
    let c = Clocked::new(model()).await;
    c.h.config("[pricing.\"gpt-4.1-mini\"]\ninput = 1000.0\noutput = 1000.0\n");
    c.json(&[
        "cron",
        "add",
        "spender",
        "--schedule",
        "every 15m",
        "--prompt",
        "slow and costly",
        "--budget-usd",
        "0.0001",
        "--json",
    ])
    .await;
    let started = Instant::now();
    let output = c.herald(&["cron", "run-now", "spender", "--json"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let run: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the 60 s command was stopped"
    );
    assert_eq!(run["state"], "failed", "{run}");
    assert!(
        run["error"].as_str().unwrap().contains("over its budget"),
        "{run}"
    );
    assert!(run["cost_usd"].as_f64().unwrap() > 0.0001, "{run}");
}

/// With `--resume-session` every run continues the job's session: the
/// second run's request carries the first run's conversation.
#[tokio::test(flavor = "multi_thread")]
async fn a_job_with_resume_session_continues_its_session() {
    let c = Clocked::new(model()).await;
    c.json(&[
        "cron",
        "add",
        "diary",
        "--schedule",
        "every 1h",
        "--prompt",
        "diary entry",
        "--resume-session",
        "--json",
    ])
    .await;
    let first = c.json(&["cron", "run-now", "diary", "--json"]).await;
    let second = c.json(&["cron", "run-now", "diary", "--json"]).await;
    assert_eq!(
        first["session_id"], second["session_id"],
        "{first} {second}"
    );
    let last = c.h.requests_of("diary entry").last().unwrap().body.clone();
    let users = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(users, 2, "the second run saw the first: {last}");
    let job = c.json(&["cron", "show", "diary", "--json"]).await;
    assert_eq!(job["session_id"], first["session_id"]);
}

/// `--max-parallel-jobs` bounds the runs at once: a second due job waits
/// while the first runs.
#[tokio::test(flavor = "multi_thread")]
async fn max_parallel_jobs_makes_due_jobs_wait() {
    let c = Clocked::new(model()).await;
    for name in ["slow-a", "slow-b"] {
        c.json(&[
            "cron",
            "add",
            name,
            "--schedule",
            "every 15m",
            "--prompt",
            "slow work",
            "--json",
        ])
        .await;
    }
    let mut cmd = c.command();
    cmd.args(["daemon", "--max-parallel-jobs", "1"]);
    let mut daemon = Logged::spawn(cmd);
    daemon.said("running scheduled jobs", &[]).await;
    c.set_clock(T0 + 15 * MINUTE);
    daemon.said("run #1 started", &[]).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let a = c.runs("slow-a").await;
    let b = c.runs("slow-b").await;
    assert_eq!(a.len() + b.len(), 1, "one run at a time: {a:?} {b:?}");
    daemon.child.kill().await.unwrap();
}

/// `herald daemon install` writes a user service that runs `herald daemon`
/// for this HERALD_HOME, and says how to enable it.
#[cfg(not(target_os = "macos"))]
#[tokio::test(flavor = "multi_thread")]
async fn daemon_install_writes_a_user_service() {
    let c = Clocked::new(model()).await;
    let user_home = tempfile::tempdir().unwrap();
    let output = c
        .command()
        .env("HOME", user_home.path())
        .args(["daemon", "install"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let unit = user_home
        .path()
        .join(".config/systemd/user/herald-daemon.service");
    let text = std::fs::read_to_string(&unit).unwrap();
    assert!(text.contains(" daemon\n"), "{text}");
    assert!(
        text.contains(&format!("HERALD_HOME={}", c.h.home.path().display())),
        "{text}"
    );
    let said = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        said.contains("systemctl --user enable --now herald-daemon"),
        "{said}"
    );
}
