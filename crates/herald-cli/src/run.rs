//! `herald run`: one prompt, run to completion, final answer or events out.
//! A thin front end over the session runtime: it opens a one-shot session,
//! sends the turn and renders the events.

use std::io::{IsTerminal, Read};

use herald_core::ExitReason;
use herald_core::runtime::{Op, TurnResult};

use crate::args::{CommonArgs, RunArgs};
use crate::render::style::{self, Palette};
use crate::render::{self, Mode, Renderer, summary};
use crate::setup::SessionShape;
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
    let settings = setup::settings(common)?;
    let prompt = read_prompt(&args.prompt)?;
    let renderer = Renderer::start(if args.json { Mode::Json } else { Mode::Run });
    let store = setup::open_store(&settings.home)?;
    let shape = SessionShape {
        stream_deltas: args.json && args.stream,
        ask_user: false,
        one_shot: true,
    };
    let session = setup::open(common, &settings, &store, shape).await?;
    let session_id = session.id().to_owned();
    crate::logging::session_started(common, &settings, &session_id);
    // Everything since the opening, `session.started` first.
    let mut acts = renderer.follow(session.events(Some(session.opened_after())));
    // One-shot: Ctrl-C, SIGTERM or SIGHUP interrupts the turn, which stops
    // every subagent of the session; a second one exits at once.
    let stopper = tokio_util::sync::CancellationToken::new();
    let stop = signals::stop_on_signals(stopper.clone());
    {
        let session = session.clone();
        tokio::spawn(async move {
            stopper.cancelled().await;
            let _ = session.submit(Op::Interrupt {});
        });
    }
    let turn = session
        .submit(Op::UserTurn {
            text: prompt,
            images: Vec::new(),
        })
        .map_err(CliError::failed)?;
    // The session ends with its turn: run.completed is the last event, the
    // end is recorded and the lease released before the stream closes.
    let mut outcome = None;
    while let Some(event) = acts.recv().await {
        if event.submission_id.as_ref() == Some(&turn) {
            outcome = outcome.or_else(|| TurnResult::from_event(&event.kind));
        }
    }
    let outcome = outcome.ok_or_else(|| {
        CliError::failed(anyhow::anyhow!(
            "session {session_id} ended without finishing its turn"
        ))
    })?;
    let exit = match outcome.exit_reason {
        ExitReason::Completed | ExitReason::MaxIterations => Exit::Completed,
        ExitReason::Interrupted => stop.exit(),
        ExitReason::Error | ExitReason::Budget | ExitReason::Timeout => Exit::Failed,
    };
    drop(session);
    let report = renderer.finish();
    if !args.json {
        match exit {
            Exit::Completed => print_answer(&outcome.final_response, report.printed),
            Exit::Interrupted | Exit::Terminated | Exit::HungUp => {
                eprintln!("herald: interrupted (session {session_id})")
            }
            _ => {
                if let Some(error) = &outcome.error {
                    eprintln!("herald: error: {error}");
                }
            }
        }
        let palette = Palette {
            color: style::stderr_color(),
        };
        if outcome.exit_reason == ExitReason::MaxIterations {
            eprintln!(
                "{}",
                palette.red(&summary::iteration_limit_line(
                    &session_id,
                    settings.max_iterations
                ))
            );
        }
        eprintln!(
            "{}",
            palette.dim(&summary::summary_line(&session_id, &report.totals))
        );
    }
    Ok(exit)
}

/// Prints the final answer on stdout: as it is when stdout is not a
/// terminal (scripts read it), else as rendered markdown (colour unless
/// `NO_COLOR`), after a blank line when progress lines came before it.
fn print_answer(answer: &str, after_progress: bool) {
    let answer = answer.trim_end();
    let stdout = std::io::stdout();
    if stdout.is_terminal() {
        if after_progress {
            println!();
        }
        let width = render::terminal_width(&stdout).unwrap_or(80);
        print!("{}", render::markdown(answer, width, style::stdout_color()));
    } else {
        println!("{answer}");
    }
}
