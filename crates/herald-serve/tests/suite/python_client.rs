//! Wire compatibility checked by code we did not write: the official
//! `openai` Python package (installed by `.ci/run` into `.ci/venv`) drives
//! herald serve. Without the virtualenv this test fails and says how to
//! make it; it never skips.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;

use common::{MODEL, Serve, TOKEN};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

/// The virtualenv's interpreter: `<workspace>/.ci/venv/bin/python`.
fn venv_python() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join(".ci/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: the openai-package test needs the CI virtualenv. Run .ci/run once \
         (or: python3 -m venv .ci/venv && .ci/venv/bin/pip install openai==3.51.0)",
        python.display()
    );
    python
}

fn script() -> Script {
    Script::new()
        .conversation(
            "py chat: hello",
            vec![Reply::text("hi from herald"), Reply::text("hi again")],
        )
        .conversation(
            "py stream: read it",
            vec![
                Reply::tool("read_file", json!({"path": "notes.txt"})),
                Reply::text("the notes say: streaming through the openai package works"),
            ],
        )
        .conversation(
            "py responses: my name is Ada",
            vec![Reply::text("Hello Ada."), Reply::text("You are Ada.")],
        )
        .conversation(
            "py responses: stream",
            vec![Reply::text("streamed response text")],
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_openai_python_package_works_against_herald_serve() {
    let python = venv_python();
    let serve = Serve::start(script()).await;
    std::fs::write(serve.work_path().join("notes.txt"), "hi\n").unwrap();
    let client = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/openai_client.py");
    let output = tokio::process::Command::new(&python)
        .arg(client)
        .env("HERALD_URL", &serve.url)
        .env("HERALD_TOKEN", TOKEN)
        .env("HERALD_MODEL", MODEL)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the script failed:\n{stderr}\n{stdout}"
    );
    let seen: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));

    assert_eq!(seen["models"], json!([MODEL, "herald"]));
    let chat = &seen["chat"];
    assert_eq!(chat["content"], "hi from herald");
    assert_eq!(chat["finish_reason"], "stop");
    assert!(chat["session"].as_str().unwrap().starts_with("ses_"));
    assert_eq!(
        chat["total_tokens"].as_u64().unwrap(),
        chat["prompt_tokens"].as_u64().unwrap() + chat["completion_tokens"].as_u64().unwrap()
    );
    assert_eq!(seen["chat_again"], "hi again");

    let stream = &seen["stream"];
    assert_eq!(
        stream["content"],
        "the notes say: streaming through the openai package works"
    );
    assert!(stream["pieces"].as_u64().unwrap() > 1, "{stream}");
    assert_eq!(stream["finish_reason"], "stop");
    assert_eq!(stream["roles"], json!(["assistant"]));
    assert!(stream["total_tokens"].as_u64().unwrap() > 0);

    let responses = &seen["responses"];
    assert_eq!(responses["first"], "Hello Ada.");
    assert_eq!(responses["second"], "You are Ada.");
    assert_eq!(responses["status"], "completed");
    assert_eq!(responses["previous"], true);
    assert!(responses["output_tokens"].as_u64().unwrap() > 0);

    let streamed = &seen["responses_stream"];
    assert_eq!(streamed["text"], "streamed response text");
    assert_eq!(streamed["final"], "streamed response text");
    assert_eq!(streamed["types"][0], "response.created");
    assert_eq!(
        streamed["types"].as_array().unwrap().last().unwrap(),
        "response.completed"
    );

    let errors = &seen["errors"];
    assert_eq!(errors["model"], json!([404, "model_not_found"]));
    assert_eq!(errors["auth"], json!([401, "invalid_api_key"]));
    assert_eq!(errors["session"], json!([404, "session_not_found"]));
    serve.stop().await;
}
