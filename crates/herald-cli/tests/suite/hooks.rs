//! Hooks end to end through the real binary against the scripted server:
//! every event fires with the documented JSON on stdin, `pre_tool` blocks
//! (exit 2 or a JSON decision) and rewrites arguments, `post_tool` replaces
//! results, context lands at the end of the conversation, `user_prompt`
//! blocks a prompt, a slow hook is killed with its whole process group and
//! reported, a project's hooks wait for `herald hooks approve`, and bad
//! `[[hooks]]` entries are configuration errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{Harness, Wire, assert_gone, last, of_type, stderr, tool_results};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

const EVENTS: [&str; 9] = [
    "session_start",
    "user_prompt",
    "pre_tool",
    "post_tool",
    "subagent_start",
    "subagent_stop",
    "pre_compact",
    "session_end",
    "notification",
];

/// Writes an executable bash script `name` under `$HERALD_HOME/scripts`.
fn script(h: &Harness, name: &str, body: &str) -> PathBuf {
    let dir = h.home.path().join("scripts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A hook script appending its stdin (one JSON object) as a line to `log`,
/// under a lock: hooks of different events may run at once (a
/// notification beside a tool's hooks), and their lines must not mix.
fn logger(h: &Harness, log: &Path) -> PathBuf {
    script(
        h,
        "log.sh",
        &format!("exec 9>>'{}'; flock 9; {{ cat; echo; }} >&9", log.display()),
    )
}

/// The JSON objects a [`logger`] wrote, in order.
fn read_log(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn with_event<'a>(log: &'a [Value], event: &str) -> Vec<&'a Value> {
    log.iter().filter(|e| e["event"] == event).collect()
}

/// One `[[hooks]]` table.
fn hook(event: &str, matcher: Option<&str>, command: &Path, timeout: Option<u32>) -> String {
    let mut text = format!("[[hooks]]\nevent = \"{event}\"\n");
    if let Some(matcher) = matcher {
        text.push_str(&format!("matcher = \"{matcher}\"\n"));
    }
    text.push_str(&format!("command = \"{}\"\n", command.display()));
    if let Some(timeout) = timeout {
        text.push_str(&format!("timeout = {timeout}\n"));
    }
    text
}

/// The `hook.ran` events of `events` for `hook_event`.
fn ran<'a>(events: &'a [Value], hook_event: &str) -> Vec<&'a Value> {
    of_type(events, "hook.ran")
        .into_iter()
        .filter(|e| e["event"] == hook_event)
        .collect()
}

async fn session_ids(h: &Harness) -> Vec<String> {
    let output = h
        .bare_command()
        .args(["sessions", "list", "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn stored_events(h: &Harness, session: &str) -> Vec<Value> {
    let output = h
        .bare_command()
        .args(["sessions", "show", session, "--events", "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    common::parse_events(&output.stdout)
}

/// The interactive loop on piped stdin; returns stderr.
async fn interactive(h: &Harness, input: &[u8]) -> String {
    let mut cmd = h.command(Wire::OpenAi);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the interactive session did not finish")
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    stderr(&output)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_event_of_an_interactive_session_fires_with_the_documented_json() {
    let h = Harness::new(Script::new().responder(|view| {
        if view
            .last()
            .is_some_and(|m| m.text.contains("Request for context compaction"))
        {
            return Reply::text("## Goal\n- clean up\n## Remaining work\n- none");
        }
        match view.turn {
            0 => Reply::tool("terminal", json!({"command": "rm -rf gone_dir"})),
            1 => Reply::tool("read_file", json!({"path": "notes.txt"})),
            _ => Reply::text("cleaned up"),
        }
    }))
    .await;
    let work = h.work_path();
    std::fs::create_dir(work.join("gone_dir")).unwrap();
    std::fs::write(work.join("notes.txt"), "a note\n").unwrap();
    let log = h.home.path().join("events.jsonl");
    let logger = logger(&h, &log);
    let mut config = String::from("[compression]\nprotect_first_n = 1\nprotect_last_n = 2\n");
    for event in EVENTS {
        config.push_str(&hook(event, None, &logger, None));
    }
    h.config(&config);
    interactive(&h, b"please clean up LOGTEST\ny\n/compress\n/exit\n").await;
    assert!(!work.join("gone_dir").exists(), "the approved call ran");

    let ids = session_ids(&h).await;
    assert_eq!(ids.len(), 1, "{ids:?}");
    let session = &ids[0];
    let log = read_log(&log);
    for entry in &log {
        assert_eq!(entry["session_id"], session.as_str(), "{entry}");
        assert_eq!(entry["agent_id"], "root", "{entry}");
        assert_eq!(entry["cwd"], work.display().to_string(), "{entry}");
    }
    let one = |event: &str| -> Value {
        let found = with_event(&log, event);
        assert_eq!(found.len(), 1, "{event}: {log:?}");
        found[0].clone()
    };
    assert_eq!(log[0]["event"], "session_start", "{log:?}");
    let start = one("session_start");
    assert_eq!(start["source"], "new");
    assert_eq!(start["model"], "gpt-4.1-mini");
    assert_eq!(one("user_prompt")["prompt"], "please clean up LOGTEST");

    let pre = with_event(&log, "pre_tool");
    assert_eq!(pre.len(), 2, "{log:?}");
    assert_eq!(pre[0]["tool_name"], "terminal");
    assert_eq!(pre[0]["tool_input"], json!({"command": "rm -rf gone_dir"}));
    assert!(
        pre[0]["tool_call_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    assert_eq!(pre[1]["tool_name"], "read_file");
    assert_eq!(pre[1]["tool_input"], json!({"path": "notes.txt"}));
    let post = with_event(&log, "post_tool");
    assert_eq!(post.len(), 2, "{log:?}");
    assert_eq!(post[0]["tool_name"], "terminal");
    assert_eq!(post[0]["tool_error"], false);
    assert_eq!(post[0]["tool_call_id"], pre[0]["tool_call_id"]);
    assert!(
        post[1]["tool_output"].as_str().unwrap().contains("a note"),
        "{}",
        post[1]
    );

    let notes = with_event(&log, "notification");
    assert_eq!(notes.len(), 2, "{log:?}");
    let approval = notes
        .iter()
        .find(|n| n["kind"] == "approval_needed")
        .unwrap();
    assert_eq!(approval["tool_name"], "terminal");
    assert_eq!(
        approval["tool_input"],
        json!({"command": "rm -rf gone_dir"})
    );
    assert!(approval["message"].as_str().unwrap().contains("terminal"));
    let done = notes.iter().find(|n| n["kind"] == "turn_done").unwrap();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["exit_reason"], "completed");
    assert_eq!(done["final_response"], "cleaned up");

    assert_eq!(one("pre_compact")["trigger"], "manual");
    assert_eq!(one("session_end")["reason"], "exit");
    assert_eq!(log.last().unwrap()["event"], "session_end");
    // No subagent ran, so no subagent event fired.
    assert!(with_event(&log, "subagent_start").is_empty());

    // Every run is a stored hook.ran event naming the event and command.
    let events = stored_events(&h, session).await;
    for event in [
        "session_start",
        "user_prompt",
        "pre_tool",
        "post_tool",
        "notification",
        "pre_compact",
        "session_end",
    ] {
        let runs = ran(&events, event);
        assert!(!runs.is_empty(), "no hook.ran for {event}");
        for run in runs {
            assert_eq!(run["outcome"], "ok", "{run}");
            assert_eq!(run["command"], logger.display().to_string());
            assert!(run["duration_ms"].as_u64().is_some());
        }
    }
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn subagent_events_and_a_one_shot_session_end_before_run_completed() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "delegate GAMMA",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"tasks": [{"goal": "child gamma: answer at once"}]}),
                    ),
                    Reply::text("parent done"),
                ],
            )
            .conversation("child gamma", vec![Reply::text("gamma summary")]),
    )
    .await;
    let log = h.home.path().join("events.jsonl");
    let logger = logger(&h, &log);
    let config: String = [
        "subagent_start",
        "subagent_stop",
        "notification",
        "session_end",
    ]
    .iter()
    .map(|e| hook(e, None, &logger, None))
    .collect();
    h.config(&config);
    let (output, events) = h.run_json(Wire::OpenAi, &[], "Please delegate GAMMA").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let root = last(&events)["session_id"].as_str().unwrap().to_owned();
    let log = read_log(&log);
    let start = with_event(&log, "subagent_start");
    let stop = with_event(&log, "subagent_stop");
    assert_eq!((start.len(), stop.len()), (1, 1), "{log:?}");
    let child = start[0]["agent_id"].as_str().unwrap().to_owned();
    assert_ne!(child, "root");
    assert_eq!(start[0]["parent_id"], "root");
    assert_eq!(start[0]["parent_session_id"], root.as_str());
    assert_ne!(
        start[0]["session_id"],
        root.as_str(),
        "the child's own session"
    );
    assert_eq!(start[0]["goal"], "child gamma: answer at once");
    assert_eq!(start[0]["depth"], 1);
    assert_eq!(start[0]["background"], false);
    assert_eq!(stop[0]["agent_id"], child.as_str());
    assert_eq!(stop[0]["session_id"], start[0]["session_id"]);
    assert_eq!(stop[0]["status"], "completed");
    assert_eq!(stop[0]["summary"], "gamma summary");
    let done = with_event(&log, "notification");
    assert_eq!(done.len(), 1, "{log:?}");
    assert_eq!(done[0]["kind"], "turn_done");
    assert_eq!(done[0]["final_response"], "parent done");
    let end = with_event(&log, "session_end");
    assert_eq!(end.len(), 1, "{log:?}");
    assert_eq!(end[0]["reason"], "completed");

    // In the stream: the subagent hooks are the child's, and the session's
    // end comes before run.completed, the last line.
    let start_ran = ran(&events, "subagent_start");
    assert_eq!(start_ran.len(), 1);
    assert_eq!(start_ran[0]["agent_id"], child.as_str());
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e["type"].as_str().unwrap() {
            "hook.ran" => format!("hook.ran:{}", e["event"].as_str().unwrap()),
            other => other.to_owned(),
        })
        .collect();
    let at = |kind: &str| kinds.iter().position(|k| k == kind).unwrap();
    assert!(
        at("hook.ran:subagent_start") < at("subagent.completed"),
        "{kinds:?}"
    );
    assert!(
        at("hook.ran:notification") < at("hook.ran:session_end"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last().unwrap(), "run.completed", "{kinds:?}");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn pre_tool_blocks_by_exit_code_2_or_a_json_decision_and_the_model_sees_why() {
    let h = Harness::new(Script::new().conversation(
        "write things",
        vec![
            Reply::tool("write_file", json!({"path": "blocked.txt", "content": "x"})),
            Reply::tool("terminal", json!({"command": "touch ran.txt"})),
            Reply::tool("read_file", json!({"path": "seen.txt"})),
            Reply::text("gave up"),
        ],
    ))
    .await;
    let work = h.work_path();
    std::fs::write(work.join("seen.txt"), "visible\n").unwrap();
    let refuse = script(
        &h,
        "refuse.sh",
        "cat > /dev/null\necho 'writing is off today' >&2\nexit 2",
    );
    let json_block = script(
        &h,
        "json-block.sh",
        r#"cat > /dev/null
echo '{"decision": "block", "reason": "no shell for you"}'"#,
    );
    let env_dump = script(
        &h,
        "env.sh",
        &format!("env > '{}'", h.home.path().join("hook-env.txt").display()),
    );
    h.config(&format!(
        "{}{}{}",
        hook("pre_tool", Some("write_file|patch"), &refuse, None),
        hook("pre_tool", Some("term*"), &json_block, None),
        hook("session_start", None, &env_dump, None),
    ));
    let mut cmd = h.command(Wire::OpenAi);
    cmd.env("MY_SERVICE_TOKEN", "tok-very-secret-value").args([
        "run",
        "--json",
        "Please write things",
    ]);
    let output = cmd.output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let events = common::parse_events(&output.stdout);
    assert!(!work.join("blocked.txt").exists(), "the blocked write ran");
    assert!(!work.join("ran.txt").exists(), "the blocked command ran");
    let results = tool_results(&h.requests_of("write things").last().unwrap().body);
    assert_eq!(
        results[0],
        "blocked by a pre_tool hook: writing is off today. The call did not run"
    );
    assert_eq!(
        results[1],
        "blocked by a pre_tool hook: no shell for you. The call did not run"
    );
    assert!(results[2].contains("visible"), "{}", results[2]);
    let completed = of_type(&events, "tool.completed");
    assert_eq!(completed[0]["status"], "error");
    assert_eq!(completed[2]["status"], "ok");
    let pre = ran(&events, "pre_tool");
    // read_file matched neither hook: two runs, both blocking.
    assert_eq!(pre.len(), 2, "{pre:?}");
    assert!(pre.iter().all(|r| r["outcome"] == "blocked"));
    assert_eq!(pre[0]["message"], "writing is off today");
    // The hook ran in the scrubbed environment of tool processes.
    let env = std::fs::read_to_string(h.home.path().join("hook-env.txt")).unwrap();
    assert!(env.contains("PATH="), "{env}");
    assert!(!env.contains("MY_SERVICE_TOKEN") && !env.contains("tok-very-secret-value"));
    assert!(!env.contains("OPENAI_API_KEY") && !env.contains("sk-test-openai"));
    h.server.assert_invariants();
}

/// A script run by `execute_code` calls tools through the registry; those
/// calls pass the same `pre_tool`/`post_tool` hooks, so a hook that polices
/// `terminal` cannot be bypassed by a script.
#[tokio::test(flavor = "multi_thread")]
async fn a_scripts_tool_calls_pass_the_same_hooks() {
    const CODE: &str = r#"
from herald_tools import terminal, read_file
try:
    print("terminal ->", terminal(command="touch ran.txt"))
except Exception as err:
    print("terminal raised", err)
print("read ->", read_file("seen.txt"))
"#;
    let h = Harness::new(Script::new().conversation(
        "script things",
        vec![
            Reply::tool("execute_code", json!({ "code": CODE })),
            Reply::text("done"),
        ],
    ))
    .await;
    let work = h.work_path();
    std::fs::write(work.join("seen.txt"), "visible\n").unwrap();
    let refuse = script(
        &h,
        "refuse.sh",
        "cat > /dev/null\necho 'no shell, not even from a script' >&2\nexit 2",
    );
    let log = h.home.path().join("post.log");
    let post = logger(&h, &log);
    h.config(&format!(
        "{}{}",
        hook("pre_tool", Some("terminal"), &refuse, None),
        hook("post_tool", Some("read_file"), &post, None),
    ));
    let (output, events) = h.run_json(Wire::OpenAi, &[], "Please script things").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        !work.join("ran.txt").exists(),
        "the script's blocked command ran"
    );
    let results = tool_results(&h.requests_of("script things").last().unwrap().body);
    assert!(
        results[0].contains("no shell, not even from a script"),
        "{}",
        results[0]
    );
    assert!(results[0].contains("read -> "), "{}", results[0]);
    // pre_tool ran for the script's terminal call (and blocked it); the
    // post_tool hook saw the script's read_file call and its output.
    let pre = ran(&events, "pre_tool");
    assert_eq!(pre.len(), 1, "{pre:?}");
    assert_eq!(pre[0]["outcome"], "blocked");
    let logged = read_log(&log);
    let reads = with_event(&logged, "post_tool");
    assert_eq!(reads.len(), 1, "{logged:?}");
    assert_eq!(reads[0]["tool_name"], "read_file");
    assert!(
        reads[0]["tool_output"]
            .as_str()
            .unwrap()
            .contains("visible"),
        "{:?}",
        reads[0]
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn hooks_rewrite_arguments_replace_results_and_add_context_at_the_end() {
    let h = Harness::new(Script::new().conversation(
        "rewrite CTX",
        vec![
            Reply::tool(
                "write_file",
                json!({"path": "original.txt", "content": "hello"}),
            ),
            Reply::tool("read_file", json!({"path": "secret.txt"})),
            Reply::text("rewritten"),
        ],
    ))
    .await;
    let work = h.work_path();
    std::fs::write(work.join("secret.txt"), "the real secret\n").unwrap();
    let print =
        |name: &str, json: &str| script(&h, name, &format!("cat > /dev/null\necho '{json}'"));
    let path = print("path.sh", r#"{"tool_input": {"path": "redirected.txt"}}"#);
    let content = print(
        "content.sh",
        r#"{"tool_input": {"content": "from hook B"}}"#,
    );
    let pre_note = print("pre-note.sh", r#"{"additional_context": "pre note"}"#);
    let replace = print(
        "replace.sh",
        r#"{"tool_output": "replaced by hook", "additional_context": "post note"}"#,
    );
    let prompt_note = print(
        "prompt-note.sh",
        r#"{"additional_context": "today is a holiday"}"#,
    );
    let start_note = print(
        "start-note.sh",
        r#"{"additional_context": "session facts"}"#,
    );
    h.config(
        &[
            hook("pre_tool", Some("write_file"), &path, None),
            hook("pre_tool", Some("write_file"), &content, None),
            hook("pre_tool", Some("read_file"), &pre_note, None),
            hook("post_tool", Some("read_file"), &replace, None),
            hook("user_prompt", None, &prompt_note, None),
            hook("session_start", None, &start_note, None),
        ]
        .concat(),
    );
    let (output, events) = h.run_json(Wire::OpenAi, &[], "Please rewrite CTX").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "rewritten");
    // Both rewrites applied (in config order), to the call that ran.
    assert!(!work.join("original.txt").exists());
    assert_eq!(
        std::fs::read_to_string(work.join("redirected.txt")).unwrap(),
        "from hook B"
    );
    let requests = h.requests_of("rewrite CTX");
    let body = &requests.last().unwrap().body;
    let results = tool_results(body);
    assert_eq!(
        results[1],
        "replaced by hook\n\n[hook] pre note\n\n[hook] post note"
    );
    // The prompt carries the session's and the prompt hook's context at its
    // end; the system prompt has neither.
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    let system = messages[0]["content"].as_str().unwrap();
    assert!(!system.contains("holiday") && !system.contains("session facts"));
    assert_eq!(
        messages[1]["content"],
        "Please rewrite CTX\n\n[hook] session facts\n[hook] today is a holiday"
    );
    // The stored call keeps what the model sent (the prefix stays cached).
    let call = &messages[2]["tool_calls"][0]["function"];
    let sent: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(sent, json!({"path": "original.txt", "content": "hello"}));
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_prompt_hook_blocks_the_prompt_before_it_is_sent() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("should not be asked"))).await;
    let refuse = script(
        &h,
        "refuse.sh",
        "grep -q secrets && { echo 'no prompts about secrets' >&2; exit 2; }\nexit 0",
    );
    h.config(&hook("user_prompt", None, &refuse, None));
    let output = h
        .command(Wire::OpenAi)
        .args(["run", "tell me the secrets"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("a user_prompt hook blocked the prompt: no prompts about secrets"),
        "{}",
        stderr(&output)
    );
    assert!(h.server.requests().is_empty(), "the prompt was sent");
    // The same hook lets another prompt through.
    let (output, events) = h.run_json(Wire::OpenAi, &[], "tell me a joke").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(h.server.requests().len(), 1);
    assert_eq!(ran(&events, "user_prompt")[0]["outcome"], "ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_hook_is_killed_with_its_processes_and_reported_and_a_failing_one_warns() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "slow hook",
                vec![
                    Reply::tool("write_file", json!({"path": "written.txt", "content": "w"})),
                    Reply::text("written"),
                ],
            )
            .conversation(
                "failing hook",
                vec![
                    Reply::tool("read_file", json!({"path": "written.txt"})),
                    Reply::text("read"),
                ],
            ),
    )
    .await;
    let pids = h.home.path().join("hook.pids");
    let slow = script(
        &h,
        "slow.sh",
        &format!(
            "echo $$ > '{p}.tmp'\nsleep 300 &\necho $! >> '{p}.tmp'\nmv '{p}.tmp' '{p}'\nwait",
            p = pids.display()
        ),
    );
    let failing = script(&h, "failing.sh", "cat > /dev/null\necho oops >&2\nexit 1");
    h.config(&format!(
        "{}{}",
        hook("pre_tool", Some("write_file"), &slow, Some(1)),
        hook("post_tool", Some("read_file"), &failing, None),
    ));
    let started = std::time::Instant::now();
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "Please run the slow hook")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    // It did not block: the call ran.
    assert_eq!(
        std::fs::read_to_string(h.work_path().join("written.txt")).unwrap(),
        "w"
    );
    let runs = ran(&events, "pre_tool");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["outcome"], "timeout");
    assert!(runs[0]["duration_ms"].as_u64().unwrap() >= 1000);
    let warned = of_type(&events, "error");
    assert!(
        warned.iter().any(|e| e["fatal"] == false
            && e["message"]
                .as_str()
                .unwrap()
                .contains("timed out after 1 s and was killed")),
        "{warned:?}"
    );
    let pids: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    assert_gone(&pids, "the slow hook and its background sleep").await;

    // A failing hook: a warning line in the human output; the result stays.
    let output = h
        .command(Wire::OpenAi)
        .args(["run", "Please test the failing hook"])
        .output()
        .await
        .unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "warning: post_tool hook `{}` exited with code 1: oops; it was ignored",
            failing.display()
        )),
        "{err}"
    );
    let results = tool_results(&h.requests_of("failing hook").last().unwrap().body);
    assert!(results[0].contains('w'), "{}", results[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn project_hooks_run_only_once_approved_and_again_after_a_change() {
    // "write file N" writes fileN.txt, then answers.
    let h = Harness::new(Script::new().responder(|view| {
        if view.turn > 0 {
            return Reply::text("done");
        }
        let n = view.conversation.trim_start_matches("write file ").trim();
        Reply::tool(
            "write_file",
            json!({"path": format!("file{n}.txt"), "content": "x"}),
        )
    }))
    .await;
    let work = h.work_path();
    std::fs::create_dir(work.join(".git")).unwrap();
    std::fs::create_dir(work.join(".herald")).unwrap();
    let refuse = script(
        &h,
        "refuse.sh",
        "cat > /dev/null\necho \"project says no: $1\" >&2\nexit 2",
    );
    let write_project = |reason: &str| {
        std::fs::write(
            work.join(".herald/hooks.toml"),
            format!(
                "[[hooks]]\nevent = \"pre_tool\"\nmatcher = \"write_file\"\ncommand = \"{} {reason}\"\n",
                refuse.display()
            ),
        )
        .unwrap();
    };
    write_project("first");
    let run = |n: usize| {
        let h = &h;
        async move {
            let (output, events) = h
                .run_json(Wire::OpenAi, &[], &format!("write file {n}"))
                .await;
            assert!(output.status.success(), "{}", stderr(&output));
            events
        }
    };
    let hooks_cmd = |args: &'static [&'static str]| {
        let h = &h;
        async move {
            let output = h
                .bare_command()
                .arg("hooks")
                .args(args)
                .output()
                .await
                .unwrap();
            (
                output.status.code(),
                String::from_utf8_lossy(&output.stdout).into_owned(),
                stderr(&output),
            )
        }
    };

    // Not approved: the hook does not run, a warning says how to approve.
    let events = run(1).await;
    assert!(work.join("file1.txt").exists());
    assert!(ran(&events, "pre_tool").is_empty());
    assert!(
        of_type(&events, "error").iter().any(|e| e["message"]
            .as_str()
            .unwrap()
            .contains("herald hooks approve")),
        "{events:?}"
    );
    let (code, listed, _) = hooks_cmd(&["list"]).await;
    assert_eq!(code, Some(0));
    assert!(
        listed.contains("not approved") && listed.contains("refuse.sh first"),
        "{listed}"
    );

    // Approved: it runs.
    let (code, shown, err) = hooks_cmd(&["approve"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(
        shown.contains("approved") && shown.contains("refuse.sh first"),
        "{shown}"
    );
    let events = run(2).await;
    assert!(!work.join("file2.txt").exists());
    assert_eq!(ran(&events, "pre_tool")[0]["outcome"], "blocked");
    let (_, listed, _) = hooks_cmd(&["list", "--json"]).await;
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["origin"], "project");
    assert_eq!(listed[0]["runs"], true);

    // Changed: it needs a new approval.
    write_project("second");
    let events = run(3).await;
    assert!(work.join("file3.txt").exists());
    assert!(ran(&events, "pre_tool").is_empty());

    // Revoked: it does not run either.
    let (code, _, _) = hooks_cmd(&["approve"]).await;
    assert_eq!(code, Some(0));
    let (code, shown, _) = hooks_cmd(&["approve", "--revoke"]).await;
    assert_eq!(code, Some(0));
    assert!(shown.contains("approval withdrawn"), "{shown}");
    let events = run(4).await;
    assert!(work.join("file4.txt").exists());
    assert!(ran(&events, "pre_tool").is_empty());

    // A broken project file is a warning, cannot be approved, runs nothing.
    std::fs::write(
        work.join(".herald/hooks.toml"),
        "[[hooks]]\nevent = \"nope\"\ncommand = \"x\"\n",
    )
    .unwrap();
    let (code, _, err) = hooks_cmd(&["approve"]).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("entry 1 event: unknown event `nope`"), "{err}");
    let events = run(5).await;
    assert!(work.join("file5.txt").exists());
    assert!(
        of_type(&events, "error").iter().any(|e| e["message"]
            .as_str()
            .unwrap()
            .contains("none of its hooks runs")),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_hook_entries_are_config_errors_naming_the_key_and_change_nothing() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("unused"))).await;
    for (entry, needle) in [
        (
            "event = \"pre_tol\"\ncommand = \"x\"",
            "[[hooks]] entry 1 event: unknown event `pre_tol`; use one of session_start",
        ),
        (
            "event = \"pre_tool\"\ncommand = \"\"",
            "[[hooks]] entry 1 command: is empty",
        ),
        (
            "event = \"pre_tool\"\nmatcher = \"[ab\"\ncommand = \"x\"",
            "[[hooks]] entry 1 matcher: `[ab` is not a valid glob of the tool name",
        ),
        (
            "event = \"pre_tool\"\ncommand = \"x\"\ntimeout = 0",
            "[[hooks]] entry 1 timeout: 0 is out of range; allowed: 1 to 600 seconds",
        ),
        (
            "event = \"pre_tool\"\ncommand = \"x\"\ntimeout = 100000",
            "[[hooks]] entry 1 timeout: 100000 is out of range",
        ),
        (
            "event = \"session_end\"\nmatcher = \"x\"\ncommand = \"x\"",
            "[[hooks]] entry 1 matcher: `session_end` hooks take no matcher",
        ),
        (
            "event = \"pre_tool\"\nmatchr = \"x\"\ncommand = \"x\"",
            "unknown field `matchr`",
        ),
    ] {
        h.config(&format!("[[hooks]]\n{entry}\n"));
        let output = h
            .command(Wire::OpenAi)
            .args(["run", "hello"])
            .output()
            .await
            .unwrap();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{entry}: {err}");
        assert!(err.contains(needle), "{entry}: {err}");
        assert!(err.contains("config.toml"), "{err}");
    }
    assert!(h.server.requests().is_empty());
    assert!(
        !h.home.path().join("state.db").exists(),
        "nothing was stored"
    );
}
