//! Usage and configuration errors exit with code 2 and say what to set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, stderr};
use herald_testkit::{Reply, Script};

fn never_called() -> Script {
    Script::new().conversation("x", vec![Reply::text("unused")])
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_key_and_base_url_is_exit_2_naming_the_variables() {
    let h = Harness::new(never_called()).await;
    let mut cmd = h.bare_command();
    cmd.arg("run").arg("hello");
    let output = cmd.output().await.unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.contains("OPENAI_API_KEY") && err.contains("OPENAI_BASE_URL"),
        "{err}"
    );

    let mut cmd = h.bare_command();
    cmd.env("HERALD_PROVIDER", "anthropic")
        .arg("run")
        .arg("hello");
    let output = cmd.output().await.unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("ANTHROPIC_API_KEY"),
        "{}",
        stderr(&output)
    );
    assert!(h.server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_config_file_unknown_provider_and_empty_prompt_are_exit_2() {
    let h = Harness::new(never_called()).await;
    h.config("model = [");
    let (output, _) = h.run_json(Wire::OpenAi, &[], "hello").await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("config.toml"),
        "{}",
        stderr(&output)
    );
    h.config("");

    let (output, _) = h
        .run_json(Wire::OpenAi, &["--provider", "gemini"], "hello")
        .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("unknown provider 'gemini'"));

    let (output, _) = h.run_json(Wire::OpenAi, &[], "   ").await;
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("prompt is empty"));

    let (output, _) = h
        .run_json(Wire::OpenAi, &["--max-iterations", "0"], "hello")
        .await;
    assert_eq!(output.status.code(), Some(2));

    let (output, _) = h
        .run_json(Wire::OpenAi, &["--cwd", "/no/such/dir"], "hello")
        .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(h.server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn version_and_config_path() {
    let h = Harness::new(never_called()).await;
    let output = h.bare_command().arg("--version").output().await.unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("herald "));
    let output = h
        .bare_command()
        .args(["config", "path"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success());
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("[network]")
    );
}
