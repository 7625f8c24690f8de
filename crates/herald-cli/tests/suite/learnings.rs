//! Learnings, the error memory, end to end through the real
//! binary: a failure followed by a fix on the same target is offered as a
//! candidate learning, the model saves it, and in a new session a similar
//! failing call gets the saved fix appended to its result (never to the
//! system prompt); `herald learnings list|show|delete`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Harness, Wire, last, of_type, stderr, tool_results};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

const CANDIDATE: &str = "[learning] Candidate:";
const RECALL: &str = "[learnings] Fixes saved earlier for failures like this one";
const FIX: &str = "run sh prepare.sh once before sh build.sh (it creates .ready)";

fn system_of(body: &Value) -> String {
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

/// A build script that fails until `prepare.sh` ran.
fn write_scripts(h: &Harness) {
    let work = h.work_path();
    std::fs::write(
        work.join("build.sh"),
        "if [ -f .ready ]; then echo built; else echo 'error: build cache missing (run prepare first)' >&2; exit 3; fi\n",
    )
    .unwrap();
    std::fs::write(work.join("prepare.sh"), "touch .ready\n").unwrap();
}

async fn learnings(h: &Harness, args: &[&str]) -> std::process::Output {
    h.bare_command()
        .arg("learnings")
        .args(args)
        .output()
        .await
        .unwrap()
}

async fn listed(h: &Harness) -> Vec<Value> {
    let out = learnings(h, &["list", "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fix_is_captured_saved_and_recalled_in_a_new_session() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "fix the build",
                vec![
                    Reply::tool("terminal", json!({"command": "sh build.sh"})),
                    Reply::tool("terminal", json!({"command": "ls"})),
                    Reply::tool(
                        "terminal",
                        json!({"command": "sh prepare.sh && sh build.sh"}),
                    ),
                    Reply::tool(
                        "learning",
                        json!({"action": "save", "tool": "terminal",
                            "pattern": "sh build.sh: error: build cache missing",
                            "error_type": "missing setup", "fix": FIX,
                            "tags": ["build"]}),
                    ),
                    Reply::text("Fixed the build."),
                ],
            )
            .conversation(
                "release build",
                vec![
                    Reply::tool("terminal", json!({"command": "sh build.sh --release"})),
                    Reply::text("It needs the prepare step."),
                ],
            ),
    )
    .await;
    write_scripts(&h);

    // Session 1: fail, an unrelated call, the fix, the save.
    let (output, events) = h.run_json(Wire::OpenAi, &[], "Please fix the build").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "Fixed the build.");
    let first_session = events[0]["session_id"].as_str().unwrap().to_owned();
    let requests = h.requests_of("fix the build");
    assert_eq!(requests.len(), 5);
    let results = tool_results(&requests[4].body);
    assert_eq!(results.len(), 4);
    // The failure: no learnings yet, so nothing appended.
    assert!(results[0].contains("\"exit_code\":3"), "{}", results[0]);
    assert!(!results[0].contains(RECALL), "{}", results[0]);
    // A success on another target is left alone.
    assert!(!results[1].contains(CANDIDATE), "{}", results[1]);
    // The fix on the same target carries the candidate line, once.
    assert!(results[2].contains("\"exit_code\":0"), "{}", results[2]);
    let candidate = results[2].split_once("\n\n").unwrap().1;
    assert_eq!(
        candidate,
        "[learning] Candidate: terminal `sh build.sh` failed earlier with \"error: build cache missing (run prepare first)\"; `sh prepare.sh && sh build.sh` now succeeded. If what changed would help next time, save it: learning action=save, tool=terminal, pattern (the error), error_type, fix."
    );
    assert!(
        results[3].starts_with("Saved learning #1."),
        "{}",
        results[3]
    );
    let saved = listed(&h).await;
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0]["error_type"], "missing-setup");
    assert_eq!(saved[0]["times_used"], 0);
    assert_eq!(saved[0]["project"], Value::Null);
    h.server.assert_invariants();

    // Session 2, a new session: the same kind of failure gets the fix.
    std::fs::remove_file(h.work_path().join(".ready")).unwrap();
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "Please do a release build")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_ne!(events[0]["session_id"].as_str().unwrap(), first_session);
    let requests = h.requests_of("release build");
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1].body);
    let (head, block) = results[0].split_once("\n\n").unwrap();
    assert!(head.contains("\"exit_code\":3"), "{head}");
    assert_eq!(
        block,
        format!(
            "{RECALL} (learning tool):\n- #1 terminal/missing-setup: sh build.sh: error: build cache missing \u{2192} fix: {FIX}"
        )
    );
    // Never in the system prompt, which stays as it was.
    for request in h.server.requests() {
        assert!(!system_of(&request.body).contains(FIX));
    }
    assert_eq!(system_of(&requests[0].body), system_of(&requests[1].body));
    // The event carries what the model saw.
    let completed = of_type(&events, "tool.completed");
    assert!(completed[0]["output"].as_str().unwrap().contains(FIX));
    let saved = listed(&h).await;
    assert_eq!(saved[0]["times_used"], 1);
    assert!(saved[0]["last_used_at"].is_i64());
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_project_specific_learning_stays_in_its_project() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "remember this",
                vec![
                    Reply::tool(
                        "learning",
                        json!({"action": "save", "tool": "terminal", "project_specific": true,
                            "pattern": "sh build.sh: error: build cache missing",
                            "error_type": "missing-setup", "fix": FIX}),
                    ),
                    Reply::text("saved"),
                ],
            )
            .conversation(
                "elsewhere",
                vec![
                    Reply::tool("terminal", json!({"command": "sh build.sh"})),
                    Reply::text("failed"),
                ],
            ),
    )
    .await;
    write_scripts(&h);
    let (output, _) = h.run_json(Wire::OpenAi, &[], "Please remember this").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let saved = listed(&h).await;
    assert_eq!(saved[0]["project"], h.work_path().display().to_string());

    // The same failure in another directory: not recalled there.
    let other = tempfile::tempdir().unwrap();
    std::fs::copy(
        h.work_path().join("build.sh"),
        other.path().join("build.sh"),
    )
    .unwrap();
    let mut cmd = h.command(Wire::OpenAi);
    cmd.args(["run", "--cwd"])
        .arg(other.path())
        .args(["--json", "Please build elsewhere"]);
    let output = cmd.output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.requests_of("elsewhere");
    let results = tool_results(&requests[1].body);
    assert!(results[0].contains("\"exit_code\":3"), "{}", results[0]);
    assert!(!results[0].contains(RECALL), "{}", results[0]);
    assert_eq!(listed(&h).await[0]["times_used"], 0);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn learnings_list_show_and_delete() {
    let h = Harness::new(
        Script::new().conversation(
            "save two",
            vec![
                Reply::tool(
                    "learning",
                    json!({"action": "save", "tool": "terminal", "pattern": "npm ci: EACCES permission denied",
                        "error_type": "permission", "fix": "chown the npm cache", "tags": ["npm"],
                        "context": "CI runners"}),
                ),
                Reply::tool(
                    "learning",
                    json!({"action": "save", "tool": "patch", "pattern": "old_string not found",
                        "error_type": "stale-read", "fix": "read_file again before patching"}),
                ),
                Reply::text("saved"),
            ],
        ),
    )
    .await;
    let empty = learnings(&h, &["list"]).await;
    assert!(empty.status.success(), "{}", stderr(&empty));
    assert!(
        String::from_utf8_lossy(&empty.stdout).starts_with("no learnings yet"),
        "{}",
        String::from_utf8_lossy(&empty.stdout)
    );
    let (output, _) = h.run_json(Wire::OpenAi, &[], "Please save two").await;
    assert!(output.status.success(), "{}", stderr(&output));

    let out = learnings(&h, &["list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines.iter().any(|l| l.starts_with("#1    terminal/permission  used 0  [all projects]  npm ci: EACCES permission denied \u{2192} chown the npm cache")),
        "{text}"
    );

    let out = learnings(&h, &["show", "#1"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    for expected in [
        "learning #1\n",
        "kind:     terminal/permission\n",
        "fix:      chown the npm cache\n",
        "context:  CI runners\n",
        "tags:     npm\n",
        "scope:    all projects\n",
        "used:     0 times",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    let out = learnings(&h, &["show", "2", "--json"]).await;
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["fix"], "read_file again before patching");

    // Bad ids: a usage error each, and nothing is deleted.
    for (args, message) in [
        (vec!["delete", "abc"], "'abc' is not a learning id"),
        (vec!["delete", "0"], "'0' is not a learning id"),
        (vec!["delete", "99"], "no learning #99"),
        (vec!["show", "99"], "no learning #99"),
    ] {
        let out = learnings(&h, &args).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
        assert_eq!(listed(&h).await.len(), 2, "{args:?}");
    }

    let out = learnings(&h, &["delete", "1"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "deleted learning #1: npm ci: EACCES permission denied\n"
    );
    let left = listed(&h).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["id"], 2);
    let again = learnings(&h, &["delete", "1"]).await;
    assert_eq!(again.status.code(), Some(2));
    let out = learnings(&h, &["delete", "2", "--json"]).await;
    let deleted: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(deleted["deleted"]["pattern"], "old_string not found");
    assert!(listed(&h).await.is_empty());
    h.server.assert_invariants();
}
