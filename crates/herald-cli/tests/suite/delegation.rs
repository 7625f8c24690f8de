//! `delegate_task` and the agent lifecycle tools end to end: the real binary
//! against the scripted server, with every agent's requests checked for tool
//! pairing and prefix stability.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{
    Harness, LiveRun, Wire, assert_gone, dispatched_ids, kill_leftovers, last, of_type,
    parse_events, sleeper_command, stderr,
};
use herald_testkit::{Api, RecordedRequest, Reply, RequestView, Script, ScriptedCall};
use serde_json::{Value, json};

/// Tool names offered in a recorded request (either wire).
fn tool_names(request: &RecordedRequest) -> Vec<String> {
    let view = RequestView::from_body(request.api, &request.body).unwrap();
    view.tool_names
}

/// The text of every tool result in the last request of a conversation.
fn results_in(request: &RecordedRequest) -> Vec<String> {
    let view = RequestView::from_body(request.api, &request.body).unwrap();
    view.messages
        .iter()
        .flat_map(|m| m.tool_results.iter().map(|(_, c)| c.clone()))
        .collect()
}

fn last_result_json(h: &Harness, needle: &str) -> Value {
    let requests = h.requests_of(needle);
    let text = results_in(requests.last().unwrap()).pop().unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

async fn herald_json(h: &Harness, args: &[&str]) -> Value {
    let output = h.command(Wire::OpenAi).args(args).output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn batch_script() -> Script {
    Script::new()
        .conversation(
            "PARENT-SECRET fan out",
            vec![
                Reply::tool("read_file", json!({"path": "shared.txt"})),
                Reply::tool(
                    "delegate_task",
                    json!({"tasks": [
                        {"goal": "child alpha: sleep, then rewrite shared.txt"},
                        {"goal": "child beta: answer at once", "toolsets": ["file"]}
                    ]}),
                ),
                Reply::text("all done"),
            ],
        )
        .conversation(
            "child alpha",
            vec![
                Reply::tool(
                    "terminal",
                    json!({"command": "sleep 1 && echo alpha-slept"}),
                ),
                Reply::tool(
                    "write_file",
                    json!({"path": "shared.txt", "content": "by alpha\n"}),
                ),
                Reply::text("alpha summary"),
            ],
        )
        .conversation("child beta", vec![Reply::text("beta summary")])
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_results_keep_task_order_and_children_are_isolated() {
    let h = Harness::new(batch_script()).await;
    std::fs::write(h.work_path().join("shared.txt"), "original\n").unwrap();
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "PARENT-SECRET fan out the work")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "all done");

    let result = last_result_json(&h, "PARENT-SECRET");
    let results = result["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["task_index"], 0);
    assert_eq!(results[0]["status"], "completed");
    assert_eq!(results[0]["exit_reason"], "completed");
    assert_eq!(results[0]["api_calls"], 3);
    assert_eq!(results[0]["model"], "gpt-4.1-mini");
    assert!(results[0]["tokens"]["input"].as_u64().unwrap() > 0);
    let summary = results[0]["summary"].as_str().unwrap();
    assert!(summary.starts_with("alpha summary"), "{summary}");
    // alpha rewrote a file the parent had read: the note says so.
    assert!(
        summary.contains("changed files you read earlier") && summary.contains("shared.txt"),
        "{summary}"
    );
    let trace = results[0]["tool_trace"].as_array().unwrap();
    assert_eq!(
        trace
            .iter()
            .map(|t| t["tool"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["terminal", "write_file"]
    );
    assert!(
        trace
            .iter()
            .all(|t| t["status"] == "ok" && t["result_bytes"].as_u64().unwrap() > 0)
    );
    assert_eq!(results[1]["task_index"], 1);
    assert_eq!(results[1]["summary"], "beta summary");
    assert_eq!(results[1]["api_calls"], 1);
    assert!(result["total_duration_seconds"].as_f64().unwrap() >= 1.0);

    // beta finished first, alpha second, yet results are in task order.
    let completed = of_type(&events, "subagent.completed");
    assert_eq!(completed.len(), 2);
    assert_eq!(completed[0]["agent_id"], results[1]["agent_id"]);
    assert_eq!(completed[1]["agent_id"], results[0]["agent_id"]);
    let started = of_type(&events, "subagent.started");
    assert_eq!(started.len(), 2);
    assert!(
        started
            .iter()
            .all(|e| e["parent_id"] == "root" && e["depth"] == 1)
    );
    let tools = of_type(&events, "subagent.tool");
    assert!(
        tools
            .iter()
            .any(|e| e["tool"] == "terminal" && e["agent_id"] == results[0]["agent_id"])
    );
    // No child conversation event leaks into the root's stream.
    assert!(
        of_type(&events, "assistant.message")
            .iter()
            .all(|e| e["agent_id"] == "root")
    );

    // Isolation: a child's requests hold nothing of the parent's conversation.
    for needle in ["child alpha", "child beta"] {
        for request in h.requests_of(needle) {
            let body = request.body.to_string();
            assert!(
                !body.contains("PARENT-SECRET"),
                "{needle} saw the parent: {body}"
            );
            let names = tool_names(&request);
            for absent in [
                "delegate_task",
                "agent_wait",
                "memory",
                "clarify",
                "execute_code",
            ] {
                assert!(
                    !names.iter().any(|n| n == absent),
                    "{needle} has {absent}: {names:?}"
                );
            }
        }
    }
    let beta = h.requests_of("child beta");
    assert_eq!(
        tool_names(&beta[0]),
        ["patch", "read_file", "search_files", "write_file"],
        "beta asked for the file toolset only"
    );
    let system = RequestView::from_body(beta[0].api, &beta[0].body)
        .unwrap()
        .system;
    assert!(
        system.contains("child beta: answer at once") && system.contains("summary"),
        "{system}"
    );
    assert!(std::fs::read_to_string(h.work_path().join("shared.txt")).unwrap() == "by alpha\n");

    // Lineage: child sessions point at the root session and are journaled.
    let root_session = last(&events)["session_id"].as_str().unwrap().to_owned();
    let sessions = herald_json(&h, &["sessions", "list", "--all", "--json"]).await;
    let children: Vec<&Value> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["parent_session_id"] == root_session.as_str())
        .collect();
    assert_eq!(children.len(), 2, "{sessions}");
    assert!(
        children
            .iter()
            .all(|s| s["agent_id"].as_str().unwrap().starts_with("ag_"))
    );
    let agents = herald_json(
        &h,
        &["agents", "list", "--json", "--session", &root_session],
    )
    .await;
    let agents = agents.as_array().unwrap();
    assert_eq!(agents.len(), 2);
    assert!(
        agents
            .iter()
            .all(|a| a["status"] == "completed" && a["depth"] == 1)
    );
    let id = results[0]["agent_id"].as_str().unwrap();
    let shown = herald_json(&h, &["agents", "show", id, "--json"]).await;
    assert!(
        shown["result"]
            .as_str()
            .unwrap()
            .starts_with("alpha summary")
    );
    let output = h
        .command(Wire::OpenAi)
        .args(["agents", "show", "ag_nope"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("herald agents list"));
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_single_goal_returns_the_summary() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "delegate one thing",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"goal": "solo child: look around", "context": "ctx-xyz"}),
                    ),
                    Reply::text("ok"),
                ],
            )
            .conversation(
                "solo child",
                vec![
                    Reply::tool("terminal", json!({"command": "echo hi"})),
                    Reply::text("solo summary"),
                ],
            ),
    )
    .await;
    let (output, events) = h.run_json(Wire::Anthropic, &[], "delegate one thing").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["status"], "completed");
    let result = last_result_json(&h, "delegate one thing");
    assert_eq!(result["results"][0]["summary"], "solo summary");
    assert_eq!(result["results"][0]["model"], "claude-sonnet-4-5");
    let child = h.requests_of("solo child");
    let view = RequestView::from_body(Api::Anthropic, &child[0].body).unwrap();
    assert!(view.system.contains("ctx-xyz"), "{}", view.system);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_batches_are_errors_and_start_nothing() {
    let h = Harness::new(Script::new().conversation(
        "try bad batches",
        vec![
            Reply::tool(
                "delegate_task",
                json!({"tasks": [{"goal": "c1"}, {"goal": "c2"}, {"goal": "c3"}, {"goal": "c4"}]}),
            ),
            Reply::tool("delegate_task", json!({"context": "no goal"})),
            Reply::tool(
                "delegate_task",
                json!({"tasks": [{"goal": "c1"}, {"context": "x"}]}),
            ),
            Reply::tool("delegate_task", json!({"tasks": "[{\"goal\": "})),
            Reply::tool(
                "delegate_task",
                json!({"goal": "c1", "toolsets": ["rocketry"]}),
            ),
            Reply::tool(
                "delegate_task",
                json!({"goal": "c1", "allow_tools": ["launch_rocket"]}),
            ),
            Reply::text("gave up"),
        ],
    ))
    .await;
    let (output, _) = h.run_json(Wire::OpenAi, &[], "try bad batches").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.server.requests();
    assert_eq!(requests.len(), 7, "no child may have made a request");
    let results = results_in(requests.last().unwrap());
    let expect = [
        "max_concurrent_children",
        "needs a goal (one task) or tasks (a batch)",
        "task 1 has no goal",
        "not a JSON array",
        "none of the requested toolsets (rocketry)",
        "launch_rocket",
    ];
    for (result, needle) in results.iter().zip(expect) {
        assert!(result.contains(needle), "expected {needle:?} in {result}");
    }
    assert!(results[0].contains("no child was started"));
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn orchestrators_delegate_within_the_depth_limit() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "build a tree",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"tasks": [
                            {"goal": "orch child: split it", "role": "orchestrator"},
                            {"goal": "leaf child: do it", "role": "leaf"}
                        ]}),
                    ),
                    Reply::text("tree done"),
                ],
            )
            .conversation(
                "orch child",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"goal": "grand child: deep work", "role": "orchestrator"}),
                    ),
                    Reply::text("orch summary"),
                ],
            )
            .conversation(
                "leaf child",
                vec![
                    // A leaf does not have the tool; a call gets the unknown-tool error.
                    Reply::tool("delegate_task", json!({"goal": "forbidden grandchild"})),
                    Reply::text("leaf summary"),
                ],
            )
            .conversation("grand child", vec![Reply::text("grand summary")]),
    )
    .await;
    h.config("[delegation]\nmax_spawn_depth = 2\n");
    let (output, events) = h.run_json(Wire::OpenAi, &[], "build a tree").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let orch = h.requests_of("orch child");
    let orch_tools = tool_names(&orch[0]);
    for name in [
        "delegate_task",
        "agent_wait",
        "agent_status",
        "agent_list",
        "agent_cancel",
    ] {
        assert!(
            orch_tools.iter().any(|n| n == name),
            "orchestrator lacks {name}: {orch_tools:?}"
        );
    }
    let system = RequestView::from_body(orch[0].api, &orch[0].body)
        .unwrap()
        .system;
    assert!(
        system.contains("depth 1 of at most 2") && system.contains("cannot delegate further"),
        "{system}"
    );
    for needle in ["leaf child", "grand child"] {
        let names = tool_names(&h.requests_of(needle)[0]);
        assert!(
            !names.iter().any(|n| n == "delegate_task"),
            "{needle}: {names:?}"
        );
    }
    let leaf = h.requests_of("leaf child");
    let refused = results_in(leaf.last().unwrap());
    assert!(
        refused[0].contains("unknown tool 'delegate_task'"),
        "{refused:?}"
    );
    assert!(h.requests_of("forbidden grandchild").is_empty());
    // The grandchild asked to be an orchestrator but the floor made it a leaf.
    let result = last_result_json(&h, "orch child");
    assert_eq!(result["results"][0]["summary"], "grand summary");
    let started = of_type(&events, "subagent.started");
    let grand = started
        .iter()
        .find(|e| e["goal"] == "grand child: deep work")
        .unwrap();
    assert_eq!(grand["depth"], 2);
    let orch_id = started
        .iter()
        .find(|e| e["goal"] == "orch child: split it")
        .unwrap()["agent_id"]
        .clone();
    assert_eq!(grand["parent_id"], orch_id);
    let top = last_result_json(&h, "build a tree");
    assert_eq!(top["results"][0]["summary"], "orch summary");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_that_never_reaches_the_model_times_out() {
    // Accepts connections (kernel backlog) but never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let h = Harness::new(Script::new().conversation(
        "delegate to the void",
        vec![
            Reply::tool(
                "delegate_task",
                json!({"goal": "lost child: never answered"}),
            ),
            Reply::text("noted"),
        ],
    ))
    .await;
    h.config(&format!(
        "[delegation]\nchild_timeout_seconds = 1\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
    ));
    let t0 = Instant::now();
    let (output, events) = h.run_json(Wire::OpenAi, &[], "delegate to the void").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    let result = last_result_json(&h, "delegate to the void");
    let child = &result["results"][0];
    assert_eq!(child["status"], "timeout");
    assert_eq!(child["exit_reason"], "timeout");
    let error = child["error"].as_str().unwrap();
    assert!(
        error.contains("never reached the model") && error.contains("child_timeout_seconds"),
        "{error}"
    );
    assert_eq!(
        of_type(&events, "subagent.completed")[0]["status"],
        "timeout"
    );
    h.server.assert_invariants();
    drop(silent);
}

/// The script of the budget tests: a child told to spend at most `budget`.
fn thrifty_script(budget: u64) -> Script {
    Script::new()
        .conversation(
            "spend carefully",
            vec![
                Reply::tool(
                    "delegate_task",
                    json!({"goal": "thrifty child: explore", "budget_tokens": budget}),
                ),
                Reply::text("fine"),
            ],
        )
        .conversation(
            "thrifty child",
            vec![
                Reply::ToolCalls {
                    text: "partial findings".into(),
                    calls: vec![ScriptedCall::new(
                        "terminal",
                        json!({"command": "echo one"}),
                    )],
                },
                Reply::tool("terminal", json!({"command": "echo two"})),
                Reply::text("never reached"),
            ],
        )
}

#[tokio::test(flavor = "multi_thread")]
async fn budget_stops_children_with_what_they_have() {
    // The size of the child's first request, measured without a cap.
    let probe = Harness::new(thrifty_script(10_000_000)).await;
    let (output, _) = probe.run_json(Wire::OpenAi, &[], "spend carefully").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let first = probe.requests_of("thrifty child")[0].body.to_string().len() as u64 / 4;
    // Room for the first request, not for the first reply plus the second.
    let h = Harness::new(thrifty_script(first * 3 / 2)).await;
    let (output, _) = h.run_json(Wire::OpenAi, &[], "spend carefully").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let child = last_result_json(&h, "spend carefully")["results"][0].clone();
    assert_eq!(child["exit_reason"], "budget", "{child}");
    assert_eq!(child["status"], "completed");
    assert_eq!(child["summary"], "partial findings");
    assert_eq!(child["api_calls"], 1);
    assert!(child["error"].as_str().unwrap().contains("budget"));
    assert_eq!(h.requests_of("thrifty child").len(), 1);
    h.server.assert_invariants();
    probe.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_that_would_pass_the_budget_is_never_sent() {
    let h = Harness::new(thrifty_script(5)).await;
    let (output, _) = h.run_json(Wire::OpenAi, &[], "spend carefully").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let child = last_result_json(&h, "spend carefully")["results"][0].clone();
    assert_eq!(child["exit_reason"], "budget", "{child}");
    assert_eq!(child["api_calls"], 0, "{child}");
    assert!(
        child["error"].as_str().unwrap().contains("budget"),
        "{child}"
    );
    assert!(h.requests_of("thrifty child").is_empty());
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupting_the_parent_interrupts_its_children() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "start a sleeper",
                vec![
                    Reply::tool("delegate_task", json!({"goal": "sleeper child: nap"})),
                    Reply::text("unreachable"),
                ],
            )
            .conversation(
                "sleeper child",
                vec![
                    Reply::tool(
                        "terminal",
                        json!({"command": sleeper_command("sleeper.pids")}),
                    ),
                    Reply::text("unreachable"),
                ],
            ),
    )
    .await;
    let run = LiveRun::until(&h, Wire::OpenAi, "start a sleeper", "subagent.tool").await;
    let pids = h.sleeper_pids("sleeper.pids").await;
    let t0 = Instant::now();
    run.interrupt();
    let (status, events) = run.finish().await;
    assert_eq!(status.code(), Some(130));
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_gone(&pids, "the child's command").await;
    let done = of_type(&events, "subagent.completed");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["status"], "interrupted");
    assert_eq!(last(&events)["status"], "interrupted");
    let session = last(&events)["session_id"].as_str().unwrap().to_owned();
    let agents = herald_json(&h, &["agents", "list", "--json", "--session", &session]).await;
    assert_eq!(agents[0]["status"], "interrupted");
    assert_eq!(
        h.server.requests().len(),
        2,
        "only one root and one child request"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn background_agents_dispatch_wait_and_cancel() {
    let script = Script::new()
        .conversation("bg quick", vec![Reply::text("quick result")])
        .conversation(
            "bg slow",
            vec![
                Reply::tool("terminal", json!({"command": "sleep 30"})),
                Reply::text("unreachable"),
            ],
        )
        .responder(|view| {
            let ids = dispatched_ids(view);
            match view.turn {
                0 => Reply::tool(
                    "delegate_task",
                    json!({"background": true, "tasks": [{"goal": "bg quick: report"}, {"goal": "bg slow: nap"}]}),
                ),
                1 => Reply::tool("agent_wait", json!({"agent_ids": [ids[0]], "timeout_seconds": 20})),
                2 => Reply::tool("agent_cancel", json!({"agent_id": ids[1]})),
                3 => Reply::tool("agent_wait", json!({"agent_ids": [ids[1]], "timeout_seconds": 20})),
                4 => Reply::tool("agent_status", json!({"agent_id": ids[1]})),
                5 => Reply::tool("agent_list", json!({})),
                6 => Reply::tool("agent_status", json!({"agent_id": "ag_missing"})),
                _ => Reply::text("background work handled"),
            }
        });
    let h = Harness::new(script).await;
    let t0 = Instant::now();
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "manage background agents")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert_eq!(last(&events)["final_response"], "background work handled");
    let requests = h.requests_of("manage background agents");
    let results = results_in(requests.last().unwrap());
    let first: Value = serde_json::from_str(results[0].split("\n\n").next().unwrap()).unwrap();
    assert_eq!(first["status"], "dispatched");
    assert_eq!(first["agent_ids"].as_array().unwrap().len(), 2);
    let waited: Value = serde_json::from_str(&results[1]).unwrap();
    assert_eq!(waited["finished"][0]["summary"], "quick result");
    assert_eq!(waited["timed_out"], false);
    assert!(results[2].starts_with("cancelled ag_"), "{}", results[2]);
    let waited: Value = serde_json::from_str(&results[3]).unwrap();
    assert_eq!(waited["finished"][0]["status"], "interrupted");
    assert!(
        waited["finished"][0]["error"]
            .as_str()
            .unwrap()
            .contains("agent_cancel")
    );
    let status: Value = serde_json::from_str(&results[4]).unwrap();
    assert_eq!(status["status"], "interrupted");
    assert_eq!(status["role"], "leaf");
    // Its own usage (one request before the cancel) and its subtree's (no
    // children: the same), costs rounded decimals.
    assert_eq!(status["usage"]["requests"], 1, "{status}");
    assert!(status["usage"]["input"].as_u64().unwrap() > 0);
    assert!(status["usage"]["cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(status["tree_usage"], status["usage"]);
    let list: Value = serde_json::from_str(&results[5]).unwrap();
    assert_eq!(list["total"], 2);
    assert!(
        results[6].contains("no agent 'ag_missing'"),
        "{}",
        results[6]
    );
    // Results claimed by agent_wait are not delivered a second time.
    let last_body = requests.last().unwrap().body.to_string();
    assert!(
        !last_body.contains("Background agent results"),
        "{last_body}"
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn finished_background_results_arrive_at_the_end_of_the_conversation() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "dispatch and finish",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "bg worker: compute"}),
                    ),
                    Reply::text("I will wait for the worker."),
                    Reply::text("worker said 42"),
                ],
            )
            .conversation("bg worker", vec![Reply::text("the answer is 42")]),
    )
    .await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "dispatch and finish").await;
    assert!(output.status.success(), "{}", stderr(&output));
    // `run` waits for the worker, hands its result over, and lets the model answer.
    assert_eq!(last(&events)["final_response"], "worker said 42");
    let requests = h.requests_of("dispatch and finish");
    assert_eq!(requests.len(), 3);
    let view = RequestView::from_body(Api::OpenAi, &requests[2].body).unwrap();
    let tail = view.messages.last().unwrap();
    assert_eq!(tail.role, "user");
    assert!(
        tail.text.contains("Background agent results") && tail.text.contains("the answer is 42"),
        "{}",
        tail.text
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn background_agents_restart_after_a_crash() {
    let script = || {
        Script::new()
            .conversation(
                "survive a crash",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "durable child: long job"}),
                    ),
                    Reply::text("waiting for the durable child"),
                    Reply::text("resumed and waiting"),
                    Reply::text("durable child finished: restarted fine"),
                ],
            )
            .conversation(
                "durable child",
                vec![
                    Reply::tool(
                        "terminal",
                        json!({"command": sleeper_command("durable.pids")}),
                    ),
                    Reply::text("restarted fine"),
                ],
            )
    };
    let h = Harness::new(script()).await;
    let mut run = LiveRun::until(&h, Wire::OpenAi, "survive a crash", "subagent.tool").await;
    let session = run.last_event()["session_id"].as_str().unwrap().to_owned();
    // Killed once the child's command runs (its shell has written its pids).
    let pids = h.sleeper_pids("durable.pids").await;
    run.child.start_kill().unwrap();
    run.child.wait().await.unwrap();
    // No process runs it any more: the list says so instead of "running".
    let agents = herald_json(&h, &["agents", "list", "--json"]).await;
    assert_eq!(agents[0]["status"], "suspended", "{agents}");
    assert_eq!(agents[0]["background"], true);
    assert!(
        agents[0]["error"]
            .as_str()
            .unwrap()
            .contains("no herald process runs it"),
        "{agents}"
    );

    let mut cmd = h.command(Wire::OpenAi);
    cmd.args(["run", "--json", "--resume", &session, "carry on"]);
    let output = cmd.output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let events = parse_events(&output.stdout);
    assert_eq!(
        last(&events)["final_response"],
        "durable child finished: restarted fine"
    );
    let done = of_type(&events, "subagent.completed");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["status"], "completed");
    let agents = herald_json(&h, &["agents", "list", "--json"]).await;
    assert_eq!(agents[0]["status"], "completed");
    // The restarted child continued its stored conversation: its interrupted
    // terminal call was answered, and it was not started over.
    let durable = h.requests_of("durable child");
    assert_eq!(durable.len(), 2);
    assert_eq!(durable[1].turn, 1);
    let results = results_in(&durable[1]);
    assert!(results[0].contains("interrupted"), "{results:?}");
    kill_leftovers(&pids);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_while_waiting_records_background_agents_as_interrupted() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "wait on a napper",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "napper child: nap"}),
                    ),
                    Reply::text("waiting"),
                ],
            )
            .conversation(
                "napper child",
                vec![
                    Reply::tool(
                        "terminal",
                        json!({"command": sleeper_command("napper.pids")}),
                    ),
                    Reply::text("unreachable"),
                ],
            ),
    )
    .await;
    let run = LiveRun::until(&h, Wire::OpenAi, "wait on a napper", "subagent.tool").await;
    let pids = h.sleeper_pids("napper.pids").await;
    run.interrupt();
    let (status, events) = run.finish().await;
    assert_eq!(status.code(), Some(130));
    assert_gone(&pids, "the background child's command").await;
    assert_eq!(last(&events)["status"], "interrupted");
    let agents = herald_json(&h, &["agents", "list", "--json"]).await;
    assert_eq!(agents[0]["status"], "interrupted", "{agents}");
}

#[tokio::test(flavor = "multi_thread")]
async fn herald_agents_cancel_stops_an_agent_running_in_another_process() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "cancel from outside",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "outsider child: nap"}),
                    ),
                    Reply::text("waiting"),
                    Reply::text("saw the cancel"),
                ],
            )
            .conversation(
                "outsider child",
                vec![
                    Reply::tool(
                        "terminal",
                        json!({"command": sleeper_command("outsider.pids")}),
                    ),
                    Reply::text("unreachable"),
                ],
            ),
    )
    .await;
    let run = LiveRun::until(&h, Wire::OpenAi, "cancel from outside", "subagent.tool").await;
    let agent = run.last_event()["agent_id"].as_str().unwrap().to_owned();
    let pids = h.sleeper_pids("outsider.pids").await;
    let t0 = Instant::now();
    let cancelled = herald_json(&h, &["agents", "cancel", &agent, "--json"]).await;
    assert_eq!(cancelled["status"], "cancelled");
    let (status, events) = run.finish().await;
    assert!(status.success());
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_gone(&pids, "the cancelled agent's command").await;
    assert_eq!(last(&events)["final_response"], "saw the cancel");
    let done = of_type(&events, "subagent.completed");
    assert_eq!(done[0]["status"], "interrupted");
    let shown = herald_json(&h, &["agents", "show", &agent, "--json"]).await;
    assert!(
        shown["error"]
            .as_str()
            .unwrap()
            .contains("herald agents cancel"),
        "{shown}"
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_interactive_loop_lists_agents_and_leaves_background_work_resumable() {
    use tokio::io::AsyncWriteExt;
    let h = Harness::new(
        Script::new()
            .conversation(
                "start background work",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "repl child: long job"}),
                    ),
                    Reply::text("started it"),
                ],
            )
            .conversation(
                "repl child",
                vec![
                    Reply::tool("terminal", json!({"command": sleeper_command("repl.pids")})),
                    Reply::text("unreachable"),
                ],
            ),
    )
    .await;
    let mut cmd = h.command(Wire::OpenAi);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"start background work\n").await.unwrap();
    // Let the child's command start before asking for the list.
    let pids = h.sleeper_pids("repl.pids").await;
    stdin.write_all(b"/agents\n/exit\n").await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the interactive session did not exit")
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    // Suspending stops the running command; the journal keeps the agent.
    assert_gone(&pids, "the suspended agent's command").await;
    let shown = stderr(&output);
    assert!(
        shown.contains("running → terminal") && shown.contains("repl child: long job"),
        "{shown}"
    );
    assert!(
        shown.contains("1 background agent(s) still running were suspended"),
        "{shown}"
    );
    // Journaled as suspended (with what it spent), so `--resume` restarts it.
    let agents = herald_json(&h, &["agents", "list", "--json"]).await;
    assert_eq!(agents[0]["status"], "suspended", "{agents}");
    assert!(
        agents[0]["tokens"]["input"].as_u64().unwrap() > 0,
        "{agents}"
    );
}

/// Every cost of a run whose models are all priced is known: the child's
/// result the parent reads, its `subagent.completed` event, the run's
/// totals and the agent journal. (A new child once started from an unknown
/// prior cost, which made every sum with it unknown.)
#[tokio::test(flavor = "multi_thread")]
async fn a_priced_delegation_has_no_unknown_cost_anywhere() {
    let script = Script::new()
        .conversation(
            "priced parent",
            vec![
                Reply::tool(
                    "delegate_task",
                    json!({"tasks": [{"goal": "priced child: answer"}]}),
                ),
                Reply::text("parent done"),
            ],
        )
        .conversation("priced child", vec![Reply::text("child answer")])
        .conversation(
            "plain run parent",
            vec![
                Reply::tool(
                    "delegate_task",
                    json!({"tasks": [{"goal": "plain run child: answer"}]}),
                ),
                Reply::text("parent done"),
            ],
        )
        .conversation("plain run child", vec![Reply::text("child answer")]);
    let h = Harness::new(script).await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "priced parent").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let completed = of_type(&events, "subagent.completed");
    assert_eq!(completed.len(), 1);
    let child = &completed[0];
    assert!(child["cost_usd"].as_f64().unwrap() > 0.0, "{child}");
    assert!(
        child["usage"]["cost_usd"].as_f64().unwrap() > 0.0,
        "{child}"
    );
    assert!(
        child["tree_usage"]["cost_usd"].as_f64().unwrap() > 0.0,
        "{child}"
    );
    let end = last(&events);
    for cost in [
        &end["cost_usd"],
        &end["usage"]["cost_usd"],
        &end["tree_usage"]["cost_usd"],
    ] {
        assert!(cost.as_f64().unwrap() > 0.0, "{end}");
    }
    // What the parent model was told about its child.
    let told = last_result_json(&h, "priced parent");
    let result = &told["results"][0];
    assert!(result["cost_usd"].as_f64().unwrap() > 0.0, "{told}");
    // The journal.
    let agents = herald_json(&h, &["agents", "list", "--json"]).await;
    assert!(agents[0]["cost_usd"].as_f64().unwrap() > 0.0, "{agents}");
    assert!(
        agents[0]["usage"]["cost_usd"].as_f64().unwrap() > 0.0,
        "{agents}"
    );
    // The summary line says no "?".
    let plain = h
        .command(Wire::OpenAi)
        .args(["run", "plain run parent"])
        .output()
        .await
        .unwrap();
    assert!(plain.status.success(), "{}", stderr(&plain));
    let said = stderr(&plain);
    assert!(!said.contains("+?") && !said.contains("$?"), "{said}");
}
