//! `herald acp` driven by the official Agent Client Protocol Python SDK
//! (`agent-client-protocol` from PyPI, installed by `.ci/run` into
//! `.ci/venv`) against the scripted model. Without the virtualenv these
//! tests fail and say how to make it; they never skip.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{Harness, sleeper_command};
use herald_testkit::{Reply, Script, ScriptedCall, ScriptedThinking};
use serde_json::{Value, json};

/// The version `.ci/run` installs.
const ACP_PY_VERSION: &str = "0.12.1";
/// The 1×1 PNG the client attaches to a prompt.
const PIXEL: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

fn venv_python() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join(".ci/venv/bin/python");
    let hint = format!(
        "the ACP tests need the CI virtualenv with the official ACP SDK: run .ci/run once \
         (or: python3 -m venv .ci/venv && .ci/venv/bin/pip install agent-client-protocol=={ACP_PY_VERSION})"
    );
    assert!(python.exists(), "{} is missing: {hint}", python.display());
    let probe = std::process::Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('agent-client-protocol'))",
        ])
        .output()
        .unwrap();
    assert!(
        probe.status.success(),
        "agent-client-protocol is not installed in .ci/venv: {hint}\n{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    python
}

/// Runs `acp_client.py SCENARIO` and returns the JSON object it printed.
async fn run_client(h: &Harness, scenario: &str) -> Value {
    let python = venv_python();
    let script = format!("{}/tests/python/acp_client.py", env!("CARGO_MANIFEST_DIR"));
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(script)
        .arg(scenario)
        .env("HERALD_BIN", env!("CARGO_BIN_EXE_herald"))
        .env("HERALD_WORK", h.work_path())
        .env("HERALD_HOME", h.home.path())
        .env("OPENAI_BASE_URL", h.server.openai_base_url())
        .env("OPENAI_API_KEY", "sk-test-openai")
        .env("HERALD_MODEL", "gpt-4.1-mini")
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(240), cmd.output())
        .await
        .expect("the Python ACP client finishes within 240 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the ACP client failed:\n{stderr}\n{stdout}"
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// The `update` objects of `updates` whose kind is `kind`.
fn of_kind<'a>(updates: &'a Value, kind: &str) -> Vec<&'a Value> {
    updates
        .as_array()
        .unwrap()
        .iter()
        .map(|u| &u["update"])
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

fn text_of(updates: &Value, kind: &str) -> String {
    of_kind(updates, kind)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

fn session_script(sleeper: &str) -> Script {
    Script::new().conversation(
        "acp session: write the notes",
        vec![
            // Turn 1: text, a write, a reasoned patch, the plan, the answer.
            Reply::ToolCalls {
                text: "Writing the notes.".into(),
                calls: vec![ScriptedCall::new(
                    "write_file",
                    json!({"path": "notes.txt", "content": "alpha\nbeta\n"}),
                )],
            },
            Reply::tool(
                "patch",
                json!({"path": "notes.txt", "old_string": "beta", "new_string": "gamma"}),
            )
            .with_thinking(vec![ScriptedThinking::thinking(
                "The second line should say gamma.",
                "sig-1",
            )]),
            Reply::tool(
                "todo_write",
                json!({"todos": [
                    {"id": "1", "content": "Write the notes", "status": "completed"},
                    {"id": "2", "content": "Review the notes", "status": "in_progress"}
                ]}),
            ),
            Reply::text("Notes written."),
            // Turn 2: two calls that need approval: allowed once, denied.
            Reply::tool("terminal", json!({"command": "touch approved.txt"})),
            Reply::tool("terminal", json!({"command": "touch denied.txt"})),
            Reply::text("approvals done"),
            // Turn 3: the client's MCP server.
            Reply::tool("mcp__echo__echo", json!({"text": "ping"})),
            Reply::text("the echo answered"),
            // Turn 4: a prompt with an image.
            Reply::text("a single pixel"),
            // Turn 4: after the malformed messages.
            Reply::text("still here"),
            // Turn 5: cancelled in the middle of the command.
            Reply::tool("terminal", json!({"command": sleeper})),
            // After the resume (the interrupted turn may have added one
            // more assistant message).
            Reply::text("resumed: we wrote notes"),
            Reply::text("resumed: we wrote notes"),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_acp_python_sdk_drives_a_herald_session() {
    let h = Harness::new(session_script(&sleeper_command("sleeper.pids"))).await;
    h.config("[permissions]\nask = [\"terminal(touch *)\"]\n");
    let seen = run_client(&h, "session").await;
    assert_eq!(seen["acp_version"], ACP_PY_VERSION);

    // initialize: honest capabilities.
    let init = &seen["initialize"];
    assert_eq!(init["protocolVersion"], 1);
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true, "{init}");
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(caps["promptCapabilities"]["image"], true);
    assert_eq!(caps["mcpCapabilities"]["http"], true);
    assert_eq!(caps["mcpCapabilities"]["sse"], false);
    assert_eq!(seen["new"]["modes"]["currentModeId"], "workspace-write");

    // Turn 1: streamed text and reasoning, the edits with their diffs, the plan.
    let hello = &seen["hello"];
    assert_eq!(hello["stop"], "end_turn");
    let updates = &hello["updates"];
    assert_eq!(
        text_of(updates, "agent_message_chunk"),
        "Writing the notes.Notes written."
    );
    assert_eq!(
        text_of(updates, "agent_thought_chunk"),
        "The second line should say gamma."
    );
    let calls = of_kind(updates, "tool_call");
    let notes = h.work_path().join("notes.txt").display().to_string();
    let write = calls
        .iter()
        .find(|c| c["title"] == format!("Write {notes}"))
        .unwrap();
    assert_eq!(write["kind"], "edit");
    assert_eq!(write["status"], "in_progress");
    assert_eq!(write["locations"][0]["path"], notes);
    assert_eq!(write["content"][0]["type"], "diff");
    assert_eq!(write["content"][0]["newText"], "alpha\nbeta\n");
    let patch = calls
        .iter()
        .find(|c| c["title"] == format!("Edit {notes}"))
        .unwrap();
    assert_eq!(patch["content"][0]["oldText"], "beta");
    assert_eq!(patch["content"][0]["newText"], "gamma");
    let done = of_kind(updates, "tool_call_update");
    assert!(
        done.iter()
            .any(|u| u["toolCallId"] == patch["toolCallId"] && u["status"] == "completed"),
        "{updates}"
    );
    let plan = of_kind(updates, "plan");
    assert_eq!(plan.len(), 1, "{updates}");
    assert_eq!(plan[0]["entries"][0]["content"], "Write the notes");
    assert_eq!(plan[0]["entries"][1]["status"], "in_progress");
    assert!(!of_kind(updates, "usage_update").is_empty(), "{updates}");
    assert_eq!(
        std::fs::read_to_string(h.work_path().join("notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );

    // Turn 2: each approval went through session/request_permission; a
    // rule the user wrote to ask offers once or deny, a call with an allow
    // rule (the MCP tool, turn 3) also "for this session" and "always".
    let permissions = seen["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 3, "{permissions:?}");
    let options = |i: usize| -> Vec<&str> {
        permissions[i]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["optionId"].as_str().unwrap())
            .collect()
    };
    assert_eq!(options(0), ["once", "deny"]);
    assert_eq!(options(2), ["once", "session", "always", "deny"]);
    // The request names the call the editor already shows.
    let echo_call = of_kind(&seen["mcp"]["updates"], "tool_call")
        .into_iter()
        .find(|c| c["title"] == "mcp__echo__echo")
        .unwrap();
    assert_eq!(
        permissions[2]["tool_call"]["toolCallId"],
        echo_call["toolCallId"]
    );
    assert!(
        permissions[0]["tool_call"]["title"]
            .as_str()
            .unwrap()
            .starts_with("herald asks: `touch approved.txt`"),
        "{}",
        permissions[0]["tool_call"]
    );
    assert_eq!(permissions[0]["tool_call"]["kind"], "execute");
    assert_eq!(seen["approve"]["stop"], "end_turn");
    assert!(h.work_path().join("approved.txt").exists());
    assert!(!h.work_path().join("denied.txt").exists());

    // Turn 3: the client's MCP server was joined to the session.
    // The image turn: the picture reached the model with its text, as a
    // data URL part of the user message.
    assert_eq!(seen["image"]["stop"], "end_turn", "{}", seen["image"]);
    let asked = h
        .requests_of("acp session: write the notes")
        .into_iter()
        .find(|r| {
            r.body
                .to_string()
                .contains("image: what is in this picture?")
        })
        .expect("the image turn's request");
    let messages = asked.body["messages"].as_array().unwrap();
    let user = messages.last().unwrap();
    assert_eq!(
        user["content"],
        json!([
            {"type": "text", "text": "image: what is in this picture?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PIXEL}")}}
        ]),
        "{user}"
    );
    let mcp = &seen["mcp"];
    let results = h.requests_of("acp session: write the notes");
    let after_echo = results
        .iter()
        .map(|r| r.body.to_string())
        .find(|b| b.contains("echo from the client's server: ping"));
    assert!(
        after_echo.is_some(),
        "the echo result never reached the model: {mcp}"
    );

    // Malformed lines and unknown methods got their JSON-RPC errors...
    let malformed: Vec<i64> = seen["malformed_answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["error"]["code"].as_i64().unwrap())
        .collect();
    assert_eq!(
        malformed,
        [-32700, -32600, -32600],
        "{}",
        seen["malformed_answers"]
    );
    assert_eq!(seen["unknown_method"]["code"], -32601);
    assert_eq!(seen["bad_params"]["code"], -32602);
    assert_eq!(seen["unknown_session"]["code"], -32002);
    assert_eq!(seen["image_prompt"]["code"], -32602);
    assert!(
        seen["image_prompt"]["data"]
            .to_string()
            .contains("not PNG, JPEG, GIF or WebP"),
        "{}",
        seen["image_prompt"]
    );
    assert_eq!(
        seen["audio_prompt"]["code"], -32602,
        "{}",
        seen["audio_prompt"]
    );
    assert_eq!(seen["bad_mode"]["code"], -32602);
    assert_eq!(seen["authenticate"], json!({}));
    for bad in ["relative_cwd", "missing_cwd", "sse_server", "bad_cursor"] {
        assert_eq!(seen[bad]["code"], -32602, "{bad}: {}", seen[bad]);
    }
    assert_eq!(seen["unknown_load"]["code"], -32002);
    assert_eq!(seen["sessions_unchanged"], true);
    // ...and the session kept working.
    assert_eq!(seen["after_errors"]["stop"], "end_turn");
    assert_eq!(
        text_of(&seen["after_errors"]["updates"], "agent_message_chunk"),
        "still here"
    );

    // Cancel mid-command: the turn ends cancelled and the command is gone.
    let cancel = &seen["cancel"];
    assert_eq!(cancel["stop"], "cancelled", "{cancel}");
    assert_eq!(cancel["alive_after"], json!([]), "{cancel}");

    // set_mode: announced back.
    let modes = of_kind(&seen["set_mode_updates"], "current_mode_update");
    assert_eq!(modes[0]["currentModeId"], "read-only");
    let sid = seen["session_id"].as_str().unwrap();
    assert!(seen["list"].as_array().unwrap().iter().any(|s| s == sid));

    // Load streams the history once, before its answer.
    let load = &seen["load"];
    let users = of_kind(load, "user_message_chunk");
    let prompts: Vec<&str> = users
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    // The image came back with its prompt, once.
    let images: Vec<&&Value> = users
        .iter()
        .filter(|u| u["content"]["type"] == "image")
        .collect();
    assert_eq!(images.len(), 1, "{users:?}");
    assert_eq!(images[0]["content"]["mimeType"], "image/png");
    assert_eq!(images[0]["content"]["data"], PIXEL);
    for prompt in [
        "acp session: write the notes, then fix them",
        "approve: touch two files",
        "after errors: are you still there?",
    ] {
        assert_eq!(
            prompts.iter().filter(|p| p.contains(prompt)).count(),
            1,
            "{prompts:?}"
        );
    }
    assert_eq!(
        text_of(load, "agent_message_chunk")
            .matches("Notes written.")
            .count(),
        1
    );
    assert!(
        of_kind(load, "tool_call")
            .iter()
            .any(|c| c["content"][0]["oldText"] == "beta")
    );
    // Everything of the history came before the answer.
    for kind in ["user_message_chunk", "agent_message_chunk", "tool_call"] {
        assert_eq!(
            of_kind(load, kind).len(),
            of_kind(&seen["load_before_answer"], kind).len(),
            "{kind}"
        );
    }

    // Resume replays nothing, and the model sees the whole conversation.
    let resume = &seen["resume"];
    for kind in ["user_message_chunk", "agent_message_chunk", "tool_call"] {
        assert!(of_kind(resume, kind).is_empty(), "{kind}: {resume}");
    }
    assert_eq!(
        seen["after_resume"]["stop"], "end_turn",
        "{}",
        seen["after_resume"]
    );
    let requests = h.requests_of("acp session: write the notes");
    let body = requests.last().unwrap().body.to_string();
    assert!(body.contains("resumed: what did we do?"), "{body}");
    assert!(body.contains("Notes written."), "{body}");
}

/// The same tree twice, once per client (a conversation is one session
/// for the scripted server, so each has its own words).
fn fanout_script() -> Script {
    let mut script = Script::new();
    for name in ["opt_in", "nested"] {
        script = script
            .conversation(
                &format!("acp fanout {name}"),
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"tasks": [
                            {"goal": format!("child one of {name}: read a.txt")},
                            {"goal": format!("child two of {name}: read b.txt")},
                            {"goal": format!("child three of {name}: touch child3.txt")}
                        ]}),
                    ),
                    Reply::text("all three done"),
                    Reply::tool(
                        "delegate_task",
                        json!({"goal": format!("child bg of {name}: wait a moment"), "background": true}),
                    ),
                    Reply::text("started in the background"),
                    Reply::tool(
                        "delegate_task",
                        json!({"goal": format!("child slow of {name}: run the sleeper")}),
                    ),
                    Reply::text("the slow child was cancelled"),
                ],
            )
            .conversation(
                &format!("child slow of {name}"),
                vec![
                    Reply::tool("terminal", json!({"command": sleeper_command("slow.pids")})),
                    Reply::text("slow: never reached"),
                ],
            )
            .conversation(
                &format!("child one of {name}"),
                vec![
                    Reply::tool("read_file", json!({"path": "a.txt"})),
                    Reply::text("one: a says A"),
                ],
            )
            .conversation(
                &format!("child two of {name}"),
                vec![
                    Reply::tool("read_file", json!({"path": "b.txt"})),
                    Reply::text("two: b says B"),
                ],
            )
            .conversation(
                &format!("child three of {name}"),
                vec![
                    Reply::tool("terminal", json!({"command": "touch child3.txt"})),
                    Reply::text("three: touched"),
                ],
            )
            .conversation(
                &format!("child bg of {name}"),
                vec![
                    Reply::tool("terminal", json!({"command": "sleep 1"})),
                    Reply::text("bg: waited"),
                ],
            );
    }
    script
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegation_tree_shows_as_subagent_sessions_or_nested_tool_calls() {
    let h = Harness::new(fanout_script()).await;
    std::fs::write(h.work_path().join("a.txt"), "A\n").unwrap();
    std::fs::write(h.work_path().join("b.txt"), "B\n").unwrap();
    h.config("[permissions]\nask = [\"terminal(touch *)\"]\n");
    let seen = run_client(&h, "subagents").await;

    // With clientCapabilities.subagents: one subagent_update per child...
    let opt_in = &seen["opt_in"];
    assert_eq!(opt_in["stop"], "end_turn");
    let root = opt_in["session_id"].as_str().unwrap();
    let updates = opt_in["updates"].as_array().unwrap();
    let announced: Vec<&Value> = updates
        .iter()
        .filter(|u| {
            u["update"]["sessionUpdate"] == "subagent_update"
                && u["update"]["state"]["state"] == "running"
                && u["update"]["title"].is_string()
        })
        .collect();
    assert_eq!(announced.len(), 3, "{updates:?}");
    let children: Vec<&str> = announced
        .iter()
        .map(|u| {
            assert_eq!(u["sessionId"], root);
            assert_eq!(u["update"]["capabilities"]["cancel"], json!({}));
            u["update"]["sessionId"].as_str().unwrap()
        })
        .collect();
    assert!(children.iter().all(|c| *c != root));
    // ...the children's own updates under their session ids...
    for child in &children {
        let own: Vec<&Value> = updates
            .iter()
            .filter(|u| u["sessionId"] == *child)
            .collect();
        assert!(
            own.iter()
                .any(|u| u["update"]["sessionUpdate"] == "agent_message_chunk"),
            "{child}: {own:?}"
        );
        assert!(
            own.iter()
                .any(|u| u["update"]["sessionUpdate"] == "tool_call"),
            "{child}: {own:?}"
        );
        assert!(
            updates
                .iter()
                .any(|u| u["update"]["sessionUpdate"] == "subagent_update"
                    && u["update"]["sessionId"] == *child
                    && u["update"]["state"]["state"] == "idle"
                    && u["update"]["state"]["stopReason"] == "end_turn"),
            "{child} never went idle"
        );
    }
    // ...an approval asked in the child's session, `requires_action` meanwhile...
    let permissions = opt_in["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 1, "{permissions:?}");
    assert!(children.contains(&permissions[0]["session_id"].as_str().unwrap()));
    assert!(
        permissions[0]["tool_call"]["title"]
            .as_str()
            .unwrap()
            .starts_with("subagent ")
    );
    assert!(
        updates
            .iter()
            .any(|u| u["update"]["state"]["state"] == "requires_action")
    );
    // The request names the child's call, shown in the child's session first.
    let asked = &permissions[0]["tool_call"]["toolCallId"];
    let shown = updates
        .iter()
        .position(|u| {
            u["update"]["sessionUpdate"] == "tool_call"
                && u["update"]["toolCallId"] == *asked
                && u["sessionId"] == permissions[0]["session_id"]
        })
        .unwrap_or_else(|| panic!("{asked} was never shown: {updates:?}"));
    let waiting = updates
        .iter()
        .position(|u| u["update"]["state"]["state"] == "requires_action")
        .unwrap();
    assert!(shown < waiting);
    assert!(h.work_path().join("child3.txt").exists());
    // ...the root's text stays in the root session...
    let root_text: String = updates
        .iter()
        .filter(|u| u["sessionId"] == root && u["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(root_text, "all three done");
    // ...and a background child that ends after its turn is reported at once.
    assert_eq!(opt_in["background_stop"], "end_turn");
    let late = opt_in["after_turn"].as_array().unwrap();
    assert!(
        late.iter()
            .any(|u| u["update"]["sessionUpdate"] == "subagent_update"
                && u["update"]["state"]["state"] == "idle"),
        "no idle state after the turn: {late:?}"
    );

    // Cancelling a child's session cancels that child alone: its command
    // ends, it goes idle as cancelled, and the parent's turn goes on.
    let cancel = &opt_in["child_cancel"];
    assert_eq!(cancel["stop"], "end_turn", "{cancel}");
    assert_eq!(cancel["alive_after"], json!([]));
    assert!(
        cancel["updates"].as_array().unwrap().iter().any(|u| {
            u["update"]["sessionUpdate"] == "subagent_update"
                && u["update"]["sessionId"] == cancel["child"]
                && u["update"]["state"]["stopReason"] == "cancelled"
        }),
        "{cancel}"
    );
    assert!(
        text_of(&cancel["updates"], "agent_message_chunk").contains("the slow child was cancelled")
    );

    // Without the opt-in: the children are tool calls of the root session,
    // their calls nested under them.
    let nested = &seen["nested"];
    assert_eq!(nested["stop"], "end_turn");
    let root = nested["session_id"].as_str().unwrap();
    let updates = nested["updates"].as_array().unwrap();
    assert!(updates.iter().all(|u| u["sessionId"] == root));
    assert!(
        updates
            .iter()
            .all(|u| u["update"]["sessionUpdate"] != "subagent_update")
    );
    let agents: Vec<&Value> = updates
        .iter()
        .map(|u| &u["update"])
        .filter(|u| {
            u["sessionUpdate"] == "tool_call"
                && u["toolCallId"].as_str().unwrap().starts_with("agent/")
        })
        .collect();
    assert_eq!(agents.len(), 3, "{updates:?}");
    for agent in &agents {
        let id = agent["toolCallId"].as_str().unwrap();
        assert!(
            updates
                .iter()
                .any(|u| u["update"]["_meta"]["herald"]["parentToolCallId"] == id
                    && u["update"]["sessionUpdate"] == "tool_call"),
            "no call nested under {id}"
        );
        assert!(
            updates
                .iter()
                .any(|u| u["update"]["toolCallId"] == id && u["update"]["status"] == "completed"),
            "{id} never completed"
        );
    }
    assert_eq!(nested["permissions"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn herald_acp_refuses_session_flags_and_ends_quietly_when_stdin_closes() {
    let h = Harness::new(Script::new()).await;
    // --resume makes no sense here (the editor names the sessions): a usage
    // error, nothing on stdout.
    let output = h
        .command(common::Wire::OpenAi)
        .args(["acp", "--resume", "ses_x"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(
        common::stderr(&output).contains("--resume"),
        "{}",
        common::stderr(&output)
    );
    // A client that goes away at once: exit 0, nothing on stdout (which
    // carries only ACP messages), no session stored.
    let output = h
        .command(common::Wire::OpenAi)
        .arg("acp")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", common::stderr(&output));
    assert!(output.stdout.is_empty());
    let listed = h.cli_json(&["sessions", "list", "--json"]).await;
    assert_eq!(listed, json!([]));
}

fn client_io_script() -> Script {
    Script::new()
        .conversation(
            "client io: use the editor",
            vec![
                Reply::tool("read_file", json!({"path": "buffer.txt"})),
                Reply::tool(
                    "patch",
                    json!({"path": "buffer.txt", "old_string": "unsaved buffer", "new_string": "edited buffer"}),
                ),
                Reply::tool(
                    "write_file",
                    json!({"path": "out.txt", "content": "written by herald\n"}),
                ),
                Reply::tool(
                    "write_file",
                    json!({"path": "secret.txt", "content": "must not be written\n"}),
                ),
                Reply::tool(
                    "terminal",
                    json!({"command": "echo from-the-editor-terminal; pwd"}),
                ),
                Reply::text("done in the editor"),
                // The next prompt: a subagent writes through the editor.
                Reply::tool("delegate_task", json!({"goal": "child io: write child.txt"})),
                Reply::text("the child wrote it"),
            ],
        )
        .conversation(
            "child io: write child.txt",
            vec![
                Reply::tool(
                    "write_file",
                    json!({"path": "child.txt", "content": "from the child\n"}),
                ),
                Reply::text("child.txt written"),
            ],
        )
        .conversation(
            "local io: use herald's own tools",
            vec![
                Reply::tool("read_file", json!({"path": "buffer.txt"})),
                Reply::tool("terminal", json!({"command": "echo from-herald-itself"})),
                Reply::text("done locally"),
            ],
        )
}

/// The results the model got in the conversation that starts with `needle`.
fn results_of(h: &Harness, needle: &str) -> Vec<String> {
    h.requests_of(needle)
        .last()
        .map(|r| common::tool_results(&r.body))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editors_files_and_terminals_are_used_when_offered() {
    let h = Harness::new(client_io_script()).await;
    let work = h.work_path();
    std::fs::write(work.join("buffer.txt"), "on disk line\n").unwrap();
    let secret = work.join("secret.txt");
    h.config(&format!(
        "[permissions]\nask = [\"terminal(echo *)\"]\ndeny = [\"write_file({})\"]\n",
        secret.display()
    ));
    let seen = run_client(&h, "client_io").await;
    let buffer = work.join("buffer.txt").display().to_string();
    let out = work.join("out.txt").display().to_string();

    // Offered: the file tools read and wrote the editor's buffers.
    let offered = &seen["offered"];
    assert_eq!(offered["stop"], "end_turn", "{offered}");
    let results = results_of(&h, "client io");
    assert!(
        results[0].contains("1|unsaved buffer line"),
        "read_file returns the unsaved buffer, not the disk: {results:?}"
    );
    assert!(results[1].starts_with("Patched buffer.txt"), "{results:?}");
    assert_eq!(offered["buffers"][&buffer], "edited buffer line\n");
    assert_eq!(offered["buffers"][&out], "written by herald\n");
    // herald wrote nothing to the disk itself.
    assert_eq!(
        std::fs::read_to_string(work.join("buffer.txt")).unwrap(),
        "on disk line\n"
    );
    assert!(!work.join("out.txt").exists());
    // The write the rules deny was refused before the editor was asked.
    assert!(results[3].contains("denied"), "{results:?}");
    assert!(!secret.exists());
    let requests = offered["requests"].as_array().unwrap();
    let session = seen["session_id"].as_str().unwrap();
    let methods: Vec<(&str, &str)> = requests
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap(),
                r["path"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        methods,
        vec![
            ("fs/read_text_file", buffer.as_str()),
            ("fs/read_text_file", buffer.as_str()),
            ("fs/write_text_file", buffer.as_str()),
            ("fs/write_text_file", out.as_str()),
            ("terminal/create", ""),
            ("terminal/wait_for_exit", ""),
            ("terminal/output", ""),
            ("terminal/release", ""),
        ],
        "{requests:?}"
    );
    assert!(
        requests
            .iter()
            .filter(|r| r.get("session_id").is_some())
            .all(|r| r["session_id"] == session)
    );
    // The command ran in the editor's terminal, in the session's directory,
    // and its output reached the model.
    let create = &requests[4];
    assert_eq!(create["command"], "bash");
    assert_eq!(
        create["args"],
        json!(["-c", "echo from-the-editor-terminal; pwd"])
    );
    assert_eq!(create["cwd"], work.display().to_string());
    let terminal: Value = serde_json::from_str(&results[4]).unwrap();
    assert_eq!(terminal["exit_code"], 0, "{terminal}");
    assert_eq!(
        terminal["output"],
        format!("from-the-editor-terminal\n{}\n", work.display())
    );
    // The tool call carries the terminal, while it runs and at its end.
    let updates = &offered["updates"];
    let call = of_kind(updates, "tool_call")
        .into_iter()
        .find(|c| c["kind"] == "execute")
        .unwrap();
    let terminal_updates: Vec<&Value> = of_kind(updates, "tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == call["toolCallId"])
        .filter(|u| u["content"][0]["type"] == "terminal")
        .collect();
    assert_eq!(terminal_updates.len(), 2, "{updates}");
    assert!(
        terminal_updates
            .iter()
            .all(|u| u["content"][0]["terminalId"] == create["terminal_id"])
    );
    assert_eq!(terminal_updates[1]["status"], "completed");

    // A subagent in the session's checkout wrote through the editor too.
    let child = &seen["offered_child"];
    assert_eq!(child["stop"], "end_turn", "{child}");
    let child_file = work.join("child.txt").display().to_string();
    assert_eq!(child["buffers"][&child_file], "from the child\n", "{child}");
    assert!(!work.join("child.txt").exists());
    assert_eq!(
        child["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (
                r["method"].as_str().unwrap(),
                r["path"].as_str().unwrap_or("")
            ))
            .collect::<Vec<_>>(),
        vec![("fs/write_text_file", child_file.as_str())],
        "{child}"
    );
    let child_result = results_of(&h, "child io: write child.txt");
    assert_eq!(
        child_result,
        ["Wrote child.txt: 15 bytes, 1 lines"],
        "{child_result:?}"
    );

    // Not offered: herald's own tools, and the editor is never asked.
    let local = &seen["not_offered"];
    assert_eq!(local["stop"], "end_turn", "{local}");
    assert_eq!(local["requests"], json!([]));
    let results = results_of(&h, "local io");
    assert!(results[0].contains("1|on disk line"), "{results:?}");
    let ran: Value = serde_json::from_str(&results[1]).unwrap();
    assert_eq!(ran["output"], "from-herald-itself\n");
    let updates = &local["updates"];
    assert!(
        of_kind(updates, "tool_call_update")
            .iter()
            .all(|u| u["content"][0]["type"] != "terminal"),
        "{updates}"
    );
}
