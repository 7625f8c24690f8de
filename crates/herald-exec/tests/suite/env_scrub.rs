//! The script's environment holds no secrets, set in a child process of the
//! test binary (see `herald_testkit::rerun_with_env`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{config, python, run};
use tokio_util::sync::CancellationToken;

/// Runs [`api_keys_and_other_secrets_do_not_reach_the_script_in_child`] in a child process with secrets in its environment.
#[test]
fn api_keys_and_other_secrets_do_not_reach_the_script() {
    herald_testkit::rerun_with_env(
        "suite::env_scrub::api_keys_and_other_secrets_do_not_reach_the_script_in_child",
        &[
            ("OPENAI_API_KEY", "sk-fake-openai"),
            ("ANTHROPIC_API_KEY", "sk-ant-fake"),
            ("GITHUB_TOKEN", "ghp_fake"),
            ("MY_DB_PASSWORD", "hunter2"),
            ("HERALD_EXEC_TEST_PLAIN", "plain"),
            ("LC_HERALD_TEST", "C"),
        ],
    );
}

#[test]
#[ignore = "run by api_keys_and_other_secrets_do_not_reach_the_script with the variables set"]
fn api_keys_and_other_secrets_do_not_reach_the_script_in_child() {
    let Some(py) = python() else { return };
    if !herald_testkit::in_child(
        "suite::env_scrub::api_keys_and_other_secrets_do_not_reach_the_script_in_child",
    ) {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let code = r#"
import os, subprocess
from herald_tools import terminal
names = sorted(os.environ)
print(",".join(names))
print(subprocess.run(["env"], capture_output=True, text=True).stdout.count("fake"))
env = terminal("env")["output"]
print(env.count("fake"), "HERALD_EXEC_TEST_PLAIN=plain" in env)
"#;
    let r = runtime.block_on(run(
        config(py),
        dir.path(),
        code,
        None,
        CancellationToken::new(),
    ));
    assert_eq!(r.status(), "success", "{}", r.json);
    let mut lines = r.output().lines();
    let names: Vec<&str> = lines.next().unwrap().split(',').collect();
    for secret in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GITHUB_TOKEN",
        "MY_DB_PASSWORD",
        "HERALD_EXEC_TEST_PLAIN",
    ] {
        assert!(!names.contains(&secret), "{secret} leaked: {names:?}");
    }
    for expected in [
        "PATH",
        "LC_HERALD_TEST",
        "HERALD_RPC_SOCKET",
        "HERALD_RPC_TOKEN",
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",
    ] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }
    assert_eq!(lines.next(), Some("0"), "a child process saw a secret");
    // terminal runs in herald, with herald's environment minus secrets.
    assert_eq!(
        lines.next(),
        Some("0 True"),
        "the script's terminal call saw a secret"
    );
}
