//! `herald batch` end to end against the scripted model: task files with
//! templates, resume by content hash, output-schema repair, bad input,
//! a 429 storm, and trajectories read back by Python parsers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

use crate::common::{Harness, Wire, stderr};

/// The text of the first user message of a recorded request.
fn first_user(view: &herald_testkit::RequestView) -> String {
    view.messages
        .iter()
        .find(|m| m.role == "user")
        .map(|m| m.text.clone())
        .unwrap_or_default()
}

/// A model that reads `notes.txt` once, then answers `done: PROMPT`.
fn reading_model() -> Script {
    Script::new().responder(|view| {
        if view.turn == 0 {
            Reply::tool("read_file", json!({"path": "notes.txt"}))
        } else {
            Reply::text(format!("done: {}", first_user(view)))
        }
    })
}

fn results(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

async fn batch(h: &Harness, args: &[&str]) -> std::process::Output {
    h.command(Wire::OpenAi)
        .arg("batch")
        .args(args)
        .output()
        .await
        .unwrap()
}

/// The prompts the model was sent as first user messages, sorted.
fn prompts_sent(h: &Harness) -> Vec<String> {
    let mut prompts: Vec<String> = h
        .server
        .requests()
        .iter()
        .filter_map(|r| r.view().ok())
        .filter(|v| v.turn == 0)
        .map(|v| first_user(&v))
        .collect();
    prompts.sort();
    prompts
}

fn write_tasks(dir: &Path, rows: &[Value]) -> PathBuf {
    let path = dir.join("tasks.jsonl");
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_runs_every_row_and_resume_reruns_exactly_the_two_edited_rows() {
    let h = Harness::new(reading_model()).await;
    std::fs::write(h.work_path().join("notes.txt"), "calm\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut rows: Vec<Value> = (0..6)
        .map(|i| json!({"prompt": "Summarise {file} for reader {n}", "file": format!("f{i}.md"), "n": i}))
        .collect();
    let tasks = write_tasks(dir.path(), &rows);
    let out = dir.path().join("out");
    let out_arg = out.to_str().unwrap();
    let output = batch(
        &h,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--out",
            out_arg,
            "--concurrency",
            "3",
        ],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let first = results(&out);
    assert_eq!(first.len(), 6);
    for (i, r) in first.iter().enumerate() {
        let prompt = format!("Summarise f{i}.md for reader {i}");
        assert_eq!(r["status"], "completed", "{r}");
        assert_eq!(r["final_answer"], format!("done: {prompt}"));
        assert_eq!(r["tool_stats"]["read_file"]["calls"], 1, "{r}");
        assert_eq!(r["tool_sequence"], json!(["read_file"]));
        assert_eq!(r["requests"], 2);
        assert!(r["tokens"]["input"].as_u64().unwrap() > 0);
        let session = r["session_id"].as_str().unwrap();
        assert!(session.starts_with("ses_") || !session.is_empty());
        let trajectory: Value = serde_json::from_slice(
            &std::fs::read(out.join(format!("trajectories/{}.json", r["hash"].as_str().unwrap())))
                .unwrap(),
        )
        .unwrap();
        let roles: Vec<&str> = trajectory["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);
    }
    assert_eq!(prompts_sent(&h).len(), 6);
    // Not done plain lines on stderr when it is not a terminal.
    let err = stderr(&output);
    assert!(err.contains("[6/6]"), "{err}");
    assert!(err.contains("6 completed, 0 failed"), "{err}");

    // The sessions are stored as batch sessions.
    let sessions = h.cli_json(&["sessions", "list", "--json"]).await;
    let batch_sessions = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["source"] == "batch")
        .count();
    assert_eq!(batch_sessions, 6, "{sessions}");

    // Edit two rows; add nothing else. Resume runs exactly those two.
    rows[1]["n"] = json!(100);
    rows[4]["file"] = json!("edited.md");
    write_tasks(dir.path(), &rows);
    let before = h.server.request_count();
    let output = batch(
        &h,
        &["run", tasks.to_str().unwrap(), "--out", out_arg, "--resume"],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let new_prompts: Vec<String> = h.server.requests()[before..]
        .iter()
        .filter_map(|r| r.view().ok())
        .filter(|v| v.turn == 0)
        .map(|v| first_user(&v))
        .collect();
    let mut new_prompts = new_prompts;
    new_prompts.sort();
    assert_eq!(
        new_prompts,
        [
            "Summarise edited.md for reader 4",
            "Summarise f1.md for reader 100"
        ]
    );
    let second = results(&out);
    assert_eq!(second.len(), 6, "one line per item of the file");
    assert_eq!(
        second[1]["final_answer"],
        "done: Summarise f1.md for reader 100"
    );
    assert_eq!(second[0], first[0], "untouched items keep their results");
    assert!(
        stderr(&output).contains("2 run (2 completed, 0 failed), 4 skipped"),
        "{}",
        stderr(&output)
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_that_misses_the_output_schema_gets_one_repair_turn() {
    let script = Script::new()
        .conversation(
            "fixable item",
            vec![
                Reply::text("the count is three"),
                Reply::text("```json\n{\"count\": 3, \"label\": \"x\"}\n```"),
            ],
        )
        .conversation(
            "hopeless item",
            vec![
                Reply::text("{\"count\": \"many\"}"),
                Reply::text("still {\"count\": \"many\"}"),
            ],
        )
        .conversation(
            "good item",
            vec![Reply::text("{\"count\": 1, \"label\": \"y\"}")],
        );
    let h = Harness::new(script).await;
    let dir = tempfile::tempdir().unwrap();
    let schema = json!({
        "type": "object",
        "required": ["count", "label"],
        "properties": {"count": {"type": "integer"}, "label": {"type": "string"}}
    });
    let tasks = write_tasks(
        dir.path(),
        &[
            json!({"id": "fix", "prompt": "fixable item", "output_schema": schema}),
            json!({"id": "bad", "prompt": "hopeless item", "output_schema": schema}),
            json!({"id": "ok", "prompt": "good item", "output_schema": schema}),
        ],
    );
    let out = dir.path().join("out");
    let output = batch(
        &h,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(
        output.status.code(),
        Some(1),
        "one item failed: {}",
        stderr(&output)
    );
    let r = results(&out);
    assert_eq!(r[0]["status"], "completed", "{}", r[0]);
    assert_eq!(r[0]["repaired"], true);
    assert_eq!(r[0]["output"], json!({"count": 3, "label": "x"}));
    assert_eq!(r[1]["status"], "invalid_output", "{}", r[1]);
    assert!(
        r[1]["error"].as_str().unwrap().contains("/count"),
        "{}",
        r[1]
    );
    assert_eq!(r[2]["status"], "completed");
    assert_eq!(r[2]["repaired"], false);
    // The repair turn told the model what was wrong, in the same session.
    let fix = h.requests_of("fixable item");
    assert_eq!(fix.len(), 2);
    let repair = fix[1].view().unwrap();
    let last_user = repair.messages.iter().rfind(|m| m.role == "user").unwrap();
    assert!(
        last_user
            .text
            .contains("does not match the required JSON Schema"),
        "{}",
        last_user.text
    );
    assert!(last_user.text.contains("label"), "{}", last_user.text);
    assert_eq!(h.requests_of("good item").len(), 1);
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("the worktree test needs git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn worktrees(repo: &Path) -> usize {
    git(repo, &["worktree", "list", "--porcelain"])
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn working_copies_are_removed_after_each_item_and_git_worktrees_pruned() {
    let h = Harness::new(reading_model()).await;
    h.server
        .skip_invariants("the same items run twice, from new copies");
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("notes.txt"), "from git\n").unwrap();
    git(&repo, &["add", "notes.txt"]);
    git(&repo, &["commit", "-q", "-m", "notes"]);
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(plain.join("notes.txt"), "from a copy\n").unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    std::fs::write(
        &tasks,
        "{\"id\": \"g\", \"prompt\": \"look in git\", \"cwd\": \"repo\"}\n\
         {\"id\": \"p\", \"prompt\": \"look in a copy\", \"cwd\": \"plain\"}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = batch(
        &h,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let r = results(&out);
    assert_eq!(
        (r[0]["status"].as_str(), r[1]["status"].as_str()),
        (Some("completed"), Some("completed"))
    );
    // Each item read its own copy…
    let reads: Vec<String> = ["look in git", "look in a copy"]
        .iter()
        .map(|p| {
            let view = h.requests_of(p)[1].view().unwrap();
            view.tool_results().next().unwrap().1.to_owned()
        })
        .collect();
    assert!(
        reads[0].contains("from git") && reads[1].contains("from a copy"),
        "{reads:?}"
    );
    // …and nothing of them is left: no directory, no worktree entry.
    for item in &r {
        let cwd = Path::new(item["cwd"].as_str().unwrap());
        assert!(cwd.starts_with(out.join("work")), "{cwd:?}");
        assert!(!cwd.exists(), "{cwd:?} was left");
    }
    let left: Vec<_> = std::fs::read_dir(out.join("work"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(worktrees(&repo), 1, "only the repository itself");
    assert!(git(&repo, &["status", "--porcelain"]).is_empty());

    // --keep-workdirs keeps them, the worktree registered.
    let kept = dir.path().join("kept");
    let output = batch(
        &h,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--out",
            kept.to_str().unwrap(),
            "--keep-workdirs",
        ],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let r = results(&kept);
    let g = Path::new(r[0]["cwd"].as_str().unwrap());
    let p = Path::new(r[1]["cwd"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(g.join("notes.txt")).unwrap(),
        "from git\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.join("notes.txt")).unwrap(),
        "from a copy\n"
    );
    assert_eq!(worktrees(&repo), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn csv_rows_with_their_own_directory_model_and_toolsets() {
    let h = Harness::new(reading_model()).await;
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("proj");
    std::fs::create_dir(&template).unwrap();
    std::fs::write(template.join("notes.txt"), "from the template\n").unwrap();
    std::fs::write(
        dir.path().join("tasks.csv"),
        "id,prompt,topic,cwd,model,toolsets,max_turns\n\
         a,\"Look at {topic}, please\",apples,proj,gpt-4.1-nano,file,4\n\
         b,Look at {topic},pears,proj,,\"file,todo\",\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = batch(
        &h,
        &[
            "run",
            dir.path().join("tasks.csv").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let r = results(&out);
    assert_eq!(r[0]["id"], "a");
    assert_eq!(r[0]["model"], "gpt-4.1-nano");
    assert_eq!(r[1]["model"], "gpt-4.1-mini");
    assert_eq!(r[0]["toolsets"], json!(["file"]));
    assert_eq!(r[1]["toolsets"], json!(["file", "todo"]));
    // Each item worked in its own copy of the template.
    let cwd_a = PathBuf::from(r[0]["cwd"].as_str().unwrap());
    let cwd_b = PathBuf::from(r[1]["cwd"].as_str().unwrap());
    assert_ne!(cwd_a, cwd_b);
    assert!(cwd_a.starts_with(&out));
    // The copies are removed once their item finished.
    assert!(!cwd_a.exists() && !cwd_b.exists());
    let reqs = h.requests_of("Look at apples, please");
    assert_eq!(reqs[0].view().unwrap().model, "gpt-4.1-nano");
    let tools = &reqs[0].view().unwrap().tool_names;
    assert!(tools.iter().any(|t| t == "read_file"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "terminal"), "{tools:?}");
    let result_text = reqs[1].view().unwrap();
    let (_, content) = result_text.tool_results().next().unwrap();
    assert!(content.contains("from the template"), "{content}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_task_files_and_options_are_refused_before_anything_is_written() {
    let h = Harness::new(reading_model()).await;
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, &str, &str)> = vec![
        (
            "t.jsonl",
            "{\"prompt\": \"a\"}\n{\"file\": \"x\"}\n",
            "tasks/t.jsonl:2: the item has no `prompt` field",
        ),
        (
            "t.jsonl",
            "{\"prompt\": \"read {file}\"}\n",
            "no field `file`",
        ),
        ("t.jsonl", "not json\n", ":1: not JSON"),
        (
            "t.jsonl",
            "{\"prompt\": \"a\", \"budget_usd\": -1}\n",
            "`budget_usd` must be a positive number",
        ),
        (
            "t.jsonl",
            "{\"prompt\": \"a\", \"cwd\": \"missing\"}\n",
            "is not a directory",
        ),
        (
            "t.jsonl",
            "{\"prompt\": \"a\", \"output_schema\": {\"type\": 5}}\n",
            "not a valid JSON Schema",
        ),
        (
            "t.csv",
            "prompt,max_turns\nhello,many\n",
            "`max_turns` must be a number",
        ),
        ("t.jsonl", "", "the file has no items"),
    ];
    for (name, text, want) in cases {
        let tasks_dir = dir.path().join("tasks");
        std::fs::create_dir_all(&tasks_dir).unwrap();
        let path = tasks_dir.join(name);
        std::fs::write(&path, text).unwrap();
        let out = dir.path().join("out-bad");
        let output = batch(
            &h,
            &[
                "run",
                path.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        )
        .await;
        assert_eq!(output.status.code(), Some(2), "{text}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(want),
            "{text}: {}",
            stderr(&output)
        );
        assert!(!out.exists(), "{text}: nothing may be written");
        std::fs::remove_file(&path).unwrap();
    }
    // A bad distribution, and a distribution with nothing on.
    let tasks = write_tasks(dir.path(), &[json!({"prompt": "a"})]);
    for (dist, want) in [
        ("{\"file\": 2}", "from 0 to 1"),
        ("{\"file\": 0}", "every probability is 0"),
    ] {
        let path = dir.path().join("dist.json");
        std::fs::write(&path, dist).unwrap();
        let out = dir.path().join("out-dist");
        let output = batch(
            &h,
            &[
                "run",
                tasks.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--toolset-distribution",
                path.to_str().unwrap(),
            ],
        )
        .await;
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(want), "{}", stderr(&output));
        assert!(!out.exists());
    }
    // An output directory with results is not overwritten silently.
    let out = dir.path().join("out-full");
    std::fs::create_dir_all(&out).unwrap();
    let line = "{\"id\":\"x\",\"hash\":\"h\",\"status\":\"completed\",\"final_answer\":\"a\",\"cost_usd\":null,\"duration_ms\":1,\"session_id\":null,\"model\":null,\"error\":null}\n";
    std::fs::write(out.join("results.jsonl"), line).unwrap();
    let output = batch(
        &h,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--resume"), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(out.join("results.jsonl")).unwrap(),
        line
    );
    // No provider configured: refused before the directory is made.
    let out = dir.path().join("out-nokey");
    let output = h
        .bare_command()
        .args([
            "batch",
            "run",
            tasks.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(!out.exists());
    assert_eq!(
        h.server.request_count(),
        0,
        "no bad input reached the model"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_429_storm_slows_the_batch_and_it_speeds_up_again_when_the_storm_passes() {
    let h = Harness::new(reading_model()).await;
    std::fs::write(h.work_path().join("notes.txt"), "calm\n").unwrap();
    h.config("[network]\nmax_retries = 4\nretry_base_delay_ms = 100\n");
    h.server.set_latency(Duration::from_millis(150));
    h.server.limit_concurrency(Some((3, Some(1))));
    let dir = tempfile::tempdir().unwrap();
    let items = 40;
    let rows: Vec<Value> = (0..items)
        .map(|i| json!(format!("storm item {i:02}")))
        .collect();
    let tasks = write_tasks(dir.path(), &rows);
    let out = dir.path().join("out");
    let child = h
        .command(Wire::OpenAi)
        .args([
            "batch",
            "run",
            tasks.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--concurrency",
            "10",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The storm: the provider admits three requests at once.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let done_lines = |out: &Path| {
        std::fs::read_to_string(out.join("results.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    while done_lines(&out) < 8 {
        assert!(
            std::time::Instant::now() < deadline,
            "the batch made no progress"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let refused = h.server.throttled_count();
    let answered_so_far = h.server.request_count();
    assert!(refused > 0, "the provider never refused a request");
    assert!(h.server.peak_in_flight() <= 3);
    // Backing off: far fewer refusals than requests, where ten items
    // retrying blindly against three slots would be refused again and
    // again.
    assert!(
        refused < answered_so_far,
        "{refused} refusals for {answered_so_far} answered requests"
    );
    // The storm passes; the same process raises its concurrency again.
    h.server.limit_concurrency(None);
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let r = results(&out);
    assert_eq!(r.len(), items);
    assert!(r.iter().all(|r| r["status"] == "completed"), "{r:?}");
    assert!(
        h.server.peak_in_flight() > 3,
        "concurrency never rose again after the storm: peak {}",
        h.server.peak_in_flight()
    );
}

/// The CI virtualenv's interpreter (with the `openai` package).
fn venv_python() -> PathBuf {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.ci/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: the export tests read trajectories back with the openai package; run .ci/run once \
         (or: python3 -m venv .ci/venv && .ci/venv/bin/pip install openai==3.51.0)",
        python.display()
    );
    python
}

#[tokio::test(flavor = "multi_thread")]
async fn trajectories_export_as_sharegpt_and_openai_and_python_parsers_read_them_back() {
    let script = Script::new()
        .conversation(
            "hallucinating item",
            vec![
                Reply::tool("summon_oracle", json!({"q": "x"})),
                Reply::text("the oracle said yes"),
            ],
        )
        .conversation("silent item", vec![Reply::text("")])
        .responder(|view| {
            if view.turn == 0 {
                Reply::tool("read_file", json!({"path": "notes.txt"}))
            } else {
                Reply::text(format!("done: {}", first_user(view)))
            }
        });
    let h = Harness::new(script).await;
    std::fs::write(h.work_path().join("notes.txt"), "calm\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tasks = write_tasks(
        dir.path(),
        &[
            json!("good item one"),
            json!("hallucinating item"),
            json!("good item two"),
            json!("silent item"),
        ],
    );
    let out = dir.path().join("out");
    let output = batch(
        &h,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    )
    .await;
    let r = results(&out);
    assert_eq!(r.len(), 4, "{}", stderr(&output));
    assert_eq!(r[1]["status"], "completed", "{}", r[1]);
    assert_eq!(r[1]["tool_stats"]["summon_oracle"]["errors"], 1, "{}", r[1]);
    for format in ["sharegpt", "openai"] {
        let file = dir.path().join(format!("{format}.jsonl"));
        let output = h
            .bare_command()
            .args([
                "batch",
                "export",
                out.to_str().unwrap(),
                "--format",
                format,
                "--output",
                file.to_str().unwrap(),
            ])
            .output()
            .await
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        let err = stderr(&output);
        assert!(err.contains("exported 2 trajectories"), "{err}");
        assert!(err.contains("1 with unknown tool names"), "{err}");
        assert!(
            err.contains("1 without a final answer") || err.contains("1 not completed"),
            "{err}"
        );
        let check = std::process::Command::new(venv_python())
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/trajectory_check.py"))
            .arg(format)
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{format}: {}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let summary: Value = serde_json::from_slice(&check.stdout).unwrap();
        assert_eq!(summary, json!({"records": 2, "tool_calls": 2}), "{format}");
    }
    // Bad export requests change nothing and say what to do.
    let output = h
        .bare_command()
        .args([
            "batch",
            "export",
            dir.path().to_str().unwrap(),
            "--format",
            "openai",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("has no results.jsonl"),
        "{}",
        stderr(&output)
    );
    let output = h
        .bare_command()
        .args([
            "batch",
            "export",
            out.to_str().unwrap(),
            "--format",
            "alpaca",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

/// The batch benchmark of docs/BENCHMARKS.md: `BENCH_ITEMS` items (1,000
/// by default) × 3 scripted model calls, 4 at once. Run with
/// `cargo test -p herald-cli --test all batch_benchmark -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a benchmark: run it on purpose"]
async fn batch_benchmark() {
    let items: usize = std::env::var("BENCH_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let h = Harness::new(Script::new().responder(|view| match view.turn {
        0 | 1 => Reply::tool("read_file", json!({"path": "notes.txt"})),
        _ => Reply::text("done"),
    }))
    .await;
    std::fs::write(h.work_path().join("notes.txt"), "calm\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<Value> = (0..items)
        .map(|i| json!(format!("bench item {i:05}")))
        .collect();
    let tasks = write_tasks(dir.path(), &rows);
    let out = dir.path().join("out");
    let started = std::time::Instant::now();
    let output = batch(
        &h,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--concurrency",
            "4",
        ],
    )
    .await;
    let took = started.elapsed();
    assert!(output.status.success(), "{}", stderr(&output));
    let r = results(&out);
    assert_eq!(r.len(), items);
    assert!(r.iter().all(|r| r["requests"] == 3));
    let usage =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    println!(
        "batch benchmark: {items} items x 3 calls, concurrency 4: {:.1} s, {:.1} items/s, {} requests, peak RSS of the herald process {} MiB",
        took.as_secs_f64(),
        items as f64 / took.as_secs_f64(),
        h.server.request_count(),
        usage.max_rss() / 1024
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn budgets_turn_limits_and_toolset_distributions_apply_per_item() {
    // The model reads forever.
    let h = Harness::new(Script::new().responder(|view| {
        Reply::tool("read_file", json!({"path": format!("n{}.txt", view.turn)}))
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let tasks = write_tasks(
        dir.path(),
        &[
            json!({"id": "cheap", "prompt": "spend item", "budget_usd": 0.000001}),
            json!({"id": "short", "prompt": "loop item", "max_turns": 2}),
            json!({"id": "drawn", "prompt": "drawn item", "max_turns": 1}),
        ],
    );
    let dist = dir.path().join("dist.yaml");
    std::fs::write(&dist, "file: 1.0\nterminal: 0.0\n").unwrap();
    let out = dir.path().join("out");
    let output = batch(
        &h,
        &[
            "run",
            tasks.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--toolset-distribution",
            dist.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let r = results(&out);
    assert_eq!(r[0]["status"], "over_budget", "{}", r[0]);
    assert!(
        r[0]["error"].as_str().unwrap().contains("over its budget"),
        "{}",
        r[0]
    );
    assert!(r[0]["cost_usd"].as_f64().unwrap() > 0.000001, "{}", r[0]);
    assert_eq!(r[1]["status"], "max_turns", "{}", r[1]);
    // Items without toolsets drew theirs: file always, terminal never.
    for item in &r {
        assert_eq!(item["toolsets"], json!(["file"]), "{item}");
    }
    let tools = h.requests_of("drawn item")[0].view().unwrap().tool_names;
    assert!(tools.iter().any(|t| t == "read_file"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "terminal"), "{tools:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_terminal_the_progress_is_a_bar_with_counts_rate_eta_and_spend() {
    let h = Harness::new(reading_model()).await;
    std::fs::write(h.work_path().join("notes.txt"), "calm\n").unwrap();
    h.server.set_latency(Duration::from_millis(100));
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<Value> = (0..6).map(|i| json!(format!("tty item {i}"))).collect();
    let tasks = write_tasks(dir.path(), &rows);
    let out = dir.path().join("out");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_herald"));
    for (key, _) in std::env::vars() {
        if key.starts_with("OPENAI_") || key.starts_with("ANTHROPIC_") || key.starts_with("HERALD_")
        {
            command.env_remove(key);
        }
    }
    command
        .env("HERALD_HOME", h.home.path())
        .envs(h.server.provider_env(herald_testkit::Api::OpenAi))
        .args(["--cwd", h.work_path().to_str().unwrap()])
        .args([
            "batch",
            "run",
            tasks.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--concurrency",
            "2",
        ]);
    let pty = herald_testkit::pty::PtySession::spawn(command, 24, 160).unwrap();
    let screen = pty
        .wait_for(
            |s| s.contains("6 completed, 0 failed"),
            Duration::from_secs(60),
        )
        .unwrap();
    assert!(
        screen.contains("6/6 done · 0 failed · 0 running"),
        "{screen}"
    );
    assert!(screen.contains("/s · ETA"), "{screen}");
    assert!(screen.contains("· $"), "{screen}");
    assert!(
        !screen.contains("[6/6] "),
        "no plain lines on a terminal: {screen}"
    );
    assert_eq!(
        pty.wait_exit(Duration::from_secs(10))
            .and_then(|s| s.code()),
        Some(0)
    );
}
