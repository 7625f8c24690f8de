//! The client's file system and terminals as herald's tool backends: when
//! `initialize` offered `fs.readTextFile`/`fs.writeTextFile`, the file
//! tools read and write through `fs/read_text_file` and
//! `fs/write_text_file` (the editor's unsaved buffers, its undo); when it
//! offered `terminal`, foreground commands run in `terminal/create`d
//! terminals the user watches, shown in their tool call. What the client did
//! not offer stays herald's own.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    ClientCapabilities, CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest,
    ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest, SessionNotification,
    SessionUpdate, Terminal, TerminalOutputRequest, TerminalOutputResponse, ToolCallContent,
    ToolCallUpdate, ToolCallUpdateFields, WaitForTerminalExitRequest, WaitForTerminalExitResponse,
};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use herald_tools::{
    BackendError, CommandBackend, CommandEnd, CommandOutcome, CommandRequest, FileBackend,
    ToolBackends,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::rpc::{Outbox, Peer, PeerError};

/// The id of the session a backend works for: known once the runtime has
/// opened it, before any tool can run.
pub(crate) type SessionSlot = Arc<OnceLock<String>>;

/// Terminals the client runs for tool calls, by herald call id, so the
/// call's final update keeps showing its terminal.
#[derive(Debug, Default, Clone)]
pub(crate) struct CallTerminals(Arc<Mutex<HashMap<String, String>>>);

impl CallTerminals {
    fn insert(&self, call_id: &str, terminal_id: &str) {
        self.lock()
            .insert(call_id.to_owned(), terminal_id.to_owned());
    }

    /// The terminal call `call_id` ran in, if it ran in one (forgotten
    /// once asked).
    pub(crate) fn take(&self, call_id: &str) -> Option<String> {
        self.lock().remove(call_id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The tool backends of one ACP session, from what the client offered.
#[derive(Debug, Clone)]
pub(crate) struct ClientIo {
    pub session: SessionSlot,
    pub terminals: CallTerminals,
    pub backends: ToolBackends,
}

impl ClientIo {
    /// Backends for the capabilities `client` offered (none when it offered
    /// nothing: herald's own file system and shell).
    pub(crate) fn new(client: &ClientCapabilities, peer: &Arc<Peer>, outbox: &Outbox) -> Self {
        let session = SessionSlot::default();
        let terminals = CallTerminals::default();
        let files = (client.fs.read_text_file || client.fs.write_text_file).then(|| {
            Arc::new(ClientFiles {
                peer: Arc::clone(peer),
                session: Arc::clone(&session),
                read: client.fs.read_text_file,
                write: client.fs.write_text_file,
            }) as Arc<dyn FileBackend>
        });
        let commands = client.terminal.then(|| {
            Arc::new(ClientTerminals {
                peer: Arc::clone(peer),
                outbox: outbox.clone(),
                session: Arc::clone(&session),
                terminals: terminals.clone(),
            }) as Arc<dyn CommandBackend>
        });
        Self {
            session,
            terminals,
            backends: ToolBackends { files, commands },
        }
    }
}

fn session_id(slot: &SessionSlot) -> Result<String, BackendError> {
    slot.get()
        .cloned()
        .ok_or_else(|| BackendError("the session is still opening; try again".to_owned()))
}

fn peer_error(err: PeerError) -> BackendError {
    BackendError(err.to_string())
}

/// The client's file system (`fs/*`). A client that offered only one of
/// reading and writing gets the other done here, on the local disk.
#[derive(Debug)]
struct ClientFiles {
    peer: Arc<Peer>,
    session: SessionSlot,
    read: bool,
    write: bool,
}

impl FileBackend for ClientFiles {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, BackendError>> {
        async move {
            if !self.read {
                return tokio::fs::read_to_string(path)
                    .await
                    .map_err(|e| BackendError(e.to_string()));
            }
            let request = ReadTextFileRequest::new(session_id(&self.session)?, path);
            let answer: ReadTextFileResponse = self
                .peer
                .request("fs/read_text_file", request)
                .await
                .map_err(peer_error)?;
            Ok(answer.content)
        }
        .boxed()
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        content: &'a str,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        async move {
            if !self.write {
                if let Some(parent) = path.parent() {
                    tokio::fs::create_dir_all(parent)
                        .await
                        .map_err(|e| BackendError(e.to_string()))?;
                }
                return tokio::fs::write(path, content)
                    .await
                    .map_err(|e| BackendError(e.to_string()));
            }
            let request = agent_client_protocol_schema::v1::WriteTextFileRequest::new(
                session_id(&self.session)?,
                path,
                content,
            );
            let _: Value = self
                .peer
                .request("fs/write_text_file", request)
                .await
                .map_err(peer_error)?;
            Ok(())
        }
        .boxed()
    }
}

/// The client's terminals (`terminal/*`).
#[derive(Debug)]
struct ClientTerminals {
    peer: Arc<Peer>,
    outbox: Outbox,
    session: SessionSlot,
    terminals: CallTerminals,
}

impl CommandBackend for ClientTerminals {
    fn run<'a>(
        &'a self,
        request: CommandRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<CommandOutcome, BackendError>> {
        async move {
            let session = session_id(&self.session)?;
            let create = CreateTerminalRequest::new(session.clone(), "bash")
                .args(vec!["-c".to_owned(), request.command.clone()])
                .cwd(request.cwd.clone())
                .output_byte_limit(request.output_limit as u64);
            let created: CreateTerminalResponse = self
                .peer
                .request("terminal/create", create)
                .await
                .map_err(peer_error)?;
            let terminal = created.terminal_id.0.to_string();
            self.terminals.insert(&request.call_id, &terminal);
            self.outbox.notify(
                "session/update",
                SessionNotification::new(
                    session.clone(),
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        request.call_id.clone(),
                        ToolCallUpdateFields::new().content(vec![ToolCallContent::Terminal(
                            Terminal::new(terminal.clone()),
                        )]),
                    )),
                ),
            );
            let ran = self.watch(&session, &terminal, &request, cancel).await;
            // Released whatever happened, so the client frees it; the tool
            // call keeps showing it.
            let release = ReleaseTerminalRequest::new(session, terminal);
            if let Err(err) = self
                .peer
                .request::<Value>("terminal/release", release)
                .await
            {
                tracing::info!(%err, "terminal/release failed");
            }
            ran
        }
        .boxed()
    }
}

impl ClientTerminals {
    /// Waits for the command in `terminal` to end (killing it on timeout or
    /// cancel) and reads what it wrote.
    async fn watch(
        &self,
        session: &str,
        terminal: &str,
        request: &CommandRequest,
        cancel: &CancellationToken,
    ) -> Result<CommandOutcome, BackendError> {
        let wait = self.peer.request::<WaitForTerminalExitResponse>(
            "terminal/wait_for_exit",
            WaitForTerminalExitRequest::new(session.to_owned(), terminal.to_owned()),
        );
        let end = tokio::select! {
            waited = wait => {
                let status = waited.map_err(peer_error)?.exit_status;
                CommandEnd::Exited(status.exit_code.and_then(|c| i32::try_from(c).ok()))
            }
            () = tokio::time::sleep(Duration::from_secs(request.timeout_secs)) => CommandEnd::TimedOut,
            () = cancel.cancelled() => CommandEnd::Cancelled,
        };
        if !matches!(end, CommandEnd::Exited(_)) {
            let kill = KillTerminalRequest::new(session.to_owned(), terminal.to_owned());
            if let Err(err) = self.peer.request::<Value>("terminal/kill", kill).await {
                tracing::info!(%err, "terminal/kill failed");
            }
        }
        let output: TerminalOutputResponse = self
            .peer
            .request(
                "terminal/output",
                TerminalOutputRequest::new(session.to_owned(), terminal.to_owned()),
            )
            .await
            .map_err(peer_error)?;
        Ok(CommandOutcome {
            output: output.output,
            truncated: output.truncated,
            end,
        })
    }
}
