//! The kill -9 torture test: a session that delegates (a synchronous batch
//! and a background child), starts a background process, runs a batch of
//! commands and compacts its context is killed at random instants, then
//! resumed (and maybe killed again) until it finishes. After each session
//! nothing may be lost: every call the dead runs had started is stored with
//! exactly one result, every finished child's result reached the parent's
//! stored conversation, no journal entry says running, and no process any
//! run started is left. Bounded to about a minute; the seed is printed so a
//! failure can be replayed with `HERALD_TORTURE_SEED`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Harness, Wire, assert_gone, stderr};
use herald_testkit::{Reply, RequestView, Script, ScriptedCall, is_gone};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

/// Wall-clock budget of the whole test.
const BUDGET: Duration = Duration::from_secs(75);
/// Most sessions tortured.
const MAX_SESSIONS: usize = 20;
/// Most runs (first run plus resumes) one session gets.
const MAX_RUNS: usize = 12;

const SUMMARY: &str = "## Goal\n- torture\n## Constraints\n- none\n## Completed actions\n- steps\n## Current state\n- mid-way\n## Decisions\n- none\n## Files\n- big.txt\n## Remaining work\n- the rest";

/// A small deterministic generator (xorshift), so a seed replays a run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn is_summary_request(view: &RequestView) -> bool {
    view.last()
        .is_some_and(|m| m.text.contains("Request for context compaction"))
}

/// Every command writes its shell's pid to `pids.log`, so the test can check
/// at the end that none is left.
fn cmd(rest: &str) -> String {
    format!("echo $$ >> pids.log; {rest}")
}

/// The model: the root walks through its steps (a step whose reply was lost
/// in a crash is skipped, which is fine: any reply is a valid reply);
/// children answer by their own turn; summary requests get a summary.
fn script(root_requests: Arc<AtomicUsize>) -> Script {
    Script::new().responder(move |view| {
        if is_summary_request(view) {
            return Reply::text(SUMMARY);
        }
        let first = view.conversation.as_str();
        if first.contains("tchild A") || first.contains("tchild B") {
            return match view.turn {
                0 => Reply::tool(
                    "terminal",
                    json!({"command": cmd("sleep 0.3; echo child-work")}),
                ),
                _ => Reply::text(if first.contains("tchild A") {
                    "result of A"
                } else {
                    "result of B"
                }),
            };
        }
        if first.contains("tbg child") {
            return match view.turn {
                0 => Reply::tool("terminal", json!({"command": cmd("sleep 0.5")})),
                _ => Reply::text("result of the background child"),
            };
        }
        match root_requests.fetch_add(1, Ordering::SeqCst) {
            0 => Reply::tool(
                "delegate_task",
                json!({"tasks": [{"goal": "tchild A: work"}, {"goal": "tchild B: work"}]}),
            ),
            1 => Reply::tool(
                "delegate_task",
                json!({"background": true, "goal": "tbg child: work"}),
            ),
            2 => Reply::tool(
                "terminal",
                json!({"command": cmd("echo bg-started; sleep 1000"), "background": true}),
            ),
            3 => Reply::tools(vec![
                ScriptedCall::new("terminal", json!({"command": cmd("echo batch-one")})),
                ScriptedCall::new(
                    "terminal",
                    json!({"command": cmd("sleep 0.4; echo batch-two")}),
                ),
            ]),
            4..=6 => Reply::tool("read_file", json!({"path": "big.txt"})),
            _ => Reply::text("torture done"),
        }
    })
}

/// What one run printed before it ended or was killed.
struct RunLog {
    events: Vec<Value>,
    completed: bool,
}

/// Runs herald (a new session, or `--resume`), killing it after `kill_after`
/// unless it ends first.
async fn run_once(h: &Harness, resume: Option<&str>, kill_after: Option<Duration>) -> RunLog {
    let mut command = h.command(Wire::OpenAi);
    command.args(["run", "--json"]);
    match resume {
        Some(id) => command.args(["--resume", id, "continue"]),
        None => command.arg("torture root: do the steps"),
    };
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let pid = child.id().unwrap() as i32;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events = Vec::new();
    let read = async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(event) = serde_json::from_str::<Value>(&line) {
                events.push(event);
            }
        }
    };
    let limit = kill_after.unwrap_or(Duration::from_secs(60));
    let finished = tokio::time::timeout(limit, read).await.is_ok();
    if !finished {
        child.start_kill().unwrap();
    }
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("herald did not exit")
        .unwrap();
    assert_gone(&[pid], "herald").await;
    // A run killed after it printed its completion was still killed (its
    // exit, which ends its tools and gives up the lease, was cut short): it
    // is resumed like any other.
    let completed = finished
        && events
            .last()
            .is_some_and(|e| e["type"] == "run.completed" && e["status"] == "completed");
    if finished && !completed {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut e, &mut err).await;
        }
        // Timing decides what the runs before this one left in the history,
        // so say what every request held: the seed alone may not replay it.
        eprintln!("{}", request_log(h));
        panic!("a run ended without completing ({status}): {err}\n{events:#?}");
    }
    RunLog { events, completed }
}

/// Every request the server received, one line per message (role, call
/// ids, the start of its text), for the report of a run that failed.
fn request_log(h: &Harness) -> String {
    let start = |text: &str| -> String {
        let line = text.replace('\n', " ");
        match line.char_indices().nth(100) {
            Some((at, _)) => format!("{}...", &line[..at]),
            None => line,
        }
    };
    let mut out = String::new();
    for (i, r) in h.server.requests().iter().enumerate() {
        let Ok(view) = r.view() else {
            out.push_str(&format!("request #{i}: not a valid chat request\n"));
            continue;
        };
        out.push_str(&format!(
            "request #{i} ({:?}, {} messages, answered {}):\n",
            start(&view.conversation),
            view.messages.len(),
            r.status
        ));
        for m in &view.messages {
            let mut label = m.role.clone();
            for (id, name, _) in &m.tool_calls {
                label.push_str(&format!(" call {id} {name}"));
            }
            for (id, _) in &m.tool_results {
                label.push_str(&format!(" result of {id}"));
            }
            let text = m
                .tool_results
                .first()
                .map_or(m.text.as_str(), |(_, content)| content.as_str());
            out.push_str(&format!("  {label}: {}\n", start(text)));
        }
    }
    out
}

/// Checks one finished session for anything lost.
async fn check_session(h: &Harness, session: &str, runs: &[RunLog]) {
    let output = h
        .command(Wire::OpenAi)
        .args(["sessions", "export", session, "--format", "json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let export: Value = serde_json::from_slice(&output.stdout).unwrap();
    let messages = export["messages"].as_array().unwrap();
    let text_of = |m: &Value| m["content"].as_str().unwrap_or_default().to_owned();

    // Every call a run started is stored; in the live conversation (after
    // the last compaction) every call has exactly one result.
    let stored_calls: BTreeSet<String> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    for run in runs {
        for started in run.events.iter().filter(|e| {
            e["type"] == "tool.started" && e["agent_id"] == "root" && e["session_id"] == session
        }) {
            let id = started["call_id"].as_str().unwrap();
            assert!(stored_calls.contains(id), "started call {id} was lost");
        }
    }
    let live_from = messages
        .iter()
        .rposition(|m| m["role"] == "system" && text_of(m).starts_with("[herald:compaction]"))
        .map_or(0, |i| i + 1);
    let live = &messages[live_from..];
    let mut results: HashMap<String, usize> = HashMap::new();
    for m in live.iter().filter(|m| m["role"] == "tool") {
        *results
            .entry(m["tool_call_id"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    for call in live
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
    {
        let id = call["id"].as_str().unwrap();
        assert_eq!(results.get(id), Some(&1), "call {id} in the live history");
    }

    // Every child that finished reached the parent's stored conversation.
    let output = h
        .command(Wire::OpenAi)
        .args(["agents", "list", "--json", "--session", session])
        .output()
        .await
        .unwrap();
    let agents: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let all_text: String = messages.iter().map(text_of).collect::<Vec<_>>().join("\n");
    for agent in &agents {
        let status = agent["status"].as_str().unwrap();
        assert!(
            !matches!(status, "running" | "queued" | "suspended"),
            "agent left {status}: {agent}"
        );
        if status == "completed" {
            let summary = agent["result"].as_str().unwrap();
            assert!(
                all_text.contains(summary),
                "the result of {} ({summary}) never reached the parent",
                agent["id"]
            );
        }
    }
}

/// The session a killed first run stored, if it got that far.
async fn stored_session(h: &Harness) -> Option<String> {
    let output = h
        .command(Wire::OpenAi)
        .args(["sessions", "list", "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let list: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    list.first().map(|s| s["id"].as_str().unwrap().to_owned())
}

/// Every pid any command wrote is gone. Returns how many were still running
/// (then killed, so one escape does not hide the next): none may be, not
/// even a command started an instant before its run was killed, which no
/// store record names yet (its owner mark does).
async fn leftover_processes(h: &Harness) -> usize {
    let Ok(text) = std::fs::read_to_string(h.work_path().join("pids.log")) else {
        return 0;
    };
    let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) && !pids.iter().all(|&p| is_gone(p)) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let alive: Vec<i32> = pids.iter().copied().filter(|&p| !is_gone(p)).collect();
    for &p in &alive {
        println!("torture: escaped {}", describe(p));
    }
    for &p in &alive {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(p),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    if !alive.is_empty() {
        println!("torture: process(es) {alive:?} escaped the reaping");
    }
    alive.len()
}

/// What `/proc` says of `pid`: its command line, state, parent, group and
/// owner mark (for the report of a process that escaped).
fn describe(pid: i32) -> String {
    let read = |what: &str| std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default();
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).replace('\0', " ");
    let stat = text(read("stat"));
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let mark = read("environ")
        .split(|b| *b == 0)
        .find(|e| e.starts_with(herald_sandbox::OWNER_VAR.as_bytes()))
        .map(|e| String::from_utf8_lossy(e).into_owned());
    format!(
        "pid {pid} `{}` state {} ppid {} pgid {} started {} mark {mark:?}",
        text(read("cmdline")).trim(),
        fields.first().unwrap_or(&"?"),
        fields.get(1).unwrap_or(&"?"),
        fields.get(2).unwrap_or(&"?"),
        fields.get(19).unwrap_or(&"?"),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_at_random_instants_loses_nothing() {
    let seed = std::env::var("HERALD_TORTURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    println!("torture seed {seed} (HERALD_TORTURE_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let t0 = Instant::now();
    let mut sessions = 0;
    let mut kills = 0;
    let mut compactions = 0;
    let mut escaped = 0;
    while sessions < MAX_SESSIONS && t0.elapsed() < BUDGET {
        sessions += 1;
        let root_requests = Arc::new(AtomicUsize::new(0));
        let h = Harness::new(script(Arc::clone(&root_requests))).await;
        let big: String = (0..120)
            .map(|i| format!("line {i:03} {}\n", "abcdefghij".repeat(5)))
            .collect();
        std::fs::write(h.work.path().join("big.txt"), big).unwrap();
        // Small enough that the reads compact the context.
        h.config("[compression]\nenabled = true\nthreshold = 0.5\ncontext_window = 16000\n");
        let mut runs = Vec::new();
        let mut session: Option<String> = None;
        loop {
            assert!(runs.len() < MAX_RUNS, "seed {seed}: session never finished");
            // Most runs are killed somewhere in their first 1.6 s (a whole
            // session takes about 1.5 s); the last ones are left to finish.
            let kill_after = (runs.len() + 2 < MAX_RUNS && rng.below(5) > 0)
                .then(|| Duration::from_millis(50 + rng.below(1550)));
            let log = run_once(&h, session.as_deref(), kill_after).await;
            if session.is_none() {
                session = match log.events.first() {
                    Some(e) => Some(e["session_id"].as_str().unwrap().to_owned()),
                    // Killed before its first event reached us (output is
                    // buffered): the session may be stored, and may even have
                    // started tools, so resume it if it exists. A session
                    // that was never stored ran nothing; start again.
                    None => stored_session(&h).await,
                };
                if session.is_none() {
                    continue;
                }
            }
            let completed = log.completed;
            kills += usize::from(!completed);
            compactions += log
                .events
                .iter()
                .filter(|e| e["type"] == "compaction")
                .count();
            runs.push(log);
            if completed {
                break;
            }
        }
        let session = session.unwrap();
        check_session(&h, &session, &runs).await;
        escaped += leftover_processes(&h).await;
        h.server.assert_invariants();
    }
    println!(
        "torture: {sessions} sessions, {kills} kills, {compactions} compactions, {escaped} escaped processes, {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    assert!(kills > 0, "seed {seed}: no run was killed");
    assert!(compactions > 0, "seed {seed}: no session compacted");
    assert_eq!(
        escaped, 0,
        "seed {seed}: {escaped} processes outlived the runs that started them"
    );
}
