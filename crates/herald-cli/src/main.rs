//! The `herald` binary: parses the command line, then hands off to a thin
//! front end (one-shot run, interactive loop, or a management command).

mod acp_cmd;
mod agent_defs_cmd;
mod agents_cmd;
mod approval_prompt;
mod args;
mod batch_cmd;
mod checkpoints_cmd;
mod config_cmd;
mod confirm;
mod context_cmd;
mod cron_cmd;
mod doctor;
mod elicit_prompt;
mod eval_cmd;
mod events_view;
mod heartbeat_cmd;
mod hooks_cmd;
mod id_lookup;
mod learnings_cmd;
mod logging;
mod mcp_cmd;
mod mcp_serve_cmd;
mod mcp_status;
mod memory_cmd;
mod permissions_cmd;
mod queue_cmd;
mod render;
mod repl;
mod run;
mod serve_cmd;
mod sessions_cmd;
mod setup;
mod signals;
mod skills_cmd;
mod tree;
mod tui_cmd;
mod usage_cmd;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command, CommonArgs, ConfigAction};

/// The exit statuses of `herald`, as documented in the README.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Completed = 0,
    Failed = 1,
    Usage = 2,
    /// Stopped by SIGINT (Ctrl-C).
    Interrupted = 130,
    /// Stopped by SIGTERM.
    Terminated = 143,
    /// Stopped by SIGHUP (the terminal went away).
    HungUp = 129,
}

/// A failure with the exit status it maps to.
#[derive(Debug)]
pub(crate) struct CliError {
    pub exit: Exit,
    pub error: anyhow::Error,
}

impl CliError {
    pub(crate) fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::Usage,
            error: error.into(),
        }
    }

    pub(crate) fn failed(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::Failed,
            error: error.into(),
        }
    }
}

/// Many concurrent subagents each hold a provider connection (and their
/// tools open files): lift the soft open-file limit to the hard one.
fn raise_open_file_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// mimalloc instead of the system allocator. A tree of thousands of agents
/// keeps many request and response buffers of different sizes alive at
/// once; glibc's malloc then spends much of the runtime thread's time
/// searching its free lists. Measured in `docs/BENCHMARKS.md`, "10,000
/// children".
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let common = cli.common().unwrap_or_else(|err| err.exit());
    raise_open_file_limit();
    let env = setup::environment();
    let (home, _) = setup::config_location(&common, &env);
    // Held until main returns: dropping it writes the queued log lines.
    let _logs = logging::init(&home, &env);
    let result = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(dispatch(common, cli.prompt, cli.command)),
        Err(err) => Err(CliError::failed(anyhow::anyhow!(
            "cannot start the async runtime: {err}"
        ))),
    };
    setup::close_stores();
    match result {
        Ok(exit) => ExitCode::from(exit as u8),
        Err(err) => {
            eprintln!("herald: error: {:#}", err.error);
            ExitCode::from(err.exit as u8)
        }
    }
}

/// Hands the parsed command line to its front end: `herald` (optionally
/// with a first prompt) is the interactive session.
async fn dispatch(
    common: CommonArgs,
    prompt: Option<String>,
    command: Option<Command>,
) -> Result<Exit, CliError> {
    match command {
        None => repl::interactive(&common, prompt).await,
        Some(Command::Run(run_args)) => run::run(&common, run_args).await,
        Some(Command::Batch { action }) => batch_cmd::batch(&common, action).await,
        Some(Command::Eval { action }) => eval_cmd::eval(&common, action).await,
        Some(Command::Worker(args)) => queue_cmd::worker(&common, *args).await,
        Some(Command::Doctor(args)) => doctor::doctor(&common, args).await,
        Some(Command::Sessions { action }) => sessions_cmd::sessions(&common, action).await,
        Some(Command::Agents { action }) => agents_cmd::agents(&common, action).await,
        Some(Command::Mcp { action }) => mcp_cmd::mcp(&common, action).await,
        Some(Command::Permissions { action }) => {
            permissions_cmd::permissions(&common, action).await
        }
        Some(Command::Config { action }) => match action {
            ConfigAction::Path => config_cmd::path(&common),
            ConfigAction::Show { json, .. } => config_cmd::show(&common, json),
        },
        Some(Command::Memory { action }) => memory_cmd::memory(&common, action).await,
        Some(Command::Skills { action }) => skills_cmd::skills(&common, action).await,
        Some(Command::Learnings { action }) => learnings_cmd::learnings(&common, action).await,
        Some(Command::Hooks { action }) => hooks_cmd::hooks(&common, action),
        Some(Command::Checkpoints { action }) => {
            checkpoints_cmd::checkpoints(&common, action).await
        }
        Some(Command::Rewind(args)) => checkpoints_cmd::rewind(&common, args).await,
        Some(Command::Serve(args)) => serve_cmd::serve(&common, args).await,
        Some(Command::Acp(_)) => acp_cmd::serve(&common).await,
        Some(Command::Usage(args)) => usage_cmd::usage(&common, args).await,
        Some(Command::Cron { action }) => cron_cmd::cron(&common, action).await,
        Some(Command::Daemon(args)) => cron_cmd::daemon(&common, args).await,
        Some(Command::Heartbeat { action }) => heartbeat_cmd::heartbeat(&common, action).await,
        Some(Command::Context(args)) => context_cmd::context(&common, args).await,
    }
}
