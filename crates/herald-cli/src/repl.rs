//! `herald` with no arguments: a line-based interactive loop over one session.

use std::sync::Arc;

use herald_core::{EventSink, ExitReason};
use herald_knowledge::{Clarifier, LineClarifier};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::render::{Mode, Renderer};
use crate::{CliError, Exit, setup, signals};

const HELP: &str = "Type a request and press Enter. Commands: /help, /agents (subagents of this session), /compress (summarise older turns now), /exit (or Ctrl-D). Ctrl-C interrupts a running turn.";

pub(crate) async fn interactive(common: &CommonArgs) -> Result<Exit, CliError> {
    let settings = setup::settings(common)?;
    let renderer = Renderer::start(Mode::Human { stream_text: true });
    let store = setup::open_store(&settings.home)?;
    let callback = renderer.callback();
    // Input lines are shared with `clarify`, which reads its answers from
    // them while a turn runs (the loop below only reads between turns).
    let lines = Arc::new(tokio::sync::Mutex::new(
        BufReader::new(tokio::io::stdin()).lines(),
    ));
    let clarifier: Arc<dyn Clarifier> = Arc::new(LineClarifier::new(
        Arc::clone(&lines),
        Box::new(std::io::stderr()),
    ));
    let setup::StartedSession {
        session_id,
        mut agent,
        delegation,
        lease,
        ..
    } = setup::start_session_with(common, &settings, &store, true, Some(clarifier), |id| {
        // Every event of the session is stored with it (`sessions show --events`).
        EventSink::new(id, "root", callback).recorded(&store, id)
    })
    .await?;
    crate::logging::session_started(common, &settings, &session_id);
    // Background agents report with the next input instead of holding the prompt.
    agent.set_await_background(false);
    let events = agent.events().clone();
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
            line = async { lines.lock().await.next_line().await } => line,
            _ = tokio::signal::ctrl_c() => break Exit::Interrupted,
            () = terminate.cancelled() => break stop.exit(),
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
                compress(&mut agent).await;
                continue;
            }
            "/agents" => {
                show_agents(&delegation);
                continue;
            }
            _ => {}
        }
        let cancel = terminate.child_token();
        let watcher = {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    cancel.cancel();
                }
            })
        };
        let outcome = agent.run_turn(input.to_owned(), &cancel).await;
        watcher.abort();
        let _ = stdout.write_all(b"\n").await;
        match outcome.exit_reason {
            ExitReason::Interrupted => eprintln!("(interrupted)"),
            ExitReason::Error => eprintln!(
                "error: {}",
                outcome.error.as_deref().unwrap_or("the request failed")
            ),
            ExitReason::MaxIterations => eprintln!("(iteration limit reached)"),
            ExitReason::Budget => eprintln!("(token budget spent)"),
            ExitReason::Completed => {}
        }
    };
    // Running background agents stop (their commands are killed) but stay
    // journaled as running: `--resume` restarts them from their stored
    // conversations.
    let suspended = delegation.suspend(std::time::Duration::from_secs(5)).await;
    if suspended > 0 {
        eprintln!(
            "{suspended} background agent(s) still running were suspended; they continue when you resume this session"
        );
    }
    tracing::info!(session_id = %session_id, suspended, "interactive session ended");
    drop(agent);
    drop(events);
    // The delegation holds an event sink too; the renderer ends only when
    // every sink is gone (and the last one queues the events not yet stored).
    drop(delegation);
    let end_id = session_id.clone();
    let _ = store.call(move |s| s.end_session(&end_id, "exit")).await;
    lease.release().await;
    renderer.finish();
    eprintln!("session {session_id} (resume with `herald --resume {session_id}`)");
    Ok(exit)
}

/// `/compress`: compacts the conversation now (Ctrl-C stops the summary
/// request, leaving the conversation as it was) and says what happened.
async fn compress(agent: &mut herald_core::Agent) {
    let cancel = CancellationToken::new();
    let watcher = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    match agent.compress_now(&cancel).await {
        Ok(report) => eprintln!(
            "compacted: ~{} -> ~{} prompt tokens ({} messages summarised, {} tool outputs shortened)",
            report.tokens_before, report.tokens_after, report.summarised, report.shortened
        ),
        Err(err) => eprintln!("not compacted: {err}"),
    }
    watcher.abort();
}

/// `/agents`: one line per subagent of this session, with what it is doing.
fn show_agents(delegation: &herald_core::Delegation) {
    let agents = delegation.overview();
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
