//! `herald acp`: herald as an Agent Client Protocol agent on stdin/stdout
//! (crate `herald-acp`), for editors such as Zed and JetBrains IDEs. Stdout
//! carries only ACP messages: logs go to `$HERALD_HOME/logs`, messages for
//! a person to stderr.
//!
//! It runs on a multi-threaded runtime of its own and ends when the client
//! closes stdin, or on SIGINT, SIGTERM or SIGHUP (a second signal exits at
//! once); either way every session it opened is ended first.

use std::sync::Arc;
use std::time::Duration;

use herald_acp::{AcpConfig, AcpError};
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::{CliError, Exit, setup, signals};

/// How long the runtime's leftover blocking work (a read of stdin that
/// cannot be cancelled) may delay the exit.
const RUNTIME_SHUTDOWN: Duration = Duration::from_secs(2);

/// Serves one ACP client until it disconnects or a stop signal arrives.
pub(crate) async fn serve(common: &CommonArgs) -> Result<Exit, CliError> {
    if common.resume.is_some() || common.continue_latest || common.fork.is_some() {
        return Err(CliError::usage(anyhow::anyhow!(
            "herald acp opens the sessions the editor asks for (session/new, session/load, session/resume) instead of --resume, --continue or --fork"
        )));
    }
    // Checked once at start, so a bad configuration fails here and not at
    // the editor's first session.
    let settings = setup::settings(common)?;
    let store = setup::open_store(&settings.home)?;
    tracing::info!(
        mode = %settings.permissions.mode,
        yolo = common.yolo,
        "herald acp: starting"
    );
    let base = common.clone();
    let config = AcpConfig {
        store,
        settings_for: Arc::new(move |cwd| {
            let mut common = base.clone();
            common.cwd = Some(cwd.to_owned());
            setup::settings(&common).map_err(|err| format!("{:#}", err.error))
        }),
        yolo: common.yolo,
    };
    let stop = CancellationToken::new();
    let _signal = signals::stop_on_signals(stop.clone());
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("herald-acp".into())
        .spawn(move || {
            let outcome = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => {
                    let outcome =
                        runtime.block_on(herald_acp::serve_stdio(config, stop.cancelled_owned()));
                    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
                    outcome
                }
                Err(err) => Err(AcpError::Failed(format!(
                    "cannot start the async runtime: {err}"
                ))),
            };
            let _ = done.send(outcome);
        })
        .map_err(|err| CliError::failed(anyhow::anyhow!("cannot start the ACP agent: {err}")))?;
    match result.await {
        Ok(Ok(())) => Ok(Exit::Completed),
        Ok(Err(err)) => Err(CliError::failed(err)),
        Err(_) => Err(CliError::failed(anyhow::anyhow!(
            "the ACP agent's thread ended unexpectedly"
        ))),
    }
}
