//! The whole delegation story in one run: an orchestrator splits a rename
//! over five children in five worktrees, against an endpoint that admits
//! two requests at once; it steers one child mid-way, asks a finished one a
//! follow-up question, and every branch is merged afterwards. No child
//! fails, and each agent's model choice is an event with its reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use herald_testkit::{Reply, RequestView, Script};
use serde_json::{Value, json};

use crate::common::{
    Harness, Wire, dispatched_ids, git, last, model_of, of_type, stderr, tool_results,
    wait_for_agent,
};

const CHILDREN: usize = 5;

const CONFIG: &str = r#"
[delegation]
max_concurrent_children = 5

[network]
max_retries = 3
retry_base_delay_ms = 100

[[routing.rules]]
role = "root"
model = "lead-model"

[[routing.rules]]
role = "child"
model = "coder-model"
"#;

const STEER: &str = "keep greet as an alias of welcome";

/// A repository with one `greet` in each of five files.
fn repository(work: &Path) {
    git(work, &["init", "-q", "-b", "main"]);
    git(work, &["config", "user.email", "test@example.org"]);
    git(work, &["config", "user.name", "Test"]);
    for i in 0..CHILDREN {
        std::fs::write(work.join(format!("part{i}.txt")), "greet\n").unwrap();
    }
    git(work, &["add", "."]);
    git(work, &["commit", "-q", "-m", "start"]);
}

/// Renames `greet` in `part{i}.txt` and commits it.
fn rename(i: usize) -> Reply {
    Reply::tool(
        "terminal",
        json!({"command": format!(
            "printf 'welcome\\n' > part{i}.txt && git commit -q -am 'rename in part {i}'"
        )}),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_orchestrator_splits_steers_asks_and_merges_five_worktrees_under_a_rate_limit() {
    let tasks: Vec<Value> = (0..CHILDREN)
        .map(|i| json!({"goal": format!("rename child {i}: rename greet in part{i}.txt")}))
        .collect();
    let mut script = Script::new()
        // Child 0 is in a long command when it is steered: the message
        // arrives with that command's result.
        .conversation(
            "rename child 0",
            vec![
                Reply::tool("terminal", json!({"command": "sleep 3"})),
                rename(0),
                Reply::text("part 0 renamed, alias kept"),
            ],
        )
        // Child 1's third reply answers the follow-up.
        .conversation(
            "rename child 1",
            vec![
                rename(1),
                Reply::text("part 1 renamed"),
                Reply::text("I changed part1.txt only"),
            ],
        );
    for i in 2..CHILDREN {
        script = script.conversation(
            &format!("rename child {i}"),
            vec![rename(i), Reply::text(format!("part {i} renamed"))],
        );
    }
    let script = script.responder(move |view| {
        let ids = dispatched_ids(view);
        match view.turn {
            0 => Reply::tool(
                "delegate_task",
                json!({"background": true, "isolation": "worktree", "tasks": tasks}),
            ),
            1 => Reply::tool("agent_send", json!({"agent_id": ids[0], "message": STEER})),
            2 => wait_for_agent(&ids[0]),
            3 => wait_for_agent(&ids[1]),
            4 => Reply::tool(
                "agent_followup",
                json!({"agent_id": ids[1], "message": "which file did you change?"}),
            ),
            5 => wait_for_agent(&ids[1]),
            _ => Reply::text("rename split, steered, asked"),
        }
    });
    let h = Harness::new(script).await;
    let work = h.work_path();
    repository(&work);
    h.config(CONFIG);
    h.server.set_latency(Duration::from_millis(100));
    h.server.limit_concurrency(Some((2, Some(1))));
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "split the greet rename")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        last(&events)["final_response"],
        "rename split, steered, asked"
    );

    let root = h.requests_of("split the greet rename");
    let results = tool_results(&root.last().unwrap().body);
    let dispatched: Value = serde_json::from_str(results[0].split("\n\n").next().unwrap()).unwrap();
    let ids: Vec<String> = dispatched["agent_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), CHILDREN, "{dispatched}");

    // No child failed: every run of every child completed (child 1 twice).
    let completed = of_type(&events, "subagent.completed");
    assert_eq!(completed.len(), CHILDREN + 1, "{completed:?}");
    assert!(
        completed.iter().all(|e| e["status"] == "completed"),
        "{completed:?}"
    );

    // The endpoint refused requests, and the tree backed off.
    assert!(h.server.throttled_count() > 0, "no request was refused");
    assert!(!of_type(&events, "provider.throttled").is_empty());
    assert!(h.server.peak_in_flight() <= 2);

    // Steering: queued, then delivered with child 0's command result.
    let receipts: Vec<&str> = of_type(&events, "agent.message")
        .iter()
        .filter(|e| e["agent_id"] == ids[0].as_str())
        .map(|e| e["state"].as_str().unwrap())
        .collect();
    assert_eq!(receipts, ["queued", "delivered"]);
    let child0 = h.requests_of("rename child 0");
    assert!(
        child0
            .iter()
            .any(|r| tool_results(&r.body).iter().any(|t| t.contains(STEER))),
        "the steer did not reach child 0"
    );

    // The follow-up continued child 1's own session, its answer in context.
    let child1 = h.requests_of("rename child 1");
    assert_eq!(child1.len(), 3);
    let followup = RequestView::from_body(child1[2].api, &child1[2].body).unwrap();
    let texts: Vec<&str> = followup.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(texts.contains(&"part 1 renamed"), "{texts:?}");
    assert!(
        texts
            .iter()
            .any(|t| t.contains("which file did you change?")),
        "{texts:?}"
    );
    let answered: Value = serde_json::from_str(&results[5]).unwrap();
    assert_eq!(
        answered["finished"][0]["summary"], "I changed part1.txt only",
        "{answered}"
    );

    // Which model did what, and why: on the wire and in the events.
    assert!(root.iter().all(|r| model_of(r) == "lead-model"));
    for i in 0..CHILDREN {
        let requests = h.requests_of(&format!("rename child {i}"));
        assert!(!requests.is_empty());
        assert!(
            requests.iter().all(|r| model_of(r) == "coder-model"),
            "child {i}"
        );
    }
    let routed = of_type(&events, "model.routed");
    for id in &ids {
        let choice = routed
            .iter()
            .find(|e| e["agent_id"] == id.as_str() && e["role"] == "child")
            .unwrap_or_else(|| panic!("no model.routed for {id} in {routed:?}"));
        assert_eq!(choice["model"], "coder-model");
        assert!(
            choice["reason"].as_str().unwrap().contains("#2"),
            "{choice}"
        );
    }

    // The checkout is untouched until the merges; then every branch lands.
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
    for i in 0..CHILDREN {
        let text = std::fs::read_to_string(work.join(format!("part{i}.txt"))).unwrap();
        assert_eq!(text, "greet\n");
    }
    for (i, id) in ids.iter().enumerate() {
        let out = h
            .bare_command()
            .args(["agents", "merge", id, "--json"])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "merge {i}: {}", stderr(&out));
        let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
        let kind = if i == 0 {
            "fast_forward"
        } else {
            "merge_commit"
        };
        assert_eq!(merged["kind"], kind, "{merged}");
    }
    for i in 0..CHILDREN {
        let text = std::fs::read_to_string(work.join(format!("part{i}.txt"))).unwrap();
        assert_eq!(text, "welcome\n", "part{i}.txt");
    }
    let log = git(&work, &["log", "--format=%s"]);
    for i in 0..CHILDREN {
        assert!(log.contains(&format!("rename in part {i}")), "{log}");
    }
    assert_eq!(git(&work, &["worktree", "list"]).lines().count(), 1);
    h.server.assert_invariants();
}
