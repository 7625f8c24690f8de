//! The config file is checked: unknown keys warn with the closest valid key
//! (and fail `herald doctor`), numbers out of range stop every command with
//! exit 2 before any request, unimplemented sections say they do nothing,
//! `herald config show` works without a key, and a `[delegation]` provider
//! override resolves its own key and endpoint.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, last, stderr};
use herald_testkit::{Api, Reply, Script, wait_until};
use serde_json::{Value, json};

fn hello_script() -> Script {
    Script::new().conversation("hello", vec![Reply::text("hi there")])
}

async fn doctor_json(cmd: &mut tokio::process::Command) -> (std::process::Output, Value) {
    cmd.args(["doctor", "--json"]);
    let output = cmd.output().await.unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {} / {}",
            String::from_utf8_lossy(&output.stdout),
            stderr(&output)
        )
    });
    (output, report)
}

fn check<'a>(report: &'a Value, name: &str) -> (&'a str, &'a str) {
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
async fn unknown_keys_warn_with_the_closest_key_and_the_run_goes_on() {
    let h = Harness::new(hello_script()).await;
    h.config(
        "modle = \"gpt-4.1\"\n[delegation]\nmax_spawn_dept = 2\n[compression]\ntreshold = 0.4\n",
    );
    let (output, events) = h.run_json(Wire::OpenAi, &[], "hello").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "hi there");
    let err = stderr(&output);
    for expected in [
        "unknown top-level key `modle`",
        "did you mean `model`?",
        "unknown key `max_spawn_dept` in [delegation]",
        "did you mean `max_spawn_depth`?",
        "unknown key `treshold` in [compression]",
        "did you mean `threshold`?",
        "config.toml",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in:\n{err}");
    }
    assert_eq!(h.server.request_count(), 1);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_fails_on_unknown_keys_and_warns_on_unimplemented_sections() {
    let h = Harness::new(Script::new()).await;
    h.config("[delegation]\nmax_spawn_dept = 2\n");
    let (output, report) = doctor_json(&mut h.command(Wire::OpenAi)).await;
    assert_eq!(output.status.code(), Some(1), "{report}");
    assert_eq!(report["ok"], false);
    let (status, detail) = check(&report, "config");
    assert_eq!(status, "fail", "{report}");
    assert!(
        detail.contains("`max_spawn_dept` in [delegation]")
            && detail.contains("did you mean `max_spawn_depth`?"),
        "{detail}"
    );

    // Every section is implemented now: [permissions] and [pricing] pass.
    h.config(
        "[permissions]\nmode = \"read-only\"\ndeny = [\"write_file(/etc/**)\"]\n[pricing.m]\ninput = 1\noutput = 2\n",
    );
    let (output, report) = doctor_json(&mut h.command(Wire::OpenAi)).await;
    assert!(output.status.success(), "{report} {}", stderr(&output));
    let (status, detail) = check(&report, "config");
    assert_eq!(status, "ok", "{report}");
    assert!(!detail.contains("not implemented"), "{detail}");
}

#[tokio::test(flavor = "multi_thread")]
async fn implemented_sections_run_without_a_warning() {
    let h = Harness::new(hello_script()).await;
    h.config("[permissions]\nmode = \"read-only\"\n[pricing.m]\ninput = 1.0\noutput = 2.0\n[mcp_servers.web]\nurl = \"http://127.0.0.1:1/mcp\"\nstartup_timeout_sec = 1\n");
    let (output, _) = h.run_json(Wire::OpenAi, &[], "hello").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(!err.contains("not implemented"), "{err}");
    // [mcp_servers] is implemented: no such warning, the server is started
    // (and reported, as it cannot be reached).
    assert!(!err.contains("[mcp_servers] is accepted"), "{err}");
    assert!(err.contains("MCP server `web`"), "{err}");
    assert!(!err.contains("[permissions]"), "{err}");
    assert!(
        !err.lines()
            .any(|l| l.contains("unknown") && !l.contains("MCP server")),
        "{err}"
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_permission_settings_exit_2_before_any_request_and_change_nothing() {
    let h = Harness::new(hello_script()).await;
    for (config, expected) in [
        (
            "[permissions]\nmode = \"readonly\"\n",
            "unknown permission mode 'readonly'",
        ),
        (
            "[permissions]\nallow = [\"terminal(git push*\"]\n",
            "terminal(git push*",
        ),
    ] {
        h.config(config);
        let (output, _) = h.run_json(Wire::OpenAi, &[], "hello").await;
        assert_eq!(
            output.status.code(),
            Some(2),
            "{config}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(expected),
            "{config}: {}",
            stderr(&output)
        );
    }
    std::fs::create_dir_all(h.work.path().join(".herald")).unwrap();
    std::fs::write(
        h.work.path().join(".herald/permissions.toml"),
        "grant = [\"terminal(*)\"]\n",
    )
    .unwrap();
    h.config("");
    let (output, _) = h.run_json(Wire::OpenAi, &[], "hello").await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("unknown key `grant`"),
        "{}",
        stderr(&output)
    );
    assert!(h.server.requests().is_empty(), "no request may be made");
    assert!(
        !h.home.path().join("state.db").exists() || {
            let out = h
                .bare_command()
                .args(["sessions", "list", "--json"])
                .output()
                .await
                .unwrap();
            !String::from_utf8_lossy(&out.stdout).contains("ses_")
        }
    );
    // A project file that grants itself permissions is ignored, with a warning.
    std::fs::write(
        h.work.path().join(".herald/permissions.toml"),
        "allow = [\"terminal(*)\"]\n",
    )
    .unwrap();
    let (output, events) = h.run_json(Wire::OpenAi, &[], "hello").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let warned = events.iter().any(|e| {
        e["type"] == "error"
            && e["message"]
                .as_str()
                .unwrap_or("")
                .contains("a project may only add ask and deny")
    });
    assert!(warned, "{events:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn numbers_out_of_range_exit_2_naming_key_value_and_range_before_any_request() {
    let h = Harness::new(hello_script()).await;
    for (config, key, allowed) in [
        (
            "[compression]\nthreshold = 5.0\n",
            "[compression] threshold = 5.0",
            "allowed: 0.05 to 0.95",
        ),
        (
            "[delegation]\nmax_spawn_depth = 9\n",
            "[delegation] max_spawn_depth = 9",
            "allowed: 1 to 3",
        ),
        (
            "[network]\nstream_idle_timeout = 0\n",
            "[network] stream_idle_timeout = 0",
            "allowed: 1 to 3600",
        ),
        (
            "[network]\nmax_retries = -1\n",
            "[network] max_retries = -1",
            "allowed: 1 to 20",
        ),
        (
            "[memory]\nmemory_char_limit = 0\n",
            "[memory] memory_char_limit = 0",
            "allowed: 100 to 100000",
        ),
        (
            "[tools]\noutput_limit_chars = -5\n",
            "[tools] output_limit_chars = -5",
            "allowed: 1000 to 10000000",
        ),
        (
            "[code_execution]\ntimeout = 0\n",
            "[code_execution] timeout = 0",
            "allowed: 1 to 86400",
        ),
        (
            "[delegation]\nmax_concurrent_children = 0\n",
            "[delegation] max_concurrent_children = 0",
            "allowed: 1 to 10000",
        ),
        (
            "max_iterations = 0\n",
            "max_iterations = 0",
            "allowed: 1 to 10000",
        ),
    ] {
        h.config(config);
        let (output, _) = h.run_json(Wire::OpenAi, &[], "hello").await;
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{config}: {err}");
        assert!(
            err.contains(&format!("{key} is out of range")) && err.contains(allowed),
            "{config}: {err}"
        );
        // Commands that only read the config stop the same way.
        let output = h
            .bare_command()
            .args(["config", "show"])
            .output()
            .await
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "config show, {config}");
        assert!(stderr(&output).contains(allowed), "{}", stderr(&output));
    }
    // Doctor reports it as a failed config check and exits 2 as well.
    h.config("[compression]\nthreshold = 5.0\n");
    let (output, report) = doctor_json(&mut h.command(Wire::OpenAi)).await;
    assert_eq!(output.status.code(), Some(2), "{report}");
    let (status, detail) = check(&report, "config");
    assert_eq!(status, "fail");
    assert!(detail.contains("0.05 to 0.95"), "{detail}");
    assert_eq!(
        h.server.request_count(),
        0,
        "a bad config must stop herald before any request"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn images_is_a_boolean_default_on_and_anything_else_exits_2() {
    let h = Harness::new(hello_script()).await;
    let show = |h: &Harness| {
        let mut cmd = h.bare_command();
        cmd.args(["config", "show", "--json"]);
        cmd
    };
    let output = show(&h).output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(shown["images"], true, "{shown}");

    h.config("images = false\n");
    let output = show(&h).output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(shown["images"], false, "{shown}");
    let (output, events) = h.run_json(Wire::OpenAi, &[], "hello").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "hi there");
    assert!(!stderr(&output).contains("unknown"), "{}", stderr(&output));

    for bad in [
        "images = \"no\"\n",
        "images = 0\n",
        "[images]\nenabled = true\n",
    ] {
        h.config(bad);
        let (output, _) = h.run_json(Wire::OpenAi, &[], "hello").await;
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains("config.toml") && err.contains("images") && err.contains("boolean"),
            "{bad}: {err}"
        );
    }
    assert_eq!(
        h.server.request_count(),
        1,
        "only the run with images = false"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn config_show_needs_no_key_and_prints_every_section() {
    let h = Harness::new(Script::new()).await;
    h.config(
        "model = \"my-model\"\n[delegation]\nmax_spawn_depth = 2\napi_key = \"sk-child-secret-1234\"\n[compression]\nthreshold = 0.7\n",
    );
    let output = h
        .bare_command()
        .args(["config", "show"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "model = \"my-model\"",
        "credentials = \"missing: set OPENAI_API_KEY",
        "api_key = \"(not set)\"",
        "[network]",
        "stream_idle_timeout = 120",
        "request_timeout_seconds = 600",
        "max_requests_in_flight = 1024",
        "[tools]",
        "output_limit_chars = 50000",
        "[delegation]",
        "max_spawn_depth = 2",
        "[delegation.children_use]",
        "[memory]",
        "memory_char_limit = 2200",
        "[compression]",
        "threshold = 0.7",
        "[code_execution]",
        "timeout = 300",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(!text.contains("sk-child-secret-1234"), "{text}");

    let output = h
        .bare_command()
        .args(["config", "show", "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(shown["model"], "my-model");
    assert_eq!(shown["provider"], "openai");
    assert_eq!(shown["base_url"], "https://api.openai.com/v1");
    assert_eq!(shown["network"]["max_retries"], 4);
    assert_eq!(shown["tools"]["output_limit_chars"], 50_000);
    assert_eq!(shown["delegation"]["max_spawn_depth"], 2);
    assert_eq!(shown["delegation"]["children_use"]["model"], "my-model");
    assert_eq!(shown["memory"]["user_char_limit"], 1375);
    assert_eq!(shown["compression"]["threshold"], 0.7);
    assert_eq!(shown["code_execution"]["max_tool_calls"], 50);
    assert!(
        shown["credentials"]
            .as_str()
            .unwrap()
            .contains("OPENAI_API_KEY")
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("sk-child-secret-1234"));

    // With a key in the environment it says where the key comes from.
    let output = h
        .command(Wire::OpenAi)
        .args(["config", "show", "--json"])
        .output()
        .await
        .unwrap();
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(shown["credentials"], "API key from OPENAI_API_KEY");
    assert_eq!(shown["base_url"], h.server.openai_base_url());
    assert!(!String::from_utf8_lossy(&output.stdout).contains("sk-test-openai"));
    assert_eq!(h.server.request_count(), 0);
}

fn delegating_script() -> Script {
    Script::new()
        .conversation(
            "parent: delegate",
            vec![
                Reply::tool(
                    "delegate_task",
                    json!({"goal": "child on anthropic: answer"}),
                ),
                Reply::text("parent done"),
            ],
        )
        .conversation(
            "child on anthropic",
            vec![Reply::text("child answer from anthropic")],
        )
}

/// Parent on OpenAI, `[delegation] provider = "anthropic"`: the child's
/// requests go to the Anthropic endpoint with the Anthropic key; the
/// parent's key never goes there.
#[tokio::test(flavor = "multi_thread")]
async fn a_child_provider_override_uses_its_own_key_and_endpoint() {
    let h = Harness::new(delegating_script()).await;
    h.config("[delegation]\nprovider = \"anthropic\"\nmodel = \"claude-haiku-4-5\"\n");
    let mut cmd = h.command(Wire::OpenAi);
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-child-key")
        .env("ANTHROPIC_BASE_URL", h.server.anthropic_base_url())
        .args(["run", "--json", "parent: delegate"]);
    let output = cmd.output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let events = common::parse_events(&output.stdout);
    assert_eq!(last(&events)["final_response"], "parent done");

    let requests = h.server.requests();
    let child: Vec<_> = requests
        .iter()
        .filter(|r| r.conversation.contains("child on anthropic"))
        .collect();
    assert!(
        !child.is_empty(),
        "the child made no request: {requests:#?}"
    );
    for r in &child {
        assert_eq!(r.api, Api::Anthropic, "child request on {}", r.path);
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("x-api-key"), Some("sk-ant-child-key"));
        assert_eq!(r.body["model"], "claude-haiku-4-5");
    }
    for r in &requests {
        let sent: String = r
            .headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}\n"))
            .collect();
        if r.api == Api::Anthropic {
            assert!(
                !sent.contains("sk-test-openai"),
                "the parent's key went to the Anthropic endpoint:\n{sent}"
            );
        } else {
            assert!(r.conversation.contains("parent: delegate"));
            assert_eq!(r.header("authorization"), Some("Bearer sk-test-openai"));
            assert!(!sent.contains("sk-ant-child-key"), "{sent}");
        }
    }
    h.server.assert_invariants();

    // `[delegation] api_key` / `base_url` win over the environment.
    let h = Harness::new(delegating_script()).await;
    h.config(&format!(
        "[delegation]\nprovider = \"anthropic\"\napi_key = \"sk-ant-from-config\"\nbase_url = \"{}\"\n",
        h.server.anthropic_base_url()
    ));
    let mut cmd = h.command(Wire::OpenAi);
    cmd.env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .args(["run", "--json", "parent: delegate"]);
    let output = cmd.output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let child: Vec<_> = h
        .server
        .requests()
        .into_iter()
        .filter(|r| r.api == Api::Anthropic)
        .collect();
    assert_eq!(child.len(), 1);
    assert_eq!(child[0].header("x-api-key"), Some("sk-ant-from-config"));
    assert_eq!(child[0].body["model"], "claude-sonnet-4-5");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_provider_without_credentials_is_exit_2_and_doctor_checks_it() {
    let h = Harness::new(delegating_script()).await;
    h.config("[delegation]\nprovider = \"anthropic\"\n");
    let (output, _) = h.run_json(Wire::OpenAi, &[], "parent: delegate").await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("[delegation] provider 'anthropic'") && err.contains("ANTHROPIC_API_KEY"),
        "{err}"
    );
    assert_eq!(h.server.request_count(), 0);

    let mut cmd = h.command(Wire::OpenAi);
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-child-key")
        .env("ANTHROPIC_BASE_URL", h.server.anthropic_base_url());
    let (output, report) = doctor_json(&mut cmd).await;
    assert!(output.status.success(), "{report}");
    let (status, detail) = check(&report, "child provider");
    assert_eq!(status, "ok", "{report}");
    assert!(
        detail.contains("children use provider anthropic")
            && detail.contains("API key from ANTHROPIC_API_KEY")
            && detail.contains(&format!(
                "{}/v1/models answered HTTP",
                h.server.anthropic_base_url()
            )),
        "{detail}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("sk-ant-child-key"));

    // An unreachable child endpoint fails the check.
    let mut cmd = h.command(Wire::OpenAi);
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-child-key")
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9");
    let (output, report) = doctor_json(&mut cmd).await;
    assert_eq!(output.status.code(), Some(1), "{report}");
    let (status, detail) = check(&report, "child provider");
    assert_eq!(status, "fail", "{report}");
    assert!(
        detail.contains("cannot reach http://127.0.0.1:9/v1/models"),
        "{detail}"
    );
}

/// `cmd` wrapped in `sh` so it starts only when a byte arrives on the FIFO
/// `gate`: processes spawned one by one then start at the same instant.
/// Each shell creates a file `GATE.ready.PID` just before it waits at the
/// gate (see [`waiting_at`]).
fn gated(cmd: &tokio::process::Command, gate: &std::path::Path) -> tokio::process::Command {
    let std_cmd = cmd.as_std();
    let mut wrapper = tokio::process::Command::new("sh");
    wrapper
        .arg("-c")
        .arg(": > \"$0.ready.$$\"; read x < \"$0\"; exec \"$@\"")
        .arg(gate)
        .arg(std_cmd.get_program())
        .args(std_cmd.get_args());
    for (key, value) in std_cmd.get_envs() {
        match value {
            Some(value) => wrapper.env(key, value),
            None => wrapper.env_remove(key),
        };
    }
    wrapper
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    wrapper
}

/// How many [`gated`] shells have reached `gate`.
fn waiting_at(gate: &std::path::Path) -> usize {
    let ready = format!(
        "{}.ready.",
        gate.file_name().unwrap_or_default().to_string_lossy()
    );
    std::fs::read_dir(gate.parent().unwrap_or(gate))
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&ready))
                .count()
        })
        .unwrap_or(0)
}

/// Several `herald run` released at the same instant on a brand-new
/// `HERALD_HOME`: the store's creation, WAL switch and migrations wait for
/// each other, so every run succeeds.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_first_runs_on_a_new_home_all_succeed() {
    use std::io::Write;
    const PROCESSES: usize = 6;
    const ROUNDS: usize = 5;
    let h = Harness::new(Script::new().responder(|_| Reply::text("started"))).await;
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let gate = dir.path().join("gate");
        let made = std::process::Command::new("mkfifo")
            .arg(&gate)
            .status()
            .unwrap();
        assert!(made.success());
        // Held open read-write, so the shells' opens never block and the
        // bytes written below wait in the pipe for any late reader.
        let mut gate_fd = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&gate)
            .unwrap();
        let runs: Vec<_> = (0..PROCESSES)
            .map(|i| {
                let mut cmd = h.command(Wire::OpenAi);
                cmd.env("HERALD_HOME", dir.path().join("herald"))
                    .args(["run", &format!("first start {round}-{i}")]);
                gated(&cmd, &gate).spawn().unwrap()
            })
            .collect();
        wait_until(
            "every shell to wait at the gate",
            std::time::Duration::from_secs(20),
            || waiting_at(&gate) == PROCESSES,
        )
        .await;
        gate_fd.write_all(&[b'\n'; PROCESSES]).unwrap();
        for (i, run) in runs.into_iter().enumerate() {
            let output = run.wait_with_output().await.unwrap();
            assert!(
                output.status.success(),
                "round {round}, process {i}: {}",
                stderr(&output)
            );
            assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "started");
        }
        drop(gate_fd);
    }
    assert_eq!(h.server.request_count(), PROCESSES * ROUNDS);
    h.server.assert_invariants();
}

/// `[network] request_timeout_seconds` must be a whole number of seconds
/// from 1 to 86400: 0, a negative number or text stops every run with exit
/// code 2 and a message naming the key, before any request or session.
#[tokio::test(flavor = "multi_thread")]
async fn a_bad_request_timeout_exits_2_and_changes_nothing() {
    let h = Harness::new(hello_script()).await;
    for (value, expected) in [
        (
            "0",
            "[network] request_timeout_seconds = 0 is out of range; allowed: 1 to 86400",
        ),
        (
            "-30",
            "[network] request_timeout_seconds = -30 is out of range; allowed: 1 to 86400",
        ),
        ("\"ten\"", "request_timeout_seconds"),
        ("2.5", "request_timeout_seconds"),
    ] {
        h.config(&format!("[network]\nrequest_timeout_seconds = {value}\n"));
        let (output, events) = h.run_json(Wire::OpenAi, &[], "hello").await;
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{value}: {err}");
        assert!(err.contains(expected), "{value}: {err}");
        assert!(err.contains("config.toml"), "{value}: {err}");
        assert!(events.is_empty(), "{value}: {events:?}");
    }
    assert_eq!(h.server.request_count(), 0, "no request may be made");
    let sessions = h.cli_json(&["sessions", "list", "--json"]).await;
    assert_eq!(sessions, serde_json::json!([]), "no session may be stored");
    // A valid value runs.
    h.config("[network]\nrequest_timeout_seconds = 30\n");
    let (output, _) = h.run_json(Wire::OpenAi, &[], "hello").await;
    assert!(output.status.success(), "{}", stderr(&output));
}
