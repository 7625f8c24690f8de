//! `herald run`: one prompt, run to completion, final answer or events out.

use std::io::Read;
use std::time::Instant;

use herald_core::{EventSink, ExitReason};
use herald_protocol::{EventKind, RunStatus};
use tokio_util::sync::CancellationToken;

use crate::args::{CommonArgs, RunArgs};
use crate::render::{Mode, Renderer};
use crate::{CliError, Exit, setup};

/// Cancels `cancel` on the first Ctrl-C; a second one exits at once.
pub(crate) fn interrupt_on_ctrl_c(cancel: CancellationToken) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(Exit::Interrupted as i32);
            }
        }
    });
}

fn read_prompt(prompt: &str) -> Result<String, CliError> {
    let text = if prompt == "-" {
        let mut buf = String::new();
        std::io::stdin().read_to_string(&mut buf).map_err(|err| {
            CliError::usage(anyhow::anyhow!("cannot read the prompt from stdin: {err}"))
        })?;
        buf
    } else {
        prompt.to_owned()
    };
    if text.trim().is_empty() {
        return Err(CliError::usage(anyhow::anyhow!(
            "the prompt is empty; pass it as an argument or pipe it with `herald run -`"
        )));
    }
    Ok(text)
}

pub(crate) async fn run(common: &CommonArgs, args: RunArgs) -> Result<Exit, CliError> {
    let started = Instant::now();
    let settings = setup::settings(common)?;
    let prompt = read_prompt(&args.prompt)?;
    let renderer = Renderer::start(if args.json {
        Mode::Json
    } else {
        Mode::Human { stream_text: false }
    });
    let store = setup::open_store(&settings.home)?;
    let callback = renderer.callback();
    let setup::StartedSession {
        session_id,
        mut agent,
        cancel,
        delegation,
        ..
    } = setup::start_session(common, &settings, &store, args.json && args.stream, |id| {
        EventSink::new(id, "root", callback)
    })
    .await?;
    let events = agent.events().clone();
    // One-shot: Ctrl-C stops the turn and every subagent of the session.
    interrupt_on_ctrl_c(cancel.clone());
    let outcome = agent.run_turn(prompt, &cancel).await;
    let (status, exit) = match outcome.exit_reason {
        ExitReason::Completed | ExitReason::MaxIterations => {
            (RunStatus::Completed, Exit::Completed)
        }
        ExitReason::Interrupted => (RunStatus::Interrupted, Exit::Interrupted),
        ExitReason::Error | ExitReason::Budget => (RunStatus::Failed, Exit::Failed),
    };
    let usage = agent.usage();
    events.emit(EventKind::RunCompleted {
        status,
        exit_reason: outcome.exit_reason.as_str().to_owned(),
        final_response: outcome.final_response.clone(),
        iterations: outcome.iterations,
        usage: usage.totals(),
        cost_usd: agent.cost_usd(),
        duration_ms: started.elapsed().as_millis() as u64,
    });
    let end_id = session_id.clone();
    let reason = outcome.exit_reason.as_str();
    let _ = store.call(move |s| s.end_session(&end_id, reason)).await;
    // Background agents still running (after an interrupt or a failure) are
    // stopped and given a moment to record that they were interrupted.
    cancel.cancel();
    delegation.settle(std::time::Duration::from_secs(5)).await;
    drop(agent);
    drop(events);
    renderer.finish();
    if !args.json {
        match exit {
            Exit::Completed => println!("{}", outcome.final_response.trim_end()),
            Exit::Interrupted => eprintln!("herald: interrupted (session {session_id})"),
            _ => {
                if let Some(error) = &outcome.error {
                    eprintln!("herald: error: {error}");
                }
            }
        }
    }
    Ok(exit)
}
