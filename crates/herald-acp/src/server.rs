//! The agent side of the connection: reads requests line by line, answers
//! each on a task of its own (a prompt runs while `session/cancel` and
//! permission answers keep arriving), and keeps the sessions it opened.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AgentCapabilities, AuthenticateResponse, AvailableCommandsUpdate, CancelNotification,
    ClientCapabilities, ContentBlock, EmbeddedResourceResource, Error as RpcError, Implementation,
    InitializeRequest, InitializeResponse, ListSessionsRequest, ListSessionsResponse,
    LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse, ResumeSessionRequest,
    ResumeSessionResponse, SessionCapabilities, SessionInfo, SessionListCapabilities,
    SessionResumeCapabilities, SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use herald_core::runtime::{
    Catalog, ClarifyPolicy, Op, OpenMode, RuntimeError, Session, SessionOptions, Subscription,
    open_session,
};
use herald_core::{ApprovalMode, LeaseWait, Settings};
use herald_protocol::{ExitReason, RunStatus};
use herald_store::{ListFilter, SessionSource};
use herald_tools::ToolBackends;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};

use crate::client_io::ClientIo;
use crate::commands::{self, Command};
use crate::history;
use crate::rpc::{Incoming, Outbox, Peer, parse_line};
use crate::session::{AcpSession, MODES, mode_state};
use crate::translate::Translator;
use crate::{AcpConfig, AcpError};

/// Sessions listed per `session/list` page.
const PAGE: usize = 100;

/// The state of one connection.
struct Server {
    config: AcpConfig,
    outbox: Outbox,
    peer: Arc<Peer>,
    client: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    catalog: Catalog,
}

/// Serves one client on `input`/`output` until it closes `input` or `stop`
/// resolves; every session opened is ended before it returns.
pub async fn serve<R, W>(
    config: AcpConfig,
    input: R,
    output: W,
    stop: impl Future<Output = ()>,
) -> Result<(), AcpError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, writer) = Outbox::spawn(output);
    let server = Arc::new(Server {
        catalog: Catalog::new(config.store.clone()),
        config,
        peer: Arc::new(Peer::new(outbox.clone())),
        outbox,
        client: Mutex::new(ClientCapabilities::new()),
        sessions: Mutex::new(HashMap::new()),
    });
    let mut lines = BufReader::new(input).lines();
    tokio::pin!(stop);
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            () = &mut stop => break,
        };
        match line {
            Ok(Some(line)) if line.trim().is_empty() => {}
            Ok(Some(line)) => Arc::clone(&server).receive(&line),
            Ok(None) => break,
            Err(err) => {
                tracing::warn!(%err, "cannot read stdin; ending");
                break;
            }
        }
    }
    server.peer.close();
    let sessions: Vec<Arc<AcpSession>> = lock(&server.sessions).drain().map(|(_, s)| s).collect();
    for session in sessions {
        session.close().await;
    }
    drop(server);
    let _ = writer.await;
    Ok(())
}

impl Server {
    fn receive(self: Arc<Self>, line: &str) {
        match parse_line(line) {
            Err(bad) => {
                tracing::info!(code = i32::from(bad.error.code), "malformed message");
                self.outbox.respond(bad.id, Err(bad.error));
            }
            Ok(Incoming::Response { id, outcome }) => self.peer.resolve(&id, outcome),
            Ok(Incoming::Notification { method, params }) => {
                tokio::spawn(async move { self.notification(&method, params).await });
            }
            Ok(Incoming::Request { id, method, params }) => {
                tokio::spawn(async move {
                    let outcome = self.request(&method, params).await;
                    if let Err(error) = &outcome {
                        tracing::info!(method, code = i32::from(error.code), %error, "request refused");
                    }
                    self.outbox.respond(id, outcome);
                });
            }
        }
    }

    async fn request(self: &Arc<Self>, method: &str, params: Value) -> Result<Value, RpcError> {
        tracing::info!(method, "request");
        match method {
            "initialize" => answer(self.initialize(decode(params)?)),
            "authenticate" => answer(Ok(AuthenticateResponse::new())),
            "session/new" => answer(self.new_session(decode(params)?).await),
            "session/load" => answer(self.load(decode(params)?).await),
            "session/resume" => answer(self.resume(decode(params)?).await),
            "session/list" => answer(self.list(decode(params)?).await),
            "session/prompt" => answer(self.prompt(decode(params)?).await),
            "session/set_mode" => answer(self.set_mode(decode(params)?).await),
            _ => Err(RpcError::method_not_found().data(json!(format!(
                "herald does not implement {method}; see the capabilities `initialize` answered"
            )))),
        }
    }

    async fn notification(self: &Arc<Self>, method: &str, params: Value) {
        match method {
            "session/cancel" => match decode::<CancelNotification>(params) {
                Ok(cancel) => self.cancel(&cancel.session_id.0).await,
                Err(err) => tracing::warn!(%err, "malformed session/cancel; ignored"),
            },
            other => tracing::info!(method = other, "unknown notification; ignored"),
        }
    }

    fn initialize(&self, request: InitializeRequest) -> Result<InitializeResponse, RpcError> {
        *lock(&self.client) = request.client_capabilities;
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                PromptCapabilities::new()
                    .image(self.takes_images())
                    .audio(false)
                    .embedded_context(true),
            )
            .mcp_capabilities(McpCapabilities::new().http(true).sse(false))
            .session_capabilities(
                SessionCapabilities::new()
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new()),
            );
        Ok(InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(
                Implementation::new("herald", env!("CARGO_PKG_VERSION")).title("herald".to_owned()),
            ))
    }

    /// Whether prompts may carry images: the configured model takes them
    /// (`images`, true by default). A session whose project configures a
    /// text-only model refuses an image prompt with an error that says so.
    fn takes_images(&self) -> bool {
        std::env::current_dir()
            .ok()
            .and_then(|cwd| (self.config.settings_for)(&cwd).ok())
            .is_some_and(|settings| settings.images)
    }

    /// The settings of a session in `cwd` with the client's MCP servers.
    fn settings(&self, cwd: &Path, servers: &[McpServer]) -> Result<Settings, RpcError> {
        if !cwd.is_absolute() {
            return Err(invalid(format!(
                "cwd must be an absolute path, not {}",
                cwd.display()
            )));
        }
        if !cwd.is_dir() {
            return Err(invalid(format!("cwd {} is not a directory", cwd.display())));
        }
        let mut settings = (self.config.settings_for)(cwd).map_err(invalid)?;
        for server in servers {
            let (name, config) = mcp_server(server)?;
            config.validate(&name).map_err(|e| invalid(e.to_string()))?;
            settings.mcp_servers.insert(name, config);
        }
        Ok(settings)
    }

    /// Opens a runtime session whose tools use what the client offered
    /// (`io`), and tells `io` the session's id.
    async fn open(
        &self,
        settings: Settings,
        open: OpenMode,
        io: &ClientIo,
    ) -> Result<(Session, Subscription), RpcError> {
        let (session, events) = open_runtime(&self.config, settings, open, io.backends.clone())
            .await
            .map_err(runtime_error)?;
        let _ = io.session.set(session.id().to_owned());
        Ok((session, events))
    }

    /// The tool backends of a new ACP session, from the client's offer.
    fn client_io(&self) -> ClientIo {
        ClientIo::new(&lock(&self.client), &self.peer, &self.outbox)
    }

    fn translator(&self, session: &Session, settings: &Settings, io: &ClientIo) -> Translator {
        let subagents = lock(&self.client).subagents.is_some();
        let window = herald_core::compress::context_window(
            &settings.model,
            settings.compression.context_window,
        );
        Translator::new(session.id(), settings.cwd.clone(), subagents, window)
            .with_terminals(io.terminals.clone())
    }

    fn keep(
        &self,
        session: Session,
        events: Subscription,
        settings: Settings,
        io: ClientIo,
    ) -> Arc<AcpSession> {
        let translator = self.translator(&session, &settings, &io);
        let acp = AcpSession::start(
            session,
            events,
            settings,
            io,
            translator,
            self.outbox.clone(),
            Arc::clone(&self.peer),
        );
        lock(&self.sessions).insert(acp.id.clone(), Arc::clone(&acp));
        acp
    }

    async fn new_session(
        self: &Arc<Self>,
        request: NewSessionRequest,
    ) -> Result<NewSessionResponse, RpcError> {
        let settings = self.settings(&request.cwd, &request.mcp_servers)?;
        let io = self.client_io();
        let (session, events) = self.open(settings.clone(), OpenMode::New, &io).await?;
        let acp = self.keep(session, events, settings, io);
        self.announce_commands(&acp);
        Ok(NewSessionResponse::new(acp.id.clone()).modes(mode_state(&acp.mode())))
    }

    /// Opens stored session `id` here, or finds it open already.
    async fn reopen(
        &self,
        id: &str,
        cwd: &Path,
        servers: &[McpServer],
    ) -> Result<Arc<AcpSession>, RpcError> {
        if let Some(open) = lock(&self.sessions).get(id).cloned() {
            return Ok(open);
        }
        let settings = self.settings(cwd, servers)?;
        let io = self.client_io();
        let (session, events) = self
            .open(settings.clone(), OpenMode::Resume(id.to_owned()), &io)
            .await?;
        Ok(self.keep(session, events, settings, io))
    }

    async fn load(
        self: &Arc<Self>,
        request: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, RpcError> {
        let id = request.session_id.0.to_string();
        let acp = self.reopen(&id, &request.cwd, &request.mcp_servers).await?;
        let messages = self.catalog.transcript(&id).await.map_err(runtime_error)?;
        let messages: Vec<_> = messages.into_iter().map(|m| m.message).collect();
        for update in history::replay(&messages, &acp.cwd) {
            acp.send(&id, update);
        }
        self.announce_commands(&acp);
        Ok(LoadSessionResponse::new().modes(mode_state(&acp.mode())))
    }

    async fn resume(
        self: &Arc<Self>,
        request: ResumeSessionRequest,
    ) -> Result<ResumeSessionResponse, RpcError> {
        let id = request.session_id.0.to_string();
        let acp = self.reopen(&id, &request.cwd, &request.mcp_servers).await?;
        self.announce_commands(&acp);
        Ok(ResumeSessionResponse::new().modes(mode_state(&acp.mode())))
    }

    async fn list(&self, request: ListSessionsRequest) -> Result<ListSessionsResponse, RpcError> {
        let skip = match &request.cursor {
            Some(cursor) => cursor
                .parse::<usize>()
                .map_err(|_| invalid(format!("unknown cursor {cursor:?}; pass back nextCursor")))?,
            None => 0,
        };
        let filter = ListFilter {
            cwd: request.cwd.as_ref().map(|c| c.display().to_string()),
            parent: None,
            limit: skip + PAGE + 1,
            include_subagents: false,
            ..ListFilter::default()
        };
        let found = self.catalog.sessions(filter).await.map_err(runtime_error)?;
        let more = found.len() > skip + PAGE;
        let sessions = found
            .into_iter()
            .skip(skip)
            .take(PAGE)
            .map(|s| {
                SessionInfo::new(s.id, PathBuf::from(s.cwd))
                    .title(s.title)
                    .updated_at(rfc3339(s.last_active_at))
            })
            .collect();
        Ok(
            ListSessionsResponse::new(sessions)
                .next_cursor(more.then(|| (skip + PAGE).to_string())),
        )
    }

    async fn prompt(&self, request: PromptRequest) -> Result<PromptResponse, RpcError> {
        let id = request.session_id.0.to_string();
        let acp = self.find(&id)?;
        let (text, images) = prompt_input(&request.prompt)?;
        let home = acp.settings.home.clone();
        let cwd = acp.cwd.clone();
        let names: Vec<String> = if text.trim_start().starts_with('/') {
            let (home, cwd) = (home.clone(), cwd.clone());
            tokio::task::spawn_blocking(move || commands::skills(&home, &cwd))
                .await
                .unwrap_or_default()
                .into_iter()
                .map(|(name, _)| name)
                .collect()
        } else {
            Vec::new()
        };
        let text = match commands::parse(&text, &names) {
            Some(Command::Compact) => {
                let session = acp.session().await;
                let report = session.compact().await.map_err(runtime_error)?;
                acp.send(
                    &id,
                    agent_client_protocol_schema::v1::SessionUpdate::AgentMessageChunk(
                        crate::translate::chunk(&format!(
                            "Compacted the conversation: about {} tokens before, {} after.",
                            report.tokens_before, report.tokens_after
                        )),
                    ),
                );
                return Ok(PromptResponse::new(StopReason::EndTurn));
            }
            Some(Command::Skill { name, request }) => tokio::task::spawn_blocking(move || {
                commands::skill_prompt(&home, &cwd, &name, &request)
            })
            .await
            .map_err(|e| internal(e.to_string()))?
            .map_err(invalid)?,
            None => text,
        };
        let outcome = acp.run_turn(text, images).await.map_err(invalid)?;
        let result = outcome.map_err(internal)?;
        let stop = match (result.status, result.exit_reason) {
            (RunStatus::Interrupted, _) => StopReason::Cancelled,
            (RunStatus::Failed, _) => {
                return Err(internal(result.error.unwrap_or_else(|| {
                    "the turn failed; see $HERALD_HOME/logs".to_owned()
                })));
            }
            (_, ExitReason::MaxIterations) => StopReason::MaxTurnRequests,
            (_, ExitReason::Budget) => StopReason::MaxTokens,
            _ => StopReason::EndTurn,
        };
        Ok(PromptResponse::new(stop))
    }

    async fn set_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, RpcError> {
        let mode = request.mode_id.0.to_string();
        if !MODES.iter().any(|(id, _, _)| *id == mode) {
            return Err(invalid(format!(
                "unknown mode {mode:?}; use read-only, workspace-write or full-access"
            )));
        }
        let acp = self.find(&request.session_id.0)?;
        let config = self.config.clone();
        let id = acp.id.clone();
        let backends = acp.io.backends.clone();
        acp.set_mode(&mode, async move |settings: Settings| {
            open_runtime(&config, settings, OpenMode::Resume(id), backends)
                .await
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(invalid)?;
        Ok(SetSessionModeResponse::new())
    }

    async fn cancel(&self, session_id: &str) {
        let sessions: Vec<Arc<AcpSession>> = lock(&self.sessions).values().cloned().collect();
        if let Some(acp) = sessions.iter().find(|s| s.id == session_id) {
            let _ = acp.session().await.submit(Op::Interrupt {});
            return;
        }
        for acp in sessions {
            if acp.has_child_session(session_id)
                && let Some(agent_id) = acp.agent_of_session(session_id)
            {
                if let Err(err) = acp.session().await.submit(Op::CancelAgent { agent_id }) {
                    tracing::info!(%err, "cancel of a subagent not used");
                }
                return;
            }
        }
        tracing::info!(session_id, "cancel for no open session; ignored");
    }

    fn find(&self, id: &str) -> Result<Arc<AcpSession>, RpcError> {
        lock(&self.sessions).get(id).cloned().ok_or_else(|| {
            RpcError::resource_not_found(None).data(json!(format!(
                "no open session {id}; open it with session/new, session/load or session/resume"
            )))
        })
    }

    /// Sends the session's slash commands (herald's and its skills).
    fn announce_commands(&self, acp: &Arc<AcpSession>) {
        let acp = Arc::clone(acp);
        tokio::spawn(async move {
            let (home, cwd) = (acp.settings.home.clone(), acp.cwd.clone());
            let skills = tokio::task::spawn_blocking(move || commands::skills(&home, &cwd))
                .await
                .unwrap_or_default();
            acp.send(
                &acp.id,
                agent_client_protocol_schema::v1::SessionUpdate::AvailableCommandsUpdate(
                    AvailableCommandsUpdate::new(commands::available(&skills)),
                ),
            );
        });
    }
}

/// Opens a session for an ACP client: it can answer approvals (unless
/// `--yolo`), not `clarify` questions; text streams; the root agent's file
/// tools and commands use the client's file system and terminals when it
/// offered them (`backends`).
async fn open_runtime(
    config: &AcpConfig,
    settings: Settings,
    open: OpenMode,
    backends: ToolBackends,
) -> Result<(Session, Subscription), RuntimeError> {
    let mut options = SessionOptions::new(settings, config.store.clone());
    options.open = open;
    options.backends = backends;
    options.lease_wait = LeaseWait::No;
    options.source = SessionSource::Api;
    options.stream_deltas = true;
    options.clarify = ClarifyPolicy::Unavailable;
    options.approvals = ApprovalMode::for_front_end(true, config.yolo);
    options.one_shot = false;
    let session = open_session(options).await?;
    let events = session.events(Some(session.opened_after()));
    Ok((session, events))
}

/// The text and images of a prompt: text blocks as they are, embedded
/// resources (the editor's files and selections) inlined with their URI,
/// links as mentions, images attached (the runtime checks them against the
/// model). Audio was not offered, so it is refused; a prompt of images
/// alone gets a line of text saying so, as a turn needs text.
fn prompt_input(
    blocks: &[ContentBlock],
) -> Result<(String, Vec<herald_protocol::ImageData>), RpcError> {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::Image(image) => images.push(herald_protocol::ImageData::new(
                image.mime_type.clone(),
                image.data.as_str(),
            )),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("@{} ({})", link.name, link.uri))
            }
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(file) => parts.push(format!(
                    "<context uri=\"{}\">\n{}\n</context>",
                    file.uri, file.text
                )),
                EmbeddedResourceResource::BlobResourceContents(blob) => {
                    return Err(invalid(format!(
                        "binary resource {} cannot be sent to herald; attach text",
                        blob.uri
                    )));
                }
                _ => return Err(invalid("unsupported embedded resource".to_owned())),
            },
            _ => {
                return Err(invalid(
                    "herald takes text, images, resource links and embedded text resources; audio is not supported (promptCapabilities says so)".to_owned(),
                ));
            }
        }
    }
    let mut text = parts.join("\n\n");
    if text.trim().is_empty() {
        if images.is_empty() {
            return Err(invalid("the prompt is empty; send some text".to_owned()));
        }
        text = "(The message is the attached image.)".to_owned();
    }
    Ok((text, images))
}

/// A client's MCP server as herald configures one.
fn mcp_server(server: &McpServer) -> Result<(String, herald_mcp::McpServerConfig), RpcError> {
    match server {
        McpServer::Stdio(stdio) => {
            let mut config = herald_mcp::McpServerConfig::stdio(
                stdio.command.display().to_string(),
                stdio.args.clone(),
            );
            config.env = stdio
                .env
                .iter()
                .map(|v| (v.name.clone(), v.value.clone()))
                .collect();
            Ok((stdio.name.clone(), config))
        }
        McpServer::Http(http) => {
            let mut config = herald_mcp::McpServerConfig::http(http.url.clone());
            config.headers = http
                .headers
                .iter()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect();
            Ok((http.name.clone(), config))
        }
        McpServer::Sse(sse) => Err(invalid(format!(
            "MCP server {} uses SSE, which herald does not speak (mcpCapabilities.sse is false); use its streamable HTTP endpoint",
            sse.name
        ))),
        _ => Err(invalid("unsupported MCP server transport".to_owned())),
    }
}

fn decode<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|err| RpcError::invalid_params().data(json!(err.to_string())))
}

fn answer<T: Serialize>(outcome: Result<T, RpcError>) -> Result<Value, RpcError> {
    let value = outcome?;
    serde_json::to_value(value).map_err(|e| internal(e.to_string()))
}

fn invalid(message: String) -> RpcError {
    RpcError::invalid_params().data(json!(message))
}

fn internal(message: String) -> RpcError {
    RpcError::internal_error().data(json!(message))
}

fn runtime_error(err: RuntimeError) -> RpcError {
    match err {
        RuntimeError::UnknownSession(id) => RpcError::resource_not_found(None).data(json!(
            format!("no stored session {id}; session/list shows the stored ones")
        )),
        RuntimeError::Store(message) | RuntimeError::Config(message) => internal(message),
        other => invalid(other.to_string()),
    }
}

/// Unix milliseconds as RFC 3339.
fn rfc3339(ms: i64) -> Option<String> {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()?;
    at.format(&time::format_description::well_known::Rfc3339)
        .ok()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
