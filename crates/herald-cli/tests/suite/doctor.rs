//! `herald doctor` against the scripted server as provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, stderr};
use herald_testkit::Script;
use serde_json::Value;

async fn doctor(cmd: &mut tokio::process::Command) -> (std::process::Output, Value) {
    cmd.args(["doctor", "--json"]);
    let output = cmd.output().await.unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    (output, report)
}

fn status<'a>(report: &'a Value, name: &str) -> (&'a str, &'a str) {
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {report}"));
    (
        check["status"].as_str().unwrap(),
        check["detail"].as_str().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_working_setup_passes_every_check_without_printing_the_key() {
    let h = Harness::new(Script::new()).await;
    let (output, report) = doctor(&mut h.command(Wire::OpenAi)).await;
    assert!(output.status.success(), "{report} {}", stderr(&output));
    assert_eq!(report["ok"], true);
    for name in ["config", "credentials", "provider", "store"] {
        assert_eq!(status(&report, name).0, "ok", "{name}: {report}");
    }
    let (_, provider) = status(&report, "provider");
    assert!(
        provider.contains(&format!(
            "{}/models answered HTTP",
            h.server.openai_base_url()
        )),
        "{provider}"
    );
    let (_, credentials) = status(&report, "credentials");
    assert!(
        credentials.contains("API key from OPENAI_API_KEY"),
        "{credentials}"
    );
    let (_, store) = status(&report, "store");
    assert!(
        store.contains(&format!("schema version {}", herald_store::SCHEMA_VERSION)),
        "{store}"
    );
    let (python, detail) = status(&report, "python");
    match herald_exec::find_python("") {
        Ok(_) => assert_eq!(
            (python, detail.contains("execute_code available")),
            ("ok", true)
        ),
        Err(_) => assert_eq!(
            (python, detail.contains("execute_code is disabled")),
            ("warn", true)
        ),
    }
    let (landlock, _) = status(&report, "landlock");
    assert!(landlock == "ok" || landlock == "warn", "{report}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("sk-test-openai"));

    // The plain report: one line per check.
    let mut cmd = h.command(Wire::OpenAi);
    cmd.arg("doctor");
    let plain = cmd.output().await.unwrap();
    assert!(plain.status.success());
    let text = String::from_utf8_lossy(&plain.stdout);
    assert_eq!(text.lines().count(), 8, "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("ok    web") && l.contains("web_search off")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("ok    provider")),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_provider_and_missing_python_are_reported() {
    let h = Harness::new(Script::new()).await;
    h.config("[code_execution]\npython = \"herald-no-such-python\"\n");
    let mut cmd = h.bare_command();
    // Port 9 (discard) is closed on test machines.
    cmd.env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1");
    let (output, report) = doctor(&mut cmd).await;
    assert_eq!(output.status.code(), Some(1), "{report}");
    assert_eq!(report["ok"], false);
    let (provider, detail) = status(&report, "provider");
    assert_eq!(provider, "fail");
    assert!(
        detail.contains("cannot reach http://127.0.0.1:9/v1/models"),
        "{detail}"
    );
    let (python, detail) = status(&report, "python");
    assert_eq!(python, "warn");
    assert!(
        detail.contains("execute_code is disabled: herald-no-such-python was not found on PATH"),
        "{detail}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_search_backend_without_its_key_is_a_warning_naming_the_variable() {
    let h = Harness::new(Script::new()).await;
    h.config("[web]\nsearch = \"tavily\"\n");
    let (_, report) = doctor(&mut h.command(Wire::OpenAi)).await;
    let (web, detail) = status(&report, "web");
    assert_eq!(web, "warn", "{detail}");
    assert!(detail.contains("$TAVILY_API_KEY"), "{detail}");
    let mut cmd = h.command(Wire::OpenAi);
    cmd.env("TAVILY_API_KEY", "tvly-test");
    let (_, report) = doctor(&mut cmd).await;
    let (web, detail) = status(&report, "web");
    assert_eq!(web, "ok", "{detail}");
    assert!(
        detail.contains("web_search asks tavily at https://api.tavily.com/search"),
        "{detail}"
    );
    assert!(!detail.contains("tvly-test"));
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_credentials_fail_and_name_the_variables() {
    let h = Harness::new(Script::new()).await;
    let (output, report) = doctor(&mut h.bare_command()).await;
    assert_eq!(output.status.code(), Some(1));
    let (credentials, detail) = status(&report, "credentials");
    assert_eq!(credentials, "fail");
    assert!(detail.contains("OPENAI_API_KEY"), "{detail}");
    assert_eq!(status(&report, "provider").0, "warn");
    // The store is still checked.
    assert_eq!(status(&report, "store").0, "ok");
}
