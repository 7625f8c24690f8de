//! Heartbeats end to end: `herald heartbeat` gives a session one, `herald
//! daemon` wakes it against the scripted model. The daemon reads its time
//! from a clock file (`HERALD_CLOCK_FILE`) the tests move forward.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::clocked::{Clocked, Logged, MINUTE, T0};
use common::{Wire, last, stderr};
use herald_testkit::{RecordedRequest, Reply, Script};
use serde_json::Value;

const EVERY: i64 = 30 * MINUTE;

const CHECK_BUILD: &str = "Check the build. Reply HEARTBEAT_OK when it is green.";
const CHECK_DISK: &str = "Check the disk.";

/// The model: the build is green (HEARTBEAT_OK), the disk is full, and
/// anything else gets an echo.
fn model() -> Script {
    Script::new().responder(|view| {
        let prompt = view
            .messages
            .iter()
            .rfind(|m| m.role == "user" && m.tool_results.is_empty())
            .map(|m| m.text.clone())
            .unwrap_or_default();
        if prompt.contains("Check the build") {
            return Reply::text("  HEARTBEAT_OK.\n");
        }
        if prompt.contains("Check the disk") {
            return Reply::text("The disk is 95% full; clean /var/log.");
        }
        if prompt.contains("nap") {
            let asked = view
                .messages
                .last()
                .is_some_and(|m| m.role == "user" && m.tool_results.is_empty());
            if asked {
                return Reply::tool("terminal", serde_json::json!({"command": "sleep 2"}));
            }
            return Reply::text("napped");
        }
        Reply::text(format!("echo: {prompt}"))
    })
}

impl Clocked {
    /// A session in the work directory with one turn; its id.
    async fn session(&self, prompt: &str) -> String {
        let (output, events) = self.h.run_json(Wire::OpenAi, &[], prompt).await;
        assert!(output.status.success(), "{}", stderr(&output));
        last(&events)["session_id"].as_str().unwrap().to_owned()
    }

    fn heartbeat_md(&self, text: &str) {
        std::fs::write(self.h.work.path().join("HEARTBEAT.md"), text).unwrap();
    }

    async fn status(&self) -> Vec<Value> {
        self.json(&["heartbeat", "status", "--json"])
            .await
            .as_array()
            .unwrap()
            .clone()
    }

    /// The requests whose last message is `text` (the wakes that sent it).
    fn wakes_with(&self, text: &str) -> Vec<RecordedRequest> {
        self.h
            .server
            .requests()
            .into_iter()
            .filter(|r| last_text(&r.body) == text)
            .collect()
    }
}

/// The text of a request body's last message.
fn last_text(body: &Value) -> String {
    let content = &body["messages"].as_array().unwrap().last().unwrap()["content"];
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Waits until `check` holds of the heartbeat status.
async fn until_status(b: &Clocked, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let t0 = Instant::now();
    loop {
        let status = b.status().await;
        if let Some(hb) = status.first()
            && check(hb)
        {
            return hb.clone();
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{what}: {status:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wake_is_one_new_turn_at_the_end_and_heartbeat_ok_stays_quiet() {
    let b = Clocked::new(model()).await;
    let id = b.session("hello heartbeat").await;
    b.heartbeat_md(&format!("\n{CHECK_BUILD}\n\n"));
    let on = b
        .json(&["heartbeat", "on", "--every", "30m", "--tz", "UTC", "--json"])
        .await;
    assert_eq!(on["session_id"], id.as_str(), "the latest session here");
    assert_eq!(on["next_due_at"], T0 + EVERY);

    let mut daemon = b.daemon();
    daemon.said("running scheduled jobs", &[]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(b.wakes_with(CHECK_BUILD).is_empty(), "not due yet");

    // Three intervals pass at once: one wake for all of them.
    b.set_clock(T0 + 3 * EVERY + 5 * MINUTE);
    let line = daemon
        .said(&format!("heartbeat {id}: ok"), &["failed", "alert"])
        .await;
    assert!(
        !line.contains("HEARTBEAT_OK"),
        "the reply is not shown: {line}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let wakes = b.wakes_with(CHECK_BUILD);
    assert_eq!(wakes.len(), 1, "missed ticks coalesce into one wake");
    assert!(
        daemon.drain().iter().all(|l| !l.contains("heartbeat")),
        "one wake only"
    );

    // Cache-safe: the wake is the previous request plus its reply and the
    // new user turn; nothing earlier changed.
    let all = b.h.requests_of("hello heartbeat");
    assert_eq!(all.len(), 2, "{all:?}");
    let before = all[0].body["messages"].as_array().unwrap();
    let wake = all[1].body["messages"].as_array().unwrap();
    assert_eq!(wake.len(), before.len() + 2);
    assert_eq!(&wake[..before.len()], &before[..]);
    assert_eq!(wake[before.len()]["role"], "assistant");
    assert_eq!(wake.last().unwrap()["role"], "user");
    assert_eq!(last_text(&all[1].body), CHECK_BUILD);

    let hb = &b.status().await[0];
    assert_eq!(hb["last_outcome"], "ok");
    assert_eq!(hb["last_reply"], Value::Null, "HEARTBEAT_OK is not kept");
    assert_eq!(hb["wakes"], 1);
    assert_eq!(hb["next_due_at"], T0 + 4 * EVERY);

    // A reply that needs attention is recorded and shown.
    b.heartbeat_md(CHECK_DISK);
    b.set_clock(T0 + 4 * EVERY);
    let line = daemon
        .said(&format!("heartbeat {id}: alert"), &["failed"])
        .await;
    assert!(line.contains("The disk is 95% full"), "{line}");
    let hb = until_status(&b, "the alert recorded", |hb| hb["wakes"] == 2).await;
    assert_eq!(hb["last_outcome"], "alert");
    assert!(
        hb["last_reply"].as_str().unwrap().contains("95% full"),
        "{hb}"
    );
    let all = b.h.requests_of("hello heartbeat");
    assert_eq!(all.len(), 3);
    let before = all[1].body["messages"].as_array().unwrap();
    let wake = all[2].body["messages"].as_array().unwrap();
    assert_eq!(&wake[..before.len()], &before[..], "still cache-safe");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_or_missing_heartbeat_md_skips_the_wake_without_a_request() {
    let b = Clocked::new(model()).await;
    let id = b.session("hello empty").await;
    b.heartbeat_md("  \n\n");
    b.json(&[
        "heartbeat",
        "on",
        "--every",
        "30m",
        "--tz",
        "UTC",
        &id,
        "--json",
    ])
    .await;
    let mut daemon = b.daemon();
    daemon.said("running scheduled jobs", &[]).await;

    b.set_clock(T0 + EVERY);
    daemon
        .said(&format!("heartbeat {id}: skipped"), &["ok", "alert"])
        .await;
    std::fs::remove_file(b.h.work.path().join("HEARTBEAT.md")).unwrap();
    b.set_clock(T0 + 2 * EVERY);
    daemon
        .said(&format!("heartbeat {id}: skipped"), &["ok", "alert"])
        .await;
    let hb = until_status(&b, "two skips", |hb| hb["wakes"] == 2).await;
    assert_eq!(hb["last_outcome"], "skipped");
    assert!(
        hb["last_reply"].as_str().unwrap().contains("HEARTBEAT.md"),
        "{hb}"
    );
    assert_eq!(
        b.h.requests_of("hello empty").len(),
        1,
        "no model request for a skipped wake"
    );

    // $HERALD_HOME/HEARTBEAT.md stands in for a project without one.
    std::fs::write(b.h.home.path().join("HEARTBEAT.md"), CHECK_BUILD).unwrap();
    b.set_clock(T0 + 3 * EVERY);
    daemon
        .said(&format!("heartbeat {id}: ok"), &["failed", "alert"])
        .await;
    assert_eq!(b.wakes_with(CHECK_BUILD).len(), 1);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn outside_its_active_hours_a_session_is_not_woken() {
    let b = Clocked::new(model()).await;
    let id = b.session("hello hours").await;
    b.heartbeat_md(CHECK_BUILD);
    b.json(&[
        "heartbeat",
        "on",
        "--every",
        "30m",
        "--active-hours",
        "09:00-10:00",
        "--tz",
        "UTC",
        "--json",
    ])
    .await;
    let mut daemon = b.daemon();
    daemon.said("running scheduled jobs", &[]).await;

    // 08:30 UTC: due, but before 09:00.
    b.set_clock(T0 + EVERY);
    let hb = until_status(&b, "the tick passed over", |hb| {
        hb["next_due_at"] == T0 + 2 * EVERY
    })
    .await;
    assert_eq!(hb["wakes"], 0);
    assert_eq!(hb["last_outcome"], Value::Null);
    assert!(b.wakes_with(CHECK_BUILD).is_empty());
    assert!(daemon.drain().iter().all(|l| !l.contains("heartbeat")));

    // 09:01 UTC: inside.
    b.set_clock(T0 + 2 * EVERY + MINUTE);
    daemon
        .said(&format!("heartbeat {id}: ok"), &["failed", "alert"])
        .await;
    assert_eq!(b.wakes_with(CHECK_BUILD).len(), 1);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_daemon_does_not_wake_a_session_another_process_holds() {
    let b = Clocked::new(model()).await;
    let id = b.session("hello held").await;
    b.heartbeat_md(CHECK_BUILD);
    b.json(&["heartbeat", "on", "--every", "30m", "--tz", "UTC", "--json"])
        .await;

    // The line loop holds the session while its stdin is open.
    let mut cmd = b.command();
    cmd.args(["--resume", &id]).stdin(Stdio::piped());
    let mut holder = Logged::spawn(cmd);
    let stdin = holder.child.stdin.take().unwrap();
    holder.said("herald ", &[]).await;
    let pid = holder.child.id().unwrap();

    b.set_clock(T0 + EVERY);
    let mut daemon = b.daemon();
    daemon
        .said(
            &format!("heartbeat {id}: held by process {pid}"),
            &["ok", "alert"],
        )
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(b.wakes_with(CHECK_BUILD).is_empty(), "not woken while held");
    assert_eq!(b.status().await[0]["wakes"], 0);

    // Once the holder is gone the missed tick is made up.
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(20), holder.child.wait())
        .await
        .unwrap()
        .unwrap();
    daemon
        .said(&format!("heartbeat {id}: ok"), &["failed", "alert"])
        .await;
    assert_eq!(b.wakes_with(CHECK_BUILD).len(), 1);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_heartbeat_settings_exit_2_and_store_nothing() {
    let b = Clocked::new(model()).await;
    let output = b.herald(&["heartbeat", "on", "--every", "30m"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no session in"),
        "{}",
        stderr(&output)
    );

    let id = b.session("hello bad").await;
    let cases: &[(&[&str], &str)] = &[
        (&["--every", "30s"], "shortest heartbeat is one minute"),
        (&["--every", "soon"], "not a duration"),
        (&["--every", "0m"], "not a duration"),
        (
            &["--every", "30m", "--active-hours", "8am-10pm"],
            "08:00-22:00",
        ),
        (
            &["--every", "30m", "--active-hours", "08:00-08:00"],
            "08:00-22:00",
        ),
        (
            &["--every", "30m", "--active-hours", "25:00-26:00"],
            "08:00-22:00",
        ),
        (
            &["--every", "30m", "--tz", "Mars/Olympus"],
            "not a time zone",
        ),
        (&["--every", "30m", "ses_nope"], "no session 'ses_nope'"),
    ];
    for (args, says) in cases {
        let mut all = vec!["heartbeat", "on"];
        all.extend_from_slice(args);
        let output = b.herald(&all).await;
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(says),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(b.status().await.is_empty(), "{args:?} stored nothing");
    }

    let output = b.herald(&["heartbeat", "off", &id]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("has no heartbeat"),
        "{}",
        stderr(&output)
    );

    // A good one, then `off` takes it away.
    b.json(&["heartbeat", "on", "--every", "1h", "--tz", "UTC", "--json"])
        .await;
    assert_eq!(b.status().await.len(), 1);
    let bad = b
        .herald(&["heartbeat", "on", "--every", "1s", "--tz", "UTC"])
        .await;
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(
        b.status().await[0]["every_ms"],
        3_600_000,
        "a bad change leaves the heartbeat as it was"
    );
    let text = b.herald(&["heartbeat", "status"]).await;
    assert!(
        String::from_utf8_lossy(&text.stdout).contains(&format!("{id}  every 1h")),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    b.json(&["heartbeat", "off", "--json"]).await;
    assert!(b.status().await.is_empty());
}

/// `herald --resume ID` in a pseudo-terminal, reading the test's clock.
fn tui(b: &Clocked, id: &str) -> herald_testkit::pty::PtySession {
    tui_with(b, &["--resume", id])
}

/// `herald ARGS` in a pseudo-terminal, reading the test's clock.
fn tui_with(b: &Clocked, args: &[&str]) -> herald_testkit::pty::PtySession {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_herald"));
    for (key, _) in std::env::vars() {
        if key.starts_with("OPENAI_") || key.starts_with("ANTHROPIC_") || key.starts_with("HERALD_")
        {
            command.env_remove(key);
        }
    }
    command
        .env("HERALD_HOME", b.h.home.path())
        .envs(b.h.server.provider_env(herald_testkit::Api::OpenAi))
        .env("HERALD_CLOCK_FILE", &b.clock)
        .arg("--cwd")
        .arg(b.h.work.path())
        .args(args);
    herald_testkit::pty::PtySession::spawn(command, 30, 100).unwrap()
}

fn wait_for(pty: &herald_testkit::pty::PtySession, what: &str) -> String {
    pty.wait_for(|screen| screen.contains(what), Duration::from_secs(20))
        .unwrap_or_else(|err| panic!("waiting for {what:?}: {err}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_wakes_its_idle_session_and_a_person_typing_wins() {
    let b = Clocked::new(model()).await;
    let id = b.session("hello tui").await;
    b.heartbeat_md(CHECK_DISK);
    b.json(&["heartbeat", "on", "--every", "30m", "--tz", "UTC", "--json"])
        .await;
    let pty = tui(&b, &id);
    wait_for(&pty, "Ask herald");

    // Something typed in the composer: the due tick waits.
    pty.send_str("draft");
    wait_for(&pty, "draft");
    b.set_clock(T0 + EVERY);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(b.wakes_with(CHECK_DISK).is_empty(), "a person typing wins");
    assert_eq!(b.status().await[0]["wakes"], 0);

    // The composer empties: the session wakes, and the reply shows.
    pty.send(&[0x7f; 5]);
    wait_for(&pty, "The disk is 95% full");
    let hb = until_status(&b, "the wake recorded", |hb| hb["wakes"] == 1).await;
    assert_eq!(hb["last_outcome"], "alert");
    assert_eq!(hb["next_due_at"], T0 + 2 * EVERY);
    assert_eq!(b.wakes_with(CHECK_DISK).len(), 1);
    let all = b.h.requests_of("hello tui");
    assert_eq!(all.len(), 2, "one request for the wake");
    let before = all[0].body["messages"].as_array().unwrap();
    let wake = all[1].body["messages"].as_array().unwrap();
    assert_eq!(&wake[..before.len()], &before[..], "cache-safe");
    assert!(
        !pty.scrollback_and_screen().contains(CHECK_DISK),
        "the wake's prompt is not shown as a turn of the person's"
    );

    // HEARTBEAT_OK: recorded, not shown.
    b.heartbeat_md(CHECK_BUILD);
    b.set_clock(T0 + 2 * EVERY);
    let hb = until_status(&b, "the ok recorded", |hb| hb["wakes"] == 2).await;
    assert_eq!(hb["last_outcome"], "ok");
    assert_eq!(b.wakes_with(CHECK_BUILD).len(), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !pty.scrollback_and_screen().contains("HEARTBEAT_OK"),
        "{}",
        pty.scrollback_and_screen()
    );

    // /heartbeat: a bad interval changes nothing; off removes it.
    pty.send_str("/heartbeat on 10s\r");
    wait_for(&pty, "shortest heartbeat is one minute");
    assert_eq!(b.status().await[0]["every_ms"], EVERY);
    pty.send_str("/heartbeat off\r");
    wait_for(&pty, "heartbeat off");
    assert!(b.status().await.is_empty());
    pty.send_str("/heartbeat on 45m\r");
    wait_for(&pty, "heartbeat on: every 45m");
    assert_eq!(b.status().await[0]["every_ms"], 45 * MINUTE);
}

#[tokio::test(flavor = "multi_thread")]
async fn in_the_tui_a_running_turn_wins_and_missed_ticks_make_one_wake() {
    let b = Clocked::new(model()).await;
    let id = b.session("hello busy").await;
    b.heartbeat_md(CHECK_BUILD);
    b.json(&["heartbeat", "on", "--every", "30m", "--tz", "UTC", "--json"])
        .await;
    let pty = tui(&b, &id);
    wait_for(&pty, "Ask herald");

    pty.send_str("take a nap\r");
    // The person's turn is running (its command sleeps 2 s) when three
    // ticks come due at once.
    tokio::time::timeout(Duration::from_secs(20), async {
        while b.h.requests_of("hello busy").len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the person's turn starts");
    b.set_clock(T0 + 3 * EVERY + MINUTE);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(b.wakes_with(CHECK_BUILD).is_empty(), "a running turn wins");

    wait_for(&pty, "napped");
    let hb = until_status(&b, "one wake after the turn", |hb| hb["wakes"] == 1).await;
    assert_eq!(hb["last_outcome"], "ok");
    assert_eq!(
        hb["next_due_at"],
        T0 + 4 * EVERY,
        "the missed ticks coalesced"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(b.wakes_with(CHECK_BUILD).len(), 1);
    // The wake came after the turn: its request holds the whole turn.
    let all = b.h.requests_of("hello busy");
    let wake = all.last().unwrap();
    assert_eq!(last_text(&wake.body), CHECK_BUILD);
    let before = all[all.len() - 2].body["messages"].as_array().unwrap();
    let messages = wake.body["messages"].as_array().unwrap();
    assert_eq!(&messages[..before.len()], &before[..], "cache-safe");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_daemon_wake_is_one_request_even_when_a_memory_flush_is_due() {
    let b = Clocked::new(model()).await;
    // Every user turn makes the session owe its end-of-session flush.
    b.h.config("[memory]\nflush_min_turns = 1\n");
    let id = b.session("hello flush").await;
    b.heartbeat_md(CHECK_BUILD);
    b.json(&["heartbeat", "on", "--every", "30m", "--tz", "UTC", "--json"])
        .await;
    let before = b.h.requests_of("hello flush").len();
    assert!(before >= 2, "the run flushed its memory at its end");
    let mut daemon = b.daemon();
    daemon.said("running scheduled jobs", &[]).await;
    b.set_clock(T0 + EVERY);
    daemon
        .said(&format!("heartbeat {id}: ok"), &["failed", "alert"])
        .await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let after = b.h.requests_of("hello flush");
    assert_eq!(after.len(), before + 1, "the wake only, no flush after it");
    assert_eq!(last_text(&after.last().unwrap().body), CHECK_BUILD);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_heartbeat_in_a_new_tui_session_sets_shows_and_refuses_nonsense() {
    let b = Clocked::new(model()).await;
    let pty = tui_with(&b, &[]);
    wait_for(&pty, "Ask herald");
    pty.send_str("/heartbeat\r");
    wait_for(&pty, "no heartbeat; /heartbeat on 30m");
    pty.send_str("/heartbeat sometimes\r");
    wait_for(&pty, "/heartbeat takes `on EVERY`");
    assert!(b.status().await.is_empty(), "nothing stored");
    pty.send_str("/heartbeat on 30m\r");
    wait_for(&pty, "heartbeat on: every 30m");
    let status = b.status().await;
    assert_eq!(status.len(), 1);
    assert_eq!(status[0]["next_due_at"], T0 + EVERY);
    pty.send_str("/heartbeat\r");
    wait_for(&pty, "heartbeat every 30 min; last: no wake yet");
}
