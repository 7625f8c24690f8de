//! Checkpoints and rewind end to end: the real binary
//! against the scripted server. A session's turns edit, create and delete
//! files; `herald checkpoints list` shows what each turn changed; `herald
//! rewind` puts files and conversation back (a later `--resume` sends the
//! earlier history); `--files-only` / `--conversation-only`; bad input
//! changes nothing; `--fork ID@TURN` starts from the history before a turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{Harness, LiveRun, Wire, last, of_type, stderr};
use herald_testkit::{RecordedRequest, Reply, Script, canonical_message};
use serde_json::{Value, json};

const ONE: &str = "turn one: edit a.txt";
const TWO: &str = "turn two: create b.txt and delete c.txt";
const THREE: &str = "turn three: rewrite a.txt and the log";

/// The model: each prompt gets its steps (tool calls, then an answer).
/// Step k of a turn is the k-th request after its user message; memory
/// flush requests get a bare answer.
fn model() -> Script {
    Script::new().responder(|view| {
        let Some(at) = view
            .messages
            .iter()
            .rposition(|m| m.role == "user" && m.tool_results.is_empty())
        else {
            return Reply::text("no prompt");
        };
        let prompt = view.messages[at].text.clone();
        if prompt.starts_with("[herald] Memory flush") {
            return Reply::text("DONE");
        }
        let step = view.messages[at + 1..]
            .iter()
            .filter(|m| m.role == "assistant")
            .count();
        let write = |path: &str, content: &str| {
            Reply::tool("write_file", json!({"path": path, "content": content}))
        };
        let steps: Vec<Reply> = if prompt.starts_with("turn one") {
            vec![write("a.txt", "a1\nchanged in turn one\n")]
        } else if prompt.starts_with("turn two") {
            vec![
                write("b.txt", "created in turn two\n"),
                Reply::tool("terminal", json!({"command": "rm c.txt"})),
            ]
        } else if prompt.starts_with("turn three") {
            vec![
                write("a.txt", "rewritten in turn three\n"),
                write("out.log", "log of turn three\n"),
            ]
        } else if prompt.starts_with("look") {
            vec![Reply::tool("read_file", json!({"path": "a.txt"}))]
        } else if prompt.starts_with("hold") {
            vec![Reply::tool("terminal", json!({"command": "sleep 30"}))]
        } else {
            vec![]
        };
        steps
            .into_iter()
            .nth(step)
            .unwrap_or_else(|| Reply::text(format!("done: {prompt}")))
    })
}

/// A harness whose working directory holds a.txt, c.txt, a .gitignore
/// ignoring `*.log` and an ignored out.log.
async fn harness() -> Harness {
    let h = Harness::new(model()).await;
    let work = h.work_path();
    std::fs::write(work.join("a.txt"), "a1\n").unwrap();
    std::fs::write(work.join("c.txt"), "c\n").unwrap();
    std::fs::write(work.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(work.join("out.log"), "log before\n").unwrap();
    h
}

/// Runs one turn (a new session, or `--resume ID`) and returns the session id.
async fn turn(h: &Harness, resume: Option<&str>, prompt: &str) -> String {
    let extra: Vec<&str> = resume.map(|id| vec!["--resume", id]).unwrap_or_default();
    let (output, events) = h.run_json(Wire::OpenAi, &extra, prompt).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        of_type(&events, "error").is_empty(),
        "no warning expected: {events:?}"
    );
    last(&events)["session_id"].as_str().unwrap().to_owned()
}

/// A three-turn session; returns its id.
async fn three_turns(h: &Harness) -> String {
    let id = turn(h, None, ONE).await;
    turn(h, Some(&id), TWO).await;
    turn(h, Some(&id), THREE).await;
    id
}

/// `herald ARGS…` with the harness's environment.
async fn herald(h: &Harness, args: &[&str]) -> std::process::Output {
    h.command(Wire::OpenAi).args(args).output().await.unwrap()
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every file of the working directory (not in `.git`) with its text.
fn files(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_file() {
            out.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    out
}

/// The stored messages of a session (`sessions export`).
async fn exported(h: &Harness, id: &str) -> Vec<Value> {
    let output = herald(h, &["sessions", "export", id, "--format", "json"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    value["messages"].as_array().unwrap().clone()
}

/// The live checkpoints of a session as JSON.
async fn checkpoints(h: &Harness, id: &str, all: bool) -> Vec<Value> {
    let mut args = vec!["checkpoints", "list", id, "--json"];
    if all {
        args.push("--all");
    }
    let output = herald(h, &args).await;
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The requests whose newest user message starts with `prompt`.
fn requests_for(h: &Harness, prompt: &str) -> Vec<RecordedRequest> {
    h.server
        .requests()
        .into_iter()
        .filter(|r| {
            let view = r.view().unwrap();
            view.messages
                .iter()
                .rev()
                .find(|m| m.role == "user")
                .is_some_and(|m| m.text.starts_with(prompt))
        })
        .collect()
}

fn messages(request: &RecordedRequest) -> Vec<Value> {
    request.body["messages"].as_array().unwrap().clone()
}

/// Tool pairing holds in every request (the prefix check is off in the
/// tests that branch a conversation on purpose).
/// The first request of a continued session starts with exactly the
/// messages of `earlier` (the last request of the turn before which it was
/// rewound or forked) and that turn's answer: the same bytes, so the
/// provider's prompt cache hits; then the new prompt.
fn assert_continues(earlier: &RecordedRequest, later: &RecordedRequest, prompt: &str) {
    let (before, after) = (messages(earlier), messages(later));
    assert_eq!(after.len(), before.len() + 2, "{after:#?}");
    for (k, message) in before.iter().enumerate() {
        assert_eq!(canonical_message(message), canonical_message(&after[k]));
    }
    let answer = &after[before.len()];
    assert_eq!(answer["role"], "assistant");
    assert!(
        answer["content"].as_str().unwrap().starts_with("done: "),
        "{answer}"
    );
    assert_eq!(after.last().unwrap()["content"], prompt);
    assert_eq!(earlier.body["tools"], later.body["tools"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_restores_the_files_and_the_conversation_before_a_turn() {
    let h = harness().await;
    h.server.allow_branches(
        "a rewind branches the conversation: the resumed request continues an earlier one, not the latest",
    );
    let work = h.work_path();
    let id = three_turns(&h).await;
    assert_eq!(
        std::fs::read_to_string(work.join("a.txt")).unwrap(),
        "rewritten in turn three\n"
    );
    assert!(work.join("b.txt").exists() && !work.join("c.txt").exists());

    // One checkpoint per turn, with what each turn changed.
    let list = checkpoints(&h, &id, false).await;
    let turns: Vec<u64> = list.iter().map(|c| c["turn"].as_u64().unwrap()).collect();
    assert_eq!(turns, vec![1, 2, 3]);
    let changed: Vec<(u64, u64, u64)> = list
        .iter()
        .map(|c| {
            let s = &c["changes"];
            (
                s["files_changed"].as_u64().unwrap(),
                s["insertions"].as_u64().unwrap(),
                s["deletions"].as_u64().unwrap(),
            )
        })
        .collect();
    // Turn 1: a.txt gains a line; turn 2: b.txt created, c.txt deleted;
    // turn 3: a.txt rewritten (the ignored log is not counted).
    assert_eq!(changed, vec![(1, 1, 0), (2, 1, 1), (1, 1, 2)]);
    assert_eq!(list[1]["prompt"], TWO);
    assert!(list.iter().all(|c| c["commit_id"].is_string()));
    let text = stdout(&herald(&h, &["checkpoints", "list", &id]).await);
    assert!(text.contains("turn two: create b.txt"), "{text}");
    assert!(text.contains(" 2 files +1    -1"), "{text}");
    assert!(text.contains("not covered"), "{text}");
    let stored_before = exported(&h, &id).await.len();

    // Without a terminal and without --yes: refused, nothing changed.
    let output = herald(&h, &["rewind", &id, "--turn", "2"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--yes"), "{}", stderr(&output));
    assert!(work.join("b.txt").exists());
    assert_eq!(exported(&h, &id).await.len(), stored_before);

    // Rewind to before turn 2 (an id prefix is enough).
    let output = herald(&h, &["rewind", &id[..14], "--turn", "2", "--yes"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let report = stdout(&output);
    assert!(report.contains("rewound"), "{report}");
    assert!(
        report.contains("shell effects outside the working tree") && report.contains("not covered"),
        "{report}"
    );
    for expected in ["restore  a.txt", "delete   b.txt", "recreate c.txt"] {
        assert!(report.contains(expected), "{expected}: {report}");
    }
    // Modified file restored, created one deleted, deleted one back; the
    // ignored log keeps what turn three wrote.
    let now = files(&work);
    assert_eq!(now["a.txt"], "a1\nchanged in turn one\n");
    assert_eq!(now["c.txt"], "c\n");
    assert!(!now.contains_key("b.txt"));
    assert_eq!(now["out.log"], "log of turn three\n");

    // Nothing was deleted from the store; turns 2 and 3 are marked rewound.
    assert!(exported(&h, &id).await.len() > stored_before);
    let all = checkpoints(&h, &id, true).await;
    assert_eq!(all.len(), 3);
    assert!(all[1]["rewound_at"].is_i64() && all[2]["rewound_at"].is_i64());
    assert_eq!(checkpoints(&h, &id, false).await.len(), 1);

    // The resumed session sends the history before turn 2: the last
    // request of turn 1 plus the new prompt.
    turn(&h, Some(&id), "turn four: after the rewind").await;
    let resumed = requests_for(&h, "turn four");
    let turn_one = requests_for(&h, ONE);
    assert_continues(
        turn_one.last().unwrap(),
        &resumed[0],
        "turn four: after the rewind",
    );
    let sent = resumed[0].body["messages"].to_string();
    assert!(!sent.contains("turn two") && !sent.contains("turn three"));
    // The new turn is turn 2 again.
    let live = checkpoints(&h, &id, false).await;
    assert_eq!(live.len(), 2);
    assert_eq!(live[1]["prompt"], "turn four: after the rewind");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn files_only_keeps_the_conversation_and_conversation_only_keeps_the_files() {
    let h = harness().await;
    h.server.allow_branches(
        "a conversation-only rewind branches the conversation: the resumed request continues an earlier one",
    );
    let work = h.work_path();
    let id = three_turns(&h).await;
    let after_three = files(&work);

    // --files-only: files back to before turn 3, conversation untouched.
    let output = herald(&h, &["rewind", &id, "--turn", "3", "--files-only", "--yes"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(files(&work)["a.txt"], "a1\nchanged in turn one\n");
    assert!(work.join("b.txt").exists() && !work.join("c.txt").exists());
    assert_eq!(checkpoints(&h, &id, false).await.len(), 3);
    turn(&h, Some(&id), "turn five: files only").await;
    let sent = requests_for(&h, "turn five")[0].body["messages"].to_string();
    assert!(sent.contains("turn three"), "the conversation keeps turn 3");

    // --conversation-only: the model forgets turns 2.., the files stay.
    let before = files(&work);
    let output = herald(
        &h,
        &[
            "rewind",
            &id,
            "--turn",
            "2",
            "--conversation-only",
            "--json",
        ],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(report["files"].is_null());
    assert_eq!(report["conversation"]["left_out_turns"], json!([2, 3, 4]));
    assert_eq!(files(&work), before);
    assert_ne!(files(&work), after_three);
    turn(&h, Some(&id), "turn six: conversation only").await;
    let resumed = requests_for(&h, "turn six");
    assert_continues(
        requests_for(&h, ONE).last().unwrap(),
        &resumed[0],
        "turn six: conversation only",
    );
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_rewinds_are_refused_and_change_nothing() {
    let h = harness().await;
    let work = h.work_path();
    let id = turn(&h, None, ONE).await;
    turn(&h, Some(&id), TWO).await;
    let files_before = files(&work);
    let stored_before = exported(&h, &id).await;
    let list_before = checkpoints(&h, &id, true).await;

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["rewind", "ses_missing", "--turn", "1", "--yes"],
            "no session 'ses_missing'",
        ),
        (
            vec!["rewind", &id, "--turn", "7", "--yes"],
            "has no turn 7: its turns are 1 to 2",
        ),
        (vec!["rewind", &id, "--turn", "0", "--yes"], "has no turn 0"),
        (
            vec!["rewind", &id, "--turn", "x", "--yes"],
            "invalid value 'x'",
        ),
        (
            vec![
                "rewind",
                &id,
                "--turn",
                "1",
                "--files-only",
                "--conversation-only",
            ],
            "cannot be used with",
        ),
        (
            vec!["checkpoints", "list", "ses_missing"],
            "no session 'ses_missing'",
        ),
    ];
    for (args, message) in cases {
        let output = herald(&h, &args).await;
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(message),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(files(&work), files_before, "{args:?}");
        assert_eq!(exported(&h, &id).await, stored_before, "{args:?}");
        assert_eq!(checkpoints(&h, &id, true).await, list_before, "{args:?}");
    }

    // --dry-run lists what would change and changes nothing.
    let output = herald(&h, &["rewind", &id, "--turn", "1", "--dry-run"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("would rewind") && text.contains("restore  a.txt"),
        "{text}"
    );
    assert_eq!(files(&work), files_before);
    assert_eq!(exported(&h, &id).await, stored_before);

    // A session in use by another herald process is refused.
    let live = LiveRun::until(&h, Wire::OpenAi, "hold on", "tool.started").await;
    let held: Value = serde_json::from_str(&live.seen[0]).unwrap();
    let held_id = held["session_id"].as_str().unwrap().to_owned();
    let output = herald(&h, &["rewind", &held_id, "--turn", "1", "--yes"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is in use by herald process"),
        "{}",
        stderr(&output)
    );
    live.interrupt();
    let (status, _) = live.finish().await;
    assert_eq!(status.code(), Some(130));
    assert_eq!(files(&work), files_before);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn fork_at_a_turn_starts_from_the_history_before_it() {
    let h = harness().await;
    h.server.allow_branches(
        "a fork at a turn branches the conversation: its request continues an earlier one, not the latest",
    );
    let id = three_turns(&h).await;
    let stored_before = exported(&h, &id).await;
    let sessions_before = stdout(&herald(&h, &["sessions", "list", "--json"]).await);

    let (output, events) = h
        .run_json(
            Wire::OpenAi,
            &["--fork", &format!("{id}@2")],
            "fork: from turn two",
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let fork = last(&events)["session_id"].as_str().unwrap().to_owned();
    assert_ne!(fork, id);
    let request = &requests_for(&h, "fork: from turn two")[0];
    assert_continues(
        requests_for(&h, ONE).last().unwrap(),
        request,
        "fork: from turn two",
    );
    // The fork numbers its turns after the ones it copied.
    let list = checkpoints(&h, &fork, false).await;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["turn"], 2);
    // The source is unchanged.
    assert_eq!(exported(&h, &id).await, stored_before);

    // Bad turns: a usage error, and no session is created.
    for (spec, message) in [
        (format!("{id}@0"), "turns are numbered from 1"),
        (format!("{id}@x"), "is not a turn number"),
        (format!("{id}@9"), "has no turn 9: its turns are 1 to 3"),
        ("ses_missing@1".to_owned(), "no session 'ses_missing'"),
    ] {
        let (output, _) = h.run_json(Wire::OpenAi, &["--fork", &spec], "x").await;
        assert_eq!(output.status.code(), Some(2), "{spec}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(message),
            "{spec}: {}",
            stderr(&output)
        );
    }
    let sessions_after: Vec<Value> =
        serde_json::from_str(&stdout(&herald(&h, &["sessions", "list", "--json"]).await)).unwrap();
    let before: Vec<Value> = serde_json::from_str(&sessions_before).unwrap();
    assert_eq!(sessions_after.len(), before.len() + 1, "only the good fork");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn without_git_the_turn_runs_with_one_warning_and_only_the_conversation_rewinds() {
    let h = harness().await;
    h.server.allow_branches(
        "a rewind branches the conversation: the resumed request continues an earlier one",
    );
    let no_git = tempfile::tempdir().unwrap();
    let run = |resume: Option<String>, prompt: &'static str| {
        let mut cmd = h.command(Wire::OpenAi);
        cmd.env("PATH", no_git.path()).arg("run").arg("--json");
        if let Some(id) = resume {
            cmd.args(["--resume", &id]);
        }
        cmd.arg(prompt);
        cmd
    };
    let output = run(None, ONE).output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let events = common::parse_events(&output.stdout);
    let warnings = of_type(&events, "error");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = warnings[0]["message"].as_str().unwrap();
    assert!(warning.contains("git was not found"), "{warning}");
    assert_eq!(warnings[0]["fatal"], false);
    let id = last(&events)["session_id"].as_str().unwrap().to_owned();
    // The turn ran: its file change is there.
    assert_eq!(
        std::fs::read_to_string(h.work_path().join("a.txt")).unwrap(),
        "a1\nchanged in turn one\n"
    );
    let list = checkpoints(&h, &id, false).await;
    assert!(list[0]["commit_id"].is_null());
    assert!(
        list[0]["note"]
            .as_str()
            .unwrap()
            .contains("git was not found")
    );

    // Files cannot be rewound without a snapshot; the conversation can.
    let output = herald(&h, &["rewind", &id, "--turn", "1", "--yes"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--conversation-only"),
        "{}",
        stderr(&output)
    );
    let output = herald(&h, &["rewind", &id, "--turn", "1", "--conversation-only"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let output = run(Some(id.clone()), "after the rewind: hello")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let sent = requests_for(&h, "after the rewind: hello")[0].body["messages"].to_string();
    assert!(!sent.contains(ONE), "turn one is forgotten: {sent}");

    // A read-only session takes no snapshot and warns about nothing.
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--mode", "read-only"], "just looking")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(of_type(&events, "error").is_empty());
    let ro = last(&events)["session_id"].as_str().unwrap().to_owned();
    let list = checkpoints(&h, &ro, false).await;
    assert!(list[0]["commit_id"].is_null());
    assert!(list[0]["note"].as_str().unwrap().contains("read-only"));
    h.server.assert_invariants();
}

/// A turn that only reads takes no snapshot (no `git` runs: a spy `git`
/// first on the PATH is never run and no shadow repository appears) and is listed
/// as `no file changes`; a rewind to it restores the files the next
/// writing turn started with, and one to a reading turn with no writing
/// turn after it changes no file.
#[tokio::test(flavor = "multi_thread")]
async fn a_turn_that_only_reads_takes_no_snapshot_and_still_rewinds() {
    const LOOK: &str = "look at a.txt";
    const LOOK_AGAIN: &str = "look at a.txt again";
    let h = harness().await;
    h.server.allow_branches(
        "a rewind branches the conversation: the resumed request continues an earlier one",
    );
    let work = h.work_path();
    let shadow_root = h.home.path().join("checkpoints");
    // Every run has a `git` first on the PATH that notes each run of it
    // and runs the real one.
    let spy = tempfile::tempdir().unwrap();
    let ran = spy.path().join("git-ran");
    let real_git = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join("git"))
        .find(|git| git.is_file())
        .expect("git on the PATH");
    let fake = spy.path().join("git");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nexec '{}' \"$@\"\n",
            ran.display(),
            real_git.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        spy.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |resume: Option<&str>, prompt: &str| {
        let mut cmd = h.command(Wire::OpenAi);
        cmd.env("PATH", &path).args(["run", "--json"]);
        if let Some(id) = resume {
            cmd.args(["--resume", id]);
        }
        cmd.arg(prompt);
        cmd
    };
    // Turn 1 reads: no git runs.
    let output = run(None, LOOK).output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let events = common::parse_events(&output.stdout);
    assert!(of_type(&events, "error").is_empty(), "{events:?}");
    assert_eq!(of_type(&events, "tool.completed").len(), 1, "{events:?}");
    assert!(
        !ran.exists(),
        "git ran: {:?}",
        std::fs::read_to_string(&ran)
    );
    let id = last(&events)["session_id"].as_str().unwrap().to_owned();
    assert!(!shadow_root.exists(), "no shadow repository");
    let list = checkpoints(&h, &id, false).await;
    assert!(list[0]["commit_id"].is_null() && list[0]["end_commit_id"].is_null());
    assert_eq!(list[0]["note"], "no call of this turn could change files");
    let text = stdout(&herald(&h, &["checkpoints", "list", &id]).await);
    assert!(text.contains("no file changes"), "{text}");
    assert!(!text.contains("no snapshot"), "{text}");

    // An edit by hand, then a turn that writes: it gets a snapshot (and
    // the spy sees git run).
    std::fs::write(work.join("hand.txt"), "written by hand\n").unwrap();
    let before_writing = files(&work);
    let output = run(Some(&id), ONE).output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(ran.exists() && shadow_root.exists());
    turn(&h, Some(&id), LOOK_AGAIN).await;
    let list = checkpoints(&h, &id, false).await;
    assert_eq!(list.len(), 3);
    assert!(list[1]["commit_id"].is_string() && list[1]["end_commit_id"].is_string());
    assert_eq!(list[1]["changes"]["files_changed"], 1);
    assert!(list[2]["commit_id"].is_null());
    let after_writing = files(&work);
    assert_ne!(after_writing, before_writing);

    // Rewinding to turn 3: herald changed no file since it began.
    let output = herald(&h, &["rewind", &id, "--turn", "3", "--yes"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let report = stdout(&output);
    assert!(
        report.contains("herald changed no files since turn 3 began"),
        "{report}"
    );
    assert!(report.contains("unchanged"), "{report}");
    assert_eq!(files(&work), after_writing);

    // Rewinding to turn 1: the files before the writing turn (the edit by
    // hand made before it is kept), and the conversation before turn 1.
    let output = herald(&h, &["rewind", &id, "--turn", "1", "--yes"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let report = stdout(&output);
    assert!(report.contains("restore  a.txt"), "{report}");
    assert!(
        report
            .contains("turn 1 changed no files: its files are those of the snapshot before turn 2"),
        "{report}"
    );
    assert_eq!(files(&work), before_writing);
    assert_eq!(files(&work)["a.txt"], "a1\n");
    assert_eq!(checkpoints(&h, &id, false).await.len(), 0);
    h.server.assert_invariants();
}

/// `/rewind` in the TUI (under a pseudo-terminal): the turns are listed,
/// the chosen one and "files and conversation" put both back in the open
/// session, and the next prompt continues from before that turn.
#[tokio::test(flavor = "multi_thread")]
async fn slash_rewind_in_the_tui_rewinds_the_open_session() {
    use herald_testkit::pty::keys;
    const WAIT: std::time::Duration = std::time::Duration::from_secs(20);
    let h = harness().await;
    h.server.allow_branches(
        "a rewind branches the conversation: the next request continues an earlier one",
    );
    let pty = h.tui(&[], 30, 110);
    let wait_for = |text: &str| {
        pty.wait_for(|screen| screen.contains(text), WAIT)
            .unwrap_or_else(|err| panic!("waiting for {text:?}: {err}"))
    };
    wait_for("Ask herald");
    pty.send_str(ONE);
    pty.send(keys::ENTER);
    wait_for("done: turn one");
    pty.send_str(TWO);
    pty.send(keys::ENTER);
    wait_for("done: turn two");
    let work = h.work_path();
    assert!(work.join("b.txt").exists() && !work.join("c.txt").exists());

    // The reply shows before the turn has ended (its changes are still
    // being recorded); `/rewind` is refused until then, so ask again.
    const BUSY: &str = "a turn is running; rewind after it ends";
    let screen = loop {
        let refusals = pty.scrollback_and_screen().matches(BUSY).count();
        pty.send_str("/rewind");
        pty.send(keys::ENTER);
        let screen = pty
            .wait_for(
                |screen| {
                    screen.contains("rewind to before which turn?")
                        || screen.matches(BUSY).count() > refusals
                },
                WAIT,
            )
            .unwrap_or_else(|err| panic!("waiting for the rewind picker: {err}"));
        if screen.contains("rewind to before which turn?") {
            break screen;
        }
        assert!(refusals < 50, "the turn never ended:\n{screen}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(
        screen.contains("turn 1") && screen.contains("turn 2"),
        "{screen}"
    );
    // The newest turn comes first; then "files and conversation".
    pty.send(keys::ENTER);
    wait_for("rewind to before turn 2?");
    pty.send(keys::ENTER);
    wait_for("rewound to before turn 2");
    assert!(!work.join("b.txt").exists());
    assert_eq!(std::fs::read_to_string(work.join("c.txt")).unwrap(), "c\n");

    pty.send_str("after the tui rewind");
    pty.send(keys::ENTER);
    wait_for("done: after the tui rewind");
    let request = &requests_for(&h, "after the tui rewind")[0];
    assert_continues(
        requests_for(&h, ONE).last().unwrap(),
        request,
        "after the tui rewind",
    );
    pty.send(keys::CTRL_D);
    pty.wait_exit(WAIT).expect("herald exits on Ctrl+D");
    h.server.assert_invariants();
}

/// Bytes git cannot compress (so a snapshot holding them takes their size).
fn noise(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// The size of every file below `dir`.
fn size_of(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .map(|e| e.unwrap().path())
            .map(|p| {
                if p.is_dir() {
                    size_of(&p)
                } else {
                    p.metadata().map_or(0, |m| m.len())
                }
            })
            .sum()
    })
}

/// `herald checkpoints prune` keeps what its limits allow and, beyond the
/// size limit, deletes the oldest checkpoints and their snapshots; the
/// conversation stays. Bad limits are refused and change nothing.
#[tokio::test(flavor = "multi_thread")]
async fn prune_keeps_checkpoints_within_the_limits_and_drops_the_rest() {
    let h = harness().await;
    std::fs::write(h.work_path().join("noise.bin"), noise(3 << 20)).unwrap();
    let id = three_turns(&h).await;
    let repositories = h.home.path().join("checkpoints");
    assert!(size_of(&repositories) > 3 << 20);

    // Within the default limits (30 days, 2 GiB) nothing goes.
    let report = h.cli_json(&["checkpoints", "prune", "--json"]).await;
    assert_eq!(report["checkpoints_removed"], 0, "{report}");
    assert_eq!(report["repositories"], 1, "{report}");
    assert_eq!(checkpoints(&h, &id, false).await.len(), 3);

    for bad in [
        vec!["checkpoints", "prune", "--keep-days", "-1"],
        vec!["checkpoints", "prune", "--keep-days", "40000"],
        vec!["checkpoints", "prune", "--max-size-mb", "lots"],
    ] {
        let output = herald(&h, &bad).await;
        assert_eq!(
            output.status.code(),
            Some(2),
            "{bad:?}: {}",
            stderr(&output)
        );
    }
    h.config("[checkpoints]\nkeep_days = -3\n");
    let output = herald(&h, &["checkpoints", "prune"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("keep_days"), "{}", stderr(&output));
    h.config("");
    assert_eq!(
        checkpoints(&h, &id, false).await.len(),
        3,
        "nothing changed"
    );

    // Beyond 1 MiB every checkpoint goes, oldest first, and the
    // repository with them.
    let messages = exported(&h, &id).await.len();
    let output = herald(&h, &["checkpoints", "prune", "--max-size-mb", "1"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("3 checkpoints") && text.contains("1 of 1 repositories removed"),
        "{text}"
    );
    assert!(size_of(&repositories) < 1 << 20);
    assert!(checkpoints(&h, &id, true).await.is_empty());
    let output = herald(&h, &["rewind", &id, "--turn", "2", "--yes"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert_eq!(
        exported(&h, &id).await.len(),
        messages,
        "the conversation is kept"
    );
}

/// At the start of a session the daily prune runs in a process of its
/// own with `[checkpoints]`'s limits; the session does not wait for it.
#[tokio::test(flavor = "multi_thread")]
async fn the_daily_prune_runs_in_the_background_when_a_session_starts() {
    let h = harness().await;
    std::fs::write(h.work_path().join("noise.bin"), noise(3 << 20)).unwrap();
    let id = turn(&h, None, ONE).await;
    assert_eq!(checkpoints(&h, &id, false).await.len(), 1);
    h.config("[checkpoints]\nmax_size_mb = 1\n");
    // A turn that only reads: it adds a checkpoint but no snapshot.
    turn(&h, Some(&id), "look at a.txt").await;
    let marker = h.home.path().join("checkpoints/last-prune");
    let t0 = std::time::Instant::now();
    while !marker.exists() && t0.elapsed() < std::time::Duration::from_secs(20) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(marker.exists(), "the background prune finished");
    assert!(checkpoints(&h, &id, true).await.is_empty());
    assert!(size_of(&h.home.path().join("checkpoints")) < 1 << 20);
    // Done for the day: the next start leaves the marker as it is.
    let stamp = marker.metadata().unwrap().modified().unwrap();
    turn(&h, Some(&id), "look again").await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(marker.metadata().unwrap().modified().unwrap(), stamp);
}

/// With `[checkpoints] enabled = false` no snapshot is taken (no shadow
/// repository appears); turns are still recorded, so the conversation
/// rewinds and a files rewind says why it cannot.
#[tokio::test(flavor = "multi_thread")]
async fn turned_off_checkpoints_take_no_snapshot_and_rewind_only_the_conversation() {
    let h = harness().await;
    h.server.allow_branches(
        "a rewind branches the conversation: the resumed request continues an earlier one",
    );
    h.config("[checkpoints]\nenabled = false\n");
    let id = turn(&h, None, ONE).await;
    assert_eq!(
        std::fs::read_to_string(h.work_path().join("a.txt")).unwrap(),
        "a1\nchanged in turn one\n"
    );
    assert!(!h.home.path().join("checkpoints").exists());
    let list = checkpoints(&h, &id, false).await;
    assert!(list[0]["commit_id"].is_null());
    assert!(
        list[0]["note"]
            .as_str()
            .unwrap()
            .contains("enabled = false"),
        "{list:?}"
    );
    let output = herald(&h, &["rewind", &id, "--turn", "1", "--files-only", "--yes"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("enabled = false"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read_to_string(h.work_path().join("a.txt")).unwrap(),
        "a1\nchanged in turn one\n",
        "nothing changed"
    );
    let output = herald(&h, &["rewind", &id, "--turn", "1", "--conversation-only"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    h.server.assert_invariants();
}
