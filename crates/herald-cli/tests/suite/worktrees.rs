//! Worktree isolation end to end: children with `isolation: "worktree"`
//! edit the same file in their own worktrees and commit there, their
//! results list branch and commits, `herald agents merge` brings them in
//! (one conflict reported, nothing changed by it), a write into the
//! parent's checkout is refused, and `herald agents worktrees --prune`
//! cleans up what is left.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

use crate::common::{
    Harness, LiveRun, Wire, dispatched_ids, git, kill_leftovers, last, parse_events,
    sleeper_command, stderr, tool_results, wait_for_agent,
};

/// The work directory as a repository with one commit of `notes.txt`.
fn repository(h: &Harness) -> std::path::PathBuf {
    let work = h.work_path();
    git(&work, &["init", "-q", "-b", "main"]);
    git(&work, &["config", "user.email", "test@example.org"]);
    git(&work, &["config", "user.name", "Test"]);
    std::fs::write(work.join("notes.txt"), "first line\n").unwrap();
    std::fs::write(work.join(".gitignore"), ".env\n*.pids\n").unwrap();
    std::fs::write(work.join(".env"), "TOKEN=local\n").unwrap();
    std::fs::write(work.join(".worktreeinclude"), ".env\n").unwrap();
    git(
        &work,
        &["add", "notes.txt", ".gitignore", ".worktreeinclude"],
    );
    git(&work, &["commit", "-q", "-m", "start"]);
    work
}

fn commit(line: &str, file: &str, message: &str) -> Reply {
    Reply::tool(
        "terminal",
        json!({"command": format!(
            "printf '{line}\\n' >> {file} && git add {file} && git commit -q -m '{message}'"
        )}),
    )
}

async fn herald(h: &Harness, args: &[&str]) -> std::process::Output {
    h.bare_command().args(args).output().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn three_children_in_three_worktrees_are_merged_in_order_with_one_conflict() {
    // The script names a path in the work directory, made first.
    let work_dir = tempfile::tempdir().unwrap();
    let parent_file = work_dir
        .path()
        .canonicalize()
        .unwrap()
        .join("hacked.txt")
        .display()
        .to_string();
    let script = Script::new()
        .conversation(
            "split the notes work",
            vec![
                Reply::tool(
                    "delegate_task",
                    json!({"isolation": "worktree", "tasks": [
                        {"goal": "wt child one: append to notes"},
                        {"goal": "wt child two: append to notes"},
                        {"goal": "wt child three: write other.txt"}
                    ]}),
                ),
                Reply::text("three branches ready"),
            ],
        )
        .conversation(
            "wt child one",
            vec![
                Reply::tool("write_file", json!({"path": parent_file, "content": "x"})),
                commit("from child one", "notes.txt", "child one"),
                Reply::tool("read_file", json!({"path": ".env"})),
                Reply::text("appended one"),
            ],
        )
        .conversation(
            "wt child two",
            vec![
                commit("from child two", "notes.txt", "child two"),
                Reply::text("appended two"),
            ],
        )
        .conversation(
            "wt child three",
            vec![
                commit("other", "other.txt", "child three"),
                Reply::tool(
                    "terminal",
                    json!({"command": "printf 'left over\\n' > scratch.txt"}),
                ),
                Reply::text("wrote other"),
            ],
        );
    let h = Harness {
        server: herald_testkit::ScriptedServer::start(script).await.unwrap(),
        home: tempfile::tempdir().unwrap(),
        work: work_dir,
    };
    let work = repository(&h);
    let (output, events) = h.run_json(Wire::OpenAi, &[], "split the notes work").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "three branches ready");
    let parent = h.requests_of("split the notes work");
    let result: Value =
        serde_json::from_str(&tool_results(&parent.last().unwrap().body)[0]).unwrap();
    let results = result["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{result}");
    let mut ids = Vec::new();
    for (i, (r, subject)) in results
        .iter()
        .zip(["child one", "child two", "child three"])
        .enumerate()
    {
        assert_eq!(r["status"], "completed", "{r}");
        let id = r["agent_id"].as_str().unwrap().to_owned();
        let wt = &r["worktree"];
        assert_eq!(wt["branch"], format!("herald/{id}"), "{r}");
        let commits = wt["commits"].as_array().unwrap();
        assert_eq!(commits.len(), 1, "{r}");
        assert!(commits[0].as_str().unwrap().ends_with(subject), "{r}");
        assert!(
            wt["diff_stat"].as_str().unwrap().contains("1 file changed"),
            "{r}"
        );
        // Child three left an uncommitted file.
        assert_eq!(wt["dirty"], i == 2, "{r}");
        let path = Path::new(wt["path"].as_str().unwrap());
        assert!(
            !path.starts_with(&work),
            "worktrees live outside the checkout"
        );
        ids.push(id);
    }
    // Child one's write into the parent checkout was refused; it read the
    // copied .env in its own worktree.
    let child_one = h.requests_of("wt child one");
    let told = tool_results(&child_one.last().unwrap().body);
    assert!(
        told[0].contains("refused") && told[0].contains("parent's checkout"),
        "{}",
        told[0]
    );
    assert!(told[2].contains("TOKEN=local"), "{}", told[2]);
    assert!(!work.join("hacked.txt").exists());
    // The parent checkout is untouched until a merge.
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        "first line\n"
    );
    assert_eq!(git(&work, &["status", "--porcelain"]), "");

    let listed: Value =
        serde_json::from_slice(&herald(&h, &["agents", "worktrees", "--json"]).await.stdout)
            .unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 3, "{listed}");

    // One: a fast-forward.
    let out = herald(&h, &["agents", "merge", &ids[0], "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged["kind"], "fast_forward", "{merged}");
    assert_eq!(merged["removed"], true);
    assert!(
        std::fs::read_to_string(work.join("notes.txt"))
            .unwrap()
            .contains("from child one")
    );
    let head = git(&work, &["rev-parse", "HEAD"]);
    // Two: the same lines changed; the conflict is reported and nothing changes.
    let out = herald(&h, &["agents", "merge", &ids[1]]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("conflicts in: notes.txt")
            && stderr(&out).contains("Nothing was changed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(git(&work, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
    // Three: uncommitted changes are left in its worktree: refused.
    let out = herald(&h, &["agents", "merge", &ids[2]]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("uncommitted changes"),
        "{}",
        stderr(&out)
    );
    // Once clean, a merge commit (the checkout moved on since its base).
    let three_path = results[2]["worktree"]["path"].as_str().unwrap();
    std::fs::remove_file(Path::new(three_path).join("scratch.txt")).unwrap();
    let out = herald(&h, &["agents", "merge", &ids[2], "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged["kind"], "merge_commit", "{merged}");
    assert!(work.join("other.txt").exists());
    assert!(!Path::new(three_path).exists());

    // Child two's worktree is what is left; prune removes it and keeps
    // its branch, which holds an unmerged commit.
    let out = herald(&h, &["agents", "worktrees", "--prune", "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let pruned: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pruned = pruned.as_array().unwrap();
    assert_eq!(pruned.len(), 1, "{pruned:?}");
    assert_eq!(pruned[0]["agent_id"], ids[1]);
    assert_eq!(pruned[0]["removed"], true);
    assert!(
        pruned[0]["note"].as_str().unwrap().contains("kept"),
        "{pruned:?}"
    );
    assert!(git(&work, &["branch", "--list", &format!("herald/{}", ids[1])]).contains(&ids[1]));
    let out = herald(&h, &["agents", "worktrees"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no worktrees");
    assert_eq!(git(&work, &["worktree", "list"]).lines().count(), 1);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn isolation_without_a_repository_or_with_a_bad_value_is_an_error_the_model_reads() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "isolate outside git",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"goal": "nogit child", "isolation": "worktree"}),
                    ),
                    Reply::tool(
                        "delegate_task",
                        json!({"goal": "nogit child", "isolation": "container"}),
                    ),
                    Reply::text("understood"),
                ],
            )
            .conversation("nogit child", vec![Reply::text("should not run")]),
    )
    .await;
    let (output, _) = h.run_json(Wire::OpenAi, &[], "isolate outside git").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&h.requests_of("isolate outside git").last().unwrap().body);
    assert!(
        results[0].contains("needs a git repository") && results[0].contains("git init"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("isolation \"container\" is not known")
            && results[1].contains("no child was started"),
        "{}",
        results[1]
    );
    assert!(h.requests_of("nogit child").is_empty());
    let out = herald(&h, &["agents", "merge", "agt_nothing"]).await;
    assert_eq!(out.status.code(), Some(2));
}

/// A herald killed while an isolated background child runs leaves a
/// journaled worktree; `--resume` restarts the child in that same worktree
/// (no second one), and prune removes it once the child is done.
#[tokio::test(flavor = "multi_thread")]
async fn a_crash_mid_child_leaves_a_worktree_that_resume_reattaches_and_prune_removes() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "isolated crash",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "isolation": "worktree", "goal": "isolated sleeper: long job"}),
                    ),
                    Reply::text("waiting for the isolated sleeper"),
                    Reply::text("resumed and waiting"),
                    Reply::text("isolated sleeper finished"),
                ],
            )
            .conversation(
                "isolated sleeper",
                vec![
                    Reply::tool("terminal", json!({"command": sleeper_command("wt.pids")})),
                    Reply::text("restarted fine"),
                ],
            ),
    )
    .await;
    let work = repository(&h);
    let mut run = LiveRun::until(&h, Wire::OpenAi, "isolated crash", "subagent.tool").await;
    let session = run.last_event()["session_id"].as_str().unwrap().to_owned();
    let listed = || async {
        let out = herald(&h, &["agents", "worktrees", "--json"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let before = listed().await;
    assert_eq!(before.as_array().unwrap().len(), 1, "{before}");
    let path = std::path::PathBuf::from(before[0]["path"].as_str().unwrap());
    let pids_file = path.join("wt.pids");
    let t0 = std::time::Instant::now();
    while !pids_file.exists() {
        assert!(t0.elapsed().as_secs() < 20, "the sleeper never started");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let pids: Vec<i32> = std::fs::read_to_string(&pids_file)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    // Locked while its agent runs; a prune leaves it alone.
    let porcelain = git(&work, &["worktree", "list", "--porcelain"]);
    assert!(porcelain.contains("locked herald agent"), "{porcelain}");
    let out = herald(&h, &["agents", "worktrees", "--prune", "--json"]).await;
    let kept: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(kept[0]["removed"], false, "{kept}");
    assert_eq!(kept[0]["note"], "its agent is running");
    run.child.start_kill().unwrap();
    run.child.wait().await.unwrap();
    kill_leftovers(&pids);
    // Accounted for after the crash.
    let after = listed().await;
    assert_eq!(after[0]["path"], before[0]["path"], "{after}");
    assert_eq!(after[0]["exists"], true);

    let mut cmd = h.command(Wire::OpenAi);
    cmd.args(["run", "--json", "--resume", &session, "carry on"]);
    let output = cmd.output().await.unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let events = parse_events(&output.stdout);
    assert_eq!(last(&events)["final_response"], "isolated sleeper finished");
    // The same worktree, reattached: the repository knows two checkouts.
    let resumed = listed().await;
    assert_eq!(resumed.as_array().unwrap().len(), 1, "{resumed}");
    assert_eq!(resumed[0]["path"], before[0]["path"]);
    assert_eq!(resumed[0]["agent_status"], "completed", "{resumed}");
    assert_eq!(git(&work, &["worktree", "list"]).lines().count(), 2);

    let out = herald(&h, &["agents", "worktrees", "--prune", "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let pruned: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pruned[0]["removed"], true, "{pruned}");
    assert!(!path.exists());
    assert_eq!(git(&work, &["worktree", "list"]).lines().count(), 1);
    // Its branch had no commits: it went too.
    assert_eq!(git(&work, &["branch", "--list", "herald/*"]), "");
}

/// A finished isolated child is merged by `herald agents merge` from
/// another process; a later run of the same session asks it for more with
/// `agent_followup`. The follow-up works in a new worktree that starts from
/// the merged head, with its earlier conversation in context, so its one
/// new commit merges as a fast-forward.
#[tokio::test(flavor = "multi_thread")]
async fn a_follow_up_after_a_merge_builds_on_the_merged_head() {
    let script = Script::new()
        .conversation(
            "wt asked child",
            vec![
                commit("line one", "notes.txt", "child one"),
                Reply::text("added line one"),
                commit("line two", "notes.txt", "child two"),
                Reply::text("added line two"),
            ],
        )
        .responder(|view| {
            let ids = dispatched_ids(view);
            match view.turn {
                0 => Reply::tool(
                    "delegate_task",
                    json!({"background": true, "isolation": "worktree", "goal": "wt asked child: add line one"}),
                ),
                1 | 4 => wait_for_agent(&ids[0]),
                2 => Reply::text("line one is on its branch"),
                3 => Reply::tool(
                    "agent_followup",
                    json!({"agent_id": ids[0], "message": "now add line two"}),
                ),
                _ => Reply::text("line two is on its branch"),
            }
        });
    let h = Harness::new(script).await;
    let work = repository(&h);
    let (output, events) = h.run_json(Wire::OpenAi, &[], "ask and merge").await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "line one is on its branch");
    let session = last(&events)["session_id"].as_str().unwrap().to_owned();
    let listed: Value =
        serde_json::from_slice(&herald(&h, &["agents", "worktrees", "--json"]).await.stdout)
            .unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    let id = listed[0]["agent_id"].as_str().unwrap().to_owned();
    let first_path = listed[0]["path"].as_str().unwrap().to_owned();

    // Another process merges the finished child's branch.
    let out = herald(&h, &["agents", "merge", &id, "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged["kind"], "fast_forward", "{merged}");
    assert!(!Path::new(&first_path).exists());
    let merged_head = git(&work, &["rev-parse", "HEAD"]);

    // The next run of the session follows the child up.
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--resume", &session], "and one more line")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["final_response"], "line two is on its branch");
    // The follow-up's request carries the child's first turn.
    let child = h.requests_of("wt asked child");
    assert_eq!(child.len(), 4, "two turns of two requests");
    let asked = child[2].body.to_string();
    assert!(
        asked.contains("added line one") && asked.contains("now add line two"),
        "{asked}"
    );
    // Its new worktree started from the merged head: one new commit.
    let root = h.requests_of("ask and merge");
    let waited: Value = serde_json::from_str(&tool_results(&root.last().unwrap().body)[3]).unwrap();
    let result = &waited["finished"][0];
    assert_eq!(result["status"], "completed", "{waited}");
    let commits = result["worktree"]["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 1, "{result}");
    assert!(
        commits[0].as_str().unwrap().ends_with("child two"),
        "{result}"
    );
    assert_eq!(
        git(&work, &["rev-parse", &format!("herald/{id}~1")]),
        merged_head
    );
    let out = herald(&h, &["agents", "merge", &id, "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged["kind"], "fast_forward", "{merged}");
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        "first line\nline one\nline two\n"
    );
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
    assert_eq!(git(&work, &["worktree", "list"]).lines().count(), 1);
    h.server.assert_invariants();
}
