//! MCP servers in sessions, through the real binary and the real npm
//! servers (`.ci/install-mcp-servers` puts them in `.ci/mcp`): tools
//! offered and called in the main agent, in a subagent and from
//! `execute_code`; readOnlyHint and permissions; progress events; the tool
//! cache keeping the prompt identical across sessions; failures reported
//! without stopping the session; a project's `.mcp.json` starting only
//! once approved; `herald mcp list/test`; no server process left behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;

use common::{Harness, Wire, last, of_type, stderr, tool_results};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

fn server_js(package: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/mcp/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing: run .ci/install-mcp-servers (it installs the real MCP test servers from npm into .ci/mcp)",
        path.display()
    );
    path.canonicalize().unwrap().to_string_lossy().into_owned()
}

fn toml_str(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// `[mcp_servers]` with server-everything as `ev` and server-filesystem
/// as `fs` over `dir`.
fn both_servers(dir: &std::path::Path) -> String {
    format!(
        "[mcp_servers.ev]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n\n[mcp_servers.fs]\ncommand = \"node\"\nargs = [{}, {}]\n",
        toml_str(&server_js("server-everything")),
        toml_str(&server_js("server-filesystem")),
        toml_str(&dir.display().to_string()),
    )
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .or_else(|| t["name"].as_str())
                        .unwrap()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Pids of processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(needle) {
                found.push(pid);
            }
        }
    }
    found
}

fn events_of<'a>(events: &'a [Value], ty: &str, server: &str) -> Vec<&'a Value> {
    of_type(events, ty)
        .into_iter()
        .filter(|e| e["server"] == server)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_of_configured_servers_are_offered_called_and_stable_across_sessions() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().canonicalize().unwrap();
    let note = data_dir.join("note.txt");
    std::fs::write(&note, "the note says 42").unwrap();
    let h = Harness::new(
        Script::new()
            .conversation(
                "use the mcp tools",
                vec![
                    Reply::tool(
                        "mcp__fs__read_text_file",
                        json!({"path": note.display().to_string()}),
                    ),
                    Reply::tool("mcp__ev__echo", json!({"message": "hello from herald"})),
                    Reply::tool(
                        "mcp__ev__trigger-long-running-operation",
                        json!({"duration": 1, "steps": 3}),
                    ),
                    Reply::text("done"),
                ],
            )
            .conversation("second session", vec![Reply::text("ok")]),
    )
    .await;
    let mut config = both_servers(&data_dir);
    config.push_str("\n[permissions]\nallow = [\"mcp__ev__*\"]\n");
    h.config(&config);
    let prompt_calls = "use the mcp tools";
    let (output, events) = h.run_json(Wire::OpenAi, &[], prompt_calls).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["status"], "completed", "{events:?}");

    let ev = events_of(&events, "mcp.server", "ev");
    assert_eq!(ev[0]["status"], "ready", "{ev:?}");
    assert!(ev[0]["tools"].as_u64().unwrap() > 5, "{ev:?}");
    let fs = events_of(&events, "mcp.server", "fs");
    assert_eq!(fs[0]["status"], "ready", "{fs:?}");

    let requests = h.requests_of(prompt_calls);
    let names = tool_names(&requests[0].body);
    for wanted in [
        "mcp__ev__echo",
        "mcp__ev__get-tiny-image",
        "mcp__fs__read_text_file",
        "mcp__fs__write_file",
        "read_file",
        "terminal",
    ] {
        assert!(
            names.iter().any(|n| n == wanted),
            "{wanted} missing: {names:?}"
        );
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools are sorted by name");

    let results = tool_results(&requests.last().unwrap().body);
    assert_eq!(results.len(), 3, "{results:?}");
    // read_text_file is annotated readOnlyHint: it ran without a rule.
    assert!(results[0].contains("the note says 42"), "{}", results[0]);
    assert!(results[1].contains("hello from herald"), "{}", results[1]);
    assert!(
        !results[2].to_lowercase().contains("error"),
        "{}",
        results[2]
    );
    let progress = of_type(&events, "tool.progress");
    assert!(
        progress.len() >= 2,
        "the long-running operation reports progress: {events:?}"
    );
    assert!(
        progress
            .iter()
            .all(|p| p["name"] == "mcp__ev__trigger-long-running-operation")
    );

    // No server process outlives the run.
    let marker = data_dir.display().to_string();
    herald_testkit::assert_gone_within(
        &processes_mentioning(&marker),
        "the filesystem server",
        std::time::Duration::from_secs(5),
    )
    .await;

    // The next session lists exactly the same tools (the cache lets it
    // start before the servers are up).
    let (output, events) = h.run_json(Wire::OpenAi, &[], "second session").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let status = events_of(&events, "mcp.server", "ev")[0]["status"].clone();
    assert!(status == "cached" || status == "ready", "{status}");
    let second = h.requests_of("second session");
    assert_eq!(
        second[0].body["tools"], requests[0].body["tools"],
        "the tool list is identical across sessions"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn subagents_and_execute_code_share_the_servers_of_the_session() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().canonicalize().unwrap();
    let note = data_dir.join("n.txt");
    std::fs::write(&note, "note for code").unwrap();
    let code = format!(
        "from herald_tools import mcp__fs__read_text_file\nprint('script read:', mcp__fs__read_text_file({}))\n",
        serde_json::to_string(&note.display().to_string()).unwrap()
    );
    let h = Harness::new(
        Script::new()
            .conversation(
                "PARENT hand work over",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"goal": "child echo via mcp", "toolsets": ["mcp-ev"]}),
                    ),
                    Reply::tool("execute_code", json!({"code": code})),
                    Reply::text("all done"),
                ],
            )
            .conversation(
                "child echo",
                vec![
                    Reply::tool("mcp__ev__echo", json!({"message": "child says hi"})),
                    Reply::text("child finished"),
                ],
            ),
    )
    .await;
    h.config(&format!(
        "{}\n[permissions]\nallow = [\"mcp__ev__echo\"]\n",
        both_servers(&data_dir)
    ));
    let (output, events) = h.run_json(Wire::OpenAi, &[], "PARENT hand work over").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "all done", "{events:?}");

    // The child was given only the ev server's toolset (with the
    // resource tools of toolset `mcp`, which reach only `ev` for it).
    let child = h.requests_of("child echo");
    let names = tool_names(&child[0].body);
    assert!(
        names.iter().all(|n| n.starts_with("mcp__ev__")
            || n == "mcp_list_resources"
            || n == "mcp_read_resource"),
        "{names:?}"
    );
    let child_results = tool_results(&child.last().unwrap().body);
    assert!(
        child_results[0].contains("child says hi"),
        "{child_results:?}"
    );

    // The script called a read-only MCP tool through herald.
    let parent = h.requests_of("PARENT hand work over");
    let results = tool_results(&parent.last().unwrap().body);
    assert!(
        results[1].contains("script read:") && results[1].contains("note for code"),
        "{results:?}"
    );
    let inner = of_type(&events, "sandbox.call");
    assert_eq!(inner.len(), 1, "{inner:?}");
    assert_eq!(inner[0]["name"], "mcp__fs__read_text_file");

    // One process per server for the whole tree: the ev server was
    // started once (its mcp.server events come from the root only).
    assert_eq!(of_type(&events, "mcp.server").len(), 2, "{events:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn read_only_mode_runs_annotated_reads_and_refuses_other_mcp_tools() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().canonicalize().unwrap();
    let note = data_dir.join("r.txt");
    std::fs::write(&note, "readable").unwrap();
    let target = data_dir.join("written.txt");
    let h = Harness::new(Script::new().conversation(
        "read only please",
        vec![
            Reply::tool(
                "mcp__fs__read_text_file",
                json!({"path": note.display().to_string()}),
            ),
            Reply::tool(
                "mcp__fs__write_file",
                json!({"path": target.display().to_string(), "content": "x"}),
            ),
            Reply::text("ok"),
        ],
    ))
    .await;
    h.config(&both_servers(&data_dir));
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--mode", "read-only"], "read only please")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.requests_of("read only please");
    let results = tool_results(&requests.last().unwrap().body);
    assert!(results[0].contains("readable"), "{results:?}");
    assert!(
        results[1].contains("read-only")
            || results[1].contains("denied")
            || results[1].contains("not allowed"),
        "{results:?}"
    );
    assert!(!target.exists(), "the refused write did not happen");
    let completed = of_type(&events, "tool.completed");
    assert_eq!(completed[0]["status"], "ok");
    assert_eq!(completed[1]["status"], "error");
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_that_fail_or_hang_are_reported_and_the_session_goes_on() {
    let fault = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../herald-mcp/tests/fixtures/fault-server.mjs")
        .canonicalize()
        .unwrap();
    let h =
        Harness::new(Script::new().conversation("carry on", vec![Reply::text("carried on")])).await;
    h.config(&format!(
        "[mcp_servers.broken]\ncommand = \"node\"\nargs = [{fault}]\nenv = {{ FAULT = \"exit\" }}\n\n\
         [mcp_servers.silent]\ncommand = \"node\"\nargs = [{fault}]\nenv = {{ FAULT = \"silent\" }}\nstartup_timeout_sec = 1\n\n\
         [mcp_servers.missing]\ncommand = \"/nonexistent/mcp-server\"\n\n\
         [mcp_servers.off]\ncommand = \"/nonexistent/never-started\"\nenabled = false\n",
        fault = toml_str(&fault.display().to_string())
    ));
    let started = std::time::Instant::now();
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--toolsets", "file,mcp-broken"], "carry on")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "carried on");
    let first_request = h.requests_of("carry on")[0].received_at;
    let _ = first_request;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "a silent server holds the session up no longer than its startup_timeout_sec"
    );
    let status = |name: &str| {
        events_of(&events, "mcp.server", name).first().map(|e| {
            (
                e["status"].as_str().unwrap().to_owned(),
                e["message"].as_str().unwrap_or("").to_owned(),
            )
        })
    };
    let (broken, why) = status("broken").unwrap();
    assert_eq!(broken, "failed");
    assert!(
        why.contains("cannot open its database"),
        "the server's stderr is quoted: {why}"
    );
    let (silent, why) = status("silent").unwrap();
    assert!(silent == "failed" || silent == "late", "{silent}");
    assert!(why.contains("startup_timeout_sec"), "{why}");
    let (missing, why) = status("missing").unwrap();
    assert_eq!(missing, "failed");
    assert!(why.contains("/nonexistent/mcp-server"), "{why}");
    assert!(status("off").is_none(), "a disabled server is not started");
    // The terminal hears of it too.
    let err = stderr(&output);
    assert!(err.contains("broken"), "{err}");
    // --toolsets naming a server that did not start is not an error.
    let names = tool_names(&h.requests_of("carry on")[0].body);
    assert!(names.iter().any(|n| n == "read_file"), "{names:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_server_entry_is_a_config_error_before_any_request() {
    let h = Harness::new(Script::new().conversation("never", vec![Reply::text("no")])).await;
    h.config("[mcp_servers.both]\ncommand = \"x\"\nurl = \"http://127.0.0.1:1/mcp\"\n");
    let (output, _) = h.run_json(Wire::OpenAi, &[], "never sent").await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("mcp_servers.both"),
        "{}",
        stderr(&output)
    );
    assert!(h.server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_project_mcp_json_starts_nothing_until_approved() {
    let h = Harness::new(
        Script::new()
            .conversation("before approval", vec![Reply::text("a")])
            .conversation("after approval", vec![Reply::text("b")])
            .conversation("after a change", vec![Reply::text("c")]),
    )
    .await;
    let work = h.work_path();
    std::fs::create_dir(work.join(".git")).unwrap();
    let project = json!({"mcpServers": {"proj": {
        "command": "node",
        "args": [server_js("server-everything"), "stdio"]
    }}});
    std::fs::write(work.join(".mcp.json"), project.to_string()).unwrap();

    let (output, events) = h.run_json(Wire::OpenAi, &[], "before approval").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(events_of(&events, "mcp.server", "proj").is_empty());
    let warning = of_type(&events, "error")
        .into_iter()
        .map(|e| e["message"].as_str().unwrap().to_owned())
        .find(|m| m.contains(".mcp.json"))
        .expect("a warning names the file");
    assert!(warning.contains("herald mcp approve"), "{warning}");
    let names = tool_names(&h.requests_of("before approval")[0].body);
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");

    // `herald mcp list` shows it waiting.
    let list = h
        .bare_command()
        .args(["mcp", "list", "--json"])
        .output()
        .await
        .unwrap();
    assert!(list.status.success(), "{}", stderr(&list));
    let rows: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(rows[0]["name"], "proj");
    assert_eq!(rows[0]["status"], "needs approval");

    let approve = h
        .bare_command()
        .args(["mcp", "approve"])
        .output()
        .await
        .unwrap();
    assert!(approve.status.success(), "{}", stderr(&approve));
    assert!(String::from_utf8_lossy(&approve.stdout).contains("proj: node"));

    let (output, events) = h.run_json(Wire::OpenAi, &[], "after approval").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        events_of(&events, "mcp.server", "proj")[0]["status"],
        "ready"
    );
    let names = tool_names(&h.requests_of("after approval")[0].body);
    assert!(names.iter().any(|n| n == "mcp__proj__echo"), "{names:?}");

    // A changed file needs a new approval.
    let mut changed = project.clone();
    changed["mcpServers"]["proj"]["args"][1] = json!("streamableHttp");
    std::fs::write(work.join(".mcp.json"), changed.to_string()).unwrap();
    let (output, events) = h.run_json(Wire::OpenAi, &[], "after a change").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(events_of(&events, "mcp.server", "proj").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_list_and_test_start_servers_and_call_nothing() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().canonicalize().unwrap();
    let h = Harness::new(Script::new()).await;
    h.config(&format!(
        "{}\n[mcp_servers.gone]\ncommand = \"/nonexistent/srv\"\n",
        both_servers(&data_dir)
    ));
    let list = h
        .bare_command()
        .args(["mcp", "list", "--json"])
        .output()
        .await
        .unwrap();
    assert!(list.status.success(), "{}", stderr(&list));
    let rows: Value = serde_json::from_slice(&list.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ev", "fs", "gone"]);
    assert_eq!(rows[0]["status"], "ok");
    assert!(rows[0]["tools"].as_u64().unwrap() > 5);
    assert!(rows[0]["schema_tokens"].as_u64().unwrap() > 100);
    assert_eq!(rows[2]["status"], "failed");
    assert!(
        rows[2]["message"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/srv")
    );

    let test = h
        .bare_command()
        .args(["mcp", "test", "fs", "--json"])
        .output()
        .await
        .unwrap();
    assert!(test.status.success(), "{}", stderr(&test));
    let report: Value = serde_json::from_slice(&test.stdout).unwrap();
    assert_eq!(report["status"], "ok");
    let tools = report["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "mcp__fs__read_text_file" && t["read_only"] == true)
    );

    let bad = h
        .bare_command()
        .args(["mcp", "test", "gone"])
        .output()
        .await
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("/nonexistent/srv"),
        "{}",
        stderr(&bad)
    );
    let unknown = h
        .bare_command()
        .args(["mcp", "test", "nope"])
        .output()
        .await
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("ev, fs, gone"),
        "{}",
        stderr(&unknown)
    );
    herald_testkit::assert_gone_within(
        &processes_mentioning(&data_dir.display().to_string()),
        "the filesystem server",
        std::time::Duration::from_secs(5),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn over_the_schema_budget_tools_are_found_with_mcp_search_and_run_with_mcp_call() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().canonicalize().unwrap();
    let target = data_dir.join("via-call.txt");
    let h = Harness::new(Script::new().conversation(
        "search for tools",
        vec![
            Reply::tool("mcp_search", json!({"query": "echo message"})),
            Reply::tool(
                "mcp_call",
                json!({"tool": "mcp__ev__echo", "arguments": {"message": "found and called"}}),
            ),
            Reply::tool(
                "mcp_call",
                json!({"tool": "mcp__fs__write_file", "arguments": {"path": target.display().to_string(), "content": "x"}}),
            ),
            Reply::tool("mcp_call", json!({"tool": "terminal", "arguments": {"command": "ls"}})),
            Reply::text("ok"),
        ],
    ))
    .await;
    h.config(&format!(
        "{}\n[mcp]\nschema_budget_percent = 0\n[permissions]\nallow = [\"mcp__ev__echo\"]\n",
        both_servers(&data_dir)
    ));
    let (output, _) = h
        .run_json(Wire::OpenAi, &["--mode", "read-only"], "search for tools")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.requests_of("search for tools");
    let names = tool_names(&requests[0].body);
    assert!(names.iter().any(|n| n == "mcp_search"), "{names:?}");
    assert!(names.iter().any(|n| n == "mcp_call"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__")),
        "no MCP tool is listed one by one: {names:?}"
    );
    let results = tool_results(&requests.last().unwrap().body);
    let found: Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(found["matches"][0]["tool"], "mcp__ev__echo", "{found}");
    assert!(found["matches"][0]["parameters"]["properties"]["message"].is_object());
    assert!(results[1].contains("found and called"), "{}", results[1]);
    // The permission check applies to the tool mcp_call runs.
    assert!(
        !target.exists(),
        "read-only mode refused the write: {}",
        results[2]
    );
    assert!(results[3].contains("MCP tools only"), "{}", results[3]);
    // Every request lists the same tools.
    for request in &requests {
        assert_eq!(request.body["tools"], requests[0].body["tools"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_checks_each_server() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().canonicalize().unwrap();
    let h = Harness::new(Script::new()).await;
    h.config(&format!(
        "{}\n[mcp_servers.gone]\ncommand = \"/nonexistent/srv\"\n",
        both_servers(&data_dir)
    ));
    let output = h
        .command(Wire::OpenAi)
        .args(["doctor", "--json"])
        .output()
        .await
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let checks = report["checks"].as_array().unwrap();
    let find = |name: &str| checks.iter().find(|c| c["name"] == name).cloned();
    let ev = find("mcp:ev").expect("a check per server");
    assert_eq!(ev["status"], "ok", "{ev}");
    assert!(ev["detail"].as_str().unwrap().contains("tools"), "{ev}");
    assert_eq!(find("mcp:fs").unwrap()["status"], "ok");
    let gone = find("mcp:gone").unwrap();
    assert_eq!(gone["status"], "fail");
    assert!(
        gone["detail"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/srv")
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "a failing server fails the doctor"
    );
}

/// Pids of processes whose environment holds `marker`.
fn processes_with_env(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ"))
            && String::from_utf8_lossy(&environ).contains(marker)
        {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_herald_during_a_long_mcp_call_leaves_no_server_behind() {
    let marker = format!("HERALD_MCP_KILL_{}", std::process::id());
    let h = Harness::new(Script::new().conversation(
        "long mcp call",
        vec![
            Reply::tool(
                "mcp__ev__trigger-long-running-operation",
                json!({"duration": 60, "steps": 60}),
            ),
            Reply::text("never"),
        ],
    ))
    .await;
    h.config(&format!(
        "[mcp_servers.ev]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\nenv = {{ {marker} = \"1\" }}\n\n[permissions]\nallow = [\"mcp__ev__*\"]\n",
        toml_str(&server_js("server-everything"))
    ));
    for signal in [
        nix::sys::signal::Signal::SIGKILL,
        nix::sys::signal::Signal::SIGTERM,
    ] {
        let run = common::LiveRun::until(&h, Wire::OpenAi, "long mcp call", "tool.progress").await;
        let servers = processes_with_env(&marker);
        assert_eq!(servers.len(), 1, "{servers:?}");
        let pid = run.child.id().unwrap() as i32;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).unwrap();
        let _ = run.finish().await;
        herald_testkit::assert_gone_within(
            &servers,
            &format!("the MCP server after herald got {signal}"),
            std::time::Duration::from_secs(5),
        )
        .await;
    }
}
