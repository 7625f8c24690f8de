//! `herald` on a terminal: the TUI (crate `herald-tui`) over a session
//! opened here. This file only translates: it knows how to open sessions
//! from the command line's options (settings, store, approvals), and the
//! TUI asks it for another one on `/new` or `/resume`.

use std::sync::Arc;

use herald_core::StoreHandle;
use herald_core::runtime::OpenMode;
use herald_tui::{BoxFuture, Opened, SessionHost, TuiSetup};
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::setup::SessionShape;
use crate::{CliError, Exit, setup, signals};

/// Opens sessions as `herald` would with these options.
struct CliHost {
    common: CommonArgs,
    store: StoreHandle,
}

impl CliHost {
    /// The options with `mode` and `model` in place of what the command
    /// line said.
    fn options(&self, mode: &OpenMode, model: Option<String>) -> CommonArgs {
        let mut common = self.common.clone();
        common.resume = None;
        common.fork = None;
        common.continue_latest = false;
        match mode {
            OpenMode::New => {}
            OpenMode::Resume(id) => common.resume = Some(id.clone()),
            OpenMode::Fork(id) => common.fork = Some(id.clone()),
            OpenMode::ForkAt(id, turn) => common.fork = Some(format!("{id}@{turn}")),
            OpenMode::ContinueLatest => common.continue_latest = true,
        }
        if model.is_some() {
            common.model = model;
        }
        common
    }

    async fn open_session(&self, common: &CommonArgs) -> Result<Opened, CliError> {
        let settings = setup::settings(common)?;
        let shape = SessionShape {
            stream_deltas: true,
            ask_user: true,
            one_shot: false,
        };
        let session = setup::open(common, &settings, &self.store, shape).await?;
        crate::logging::session_started(common, &settings, session.id());
        Ok(Opened {
            events: session.events(Some(session.opened_after())),
            session,
            settings,
        })
    }
}

impl SessionHost for CliHost {
    fn open(&self, mode: OpenMode, model: Option<String>) -> BoxFuture<'_, Result<Opened, String>> {
        Box::pin(async move {
            let common = self.options(&mode, model);
            self.open_session(&common)
                .await
                .map_err(|err| format!("{:#}", err.error))
        })
    }
}

/// Runs the TUI until the user leaves, then says how to come back.
pub(crate) async fn interactive(
    common: &CommonArgs,
    first_prompt: Option<String>,
) -> Result<Exit, CliError> {
    let settings = setup::settings(common)?;
    let store = setup::open_store(&settings.home)?;
    let host = Arc::new(CliHost {
        common: common.clone(),
        store: store.clone(),
    });
    // The first session opens before the terminal changes mode, so its
    // errors (a bad flag, a session in use) print as usual.
    let opened = host.open_session(common).await?;
    // SIGTERM or SIGHUP: leave as on Ctrl+D (the terminal given back, the
    // session ended); a second one exits at once.
    let terminate = CancellationToken::new();
    let signal = signals::stop_on_termination(terminate.clone());
    let outcome = herald_tui::run(TuiSetup {
        host,
        store,
        opened,
        first_prompt,
        stop: terminate,
    })
    .await
    .map_err(CliError::failed)?;
    if outcome.suspended > 0 {
        eprintln!(
            "{} background agent(s) still running were suspended; they continue when you resume this session",
            outcome.suspended
        );
    }
    if outcome.used {
        eprintln!(
            "session {id} · resume with: herald --resume {id}",
            id = outcome.session_id
        );
    }
    Ok(match signal.received() {
        Some(_) => signal.exit(),
        None => Exit::Completed,
    })
}
