//! The OpenAI-compatible endpoints against the scripted model server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{MODEL, Serve, SseReader, assert_error, chat, parse_sse};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

fn read_then_answer(needle: &str, answer: &str) -> Script {
    Script::new().conversation(
        needle,
        vec![
            Reply::tool("read_file", json!({"path": "notes.txt"})),
            Reply::text(answer),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_list_the_configured_model() {
    let serve = Serve::start(Script::new()).await;
    let (status, body) = serve.get_json("/v1/models").await;
    assert_eq!(status, 200);
    assert_eq!(body["object"], "list");
    let ids: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [MODEL, "herald"]);
    assert!(
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["object"] == "model")
    );
    let (status, body) = serve.get_json("/v1/models/nope").await;
    assert_error(status, &body, 404);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_completion_runs_the_tool_loop_and_answers_with_the_final_message() {
    let serve = Serve::start(read_then_answer("summarise notes", "The notes say hi.")).await;
    std::fs::write(serve.work_path().join("notes.txt"), "hi\n").unwrap();
    let (status, session, body) = serve
        .post_json("/v1/chat/completions", &chat("summarise notes", false))
        .await;
    assert_eq!(status, 200, "{body}");
    let session = session.expect("X-Herald-Session header");
    assert!(session.starts_with("ses_"), "{session}");
    assert_eq!(body["object"], "chat.completion");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(body["model"], MODEL);
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "The notes say hi.");
    assert_eq!(choice["finish_reason"], "stop");
    let usage = &body["usage"];
    let (prompt, completion) = (
        usage["prompt_tokens"].as_u64().unwrap(),
        usage["completion_tokens"].as_u64().unwrap(),
    );
    assert!(prompt > 0 && completion > 0, "{usage}");
    assert_eq!(usage["total_tokens"].as_u64().unwrap(), prompt + completion);
    // The tool ran server-side: two model requests, the second with its result.
    let requests = serve.upstream.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].body.to_string().contains("hi\\n"),
        "{}",
        requests[1].body
    );
    // Client system messages are not sent: herald has its own prompt.
    assert!(!requests[0].body.to_string().contains("client-system-zq9"));
    // The session is stored and stays open here.
    let (status, info) = serve.get_json(&format!("/api/sessions/{session}")).await;
    assert_eq!(status, 200);
    assert_eq!(info["open"], true);
    assert_eq!(info["busy"], false);
    assert_eq!(info["source"], "api");
    serve.stop().await;
}

/// The chunks of a streamed chat completion, checked strictly: every event
/// is a valid `chat.completion.chunk` (or the final `[DONE]`), comments
/// aside. Returns (content, finish reason, usage chunk, comments).
fn check_chunks(body: &str, include_usage: bool) -> (String, String, Option<Value>, Vec<String>) {
    let events = parse_sse(body);
    let mut comments = Vec::new();
    let mut data = Vec::new();
    for event in &events {
        assert!(event.event.is_none() && event.id.is_none(), "{event:?}");
        comments.extend(event.comments.iter().cloned());
        if let Some(d) = &event.data {
            data.push(d.clone());
        }
    }
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{body}");
    data.pop();
    let chunks: Vec<Value> = data
        .iter()
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("bad chunk {d}: {e}")))
        .collect();
    let id = chunks[0]["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("chatcmpl-"));
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk", "{chunk}");
        assert_eq!(chunk["id"], id.as_str());
        assert_eq!(chunk["model"], MODEL);
        assert!(chunk["created"].as_u64().is_some());
        assert_eq!(chunk.get("usage").is_some(), include_usage, "{chunk}");
    }
    let first = &chunks[0]["choices"][0];
    assert_eq!(first["delta"]["role"], "assistant");
    let usage = if include_usage {
        let last = chunks.last().unwrap();
        assert_eq!(last["choices"], json!([]));
        Some(last["usage"].clone())
    } else {
        None
    };
    let with_choices = &chunks[..chunks.len() - usize::from(include_usage)];
    let finish = with_choices.last().unwrap()["choices"][0].clone();
    assert_eq!(finish["delta"], json!({}));
    let reason = finish["finish_reason"].as_str().unwrap().to_owned();
    let mut content = String::new();
    for chunk in &with_choices[..with_choices.len() - 1] {
        let choice = &chunk["choices"][0];
        assert_eq!(choice["index"], 0);
        assert!(choice["finish_reason"].is_null(), "{chunk}");
        if include_usage {
            assert!(chunk["usage"].is_null());
        }
        content.push_str(choice["delta"]["content"].as_str().unwrap());
    }
    (content, reason, usage, comments)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_chat_completion_sends_proper_chunks_and_tool_progress_as_comments() {
    let answer = "Streaming works: a long enough answer to arrive in several pieces.";
    let serve = Serve::start(read_then_answer("stream the notes", answer)).await;
    std::fs::write(serve.work_path().join("notes.txt"), "hi\n").unwrap();
    let mut request = chat("stream the notes", true);
    request["stream_options"] = json!({"include_usage": true});
    let response = serve
        .post("/v1/chat/completions")
        .json(&request)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let session = response.headers()["x-herald-session"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = response.text().await.unwrap();
    let (content, reason, usage, comments) = check_chunks(&body, true);
    assert_eq!(content, answer);
    assert_eq!(reason, "stop");
    let usage = usage.unwrap();
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );
    assert!(usage["completion_tokens"].as_u64().unwrap() > 0);
    assert!(
        comments.contains(&"tool read_file".to_owned()),
        "{comments:?}"
    );
    // Several content chunks: the text streamed from the model's deltas.
    let content_chunks = body.matches("\"content\":\"").count();
    assert!(content_chunks > 2, "{body}");
    assert!(session.starts_with("ses_"));

    // Without include_usage there is no usage anywhere.
    let serve2 = Serve::start(Script::new().responder(|_| Reply::text("plain"))).await;
    let body = serve2
        .post("/v1/chat/completions")
        .json(&chat("no usage please", true))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let (content, _, usage, _) = check_chunks(&body, false);
    assert_eq!(content, "plain");
    assert!(usage.is_none());
    serve.stop().await;
    serve2.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_header_or_metadata_continues_a_session() {
    let serve = Serve::start(Script::new().conversation(
        "remember the number 7",
        vec![
            Reply::text("ok"),
            Reply::text("it was 7"),
            Reply::text("still 7"),
        ],
    ))
    .await;
    let (status, session, _) = serve
        .post_json(
            "/v1/chat/completions",
            &chat("remember the number 7", false),
        )
        .await;
    assert_eq!(status, 200);
    let session = session.unwrap();
    let response = serve
        .post("/v1/chat/completions")
        .header("X-Herald-Session", &session)
        .json(&chat("what was it?", false))
        .send()
        .await
        .unwrap();
    let (status, again, body) = common::parts(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(again.as_deref(), Some(session.as_str()));
    assert_eq!(body["choices"][0]["message"]["content"], "it was 7");
    let mut request = chat("and now?", false);
    request["metadata"] = json!({"session_id": session});
    let (status, again, body) = serve.post_json("/v1/chat/completions", &request).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(again.as_deref(), Some(session.as_str()));
    assert_eq!(body["choices"][0]["message"]["content"], "still 7");
    // The third request carried the whole conversation.
    let last = serve.upstream.requests().pop().unwrap();
    let text = last.body.to_string();
    assert!(
        text.contains("remember the number 7") && text.contains("what was it?"),
        "{text}"
    );
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_chat_requests_get_openai_errors() {
    let serve = Serve::start(Script::new()).await;
    let unknown_session = serve
        .post("/v1/chat/completions")
        .header("X-Herald-Session", "ses_nope")
        .json(&chat("hello", false))
        .send()
        .await
        .unwrap();
    let (status, _, body) = common::parts(unknown_session).await;
    assert_error(status, &body, 404);
    assert_eq!(body["error"]["code"], "session_not_found");
    let mut wrong_model = chat("hello", false);
    wrong_model["model"] = json!("gpt-9");
    let (status, _, body) = serve.post_json("/v1/chat/completions", &wrong_model).await;
    assert_error(status, &body, 404);
    assert_eq!(body["error"]["code"], "model_not_found");
    let no_user = json!({"model": MODEL, "messages": [{"role": "system", "content": "x"}]});
    let (status, _, body) = serve.post_json("/v1/chat/completions", &no_user).await;
    assert_error(status, &body, 400);
    let response = serve
        .post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    let (status, _, body) = common::parts(response).await;
    assert_error(status, &body, 400);
    // No model request was made for any of them.
    assert_eq!(serve.upstream.request_count(), 0);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_is_a_500_error_and_an_error_event_in_a_stream() {
    let serve = Serve::start(Script::new()).await;
    serve
        .upstream
        .skip_invariants("every request is refused on purpose");
    // The script has no reply: the model server answers 400, which stops the turn.
    let (status, session, body) = serve
        .post_json("/v1/chat/completions", &chat("nobody scripted this", false))
        .await;
    assert_error(status, &body, 500);
    assert_eq!(body["error"]["code"], "turn_failed");
    assert!(session.is_some());
    let body = serve
        .post("/v1/chat/completions")
        .json(&chat("nobody scripted this either", true))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let events = parse_sse(&body);
    let data: Vec<&str> = events.iter().filter_map(|e| e.data.as_deref()).collect();
    assert_eq!(data.last(), Some(&"[DONE]"));
    let error: Value = serde_json::from_str(data[data.len() - 2]).unwrap();
    assert_eq!(error["error"]["code"], "turn_failed", "{error}");
    serve.stop().await;
}

/// The `type`s of a Responses stream, and its text.
fn check_response_events(body: &str) -> (Vec<String>, String, Value) {
    let events = parse_sse(body);
    let mut types = Vec::new();
    let mut text = String::new();
    let mut last = Value::Null;
    for (i, event) in events.iter().filter(|e| e.data.is_some()).enumerate() {
        let value: Value = serde_json::from_str(event.data.as_deref().unwrap()).unwrap();
        let ty = value["type"].as_str().unwrap().to_owned();
        assert_eq!(event.event.as_deref(), Some(ty.as_str()));
        assert_eq!(value["sequence_number"], i as u64);
        if ty == "response.output_text.delta" {
            text.push_str(value["delta"].as_str().unwrap());
        }
        types.push(ty);
        last = value;
    }
    (types, text, last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_continue_with_previous_response_id_streamed_or_not() {
    let serve = Serve::start(Script::new().conversation(
        "my name is Ada",
        vec![
            Reply::text("Hello Ada."),
            Reply::text("You are Ada."),
            Reply::text("Still Ada."),
        ],
    ))
    .await;
    let (status, session, first) = serve
        .post_json(
            "/v1/responses",
            &json!({"model": MODEL, "input": "my name is Ada"}),
        )
        .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["object"], "response");
    assert_eq!(first["status"], "completed");
    assert_eq!(first["output"][0]["type"], "message");
    assert_eq!(first["output"][0]["content"][0]["type"], "output_text");
    assert_eq!(first["output"][0]["content"][0]["text"], "Hello Ada.");
    assert!(first["usage"]["input_tokens"].as_u64().unwrap() > 0);
    let id = first["id"].as_str().unwrap();
    assert!(id.starts_with("resp_"));

    let request = json!({
        "model": MODEL,
        "previous_response_id": id,
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "who am I?"}]}],
    });
    let (status, again, second) = serve.post_json("/v1/responses", &request).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(again, session);
    assert_eq!(second["previous_response_id"], id);
    assert_eq!(second["output"][0]["content"][0]["text"], "You are Ada.");

    let request = json!({
        "model": MODEL,
        "previous_response_id": second["id"],
        "input": "again?",
        "stream": true,
    });
    let response = serve
        .post("/v1/responses")
        .json(&request)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["x-herald-session"].to_str().ok(),
        session.as_deref()
    );
    let body = response.text().await.unwrap();
    let (types, text, last) = check_response_events(&body);
    assert_eq!(
        types.first().map(String::as_str),
        Some("response.created"),
        "{types:?}"
    );
    for expected in [
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ] {
        assert!(
            types.iter().any(|t| t == expected),
            "{expected} missing: {types:?}"
        );
    }
    assert_eq!(types.last().map(String::as_str), Some("response.completed"));
    assert_eq!(text, "Still Ada.");
    assert_eq!(last["response"]["status"], "completed");
    assert_eq!(
        last["response"]["output"][0]["content"][0]["text"],
        "Still Ada."
    );
    assert!(last["response"]["usage"]["output_tokens"].as_u64().unwrap() > 0);

    let unknown = json!({"model": MODEL, "previous_response_id": "resp_ses_nope_1", "input": "x"});
    let (status, _, body) = serve.post_json("/v1/responses", &unknown).await;
    assert_error(status, &body, 404);
    assert_eq!(body["error"]["code"], "previous_response_not_found");
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_turn_does_not_lose_the_turn() {
    let serve = Serve::start(read_then_answer("slow work", "finished anyway")).await;
    std::fs::write(serve.work_path().join("notes.txt"), "hi\n").unwrap();
    serve.upstream.set_latency(Duration::from_millis(700));
    let response = serve
        .post("/v1/chat/completions")
        .json(&chat("slow work", true))
        .send()
        .await
        .unwrap();
    let session = response.headers()["x-herald-session"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut reader = SseReader::new(response);
    // The role chunk arrives at once; then the client goes away.
    let (_, first) = reader.next_json().await.unwrap();
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    drop(reader);
    common::eventually("the turn to complete and be stored", async || {
        serve
            .stored_events(&session)
            .await
            .iter()
            .any(|e| e["type"] == "run.completed" && e["final_response"] == "finished anyway")
    })
    .await;
    assert_eq!(serve.upstream.request_count(), 2);
    let (_, info) = serve.get_json(&format!("/api/sessions/{session}")).await;
    assert_eq!(info["busy"], false);
    assert!(info["message_count"].as_u64().unwrap() >= 4, "{info}");
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_chat_completions_each_get_their_own_session() {
    let serve = Serve::start(
        Script::new()
            .responder(|view| Reply::text(format!("answer to {}", view.conversation.trim()))),
    )
    .await;
    serve.upstream.set_latency(Duration::from_millis(100));
    let requests = (0..8).map(|i| {
        let serve = &serve;
        async move {
            let text = format!("question {i}");
            let response = serve
                .post("/v1/chat/completions")
                .json(&chat(&text, i % 2 == 0))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let session = response.headers()["x-herald-session"]
                .to_str()
                .unwrap()
                .to_owned();
            let body = response.text().await.unwrap();
            (i, status, session, body)
        }
    });
    let mut sessions = std::collections::HashSet::new();
    for (i, status, session, body) in futures_util::future::join_all(requests).await {
        assert_eq!(status, 200, "{body}");
        sessions.insert(session);
        let content = if i % 2 == 0 {
            check_chunks(&body, false).0
        } else {
            let body: Value = serde_json::from_str(&body).unwrap();
            body["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(content, format!("answer to question {i}"));
    }
    assert_eq!(sessions.len(), 8);
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_beyond_max_open_sessions_close_and_reopen_on_use() {
    let serve = Serve::start_with(
        Script::new().responder(|view| Reply::text(format!("turn {}", view.turn))),
        |config| config.max_open_sessions = 2,
    )
    .await;
    let mut sessions = Vec::new();
    for i in 0..3 {
        let (status, session, body) = serve
            .post_json(
                "/v1/chat/completions",
                &chat(&format!("session {i}"), false),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        sessions.push(session.unwrap());
    }
    // The oldest was closed to make room; named again at once, it waits
    // for that close and reopens with its conversation.
    let response = serve
        .post("/v1/chat/completions")
        .header("X-Herald-Session", &sessions[0])
        .json(&chat("back again", false))
        .send()
        .await
        .unwrap();
    let (status, _, body) = common::parts(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "turn 1");
    // That in turn closed the least recently used one left.
    common::eventually("the second session to close", async || {
        let (_, info) = serve
            .get_json(&format!("/api/sessions/{}", sessions[1]))
            .await;
        info["open"] == false && !info["ended_at"].is_null()
    })
    .await;
    for open in [&sessions[0], &sessions[2]] {
        let (_, info) = serve.get_json(&format!("/api/sessions/{open}")).await;
        assert_eq!(info["open"], true, "{info}");
    }
    serve.stop().await;
}
