//! End-to-end tests of the scripted server over real HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use herald_testkit::{Api, Fault, Quirks, Reply, Script, ScriptedCall, ScriptedServer};
use serde_json::{Value, json};

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Parses an SSE body into `(event name, data)` pairs.
fn sse(text: &str) -> Vec<(Option<String>, String)> {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut name = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(rest) = line.strip_prefix("event:") {
                    name = Some(rest.trim().to_string());
                } else if let Some(rest) = line.strip_prefix("data:") {
                    data.push_str(rest.trim());
                }
            }
            (name, data)
        })
        .collect()
}

async fn post(url: &str, body: &Value) -> reqwest::Response {
    client()
        .post(url)
        .header("authorization", "Bearer sk-test")
        .header("x-api-key", "ak-test")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap()
}

fn openai_tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "bad", "parameters": {"type": "object"}}}
    ])
}

fn openai_body(messages: Value) -> Value {
    json!({"model": "gpt-test", "stream": true, "stream_options": {"include_usage": true},
           "tools": openai_tools(), "messages": messages})
}

/// The assembled result of an OpenAI stream.
#[derive(Debug, Default)]
struct OpenAiResult {
    text: String,
    calls: BTreeMap<u64, (String, String, String)>,
    finish: Option<String>,
    usage: Option<Value>,
    done: bool,
}

fn assemble_openai(raw: &str) -> OpenAiResult {
    let mut out = OpenAiResult::default();
    for (_, data) in sse(raw) {
        assert!(!out.done, "data after [DONE]");
        if data == "[DONE]" {
            out.done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(&data).unwrap();
        if !chunk["usage"].is_null() {
            out.usage = Some(chunk["usage"].clone());
        }
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        if let Some(t) = choice["delta"]["content"].as_str() {
            out.text.push_str(t);
        }
        if let Some(calls) = choice["delta"]["tool_calls"].as_array() {
            for c in calls {
                let e = out.calls.entry(c["index"].as_u64().unwrap()).or_default();
                if let Some(id) = c["id"].as_str() {
                    e.0 = id.to_string();
                }
                if let Some(n) = c["function"]["name"].as_str() {
                    e.1 = n.to_string();
                }
                if let Some(a) = c["function"]["arguments"].as_str() {
                    e.2.push_str(a);
                }
            }
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            out.finish = Some(f.to_string());
        }
    }
    out
}

/// The assembled result of an Anthropic stream.
#[derive(Debug, Default)]
struct AnthropicResult {
    text: String,
    tools: Vec<(String, String, String)>,
    stop_reason: Option<String>,
    start_usage: Value,
    output_tokens: u64,
    names: Vec<String>,
}

fn assemble_anthropic(raw: &str) -> AnthropicResult {
    let mut out = AnthropicResult::default();
    let mut blocks: BTreeMap<u64, (String, String, String, String)> = BTreeMap::new();
    for (name, data) in sse(raw) {
        let name = name.unwrap();
        let ev: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(ev["type"], name.as_str());
        match name.as_str() {
            "message_start" => out.start_usage = ev["message"]["usage"].clone(),
            "content_block_start" => {
                let b = &ev["content_block"];
                blocks.insert(
                    ev["index"].as_u64().unwrap(),
                    (
                        b["type"].as_str().unwrap().to_string(),
                        b["id"].as_str().unwrap_or_default().to_string(),
                        b["name"].as_str().unwrap_or_default().to_string(),
                        String::new(),
                    ),
                );
            }
            "content_block_delta" => {
                let b = blocks.get_mut(&ev["index"].as_u64().unwrap()).unwrap();
                let d = &ev["delta"];
                match d["type"].as_str().unwrap() {
                    "text_delta" => b.3.push_str(d["text"].as_str().unwrap()),
                    "input_json_delta" => b.3.push_str(d["partial_json"].as_str().unwrap()),
                    other => panic!("unknown delta {other}"),
                }
            }
            "message_delta" => {
                out.stop_reason = ev["delta"]["stop_reason"].as_str().map(str::to_string);
                out.output_tokens = ev["usage"]["output_tokens"].as_u64().unwrap();
            }
            _ => {}
        }
        out.names.push(name);
    }
    for (kind, id, name, content) in blocks.into_values() {
        if kind == "text" {
            out.text.push_str(&content);
        } else {
            out.tools.push((id, name, content));
        }
    }
    out
}

fn two_call_reply() -> Reply {
    Reply::ToolCalls {
        text: "Let me look at ünïcödé files first.".into(),
        calls: vec![
            ScriptedCall::new("read_file", json!({"path": "src/main.rs", "limit": 200})),
            ScriptedCall::raw("bad", "{not json"),
        ],
    }
}

#[tokio::test]
async fn openai_stream_shape_and_turns() {
    let server = ScriptedServer::start(Script::new().conversation(
        "hello",
        vec![
            two_call_reply(),
            Reply::text("All done, here is a long final answer."),
        ],
    ))
    .await
    .unwrap();
    let url = format!("{}/chat/completions", server.openai_base_url());
    let first = json!([
        {"role": "system", "content": "You are a test."},
        {"role": "user", "content": "hello there"}
    ]);
    let resp = post(&url, &openai_body(first.clone())).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let raw = resp.text().await.unwrap();
    assert!(raw.lines().all(|l| l.is_empty() || l.starts_with("data: ")));
    let r = assemble_openai(&raw);
    assert!(r.done);
    assert_eq!(r.text, "Let me look at ünïcödé files first.");
    assert_eq!(r.finish.as_deref(), Some("tool_calls"));
    assert_eq!(r.calls.len(), 2);
    let (id0, name0, args0) = &r.calls[&0];
    assert!(id0.starts_with("call_0_0_"), "{id0}");
    assert_eq!(name0, "read_file");
    assert_eq!(
        serde_json::from_str::<Value>(args0).unwrap(),
        json!({"path": "src/main.rs", "limit": 200})
    );
    assert_eq!(r.calls[&1].2, "{not json");
    assert_ne!(r.calls[&1].0, *id0);
    // Arguments arrive in several fragments.
    let frag_chunks = raw.matches("\"arguments\"").count();
    assert!(frag_chunks > 4, "{frag_chunks}");
    let usage = r.usage.unwrap();
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 10);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    assert!(raw.contains("\"choices\":[]"));

    let mut second = first.as_array().unwrap().clone();
    second.push(json!({"role": "assistant", "content": r.text, "tool_calls": [
        {"id": id0, "type": "function", "function": {"name": name0, "arguments": args0}},
        {"id": r.calls[&1].0, "type": "function", "function": {"name": "bad", "arguments": "{not json"}}
    ]}));
    second.push(json!({"role": "tool", "tool_call_id": id0, "content": "fn main() {}"}));
    second
        .push(json!({"role": "tool", "tool_call_id": r.calls[&1].0, "content": "error: bad json"}));
    let raw = post(&url, &openai_body(json!(second)))
        .await
        .text()
        .await
        .unwrap();
    let r2 = assemble_openai(&raw);
    assert_eq!(r2.text, "All done, here is a long final answer.");
    assert_eq!(r2.finish.as_deref(), Some("stop"));
    assert!(r2.calls.is_empty());
    let usage = r2.usage.unwrap();
    let cached = usage["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        cached > 20 && cached < usage["prompt_tokens"].as_u64().unwrap(),
        "{usage}"
    );
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );

    server.assert_invariants();
    assert_eq!(server.prefix_stability(), (1, 1));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].turn, 1);
    assert_eq!(reqs[1].conversation, "hello there");
    assert_eq!(reqs[1].api, Api::OpenAi);
    assert!(
        reqs.iter()
            .all(|r| r.status == 200 && r.responded_at.is_some())
    );
}

fn anthropic_body(messages: Value) -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 1024,
        "stream": true,
        "system": [{"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "read_file", "description": "read", "input_schema": {"type": "object"}},
                  {"name": "bad", "description": "bad", "input_schema": {"type": "object"}}],
        "messages": messages,
    })
}

#[tokio::test]
async fn anthropic_stream_shape_and_cache_usage() {
    let server = ScriptedServer::start(
        Script::new().conversation("hello", vec![two_call_reply(), Reply::text("Finished.")]),
    )
    .await
    .unwrap();
    let url = format!("{}/v1/messages", server.anthropic_base_url());
    let user = json!({"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]});
    let resp = post(&url, &anthropic_body(json!([user]))).await;
    assert_eq!(resp.status(), 200);
    let raw = resp.text().await.unwrap();
    let r = assemble_anthropic(&raw);
    assert_eq!(r.names.first().map(String::as_str), Some("message_start"));
    assert_eq!(r.names.last().map(String::as_str), Some("message_stop"));
    assert!(r.names.iter().any(|n| n == "ping"));
    assert_eq!(r.text, "Let me look at ünïcödé files first.");
    assert_eq!(r.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(r.tools.len(), 2);
    assert!(r.tools[0].0.starts_with("toolu_0_0_"));
    assert_eq!(r.tools[0].1, "read_file");
    assert_eq!(
        serde_json::from_str::<Value>(&r.tools[0].2).unwrap(),
        json!({"path": "src/main.rs", "limit": 200})
    );
    assert_eq!(r.tools[1].2, "{not json");
    assert_eq!(r.start_usage["cache_read_input_tokens"], 0);
    assert!(
        r.start_usage["cache_creation_input_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(r.output_tokens >= 1);

    // Second turn: the breakpoint moves to the newest message.
    let plain_user = json!({"role": "user", "content": "hello"});
    let assistant = json!({"role": "assistant", "content": [
        {"type": "text", "text": r.text},
        {"type": "tool_use", "id": r.tools[0].0, "name": "read_file", "input": {"path": "src/main.rs", "limit": 200}},
        {"type": "tool_use", "id": r.tools[1].0, "name": "bad", "input": {}}
    ]});
    let results = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": r.tools[0].0, "content": "fn main() {}"},
        {"type": "tool_result", "tool_use_id": r.tools[1].0, "content": [{"type": "text", "text": "invalid"}], "is_error": true,
         "cache_control": {"type": "ephemeral"}}
    ]});
    let raw = post(
        &url,
        &anthropic_body(json!([plain_user, assistant, results])),
    )
    .await
    .text()
    .await
    .unwrap();
    let r2 = assemble_anthropic(&raw);
    assert_eq!(r2.text, "Finished.");
    assert_eq!(r2.stop_reason.as_deref(), Some("end_turn"));
    assert!(r2.start_usage["cache_read_input_tokens"].as_u64().unwrap() > 10);
    server.assert_invariants();
    assert_eq!(server.prefix_stability(), (1, 1));
    let reqs = server.requests();
    assert_eq!(reqs[0].path, "/v1/messages");
    assert_eq!(reqs[0].api, Api::Anthropic);
    assert_eq!(reqs[1].turn, 1);
}

#[tokio::test]
async fn routing_responder_and_exhaustion() {
    let server = ScriptedServer::start(
        Script::new()
            .conversation("alpha", vec![Reply::text("A0")])
            .conversation("beta", vec![Reply::text("B0")])
            .responder(|v| Reply::text(format!("fallback {} {}", v.conversation, v.turn))),
    )
    .await
    .unwrap();
    let url = format!("{}/chat/completions", server.url());
    let ask = |first: &str, turns: usize| {
        let mut m = vec![json!({"role": "user", "content": first})];
        for _ in 0..turns {
            m.push(json!({"role": "assistant", "content": "x"}));
            m.push(json!({"role": "user", "content": "again"}));
        }
        openai_body(json!(m))
    };
    let text = |raw: String| assemble_openai(&raw).text;
    let r = post(&url, &ask("the beta test", 0)).await;
    assert_eq!(text(r.text().await.unwrap()), "B0");
    let r = post(&url, &ask("alpha", 0)).await;
    assert_eq!(text(r.text().await.unwrap()), "A0");
    let r = post(&url, &ask("gamma", 2)).await;
    assert_eq!(text(r.text().await.unwrap()), "fallback gamma 2");

    let r = post(&url, &ask("alpha", 1)).await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("exhausted"), "{msg}");
    assert_eq!(server.requests().last().unwrap().status, 400);

    let empty = ScriptedServer::start(Script::new()).await.unwrap();
    empty.skip_invariants("sends a body that is not JSON on purpose");
    let url = format!("{}/v1/messages", empty.url());
    let r = post(
        &url,
        &anthropic_body(json!([{"role": "user", "content": "zzz"}])),
    )
    .await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no script")
    );

    let r = client().post(&url).body("not json").send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(empty.check_invariants().is_err());
}

fn hello_server_script() -> Script {
    Script::new().responder(|_| Reply::ToolCalls {
        text: "some text that is long enough to split".into(),
        calls: vec![ScriptedCall::new(
            "read_file",
            json!({"path": "a/very/long/path.txt"}),
        )],
    })
}

fn hello_openai() -> Value {
    openai_body(json!([{"role": "user", "content": "hello"}]))
}

#[tokio::test]
async fn status_faults_are_fifo_with_retry_after() {
    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    server.inject(Fault::rate_limited(3));
    server.inject(Fault::Status {
        code: 529,
        retry_after_secs: None,
        body: "overloaded".into(),
    });
    let oa = format!("{}/chat/completions", server.openai_base_url());
    let an = format!("{}/v1/messages", server.anthropic_base_url());

    let r = post(&oa, &hello_openai()).await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "3");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let r = post(
        &an,
        &anthropic_body(json!([{"role": "user", "content": "hello over anthropic"}])),
    )
    .await;
    assert_eq!(r.status(), 529);
    assert!(r.headers().get("retry-after").is_none());
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["message"], "overloaded");

    let r = post(&oa, &hello_openai()).await;
    assert_eq!(r.status(), 200);
    assert!(assemble_openai(&r.text().await.unwrap()).done);
    let statuses: Vec<u16> = server.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![429, 529, 200]);
}

#[tokio::test]
async fn truncated_stream_ends_without_marker() {
    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    server.inject(Fault::TruncatedStream);
    server.inject(Fault::TruncatedStream);
    let oa = format!("{}/chat/completions", server.openai_base_url());
    let raw = post(&oa, &hello_openai()).await.text().await.unwrap();
    let r = assemble_openai(&raw);
    assert!(!r.done);
    assert!(r.finish.is_none() && r.usage.is_none());
    assert!(!raw.is_empty());

    let an = format!("{}/v1/messages", server.anthropic_base_url());
    let raw = post(
        &an,
        &anthropic_body(json!([{"role": "user", "content": "hello over anthropic"}])),
    )
    .await
    .text()
    .await
    .unwrap();
    let r = assemble_anthropic(&raw);
    assert_eq!(r.names[0], "message_start");
    assert!(
        !r.names
            .iter()
            .any(|n| n == "message_stop" || n == "message_delta")
    );
    assert!(server.requests().iter().all(|r| r.responded_at.is_some()));
}

#[tokio::test]
async fn aborted_stream_breaks_the_body() {
    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    server.inject(Fault::AbortStream);
    let oa = format!("{}/chat/completions", server.openai_base_url());
    let resp = post(&oa, &hello_openai()).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.is_err(), "body must fail mid-stream");
    // The server keeps serving afterwards.
    let raw = post(&oa, &hello_openai()).await.text().await.unwrap();
    assert!(assemble_openai(&raw).done);
}

#[tokio::test]
async fn idle_stream_sends_first_event_then_nothing() {
    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    server.inject(Fault::IdleStream);
    let oa = format!("{}/chat/completions", server.openai_base_url());
    let mut resp = post(&oa, &hello_openai()).await;
    assert_eq!(resp.status(), 200);
    let first = resp.chunk().await.unwrap().unwrap();
    assert!(first.starts_with(b"data: "));
    let next = tokio::time::timeout(Duration::from_millis(300), resp.chunk()).await;
    assert!(next.is_err(), "stream must stay silent");
    drop(resp);
    assert!(server.requests()[0].responded_at.is_none());
}

#[tokio::test]
async fn latency_delays_first_byte() {
    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    server.set_latency(Duration::from_millis(150));
    let oa = format!("{}/chat/completions", server.openai_base_url());
    let start = Instant::now();
    let resp = post(&oa, &hello_openai()).await;
    assert!(start.elapsed() >= Duration::from_millis(150));
    resp.text().await.unwrap();
    let rec = &server.requests()[0];
    assert!(rec.duration().unwrap() >= Duration::from_millis(150));

    // Latency does not block other requests: two concurrent requests take
    // about one latency, not two.
    server.set_latency(Duration::from_millis(300));
    let start = Instant::now();
    let body = hello_openai();
    let (a, b) = tokio::join!(post(&oa, &body), post(&oa, &body));
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (200, 200));
    assert!(
        start.elapsed() < Duration::from_millis(580),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn records_headers_and_body() {
    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    let an = format!("{}/v1/messages", server.anthropic_base_url());
    let body = anthropic_body(json!([{"role": "user", "content": "hello"}]));
    post(&an, &body).await.text().await.unwrap();
    let rec = &server.requests()[0];
    assert_eq!(rec.header("Authorization"), Some("Bearer sk-test"));
    assert_eq!(rec.header("x-api-key"), Some("ak-test"));
    assert_eq!(rec.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(rec.body, body);
    assert_eq!(rec.conversation, "hello");
    assert_eq!(rec.turn, 0);
    let view = rec.view().unwrap();
    assert_eq!(view.tool_names, vec!["read_file", "bad"]);
    assert_eq!(view.system, "You are a test.");
    assert!(rec.responded_at.unwrap() >= rec.received_at);
}

#[tokio::test]
async fn quirks_are_applied() {
    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    server.set_quirks(Quirks {
        usage_choice_with_empty_delta: true,
        empty_content_on_tool_deltas: true,
        stop_with_tool_calls: true,
        extra_spaces_after_data: true,
    });
    let oa = format!("{}/chat/completions", server.openai_base_url());
    let raw = post(&oa, &hello_openai()).await.text().await.unwrap();
    assert!(
        raw.lines()
            .all(|l| l.is_empty() || l.starts_with("data:   "))
    );
    let r = assemble_openai(&raw);
    assert!(r.done);
    assert_eq!(r.finish.as_deref(), Some("stop"));
    assert_eq!(r.calls.len(), 1);
    assert_eq!(r.calls[&0].2, "{\"path\":\"a/very/long/path.txt\"}");
    let usage_chunk: Value = sse(&raw)
        .into_iter()
        .map(|(_, d)| d)
        .filter(|d| d.contains("\"usage\""))
        .map(|d| serde_json::from_str(&d).unwrap())
        .next()
        .unwrap();
    assert_eq!(usage_chunk["choices"], json!([{"index": 0, "delta": {}}]));
}

#[tokio::test]
async fn non_streamed_requests_get_json() {
    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    let oa = format!("{}/chat/completions", server.openai_base_url());
    let mut body = hello_openai();
    body["stream"] = json!(false);
    let v: Value = post(&oa, &body).await.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "read_file"
    );
    let an = format!("{}/v1/messages", server.anthropic_base_url());
    let mut body = anthropic_body(json!([{"role": "user", "content": "hello over anthropic"}]));
    body["stream"] = json!(false);
    let v: Value = post(&an, &body).await.json().await.unwrap();
    assert_eq!(
        v["content"][1]["input"],
        json!({"path": "a/very/long/path.txt"})
    );
}

#[tokio::test]
async fn invariant_violations_are_reported() {
    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    server.skip_invariants("breaks both invariants on purpose to test the reports");
    let oa = format!("{}/chat/completions", server.openai_base_url());
    let sys = |s: &str| json!({"role": "system", "content": s});
    let user = json!({"role": "user", "content": "hello"});
    let call = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]});
    post(&oa, &openai_body(json!([sys("one"), user])))
        .await
        .text()
        .await
        .unwrap();
    // Changed system prompt and a call without result.
    post(
        &oa,
        &openai_body(json!([sys("two"), user, call, {"role": "user", "content": "x"}])),
    )
    .await
    .text()
    .await
    .unwrap();
    let errors = server.check_invariants().unwrap_err();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains("request #1") && errors[0].contains("\"c1\""),
        "{errors:?}"
    );
    assert!(
        errors[1].contains(
            "conversation \"hello\": request #0 -> #1: system prompt changed (message 0)"
        ),
        "{errors:?}"
    );
    assert_eq!(server.prefix_stability(), (0, 1));
    let panic =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.assert_invariants()));
    assert!(panic.is_err());
}

#[tokio::test]
async fn violations_are_answered_with_400_and_fail_the_drop() {
    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    let oa = format!("{}/chat/completions", server.openai_base_url());
    let user = json!({"role": "user", "content": "hello"});
    let r = post(&oa, &openai_body(json!([user]))).await;
    assert_eq!(r.status(), 200);
    r.text().await.unwrap();
    // An orphan tool result: answered with 400 naming the violation.
    let orphan = json!({"role": "tool", "tool_call_id": "nope", "content": "x"});
    let r = post(&oa, &openai_body(json!([user, orphan]))).await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("invariant violated") && msg.contains("unknown tool call \"nope\""),
        "{msg}"
    );
    assert_eq!(server.requests()[1].status, 400);
    // Dropping the server reports the violation without being asked.
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(server)));
    let report = dropped.unwrap_err();
    let report = report.downcast_ref::<String>().unwrap();
    assert!(
        report.contains("1 invariant violation(s)") && report.contains("request #1"),
        "{report}"
    );
}

#[tokio::test]
async fn the_drop_check_does_not_panic_twice_and_skipping_needs_a_reason() {
    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    let oa = format!("{}/chat/completions", server.openai_base_url());
    let call = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]});
    let r = post(
        &oa,
        &openai_body(json!([{"role": "user", "content": "hello"}, call])),
    )
    .await;
    assert_eq!(r.status(), 400);
    // The test fails first; the drop check must not turn that into an abort.
    let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _server = server;
        panic!("the test's own failure");
    }));
    let payload = first.unwrap_err();
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"the test's own failure")
    );

    let server = ScriptedServer::start(hello_server_script()).await.unwrap();
    let blank = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        server.skip_invariants("  ")
    }));
    assert!(blank.is_err(), "an empty reason is refused");
    server.skip_invariants("checks that a given reason turns the checks off");
    let r = post(
        &format!("{}/chat/completions", server.openai_base_url()),
        &openai_body(json!([{"role": "user", "content": "hello"}, call])),
    )
    .await;
    assert_eq!(r.status(), 200, "no 400 once skipped");
    r.text().await.unwrap();
    assert!(
        server.check_invariants().is_err(),
        "explicit checks still run"
    );
}
