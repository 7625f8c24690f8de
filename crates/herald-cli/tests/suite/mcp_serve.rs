//! `herald mcp serve` (stdio) and `/mcp` under `herald serve`, driven by
//! the official `mcp` Python package (installed by `.ci/run` into
//! `.ci/venv`) against the scripted model. Without the virtualenv these
//! tests fail and say how to make it; they never skip. Two tests speak raw
//! JSON-RPC: closing stdin ends the server and the tool processes of a
//! running turn; cancelling a `run` request interrupts its turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use common::{Harness, Wire, assert_gone, sleeper_command, tool_results};
use herald_testkit::{Reply, Script, ScriptedCall};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

/// The version `.ci/run` installs.
const MCP_PY_VERSION: &str = "2.3.0";

/// The virtualenv's interpreter, with the `mcp` package importable.
fn venv_python() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join(".ci/venv/bin/python");
    let hint = format!(
        "the MCP tests need the CI virtualenv with the official mcp package: run .ci/run once \
         (or: python3 -m venv .ci/venv && .ci/venv/bin/pip install mcp=={MCP_PY_VERSION})"
    );
    assert!(python.exists(), "{} is missing: {hint}", python.display());
    let probe = std::process::Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('mcp'))",
        ])
        .output()
        .unwrap();
    assert!(
        probe.status.success(),
        "the mcp package is not installed in .ci/venv: {hint}\n{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    python
}

fn script_path(name: &str) -> String {
    format!("{}/tests/python/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs a Python script with the harness's provider environment and
/// returns the JSON object it printed.
async fn run_python(h: &Harness, script: &str, extra_env: &[(&str, &str)]) -> Value {
    let python = venv_python();
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(script_path(script))
        .env("HERALD_BIN", env!("CARGO_BIN_EXE_herald"))
        .env("HERALD_WORK", h.work_path())
        .env("HERALD_HOME", h.home.path())
        .env("OPENAI_BASE_URL", h.server.openai_base_url())
        .env("OPENAI_API_KEY", "sk-test-openai")
        .env("HERALD_MODEL", "gpt-4.1-mini")
        .env_remove("HERALD_LOG_STDERR")
        .kill_on_drop(true);
    for (key, value) in extra_env {
        cmd.env(key, value);
    }
    let output = tokio::time::timeout(Duration::from_secs(180), cmd.output())
        .await
        .expect("the Python MCP client finishes within 180 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the script failed:\n{stderr}\n{stdout}"
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

fn stdio_script() -> Script {
    Script::new()
        .conversation(
            "mcp hello: remember the zebra",
            vec![
                Reply::text("hello from herald"),
                Reply::text("you asked me to remember the zebra"),
            ],
        )
        .conversation(
            "mcp progress: read the notes",
            vec![
                Reply::ToolCalls {
                    text: "Reading the notes.".into(),
                    calls: vec![ScriptedCall::new("read_file", json!({"path": "notes.txt"}))],
                },
                Reply::text("the notes say hi"),
            ],
        )
        .conversation(
            "mcp background: count the notes",
            vec![
                Reply::tool("read_file", json!({"path": "notes.txt"})),
                Reply::text("one note, done in the background"),
            ],
        )
        .conversation(
            "mcp asks: touch the file",
            vec![
                Reply::tool("terminal", json!({"command": "touch headless.txt"})),
                Reply::text("nobody let me touch it"),
            ],
        )
        .conversation(
            "mcp yolo: touch the file",
            vec![
                Reply::tool("terminal", json!({"command": "touch yolo.txt"})),
                Reply::text("touched"),
            ],
        )
        .conversation(
            "mcp readonly: write the file",
            vec![
                Reply::tool(
                    "write_file",
                    json!({"path": "out.txt", "content": "should not exist\n"}),
                ),
                Reply::text("I could not write the file"),
            ],
        )
}

fn texts(seen: &Value) -> Vec<String> {
    seen["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect()
}

fn session_ids(listing: &Value) -> Vec<String> {
    let mut ids: Vec<String> = listing["results"]
        .as_array()
        .or_else(|| listing["sessions"].as_array())
        .unwrap_or_else(|| panic!("no session list in {listing}"))
        .iter()
        .map(|s| s["session_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_mcp_python_package_drives_herald_mcp_serve_over_stdio() {
    let h = Harness::new(stdio_script()).await;
    std::fs::write(h.work_path().join("notes.txt"), "hi\n").unwrap();
    h.config("[permissions]\nask = [\"terminal(touch *)\"]\n");
    let seen = run_python(&h, "mcp_stdio_client.py", &[]).await;
    assert_eq!(seen["mcp_version"], MCP_PY_VERSION);

    // Handshake and tools/list.
    assert_eq!(seen["server_info"]["name"], "herald");
    assert_eq!(seen["has_tools_capability"], true);
    let tools = seen["tools"].as_object().unwrap();
    let mut names: Vec<&str> = tools.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "agent_result",
            "agent_status",
            "delegate",
            "run",
            "session_search"
        ]
    );
    for name in ["run", "delegate"] {
        let input = &tools[name]["input"];
        assert_eq!(input["required"], json!(["prompt"]), "{name}");
        assert_eq!(input["properties"]["prompt"]["type"], "string");
        assert_eq!(input["properties"]["session_id"]["type"], "string");
        assert_eq!(input["properties"]["toolsets"]["type"], "array");
    }
    assert_eq!(tools["run"]["output"]["required"][1], "session_id");
    assert_eq!(
        tools["agent_status"]["input"]["required"],
        json!(["agent_id"])
    );
    assert_eq!(
        tools["agent_result"]["input"]["properties"]["wait"]["type"],
        "number"
    );
    assert_eq!(
        tools["session_search"]["input"]["properties"]["query"]["type"],
        "string"
    );
    assert_eq!(tools["session_search"]["read_only"], true);

    // run: the answer and a session id.
    let first = &seen["first"];
    assert_eq!(first["is_error"], false, "{first}");
    assert_eq!(texts(first)[0], "hello from herald");
    let session_id = first["structured"]["session_id"].as_str().unwrap();
    assert!(session_id.starts_with("ses_"), "{session_id}");
    assert!(texts(first)[1].contains(session_id));
    assert_eq!(first["structured"]["status"], "completed");
    assert_eq!(first["structured"]["answer"], "hello from herald");

    // run with session_id: the same session, and the model saw turn one.
    let again = &seen["again"];
    assert_eq!(texts(again)[0], "you asked me to remember the zebra");
    assert_eq!(again["structured"]["session_id"], session_id);
    let requests = h.requests_of("mcp hello: remember the zebra");
    assert_eq!(requests.len(), 2);
    let second = requests[1].body.to_string();
    assert!(second.contains("hello from herald"), "{second}");
    assert!(second.contains("mcp hello: what did I ask?"), "{second}");

    // Progress: one notification per reply with text and per tool call, in
    // order, before the answer.
    assert_eq!(texts(&seen["progress_run"])[0], "the notes say hi");
    let progress = seen["progress"].as_array().unwrap();
    let messages: Vec<&str> = progress
        .iter()
        .map(|p| p["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        [
            "reply: Reading the notes.",
            "tool: read_file",
            "reply: the notes say hi"
        ]
    );
    let values: Vec<f64> = progress
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [1.0, 2.0, 3.0]);

    // delegate + agent_status + agent_result.
    let delegated = &seen["delegate"]["structured"];
    let agent_id = delegated["agent_id"].as_str().unwrap();
    assert!(agent_id.starts_with("mcpagent_"), "{agent_id}");
    assert_eq!(delegated["status"], "running");
    let early = &seen["status_early"]["structured"];
    assert_eq!(early["agent_id"], agent_id);
    assert!(
        early["status"] == "running" || early["status"] == "completed",
        "{early}"
    );
    let result = &seen["agent_result"];
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(texts(result)[0], "one note, done in the background");
    assert_eq!(result["structured"]["status"], "completed");
    assert_eq!(result["structured"]["session_id"], delegated["session_id"]);
    let late = &seen["status_late"]["structured"];
    assert_eq!(late["status"], "completed");
    assert_eq!(late["tool_calls"], 1);
    assert_eq!(late["last_tool"], "read_file");

    // session_search finds the first session by a word of its prompt.
    let found = &seen["search"]["structured"];
    assert_eq!(found["mode"], "search");
    assert_eq!(found["results"][0]["session_id"], session_id, "{found}");

    // Bad arguments: error results that change nothing.
    let unknown = &seen["unknown_session"];
    assert_eq!(unknown["is_error"], true);
    assert!(
        texts(unknown)[0].contains("no herald session 'ses_doesnotexist'"),
        "{unknown}"
    );
    let bad = &seen["bad_argument"];
    assert_eq!(bad["is_error"], true);
    assert!(texts(bad)[0].contains("unknown field `colour`"), "{bad}");
    let mixed = &seen["toolsets_with_session"];
    assert_eq!(mixed["is_error"], true);
    assert!(texts(mixed)[0].contains("toolsets apply only to a new session"));
    let no_agent = &seen["unknown_agent"];
    assert_eq!(no_agent["is_error"], true);
    assert!(texts(no_agent)[0].contains("no delegated agent 'mcpagent_nope'"));
    assert_eq!(
        session_ids(&seen["sessions_before"]),
        session_ids(&seen["sessions_after"])
    );
    assert_eq!(session_ids(&seen["sessions_after"]).len(), 4);
    assert!(h.requests_of("mcp never sent").is_empty());
    assert_eq!(requests.len(), h.requests_of("mcp hello").len());
    let unknown_tool = seen["unknown_tool"].as_str().unwrap();
    assert!(unknown_tool.contains("no_such_tool"), "{unknown_tool}");

    // --mode read-only: the write is refused, the model is told so, and
    // the file does not exist.
    let refused = &seen["read_only"];
    assert_eq!(texts(refused)[0], "I could not write the file");
    let requests = h.requests_of("mcp readonly: write the file");
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1].body);
    assert_eq!(results.len(), 1);
    assert!(results[0].starts_with("denied:"), "{}", results[0]);
    assert!(results[0].contains("read-only"), "{}", results[0]);
    // Headless approvals: nobody is asked, the call is denied.
    assert!(results[0].contains("cannot ask anyone"), "{}", results[0]);
    assert!(!h.work_path().join("out.txt").exists());

    // A call the ask rule covers: headless approvals deny it; under --yolo
    // the same call runs.
    assert_eq!(texts(&seen["headless_ask"])[0], "nobody let me touch it");
    let requests = h.requests_of("mcp asks: touch the file");
    let results = tool_results(&requests[1].body);
    assert!(results[0].contains("cannot ask anyone"), "{}", results[0]);
    assert!(!h.work_path().join("headless.txt").exists());
    assert_eq!(texts(&seen["yolo"])[0], "touched");
    let requests = h.requests_of("mcp yolo: touch the file");
    let results = tool_results(&requests[1].body);
    assert!(!results[0].starts_with("denied"), "{}", results[0]);
    assert!(h.work_path().join("yolo.txt").exists());

    // Every tool call reached its session as protocol operations: turns,
    // and the ends of the sessions the server opened.
    let kinds = h.submitted_op_kinds();
    assert!(kinds.contains(&"user_turn".to_owned()), "{kinds:?}");
    assert!(
        kinds
            .iter()
            .all(|k| ["user_turn", "interrupt", "shutdown"].contains(&k.as_str())),
        "{kinds:?}"
    );
}

/// A running `herald serve --port 0 --token TOKEN`.
struct Served {
    child: tokio::process::Child,
    url: String,
}

impl Served {
    async fn start(h: &Harness, token: &str) -> Self {
        let mut cmd = h.command(Wire::OpenAi);
        cmd.args(["serve", "--port", "0", "--token", token])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("herald serve prints its URL within 20 s")
            .unwrap()
            .expect("a line on stdout");
        let url = line
            .strip_prefix("herald serve listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Self { child, url }
    }

    async fn stop(mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id().unwrap() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("herald serve exits within 20 s of SIGTERM")
            .unwrap();
        assert!(status.success(), "{status:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn herald_serve_offers_mcp_at_slash_mcp_behind_its_bearer_token() {
    let script = Script::new().conversation(
        "mcp http: say hi",
        vec![
            Reply::tool("read_file", json!({"path": "notes.txt"})),
            Reply::text("hi over streamable HTTP"),
        ],
    );
    let h = Harness::new(script).await;
    std::fs::write(h.work_path().join("notes.txt"), "hi\n").unwrap();
    let served = Served::start(&h, "mcp-secret").await;
    let url = format!("{}/mcp", served.url);
    let seen = run_python(
        &h,
        "mcp_http_client.py",
        &[("HERALD_MCP_URL", &url), ("HERALD_TOKEN", "mcp-secret")],
    )
    .await;

    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "run",
            "delegate",
            "agent_status",
            "agent_result",
            "session_search"
        ]
    );
    let run = &seen["run"];
    assert_eq!(run["is_error"], false, "{run}");
    assert_eq!(run["texts"][0], "hi over streamable HTTP");
    let session_id = run["structured"]["session_id"].as_str().unwrap();
    assert!(session_id.starts_with("ses_"));
    // Progress travels on the request's own stream.
    let messages: Vec<&str> = seen["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        ["tool: read_file", "reply: hi over streamable HTTP"]
    );
    // The session is an ordinary herald serve session.
    let stored = common_get(
        &served.url,
        "mcp-secret",
        &format!("/api/sessions/{session_id}"),
    )
    .await;
    assert_eq!(stored.0, 200, "{}", stored.1);

    // Without the token (or with a wrong one) the client is refused with
    // herald's reason, before any session opens.
    let no_token = seen["no_token"].as_str().unwrap();
    assert!(
        no_token.contains("401 Unauthorized: missing 'Authorization: Bearer <token>'"),
        "{no_token}"
    );
    let wrong = seen["wrong_token"].as_str().unwrap();
    assert!(
        wrong.contains("401 Unauthorized: the bearer token is wrong"),
        "{wrong}"
    );
    assert_eq!(h.requests_of("mcp http").len(), 2);
    served.stop().await;
}

async fn common_get(base: &str, token: &str, path: &str) -> (u16, String) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let response = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Closing stdin while a turn runs a tool: herald interrupts the turn,
/// stops the tool's processes and exits on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_stdin_ends_herald_mcp_serve_and_the_processes_of_its_turn() {
    let script = Script::new().conversation(
        "mcp sleeper: wait forever",
        vec![
            Reply::tool("terminal", json!({"command": sleeper_command("mcp.pids")})),
            Reply::text("unreachable"),
        ],
    );
    let h = Harness::new(script).await;
    let mut cmd = h.command(Wire::OpenAi);
    cmd.args(["mcp", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let herald_pid = child.id().unwrap() as i32;
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"}
        }}),
    )
    .await;
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("an initialize answer within 20 s")
        .unwrap()
        .unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["serverInfo"]["name"], "herald");
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "run", "arguments": {"prompt": "mcp sleeper: wait forever"}
        }}),
    )
    .await;
    let pids = h.sleeper_pids("mcp.pids").await;
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("herald mcp serve exits within 20 s of its stdin closing")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert_gone(&[herald_pid], "herald mcp serve").await;
    assert_gone(&pids, "the turn's shell and its sleep").await;
    // Nothing but MCP messages on stdout.
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries a non-JSON line {line:?}: {e}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
}

/// Writes one JSON-RPC message as a line.
async fn send(stdin: &mut tokio::process::ChildStdin, message: Value) {
    stdin
        .write_all(format!("{message}\n").as_bytes())
        .await
        .unwrap();
    stdin.flush().await.unwrap();
}

/// `notifications/cancelled` for a running `run` interrupts its turn: the
/// tool's processes stop, and the server goes on answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_request_interrupts_its_turn() {
    let script = Script::new().conversation(
        "mcp cancel: wait forever",
        vec![
            Reply::tool(
                "terminal",
                json!({"command": sleeper_command("cancel.pids")}),
            ),
            Reply::text("unreachable"),
        ],
    );
    let h = Harness::new(script).await;
    let mut cmd = h.command(Wire::OpenAi);
    cmd.args(["mcp", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"}
        }}),
    )
    .await;
    lines.next_line().await.unwrap().unwrap();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "run", "arguments": {"prompt": "mcp cancel: wait forever"}
        }}),
    )
    .await;
    let pids = h.sleeper_pids("cancel.pids").await;
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
            "requestId": 2, "reason": "the user pressed stop"
        }}),
    )
    .await;
    assert_gone(&pids, "the cancelled turn's shell and its sleep").await;
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    )
    .await;
    let answer = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let line = lines.next_line().await.unwrap().unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == 3 {
                return message;
            }
            // A cancelled request gets no answer.
            assert_ne!(message["id"], 2, "{message}");
        }
    })
    .await
    .expect("tools/list answered after the cancel");
    assert_eq!(answer["result"]["tools"].as_array().unwrap().len(), 5);
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("herald mcp serve exits when stdin closes")
        .unwrap();
    assert!(status.success(), "{status:?}");
}
