//! `[sessions] title_model`: a new session is named by one small request
//! to that model beside its first turn, its usage counted in the run's; a
//! failing title model keeps the first-line title and the run succeeds;
//! unset, no extra request is made.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, last, of_type, stderr};
use herald_testkit::{Fault, Reply, Script};
use serde_json::{Value, json};

/// Starts herald's title instruction (herald-core `runtime/title.rs`).
const TITLE_NEEDLE: &str = "[herald] Session title";

const PROMPT: &str = "NARWHAL please look at the cache settings\nand tell me what to change";

/// The title conversation (listed first: its request also holds the
/// prompt) and the session's own.
fn script() -> Script {
    Script::new()
        .conversation(
            TITLE_NEEDLE,
            vec![Reply::text("Title: \"Narwhal cache settings review.\"")],
        )
        .conversation(
            "NARWHAL",
            vec![
                Reply::tool("read_file", json!({"path": "cache.toml"})),
                Reply::text("raise the size"),
                Reply::text("still the size"),
            ],
        )
}

fn title_config(extra: &str) -> String {
    format!(
        "[sessions]\ntitle_model = \"title-mini\"\n\n[pricing.\"title-mini\"]\ninput = 1\noutput = 2\n{extra}"
    )
}

/// `herald sessions show ID --json`.
async fn shown(h: &Harness, session: &str) -> Value {
    let output = h
        .command(Wire::OpenAi)
        .args(["sessions", "show", session, "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The model of each recorded request, in arrival order.
fn models(h: &Harness) -> Vec<String> {
    h.server
        .requests()
        .iter()
        .map(|r| r.view().unwrap().model)
        .collect()
}

/// Everything herald logged under `$HERALD_HOME/logs`.
fn logs(h: &Harness) -> String {
    let Ok(dir) = std::fs::read_dir(h.home.path().join("logs")) else {
        return String::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_title_model_names_a_new_session_and_its_request_counts_in_the_run() {
    let h = Harness::new(script()).await;
    std::fs::write(h.work_path().join("cache.toml"), "size = 1\n").unwrap();
    h.config(&title_config(""));
    let (output, events) = h.run_json(Wire::OpenAi, &[], PROMPT).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let end = last(&events);
    assert_eq!(end["type"], "run.completed");
    assert_eq!(end["final_response"], "raise the size");

    // One title request, its own conversation: the prompt, no tools, not
    // the session's system prompt.
    let titles = h.requests_of(TITLE_NEEDLE);
    assert_eq!(titles.len(), 1, "{:?}", models(&h));
    let view = titles[0].view().unwrap();
    assert_eq!(view.model, "title-mini");
    assert!(view.tool_names.is_empty());
    assert!(view.conversation.contains("NARWHAL please look"));
    let session_requests = h.requests_of("NARWHAL please");
    let main: Vec<_> = session_requests
        .iter()
        .filter(|r| !r.conversation.contains(TITLE_NEEDLE))
        .collect();
    assert_eq!(main.len(), 2);
    assert_ne!(main[0].view().unwrap().system, view.system);
    // Made beside the turn, not after it: it arrived before the turn's
    // last request.
    let order: Vec<bool> = h
        .server
        .requests()
        .iter()
        .map(|r| r.conversation.contains(TITLE_NEEDLE))
        .collect();
    assert_ne!(order.last(), Some(&true), "{order:?}");

    // The stored title is the model's, cleaned.
    let session = end["session_id"].as_str().unwrap();
    let stored = shown(&h, session).await;
    assert_eq!(stored["session"]["title"], "Narwhal cache settings review");

    // Its usage: a usage event, in the run's usage and in the store.
    let usage = of_type(&events, "usage");
    assert_eq!(usage.len(), 3, "two turn requests and the title's");
    assert_eq!(end["usage"]["requests"], 3);
    assert_eq!(end["tree_usage"]["requests"], 3);
    let micros = |v: &Value| (v.as_f64().unwrap() * 1e6).round() as i64;
    let sum: i64 = usage.iter().map(|e| micros(&e["cost_usd"])).sum();
    assert_eq!(micros(&end["tree_usage"]["cost_usd"]), sum);
    let report = h
        .command(Wire::OpenAi)
        .args(["usage", "--by", "model", "--json"])
        .output()
        .await
        .unwrap();
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let row = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "title-mini")
        .unwrap_or_else(|| panic!("no title-mini row: {report}"));
    assert_eq!(row["requests"], 1);
    assert_eq!(stored["tree_usage"]["requests"], 3);

    // A second turn of the same session asks for no title again.
    let output = h
        .command(Wire::OpenAi)
        .args(["run", "--json", "--resume", session, "NARWHAL again"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        last(&common::parse_events(&output.stdout))["final_response"],
        "still the size"
    );
    assert_eq!(h.requests_of(TITLE_NEEDLE).len(), 1);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_title_model_keeps_the_first_line_title_and_the_run_succeeds() {
    let h = Harness::new(script()).await;
    std::fs::write(h.work_path().join("cache.toml"), "size = 1\n").unwrap();
    h.config(&title_config("\n[network]\nretry_base_delay_ms = 1\n"));
    for _ in 0..3 {
        h.server.inject_for_model("title-mini", Fault::status(500));
    }
    let (output, events) = h.run_json(Wire::OpenAi, &[], PROMPT).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let end = last(&events);
    assert_eq!(end["status"], "completed");
    assert_eq!(end["final_response"], "raise the size");
    // The title requests got 500; the turn's requests were answered.
    let titles = h.requests_of(TITLE_NEEDLE);
    assert!(!titles.is_empty());
    assert!(
        titles
            .iter()
            .all(|r| r.view().unwrap().model == "title-mini")
    );
    assert_eq!(of_type(&events, "usage").len(), 2);
    assert_eq!(end["usage"]["requests"], 2);
    assert!(
        of_type(&events, "error").iter().all(|e| e["fatal"] != true),
        "{events:?}"
    );
    let session = end["session_id"].as_str().unwrap();
    let stored = shown(&h, session).await;
    assert_eq!(
        stored["session"]["title"],
        "NARWHAL please look at the cache settings"
    );
    assert!(logs(&h).contains("title request failed"), "{}", logs(&h));
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_title_model_no_title_request_is_made() {
    let h = Harness::new(script()).await;
    std::fs::write(h.work_path().join("cache.toml"), "size = 1\n").unwrap();
    let (output, events) = h.run_json(Wire::OpenAi, &[], PROMPT).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let end = last(&events);
    assert_eq!(end["final_response"], "raise the size");
    assert_eq!(models(&h), ["gpt-4.1-mini", "gpt-4.1-mini"]);
    assert!(h.requests_of(TITLE_NEEDLE).is_empty());
    assert_eq!(end["usage"]["requests"], 2);
    let stored = shown(&h, end["session_id"].as_str().unwrap()).await;
    assert_eq!(
        stored["session"]["title"],
        "NARWHAL please look at the cache settings"
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_title_model_that_never_answers_is_abandoned_within_its_bound() {
    let h = Harness::new(script()).await;
    std::fs::write(h.work_path().join("cache.toml"), "size = 1\n").unwrap();
    // The stream stays silent far longer than the bound.
    h.config(&title_config("\n[network]\nstream_idle_timeout = 300\n"));
    h.server.inject_for_model("title-mini", Fault::IdleStream);
    let started = std::time::Instant::now();
    let (output, events) = h.run_json(Wire::OpenAi, &[], PROMPT).await;
    let took = started.elapsed();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
    let end = last(&events);
    assert_eq!(end["final_response"], "raise the size");
    assert_eq!(end["usage"]["requests"], 2);
    let stored = shown(&h, end["session_id"].as_str().unwrap()).await;
    assert_eq!(
        stored["session"]["title"],
        "NARWHAL please look at the cache settings"
    );
    assert!(logs(&h).contains("did not answer in time"), "{}", logs(&h));
}
