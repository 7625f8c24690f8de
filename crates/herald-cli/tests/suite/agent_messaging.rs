//! Talking to subagents after they started, end to end: `agent_send`
//! receipts (`queued`, then `delivered` at a tool boundary or `missed` when
//! the agent finished first), steering a whole subtree, and
//! `agent_followup` continuing a finished child's own session with its
//! earlier context in the request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Harness, Wire, dispatched_ids, last, of_type, stderr, wait_for_agent};
use herald_testkit::{RecordedRequest, Reply, RequestView, Script};
use serde_json::{Value, json};

/// The text of every tool result in a recorded request.
fn results_in(request: &RecordedRequest) -> Vec<String> {
    let view = RequestView::from_body(request.api, &request.body).unwrap();
    view.messages
        .iter()
        .flat_map(|m| m.tool_results.iter().map(|(_, c)| c.clone()))
        .collect()
}

/// The `agent.message` states of one receipt-holder, in order.
fn states_of(events: &[Value], agent_id: &str) -> Vec<String> {
    of_type(events, "agent.message")
        .iter()
        .filter(|e| e["agent_id"] == agent_id)
        .map(|e| e["state"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_are_delivered_or_missed_and_a_follow_up_keeps_the_context() {
    let script = Script::new()
        // Busy in a tool when the message arrives: delivered after it.
        .conversation(
            "steady worker",
            vec![
                Reply::tool("terminal", json!({"command": "sleep 2"})),
                Reply::text("worker done"),
            ],
        )
        // Thinking (a slow request) when the message arrives, and then
        // done without another tool boundary: missed. Its second reply
        // answers the follow-up.
        .conversation(
            "slow thinker",
            vec![
                Reply::text("thinker says 7"),
                Reply::text("I said 7 before"),
            ],
        )
        .responder(|view| {
            let ids = dispatched_ids(view);
            match view.turn {
                0 => Reply::tool(
                    "delegate_task",
                    json!({"background": true, "tasks": [
                        {"goal": "steady worker: nap then report"},
                        {"goal": "slow thinker: answer"}
                    ]}),
                ),
                1 => Reply::tool(
                    "agent_send",
                    json!({"agent_id": ids[0], "message": "use tabs, not spaces"}),
                ),
                2 => Reply::tool(
                    "agent_send",
                    json!({"agent_id": ids[1], "message": "too late for you"}),
                ),
                3 => wait_for_agent(&ids[0]),
                4 => wait_for_agent(&ids[1]),
                5 => Reply::tool("agent_status", json!({"agent_id": ids[0]})),
                6 => Reply::tool("agent_status", json!({"agent_id": ids[1]})),
                // Refused: it finished; the error names the way forward.
                7 => Reply::tool(
                    "agent_send",
                    json!({"agent_id": ids[0], "message": "anyone there?"}),
                ),
                8 => Reply::tool(
                    "agent_followup",
                    json!({"agent_id": ids[1], "message": "what did you say before?"}),
                ),
                9 => wait_for_agent(&ids[1]),
                _ => Reply::text("all talked through"),
            }
        });
    let h = Harness::new(script).await;
    h.server
        .set_conversation_latency("slow thinker", Duration::from_millis(1500));
    let (output, events) = h.run_json(Wire::OpenAi, &[], "coordinate agents").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "all talked through");

    let root = h.requests_of("coordinate agents");
    let results = results_in(root.last().unwrap());
    let dispatched: Value = serde_json::from_str(results[0].split("\n\n").next().unwrap()).unwrap();
    let ids: Vec<String> = dispatched["agent_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let (worker, thinker) = (&ids[0], &ids[1]);

    // Each send returned a queued receipt for its agent.
    for (i, agent) in [(1, worker), (2, thinker)] {
        let sent: Value = serde_json::from_str(&results[i]).unwrap();
        assert_eq!(sent["sent"][0]["agent_id"], agent.as_str(), "{sent}");
        assert_eq!(sent["sent"][0]["state"], "queued", "{sent}");
    }
    // The receipts' events: delivered to the worker, missed by the thinker.
    assert_eq!(states_of(&events, worker), ["queued", "delivered"]);
    assert_eq!(states_of(&events, thinker), ["queued", "missed"]);
    // agent_status reports the same.
    let status: Value = serde_json::from_str(&results[5]).unwrap();
    assert_eq!(status["messages"][0]["state"], "delivered", "{status}");
    let status: Value = serde_json::from_str(&results[6]).unwrap();
    assert_eq!(status["messages"][0]["state"], "missed", "{status}");
    assert!(
        results[7].contains("has finished") && results[7].contains("agent_followup"),
        "{}",
        results[7]
    );

    // The worker's model read the message with its tool result.
    let worker_requests = h.requests_of("steady worker");
    assert_eq!(worker_requests.len(), 2);
    let tool_result = results_in(&worker_requests[1]).pop().unwrap();
    assert!(
        tool_result.contains("use tabs, not spaces")
            && tool_result.contains("Your delegating agent sent this"),
        "{tool_result}"
    );
    // The thinker never saw its message.
    assert!(
        !h.requests_of("slow thinker")
            .iter()
            .any(|r| r.body.to_string().contains("too late for you"))
    );

    // The follow-up continued the thinker's own session: its earlier
    // answer and the new question in one request, on the same conversation.
    let thinker_requests = h.requests_of("slow thinker");
    assert_eq!(thinker_requests.len(), 2);
    let followup =
        RequestView::from_body(thinker_requests[1].api, &thinker_requests[1].body).unwrap();
    let texts: Vec<&str> = followup.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(texts.contains(&"thinker says 7"), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.contains("what did you say before?")),
        "{texts:?}"
    );
    let dispatched: Value = serde_json::from_str(&results[8]).unwrap();
    assert_eq!(dispatched["status"], "dispatched");
    let waited: Value = serde_json::from_str(&results[9]).unwrap();
    assert_eq!(
        waited["finished"][0]["summary"], "I said 7 before",
        "{waited}"
    );
    assert_eq!(waited["finished"][0]["status"], "completed");
    // Two runs of the thinker, one session: two subagent.completed events.
    let completed: Vec<_> = of_type(&events, "subagent.completed")
        .into_iter()
        .filter(|e| e["agent_id"] == thinker.as_str())
        .collect();
    assert_eq!(completed.len(), 2);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_to_a_subtree_reaches_every_running_agent_below() {
    let script = Script::new()
        .conversation(
            "lead: split",
            vec![
                Reply::tool(
                    "delegate_task",
                    json!({"background": true, "goal": "helper: nap"}),
                ),
                Reply::tool("terminal", json!({"command": "sleep 2"})),
                Reply::text("lead done"),
            ],
        )
        .conversation(
            "helper: nap",
            vec![
                Reply::tool("terminal", json!({"command": "sleep 2"})),
                Reply::text("helper done"),
            ],
        )
        .responder(|view| match view.turn {
            0 => Reply::tool(
                "delegate_task",
                json!({"background": true, "goal": "lead: split", "role": "orchestrator"}),
            ),
            1 => Reply::tool("terminal", json!({"command": "sleep 1"})),
            2 => {
                let lead = dispatched_ids(view)[0].clone();
                Reply::tool(
                    "agent_send",
                    json!({"agent_id": lead, "message": "stop at v2", "subtree": true}),
                )
            }
            3 => Reply::tool("agent_list", json!({})),
            _ => Reply::text("tree steered"),
        });
    let h = Harness::new(script).await;
    h.config("[delegation]\nmax_spawn_depth = 2\n");
    let (output, events) = h.run_json(Wire::OpenAi, &[], "steer the tree").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let root = h.requests_of("steer the tree");
    let results = results_in(root.last().unwrap());
    let sent: Value = serde_json::from_str(&results[2]).unwrap();
    let receipts = sent["sent"].as_array().unwrap();
    assert_eq!(receipts.len(), 2, "the lead and its helper: {sent}");
    for receipt in receipts {
        let agent = receipt["agent_id"].as_str().unwrap();
        assert_eq!(
            states_of(&events, agent),
            ["queued", "delivered"],
            "{agent}"
        );
    }
    for needle in ["lead: split", "helper: nap"] {
        assert!(
            h.requests_of(needle)
                .iter()
                .any(|r| r.body.to_string().contains("stop at v2")),
            "{needle} never read the message"
        );
    }
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_messages_and_follow_ups_are_refused_and_change_nothing() {
    let script = Script::new()
        .conversation(
            "busy one",
            vec![
                Reply::tool("terminal", json!({"command": "sleep 2"})),
                Reply::text("busy done"),
            ],
        )
        .responder(|view| {
            let ids = dispatched_ids(view);
            match view.turn {
                0 => Reply::tool(
                    "delegate_task",
                    json!({"background": true, "goal": "busy one: work"}),
                ),
                1 => Reply::tool(
                    "agent_send",
                    json!({"agent_id": "ag_nobody", "message": "hello"}),
                ),
                2 => Reply::tool("agent_send", json!({"agent_id": ids[0], "message": "  "})),
                3 => Reply::tool(
                    "agent_followup",
                    json!({"agent_id": ids[0], "message": "are you done?"}),
                ),
                4 => Reply::tool(
                    "agent_followup",
                    json!({"agent_id": "ag_nobody", "message": "hello"}),
                ),
                5 => Reply::tool("agent_status", json!({"agent_id": ids[0]})),
                _ => Reply::text("refusals seen"),
            }
        });
    let h = Harness::new(script).await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "probe refusals").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let root = h.requests_of("probe refusals");
    let results = results_in(root.last().unwrap());
    assert!(
        results[1].contains("no agent 'ag_nobody'"),
        "{}",
        results[1]
    );
    assert!(results[2].contains("message is empty"), "{}", results[2]);
    assert!(
        results[3].contains("still running") && results[3].contains("agent_send"),
        "{}",
        results[3]
    );
    assert!(
        results[4].contains("no agent 'ag_nobody'"),
        "{}",
        results[4]
    );
    // Nothing was queued, and the busy agent ran once, undisturbed.
    assert!(of_type(&events, "agent.message").is_empty());
    let status: Value = serde_json::from_str(&results[5]).unwrap();
    assert_eq!(status["messages"], json!([]), "{status}");
    assert_eq!(h.requests_of("busy one").len(), 2);
    h.server.assert_invariants();
}
