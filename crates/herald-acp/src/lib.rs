//! `herald acp`: herald as an [Agent Client Protocol](https://agentclientprotocol.com)
//! agent on stdin/stdout, for editors (Zed, JetBrains IDEs, Neovim and VS
//! Code through their plugins). A front end like the others: it opens
//! sessions through the session runtime, submits [`herald_protocol::Op`]s
//! and turns the runtime's events into ACP `session/update`s.
//!
//! The wire types are those of `agent-client-protocol-schema` (schema 1.20,
//! where subagent sessions are stable); the JSON-RPC loop is herald's own
//! ([`rpc`]), see `docs/acp.md` for why.

// A refused request is answered with the protocol's error object, which is
// large (code, message, data); it is built once per refusal, not in a loop.
#![allow(clippy::result_large_err)]

mod client_io;
mod commands;
mod history;
mod rpc;
mod server;
mod session;
mod tools;
mod translate;

use std::path::Path;
use std::sync::Arc;

use herald_core::{Settings, StoreHandle};

pub use server::serve;

/// Builds the settings of a session whose working directory is the given
/// path (configuration, project files and flags resolved for it).
pub type SettingsFor = Arc<dyn Fn(&Path) -> Result<Settings, String> + Send + Sync>;

/// What `herald acp` serves with.
#[derive(Clone)]
pub struct AcpConfig {
    /// The store every session of the connection is kept in.
    pub store: StoreHandle,
    /// The settings for a session in a directory the client names.
    pub settings_for: SettingsFor,
    /// `--yolo`: what the policy asks about runs without asking the client.
    pub yolo: bool,
}

impl std::fmt::Debug for AcpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpConfig")
            .field("yolo", &self.yolo)
            .finish()
    }
}

/// Why serving stopped other than by the client closing the connection.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The server could not start.
    #[error("{0}")]
    Failed(String),
}

/// Serves the client on this process's stdin and stdout until it closes
/// stdin or `stop` resolves.
pub async fn serve_stdio(
    config: AcpConfig,
    stop: impl Future<Output = ()>,
) -> Result<(), AcpError> {
    serve(config, tokio::io::stdin(), tokio::io::stdout(), stop).await
}
