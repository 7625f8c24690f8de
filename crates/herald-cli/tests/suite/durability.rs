//! Crash boundaries: what survives `kill -9`, a second process, and stop
//! signals. Every test drives the real binary against the scripted server;
//! the testkit checks tool pairing and prefix stability on every request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Harness, Wire, assert_gone, last, of_type, sleeper_command, stderr};
use herald_testkit::{
    Api, RecordedRequest, Reply, RequestView, Script, ScriptedCall, is_gone, wait_until,
};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

/// A `herald run --json` started with extra arguments, read line by line.
struct Live {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    seen: Vec<Value>,
}

impl Live {
    async fn start(h: &Harness, args: &[&str], prompt: &str) -> Self {
        let mut cmd = h.command(Wire::OpenAi);
        cmd.args(["run", "--json"])
            .args(args)
            .arg(prompt)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        Self {
            child,
            lines: tokio::io::BufReader::new(stdout).lines(),
            seen: Vec::new(),
        }
    }

    /// Reads events until `pred` holds for one (at most 30 s).
    async fn until(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let read = async {
            while let Some(line) = self.lines.next_line().await.unwrap() {
                let event: Value = serde_json::from_str(&line).unwrap();
                self.seen.push(event.clone());
                if pred(&event) {
                    return event;
                }
            }
            panic!("herald ended before {what}: {:#?}", self.seen);
        };
        tokio::time::timeout(Duration::from_secs(30), read)
            .await
            .unwrap_or_else(|_| panic!("no {what} within 30 s"))
    }

    fn session(&self) -> String {
        self.seen[0]["session_id"].as_str().unwrap().to_owned()
    }

    fn pid(&self) -> i32 {
        self.child.id().unwrap() as i32
    }

    async fn kill_9(mut self) {
        let pid = self.pid();
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
        assert_gone(&[pid], "the killed herald").await;
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), signal).unwrap();
    }

    /// Waits for the exit (at most 30 s): status, all events, stderr.
    async fn finish(mut self) -> (std::process::ExitStatus, Vec<Value>, String) {
        let pid = self.pid();
        let mut err = self.child.stderr.take().unwrap();
        let rest = async {
            while let Some(line) = self.lines.next_line().await.unwrap() {
                self.seen.push(serde_json::from_str(&line).unwrap());
            }
            let mut text = String::new();
            tokio::io::AsyncReadExt::read_to_string(&mut err, &mut text)
                .await
                .unwrap();
            (self.child.wait().await.unwrap(), text)
        };
        let (status, text) = tokio::time::timeout(Duration::from_secs(30), rest)
            .await
            .unwrap_or_else(|_| panic!("herald (pid {pid}) did not exit within 30 s"));
        assert_gone(&[pid], "the herald process").await;
        (status, self.seen, text)
    }
}

fn is_type(ty: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == ty
}

/// Every tool result (call id, text) in a request.
fn results_in(request: &RecordedRequest) -> Vec<(String, String)> {
    let view = RequestView::from_body(request.api, &request.body).unwrap();
    view.messages
        .iter()
        .flat_map(|m| m.tool_results.iter().cloned())
        .collect()
}

async fn resume(h: &Harness, session: &str, prompt: &str) -> (std::process::Output, Vec<Value>) {
    h.run_json(Wire::OpenAi, &["--resume", session], prompt)
        .await
}

async fn agents(h: &Harness) -> Vec<Value> {
    let output = h
        .command(Wire::OpenAi)
        .args(["agents", "list", "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn agent_with_goal<'a>(agents: &'a [Value], goal: &str) -> &'a Value {
    agents
        .iter()
        .find(|a| a["goal"].as_str().unwrap().contains(goal))
        .unwrap_or_else(|| panic!("no agent with goal {goal}: {agents:#?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_background_result_that_arrives_during_a_long_tool_survives_kill_9() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "parent durable",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "quick child: report"}),
                    ),
                    Reply::tool("terminal", json!({"command": sleeper_command("p.pids")})),
                    Reply::text("parent saw the child"),
                ],
            )
            .conversation("quick child", vec![Reply::text("child result 7")]),
    )
    .await;
    let mut run = Live::start(&h, &[], "parent durable").await;
    run.until("the child's completion", is_type("subagent.completed"))
        .await;
    let session = run.session();
    let pids = h.sleeper_pids("p.pids").await;
    run.kill_9().await;
    // The result is in no stored message yet, so it is not delivered.
    let child = agents(&h).await[0].clone();
    assert_eq!(child["status"], "completed", "{child}");
    assert_eq!(child["delivered"], false, "{child}");

    let (output, events) = resume(&h, &session, "carry on").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "parent saw the child");
    let requests = h.requests_of("parent durable");
    let view = RequestView::from_body(Api::OpenAi, &requests.last().unwrap().body).unwrap();
    let tail = view.messages.last().unwrap();
    assert!(
        tail.text.contains("carry on") && tail.text.contains("child result 7"),
        "{}",
        tail.text
    );
    assert_eq!(agents(&h).await[0]["delivered"], true);
    // The dead run's foreground command was ended by the resume.
    assert_gone(&pids, "the killed run's command").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_synchronous_batch_keeps_finished_children_across_kill_9() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "batch durable",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"tasks": [
                            {"goal": "fast child: answer"},
                            {"goal": "slow child: wait"}
                        ]}),
                    ),
                    Reply::text("done after the crash"),
                ],
            )
            .conversation("fast child", vec![Reply::text("fast result 11")])
            .conversation(
                "slow child",
                vec![
                    Reply::tool("terminal", json!({"command": sleeper_command("slow.pids")})),
                    Reply::text("never"),
                ],
            ),
    )
    .await;
    let mut run = Live::start(&h, &[], "batch durable").await;
    run.until("the fast child's completion", |e| {
        e["type"] == "subagent.completed" && e["summary"] == "fast result 11"
    })
    .await;
    let session = run.session();
    let pids = h.sleeper_pids("slow.pids").await;
    run.kill_9().await;

    let (output, _) = resume(&h, &session, "carry on").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.requests_of("batch durable");
    let results = results_in(requests.last().unwrap());
    assert_eq!(results.len(), 1, "{results:?}");
    let rebuilt: Value = serde_json::from_str(&results[0].1).unwrap();
    let children = rebuilt["results"].as_array().unwrap();
    assert_eq!(children.len(), 2, "{rebuilt}");
    let fast = children
        .iter()
        .find(|c| c["status"] == "completed")
        .unwrap();
    assert_eq!(fast["summary"], "fast result 11");
    let slow = children
        .iter()
        .find(|c| c["status"] != "completed")
        .unwrap();
    assert_eq!(slow["status"], "interrupted", "{rebuilt}");
    let journal = agents(&h).await;
    assert_eq!(
        agent_with_goal(&journal, "slow child")["status"],
        "interrupted"
    );
    assert_gone(&pids, "the slow child's command").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_background_agent_below_a_dead_synchronous_one_restarts_and_reports_to_the_root() {
    // root → synchronous orchestrator → a background and a synchronous
    // grandchild, each running a command when herald is killed.
    let h = Harness::new(
        Script::new()
            .conversation(
                "orchestrator: split",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "bg grandchild: sleep"}),
                    ),
                    Reply::tool("delegate_task", json!({"goal": "sync grandchild: sleep"})),
                    Reply::text("never"),
                ],
            )
            .conversation(
                "bg grandchild",
                vec![
                    Reply::tool("terminal", json!({"command": sleeper_command("bg.pids")})),
                    Reply::tool("terminal", json!({"command": sleeper_command("bg2.pids")})),
                    Reply::text("grandchild result 42"),
                ],
            )
            .conversation(
                "sync grandchild",
                vec![
                    Reply::tool("terminal", json!({"command": sleeper_command("sync.pids")})),
                    Reply::text("never"),
                ],
            )
            // The root: it delegates, then answers whatever it is given;
            // the grandchild's result, once it arrives, by name.
            .responder(|view| {
                if view.turn == 0 {
                    return Reply::tool(
                        "delegate_task",
                        json!({"goal": "orchestrator: split the work", "role": "orchestrator"}),
                    );
                }
                let tail = view.messages.last().map_or("", |m| m.text.as_str());
                Reply::text(if tail.contains("grandchild result 42") {
                    "root saw the grandchild"
                } else {
                    "tree recovered"
                })
            }),
    )
    .await;
    h.config("[delegation]\nmax_spawn_depth = 2\n");
    let mut run = Live::start(&h, &[], "deep tree").await;
    let mut pids = h.sleeper_pids("bg.pids").await;
    pids.extend(h.sleeper_pids("sync.pids").await);
    run.until("session.started", is_type("session.started"))
        .await;
    let session = run.session();
    run.kill_9().await;
    // No process runs them: nothing is listed as running.
    let before = agents(&h).await;
    assert_eq!(before.len(), 3, "{before:#?}");
    assert!(
        before.iter().all(|a| a["status"] != "running"),
        "{before:#?}"
    );
    assert_eq!(
        agent_with_goal(&before, "bg grandchild")["status"],
        "suspended"
    );

    // The first resume: the orchestrator and the synchronous grandchild
    // cannot run again (their callers' turns are gone); the background
    // grandchild restarts under the root, the nearest live ancestor. It is
    // killed again while the restarted grandchild runs its next command.
    let mut run = Live::start(&h, &["--resume", &session], "carry on").await;
    let started = run
        .until("the grandchild's restart", |e| {
            e["type"] == "subagent.started"
                && e["goal"].as_str().unwrap_or("").contains("bg grandchild")
        })
        .await;
    assert_eq!(started["parent_id"], "root", "{started}");
    assert_eq!(started["depth"], 2, "it keeps its depth: {started}");
    let second = h.sleeper_pids("bg2.pids").await;
    assert_gone(&pids, "the first run's commands").await;
    run.kill_9().await;
    let middle = agents(&h).await;
    for goal in ["orchestrator", "sync grandchild"] {
        assert_eq!(
            agent_with_goal(&middle, goal)["status"],
            "interrupted",
            "{middle:#?}"
        );
    }
    let adopted = agent_with_goal(&middle, "bg grandchild");
    assert_eq!(adopted["status"], "suspended", "{adopted}");
    assert_eq!(
        adopted["parent_agent_id"], "root",
        "journaled as the root's: {adopted}"
    );

    // The second resume restarts it like any background child of the root;
    // it finishes and its result reaches the root's conversation.
    let (output, events) = resume(&h, &session, "carry on again").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "root saw the grandchild");
    assert_gone(&second, "the restarted grandchild's command").await;
    let after = agents(&h).await;
    let grandchild = agent_with_goal(&after, "bg grandchild");
    assert_eq!(grandchild["status"], "completed", "{grandchild}");
    assert_eq!(grandchild["result"], "grandchild result 42");
    assert_eq!(grandchild["delivered"], true, "{grandchild}");
    for goal in ["orchestrator", "sync grandchild"] {
        assert_eq!(
            agent_with_goal(&after, goal)["status"],
            "interrupted",
            "{after:#?}"
        );
    }
    assert!(after.iter().all(|a| !matches!(
        a["status"].as_str(),
        Some("running" | "queued" | "suspended")
    )));
    // The root's rebuilt call says where the grandchild went.
    let requests = h.requests_of("deep tree");
    let results = results_in(requests.last().unwrap());
    assert!(
        results[0]
            .1
            .contains("any background agents it had started restart and report to you"),
        "{}",
        results[0].1
    );
    // And the stored rows agree once no process owns the session.
    let stored = agents(&h).await;
    assert_eq!(stored, after);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_process_is_refused_or_waits_for_the_session() {
    let h = Harness::new(Script::new().conversation(
        "leased session",
        vec![
            Reply::tool("terminal", json!({"command": "sleep 2"})),
            Reply::text("first done"),
            Reply::text("second done"),
        ],
    ))
    .await;
    let mut run = Live::start(&h, &[], "leased session").await;
    run.until("the tool start", is_type("tool.started")).await;
    let session = run.session();
    let owner = run.pid();
    let before = h.server.request_count();
    let (output, _) = resume(&h, &session, "me too").await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(&session) && err.contains(&format!("herald process {owner}")),
        "{err}"
    );
    assert!(err.contains("--wait"), "{err}");
    assert_eq!(
        h.server.request_count(),
        before,
        "the refused run sent requests"
    );

    // --wait waits for the owner to finish, then continues the session.
    let t0 = Instant::now();
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--resume", &session, "--wait"], "me too")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("waiting for herald process {owner}")),
        "{}",
        stderr(&output)
    );
    assert_eq!(last(&events)["final_response"], "second done");
    let (status, first_events, _) = run.finish().await;
    assert!(status.success());
    assert_eq!(last(&first_events)["final_response"], "first done");
    assert!(t0.elapsed() < Duration::from_secs(20));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_owner_loses_the_lease_at_once() {
    let h = Harness::new(Script::new().conversation(
        "owner dies",
        vec![
            Reply::tool("terminal", json!({"command": sleeper_command("o.pids")})),
            Reply::text("taken over"),
        ],
    ))
    .await;
    let mut run = Live::start(&h, &[], "owner dies").await;
    run.until("the tool start", is_type("tool.started")).await;
    let session = run.session();
    let pids = h.sleeper_pids("o.pids").await;
    run.kill_9().await;
    let t0 = Instant::now();
    let (output, events) = resume(&h, &session, "take over").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "taken over");
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_gone(&pids, "the dead owner's command").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_runs_unrecorded_command_ends_at_the_next_start_of_any_session() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "unrecorded",
                vec![
                    Reply::tool("terminal", json!({"command": sleeper_command("u.pids")})),
                    Reply::text("never"),
                ],
            )
            .conversation("another session", vec![Reply::text("other done")]),
    )
    .await;
    let mut run = Live::start(&h, &[], "unrecorded").await;
    run.until("the tool start", is_type("tool.started")).await;
    let session = run.session();
    let pids = h.sleeper_pids("u.pids").await;
    run.kill_9().await;
    // What `kill -9` an instant after the command started leaves: the
    // command runs and no record in the store names it.
    let db = h.home.path().join("state.db");
    {
        let mut store = herald_store::Store::open(&db).unwrap();
        for process in store
            .orphaned_tool_processes(std::slice::from_ref(&session))
            .unwrap()
        {
            store
                .forget_tool_process(process.pgid, process.owner.pid)
                .unwrap();
        }
        assert!(store.lease_holder(&session).unwrap().is_some());
    }
    assert!(pids.iter().all(|&p| !is_gone(p)), "nothing ended them yet");

    // Another session starts (the killed one is never resumed): its start
    // finds the dead run's processes by their owner mark and ends them.
    let (output, events) = h.run_json(Wire::OpenAi, &[], "another session").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "other done");
    assert_gone(&pids, "the killed run's unrecorded command").await;
    // And forgets the dead run's lease: later starts do not look again.
    let store = herald_store::Store::open(&db).unwrap();
    assert!(store.lease_holder(&session).unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn resuming_a_dangling_call_in_the_middle_is_exact_and_repeatable() {
    let h = Harness::new(Script::new().conversation(
        "imported middle",
        vec![
            Reply::text("unused"),
            Reply::text("unused"),
            Reply::text("first resume answer"),
            Reply::text("second resume answer"),
        ],
    ))
    .await;
    let transcript = h.work_path().join("t.jsonl");
    let lines = [
        json!({"role": "user", "content": "imported middle: look"}),
        json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_mid", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\":\"ls\"}"}}
        ]}),
        json!({"role": "user", "content": "never mind that"}),
        json!({"role": "assistant", "content": "ok"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&transcript, text).unwrap();
    let output = h
        .command(Wire::OpenAi)
        .args(["sessions", "import", transcript.to_str().unwrap(), "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let session = report["session_id"].as_str().unwrap().to_owned();

    let (output, _) = resume(&h, &session, "resume one").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let (output, _) = resume(&h, &session, "resume two").await;
    assert!(output.status.success(), "{}", stderr(&output));

    let requests = h.requests_of("imported middle");
    assert_eq!(requests.len(), 2);
    let first = RequestView::from_body(Api::OpenAi, &requests[0].body).unwrap();
    let second = RequestView::from_body(Api::OpenAi, &requests[1].body).unwrap();
    // The second resume sends the first one's messages unchanged, then the
    // first answer and its own prompt.
    assert_eq!(second.messages.len(), first.messages.len() + 2);
    assert_eq!(
        second.messages[..first.messages.len()],
        first.messages[..],
        "the second resume changed the replayed prefix"
    );
    // The repair sits right after its call, once.
    let roles: Vec<&str> = first
        .messages
        .iter()
        .map(|m| m.role.as_str())
        .filter(|r| *r != "system")
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "user", "assistant", "user"]
    );
    let answered: usize = second
        .messages
        .iter()
        .map(|m| {
            m.tool_results
                .iter()
                .filter(|(id, _)| id == "call_mid")
                .count()
        })
        .sum();
    assert_eq!(answered, 1);
    // The store holds each message once, in replay order.
    let output = h
        .command(Wire::OpenAi)
        .args(["sessions", "export", &session, "--format", "json"])
        .output()
        .await
        .unwrap();
    let exported: Value = serde_json::from_slice(&output.stdout).unwrap();
    let exported: Vec<&Value> = exported["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .collect();
    assert_eq!(exported.len(), 9, "{exported:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_and_sighup_stop_the_run_like_ctrl_c() {
    for (signal, code) in [
        (nix::sys::signal::Signal::SIGTERM, 143),
        (nix::sys::signal::Signal::SIGHUP, 129),
    ] {
        let h = Harness::new(Script::new().conversation(
            "stop me",
            vec![
                Reply::tool("terminal", json!({"command": sleeper_command("s.pids")})),
                Reply::text("resumed after the signal"),
            ],
        ))
        .await;
        let tmp = tempfile::tempdir().unwrap();
        let mut cmd = h.command(Wire::OpenAi);
        cmd.env("TMPDIR", tmp.path())
            .args(["run", "stop me"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = cmd.spawn().unwrap();
        let herald = child.id().unwrap() as i32;
        let pids = h.sleeper_pids("s.pids").await;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(herald), signal).unwrap();
        let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
            .await
            .expect("herald did not stop")
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(code),
            "{signal}: {}",
            stderr(&output)
        );
        let err = stderr(&output);
        assert!(err.contains("interrupted (session ses_"), "{err}");
        assert_gone(&pids, "the command stopped by the signal").await;
        assert_gone(&[herald], "herald").await;
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "{signal} left temp files: {left:?}");
        // The interrupted result was stored: the session resumes cleanly.
        let at = err.find("interrupted (session ").unwrap() + "interrupted (session ".len();
        let session: String = err[at..].chars().take_while(|c| *c != ')').collect();
        let (output, events) = resume(&h, &session, "go on").await;
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(last(&events)["final_response"], "resumed after the signal");
        let results = results_in(h.requests_of("stop me").last().unwrap());
        assert!(results[0].1.contains("interrupted"), "{results:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_signal_exits_at_once_and_kills_the_tools() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "stubborn parent",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "stubborn child: sleep"}),
                    ),
                    Reply::tool(
                        "terminal",
                        json!({"command": format!("trap '' TERM; {}", sleeper_command("a.pids"))}),
                    ),
                    Reply::text("never"),
                ],
            )
            .conversation(
                "stubborn child",
                vec![
                    Reply::tool(
                        "terminal",
                        json!({"command": format!("trap '' TERM; {}", sleeper_command("b.pids"))}),
                    ),
                    Reply::text("never"),
                ],
            ),
    )
    .await;
    let run = Live::start(&h, &[], "stubborn parent").await;
    let mut pids = h.sleeper_pids("a.pids").await;
    pids.extend(h.sleeper_pids("b.pids").await);
    // The commands ignore SIGTERM: the orderly stop would wait a second
    // for each before SIGKILL. The second signal does not wait. One sent
    // before herald has taken the first is lost (a pending signal is not
    // queued twice), so it is sent again until herald is gone.
    let t0 = Instant::now();
    run.signal(nix::sys::signal::Signal::SIGTERM);
    let pid = run.pid();
    wait_until(
        "herald to exit on a second SIGTERM",
        Duration::from_secs(5),
        || {
            if is_gone(pid) {
                return true;
            }
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
            false
        },
    )
    .await;
    let (status, _, _) = run.finish().await;
    assert_eq!(status.code(), Some(143));
    assert!(
        t0.elapsed() < Duration::from_millis(900),
        "the second signal took {:?}",
        t0.elapsed()
    );
    assert_gone(&pids, "tool processes after a second signal").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_results_are_kept_as_each_call_finishes() {
    let h = Harness::new(Script::new().conversation(
        "two step batch",
        vec![
            Reply::tools(vec![
                ScriptedCall::new("terminal", json!({"command": "echo quick-result-42"})),
                ScriptedCall::new("terminal", json!({"command": sleeper_command("k.pids")})),
            ]),
            Reply::text("batch recovered"),
        ],
    ))
    .await;
    let mut run = Live::start(&h, &[], "two step batch").await;
    run.until("the first call's end", is_type("tool.completed"))
        .await;
    let session = run.session();
    let pids = h.sleeper_pids("k.pids").await;
    run.kill_9().await;
    let (output, _) = resume(&h, &session, "carry on").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = results_in(h.requests_of("two step batch").last().unwrap());
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].1.contains("quick-result-42"), "{results:?}");
    assert!(results[1].1.starts_with("interrupted"), "{results:?}");
    assert_gone(&pids, "the batch's second command").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn background_processes_of_a_killed_run_are_stopped_and_listed_with_their_log() {
    let h = Harness::new(
        Script::new().conversation(
            "bg process",
            vec![
                Reply::tool(
                    "terminal",
                    json!({"command": "echo $$ > bg.pid; echo bg-log-line; sleep 1000", "background": true}),
                ),
                Reply::tool("terminal", json!({"command": sleeper_command("fg.pids")})),
                Reply::tool("process", json!({"action": "log", "process_id": "proc_1"})),
                Reply::text("seen"),
            ],
        ),
    )
    .await;
    let run = Live::start(&h, &[], "bg process").await;
    let mut pids = h.sleeper_pids("fg.pids").await;
    let bg_pid: i32 = std::fs::read_to_string(h.work_path().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    pids.push(bg_pid);
    let mut run = run;
    run.until("session start", is_type("session.started")).await;
    let session = run.session();
    run.kill_9().await;
    assert!(!is_gone(bg_pid), "the background process died with herald");
    let (output, _) = resume(&h, &session, "carry on").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_gone(&pids, "the killed run's processes").await;
    let results = results_in(h.requests_of("bg process").last().unwrap());
    let log = &results.last().unwrap().1;
    assert!(
        log.contains("bg-log-line") && log.contains("stopped when this session was resumed"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_busy_in_a_long_tool_call_is_not_idle() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "patient parent",
                vec![
                    Reply::tool("delegate_task", json!({"goal": "busy child: long command"})),
                    Reply::text("parent done"),
                ],
            )
            .conversation(
                "busy child",
                vec![
                    Reply::tool("terminal", json!({"command": "sleep 2.5"})),
                    Reply::text("done after sleeping"),
                ],
            ),
    )
    .await;
    h.config("[delegation]\nchild_timeout_seconds = 1\n");
    let (output, events) = h.run_json(Wire::OpenAi, &[], "patient parent").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let done = of_type(&events, "subagent.completed");
    assert_eq!(done[0]["status"], "completed", "{:?}", done[0]);
    assert_eq!(done[0]["summary"], "done after sleeping");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_never_finds_its_own_or_its_parents_live_session() {
    let h = Harness::new(
        Script::new()
            .conversation("old zebrafish notes", vec![Reply::text("noted zebrafish")])
            .conversation(
                "zebrafish parent",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"goal": "searching child: recall zebrafish"}),
                    ),
                    Reply::text("parent done"),
                ],
            )
            .conversation(
                "searching child",
                vec![
                    Reply::tool("session_search", json!({"query": "zebrafish", "limit": 10})),
                    Reply::text("child done"),
                ],
            ),
    )
    .await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "old zebrafish notes").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let old_session = events[0]["session_id"].as_str().unwrap().to_owned();
    let (output, events) = h.run_json(Wire::OpenAi, &[], "zebrafish parent").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let parent_session = events[0]["session_id"].as_str().unwrap().to_owned();
    let results = results_in(h.requests_of("searching child").last().unwrap());
    let found: Value = serde_json::from_str(&results[0].1).unwrap();
    let ids: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![old_session.as_str()], "{found}");
    assert!(!ids.contains(&parent_session.as_str()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_child_counts_what_it_spent_before_the_crash() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "spending parent",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "spending child: two steps"}),
                    ),
                    Reply::text("waiting"),
                    Reply::text("still waiting"),
                    Reply::text("parent done"),
                ],
            )
            .conversation(
                "spending child",
                vec![
                    Reply::tool("terminal", json!({"command": sleeper_command("c.pids")})),
                    Reply::text("child done"),
                ],
            ),
    )
    .await;
    let mut run = Live::start(&h, &[], "spending parent").await;
    run.until("the child's tool", is_type("subagent.tool"))
        .await;
    let session = run.session();
    h.sleeper_pids("c.pids").await;
    run.kill_9().await;
    let (output, _) = resume(&h, &session, "carry on").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let child = agents(&h).await[0].clone();
    assert_eq!(child["status"], "completed", "{child}");
    let requests = h.requests_of("spending child");
    assert_eq!(requests.len(), 2, "one request before the crash, one after");
    // Both requests count: the journal holds more than the second alone.
    let second = requests[1].body.to_string().len() as u64 / 4;
    let input = child["tokens"]["input"].as_u64().unwrap();
    assert!(
        input > second * 3 / 2,
        "input {input}, second request ~{second}"
    );
    // The journal's own and subtree totals count both runs too.
    assert_eq!(child["usage"]["requests"], 2, "{child}");
    assert_eq!(child["usage"]["input"], child["tokens"]["input"]);
    assert_eq!(child["tree_usage"]["requests"], 2, "{child}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_ends_the_interactive_loop_mid_turn_like_ctrl_c() {
    use tokio::io::AsyncWriteExt;
    let h = Harness::new(Script::new().conversation(
        "interactive work",
        vec![
            Reply::tool("terminal", json!({"command": sleeper_command("i.pids")})),
            Reply::text("resumed fine"),
        ],
    ))
    .await;
    let mut cmd = h.command(Wire::OpenAi);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let herald = child.id().unwrap() as i32;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"interactive work\n").await.unwrap();
    let pids = h.sleeper_pids("i.pids").await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(herald),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the interactive session did not stop")
        .unwrap();
    drop(stdin);
    assert_eq!(output.status.code(), Some(143), "{}", stderr(&output));
    assert_gone(&pids, "the turn's command").await;
    let err = stderr(&output);
    let at = err
        .find("session ses_")
        .unwrap_or_else(|| panic!("no session id in: {err}"))
        + "session ".len();
    let session: String = err[at..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    let (output, events) = resume(&h, &session, "go on").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "resumed fine");
    let results = results_in(h.requests_of("interactive work").last().unwrap());
    assert!(results[0].1.contains("interrupted"), "{results:?}");
}
