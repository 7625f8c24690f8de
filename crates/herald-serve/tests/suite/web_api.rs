//! The routes the web UI needed that the API lacked: a stored session's
//! messages by page (with its last event number), sessions by page and
//! filter, usage as `herald usage --json` reports it, and the settings
//! read-only. Bad input is a 400 and changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Serve, assert_error};
use herald_core::StoreHandle;
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

async fn turn(serve: &Serve, id: &str, input: &str) -> Value {
    let (status, _, result) = serve
        .post_json(
            &format!("/api/sessions/{id}/turns?wait=true"),
            &json!({"input": input}),
        )
        .await;
    assert_eq!(status, 200, "{result}");
    result
}

async fn new_session(serve: &Serve) -> String {
    let (status, _, created) = serve.post_json("/api/sessions", &json!({})).await;
    assert_eq!(status, 201, "{created}");
    created["id"].as_str().unwrap().to_owned()
}

fn responder() -> Script {
    Script::new()
        .responder(|view| Reply::text(format!("reply {} to {}", view.turn, view.conversation)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_messages_come_by_page_with_the_last_event_number() {
    let serve = Serve::start(responder()).await;
    let id = new_session(&serve).await;
    for n in 0..3 {
        turn(&serve, &id, &format!("question {n}")).await;
    }
    // Events reach the store shortly after the turn's answer: wait for them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (all, stored) = loop {
        let (status, all) = serve
            .get_json(&format!("/api/sessions/{id}/messages"))
            .await;
        assert_eq!(status, 200, "{all}");
        let stored = serve.stored_events(&id).await;
        let last = all["last_event_seq"].as_u64().unwrap();
        if last > 0 && last == stored.len() as u64 {
            break (all, stored);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "last_event_seq {last}, {} stored",
            stored.len()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(stored.iter().any(|e| e["type"] == "run.completed"));
    assert_eq!(all["total"], 6);
    assert_eq!(all["start"], 0);
    let roles: Vec<&str> = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(all["messages"][4]["content"], "question 2");

    let (status, tail) = serve
        .get_json(&format!("/api/sessions/{id}/messages?limit=2"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            tail["start"].as_u64(),
            tail["messages"].as_array().unwrap().len()
        ),
        (Some(4), 2)
    );
    assert_eq!(tail["messages"][0]["content"], "question 2");
    let (_, earlier) = serve
        .get_json(&format!("/api/sessions/{id}/messages?limit=3&before=4"))
        .await;
    assert_eq!(earlier["start"], 1);
    assert_eq!(earlier["messages"][0]["role"], "assistant");
    assert_eq!(earlier["messages"][2]["role"], "assistant");

    for bad in ["limit=0", "limit=1001", "limit=x", "before=-1"] {
        let (status, body) = serve
            .get_json(&format!("/api/sessions/{id}/messages?{bad}"))
            .await;
        assert_error(status, &body, 400);
    }
    let (status, body) = serve.get_json("/api/sessions/ses_nope/messages").await;
    assert_error(status, &body, 404);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_sessions_list_pages_and_filters() {
    let serve = Serve::start(responder()).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = new_session(&serve).await;
        turn(&serve, &id, "hello").await;
        ids.push(id);
    }
    ids.reverse(); // newest first
    let list = |q: &str| {
        let q = q.to_owned();
        let serve = &serve;
        async move {
            let (status, body) = serve.get_json(&format!("/api/sessions?{q}")).await;
            assert_eq!(status, 200, "{q}: {body}");
            body["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(list("limit=2").await, ids[..2]);
    assert_eq!(list("limit=2&offset=2").await, ids[2..]);
    assert_eq!(list("model=gpt-4.1-mini").await, ids);
    assert!(list("model=other").await.is_empty());
    assert!(list("status=ended").await.is_empty());
    assert_eq!(list("status=unended").await, ids);
    assert_eq!(list("since_ms=946684800000").await, ids);
    assert!(list("until_ms=946684800000").await.is_empty());
    assert!(list("since_ms=4102444800000").await.is_empty());
    let mut open = list("open=true").await;
    open.sort();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(open, sorted);
    for bad in ["since_ms=yesterday", "status=done", "offset=-1", "limit=x"] {
        let (status, body) = serve.get_json(&format!("/api/sessions?{bad}")).await;
        assert_error(status, &body, 400);
    }
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_usage_is_the_store_report_with_its_total() {
    let serve = Serve::start(responder()).await;
    let id = new_session(&serve).await;
    turn(&serve, &id, "one").await;
    turn(&serve, &id, "two").await;
    let (status, report) = serve.get_json("/api/usage?by=model").await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["by"], "model");
    assert_eq!(report["since_ms"], Value::Null);
    let store = StoreHandle::open(&serve.home.path().join("state.db")).unwrap();
    let rows = herald_core::runtime::Catalog::new(store)
        .usage(None, herald_store::UsageGrouping::Model)
        .await
        .unwrap();
    assert_eq!(report["rows"], serde_json::to_value(&rows).unwrap());
    assert_eq!(report["total"]["requests"], 2);
    let input: u64 = rows.iter().map(|r| r.totals.input).sum();
    assert_eq!(report["total"]["input"], input);
    let (_, by_day) = serve.get_json("/api/usage?since_ms=946684800000").await;
    assert_eq!(by_day["by"], "day");
    assert_eq!(by_day["since_ms"], 946684800000i64);
    assert_eq!(by_day["total"], report["total"]);
    let (_, future) = serve.get_json("/api/usage?since_ms=4102444800000").await;
    assert_eq!(future["total"]["requests"], 0);
    for bad in ["since_ms=soon", "by=week"] {
        let (status, body) = serve.get_json(&format!("/api/usage?{bad}")).await;
        assert_error(status, &body, 400);
    }
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_settings_are_read_only_and_redacted() {
    let serve = Serve::start(Script::new()).await;
    let memories = serve.home.path().join("memories");
    std::fs::create_dir_all(&memories).unwrap();
    std::fs::write(
        memories.join("MEMORY.md"),
        "uses tabs\n§\nruns tests with cargo\n",
    )
    .unwrap();
    let (status, settings) = serve.get_json("/api/settings").await;
    assert_eq!(status, 200, "{settings}");
    assert_eq!(settings["config"]["model"], "gpt-4.1-mini");
    assert!(settings["mcp_servers"].as_array().unwrap().is_empty());
    assert!(settings["skills"]["skills"].is_array());
    assert!(settings["learnings"].as_array().unwrap().is_empty());
    assert!(
        settings["memory"]["memory"]["entries"].is_array(),
        "{settings}"
    );
    assert!(
        settings["memory"]["user"]["entries"].is_array(),
        "{settings}"
    );
    let text = settings.to_string();
    let key = serve
        .upstream
        .provider_env(herald_testkit::Api::OpenAi)
        .into_iter()
        .find(|(k, _)| k.ends_with("API_KEY"))
        .map(|(_, v)| v)
        .unwrap();
    assert!(!text.contains(&key), "the key is redacted: {text}");
    let (status, _, body) = common::parts(
        serve
            .post("/api/settings")
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_error(status, &body, 405);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_doctor_without_a_provider_is_404_and_documented() {
    // Embedded without the binary's doctor: the route says so.
    let serve = Serve::start(Script::new()).await;
    let (status, body) = serve.get_json("/api/doctor").await;
    assert_error(status, &body, 404);
    assert_eq!(body["error"]["code"], "doctor_unavailable");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("herald doctor"),
        "{body}"
    );
    let (_, doc) = serve.get_json("/api/openapi.json").await;
    let op = &doc["paths"]["/api/doctor"]["get"];
    assert!(op["responses"]["200"].is_object(), "{op}");
    assert!(op["responses"]["404"].is_object(), "{op}");
    assert!(
        doc["components"]["schemas"]["DoctorReport"].is_object(),
        "{doc}"
    );
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webui_stored_tool_results_carry_their_calls_duration() {
    let serve = Serve::start(Script::new().conversation(
        "nap then answer",
        vec![
            Reply::tool("terminal", json!({"command": "sleep 0.4"})),
            Reply::text("rested"),
        ],
    ))
    .await;
    let id = new_session(&serve).await;
    turn(&serve, &id, "nap then answer").await;
    // The call's tool.completed event reaches the store shortly after.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let tool = loop {
        let (status, page) = serve
            .get_json(&format!("/api/sessions/{id}/messages"))
            .await;
        assert_eq!(status, 200, "{page}");
        let tool = page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .cloned()
            .unwrap_or_else(|| panic!("no tool result: {page}"));
        if tool.get("duration_ms").is_some() {
            break tool;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no duration_ms: {tool}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let ms = tool["duration_ms"].as_u64().unwrap();
    assert!((400..10_000).contains(&ms), "a 0.4 s call took {ms} ms");
    // The same number the live event had.
    let stored = serve.stored_events(&id).await;
    let completed = stored
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .unwrap();
    assert_eq!(completed["duration_ms"].as_u64(), Some(ms));
    assert_eq!(completed["call_id"], tool["tool_call_id"]);
    // Other messages carry none.
    let (_, page) = serve
        .get_json(&format!("/api/sessions/{id}/messages"))
        .await;
    for m in page["messages"].as_array().unwrap() {
        if m["role"] != "tool" {
            assert!(m.get("duration_ms").is_none(), "{m}");
        }
    }
    serve.stop().await;
}
