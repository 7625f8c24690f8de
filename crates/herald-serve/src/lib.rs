//! `herald serve`: one process serving many concurrent herald sessions over
//! HTTP, built on the session runtime (`herald_core::runtime`).
//!
//! - OpenAI-compatible: `GET /v1/models`, `POST /v1/chat/completions` and
//!   `POST /v1/responses` (stream and not). Each request is one agent turn
//!   run with its whole tool loop; the answer is the final message.
//! - Native, under `/api`: sessions (create, list, search, get, delete),
//!   turns, the event stream as SSE with replay (`Last-Event-ID`),
//!   interrupt, clarify answers, subagents, and `GET /api/openapi.json`.
//!
//! Every route needs `Authorization: Bearer <token>` ([`resolve_token`]).
//! Turns run on their sessions' tasks, not in the request: a client that
//! disconnects does not stop its turn, which completes and is stored.

mod api;
mod error;
mod openai;
mod openapi;
mod routes;
mod server;
mod sse;
mod state;
mod token;

use std::future::Future;
use std::io::Write;

pub use error::ApiError;
pub use openai::{MODEL_ALIAS, SESSION_HEADER};
pub use server::{
    DEFAULT_BODY_LIMIT, DEFAULT_MAX_OPEN_SESSIONS, DEFAULT_MAX_TURNS, DEFAULT_PORT, ServeConfig,
    ServeError, Server,
};
pub use token::{TokenError, TokenSource, resolve_token, token_path};

/// Binds, prints `herald serve listening on http://HOST:PORT` (one line on
/// stdout, flushed), and serves until `shutdown` resolves (the CLI passes
/// SIGINT/SIGTERM); then ends every open session.
pub async fn serve(
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let server = Server::bind(config).await?;
    let addr = server.local_addr();
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "herald serve listening on http://{addr}")?;
        out.flush()?;
    }
    tracing::info!(%addr, "herald serve listening");
    server.run(shutdown).await
}

/// Resolves on the first SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        tracing::warn!("cannot install signal handlers; stop herald serve with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}
