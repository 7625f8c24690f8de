//! `herald eval` end to end against the scripted model: every check kind,
//! expected tool sequences, judged checks against a scripted judge (and
//! its cache), repeats with pass@k, reports, comparing two runs, and bad
//! suites refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use herald_testkit::{Reply, RequestView, Script};
use serde_json::{Value, json};

use crate::common::{Harness, Wire, stderr};

pub(crate) fn first_user(view: &RequestView) -> String {
    view.messages
        .iter()
        .find(|m| m.role == "user")
        .map(|m| m.text.clone())
        .unwrap_or_default()
}

/// The judge: a high score when the answer names a file, low otherwise.
fn judge_reply(text: &str) -> Reply {
    let answer = text.split("The agent's final answer:").nth(1).unwrap_or("");
    if answer.contains(".txt") {
        Reply::text("{\"score\": 0.9, \"reasoning\": \"it names the file\"}")
    } else {
        Reply::text("```json\n{\"score\": 0.1, \"reasoning\": \"no file named\"}\n```")
    }
}

/// The agent and the judge. Judge requests are counted.
pub(crate) fn model(judged: Arc<AtomicUsize>) -> Script {
    Script::new().responder(move |view| {
        let prompt = first_user(view);
        if prompt.starts_with("[herald] Judge") {
            judged.fetch_add(1, Ordering::SeqCst);
            return judge_reply(&prompt);
        }
        let nano = view.model == "gpt-4.1-nano";
        match (prompt.as_str(), view.turn) {
            (p, 0) if p.contains("files task") && !nano => Reply::tool(
                "write_file",
                json!({"path": "hello.txt", "content": "hello world\n"}),
            ),
            (p, 1) if p.contains("files task") => Reply::text("wrote hello.txt"),
            (p, _) if p.contains("files task") => Reply::text("I will not write files"),
            (p, 0) if p.contains("seeded task") => {
                Reply::tool("read_file", json!({"path": "seed.txt"}))
            }
            (p, 1) if p.contains("seeded task") => {
                Reply::tool("read_file", json!({"path": "notes.txt"}))
            }
            (p, _) if p.contains("seeded task") => Reply::text("the seed says seeded"),
            _ => Reply::text("I refuse"),
        }
    })
}

const SUITE: &str = r#"
name: every-check
tasks:
  - id: files
    prompt: "files task: write a greeting to hello.txt"
    checks:
      - tool_called: write_file
      - tool_succeeded: write_file
      - tool_not_called: terminal
      - final_contains: hello.txt
      - final_matches: '^wrote \w+\.txt$'
      - file_exists: hello.txt
      - file_contains: {path: hello.txt, text: world}
      - command_succeeds: grep -q hello hello.txt
      - tool_sequence: {tools: [write_file], mode: exact}
      - judge: {rubric: "It says which file it wrote."}
  - id: seeded
    prompt: "seeded task: what does the seed say?"
    cwd: project
    setup: echo seeded > seed.txt
    checks:
      - tool_sequence: {tools: [read_file, read_file], mode: ordered}
      - tool_sequence: {tools: [read_file], mode: set}
      - final_contains: seeded
      - file_exists: notes.txt
      - file_exists: seed.txt
  - id: refusing
    prompt: "refusing task: do something"
    checks:
      - tool_called: read_file
      - tool_not_called: terminal
      - tool_succeeded: read_file
      - final_contains: xyz
      - final_matches: '^\d+$'
      - file_exists: out.txt
      - file_contains: {path: out.txt, text: a}
      - command_succeeds: test -f missing.txt
      - tool_sequence: {tools: [read_file], mode: exact}
      - judge: {rubric: "It says which file it wrote.", pass_score: 0.5}
"#;

pub(crate) fn suite_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("project")).unwrap();
    std::fs::write(dir.path().join("project/notes.txt"), "template notes\n").unwrap();
    std::fs::write(dir.path().join("suite.yaml"), SUITE).unwrap();
    dir
}

async fn eval(h: &Harness, args: &[&str]) -> std::process::Output {
    h.command(Wire::OpenAi)
        .arg("eval")
        .args(args)
        .output()
        .await
        .unwrap()
}

pub(crate) fn report(out: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap()
}

/// `(kind, passed)` of every check of the attempt at `task`.
fn checks(report: &Value, task: &str) -> Vec<(String, bool)> {
    let attempt = report["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["task_id"] == task)
        .unwrap();
    attempt["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_owned(),
                c["passed"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn owned(v: &[(&str, bool)]) -> Vec<(String, bool)> {
    v.iter().map(|(k, p)| ((*k).to_owned(), *p)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_check_kind_passes_and_fails_where_it_should_and_the_judge_is_cached() {
    let judged = Arc::new(AtomicUsize::new(0));
    let h = Harness::new(model(Arc::clone(&judged))).await;
    let dir = suite_dir();
    let out = dir.path().join("run");
    let suite = dir.path().join("suite.yaml");
    let output = eval(
        &h,
        &[
            "run",
            suite.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--judge-model",
            "gpt-4.1-judge",
            "--keep-workdirs",
        ],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let r = report(&out);
    assert_eq!(r["judge_model"], "gpt-4.1-judge");
    let judge_models: Vec<String> = h
        .server
        .requests()
        .iter()
        .filter_map(|q| q.view().ok())
        .filter(|v| first_user(v).starts_with("[herald] Judge"))
        .map(|v| v.model)
        .collect();
    assert_eq!(judge_models, ["gpt-4.1-judge", "gpt-4.1-judge"]);
    assert_eq!(
        checks(&r, "files"),
        owned(&[
            ("tool_called", true),
            ("tool_succeeded", true),
            ("tool_not_called", true),
            ("final_contains", true),
            ("final_matches", true),
            ("file_exists", true),
            ("file_contains", true),
            ("command_succeeds", true),
            ("tool_sequence", true),
            ("judge", true),
        ])
    );
    assert_eq!(
        checks(&r, "seeded"),
        owned(&[
            ("tool_sequence", true),
            ("tool_sequence", true),
            ("final_contains", true),
            ("file_exists", true),
            ("file_exists", true),
        ])
    );
    assert_eq!(
        checks(&r, "refusing"),
        owned(&[
            ("tool_called", false),
            ("tool_not_called", true),
            ("tool_succeeded", false),
            ("final_contains", false),
            ("final_matches", false),
            ("file_exists", false),
            ("file_contains", false),
            ("command_succeeds", false),
            ("tool_sequence", false),
            ("judge", false),
        ])
    );
    // The judge's score and reasoning are stored.
    let files = &r["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["task_id"] == "files")
        .unwrap()["checks"][9];
    assert_eq!(files["score"], 0.9);
    assert_eq!(
        files["detail"], "it names the file",
        "the judge's reasoning is kept"
    );
    let refusing = &r["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["task_id"] == "refusing")
        .unwrap()["checks"][9];
    assert_eq!(refusing["score"], 0.1);
    assert_eq!(refusing["detail"], "no file named");
    assert_eq!(judged.load(Ordering::SeqCst), 2);
    // Metrics and reports.
    let m = &r["metrics"];
    assert_eq!(m["tasks"], 3);
    assert!(
        (m["pass_rate"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9,
        "{m}"
    );
    assert_eq!(m["completion_rate"], 1.0);
    assert!(
        (m["tool_calls_per_task"].as_f64().unwrap() - 1.0).abs() < 1e-9,
        "{m}"
    );
    assert!(m["tokens_per_task"].as_f64().unwrap() > 0.0);
    let md = String::from_utf8_lossy(&output.stdout);
    assert!(md.contains("| pass rate | 66.7% |"), "{md}");
    assert!(md.contains("`refusing` #0: final_contains `xyz`"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 3, "three charts");
    assert!(!html.contains("<script"), "no scripts, no CDN");
    assert!(!html.contains("https://"), "nothing fetched");
    // The setup ran in a copy of the template; the template is untouched.
    let seeded = r["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["task_id"] == "seeded")
        .unwrap();
    let workdir = Path::new(seeded["workdir"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(workdir.join("seed.txt")).unwrap(),
        "seeded\n"
    );
    assert!(!dir.path().join("project/seed.txt").exists());

    // Again, the judge named by a `[routing]` rule for role `judge`
    // instead of the flag: the same judgements come from the cache. (The
    // same conversations start over, which the server would take for a
    // history that shrank.)
    h.server
        .skip_invariants("the second run repeats the first run's conversations");
    h.config("[[routing.rules]]\nrole = \"judge\"\nmodel = \"gpt-4.1-judge\"\n");
    let output = eval(
        &h,
        &[
            "run",
            suite.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--overwrite",
            "--json",
        ],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        judged.load(Ordering::SeqCst),
        2,
        "no judge request the second time: {}\n{}",
        std::fs::read_to_string(h.home.path().join("eval/judge-cache.jsonl")).unwrap_or_default(),
        String::from_utf8_lossy(&output.stdout)
    );
    let again: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(again["judge_model"], "gpt-4.1-judge", "the routed judge");
    let files = &again["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["task_id"] == "files")
        .unwrap()["checks"][9];
    assert_eq!(files["cached"], true);
    assert_eq!(files["score"], 0.9);
    // Without --keep-workdirs the attempts' directories are gone.
    for attempt in again["attempts"].as_array().unwrap() {
        let workdir = Path::new(attempt["workdir"].as_str().unwrap());
        assert!(!workdir.exists(), "{workdir:?} was left");
    }
    // The eval's trajectories export like a batch's.
    let output = h
        .bare_command()
        .args([
            "batch",
            "export",
            out.to_str().unwrap(),
            "--format",
            "openai",
        ])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn repeats_give_pass_at_k_and_compare_shows_per_task_differences() {
    let judged = Arc::new(AtomicUsize::new(0));
    // A flaky model: the "coin" task passes every other attempt.
    let coin = Arc::new(AtomicUsize::new(0));
    let base = model(Arc::clone(&judged));
    let script = {
        let coin = Arc::clone(&coin);
        Script::new().responder(move |view| {
            let prompt = first_user(view);
            if prompt.contains("coin task") {
                let n = coin.fetch_add(1, Ordering::SeqCst);
                return Reply::text(if n.is_multiple_of(2) {
                    "heads"
                } else {
                    "tails"
                });
            }
            match base.lookup(view) {
                herald_testkit::Lookup::Reply(reply) => reply,
                herald_testkit::Lookup::Error(e) => Reply::text(e),
            }
        })
    };
    let h = Harness::new(script).await;
    // Repeats are separate conversations with the same first message,
    // each from its own directory (so its own system prompt).
    h.server
        .skip_invariants("repeated attempts share a first message across system prompts");
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.jsonl");
    std::fs::write(
        &suite,
        [
            json!({"id": "coin", "prompt": "coin task: flip", "checks": [{"final_contains": "heads"}]}),
            json!({"id": "files", "prompt": "files task: write hello.txt", "checks": [{"file_exists": "hello.txt"}]}),
        ]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect::<String>(),
    )
    .unwrap();
    let a = dir.path().join("a");
    let output = eval(
        &h,
        &[
            "run",
            suite.to_str().unwrap(),
            "--out",
            a.to_str().unwrap(),
            "--repeat",
            "4",
            "--concurrency",
            "2",
        ],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let r = report(&a);
    let coin_task = &r["tasks"][0];
    assert_eq!(coin_task["id"], "coin");
    assert_eq!(coin_task["attempts"], 4);
    assert_eq!(coin_task["passes"], 2, "{:#}", r["attempts"]);
    assert_eq!(coin_task["pass_rate"], 0.5);
    assert_eq!(
        coin_task["pass_at_k"], 1.0,
        "4 attempts with 2 passes: pass@4 = 1"
    );
    assert!((coin_task["variance"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9);
    assert_eq!(r["tasks"][1]["pass_rate"], 1.0);
    assert_eq!(r["metrics"]["k"], 4);
    assert_eq!(
        r["metrics"]["pass_rate_by_repeat"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(r["metrics"]["pass_rate"], 0.75);
    // B: another model that does not write files.
    let b = dir.path().join("b");
    let output = eval(
        &h,
        &[
            "run",
            suite.to_str().unwrap(),
            "--out",
            b.to_str().unwrap(),
            "--repeat",
            "4",
            "--model",
            "gpt-4.1-nano",
        ],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(report(&b)["model"], "gpt-4.1-nano");
    assert_eq!(report(&b)["tasks"][1]["pass_rate"], 0.0);
    let output = h
        .bare_command()
        .args(["eval", "compare", a.to_str().unwrap(), b.to_str().unwrap()])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let md = String::from_utf8_lossy(&output.stdout);
    assert!(md.contains("| files | 100% | 0% | -100 pts |"), "{md}");
    assert!(md.contains("| coin | 50% | 50% | +0 pts |"), "{md}");
    assert!(md.contains("A better on 1"), "{md}");
    assert!(md.contains("not significant"), "{md}");
    let output = h
        .bare_command()
        .args([
            "eval",
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--json",
        ])
        .output()
        .await
        .unwrap();
    let c: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(c["a_better"], 1);
    assert_eq!(c["p_value"], 1.0);
    // Comparing something that is not a run says what to pass.
    let output = h
        .bare_command()
        .args([
            "eval",
            "compare",
            a.to_str().unwrap(),
            dir.path().to_str().unwrap(),
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("output directory of `herald eval run`"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_suites_are_refused_before_anything_runs() {
    let judged = Arc::new(AtomicUsize::new(0));
    let h = Harness::new(model(judged)).await;
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "tasks:\n  - id: a\n    prompt: p\n    checks:\n      - tool_calld: x\n",
            "tool_calld",
        ),
        (
            "tasks:\n  - id: a\n    prompt: p\n  - id: a\n    prompt: q\n",
            "used twice",
        ),
        (
            "tasks:\n  - id: a\n    prompt: p\n    checks:\n      - final_matches: '('\n",
            "not a regular expression",
        ),
        (
            "tasks:\n  - id: a\n    prompt: p\n    checks:\n      - file_exists: ../etc/passwd\n",
            "inside the task's directory",
        ),
        (
            "tasks:\n  - id: a\n    prompt: p\n    cwd: nowhere\n",
            "is not a directory",
        ),
        (
            "tasks:\n  - id: a\n    prompt: p\n    checks:\n      - judge: {rubric: r, pass_score: 3}\n",
            "pass_score",
        ),
        ("tasks: []\n", "no tasks"),
        ("tasks:\n  - id: a\n", "prompt"),
    ];
    for (text, want) in cases {
        let suite = dir.path().join("bad.yaml");
        std::fs::write(&suite, text).unwrap();
        let out = dir.path().join("out");
        let output = eval(
            &h,
            &[
                "run",
                suite.to_str().unwrap(),
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
        assert!(!out.exists(), "{text}");
    }
    assert_eq!(h.server.request_count(), 0);
}
