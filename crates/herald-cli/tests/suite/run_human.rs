//! `herald run` for people, through the real binary under a pseudo-terminal
//! (`herald_testkit::pty`): the text between tool calls, one line per tool
//! call with its outcome (failure reason, exit code, diff stats), a spinner
//! while the model works, the subagent tree, the final answer, and a last
//! line with the session, tokens and cost; `NO_COLOR`; the iteration limit;
//! and the raw answer when stdout is not a terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::ExitStatus;
use std::time::Duration;

use common::{Harness, Wire, stderr};
use herald_testkit::pty::PtySession;
use herald_testkit::{Reply, Script};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

/// Starts `herald run ARGS…` under a 40×120 pseudo-terminal.
fn run_in_terminal(h: &Harness, envs: &[(&str, &str)], args: &[&str]) -> PtySession {
    let mut cmd = h.command(Wire::OpenAi).into_std();
    cmd.arg("run").args(args);
    for (key, value) in envs {
        cmd.env(key, value);
    }
    if !envs.iter().any(|(key, _)| *key == "NO_COLOR") {
        cmd.env_remove("NO_COLOR");
    }
    PtySession::spawn(cmd, 40, 120).unwrap()
}

/// Waits for the run to end and returns its status and everything on the
/// terminal (scrollback and screen).
fn finish(session: &PtySession) -> (ExitStatus, String) {
    let status = session
        .wait_exit(WAIT)
        .unwrap_or_else(|| panic!("herald did not exit; screen:\n{}", session.screen()));
    (status, session.scrollback_and_screen())
}

/// The line of `text` containing `needle`.
fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
}

/// Whether `bytes` hold an SGR (colour/style) escape sequence.
fn has_sgr(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.split("\x1b[").skip(1).any(|rest| {
        let params: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ';')
            .collect();
        rest[params.len()..].starts_with('m')
    })
}

fn tools_script(needle: &str) -> Script {
    Script::new().conversation(
        needle,
        vec![
            Reply::ToolCalls {
                text: "Let me look around first.".into(),
                calls: vec![herald_testkit::ScriptedCall::new(
                    "read_file",
                    json!({"path": "missing/nowhere.rs"}),
                )],
            },
            Reply::tool("terminal", json!({"command": "echo hi; exit 3"})),
            Reply::tool(
                "write_file",
                json!({"path": "notes.txt", "content": "a\nb\nc\n"}),
            ),
            Reply::tool(
                "patch",
                json!({"path": "notes.txt", "old_string": "b\n", "new_string": "B\nBB\n"}),
            ),
            Reply::text("All done: notes written."),
        ],
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_in_a_terminal_shows_text_tool_outcomes_and_a_summary() {
    let h = Harness::new(tools_script("tidy the notes")).await;
    // Each reply takes a moment: the spinner shows while the model works.
    h.server.set_latency(Duration::from_millis(400));
    let session = run_in_terminal(&h, &[], &["tidy the notes"]);
    session
        .wait_for(|text| text.contains("thinking \u{b7} "), WAIT)
        .unwrap();
    let (status, text) = finish(&session);
    assert!(status.success(), "{status:?}\n{text}");

    assert!(text.contains("Let me look around first."), "{text}");
    let failed = line_with(&text, "read_file");
    assert!(
        failed.starts_with("\u{2717} read_file  missing/nowhere.rs \u{b7} "),
        "{failed}"
    );
    assert!(failed.contains("missing/nowhere.rs"), "{failed}");
    assert!(
        failed
            .split(" \u{b7} ")
            .nth(1)
            .is_some_and(|reason| reason.len() > 5),
        "{failed}"
    );
    let command = line_with(&text, "terminal");
    assert!(
        command.starts_with("\u{2717} terminal  echo hi; exit 3  exit 3 \u{b7} "),
        "{command}"
    );
    let written = line_with(&text, "write_file");
    assert!(
        written.starts_with("\u{2713} write_file  notes.txt  +3 \u{b7} "),
        "{written}"
    );
    let patched = line_with(&text, "\u{2713} patch");
    assert!(
        patched.starts_with("\u{2713} patch  notes.txt  +2 \u{2212}1 \u{b7} "),
        "{patched}"
    );
    assert!(text.contains("All done: notes written."), "{text}");

    // The spinner was erased: no frame is left on the terminal.
    assert!(!text.contains("thinking \u{b7}"), "{text}");
    // The last line: session, iterations, tokens, cache share, cost, time.
    let last = text.trim_end().lines().last().unwrap();
    assert!(last.starts_with("session ses_"), "{last}");
    for part in [
        "5 iterations",
        " in / ",
        " out tokens",
        "% cached",
        " \u{b7} $0.0",
    ] {
        assert!(last.contains(part), "{part} missing from {last}");
    }
    assert!(last.ends_with(" s"), "{last}");
    // In order: text, the tools, the answer, the summary.
    let at = |needle: &str| text.find(needle).unwrap();
    assert!(at("Let me look around") < at("\u{2717} read_file"));
    assert!(at("\u{2713} patch") < at("All done"));
    assert!(at("All done") < at("session ses_"));
    // Colour on a terminal.
    assert!(has_sgr(&session.raw()), "no colour on a terminal");
}

#[tokio::test(flavor = "multi_thread")]
async fn no_color_keeps_colour_sequences_off_the_terminal() {
    let h = Harness::new(tools_script("plain notes please")).await;
    let session = run_in_terminal(&h, &[("NO_COLOR", "1")], &["plain notes please"]);
    let (status, text) = finish(&session);
    assert!(status.success(), "{status:?}\n{text}");
    assert!(text.contains("\u{2713} patch  notes.txt"), "{text}");
    let raw = session.raw();
    assert!(
        !has_sgr(&raw),
        "colour with NO_COLOR=1: {:?}",
        String::from_utf8_lossy(&raw)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_iteration_limit_says_so_and_the_suggested_command_continues() {
    let h = Harness::new(Script::new().conversation(
        "count to three",
        vec![
            Reply::tool("terminal", json!({"command": "echo 1"})),
            Reply::text("stopped early"),
            Reply::text("three"),
        ],
    ))
    .await;
    let session = run_in_terminal(&h, &[], &["--max-iterations", "1", "count to three"]);
    let (status, text) = finish(&session);
    assert!(status.success(), "{status:?}\n{text}");
    let note = line_with(&text, "iteration limit");
    assert!(
        note.starts_with(
            "stopped at the iteration limit (1); continue with: herald run --resume ses_"
        ),
        "{note}"
    );
    let command = note
        .split("continue with: ")
        .nth(1)
        .unwrap()
        .split(" (or raise")
        .next()
        .unwrap();
    let words: Vec<&str> = command.split(' ').collect();
    assert_eq!(words[..3], ["herald", "run", "--resume"], "{command}");
    assert_eq!(words[4], "\"continue\"", "{command}");
    let last = text.trim_end().lines().last().unwrap();
    assert!(
        last.starts_with(&format!("session {} \u{b7} ", words[3])),
        "{last}"
    );

    // The suggested command continues the session.
    let output = h
        .command(Wire::OpenAi)
        .args(["run", "--resume", words[3], "continue"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "three\n");
    h.server.assert_invariants();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_piped_stdout_gets_the_answer_raw_and_stderr_the_progress_without_escapes() {
    let answer = "# Report\n\nAll **done** here.";
    let h = Harness::new(Script::new().conversation(
        "report please",
        vec![
            Reply::tool("terminal", json!({"command": "true"})),
            Reply::text(answer),
        ],
    ))
    .await;
    let output = h
        .command(Wire::OpenAi)
        .args(["run", "report please"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{answer}\n")
    );
    let err = stderr(&output);
    assert!(
        err.contains("\u{2713} terminal  true  exit 0 \u{b7} "),
        "{err}"
    );
    assert!(
        err.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("session ses_"),
        "{err}"
    );
    assert!(
        !err.contains('\x1b'),
        "escape sequences on a stderr that is no terminal: {err:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_subagent_tree_is_live_and_leaves_only_its_completion_lines() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "delegate the nap",
                vec![
                    Reply::ToolCalls {
                        text: "Handing this to a helper.".into(),
                        calls: vec![herald_testkit::ScriptedCall::new(
                            "delegate_task",
                            json!({"goal": "napping helper: sleep a little"}),
                        )],
                    },
                    Reply::text("The helper napped."),
                ],
            )
            .conversation(
                "napping helper",
                vec![
                    Reply::tool("terminal", json!({"command": "sleep 2"})),
                    Reply::text("napped"),
                ],
            ),
    )
    .await;
    let session = run_in_terminal(&h, &[], &["delegate the nap"]);
    // While the child runs: its row in the live block, under the text
    // printed before it.
    let live = session
        .wait_for(|text| text.contains("\u{2192} terminal \u{b7} "), WAIT)
        .unwrap();
    assert!(live.contains("Handing this to a helper."), "{live}");
    let (status, text) = finish(&session);
    assert!(status.success(), "{status:?}\n{text}");
    assert!(text.contains("Handing this to a helper."), "{text}");
    assert!(text.contains(" completed in "), "{text}");
    assert!(
        !text.contains("\u{2192} terminal \u{b7} "),
        "a tree row was left behind:\n{text}"
    );
    assert!(
        text.contains("\u{2713} delegate_task  napping helper"),
        "{text}"
    );
    assert!(text.contains("The helper napped."), "{text}");
    let last = text.trim_end().lines().last().unwrap();
    assert!(last.contains(" out tokens (tree) \u{b7} "), "{last}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_a_tool_still_ends_with_the_session_line() {
    let h = Harness::new(Script::new().conversation(
        "wait for a long time",
        vec![
            Reply::tool("terminal", json!({"command": "sleep 30"})),
            Reply::text("unreachable"),
        ],
    ))
    .await;
    let session = run_in_terminal(&h, &[], &["wait for a long time"]);
    // The spinner names the running command.
    session
        .wait_for(|text| text.contains("terminal  sleep 30 \u{b7} "), WAIT)
        .unwrap();
    session.send(herald_testkit::pty::keys::CTRL_C);
    let (status, text) = finish(&session);
    assert_eq!(status.code(), Some(130), "{text}");
    let interrupted = line_with(&text, "herald: interrupted (session ses_");
    let id = interrupted
        .split("(session ")
        .nth(1)
        .unwrap()
        .trim_end_matches(')');
    assert!(
        line_with(&text, "terminal  sleep 30").starts_with('\u{2717}'),
        "{text}"
    );
    let last = text.trim_end().lines().last().unwrap();
    assert!(last.starts_with(&format!("session {id} \u{b7} ")), "{last}");
    let failed = line_with(&text, "terminal  sleep 30");
    assert!(failed.contains(" \u{b7} interrupted: "), "{failed}");
    let spinner = |c: char| ('\u{2800}'..='\u{28ff}').contains(&c);
    assert!(!text.contains(spinner), "the spinner was left:\n{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_answer_is_rendered_markdown_on_a_terminal() {
    let replies = || {
        vec![
            Reply::ToolCalls {
                text: "Checking **one** thing.".into(),
                calls: vec![herald_testkit::ScriptedCall::new(
                    "terminal",
                    json!({"command": "true"}),
                )],
            },
            Reply::text("# Report\n\nAll **done** here.\n\n- first\n- second"),
        ]
    };
    let h = Harness::new(
        Script::new()
            .conversation("summarise in colour", replies())
            .conversation("summarise without colour", replies()),
    )
    .await;
    for (prompt, no_color) in [
        ("summarise in colour", false),
        ("summarise without colour", true),
    ] {
        let envs: &[(&str, &str)] = if no_color { &[("NO_COLOR", "1")] } else { &[] };
        let session = run_in_terminal(&h, envs, &[prompt]);
        let (status, text) = finish(&session);
        assert!(status.success(), "{status:?}\n{text}");
        assert!(text.contains("All done here."), "{text}");
        assert!(!text.contains("**"), "markdown shown raw:\n{text}");
        assert!(text.contains("Checking one thing."), "{text}");
        assert!(text.contains("Report"), "{text}");
        assert!(text.contains("\u{2022} first\n"), "{text}");
        let raw = session.raw();
        assert_eq!(
            has_sgr(&raw),
            !no_color,
            "{:?}",
            String::from_utf8_lossy(&raw)
        );
    }
}
