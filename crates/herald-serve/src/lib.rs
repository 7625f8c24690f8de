//! `herald serve`: one process serving many concurrent herald sessions over
//! HTTP, built on the session runtime (`herald_core::runtime`).
//!
//! - OpenAI-compatible: `GET /v1/models`, `POST /v1/chat/completions` and
//!   `POST /v1/responses` (stream and not). Each request is one agent turn
//!   run with its whole tool loop; the answer is the final message.
//! - Native, under `/api`: sessions (create, list, search, get, delete),
//!   turns, the event stream as SSE with replay (`Last-Event-ID`),
//!   interrupt, clarify answers, subagents, and `GET /api/openapi.json`.
//! - MCP, at `/mcp` (streamable HTTP): herald's agent as MCP tools (`run`,
//!   `delegate`, `agent_status`, `agent_result`, `session_search`); the same
//!   server runs over stdio as `herald mcp serve` ([`serve_mcp_stdio`]).
//!
//! Every route needs `Authorization: Bearer <token>` ([`resolve_token`]).
//! Turns run on their sessions' tasks, not in the request: a client that
//! disconnects does not stop its turn, which completes and is stored.
//!
//! Behaviour worth knowing:
//! - Sessions: a request naming a stored session that is not open here
//!   opens it (resume); one held by another herald process is refused
//!   (409, the lease). Opened sessions stay open until deleted, the server
//!   stops, or — beyond `max_open_sessions` — they are the least recently
//!   used idle one (they reopen when named again). Opening a session for
//!   its event stream takes it over like any other use.
//! - Chat Completions and Responses open their sessions without a person
//!   to ask (`clarify` tells the model to decide); sessions created with
//!   `POST /api/sessions` ask by default (`clarify.requested` events,
//!   answered with `POST /api/sessions/{id}/clarify/{request_id}`), and a
//!   chat turn on such a session waits for that answer.
//! - Streaming answers carry the text of every reply of the turn as it
//!   streams: narration before a tool call (if the model wrote any), a
//!   blank line, then the final answer; the non-streaming answer is the
//!   final message alone.

mod api;
mod browser;
mod doctor;
mod error;
mod mcp;
mod openai;
mod openapi;
mod routes;
mod server;
mod sse;
mod state;
mod tls;
mod token;
mod web;

use std::future::Future;
use std::io::Write;

pub use doctor::{CheckStatus, Doctor, DoctorCheck, DoctorReport};
pub use error::ApiError;
pub use mcp::{McpConfig, McpServeError, serve_mcp_stdio};
pub use openai::{MODEL_ALIAS, SESSION_HEADER};
pub use server::{
    DEFAULT_BODY_LIMIT, DEFAULT_MAX_OPEN_SESSIONS, DEFAULT_MAX_TURNS, DEFAULT_PORT, ServeConfig,
    ServeError, Server,
};
pub use tls::{TlsError, TlsFiles};
pub use token::{TokenError, TokenSource, resolve_token, token_path};

/// Binds, prints `herald serve listening on http://HOST:PORT` and the
/// browser login URL (two lines on stdout, one write, flushed), and serves until `shutdown` resolves (the CLI passes
/// SIGINT/SIGTERM); then ends every open session.
pub async fn serve(
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let open_browser = config.open_browser;
    let tls = config.tls.is_some();
    let server = Server::bind(config).await?;
    let addr = server.local_addr();
    let login = server.login_url();
    {
        // One write: a reader that takes only the first line and closes the
        // pipe must not make a second write fail.
        let mut text = format!("herald serve listening on {}\n", server.url());
        if let Some(login) = &login {
            text.push_str(&format!(
                "herald serve: open {login} to log a browser in (the code works once; then log in with the token)\n"
            ));
        }
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    if !addr.ip().is_loopback() && !tls {
        eprintln!(
            "herald serve: warning: {addr} is reachable from other machines over plain HTTP: the token and the browser's login cookie cross the network unencrypted; give --tls-cert and --tls-key (or put a TLS proxy in front of it)"
        );
    }
    if open_browser && let Some(login) = &login {
        browser::open(login);
    }
    tracing::info!(%addr, tls, "herald serve listening");
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
