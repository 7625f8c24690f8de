//! The knowledge system end to end through the real binary: todo
//! state and reminders inside tool results, memory written mid-session
//! without touching the prompt, todo lists surviving `--resume`, clarify in
//! headless and interactive mode, and the `herald memory` / `herald skills`
//! commands.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::Stdio;

use common::{Harness, Wire, last, of_type, stderr, tool_results};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

const STALE_NUDGE: &str = "[todo] 10+ tool calls since the task list last changed";
const FAILURE_NUDGE: &str = "[todo] This failure may affect your plan";

fn system_of(body: &Value) -> String {
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

fn todo_json(result: &str) -> Value {
    // A reminder line may follow the JSON.
    let json = result.split("\n\n[todo]").next().unwrap();
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {result}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn todo_and_memory_writes_keep_the_prompt_prefix_stable() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "plan the work",
                vec![
                    Reply::tool(
                        "todo_write",
                        json!({"todos": [
                            {"id": "1", "content": "inspect the repo", "status": "in_progress"},
                            {"id": "2", "content": "write notes", "status": "pending"}
                        ]}),
                    ),
                    Reply::tool(
                        "memory",
                        json!({"action": "add", "target": "memory", "content": "Project notes live in notes/"}),
                    ),
                    Reply::tool("todo_read", json!({})),
                    Reply::tool(
                        "todo_write",
                        json!({"merge": true, "todos": [
                            {"id": "1", "status": "completed"},
                            {"id": "2", "status": "in_progress"}
                        ]}),
                    ),
                    Reply::text("Planned and noted."),
                ],
            )
            .conversation("second session", vec![Reply::text("hello again")]),
    )
    .await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "Please plan the work").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "Planned and noted.");
    let completed = of_type(&events, "tool.completed");
    assert!(
        completed.iter().all(|e| e["status"] == "ok"),
        "{completed:?}"
    );

    let requests = h.server.requests();
    assert_eq!(requests.len(), 5);
    let results = tool_results(&requests[4].body);
    let first = todo_json(&results[0]);
    assert_eq!(
        first["counts"],
        json!({"total": 2, "pending": 1, "in_progress": 1, "completed": 0, "cancelled": 0})
    );
    assert!(results[1].starts_with("Added the entry."), "{}", results[1]);
    assert!(results[1].contains("Project notes live in notes/"));
    let read = todo_json(&results[2]);
    assert_eq!(read["tool_calls_since_update"], 1, "{read}");
    assert_eq!(read["todos"].as_array().unwrap().len(), 2);
    let merged = todo_json(&results[3]);
    assert_eq!(merged["counts"]["completed"], 1);
    assert_eq!(merged["todos"][1]["status"], "in_progress");

    // The memory write changed the file but not this session's prompt: every
    // request carries the same system prompt, without the new entry.
    let prompt = system_of(&requests[0].body);
    assert!(!prompt.contains("Project notes live in notes/"));
    for request in &requests {
        assert_eq!(system_of(&request.body), prompt);
    }
    h.server.assert_invariants();
    let memory = std::fs::read_to_string(h.home.path().join("memories/MEMORY.md")).unwrap();
    assert_eq!(memory, "Project notes live in notes/\n");

    // A new session starts with the snapshot that includes it.
    let (output, _) = h.run_json(Wire::OpenAi, &[], "A second session").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.server.requests();
    let next = system_of(&requests.last().unwrap().body);
    assert!(next.contains("Project notes live in notes/"), "{next}");
    assert!(
        next.contains("MEMORY (your notes) [1% — 28/2,200 chars]"),
        "{next}"
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn reminders_are_appended_to_the_newest_result_only() {
    let mut replies = vec![
        Reply::tool(
            "todo_write",
            json!({"todos": [
                {"id": "1", "content": "probe", "status": "in_progress"},
                {"id": "2", "content": "finish", "status": "pending"}
            ]}),
        ),
        Reply::tool("read_file", json!({"path": "missing.txt"})),
    ];
    for _ in 0..11 {
        replies.push(Reply::tool("terminal", json!({"command": "true"})));
    }
    replies.push(Reply::text("done"));
    let h = Harness::new(Script::new().conversation("long chore", replies)).await;
    let (output, _) = h.run_json(Wire::OpenAi, &[], "A long chore").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = h.server.requests();
    assert_eq!(requests.len(), 14);
    let results = tool_results(&requests[13].body);
    assert_eq!(results.len(), 13);
    assert!(!results[0].contains("[todo]"));
    // The failing call carries the plan-review line.
    assert!(results[1].ends_with(&format!(
        "\n\n{FAILURE_NUDGE}; call todo_read to review it (cancel and re-plan items that no longer work)."
    )), "{}", results[1]);
    // Ten more calls pass quietly; the eleventh gets the todo_read reminder.
    for result in &results[2..12] {
        assert!(!result.contains("[todo]"), "{result}");
    }
    assert!(results[12].contains(STALE_NUDGE), "{}", results[12]);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn todo_list_survives_resume() {
    let h = Harness::new(Script::new().conversation(
        "keep a plan",
        vec![
            Reply::tool(
                "todo_write",
                json!({"todos": [
                    {"id": "a", "content": "survive the restart", "status": "in_progress"},
                    {"id": "b", "content": "then finish", "status": "pending"}
                ]}),
            ),
            Reply::text("Plan saved."),
            Reply::tool("todo_read", json!({})),
            Reply::text("Still planned."),
        ],
    ))
    .await;
    let (output, events) = h.run_json(Wire::Anthropic, &[], "Please keep a plan").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let id = last(&events)["session_id"].as_str().unwrap().to_owned();
    let (output, events) = h
        .run_json(Wire::Anthropic, &["--resume", &id], "what is left?")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "Still planned.");
    let requests = h.server.requests();
    let view = requests.last().unwrap().view().unwrap();
    let (_, read) = view.tool_results().last().unwrap().clone();
    let read = todo_json(&read);
    assert_eq!(
        read["todos"],
        json!([
            {"id": "a", "content": "survive the restart", "status": "in_progress"},
            {"id": "b", "content": "then finish", "status": "pending"}
        ])
    );
    assert_eq!(read["tool_calls_since_update"], 0);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn clarify_in_a_headless_run_is_an_error_result() {
    let h = Harness::new(Script::new().conversation(
        "pick a database",
        vec![
            Reply::tool(
                "clarify",
                json!({"question": "Which database?", "choices": ["Postgres", "SQLite"]}),
            ),
            Reply::text("Going with SQLite (assumed)."),
        ],
    ))
    .await;
    let (output, events) = h
        .run_json(Wire::OpenAi, &[], "Please pick a database")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let completed = of_type(&events, "tool.completed");
    assert_eq!(completed[0]["name"], "clarify");
    assert_eq!(completed[0]["status"], "error");
    let results = tool_results(&h.server.requests()[1].body);
    assert!(
        results[0].contains("no user is available"),
        "{}",
        results[0]
    );
    assert!(
        results[0].contains("state your assumptions"),
        "{}",
        results[0]
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn clarify_in_the_interactive_loop_reads_a_numbered_choice() {
    let h = Harness::new(Script::new().conversation(
        "ask me first",
        vec![
            Reply::tool(
                "clarify",
                json!({"question": "Which database?", "choices": ["Postgres", "SQLite"]}),
            ),
            Reply::text("SQLite it is."),
        ],
    ))
    .await;
    let mut cmd = h.command(Wire::OpenAi);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"please ask me first\n2\n").await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the interactive session did not finish")
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let shown = stderr(&output);
    assert!(shown.contains("? Which database?"), "{shown}");
    assert!(
        shown.contains("  2. SQLite\n  3. Other (type your answer)"),
        "{shown}"
    );
    let requests = h.server.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1].body);
    assert_eq!(results, ["The user chose option 2: SQLite"]);
    h.server.assert_invariants();
}

async fn cli(h: &Harness, args: &[&str]) -> std::process::Output {
    h.bare_command().args(args).output().await.unwrap()
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_show_and_edit() {
    let h = Harness::new(Script::new()).await;
    let output = cli(&h, &["memory", "show"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("MEMORY (your notes) [0% — 0/2,200 chars]\n(no entries)"));

    let memories = h.home.path().join("memories");
    std::fs::create_dir_all(&memories).unwrap();
    std::fs::write(memories.join("USER.md"), "Name is Ada\n§\nLikes tabs\n").unwrap();
    let output = cli(&h, &["memory", "show"]).await;
    let text = stdout(&output);
    assert!(
        text.contains(
            "USER PROFILE (about the user) [2% — 24/1,375 chars]\n1. Name is Ada\n2. Likes tabs"
        ),
        "{text}"
    );
    let output = cli(&h, &["memory", "show", "--json"]).await;
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        shown["user"]["entries"],
        json!(["Name is Ada", "Likes tabs"])
    );
    assert_eq!(shown["memory"]["limit_chars"], 2200);

    // Without an editor the path is printed.
    let output = cli(&h, &["memory", "edit", "--target", "user"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).trim_end().ends_with("memories/USER.md"));
    // With one, it edits the file in place and reports the result.
    let output = h
        .bare_command()
        .args(["memory", "edit"])
        .env("EDITOR", "printf 'Uses make\\n' >>")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("MEMORY (your notes) [0% — 9/2,200 chars]"),
        "{}",
        stderr(&output)
    );
    let text = std::fs::read_to_string(memories.join("MEMORY.md")).unwrap();
    assert_eq!(text, "Uses make\n");

    // A disabled file is reported as such.
    h.config("[memory]\nuser_profile_enabled = false\n");
    let output = cli(&h, &["memory", "show"]).await;
    assert!(
        stdout(&output).contains("USER PROFILE (about the user): disabled"),
        "{}",
        stdout(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn skills_list_view_create_delete() {
    let h = Harness::new(Script::new()).await;
    let output = cli(&h, &["skills", "list"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("no skills yet"));

    // Create from the template, and from a body on stdin.
    let output = cli(
        &h,
        &[
            "skills",
            "create",
            "release",
            "--description",
            "Cut a release: tag, changelog, push",
            "--category",
            "ops",
        ],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let skill_md = h.home.path().join("skills/release/SKILL.md");
    let text = std::fs::read_to_string(&skill_md).unwrap();
    assert!(
        text.starts_with(
            "---\nname: release\ndescription: \"Cut a release: tag, changelog, push\"\n"
        ),
        "{text}"
    );
    assert!(text.contains("## Steps"), "{text}");
    assert!(
        h.home
            .path()
            .join("skills/release/.herald-created")
            .is_file()
    );

    let mut child = h
        .bare_command()
        .args([
            "skills",
            "create",
            "lint",
            "--description",
            "Run the linters",
            "--body",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"# Lint\n1. cargo clippy\n").await.unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    // A project skill is listed too.
    let project = h.work_path().join(".claude/skills/review");
    std::fs::create_dir_all(project.join("references")).unwrap();
    std::fs::write(
        project.join("SKILL.md"),
        "---\nname: review\ndescription: Review a diff\n---\nSteps\n",
    )
    .unwrap();
    std::fs::write(project.join("references/checklist.md"), "- tests pass").unwrap();

    let output = cli(&h, &["skills", "list"]).await;
    let text = stdout(&output);
    assert!(
        text.contains("lint  [home, herald]  Run the linters"),
        "{text}"
    );
    assert!(
        text.contains("release  [home, ops, herald]  Cut a release"),
        "{text}"
    );
    assert!(text.contains("review  [.claude]  Review a diff"), "{text}");
    let output = cli(&h, &["skills", "list", "--json"]).await;
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listed["skills"].as_array().unwrap().len(), 3);

    let output = cli(&h, &["skills", "view", "review"]).await;
    let text = stdout(&output);
    assert!(text.contains("description: Review a diff"), "{text}");
    assert!(
        text.contains("- references/checklist.md (12 bytes)"),
        "{text}"
    );
    let output = cli(
        &h,
        &[
            "skills",
            "view",
            "review",
            "--file",
            "references/checklist.md",
        ],
    )
    .await;
    assert!(stdout(&output).contains("- tests pass"));
    let output = cli(&h, &["skills", "view", "lint"]).await;
    assert!(stdout(&output).contains("1. cargo clippy"));

    // Bad input is a usage error and changes nothing.
    let output = cli(&h, &["skills", "create", "Bad Name", "--description", "x"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("invalid skill name"),
        "{}",
        stderr(&output)
    );
    let output = cli(
        &h,
        &["skills", "create", "release", "--description", "again"],
    )
    .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("already exists"),
        "{}",
        stderr(&output)
    );
    let output = cli(&h, &["skills", "delete", "review"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("belongs to a project"),
        "{}",
        stderr(&output)
    );
    assert!(project.join("SKILL.md").is_file());
    let output = cli(&h, &["skills", "view", "nope"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("no skill named \"nope\". No similar name; skills_list with a query searches all 3 skills"),
        "{}",
        stderr(&output)
    );

    let output = cli(&h, &["skills", "delete", "release"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!h.home.path().join("skills/release").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn skill_created_by_the_agent_is_in_the_next_sessions_index() {
    let content =
        "---\nname: deploy\ndescription: Deploy the site with make deploy\n---\n1. make deploy\n";
    let h = Harness::new(
        Script::new()
            .conversation(
                "save the procedure",
                vec![
                    Reply::tool(
                        "skill_manage",
                        json!({"action": "create", "name": "deploy", "content": content}),
                    ),
                    Reply::text("Saved."),
                ],
            )
            .conversation("next session", vec![Reply::text("hi")]),
    )
    .await;
    let (output, _) = h
        .run_json(Wire::OpenAi, &[], "Please save the procedure")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let first = system_of(&h.server.requests()[0].body);
    assert!(!first.contains("deploy"));
    let (output, _) = h.run_json(Wire::OpenAi, &[], "The next session").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let next = system_of(&h.server.requests().last().unwrap().body);
    assert!(
        next.contains("- deploy: Deploy the site with make deploy"),
        "{next}"
    );
    h.server.assert_invariants();
}
