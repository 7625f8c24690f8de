//! `herald run`: one prompt, run to completion, final answer or events out.

use std::io::Read;
use std::time::Instant;

use herald_core::{EventSink, ExitReason};
use herald_protocol::{EventKind, RunStatus};

use crate::args::{CommonArgs, RunArgs};
use crate::render::{Mode, Renderer};
use crate::{CliError, Exit, setup, signals};

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
        lease,
    } = setup::start_session(common, &settings, &store, args.json && args.stream, |id| {
        // Every event of the session is stored with it (`sessions show --events`).
        EventSink::new(id, "root", callback).recorded(&store, id)
    })
    .await?;
    crate::logging::session_started(common, &settings, &session_id);
    let events = agent.events().clone();
    // One-shot: Ctrl-C, SIGTERM or SIGHUP stops the turn and every subagent
    // of the session; a second one exits at once.
    let stop = signals::stop_on_signals(cancel.clone());
    let outcome = agent.run_turn(prompt, &cancel).await;
    let (status, exit) = match outcome.exit_reason {
        ExitReason::Completed | ExitReason::MaxIterations => {
            (RunStatus::Completed, Exit::Completed)
        }
        ExitReason::Interrupted => (RunStatus::Interrupted, stop.exit()),
        ExitReason::Error | ExitReason::Budget => (RunStatus::Failed, Exit::Failed),
    };
    // Background agents still running (after an interrupt, a failure or the
    // iteration limit) are stopped and given a moment to record that they
    // were interrupted, before run.completed: it is the last event.
    cancel.cancel();
    delegation.settle(std::time::Duration::from_secs(5)).await;
    if let Some(error) = &outcome.error {
        tracing::error!(session_id = %session_id, reason = outcome.exit_reason.as_str(), "run failed: {error}");
    }
    tracing::info!(
        session_id = %session_id,
        reason = outcome.exit_reason.as_str(),
        iterations = outcome.iterations,
        duration_ms = started.elapsed().as_millis() as u64,
        "run finished"
    );
    let usage = agent.usage();
    // Closes the output: whatever a background agent that did not stop in
    // time emits later is neither printed nor stored.
    events.finish(EventKind::RunCompleted {
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
    // Awaited: the store thread has also written every queued event by then.
    match store.call(move |s| s.end_session(&end_id, reason)).await {
        Ok(Ok(_)) => {}
        Ok(Err(err)) => {
            tracing::warn!(session_id = %session_id, "could not record the end of the session: {err}")
        }
        Err(err) => tracing::error!(session_id = %session_id, "{err}"),
    }
    lease.release().await;
    drop(agent);
    drop(events);
    renderer.finish();
    if !args.json {
        match exit {
            Exit::Completed => println!("{}", outcome.final_response.trim_end()),
            Exit::Interrupted | Exit::Terminated | Exit::HungUp => {
                eprintln!("herald: interrupted (session {session_id})")
            }
            _ => {
                if let Some(error) = &outcome.error {
                    eprintln!("herald: error: {error}");
                }
            }
        }
    }
    Ok(exit)
}
