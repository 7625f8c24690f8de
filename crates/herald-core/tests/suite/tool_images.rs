//! A tool that returns an image, driven through the agent loop against the
//! scripted provider over loopback HTTP (OpenAI and Anthropic wire formats):
//! the next request carries the image in the provider's shape, the store
//! keeps it, and a resumed session sends the same history again byte for
//! byte (the testkit checks tool pairing and prefix stability of every
//! request by itself).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use herald_core::{Agent, AgentSetup, EventSink, ExitReason, Recorder, StoreHandle};
use herald_llm::{ClientConfig, LlmClient, ProviderKind, RetryPolicy};
use herald_protocol::{ImageData, Message, Role, ToolSpec};
use herald_store::{NewSession, PendingResult, SessionSource};
use herald_testkit::{Api, Reply, Script, ScriptedCall, ScriptedServer, check_prefix};
use herald_tools::{Tool, ToolContext, ToolRegistry, ToolResult};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const LINE: &str = "[image: image/png, 70 bytes]";

/// Returns one PNG per call, described by a text line as MCP results are.
struct Screenshot {
    spec: ToolSpec,
}

impl Tool for Screenshot {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn toolset(&self) -> &'static str {
        "test"
    }
    fn read_only(&self) -> bool {
        true
    }
    fn call<'a>(
        &'a self,
        _args: serde_json::Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async { ToolResult::ok(LINE).with_images(vec![ImageData::new("image/png", PNG)]) })
    }
}

fn registry() -> Arc<ToolRegistry> {
    let mut registry = ToolRegistry::new(50_000);
    registry.register(Arc::new(Screenshot {
        spec: ToolSpec {
            name: "screenshot".into(),
            description: "Takes a screenshot.".into(),
            parameters: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        },
    }));
    Arc::new(registry)
}

fn client(server: &ScriptedServer, provider: ProviderKind, images: bool) -> Arc<LlmClient> {
    let (base_url, model) = match provider {
        ProviderKind::OpenAi => (server.openai_base_url(), "gpt-4.1-mini"),
        ProviderKind::Anthropic => (server.anthropic_base_url(), "claude-sonnet-4-5"),
    };
    Arc::new(
        LlmClient::new(ClientConfig {
            provider,
            base_url,
            api_key: Some("sk-test".into()),
            model: model.into(),
            max_tokens: None,
            retry: RetryPolicy {
                max_attempts: 1,
                ..RetryPolicy::default()
            },
            idle_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            connect_timeout: Duration::from_secs(5),
            max_in_flight: herald_llm::DEFAULT_MAX_IN_FLIGHT,
            images,
            reasoning: Default::default(),
        })
        .unwrap(),
    )
}

struct Env {
    server: ScriptedServer,
    store: StoreHandle,
    _home: tempfile::TempDir,
}

/// Two screenshots in one reply (a batch, so each result is also kept in
/// the store as it finishes), then an answer; a second turn answers at once.
async fn env() -> Env {
    let script = Script::new().conversation(
        "take two screenshots",
        vec![
            Reply::tools(vec![
                ScriptedCall::new("screenshot", json!({"n": 1})),
                ScriptedCall::new("screenshot", json!({"n": 2})),
            ]),
            Reply::text("Both show a white pixel."),
            Reply::text("Still a white pixel."),
        ],
    );
    let server = ScriptedServer::start(script).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let store = StoreHandle::open(&home.path().join("state.db")).unwrap();
    store
        .call(|s| {
            s.create_session(&NewSession {
                id: "s1".into(),
                parent_session_id: None,
                agent_id: None,
                source: SessionSource::Cli,
                cwd: "/".into(),
                model: "m".into(),
                provider: "p".into(),
                system_prompt: "sys".into(),
            })
        })
        .await
        .unwrap()
        .unwrap();
    Env {
        server,
        store,
        _home: home,
    }
}

fn agent(env: &Env, client: Arc<LlmClient>, history: Vec<Message>) -> Agent {
    Agent::new(AgentSetup {
        client,
        registry: registry(),
        system_prompt: "sys".into(),
        history,
        cwd: std::env::temp_dir(),
        max_iterations: 10,
        stream_deltas: false,
        events: EventSink::discard(),
        recorder: Some(Recorder {
            store: env.store.clone(),
            session_id: "s1".into(),
        }),
        budget: None,
        inbox: None,
        await_background: false,
    })
}

async fn stored(env: &Env) -> Vec<Message> {
    env.store
        .call(|s| s.load_messages("s1"))
        .await
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect()
}

/// Runs the image turn, checks what the store holds, resumes the session
/// from the store in a new agent and runs one more turn. Returns the
/// request bodies.
async fn image_turn_then_resume(env: &Env, provider: ProviderKind) -> Vec<serde_json::Value> {
    let cancel = CancellationToken::new();
    let mut first = agent(env, client(&env.server, provider, true), Vec::new());
    let outcome = first.run_turn("take two screenshots".into(), &cancel).await;
    assert_eq!(outcome.exit_reason, ExitReason::Completed, "{outcome:?}");
    assert_eq!(outcome.final_response, "Both show a white pixel.");
    let saved = stored(env).await;
    let results: Vec<&Message> = saved.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(results.len(), 2);
    for result in results {
        assert_eq!(result.content, LINE);
        assert_eq!(result.images, [ImageData::new("image/png", PNG)]);
    }
    assert_eq!(saved, first.messages());
    drop(first);

    // Resume: the stored conversation in a new agent sends the same bytes.
    let history = herald_core::restore_conversation(&env.store, "s1")
        .await
        .unwrap();
    let mut resumed = agent(env, client(&env.server, provider, true), history);
    let outcome = resumed.run_turn("and now?".into(), &cancel).await;
    assert_eq!(outcome.final_response, "Still a white pixel.");
    let bodies: Vec<serde_json::Value> =
        env.server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 3);
    assert_eq!(check_prefix(&bodies[1], &bodies[2]), Vec::<String>::new());
    env.server.assert_invariants();
    bodies
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_gets_the_images_as_a_user_message_after_the_results() {
    let env = env().await;
    let bodies = image_turn_then_resume(&env, ProviderKind::OpenAi).await;
    let messages = &bodies[1]["messages"];
    let calls = messages[2]["tool_calls"].as_array().unwrap();
    let (a, b) = (
        calls[0]["id"].as_str().unwrap(),
        calls[1]["id"].as_str().unwrap(),
    );
    assert_eq!(messages.as_array().unwrap().len(), 6, "{messages}");
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["content"], LINE);
    assert_eq!(messages[4]["role"], "tool");
    let url = format!("data:image/png;base64,{PNG}");
    assert_eq!(
        messages[5],
        json!({"role": "user", "content": [
            {"type": "text", "text": format!("The result of tool call {a} (screenshot) has this image:")},
            {"type": "image_url", "image_url": {"url": url}},
            {"type": "text", "text": format!("The result of tool call {b} (screenshot) has this image:")},
            {"type": "image_url", "image_url": {"url": url}}
        ]})
    );
    // The first request had no image; the resumed one repeats them in place.
    assert!(!bodies[0].to_string().contains(PNG));
    assert_eq!(bodies[2]["messages"][5], messages[5]);
    let view = env.server.requests()[2].view().unwrap();
    assert_eq!(view.api, Api::OpenAi);
    assert_eq!(view.images().count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_gets_the_images_as_blocks_of_the_tool_results() {
    let env = env().await;
    let bodies = image_turn_then_resume(&env, ProviderKind::Anthropic).await;
    let results = bodies[1]["messages"][2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for result in results {
        assert_eq!(result["type"], "tool_result");
        assert_eq!(
            result["content"],
            json!([
                {"type": "text", "text": LINE},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
            ])
        );
    }
    assert_eq!(bodies[1]["messages"].as_array().unwrap().len(), 3);
    let view = env.server.requests()[2].view().unwrap();
    assert_eq!(view.api, Api::Anthropic);
    assert_eq!(view.images().count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_text_only_model_gets_the_text_line_and_nothing_is_stored() {
    for provider in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let env = env().await;
        let cancel = CancellationToken::new();
        let mut agent = agent(&env, client(&env.server, provider, false), Vec::new());
        let outcome = agent.run_turn("take two screenshots".into(), &cancel).await;
        assert_eq!(outcome.exit_reason, ExitReason::Completed, "{outcome:?}");
        let second = env.server.requests()[1].body.to_string();
        assert!(!second.contains(PNG), "{second}");
        assert_eq!(second.matches(LINE).count(), 2, "{second}");
        let view = env.server.requests()[1].view().unwrap();
        assert_eq!(view.images().count(), 0);
        assert!(stored(&env).await.iter().all(|m| m.images.is_empty()));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_result_kept_before_a_crash_comes_back_with_its_images() {
    let env = env().await;
    let shot = |id: &str| herald_protocol::ToolCall {
        id: id.into(),
        name: "screenshot".into(),
        arguments: "{}".into(),
    };
    // The batch's reply was stored and one result kept; then herald died.
    let kept = PendingResult {
        call_id: "c1".into(),
        content: LINE.into(),
        is_error: false,
        images: vec![ImageData::new("image/png", PNG)],
    };
    env.store
        .call(move |s| {
            s.append_messages(
                "s1",
                &[
                    Message::user("take two screenshots"),
                    Message::assistant("", vec![shot("c1"), shot("c2")]),
                ],
            )?;
            s.save_pending_result("s1", &kept)
        })
        .await
        .unwrap()
        .unwrap();
    let history = herald_core::restore_conversation(&env.store, "s1")
        .await
        .unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(history[2].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(history[2].images, [ImageData::new("image/png", PNG)]);
    assert!(history[3].images.is_empty() && history[3].is_error);
    // The repair is stored with the images too.
    assert_eq!(stored(&env).await, history);
    env.server.skip_invariants("no request is made");
}
