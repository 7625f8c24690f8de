//! `[routing]` end to end: each rule chooses the model seen on the wire —
//! the top-level agent's, titles', children's by toolset, by default with a
//! fallback, by name from the allow-list, private work on a local model, and
//! the move of a long conversation to the long-window model — and every
//! choice is a `model.routed` event with its reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, last, model_of, of_type, stderr};
use herald_testkit::{RecordedRequest, Reply, RequestView, Script};
use serde_json::json;

const CONFIG: &str = r#"
[delegation]
max_concurrent_children = 4

[sessions]
title_model = "plain-title"

[routing]
allow_models = ["named-model"]
local_models = ["local-model"]
long_context_model = "wide-model"
long_context_tokens = 5000

[[routing.rules]]
role = "root"
model = "root-model"

[[routing.rules]]
role = "title"
model = "title-model"

[[routing.rules]]
role = "child"
toolset = "web"
model = "web-model"

[[routing.rules]]
role = "child"
model = "child-model"
fallback = ["child-backup"]
"#;

/// The text of every tool result in a recorded request.
fn results_in(request: &RecordedRequest) -> Vec<String> {
    let view = RequestView::from_body(request.api, &request.body).unwrap();
    view.messages
        .iter()
        .flat_map(|m| m.tool_results.iter().map(|(_, c)| c.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_route_chooses_its_model_on_the_wire_with_a_reason() {
    let script = Script::new()
        .conversation("plain child", vec![Reply::text("plain done")])
        .conversation("web child", vec![Reply::text("web done")])
        .conversation("named child", vec![Reply::text("named done")])
        .conversation("private child", vec![Reply::text("private done")])
        .responder(|view| match view.turn {
            0 => Reply::tool(
                "delegate_task",
                json!({"tasks": [
                    {"goal": "plain child: work"},
                    {"goal": "web child: read", "toolsets": ["web"]},
                    {"goal": "named child: think", "model": "named-model"},
                    {"goal": "private child: secrets", "private": true}
                ]}),
            ),
            1 => Reply::tool(
                "delegate_task",
                json!({"goal": "refused child", "model": "huge-model"}),
            ),
            // About 4,000 tokens of output on top of the ~3,300 of the system
            // prompt and tools: the next request moves.
            2 => Reply::tool(
                "terminal",
                json!({"command": "head -c 16000 /dev/zero | tr '\\0' 'a'"}),
            ),
            _ => Reply::text("routed"),
        });
    let h = Harness::new(script).await;
    h.config(CONFIG);
    let (output, events) = h.run_json(Wire::OpenAi, &[], "route the work").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "routed");

    // The title request quotes the prompt: not one of the root's.
    let root: Vec<RecordedRequest> = h
        .requests_of("route the work")
        .into_iter()
        .filter(|r| model_of(r) != "title-model")
        .collect();
    let models: Vec<String> = root.iter().map(model_of).collect();
    assert_eq!(
        models,
        ["root-model", "root-model", "root-model", "wide-model"],
        "the root's requests"
    );
    let first = &results_in(root.last().unwrap())[0];
    assert!(first.contains("plain done"), "{first}");
    for (needle, model) in [
        ("plain child", "child-model"),
        ("web child", "web-model"),
        ("named child", "named-model"),
        ("private child", "local-model"),
    ] {
        let requests = h.requests_of(needle);
        assert_eq!(requests.len(), 1, "{needle}");
        assert_eq!(model_of(&requests[0]), model, "{needle}");
    }
    let titles: Vec<String> = h
        .server
        .requests()
        .iter()
        .filter(|r| model_of(r) == "title-model")
        .map(|r| r.conversation.clone())
        .collect();
    assert_eq!(titles.len(), 1, "one title request: {titles:?}");
    assert!(
        !h.server
            .requests()
            .iter()
            .any(|r| model_of(r) == "plain-title"),
        "the title rule wins over [sessions] title_model"
    );
    // A model outside the allow-list is refused, naming the list; no
    // child starts.
    let refusal = &results_in(root.last().unwrap())[1];
    assert!(
        refusal.contains("\"huge-model\" is not in [routing] allow_models (named-model)"),
        "{refusal}"
    );
    assert!(h.requests_of("refused child").is_empty());

    // Every choice is an event with its reason.
    let routed = of_type(&events, "model.routed");
    let find = |role: &str, model: &str| {
        routed
            .iter()
            .find(|e| e["role"] == role && e["model"] == model)
            .unwrap_or_else(|| panic!("no {role} -> {model} in {routed:?}"))
    };
    assert!(
        find("root", "root-model")["reason"]
            .as_str()
            .unwrap()
            .contains("#1")
    );
    assert!(
        find("title", "title-model")["reason"]
            .as_str()
            .unwrap()
            .contains("#2")
    );
    assert!(
        find("child", "web-model")["reason"]
            .as_str()
            .unwrap()
            .contains("toolset web")
    );
    assert!(
        find("child", "child-model")["reason"]
            .as_str()
            .unwrap()
            .contains("#4")
    );
    assert!(
        find("child", "named-model")["reason"]
            .as_str()
            .unwrap()
            .contains("allow_models")
    );
    assert!(
        find("child", "local-model")["reason"]
            .as_str()
            .unwrap()
            .contains("private")
    );
    assert!(
        find("root", "wide-model")["reason"]
            .as_str()
            .unwrap()
            .contains("long_context_tokens = 5000")
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn routes_are_listed_and_bad_routing_is_refused_before_any_request() {
    let h = Harness::new(Script::new()).await;
    h.config(CONFIG);
    let shown = h.cli_json(&["context", "--json"]).await;
    let routes: Vec<&str> = shown["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(routes[0], "#1 role root -> root-model");
    assert!(routes.contains(&"#4 role child -> child-model (then child-backup)"));
    assert!(routes.contains(&"context >= 5000 tokens -> wide-model"));
    let output = h
        .bare_command()
        .args(["config", "show"])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("[routing]"), "{text}");
    assert!(
        text.contains("#3 role child, toolset web -> web-model"),
        "{text}"
    );

    for (bad, says) in [
        ("[[routing.rules]]\nmodel = \"\"\n", "model is empty"),
        (
            "[[routing.rules]]\nrole = \"captain\"\nmodel = \"m\"\n",
            "captain",
        ),
        ("[routing]\nprivate = true\n", "local_models is empty"),
    ] {
        h.config(bad);
        let (output, _) = h.run_json(Wire::OpenAi, &[], "never sent").await;
        assert!(!output.status.success(), "{bad}");
        assert!(stderr(&output).contains(says), "{bad}: {}", stderr(&output));
    }
    assert_eq!(h.server.request_count(), 0);
}
