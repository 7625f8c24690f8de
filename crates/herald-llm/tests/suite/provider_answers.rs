//! `LlmClient` against the scripted server over HTTP: the answers real servers
//! give besides a clean event stream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use herald_llm::{
    AssistantReply, ChatRequest, ClientConfig, ErrorKind, LlmClient, LlmError, ProviderKind,
    RetryPolicy, StreamUpdate,
};
use herald_protocol::{Message, ToolSpec};
use herald_testkit::{Fault, Reply, Script, ScriptedCall, ScriptedServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const IDLE: Duration = Duration::from_secs(5);

fn client(server: &ScriptedServer, provider: ProviderKind) -> LlmClient {
    timed_client(server, provider, Duration::from_secs(600))
}

/// A client whose requests may take `request_timeout` each.
fn timed_client(
    server: &ScriptedServer,
    provider: ProviderKind,
    request_timeout: Duration,
) -> LlmClient {
    let (base_url, model) = match provider {
        ProviderKind::OpenAi => (server.openai_base_url(), "gpt-4.1-mini"),
        ProviderKind::Anthropic => (server.anthropic_base_url(), "claude-sonnet-4-5"),
    };
    LlmClient::new(ClientConfig {
        provider,
        base_url,
        api_key: Some("sk-test".into()),
        model: model.into(),
        max_tokens: None,
        retry: RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
        },
        idle_timeout: IDLE,
        request_timeout,
        connect_timeout: Duration::from_secs(5),
        max_in_flight: herald_llm::DEFAULT_MAX_IN_FLIGHT,
        images: true,
        reasoning: Default::default(),
    })
    .unwrap()
}

/// What the caller was told while the request ran.
#[derive(Debug, Default)]
struct Seen {
    /// Text deltas; a restart is recorded as `None`.
    deltas: Vec<Option<String>>,
    retries: Vec<String>,
}

impl Seen {
    fn text(&self) -> String {
        self.deltas.iter().flatten().map(String::as_str).collect()
    }

    fn restarts(&self) -> usize {
        self.deltas.iter().filter(|d| d.is_none()).count()
    }

    /// The text after the last restart.
    fn final_text(&self) -> String {
        let start = self
            .deltas
            .iter()
            .rposition(Option::is_none)
            .map_or(0, |i| i + 1);
        self.deltas[start..]
            .iter()
            .flatten()
            .map(String::as_str)
            .collect()
    }
}

async fn ask(
    server: &ScriptedServer,
    provider: ProviderKind,
    prompt: &str,
) -> (Result<AssistantReply, LlmError>, Seen) {
    ask_with(client(server, provider), prompt).await
}

async fn ask_with(client: LlmClient, prompt: &str) -> (Result<AssistantReply, LlmError>, Seen) {
    let tools = client.encode_tools(&[ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }]);
    let messages = vec![Message::user(prompt)];
    let mut seen = Seen::default();
    let mut on_update = |update: StreamUpdate<'_>| match update {
        StreamUpdate::TextDelta(text) => seen.deltas.push(Some(text.to_owned())),
        StreamUpdate::TextRestart => seen.deltas.push(None),
        StreamUpdate::Retry { reason, .. } => seen.retries.push(reason.to_owned()),
        StreamUpdate::Fallback { .. }
        | StreamUpdate::Throttled { .. }
        | StreamUpdate::ReasoningDelta(_) => {}
    };
    let result = client
        .complete(
            ChatRequest {
                system: "You are terse.",
                messages: &messages,
                tools: &tools,
                forbid_tool_calls: false,
            },
            &mut on_update,
            &CancellationToken::new(),
        )
        .await;
    (result, seen)
}

const TEXT: &str = "The answer is forty-two, as computed earlier.";

fn script() -> Script {
    Script::new()
        .conversation("question", vec![Reply::text(TEXT)])
        .conversation(
            "tools",
            vec![Reply::ToolCalls {
                text: "Looking.".into(),
                calls: vec![
                    ScriptedCall::new("read_file", json!({"path": "a.txt"})),
                    ScriptedCall::new("read_file", json!({"path": "b.txt"})),
                ],
            }],
        )
}

const WIRES: [ProviderKind; 2] = [ProviderKind::OpenAi, ProviderKind::Anthropic];

#[tokio::test(flavor = "multi_thread")]
async fn malformed_chunk_is_retried_and_text_is_not_repeated() {
    for provider in WIRES {
        let server = ScriptedServer::start(script()).await.unwrap();
        server.inject(Fault::MalformedChunk);
        let (reply, seen) = ask(&server, provider, "question").await;
        let reply = reply.unwrap_or_else(|e| panic!("{provider:?}: {e}"));
        assert_eq!(reply.text, TEXT);
        assert_eq!(server.request_count(), 2, "{provider:?}");
        assert_eq!(seen.retries.len(), 1, "{provider:?}");
        assert!(seen.retries[0].contains("not valid JSON"), "{seen:?}");
        // Text before the broken chunk was streamed; the retry sent only the rest.
        assert!(seen.deltas.len() > 1, "{seen:?}");
        assert_eq!(seen.restarts(), 0, "{seen:?}");
        assert_eq!(seen.text(), TEXT, "{provider:?}");
        server.assert_invariants();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_request_names_herald_and_its_version_as_user_agent() {
    for provider in WIRES {
        let server = ScriptedServer::start(script()).await.unwrap();
        let (reply, _) = ask(&server, provider, "question").await;
        reply.unwrap_or_else(|e| panic!("{provider:?}: {e}"));
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(
            requests[0].header("user-agent"),
            Some(concat!("herald/", env!("CARGO_PKG_VERSION"))),
            "{provider:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn non_streamed_json_answer_is_accepted_on_both_wires() {
    for provider in WIRES {
        let server = ScriptedServer::start(script()).await.unwrap();
        server.inject(Fault::NonStreamingAnswer);
        let (reply, seen) = ask(&server, provider, "tools").await;
        let reply = reply.unwrap_or_else(|e| panic!("{provider:?}: {e}"));
        assert_eq!(server.request_count(), 1);
        assert_eq!(reply.text, "Looking.");
        assert_eq!(seen.text(), "Looking.");
        let args: Vec<_> = reply
            .tool_calls
            .iter()
            .map(|c| c.arguments.as_str())
            .collect();
        assert_eq!(args, [r#"{"path":"a.txt"}"#, r#"{"path":"b.txt"}"#]);
        assert!(reply.tool_calls.iter().all(|c| c.name == "read_file"));
        assert_ne!(reply.tool_calls[0].id, reply.tool_calls[1].id);
        assert!(reply.usage.input_tokens > 0 && reply.usage.output_tokens > 0);
        let expected = match provider {
            ProviderKind::OpenAi => "tool_calls",
            ProviderKind::Anthropic => "tool_use",
        };
        assert_eq!(reply.finish_reason.as_deref(), Some(expected));
        server.assert_invariants();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn complete_reply_without_end_marker_is_accepted_at_once() {
    for provider in WIRES {
        let server = ScriptedServer::start(script()).await.unwrap();
        server.inject(Fault::NoEndMarker);
        let started = Instant::now();
        let (reply, seen) = ask(&server, provider, "question").await;
        let reply = reply.unwrap_or_else(|e| panic!("{provider:?}: {e}"));
        assert!(
            started.elapsed() < IDLE / 5,
            "{provider:?} took {:?}",
            started.elapsed()
        );
        assert_eq!(server.request_count(), 1, "{provider:?}");
        assert!(seen.retries.is_empty(), "{seen:?}");
        assert_eq!(reply.text, TEXT);
        assert!(reply.usage.output_tokens > 0);
        assert!(reply.finish_reason.is_some());
        server.assert_invariants();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn html_page_is_a_clear_error_that_is_not_retried() {
    for provider in WIRES {
        let server = ScriptedServer::start(script()).await.unwrap();
        server.inject(Fault::html_page());
        let (result, _) = ask(&server, provider, "question").await;
        let err = result.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Protocol, "{provider:?}");
        assert!(!err.kind.is_retryable());
        let base = match provider {
            ProviderKind::OpenAi => server.openai_base_url(),
            ProviderKind::Anthropic => server.anthropic_base_url(),
        };
        assert!(err.message.contains("text/html"), "{}", err.message);
        assert!(
            err.message.contains(&format!("'{base}'")),
            "{}",
            err.message
        );
        assert!(err.message.contains("It works!"), "{}", err.message);
        assert_eq!(server.request_count(), 1);
        server.assert_invariants();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn retried_reply_with_other_text_restarts_the_stream_once() {
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    let script = Script::new().responder(move |_| {
        if counter.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::text("First draft of an answer that will be cut.")
        } else {
            Reply::text("Second, different answer.")
        }
    });
    let server = ScriptedServer::start(script).await.unwrap();
    server.inject(Fault::TruncatedStream);
    let (reply, seen) = ask(&server, ProviderKind::OpenAi, "anything").await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Second, different answer.");
    assert_eq!(served.load(Ordering::SeqCst), 2);
    assert_eq!(seen.restarts(), 1, "{seen:?}");
    assert!(seen.text().starts_with("First"), "{seen:?}");
    assert_eq!(seen.final_text(), reply.text);
    server.assert_invariants();
}

/// A reply still streaming at the request's time limit is cut there and
/// kept: the text so far, the call being written, `timed_out` set, output
/// tokens estimated; the connection is closed and nothing is retried.
#[tokio::test]
async fn a_reply_streaming_past_the_time_limit_is_cut_and_kept() {
    const LIMIT: Duration = Duration::from_millis(700);
    for provider in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let server = ScriptedServer::start(
            Script::new()
                .conversation("ramble", vec![Reply::endless()])
                .conversation("write", vec![Reply::endless_call("write_file")]),
        )
        .await
        .unwrap();
        let t0 = Instant::now();
        let (result, seen) = ask_with(timed_client(&server, provider, LIMIT), "ramble").await;
        let took = t0.elapsed();
        let reply = result.unwrap();
        assert!(
            took >= LIMIT && took < LIMIT + Duration::from_millis(800),
            "{took:?}"
        );
        assert!(reply.timed_out && !reply.reached_output_cap() && reply.is_cut());
        assert!(
            reply.text.starts_with("lorem lorem "),
            "{provider:?}: {}",
            reply.text
        );
        assert_eq!(seen.text(), reply.text);
        assert!(seen.retries.is_empty(), "{:?}", seen.retries);
        assert!(reply.usage.output_tokens > 0);

        let (result, _) = ask_with(timed_client(&server, provider, LIMIT), "write").await;
        let reply = result.unwrap();
        assert!(reply.timed_out, "{provider:?}");
        assert_eq!(reply.tool_calls.len(), 1);
        assert_eq!(reply.tool_calls[0].name, "write_file");
        assert!(
            reply.tool_calls[0]
                .arguments
                .starts_with(herald_testkit::ENDLESS_CALL_PREFIX),
            "{}",
            reply.tool_calls[0].arguments
        );
        assert_eq!(server.request_count(), 2, "one request each, none retried");
    }
}

/// Nothing of the reply by the time limit: an error naming the setting,
/// not retried.
#[tokio::test]
async fn a_request_with_nothing_at_its_time_limit_fails_without_retry() {
    let server = ScriptedServer::start(script()).await.unwrap();
    server.set_latency(Duration::from_secs(3));
    let t0 = Instant::now();
    let client = timed_client(&server, ProviderKind::OpenAi, Duration::from_millis(500));
    let (result, seen) = ask_with(client, "question").await;
    let err = result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::RequestTimeout, "{err}");
    assert!(err.message.contains("request_timeout_seconds"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert!(seen.retries.is_empty());
    assert_eq!(server.request_count(), 1);
}
