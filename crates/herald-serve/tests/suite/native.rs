//! The native API under `/api`, auth and limits, against the scripted model
//! server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Serve, SseReader, assert_error, chat};
use herald_serve::{ServeConfig, ServeError, Server};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_needs_the_bearer_token() {
    let serve = Serve::start(Script::new()).await;
    let client = common::http();
    for (method, path) in [
        ("GET", "/v1/models"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/responses"),
        ("GET", "/api/sessions"),
        ("GET", "/api/openapi.json"),
        ("GET", "/api/sessions/ses_x/events"),
        ("GET", "/no/such/route"),
    ] {
        let url = format!("{}{path}", serve.url);
        let request = match method {
            "GET" => client.get(&url),
            _ => client.post(&url).json(&chat("hi", false)),
        };
        let (status, _, body) =
            common::parts(request.try_clone().unwrap().send().await.unwrap()).await;
        assert_error(status, &body, 401);
        assert_eq!(body["error"]["type"], "authentication_error");
        let (status, _, body) =
            common::parts(request.bearer_auth("wrong").send().await.unwrap()).await;
        assert_error(status, &body, 401);
    }
    let (status, _) = serve.get_json("/v1/models").await;
    assert_eq!(status, 200);
    assert_eq!(serve.upstream.request_count(), 0);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_created_listed_searched_forked_and_deleted() {
    let serve =
        Serve::start(Script::new().responder(|view| {
            Reply::text(format!("reply {} to {}", view.turn, view.conversation))
        }))
        .await;
    let (status, _, created) = serve.post_json("/api/sessions", &json!({})).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["open"], true);
    assert_eq!(created["busy"], false);
    assert!(created.get("system_prompt").is_none());
    // Created with no body at all, too.
    let response = serve.post("/api/sessions").send().await.unwrap();
    assert_eq!(response.status(), 201);

    let (status, result) = serve
        .post_json(
            &format!("/api/sessions/{id}/turns?wait=true"),
            &json!({"input": "zebra facts"}),
        )
        .await
        .into_status_body();
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["status"], "completed");
    assert_eq!(result["final_response"], "reply 0 to zebra facts");
    assert!(result["usage"]["input"].as_u64().unwrap() > 0);

    let (status, list) = serve.get_json("/api/sessions").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&id.as_str()), "{list}");

    let (status, found) = serve.get_json("/api/sessions/search?q=zebra").await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["hits"][0]["session"]["id"], id.as_str());
    let (status, body) = serve.get_json("/api/sessions/search?q=").await;
    assert_error(status, &body, 400);

    let (status, one) = serve.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!(status, 200);
    assert!(one["system_prompt"].as_str().is_some());
    assert_eq!(one["message_count"], 2);

    let (status, _, fork) = serve.post_json("/api/sessions", &json!({"fork": id})).await;
    assert_eq!(status, 201, "{fork}");
    let fork_id = fork["id"].as_str().unwrap();
    assert_ne!(fork_id, id);
    assert_eq!(fork["message_count"], 2);
    let (_, both) = serve
        .post_json("/api/sessions", &json!({"fork": id, "resume": id}))
        .await
        .into_status_body();
    assert_eq!(both["error"]["type"], "invalid_request_error");
    let (status, _, body) = serve
        .post_json("/api/sessions", &json!({"fork": "ses_nope"}))
        .await;
    assert_error(status, &body, 404);

    let response = serve
        .delete(&format!("/api/sessions/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    let (status, body) = serve.get_json(&format!("/api/sessions/{id}")).await;
    assert_error(status, &body, 404);
    let response = serve
        .delete(&format!("/api/sessions/{id}"))
        .send()
        .await
        .unwrap();
    let (status, _, body) = common::parts(response).await;
    assert_error(status, &body, 404);
    serve.stop().await;
}

trait StatusBody {
    fn into_status_body(self) -> (u16, Value);
}

impl StatusBody for (u16, Option<String>, Value) {
    fn into_status_body(self) -> (u16, Value) {
        (self.0, self.2)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_sessions_are_404_everywhere() {
    let serve = Serve::start(Script::new()).await;
    for path in [
        "/api/sessions/ses_nope",
        "/api/sessions/ses_nope/events",
        "/api/sessions/ses_nope/agents",
    ] {
        let (status, body) = serve.get_json(path).await;
        assert_error(status, &body, 404);
        assert_eq!(body["error"]["code"], "session_not_found", "{path}");
    }
    for (path, body) in [
        ("/api/sessions/ses_nope/turns", json!({"input": "x"})),
        ("/api/sessions/ses_nope/interrupt", json!({})),
        (
            "/api/sessions/ses_nope/clarify/clr_1",
            json!({"answer": "1"}),
        ),
        ("/api/sessions/ses_nope/agents/a1/cancel", json!({})),
    ] {
        let (status, _, body) = serve.post_json(path, &body).await;
        assert_error(status, &body, 404);
    }
    serve.stop().await;
}

/// Starts a turn that waits in a `sleep` command; returns the session id.
async fn start_sleeping_turn(serve: &Serve, needle: &str) -> String {
    let (status, _, created) = serve.post_json("/api/sessions", &json!({})).await;
    assert_eq!(status, 201);
    let id = created["id"].as_str().unwrap().to_owned();
    let (status, _, accepted) = serve
        .post_json(
            &format!("/api/sessions/{id}/turns"),
            &json!({"input": needle}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    assert_eq!(accepted["session_id"], id.as_str());
    id
}

fn sleeper(needle: &str) -> Script {
    Script::new().conversation(
        needle,
        vec![
            Reply::tool("terminal", json!({"command": "sleep 30"})),
            Reply::text("woke up"),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_session_is_409_and_an_interrupt_stops_its_turn() {
    let serve = Serve::start(sleeper("take a nap")).await;
    let id = start_sleeping_turn(&serve, "take a nap").await;
    // Follow the turn from its start.
    let response = serve
        .get(&format!("/api/sessions/{id}/events?after=0"))
        .send()
        .await
        .unwrap();
    let mut events = SseReader::new(response);
    events.until_type("tool.started").await;

    let (status, _, body) = serve
        .post_json(
            &format!("/api/sessions/{id}/turns"),
            &json!({"input": "again"}),
        )
        .await;
    assert_error(status, &body, 409);
    assert_eq!(body["error"]["code"], "session_busy");
    let response = serve
        .post("/v1/chat/completions")
        .header("X-Herald-Session", &id)
        .json(&chat("hello?", false))
        .send()
        .await
        .unwrap();
    let (status, _, body) = common::parts(response).await;
    assert_error(status, &body, 409);
    let (_, info) = serve.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!(info["busy"], true);

    let started = std::time::Instant::now();
    let (status, _, body) = serve
        .post_json(&format!("/api/sessions/{id}/interrupt"), &json!({}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["interrupted"], true);
    let seen = events.until_type("run.completed").await;
    let (_, end) = seen.last().unwrap();
    assert_eq!(end["status"], "interrupted", "{end}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // Idle again: nothing to interrupt, and a new turn is accepted.
    let (_, _, body) = serve
        .post_json(&format!("/api/sessions/{id}/interrupt"), &json!({}))
        .await;
    assert_eq!(body["interrupted"], false);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_replays_from_last_event_id_without_gaps_or_repeats() {
    let serve = Serve::start(Script::new().conversation(
        "read two files",
        vec![
            Reply::tool("read_file", json!({"path": "a.txt"})),
            Reply::tool("read_file", json!({"path": "b.txt"})),
            Reply::text("both read"),
        ],
    ))
    .await;
    std::fs::write(serve.work_path().join("a.txt"), "A\n").unwrap();
    std::fs::write(serve.work_path().join("b.txt"), "B\n").unwrap();
    let (_, _, created) = serve.post_json("/api/sessions", &json!({})).await;
    let id = created["id"].as_str().unwrap().to_owned();
    // A live follower from now on, before the turn.
    let live = serve
        .get(&format!("/api/sessions/{id}/events"))
        .send()
        .await
        .unwrap();
    let mut live = SseReader::new(live);
    let (status, _, accepted) = serve
        .post_json(
            &format!("/api/sessions/{id}/turns"),
            &json!({"input": "read two files"}),
        )
        .await;
    assert_eq!(status, 202);
    let after = accepted["after"].as_u64().unwrap();
    let live_events = live.until_type("run.completed").await;
    assert_eq!(live_events.last().unwrap().1["final_response"], "both read");

    // Everything stored since the turn's start, with ids.
    let replay = serve
        .get(&format!("/api/sessions/{id}/events?after={after}"))
        .send()
        .await
        .unwrap();
    let all = SseReader::new(replay).until_type("run.completed").await;
    let ids: Vec<u64> = all
        .iter()
        .map(|(e, v)| {
            let id: u64 = e.id.as_deref().unwrap().parse().unwrap();
            assert_eq!(v["seq"], id);
            id
        })
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(ids[0] > after);
    let types: Vec<&str> = all
        .iter()
        .map(|(_, v)| v["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types.iter().filter(|t| **t == "tool.started").count(),
        2,
        "{types:?}"
    );
    // The live follower saw the same numbered events.
    let live_ids: Vec<u64> = live_events
        .iter()
        .filter_map(|(e, _)| e.id.as_deref().map(|i| i.parse().unwrap()))
        .collect();
    assert_eq!(live_ids, ids);

    // Resume from the middle with Last-Event-ID: exactly the rest.
    let middle = ids[ids.len() / 2];
    let resumed = serve
        .get(&format!("/api/sessions/{id}/events"))
        .header("Last-Event-ID", middle.to_string())
        .send()
        .await
        .unwrap();
    let rest = SseReader::new(resumed).until_type("run.completed").await;
    let rest_ids: Vec<u64> = rest
        .iter()
        .map(|(e, _)| e.id.as_deref().unwrap().parse().unwrap())
        .collect();
    let expected: Vec<u64> = ids.iter().copied().filter(|i| *i > middle).collect();
    assert_eq!(rest_ids, expected);
    let response = serve
        .get(&format!("/api/sessions/{id}/events"))
        .header("Last-Event-ID", "soon")
        .send()
        .await
        .unwrap();
    let (status, _, body) = common::parts(response).await;
    assert_error(status, &body, 400);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clarify_question_is_answered_over_the_api() {
    let serve = Serve::start(Script::new().conversation(
        "pick a colour",
        vec![
            Reply::tool(
                "clarify",
                json!({"question": "Which colour?", "choices": ["red", "blue"], "allow_freetext": false}),
            ),
            Reply::text("blue it is"),
        ],
    ))
    .await;
    let (_, _, created) = serve
        .post_json("/api/sessions", &json!({"clarify": "ask"}))
        .await;
    let id = created["id"].as_str().unwrap().to_owned();
    let events = serve
        .get(&format!("/api/sessions/{id}/events?after=0"))
        .send()
        .await
        .unwrap();
    let mut events = SseReader::new(events);
    let (status, _, _) = serve
        .post_json(
            &format!("/api/sessions/{id}/turns"),
            &json!({"input": "pick a colour"}),
        )
        .await;
    assert_eq!(status, 202);
    let seen = events.until_type("clarify.requested").await;
    let request_id = seen.last().unwrap().1["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, info) = serve.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!(info["open_questions"], json!([request_id]));
    // Listed with what the event said, for a front end that joins late.
    let listed = json!({"questions": [{
        "request_id": request_id,
        "agent_id": "root",
        "question": "Which colour?",
        "choices": ["red", "blue"],
        "allow_freetext": false
    }]});
    let (status, questions) = serve
        .get_json(&format!("/api/sessions/{id}/questions"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(questions, listed);
    let path = format!("/api/sessions/{id}/clarify/{request_id}");
    let (status, _, body) = serve.post_json(&path, &json!({"answer": "7"})).await;
    assert_error(status, &body, 404);
    // A refused answer leaves the question open, unchanged.
    let (_, questions) = serve
        .get_json(&format!("/api/sessions/{id}/questions"))
        .await;
    assert_eq!(questions, listed);
    let (status, body) = serve.get_json("/api/sessions/ses_nope/questions").await;
    assert_error(status, &body, 404);
    let (status, _, body) = serve.post_json(&path, &json!({"answer": "2"})).await;
    assert_eq!(status, 200, "{body}");
    let (_, questions) = serve
        .get_json(&format!("/api/sessions/{id}/questions"))
        .await;
    assert_eq!(questions, json!({"questions": []}));
    let seen = events.until_type("run.completed").await;
    assert_eq!(seen.last().unwrap().1["final_response"], "blue it is");
    let last = serve.upstream.requests().pop().unwrap();
    assert!(last.body.to_string().contains("blue"), "{}", last.body);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_request_is_listed_and_answered_over_the_api() {
    let serve = Serve::start(Script::new().conversation(
        "clear the build",
        vec![
            Reply::tool("terminal", json!({"command": "rm -rf build_dir"})),
            Reply::tool("terminal", json!({"command": "rm -rf other_dir"})),
            Reply::text("cleared"),
        ],
    ))
    .await;
    let work = serve.work_path();
    std::fs::create_dir(work.join("build_dir")).unwrap();
    std::fs::create_dir(work.join("other_dir")).unwrap();
    let (_, _, created) = serve.post_json("/api/sessions", &json!({})).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let events = serve
        .get(&format!("/api/sessions/{id}/events?after=0"))
        .send()
        .await
        .unwrap();
    let mut events = SseReader::new(events);
    let (status, _, _) = serve
        .post_json(
            &format!("/api/sessions/{id}/turns"),
            &json!({"input": "clear the build"}),
        )
        .await;
    assert_eq!(status, 202);
    let seen = events.until_type("approval.requested").await;
    let request = seen.last().unwrap().1.clone();
    let request_id = request["request_id"].as_str().unwrap().to_owned();
    assert_eq!(request["tool"], "terminal");
    assert!(
        request["arguments"]
            .as_str()
            .unwrap()
            .contains("rm -rf build_dir")
    );
    assert!(
        work.join("build_dir").exists(),
        "it must wait for the answer"
    );
    let (status, listed) = serve
        .get_json(&format!("/api/sessions/{id}/approvals"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(listed["approvals"][0]["request_id"], request_id.as_str());
    assert_eq!(listed["approvals"][0]["agent_id"], "root");
    // A bad decision word is 400 and leaves the request waiting.
    let path = format!("/api/sessions/{id}/approvals/{request_id}");
    let (status, _, body) = serve
        .post_json(&path, &json!({"decision": "perhaps"}))
        .await;
    assert_error(status, &body, 400);
    let (status, _, body) = serve
        .post_json(
            &format!("/api/sessions/{id}/approvals/apr_999"),
            &json!({"decision": "once"}),
        )
        .await;
    assert_error(status, &body, 404);
    let (status, _, body) = serve.post_json(&path, &json!({"decision": "once"})).await;
    assert_eq!(status, 200, "{body}");
    // The second call asks again (once is once); deny it with a message.
    let seen = events.until_type("approval.requested").await;
    let second = seen.last().unwrap().1["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _, body) = serve
        .post_json(
            &format!("/api/sessions/{id}/approvals/{second}"),
            &json!({"decision": "deny", "message": "keep that one"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let seen = events.until_type("run.completed").await;
    assert_eq!(seen.last().unwrap().1["final_response"], "cleared");
    assert!(!work.join("build_dir").exists());
    assert!(work.join("other_dir").exists());
    let last = serve.upstream.requests().pop().unwrap();
    assert!(
        last.body.to_string().contains("keep that one"),
        "{}",
        last.body
    );
    let (_, listed) = serve
        .get_json(&format!("/api/sessions/{id}/approvals"))
        .await;
    assert_eq!(listed["approvals"], json!([]));
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_of_a_session_are_listed_and_unknown_ones_cannot_be_cancelled() {
    let serve = Serve::start(Script::new()).await;
    let (_, _, created) = serve.post_json("/api/sessions", &json!({})).await;
    let id = created["id"].as_str().unwrap();
    let (status, body) = serve.get_json(&format!("/api/sessions/{id}/agents")).await;
    assert_eq!(status, 200);
    assert_eq!(body["agents"], json!([]));
    let (status, _, body) = serve
        .post_json(
            &format!("/api/sessions/{id}/agents/nobody/cancel"),
            &json!({}),
        )
        .await;
    assert_error(status, &body, 404);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_beyond_max_concurrent_turns_are_429() {
    let serve = Serve::start_with(sleeper("nap one"), |config| {
        config.max_concurrent_turns = 1;
    })
    .await;
    let id = start_sleeping_turn(&serve, "nap one").await;
    let (status, _, body) = serve
        .post_json("/v1/chat/completions", &chat("another", false))
        .await;
    assert_error(status, &body, 429);
    assert_eq!(body["error"]["code"], "too_many_turns");
    let (status, _, body) = serve.post_json("/api/sessions", &json!({})).await;
    assert_eq!(status, 201, "opening a session is not a turn: {body}");
    serve
        .post_json(&format!("/api/sessions/{id}/interrupt"), &json!({}))
        .await;
    common::eventually("the slot to be free", async || {
        let (_, info) = serve.get_json(&format!("/api/sessions/{id}")).await;
        info["busy"] == false
    })
    .await;
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_413() {
    let serve = Serve::start_with(Script::new(), |config| config.body_limit = 1024).await;
    let big = chat(&"x".repeat(4096), false);
    let (status, _, body) = serve.post_json("/v1/chat/completions", &big).await;
    assert_error(status, &body, 413);
    let (status, _, body) = serve
        .post_json("/api/sessions", &json!({"fork": "x".repeat(4096)}))
        .await;
    assert_error(status, &body, 413);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_address_needs_an_explicit_token() {
    let upstream = herald_testkit::ScriptedServer::start(Script::new())
        .await
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let settings = common::settings(&upstream, &home, &work);
    let store = herald_core::StoreHandle::open(&home.path().join("state.db")).unwrap();
    let mut config = ServeConfig::new(settings, store, "generated".into());
    config.host = "0.0.0.0".into();
    config.port = 0;
    config.token_explicit = false;
    match Server::bind(config).await {
        Err(ServeError::PublicWithoutToken(_)) => {}
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("bound a public address with a generated token"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_describes_every_route() {
    let serve = Serve::start(Script::new()).await;
    let (status, doc) = serve.get_json("/api/openapi.json").await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/v1/models", "get"),
        ("/v1/chat/completions", "post"),
        ("/v1/responses", "post"),
        ("/api/sessions", "post"),
        ("/api/sessions", "get"),
        ("/api/sessions/search", "get"),
        ("/api/sessions/{id}", "get"),
        ("/api/sessions/{id}", "delete"),
        ("/api/sessions/{id}/turns", "post"),
        ("/api/sessions/{id}/events", "get"),
        ("/api/sessions/{id}/interrupt", "post"),
        ("/api/sessions/{id}/clarify/{request_id}", "post"),
        ("/api/sessions/{id}/questions", "get"),
        ("/api/sessions/{id}/agents", "get"),
        ("/api/sessions/{id}/agents/{agent_id}/cancel", "post"),
        ("/api/sessions/{id}/agents/{agent_id}/messages", "post"),
        ("/api/sessions/{id}/agents/{agent_id}/followup", "post"),
        ("/api/openapi.json", "get"),
        ("/api/doctor", "get"),
    ] {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} missing"
        );
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutting_down_ends_open_sessions_and_releases_them() {
    let mut serve = Serve::start(sleeper("long nap")).await;
    let id = start_sleeping_turn(&serve, "long nap").await;
    common::eventually("the turn to run its tool", async || {
        serve.upstream.request_count() == 1
    })
    .await;
    let started = std::time::Instant::now();
    serve.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(15));
    let store = herald_core::StoreHandle::open(&serve.home.path().join("state.db")).unwrap();
    let key = id.clone();
    let record = store
        .call(move |s| s.get_session(&key))
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(record.ended_at.is_some(), "{record:?}");
    let key = id.clone();
    let holder = store
        .call(move |s| s.lease_holder(&key))
        .await
        .unwrap()
        .unwrap();
    assert!(holder.is_none(), "{holder:?}");
    let events = serve.stored_events(&id).await;
    let end = events
        .iter()
        .rev()
        .find(|e| e["type"] == "run.completed")
        .unwrap();
    assert_eq!(end["status"], "interrupted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_is_off_unless_origins_are_configured() {
    let preflight = |serve: &Serve| {
        common::http()
            .request(reqwest::Method::OPTIONS, format!("{}/v1/models", serve.url))
            .header("Origin", "http://app.test")
            .header("Access-Control-Request-Method", "GET")
            .header("Access-Control-Request-Headers", "authorization")
            .send()
    };
    let off = Serve::start(Script::new()).await;
    let response = preflight(&off).await.unwrap();
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    let response = off
        .get("/v1/models")
        .header("Origin", "http://app.test")
        .send()
        .await
        .unwrap();
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    off.stop().await;

    let on = Serve::start_with(Script::new(), |config| {
        config.cors_origins = vec!["http://app.test".into()];
    })
    .await;
    let response = preflight(&on).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "http://app.test"
    );
    let response = on
        .get("/v1/models")
        .header("Origin", "http://app.test")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "http://app.test"
    );
    // The token is still required, and another origin gets no grant.
    let response = common::http()
        .get(format!("{}/v1/models", on.url))
        .header("Origin", "http://app.test")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let response = on
        .get("/v1/models")
        .header("Origin", "http://evil.test")
        .send()
        .await
        .unwrap();
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    on.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_carries_subagent_events_and_agents_are_listed() {
    let serve = Serve::start(
        Script::new()
            .conversation(
                "delegate a look",
                vec![
                    Reply::tool("delegate_task", json!({"goal": "child: look around"})),
                    Reply::text("parent done"),
                ],
            )
            .conversation(
                "child: look around",
                vec![
                    Reply::tool("terminal", json!({"command": "echo hi"})),
                    Reply::text("child summary"),
                ],
            ),
    )
    .await;
    let (_, _, created) = serve.post_json("/api/sessions", &json!({})).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let (status, _, result) = serve
        .post_json(
            &format!("/api/sessions/{id}/turns?wait=true"),
            &json!({"input": "delegate a look"}),
        )
        .await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["final_response"], "parent done");
    let replay = serve
        .get(&format!("/api/sessions/{id}/events?after=0"))
        .send()
        .await
        .unwrap();
    let events = SseReader::new(replay).until_type("run.completed").await;
    let types: Vec<&str> = events
        .iter()
        .map(|(_, v)| v["type"].as_str().unwrap())
        .collect();
    for expected in [
        "session.started",
        "subagent.started",
        "subagent.tool",
        "subagent.completed",
    ] {
        assert!(types.contains(&expected), "{expected} missing: {types:?}");
    }
    let completed = events
        .iter()
        .find(|(_, v)| v["type"] == "subagent.completed")
        .unwrap();
    assert_eq!(completed.1["summary"], "child summary");
    assert!(events.iter().all(|(e, _)| e.id.is_some()));
    let (status, agents) = serve.get_json(&format!("/api/sessions/{id}/agents")).await;
    assert_eq!(status, 200);
    let agents = agents["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1, "{agents:?}");
    assert_eq!(agents[0]["goal"], "child: look around");
    assert_ne!(agents[0]["status"], "running");
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_ops_start_a_turn_interrupt_it_and_bad_ops_change_nothing() {
    let serve = Serve::start(sleeper("take a nap")).await;
    let (status, _, created) = serve.post_json("/api/sessions", &json!({})).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let ops = format!("/api/sessions/{id}/ops");

    // Malformed operations: 400 with a JSON error, and no request upstream.
    for bad in [
        json!({"type": "launch"}),
        json!({"type": "user_turn"}),
        json!({"type": "approval_decision", "request_id": "a", "decision": "maybe"}),
        json!({"type": "interrupt", "extra": true}),
        json!({"type": "user_turn", "text": "   "}),
    ] {
        let (status, _, body) = serve.post_json(&ops, &bad).await;
        assert_error(status, &body, 400);
    }
    assert_eq!(serve.upstream.request_count(), 0);
    // Answering a request that does not exist: 409 (the session, which the
    // URL names, exists; the request the body names does not).
    let (status, _, body) = serve
        .post_json(
            &ops,
            &json!({"type": "approval_decision", "request_id": "apr_9", "decision": "once"}),
        )
        .await;
    assert_error(status, &body, 409);
    assert_eq!(body["error"]["code"], "request_not_found");
    // Steering with no turn running: well-formed, refused in the session's
    // state.
    let (status, _, body) = serve
        .post_json(&ops, &json!({"type": "steer", "text": "faster"}))
        .await;
    assert_error(status, &body, 409);
    assert_eq!(body["error"]["code"], "op_refused");
    // Compacting an empty conversation is queued like any compaction; that
    // it had nothing to do arrives as an error event with its id.
    let (status, _, queued) = serve.post_json(&ops, &json!({"type": "compact"})).await;
    assert_eq!(status, 202, "{queued}");
    let response = serve
        .get(&format!(
            "/api/sessions/{id}/events?after={}",
            queued["after"].as_u64().unwrap()
        ))
        .send()
        .await
        .unwrap();
    let seen = SseReader::new(response).until_type("error").await;
    let (_, error) = seen.last().unwrap();
    assert_eq!(error["submission_id"], queued["submission_id"], "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("not compacted"),
        "{error}"
    );

    // A turn through the op, followed on the event stream, then interrupted.
    let (status, _, accepted) = serve
        .post_json(&ops, &json!({"type": "user_turn", "text": "take a nap"}))
        .await;
    assert_eq!(status, 202, "{accepted}");
    assert!(
        accepted["submission_id"]
            .as_str()
            .unwrap()
            .starts_with("sub_")
    );
    let after = accepted["after"].as_u64().unwrap();
    let response = serve
        .get(&format!("/api/sessions/{id}/events?after={after}"))
        .send()
        .await
        .unwrap();
    let mut events = SseReader::new(response);
    events.until_type("tool.started").await;
    let (status, _, body) = serve
        .post_json(&ops, &json!({"type": "user_turn", "text": "again"}))
        .await;
    assert_error(status, &body, 409);
    let (status, _, body) = serve.post_json(&ops, &json!({"type": "interrupt"})).await;
    assert_eq!(status, 202, "{body}");
    let seen = events.until_type("run.completed").await;
    let (_, end) = seen.last().unwrap();
    assert_eq!(end["status"], "interrupted", "{end}");
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_op_for_no_such_session_is_404() {
    let serve = Serve::start(Script::new()).await;
    let (status, _, body) = serve
        .post_json("/api/sessions/ses_nope/ops", &json!({"type": "compact"}))
        .await;
    assert_error(status, &body, 404);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_subagent_is_messaged_and_a_finished_one_followed_up() {
    let script = Script::new()
        .conversation(
            "http worker",
            vec![
                Reply::tool("terminal", json!({"command": "sleep 2"})),
                Reply::text("worker done"),
                Reply::text("worker answers the follow-up"),
            ],
        )
        .conversation(
            "coordinate over http",
            vec![
                Reply::tool(
                    "delegate_task",
                    json!({"background": true, "goal": "http worker: nap"}),
                ),
                Reply::text("dispatched"),
                Reply::text("noted"),
            ],
        );
    let serve = Serve::start(script).await;
    let id = start_sleeping_turn(&serve, "coordinate over http").await;
    let response = serve
        .get(&format!("/api/sessions/{id}/events?after=0"))
        .send()
        .await
        .unwrap();
    let mut events = SseReader::new(response);
    let seen = events.until_type("subagent.tool").await;
    let agent = seen.last().unwrap().1["agent_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let messages = format!("/api/sessions/{id}/agents/{agent}/messages");
    let followup = format!("/api/sessions/{id}/agents/{agent}/followup");

    // Refused, changing nothing: nobody, an empty text, a follow-up of a
    // running agent, `subtree` on a follow-up.
    let (status, _, body) = serve
        .post_json(
            &format!("/api/sessions/{id}/agents/nobody/messages"),
            &json!({"message": "hi"}),
        )
        .await;
    assert_error(status, &body, 404);
    let (status, _, body) = serve.post_json(&messages, &json!({"message": " "})).await;
    assert_error(status, &body, 400);
    let (status, _, body) = serve
        .post_json(&followup, &json!({"message": "done yet?"}))
        .await;
    assert_error(status, &body, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still running")
    );
    let (status, _, body) = serve
        .post_json(&followup, &json!({"message": "x", "subtree": true}))
        .await;
    assert_error(status, &body, 400);

    let (status, _, body) = serve
        .post_json(&messages, &json!({"message": "use tabs"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sent"][0]["agent_id"], agent.as_str());
    assert_eq!(body["sent"][0]["state"], "queued");
    let receipt = body["sent"][0]["receipt"].as_str().unwrap().to_owned();
    let seen = events.until_type("subagent.completed").await;
    let states: Vec<&str> = seen
        .iter()
        .filter(|(_, e)| e["type"] == "agent.message" && e["receipt"] == receipt.as_str())
        .map(|(_, e)| e["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["queued", "delivered"]);
    assert!(
        serve
            .upstream
            .requests()
            .iter()
            .any(|r| r.conversation.contains("http worker")
                && r.body.to_string().contains("use tabs"))
    );

    // Finished: a message is refused with the way forward; a follow-up runs.
    let (status, _, body) = serve.post_json(&messages, &json!({"message": "hi"})).await;
    assert_error(status, &body, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("followup")
    );
    let (status, _, body) = serve
        .post_json(&followup, &json!({"message": "and then?"}))
        .await;
    assert_eq!(status, 200, "{body}");
    let seen = events.until_type("subagent.completed").await;
    assert_eq!(seen.last().unwrap().1["agent_id"], agent.as_str());
    assert!(
        seen.last().unwrap().1["summary"]
            .as_str()
            .unwrap()
            .contains("worker answers the follow-up")
    );
    let last = serve
        .upstream
        .requests()
        .into_iter()
        .rfind(|r| r.conversation.contains("http worker"))
        .unwrap();
    let body = last.body.to_string();
    assert!(
        body.contains("worker done") && body.contains("and then?"),
        "{body}"
    );
    serve.stop().await;
}
