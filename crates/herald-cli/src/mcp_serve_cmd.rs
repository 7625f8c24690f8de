//! `herald mcp serve`: herald's agent as an MCP server on stdin/stdout
//! (crate `herald-serve`, module `mcp`), for MCP clients such as Claude
//! Code, Codex or an IDE. Stdout carries only MCP messages: logs go to
//! `$HERALD_HOME/logs`, messages for a person to stderr.
//!
//! It runs on a multi-threaded runtime of its own and ends when the client
//! closes stdin, or on SIGINT, SIGTERM or SIGHUP (a second signal exits at
//! once); either way every session it opened is ended first.

use std::time::Duration;

use herald_serve::{McpConfig, McpServeError};
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::{CliError, Exit, setup, signals};

/// How long the runtime's leftover blocking work (a read of stdin that
/// cannot be cancelled) may delay the exit.
const RUNTIME_SHUTDOWN: Duration = Duration::from_secs(2);

/// Serves until the client disconnects or a stop signal arrives.
pub(crate) async fn serve(common: &CommonArgs) -> Result<Exit, CliError> {
    if common.resume.is_some() || common.continue_latest || common.fork.is_some() {
        return Err(CliError::usage(anyhow::anyhow!(
            "herald mcp serve opens a session per tool call: pass session_id to its run tool to continue one, instead of --resume, --continue or --fork"
        )));
    }
    let settings = setup::settings(common)?;
    let store = setup::open_store(&settings.home)?;
    tracing::info!(
        mode = %settings.permissions.mode,
        yolo = common.yolo,
        cwd = %settings.cwd.display(),
        "herald mcp serve: starting"
    );
    let config = McpConfig {
        settings,
        store,
        yolo: common.yolo,
    };
    let stop = CancellationToken::new();
    let _signal = signals::stop_on_signals(stop.clone());
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("herald-mcp".into())
        .spawn(move || {
            let outcome = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => {
                    let outcome = runtime.block_on(herald_serve::serve_mcp_stdio(
                        config,
                        stop.cancelled_owned(),
                    ));
                    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
                    outcome
                }
                Err(err) => Err(McpServeError::Failed(format!(
                    "cannot start the async runtime: {err}"
                ))),
            };
            let _ = done.send(outcome);
        })
        .map_err(|err| CliError::failed(anyhow::anyhow!("cannot start the MCP server: {err}")))?;
    match result.await {
        Ok(Ok(())) => Ok(Exit::Completed),
        Ok(Err(err @ McpServeError::Initialize(_))) => Err(CliError::usage(err)),
        Ok(Err(err)) => Err(CliError::failed(err)),
        Err(_) => Err(CliError::failed(anyhow::anyhow!(
            "the MCP server's thread ended unexpectedly"
        ))),
    }
}
