//! `herald` with no arguments: a line-based interactive loop over one
//! session. A thin front end over the session runtime: lines become turns
//! and operations, events are rendered, and the runtime's questions
//! (`clarify.requested`, `approval.requested`, `elicitation.requested`)
//! are put to the person at the terminal.

use std::io::IsTerminal;

use herald_core::ExitReason;
use std::sync::Arc;

use herald_core::runtime::{Op, Session, TurnResult};
use herald_knowledge::{ClarifyRequest, render_question};
use herald_protocol::{Event, EventKind};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines, Stdin};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::render::{Mode, Renderer};
use crate::setup::SessionShape;
use crate::{CliError, Exit, approval_prompt, elicit_prompt, setup, signals};

const HELP: &str = "Type a request and press Enter. Commands: /help, /agents (subagents of this session), /compress (summarise older turns now), /exit (or Ctrl-D). Ctrl-C interrupts a running turn.";

/// Invalid answers to one question tolerated before it is left open.
const ANSWER_ATTEMPTS: usize = 3;

type Input = Lines<BufReader<Stdin>>;

/// The events the loop acts on: questions for the person, turn ends.
type Acts = UnboundedReceiver<Arc<Event>>;

/// The interactive session; `first_prompt` (`herald "PROMPT"`) is sent as
/// its first turn before any line is read.
pub(crate) async fn interactive(
    common: &CommonArgs,
    mut first_prompt: Option<String>,
) -> Result<Exit, CliError> {
    // A person at a terminal gets the TUI; pipes and scripts the lines.
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        return crate::tui_cmd::interactive(common, first_prompt).await;
    }
    let settings = setup::settings(common)?;
    let renderer = Renderer::start(Mode::Human { stream_text: true });
    let store = setup::open_store(&settings.home)?;
    let shape = SessionShape {
        stream_deltas: true,
        ask_user: true,
        one_shot: false,
    };
    let session = setup::open(common, &settings, &store, shape).await?;
    let session_id = session.id().to_owned();
    let session_resumed = session.resumed();
    let mut used = false;
    crate::logging::session_started(common, &settings, &session_id);
    let mut questions = renderer.follow(session.events(Some(session.opened_after())));
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    eprintln!(
        "herald {} · {} ({}) · {}\n{HELP}",
        env!("CARGO_PKG_VERSION"),
        settings.model,
        settings.provider.as_str(),
        settings.cwd.display()
    );
    // SIGTERM or SIGHUP ends the session like Ctrl-C at the prompt, also
    // in the middle of a turn (which is interrupted first).
    let terminate = CancellationToken::new();
    let stop = signals::stop_on_termination(terminate.clone());
    let mut stdout = tokio::io::stdout();
    let exit = loop {
        if terminate.is_cancelled() {
            break stop.exit();
        }
        let _ = stdout.write_all(b"\n> ").await;
        let _ = stdout.flush().await;
        let line = tokio::select! {
            // The prompt from the command line is the first input.
            line = async {
                match first_prompt.take() {
                    Some(prompt) => Ok(Some(prompt)),
                    None => lines.next_line().await,
                }
            } => line,
            _ = tokio::signal::ctrl_c() => break Exit::Interrupted,
            () = terminate.cancelled() => break stop.exit(),
            event = questions.recv() => {
                // A background agent may ask for approval between turns.
                if let Some(event) = &event
                    && let Some(prompt) = approval_prompt::render(event)
                    && let EventKind::ApprovalRequested { request_id, .. } = &event.kind
                {
                    eprint!("{prompt}");
                    approval_prompt::answer(&session, request_id, &mut lines).await;
                }
                // Or an MCP server called by a background agent asks for input.
                if let Some(event) = &event
                    && let Some(prompt) = elicit_prompt::render(event)
                    && let EventKind::ElicitationRequested { request_id, schema, .. } = &event.kind
                {
                    eprint!("{prompt}");
                    elicit_prompt::answer(&session, request_id, schema, &mut lines).await;
                }
                continue;
            }
        };
        let line = match line {
            Ok(Some(line)) => line,
            Ok(None) => break Exit::Completed,
            Err(err) => {
                return Err(CliError::failed(anyhow::anyhow!(
                    "cannot read input: {err}"
                )));
            }
        };
        let input = line.trim();
        match input {
            "" => continue,
            "/exit" | "/quit" => break Exit::Completed,
            "/help" => {
                eprintln!("{HELP}");
                continue;
            }
            "/compress" => {
                compress(&session).await;
                continue;
            }
            "/agents" => {
                show_agents(&session);
                continue;
            }
            _ => {}
        }
        if let Some(name) = unknown_command(input) {
            eprintln!("unknown command /{name}: nothing was sent to the model ({HELP})");
            continue;
        }
        used = true;
        let Some(outcome) = run_turn(
            &session,
            input.to_owned(),
            &mut questions,
            &mut lines,
            &terminate,
        )
        .await?
        else {
            break stop.exit();
        };
        let _ = stdout.write_all(b"\n").await;
        match outcome.exit_reason {
            ExitReason::Interrupted => eprintln!("(interrupted)"),
            ExitReason::Error => eprintln!(
                "error: {}",
                outcome.error.as_deref().unwrap_or("the request failed")
            ),
            ExitReason::MaxIterations => eprintln!("(iteration limit reached)"),
            ExitReason::Budget => eprintln!("(token budget spent)"),
            ExitReason::Timeout => eprintln!("(time limit reached)"),
            ExitReason::Completed => {}
        }
    };
    // Running background agents stop (their commands are killed) but stay
    // journaled as running: `--resume` restarts them from their stored
    // conversations.
    let suspended = leave(&session, &exit, &terminate).await;
    // SIGTERM/SIGHUP while leaving (during the memory flush) still sets
    // the exit status, as in the TUI.
    let exit = match (exit, stop.received()) {
        (Exit::Completed, Some(_)) => stop.exit(),
        (exit, _) => exit,
    };
    if suspended > 0 {
        eprintln!(
            "{suspended} background agent(s) still running were suspended; they continue when you resume this session"
        );
    }
    tracing::info!(session_id = %session_id, suspended, "interactive session ended");
    drop(questions);
    drop(session);
    renderer.finish();
    // A session left before its first turn is not kept (nothing to resume).
    if used || session_resumed {
        eprintln!("session {session_id} (resume with `herald --resume {session_id}`)");
    }
    Ok(exit)
}

/// Ends the session. Leaving normally (`/exit`, end of input) lets a long
/// session run its memory flush first; Ctrl-C or SIGTERM/SIGHUP during it
/// ends it at once, and leaving on one skips it.
async fn leave(session: &Session, exit: &Exit, terminate: &CancellationToken) -> usize {
    if !matches!(exit, Exit::Completed) {
        return session.shutdown_now().await;
    }
    let ending = session.shutdown();
    tokio::pin!(ending);
    tokio::select! {
        suspended = &mut ending => return suspended,
        _ = tokio::signal::ctrl_c() => {}
        () = terminate.cancelled() => {}
    }
    // Keeps interrupting until the end arrives: the flush may not have
    // started yet when the key came.
    loop {
        interrupt(session);
        tokio::select! {
            suspended = &mut ending => return suspended,
            () = tokio::time::sleep(std::time::Duration::from_millis(50)) => {}
        }
    }
}

/// The name of a slash command this loop does not know: `/model`, `/foo
/// bar`. A path at the start of a prompt (`/etc/hosts is empty`) is not a
/// command (its first word has another slash).
fn unknown_command(input: &str) -> Option<&str> {
    let name = input.strip_prefix('/')?.split_whitespace().next()?;
    (!name.contains('/')).then_some(name)
}

/// Runs one turn: Ctrl-C interrupts it, SIGTERM/SIGHUP interrupt it and end
/// the loop (`None`), and questions the agent asks are answered from the
/// terminal while it runs.
async fn run_turn(
    session: &Session,
    input: String,
    questions: &mut Acts,
    lines: &mut Input,
    terminate: &CancellationToken,
) -> Result<Option<TurnResult>, CliError> {
    let turn = session
        .submit(Op::UserTurn {
            text: input,
            images: Vec::new(),
        })
        .map_err(CliError::failed)?;
    let mut terminated = false;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {
                interrupt(session);
            }
            () = terminate.cancelled(), if !terminated => {
                terminated = true;
                interrupt(session);
            }
            event = questions.recv() => {
                let Some(event) = event else {
                    return Err(CliError::failed(anyhow::anyhow!("the session ended during the turn")));
                };
                if event.submission_id.as_ref() == Some(&turn)
                    && let Some(result) = TurnResult::from_event(&event.kind)
                {
                    return Ok((!terminated).then_some(result));
                }
                if let EventKind::ApprovalRequested { request_id, .. } = &event.kind {
                    if let Some(prompt) = approval_prompt::render(&event) {
                        eprint!("{prompt}");
                    }
                    let answered = tokio::select! {
                        answered = approval_prompt::answer(session, request_id, lines) => answered,
                        _ = tokio::signal::ctrl_c() => {
                            interrupt(session);
                            false
                        }
                    };
                    if !answered {
                        interrupt(session);
                    }
                }
                if let EventKind::ElicitationRequested { request_id, schema, .. } = &event.kind {
                    if let Some(prompt) = elicit_prompt::render(&event) {
                        eprint!("{prompt}");
                    }
                    let answered = tokio::select! {
                        answered = elicit_prompt::answer(session, request_id, schema, lines) => answered,
                        _ = tokio::signal::ctrl_c() => {
                            interrupt(session);
                            false
                        }
                    };
                    if !answered {
                        interrupt(session);
                    }
                }
                if let EventKind::ClarifyRequested { request_id, question, choices, allow_freetext } = &event.kind {
                    let request = ClarifyRequest {
                        question: question.clone(),
                        choices: choices.clone(),
                        allow_freetext: *allow_freetext,
                    };
                    let answered = tokio::select! {
                        answered = ask(session, request_id, &request, lines) => answered,
                        _ = tokio::signal::ctrl_c() => {
                            interrupt(session);
                            false
                        }
                    };
                    if !answered {
                        interrupt(session);
                    }
                }
            }
        }
    }
}

/// Stops the running turn (and whatever runs in its place: a compaction,
/// the memory flush when leaving).
fn interrupt(session: &Session) {
    let _ = session.submit(Op::Interrupt {});
}

/// Puts one question to the person at the terminal and sends the answer.
/// False when the input ended or no valid answer came.
async fn ask(
    session: &Session,
    request_id: &str,
    request: &ClarifyRequest,
    lines: &mut Input,
) -> bool {
    eprint!("{}", render_question(request));
    let mut free_text = request.choices.is_empty();
    for _ in 0..ANSWER_ATTEMPTS {
        eprint!(
            "{}",
            if free_text {
                "your answer> "
            } else {
                "choice> "
            }
        );
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) | Err(_) => return false,
        };
        if free_text && line.trim().is_empty() {
            eprintln!("(type your answer)");
            continue;
        }
        match session.submit(Op::ClarifyAnswer {
            request_id: request_id.to_owned(),
            answer: line,
        }) {
            Ok(_) => return true,
            Err(err) if err.to_string().contains("\"Other\"") => free_text = true,
            Err(err) => eprintln!("({err})"),
        }
    }
    false
}

/// `/compress`: compacts the conversation now and says what happened.
async fn compress(session: &Session) {
    let compact = session.compact();
    tokio::pin!(compact);
    let result = tokio::select! {
        result = &mut compact => result,
        _ = tokio::signal::ctrl_c() => {
            // Stops the summary request; the conversation stays as it was.
            interrupt(session);
            compact.await
        }
    };
    match result {
        Ok(report) => eprintln!(
            "compacted: ~{} -> ~{} prompt tokens ({} messages summarised, {} tool outputs shortened)",
            report.tokens_before, report.tokens_after, report.summarised, report.shortened
        ),
        Err(err) => eprintln!("not compacted: {err}"),
    }
}

/// `/agents`: one line per subagent of this session, with what it is doing.
fn show_agents(session: &Session) {
    let agents = session.agents();
    if agents.is_empty() {
        eprintln!("no subagents in this session");
        return;
    }
    for agent in agents {
        let doing = match (&agent.current_tool, agent.status.as_str()) {
            (Some(tool), "running") => format!(" → {tool}"),
            _ => String::new(),
        };
        let goal: String = agent.goal.chars().take(60).collect();
        eprintln!(
            "{}{} {}{doing} · {:.1} s · {} calls · {} tok{} · {}",
            "  ".repeat(agent.depth.saturating_sub(1) as usize),
            agent.id,
            agent.status,
            agent.seconds,
            agent.api_calls,
            agent.tokens.input + agent.tokens.output,
            if agent.background {
                " · background"
            } else {
                ""
            },
            goal.replace('\n', " ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::unknown_command;

    #[test]
    fn slash_words_are_commands_and_paths_are_not() {
        assert_eq!(unknown_command("/model gpt-4.1"), Some("model"));
        assert_eq!(unknown_command("/frobnicate"), Some("frobnicate"));
        assert_eq!(unknown_command("/etc/hosts is empty"), None);
        assert_eq!(unknown_command("fix /tmp/x"), None);
        assert_eq!(unknown_command("/"), None);
    }
}
