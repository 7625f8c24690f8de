//! The command line as a new user meets it: `herald "PROMPT"`, ids by a
//! unique prefix, deletions that show what they remove and ask, no empty
//! session from a launch left at once, stored text that cannot drive the
//! terminal, and `--help` that lists only what a subcommand reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::{Output, Stdio};

use common::{Harness, Wire, last, stderr};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

async fn cli(h: &Harness, args: &[&str]) -> Output {
    h.bare_command().args(args).output().await.unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

async fn stored_ids(h: &Harness) -> Vec<String> {
    let list = h.cli_json(&["sessions", "list", "--json", "--all"]).await;
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Imports `lines` (JSONL) as a session and returns its id.
async fn import(h: &Harness, name: &str, lines: &[Value]) -> String {
    let path = h.work.path().join(name);
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n")).unwrap();
    let report = h
        .cli_json(&["sessions", "import", path.to_str().unwrap(), "--json"])
        .await;
    report["session_id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_after_herald_is_the_first_turn_of_an_interactive_session() {
    let h = Harness::new(
        Script::new().conversation("say hi", vec![Reply::text("hi from the scripted model")]),
    )
    .await;
    let mut child = h
        .command(Wire::OpenAi)
        .arg("say hi")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Standard input is a pipe that closes at once: the prompt from the
    // command line is all there is.
    drop(child.stdin.take());
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the interactive session did not end")
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("hi from the scripted model"),
        "{}",
        stdout(&output)
    );
    let list = h.cli_json(&["sessions", "list", "--json"]).await;
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["title"], "say hi");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_launch_left_before_any_prompt_stores_no_session_but_a_resumed_one_stays() {
    let h = Harness::new(Script::new().conversation("keep me", vec![Reply::text("kept")])).await;
    // End of input at once (stdin is /dev/null).
    let output = h.command(Wire::OpenAi).output().await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // `/exit` before any prompt.
    let mut child = h
        .command(Wire::OpenAi)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"/help\n/exit\n").await.unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(stored_ids(&h).await.is_empty());

    // A session with a turn, resumed and left at once, is kept whole.
    let (output, events) = h.run_json(Wire::OpenAi, &[], "keep me").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let id = last(&events)["session_id"].as_str().unwrap().to_owned();
    let output = h
        .command(Wire::OpenAi)
        .args(["--resume", &id])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stored_ids(&h).await, vec![id.clone()]);
    let shown = h.cli_json(&["sessions", "show", &id, "--json"]).await;
    assert_eq!(shown["messages"].as_array().unwrap().len(), 2, "{shown}");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn session_and_agent_ids_are_accepted_by_a_unique_prefix() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "first prefix session",
                vec![Reply::text("one"), Reply::text("resumed by prefix")],
            )
            .conversation(
                "second prefix session",
                vec![
                    Reply::tool("delegate_task", json!({"goal": "prefix child: report"})),
                    Reply::text("two"),
                ],
            )
            .conversation("prefix child", vec![Reply::text("child summary")]),
    )
    .await;
    let (output, events) = h.run_json(Wire::OpenAi, &[], "first prefix session").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let first = last(&events)["session_id"].as_str().unwrap().to_owned();
    let (output, events) = h.run_json(Wire::OpenAi, &[], "second prefix session").await;
    assert!(output.status.success(), "{}", stderr(&output));
    let second = last(&events)["session_id"].as_str().unwrap().to_owned();

    // All but the last character: unique (the ids differ in their random tail).
    let prefix = &first[..first.len() - 1];
    let shown = h.cli_json(&["sessions", "show", prefix, "--json"]).await;
    assert_eq!(shown["session"]["id"], first.as_str());
    // The kind may be left out.
    let bare = prefix.strip_prefix("ses_").unwrap();
    let shown = h.cli_json(&["sessions", "show", bare, "--json"]).await;
    assert_eq!(shown["session"]["id"], first.as_str());
    let exported = cli(&h, &["sessions", "export", prefix]).await;
    assert!(exported.status.success(), "{}", stderr(&exported));
    assert!(stdout(&exported).contains(&first));
    let log = cli(&h, &["permissions", "log", "--session", prefix, "--json"]).await;
    assert!(log.status.success(), "{}", stderr(&log));

    // --resume by prefix continues the same session.
    let (output, events) = h
        .run_json(Wire::OpenAi, &["--resume", prefix], "and on")
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(last(&events)["session_id"], first.as_str());
    assert_eq!(last(&events)["final_response"], "resumed by prefix");

    // Ambiguous: exit 2, the candidates, and what to do.
    for args in [
        vec!["sessions", "show", "ses_"],
        vec!["sessions", "delete", "ses_", "--yes"],
        vec!["run", "--resume", "ses_", "x"],
    ] {
        let output = h.command(Wire::OpenAi).args(&args).output().await.unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let err = stderr(&output);
        assert!(
            err.contains(&first) && err.contains(&second),
            "{args:?}: {err}"
        );
        assert!(err.contains("type more characters"), "{args:?}: {err}");
    }
    assert_eq!(stored_ids(&h).await.len(), 3, "nothing was deleted");
    // Unknown: the message it always had.
    let output = cli(&h, &["sessions", "show", "ses_zzz"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("no session 'ses_zzz'"));

    // Agents likewise, with or without `ag_`.
    let agents = h
        .cli_json(&["agents", "list", "--json", "--session", &second])
        .await;
    let agent = agents[0]["id"].as_str().unwrap().to_owned();
    let agent_prefix = &agent[..agent.len() - 2];
    let shown = h
        .cli_json(&["agents", "show", agent_prefix, "--json"])
        .await;
    assert_eq!(shown["id"], agent.as_str());
    let bare = agent_prefix.strip_prefix("ag_").unwrap();
    let shown = h.cli_json(&["agents", "show", bare, "--json"]).await;
    assert_eq!(shown["id"], agent.as_str());
    let session_prefix = &second[..second.len() - 1];
    let listed = h
        .cli_json(&["agents", "list", "--json", "--session", session_prefix])
        .await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_and_prune_show_what_goes_and_need_yes_without_a_terminal() {
    let h = Harness::new(Script::new()).await;
    let message = |text: &str| json!({"role": "user", "content": text});
    let a = import(&h, "a.jsonl", &[message("alpha transcript")]).await;
    let b = import(&h, "b.jsonl", &[message("beta transcript")]).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;

    // No terminal, no --yes: exit 2, saying so, and nothing deleted.
    for args in [
        vec!["sessions", "prune", "--older-than", "0s"],
        vec!["sessions", "delete", a.as_str()],
        vec!["sessions", "delete", a.as_str(), "--json"],
    ] {
        let output = cli(&h, &args).await;
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(stderr(&output).contains("--yes"), "{}", stderr(&output));
    }
    assert_eq!(stored_ids(&h).await.len(), 2);

    // --dry-run lists: id, title and message count.
    let output = cli(
        &h,
        &["sessions", "prune", "--older-than", "0s", "--dry-run"],
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listed = stdout(&output);
    assert!(listed.contains("would delete 2 session(s)"), "{listed}");
    for (id, title) in [(&a, "alpha transcript"), (&b, "beta transcript")] {
        let row = listed.lines().find(|l| l.contains(id.as_str())).unwrap();
        assert!(row.contains(title) && row.contains("1 msgs"), "{row}");
    }
    let planned = h
        .cli_json(&[
            "sessions",
            "prune",
            "--older-than",
            "0s",
            "--dry-run",
            "--json",
        ])
        .await;
    assert_eq!(planned["sessions"].as_array().unwrap().len(), 2);
    let output = cli(&h, &["sessions", "delete", &a, "--dry-run"]).await;
    assert!(stdout(&output).contains("alpha transcript"));
    assert_eq!(stored_ids(&h).await.len(), 2);

    // --yes deletes.
    let output = cli(&h, &["sessions", "delete", &a, "--yes"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains(&format!("deleted {a}")));
    assert_eq!(stored_ids(&h).await, vec![b.clone()]);
    let pruned = h
        .cli_json(&["sessions", "prune", "--older-than", "0s", "--yes", "--json"])
        .await;
    assert_eq!(pruned["pruned"], 1);
    assert_eq!(pruned["sessions"], json!([b]));
    assert!(stored_ids(&h).await.is_empty());
    // Nothing to prune needs no answer.
    let pruned = h
        .cli_json(&["sessions", "prune", "--older-than", "0s", "--json"])
        .await;
    assert_eq!(pruned["pruned"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn stored_text_reaches_the_terminal_without_control_sequences() {
    let h = Harness::new(Script::new()).await;
    let id = import(
        &h,
        "evil.jsonl",
        &[
            json!({"role": "user", "content": "\u{1b}]0;pwned\u{7}evil \u{1b}[2Jtitle"}),
            json!({"role": "assistant", "content": "\u{1b}[31mred\u{1b}[0m and \u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{7} \u{1b}c"}),
        ],
    )
    .await;
    for args in [
        vec!["sessions", "list"],
        vec!["sessions", "show", id.as_str()],
        vec!["sessions", "search", "evil"],
        vec!["sessions", "delete", id.as_str(), "--dry-run"],
    ] {
        let output = cli(&h, &args).await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            !output.stdout.contains(&0x1b) && !output.stderr.contains(&0x1b),
            "{args:?}: {:?}",
            stdout(&output)
        );
        assert!(
            stdout(&output).contains("evil title"),
            "{args:?}: {}",
            stdout(&output)
        );
    }
    let shown = stdout(&cli(&h, &["sessions", "show", &id]).await);
    assert!(shown.contains("red and link"), "{shown}");
    // JSON keeps the text as stored (escaped by JSON itself).
    let list = h.cli_json(&["sessions", "list", "--json"]).await;
    assert!(list[0]["title"].as_str().unwrap().contains('\u{1b}'));
}

#[tokio::test(flavor = "multi_thread")]
async fn subcommand_help_lists_only_the_options_it_reads() {
    let h = Harness::new(Script::new()).await;
    let output = cli(&h, &["sessions", "list", "--help"]).await;
    assert_eq!(output.status.code(), Some(0));
    let help = stdout(&output);
    for absent in ["--model", "--toolsets", "--resume", "--yolo", "--cwd"] {
        assert!(!help.contains(absent), "{absent} in:\n{help}");
    }
    for present in ["--limit", "--json", "--config"] {
        assert!(help.contains(present), "{present} missing:\n{help}");
    }
    let help = stdout(&cli(&h, &["run", "--help"]).await);
    for present in ["--model", "--resume", "--yolo", "--toolsets"] {
        assert!(help.contains(present), "{present} missing:\n{help}");
    }
    // A session option where it is not read is an error, not ignored.
    let output = cli(&h, &["sessions", "list", "--model", "x"]).await;
    assert_eq!(output.status.code(), Some(2));
}
