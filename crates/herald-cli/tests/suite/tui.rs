//! The TUI end to end: the real `herald` binary under a pseudo-terminal
//! (`herald_testkit::pty`, a vt100 screen that answers the terminal's
//! queries) against the scripted server, whose pairing and prefix checks
//! run on every request. Keys are typed as a terminal sends them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{Harness, tool_results};
use herald_testkit::pty::{PtySession, keys};
use herald_testkit::{Reply, Script};
use serde_json::{Value, json};

/// Generous: CI machines are slow and busy.
const WAIT: Duration = Duration::from_secs(20);

fn terminal(command: &str) -> Reply {
    Reply::tool("terminal", json!({ "command": command }))
}

/// `herald ARGS` in a 30×100 terminal, pointed at the scripted server.
fn spawn(h: &Harness, args: &[&str]) -> PtySession {
    h.tui(args, 30, 100)
}

/// Waits until the screen (with its scrollback) contains `text`.
fn wait_for(pty: &PtySession, text: &str) -> String {
    pty.wait_for(|screen| screen.contains(text), WAIT)
        .unwrap_or_else(|err| panic!("waiting for {text:?}: {err}"))
}

/// Waits until every one of `texts` is on the screen at once: parts of one
/// view (an overlay, a replayed transcript) may land in separate frames.
fn wait_for_all(pty: &PtySession, texts: &[&str]) -> String {
    pty.wait_for(
        |screen| texts.iter().all(|text| screen.contains(text)),
        WAIT,
    )
    .unwrap_or_else(|err| panic!("waiting for all of {texts:?}: {err}"))
}

/// Starts the TUI and waits for its composer.
fn start(h: &Harness, args: &[&str]) -> PtySession {
    let pty = spawn(h, args);
    wait_for(&pty, "Ask herald");
    pty
}

/// The status line of `screen`: the row under the composer's box (the
/// welcome text above names the keys too).
fn status_line(screen: String) -> String {
    let rows: Vec<&str> = screen.lines().collect();
    rows.iter()
        .rposition(|row| row.starts_with('╰'))
        .and_then(|at| rows.get(at + 1))
        .map_or_else(String::new, |row| (*row).to_owned())
}

/// Waits until the turn has ended while a background agent still works:
/// the status line says so (during a turn it names the turn's activity).
/// Returns the visible screen.
fn turn_ended(pty: &PtySession) -> String {
    pty.wait_for(
        |_| pty.screen().contains("background agent(s) working"),
        WAIT,
    )
    .unwrap_or_else(|err| panic!("waiting for the turn to end: {err}"));
    pty.screen()
}

/// The user messages of every request of the conversation starting with `needle`.
fn user_messages(h: &Harness, needle: &str) -> Vec<String> {
    let requests = h.requests_of(needle);
    let last = requests.last().expect("a request");
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn exit_with_ctrl_d(pty: &PtySession) -> std::process::ExitStatus {
    pty.send(keys::CTRL_D);
    pty.wait_exit(WAIT).expect("herald exits on Ctrl+D")
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_text_with_cursor_edits_is_sent_as_edited() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("**Edited** answer"))).await;
    let pty = start(&h, &[]);
    // "hllo wrld" → Home, Right, "e" → End, Left×3, "o" → "hello world".
    pty.send_str("hllo wrld");
    pty.send(keys::HOME);
    pty.send(keys::RIGHT);
    pty.send_str("e");
    pty.send(keys::END);
    for _ in 0..3 {
        pty.send(keys::LEFT);
    }
    pty.send_str("o");
    pty.send(keys::ENTER);
    let screen = wait_for(&pty, "Edited answer");
    // Markdown is rendered: the asterisks are gone.
    assert!(!screen.contains("**Edited**"), "{screen}");
    assert_eq!(user_messages(&h, "hello world"), vec!["hello world"]);
    let status = exit_with_ctrl_d(&pty);
    assert!(status.success(), "{status:?}");
    // Leaving says which session it was and how to resume it.
    let screen = wait_for(&pty, "resume with");
    assert!(screen.contains("herald --resume ses_"), "{screen}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pasted_stack_trace_is_one_prompt_and_one_request() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("looked at it"))).await;
    let pty = start(&h, &[]);
    pty.send_str("why does this fail? ");
    pty.paste("Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: bad");
    // The paste did not send anything by itself. A fixed window: a request
    // that never comes has no event to wait for.
    std::thread::sleep(Duration::from_millis(300));
    assert!(h.server.requests().is_empty());
    pty.send(keys::ENTER);
    wait_for(&pty, "looked at it");
    assert_eq!(h.server.requests().len(), 1);
    assert_eq!(
        user_messages(&h, "why does this fail"),
        vec![
            "why does this fail? Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: bad"
        ]
    );
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn shift_enter_and_ctrl_j_make_new_lines_instead_of_sending() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("two lines seen"))).await;
    let pty = start(&h, &[]);
    pty.send_str("first line");
    pty.send(keys::CTRL_J);
    pty.send_str("second line");
    // A fixed window: a request that never comes has no event to wait for.
    std::thread::sleep(Duration::from_millis(200));
    assert!(h.server.requests().is_empty());
    pty.send(keys::ENTER);
    wait_for(&pty, "two lines seen");
    assert_eq!(
        user_messages(&h, "first line"),
        vec!["first line\nsecond line"]
    );
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_slash_command_is_an_error_on_screen_and_never_reaches_the_model() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("should not happen"))).await;
    let pty = start(&h, &[]);
    pty.send_str("/frobnicate now");
    pty.send(keys::ENTER);
    wait_for(&pty, "unknown command /frobnicate");
    // A known one works: /help opens and Esc closes it.
    pty.send_str("/help");
    pty.send(keys::ENTER);
    // (Its last command: the keys below it may need scrolling.)
    wait_for(&pty, "leave (also Ctrl-D)");
    pty.send(keys::ESC);
    // A fixed window: a request that never comes has no event to wait for.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        h.server.requests().is_empty(),
        "a slash command reached the model"
    );
    exit_with_ctrl_d(&pty);
    // No prompt was sent: no session is stored.
    let listed = h
        .bare_command()
        .args(["sessions", "list", "--json"])
        .output()
        .await
        .unwrap();
    let sessions: Value = serde_json::from_slice(&listed.stdout).unwrap_or(Value::Null);
    assert!(
        sessions.as_array().is_none_or(Vec::is_empty)
            || sessions["sessions"].as_array().is_some_and(Vec::is_empty),
        "{sessions}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_interrupts_a_long_tool_and_the_session_goes_on() {
    let h = Harness::new(Script::new().conversation(
        "sleep long",
        vec![terminal("sleep 60"), Reply::text("still here")],
    ))
    .await;
    let pty = start(&h, &[]);
    pty.send_str("please sleep long");
    pty.send(keys::ENTER);
    wait_for(&pty, "running terminal");
    let started = std::time::Instant::now();
    pty.send(keys::ESC);
    wait_for(&pty, "interrupted");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    pty.send_str("after that");
    pty.send(keys::ENTER);
    wait_for(&pty, "still here");
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_clears_the_input_then_twice_on_empty_exits() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("ok"))).await;
    let pty = start(&h, &[]);
    pty.send_str("draft to throw away");
    wait_for(&pty, "draft to throw away");
    pty.send(keys::CTRL_C);
    pty.wait_for(|_| !pty.screen().contains("draft to throw away"), WAIT)
        .unwrap();
    assert!(
        pty.wait_exit(Duration::from_millis(300)).is_none(),
        "one Ctrl+C must not exit"
    );
    pty.send(keys::CTRL_C);
    wait_for(&pty, "Ctrl+C again");
    pty.send(keys::CTRL_C);
    let status = pty.wait_exit(WAIT).expect("a second Ctrl+C exits");
    assert!(status.success(), "{status:?}");
    assert!(h.server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn approvals_and_clarify_choices_are_answered_in_overlays() {
    let h = Harness::new(Script::new().conversation(
        "tidy up",
        vec![
            terminal("rm -rf old_build"),
            Reply::tool(
                "clarify",
                json!({"question": "Which branch?", "choices": ["main", "develop"]}),
            ),
            Reply::text("tidied"),
        ],
    ))
    .await;
    std::fs::create_dir(h.work_path().join("old_build")).unwrap();
    let pty = start(&h, &[]);
    pty.send_str("please tidy up");
    pty.send(keys::ENTER);
    wait_for_all(&pty, &["approval needed", "rm -rf old_build"]);
    pty.send_str("y");
    // The running clarify cell names the question before the overlay with
    // its choices is drawn: wait for a choice too, which only the overlay shows.
    wait_for_all(&pty, &["Which branch?", "develop"]);
    pty.send_str("2");
    wait_for(&pty, "tidied");
    assert!(
        !h.work_path().join("old_build").exists(),
        "the approved command did not run"
    );
    let requests = h.requests_of("tidy up");
    let results = tool_results(&requests.last().unwrap().body);
    assert!(results[1].contains("develop"), "{results:?}");
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_cells_show_outcomes_and_failure_reasons() {
    let h = Harness::new(Script::new().conversation(
        "show tools",
        vec![
            Reply::tool("read_file", json!({"path": "missing.txt"})),
            terminal("echo hello-from-the-tool; exit 3"),
            Reply::text("done with tools"),
        ],
    ))
    .await;
    let pty = start(&h, &[]);
    pty.send_str("show tools");
    pty.send(keys::ENTER);
    let screen = wait_for(&pty, "done with tools");
    assert!(screen.contains("✗ read_file"), "{screen}");
    assert!(screen.contains("missing.txt"), "{screen}");
    assert!(screen.contains("exit 3"), "{screen}");
    assert!(screen.contains("hello-from-the-tool"), "{screen}");
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn resuming_replays_the_conversation() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("the stored answer"))).await;
    let output = h
        .command(common::Wire::OpenAi)
        .args(["run", "--json", "the first question"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success());
    let events = common::parse_events(&output.stdout);
    let session = events[0]["session_id"].as_str().unwrap().to_owned();
    // By unique prefix, as a person types it.
    let prefix = &session[..session.len() - 4];
    let pty = start(&h, &["--resume", prefix]);
    wait_for_all(
        &pty,
        &["the stored answer", "the first question", "resumed"],
    );
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn input_typed_while_the_agent_works_is_queued_and_sent_after_the_turn() {
    let h = Harness::new(Script::new().conversation(
        "slow one",
        vec![
            terminal("sleep 1.5"),
            Reply::text("first done"),
            Reply::text("second done"),
        ],
    ))
    .await;
    let pty = start(&h, &[]);
    pty.send_str("slow one");
    pty.send(keys::ENTER);
    wait_for(&pty, "running terminal");
    pty.send_str("queued follow-up");
    pty.send(keys::ENTER);
    wait_for(&pty, "queued: queued follow-up");
    wait_for(&pty, "second done");
    let messages = user_messages(&h, "slow one");
    assert_eq!(messages.last().unwrap(), "queued follow-up");
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_after_herald_is_the_first_turn() {
    let h =
        Harness::new(Script::new().responder(|_| Reply::text("answered the first prompt"))).await;
    let pty = spawn(&h, &["explain this project"]);
    wait_for(&pty, "answered the first prompt");
    assert_eq!(
        user_messages(&h, "explain this project"),
        vec!["explain this project"]
    );
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn leaving_with_a_background_agent_running_asks_and_can_cancel_it() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "bg nap",
                vec![terminal("sleep 60"), Reply::text("unreachable")],
            )
            .conversation(
                "start a helper",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "bg nap: sleep for a minute"}),
                    ),
                    Reply::text("the helper runs in the background"),
                ],
            ),
    )
    .await;
    let pty = start(&h, &[]);
    pty.send_str("start a helper");
    pty.send(keys::ENTER);
    wait_for(&pty, "the helper runs in the background");
    pty.send(keys::CTRL_D);
    wait_for_all(
        &pty,
        &[
            "background agents are still running",
            "Leave them suspended",
        ],
    );
    // The third choice: cancel them and exit.
    pty.send(keys::DOWN);
    pty.send(keys::DOWN);
    pty.send(keys::ENTER);
    let status = pty.wait_exit(WAIT).expect("herald exits after the choice");
    assert!(status.success(), "{status:?}");
    let listed = h
        .bare_command()
        .args(["agents", "list", "--json"])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        !text.contains("\"running\""),
        "an agent is still running: {text}"
    );
    assert!(text.contains("cancel"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_picks_another_session_and_replays_it() {
    let h = Harness::new(Script::new().conversation(
        "older question",
        vec![Reply::text("older answer"), Reply::text("newer answer")],
    ))
    .await;
    let output = h
        .command(common::Wire::OpenAi)
        .args(["run", "older question"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success());
    let pty = start(&h, &[]);
    pty.send_str("/resume");
    pty.send(keys::ENTER);
    wait_for(&pty, "resume a session");
    pty.send_str("older");
    pty.send(keys::ENTER);
    wait_for_all(&pty, &["older answer", "resumed"]);
    pty.send_str("and now?");
    pty.send(keys::ENTER);
    wait_for(&pty, "newer answer");
    // The new turn went to the resumed conversation.
    assert_eq!(
        user_messages(&h, "older question"),
        vec!["older question", "and now?"]
    );
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_background_agents_approval_outlives_the_turn_that_started_it() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "bg clean",
                vec![terminal("rm -rf old_build"), Reply::text("cleaned it")],
            )
            .conversation(
                "start a cleaner",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "bg clean: remove old_build"}),
                    ),
                    // The helper asks while the turn still runs.
                    terminal("sleep 2"),
                    Reply::text("the cleaner runs in the background"),
                ],
            ),
    )
    .await;
    std::fs::create_dir(h.work_path().join("old_build")).unwrap();
    let pty = start(&h, &[]);
    pty.send_str("start a cleaner");
    pty.send(keys::ENTER);
    wait_for_all(&pty, &["approval needed", "rm -rf old_build"]);
    wait_for(&pty, "the cleaner runs in the background");
    // The turn is over (the status line shows only the helper at work);
    // the helper still waits for the answer.
    let screen = turn_ended(&pty);
    assert!(screen.contains("approval needed"), "{screen}");
    pty.send_str("y");
    pty.wait_for(|_| !h.work_path().join("old_build").exists(), WAIT)
        .expect("the approved command ran");
    wait_for(&pty, "cleaned it");
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn prompts_typed_during_a_compaction_are_sent_after_it() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("noted"))).await;
    // A short conversation has a middle to summarise.
    h.config("[compression]\nprotect_first_n = 1\nprotect_last_n = 1\n");
    let pty = start(&h, &[]);
    for (index, prompt) in ["first prompt", "second prompt"].iter().enumerate() {
        pty.send_str(prompt);
        pty.send(keys::ENTER);
        pty.wait_for(|screen| screen.matches("noted").count() > index, WAIT)
            .unwrap();
    }
    // The reply shows before the turn has ended: wait until the status line
    // is idle, or `/compress` is refused.
    pty.wait_for(
        |_| !status_line(pty.screen()).contains("Esc interrupts"),
        WAIT,
    )
    .unwrap_or_else(|err| panic!("waiting for the second turn to end: {err}"));
    // The summary request takes a while.
    h.server.set_latency(Duration::from_secs(2));
    pty.send_str("/compress");
    pty.send(keys::ENTER);
    pty.send_str("third prompt");
    pty.send(keys::ENTER);
    wait_for(&pty, "queued: third prompt");
    // Steering with no turn to steer waits its turn too.
    pty.send_str("/steer fourth prompt");
    pty.send(keys::ENTER);
    wait_for(&pty, "queued: fourth prompt");
    wait_for(&pty, "compacted");
    let sent = |text: &str| {
        h.server.requests().iter().any(|r| {
            r.body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .is_some_and(|m| m["content"].as_str() == Some(text))
        })
    };
    pty.wait_for(|_| sent("third prompt"), WAIT)
        .expect("the queued prompt was sent after the compaction");
    pty.wait_for(|_| sent("fourth prompt"), WAIT)
        .expect("the steering text was sent after the compaction");
    h.server.set_latency(Duration::ZERO);
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_ends_the_session_and_gives_the_terminal_back() {
    let h = Harness::new(Script::new().responder(|_| Reply::text("ok"))).await;
    let pty = start(&h, &[]);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pty.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = pty.wait_exit(WAIT).expect("herald exits on SIGTERM");
    assert_eq!(status.code(), Some(143), "{status:?}");
    // Bracketed paste (switched on with raw mode) was switched off again,
    // and the pane cleared.
    let raw = String::from_utf8_lossy(&pty.raw()).into_owned();
    let on = raw.rfind("\x1b[?2004h").expect("bracketed paste was on");
    assert!(raw[on..].contains("\x1b[?2004l"), "{:?}", &raw[on..]);
    assert!(!pty.screen().contains("Ask herald"), "{}", pty.screen());
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_on_a_background_agents_approval_with_no_turn_running_denies_it() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "bg wipe",
                vec![terminal("rm -rf keep_me"), Reply::text("wipe refused")],
            )
            .conversation(
                "start a wiper",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "bg wipe: remove keep_me"}),
                    ),
                    terminal("sleep 2"),
                    Reply::text("the wiper runs in the background"),
                ],
            ),
    )
    .await;
    std::fs::create_dir(h.work_path().join("keep_me")).unwrap();
    let pty = start(&h, &[]);
    pty.send_str("start a wiper");
    pty.send(keys::ENTER);
    wait_for(&pty, "approval needed");
    wait_for(&pty, "the wiper runs in the background");
    turn_ended(&pty);
    // No turn runs: Ctrl+C answers the helper's request with no.
    pty.send(keys::CTRL_C);
    wait_for(&pty, "wipe refused");
    assert!(
        h.work_path().join("keep_me").exists(),
        "the denied command ran"
    );
    let results = tool_results(&h.requests_of("bg wipe").last().unwrap().body);
    assert!(results[0].starts_with("denied"), "{results:?}");
    exit_with_ctrl_d(&pty);
}

/// Whether the composer's box in `screen` holds a line starting with `text`.
fn composer_holds(screen: &str, text: &str) -> bool {
    let rows: Vec<&str> = screen.lines().collect();
    let Some(bottom) = rows.iter().rposition(|row| row.starts_with('╰')) else {
        return false;
    };
    let top = rows[..bottom]
        .iter()
        .rposition(|row| row.starts_with('╭'))
        .unwrap_or(0);
    rows[top..bottom].iter().any(|row| row.contains(text))
}

/// The id of the background agent the root's `delegate_task` dispatched,
/// read from the tool result the model got back.
fn dispatched_agent(h: &Harness, root: &str) -> String {
    let requests = h.requests_of(root);
    let results = tool_results(&requests.last().expect("a root request").body);
    let first = results.first().expect("the delegate_task result");
    let dispatched: Value = serde_json::from_str(first.split("\n\n").next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {first}"));
    dispatched["agent_id"]
        .as_str()
        .or_else(|| dispatched["agent_ids"][0].as_str())
        .unwrap_or_else(|| panic!("no agent id in {dispatched}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn message_steers_a_running_background_agent_typed_and_from_the_picker() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "bg steer",
                vec![terminal("sleep 6"), Reply::text("steered helper done")],
            )
            .conversation(
                "start a steerable helper",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "bg steer: nap, then report"}),
                    ),
                    Reply::text("the helper runs in the background"),
                ],
            ),
    )
    .await;
    // Every request of the helper takes a while: it stays running.
    h.server
        .set_conversation_latency("bg steer", Duration::from_millis(1500));
    let pty = start(&h, &[]);
    pty.send_str("start a steerable helper");
    pty.send(keys::ENTER);
    wait_for(&pty, "the helper runs in the background");
    turn_ended(&pty);
    let agent = dispatched_agent(&h, "start a steerable helper");

    // Typed: /message AGENT TEXT.
    pty.send_str(&format!("/message {agent} use tabs, not spaces"));
    pty.send(keys::ENTER);
    wait_for(&pty, &format!("queued for {agent}"));
    // From the picker: m fills in the id, the text follows.
    pty.send_str("/agents");
    pty.send(keys::ENTER);
    wait_for_all(&pty, &["agents of this session", &agent]);
    pty.send_str("m");
    let filled = format!("/message {agent} ");
    pty.wait_for(
        |_| {
            let screen = pty.screen();
            !screen.contains("agents of this session") && composer_holds(&screen, &filled)
        },
        WAIT,
    )
    .unwrap_or_else(|err| panic!("waiting for the picker to fill in the composer: {err}"));
    pty.send_str("and keep it short");
    pty.send(keys::ENTER);
    pty.wait_for(
        |screen| screen.matches(&format!("queued for {agent}")).count() >= 2,
        WAIT,
    )
    .unwrap_or_else(|err| panic!("waiting for the second receipt: {err}"));

    // Both receipts turn delivered at the helper's next tool boundary, and
    // its next request carries both texts with the tool result.
    pty.wait_for(
        |screen| screen.matches(&format!("to {agent}: delivered")).count() >= 2,
        Duration::from_secs(40),
    )
    .unwrap_or_else(|err| panic!("waiting for both deliveries: {err}"));
    wait_for(&pty, "steered helper done");
    let child = h.requests_of("bg steer");
    assert_eq!(child.len(), 2, "one request before and one after the nap");
    assert!(
        !child[0].body.to_string().contains("use tabs, not spaces"),
        "sent after the first request"
    );
    let result = tool_results(&child[1].body).pop().unwrap();
    for text in ["use tabs, not spaces", "and keep it short"] {
        assert!(result.contains(text), "{text:?} missing: {result}");
    }
    exit_with_ctrl_d(&pty);
}

#[tokio::test(flavor = "multi_thread")]
async fn message_to_an_unknown_agent_is_an_error_and_sends_nothing() {
    let h = Harness::new(
        Script::new()
            .conversation(
                "bg idle",
                vec![terminal("sleep 4"), Reply::text("idle helper done")],
            )
            .conversation(
                "start an idle helper",
                vec![
                    Reply::tool(
                        "delegate_task",
                        json!({"background": true, "goal": "bg idle: nap"}),
                    ),
                    Reply::text("the idle helper runs"),
                ],
            ),
    )
    .await;
    h.server
        .set_conversation_latency("bg idle", Duration::from_millis(1500));
    let pty = start(&h, &[]);
    pty.send_str("start an idle helper");
    pty.send(keys::ENTER);
    wait_for(&pty, "the idle helper runs");
    let agent = dispatched_agent(&h, "start an idle helper");

    pty.send_str("/message ag_nobody stray words");
    pty.send(keys::ENTER);
    let screen = wait_for(&pty, "no agent 'ag_nobody'");
    assert!(
        screen.contains(&agent),
        "the error names the agents there are: {screen}"
    );
    // Nothing was sent: the helper finishes without the text, no new
    // conversation started, no receipt.
    wait_for(&pty, "idle helper done");
    assert!(
        !h.server
            .requests()
            .iter()
            .any(|r| r.body.to_string().contains("stray words")),
        "the text reached a model"
    );
    assert_eq!(
        h.requests_of("bg idle").len(),
        2,
        "the helper's own two requests, no follow-up"
    );
    let screen = pty.screen();
    assert!(!screen.contains("to ag_nobody"), "a receipt: {screen}");
    assert!(
        !screen.contains("follow-up started"),
        "no follow-up claimed: {screen}"
    );
    exit_with_ctrl_d(&pty);
}
