//! Provider failures: retries with backoff, Retry-After, idle and truncated
//! streams, and errors that must not be retried.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Harness, Wire, last, of_type, stderr};
use herald_testkit::{Fault, Reply, Script};

const FAST_RETRY: &str = "[network]\nretry_base_delay_ms = 10\nstream_idle_timeout = 1\n";

fn hello() -> Script {
    Script::new().conversation("hello", vec![Reply::text("hi back")])
}

async fn recovers_after(fault: Fault, wire: Wire) -> (Harness, Vec<serde_json::Value>) {
    let h = Harness::new(hello()).await;
    h.config(FAST_RETRY);
    h.server.inject(fault);
    let (output, events) = h.run_json(wire, &[], "hello").await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "hi back");
    assert_eq!(h.server.requests().len(), 2);
    assert_eq!(of_type(&events, "retry").len(), 1);
    h.server.assert_invariants();
    (h, events)
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_429_honouring_retry_after() {
    let h = Harness::new(hello()).await;
    h.config(FAST_RETRY);
    h.server.inject(Fault::Status {
        code: 429,
        retry_after_secs: Some(1),
        body: "slow down".into(),
    });
    let started = Instant::now();
    let (output, events) = h.run_json(Wire::OpenAi, &[], "hello").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "waited {:?}",
        started.elapsed()
    );
    let retry = of_type(&events, "retry");
    assert_eq!(retry[0]["delay_ms"], 1000);
    assert!(retry[0]["reason"].as_str().unwrap().contains("429"));
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_500_on_both_wires() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        recovers_after(
            Fault::Status {
                code: 500,
                retry_after_secs: None,
                body: "boom".into(),
            },
            wire,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_truncated_stream_on_both_wires() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let (_, events) = recovers_after(Fault::TruncatedStream, wire).await;
        assert!(
            of_type(&events, "retry")[0]["reason"]
                .as_str()
                .unwrap()
                .contains("ended before")
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_aborted_stream() {
    recovers_after(Fault::AbortStream, Wire::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_idle_stream_after_the_idle_timeout() {
    let (_, events) = recovers_after(Fault::IdleStream, Wire::Anthropic).await;
    assert!(
        of_type(&events, "retry")[0]["reason"]
            .as_str()
            .unwrap()
            .contains("stream_idle_timeout")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn gives_up_after_max_retries_with_exit_1() {
    let h = Harness::new(hello()).await;
    h.config("[network]\nretry_base_delay_ms = 1\nmax_retries = 3\n");
    for _ in 0..3 {
        h.server.inject(Fault::Status {
            code: 503,
            retry_after_secs: None,
            body: "down".into(),
        });
    }
    let (output, events) = h.run_json(Wire::OpenAi, &[], "hello").await;
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(h.server.requests().len(), 3);
    let done = last(&events);
    assert_eq!(done["status"], "failed");
    let error = of_type(&events, "error");
    assert!(
        error[0]["message"]
            .as_str()
            .unwrap()
            .contains("gave up after 3 tries"),
        "{error:?}"
    );
    assert_eq!(error[0]["fatal"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn client_errors_are_not_retried_and_name_the_cause() {
    let cases: [(u16, &str); 4] = [
        (401, "OPENAI_API_KEY"),
        (403, "may not use model"),
        (404, "Check the model name 'gpt-4.1-mini'"),
        (400, "context too long"),
    ];
    for (code, needle) in cases {
        let h = Harness::new(hello()).await;
        h.config(FAST_RETRY);
        let body = if code == 400 {
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens"}}"#
                .to_owned()
        } else {
            format!(r#"{{"error":{{"message":"status {code}"}}}}"#)
        };
        h.server.inject(Fault::Status {
            code,
            retry_after_secs: None,
            body,
        });
        let mut cmd = h.command(Wire::OpenAi);
        cmd.arg("run").arg("hello");
        let output = cmd.output().await.unwrap();
        assert_eq!(output.status.code(), Some(1), "status {code}");
        assert_eq!(h.server.requests().len(), 1, "status {code} must not retry");
        assert!(
            stderr(&output).contains(needle),
            "status {code}: {}",
            stderr(&output)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_server_fails_after_retries() {
    let h = Harness::new(hello()).await;
    h.config("[network]\nretry_base_delay_ms = 1\nmax_retries = 2\n");
    let mut cmd = h.bare_command();
    cmd.env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .arg("run")
        .arg("hello");
    let output = cmd.output().await.unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("could not reach"),
        "{}",
        stderr(&output)
    );
}
