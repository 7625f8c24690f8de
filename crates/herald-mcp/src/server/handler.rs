//! rmcp's client handler: what herald declares in `initialize`, and what
//! the server sends during a call (progress notifications, requests for
//! user input), routed to the call it belongs to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use herald_tools::{ElicitAction, ElicitAnswer, Elicitation};
use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProgressToken, RequestId,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient};

use super::call::UserWait;
use super::{ElicitationHandler, ProgressSink, ProgressUpdate};

/// State shared with the rmcp client handler.
#[derive(Default)]
pub(super) struct Shared {
    /// The server's progress sink ([`super::McpServer::set_progress_sink`]).
    pub(super) sink: StdMutex<Option<ProgressSink>>,
    /// Progress token of each call in flight -> who is told about it.
    calls: StdMutex<HashMap<ProgressToken, CallWatch>>,
    /// Numbers the calls, so the most recent one is known.
    pub(super) next_call: std::sync::atomic::AtomicU64,
}

/// The rmcp client handler of one server's connection (a new one per
/// connection, sharing the server's [`Shared`]).
#[derive(Clone)]
pub(super) struct Handler {
    pub(super) server: String,
    pub(super) shared: Arc<Shared>,
}

impl ClientHandler for Handler {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let call = self
            .shared
            .calls
            .lock()
            .ok()
            .and_then(|calls| calls.get(&params.progress_token).cloned());
        let Some(call) = call else {
            return std::future::ready(());
        };
        let sink = call
            .sink
            .or_else(|| self.shared.sink.lock().ok().and_then(|s| s.clone()));
        if let Some(sink) = sink {
            sink(ProgressUpdate {
                server: self.server.clone(),
                tool: call.tool,
                call_id: call.call_id,
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
        std::future::ready(())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let (message, schema) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message,
                serde_json::to_value(&requested_schema).unwrap_or_default(),
            ),
            // Only the form mode is declared.
            _ => {
                tracing::warn!(server = %self.server, "URL elicitation declined (not supported)");
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let Some(call) = self.call_for_request(&context).await else {
            tracing::warn!(
                server = %self.server,
                "elicitation declined: no call of this server is in flight"
            );
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let Some(handler) = call.elicit else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let waiting = call.user_wait.begin();
        let answer = tokio::select! {
            answer = handler(Elicitation {
                server: self.server.clone(),
                message,
                schema,
            }) => answer,
            // The server withdrew the request.
            () = context.ct.cancelled() => ElicitAnswer::cancel(),
        };
        drop(waiting);
        let action = match answer.action {
            ElicitAction::Accept => ElicitationAction::Accept,
            ElicitAction::Decline => ElicitationAction::Decline,
            ElicitAction::Cancel => ElicitationAction::Cancel,
        };
        let mut result = ElicitResult::new(action);
        if answer.action == ElicitAction::Accept {
            result = result.with_content(answer.content.unwrap_or_else(|| serde_json::json!({})));
        }
        Ok(result)
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        ClientConfig::new(
            capabilities,
            Implementation::new("herald", env!("CARGO_PKG_VERSION")),
        )
    }
}

impl Handler {
    /// The call a server's request (an elicitation) belongs to. Over
    /// streamable HTTP the request arrives on the response stream of the
    /// call's POST, which rmcp records; a request may also carry the call's
    /// progress token. Over stdio nothing links a server's request to the
    /// call it serves, so with several calls in flight the most recent one
    /// is taken (the usual case is one call at a time per server). The
    /// call is registered just after it is sent, so a request that comes
    /// first gets a moment to find it.
    async fn call_for_request(&self, context: &RequestContext<RoleClient>) -> Option<CallWatch> {
        let origin = match context.extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => Some(id.clone()),
            _ => None,
        };
        let token = context.meta.get_progress_token();
        const ATTEMPTS: usize = 20;
        for attempt in 1..=ATTEMPTS {
            let found = self.shared.calls.lock().ok().and_then(|calls| {
                if let Some(id) = &origin {
                    let call = calls.values().find(|c| &c.request_id == id);
                    // Its call may not be registered yet: wait for it
                    // rather than guess.
                    if call.is_some() || attempt < ATTEMPTS {
                        return call.cloned();
                    }
                }
                token
                    .as_ref()
                    .and_then(|t| calls.get(t))
                    .or_else(|| calls.values().max_by_key(|c| c.seq))
                    .cloned()
            });
            if found.is_some() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }
}

/// Who hears about one call's progress and answers its elicitations.
#[derive(Clone)]
pub(super) struct CallWatch {
    pub(super) tool: String,
    call_id: String,
    /// Overrides the server's sink for this call.
    sink: Option<ProgressSink>,
    /// Answers the server's requests for user input during the call (none:
    /// they are declined).
    elicit: Option<ElicitationHandler>,
    /// The `tools/call` request's id (set when it is sent).
    pub(super) request_id: RequestId,
    /// Order of the calls to this server (set when it is sent).
    pub(super) seq: u64,
    /// Time spent waiting for the user, which the timeout leaves out.
    pub(super) user_wait: Arc<UserWait>,
}

impl CallWatch {
    pub(super) fn new(
        tool: &str,
        call_id: &str,
        sink: Option<ProgressSink>,
        elicit: Option<ElicitationHandler>,
    ) -> Self {
        Self {
            tool: tool.to_owned(),
            call_id: call_id.to_owned(),
            sink,
            elicit,
            request_id: RequestId::Number(0),
            seq: 0,
            user_wait: Arc::default(),
        }
    }
}

/// Maps a call's progress token to its tool while it runs.
pub(super) struct CallRegistration {
    shared: Arc<Shared>,
    token: ProgressToken,
}

impl CallRegistration {
    pub(super) fn new(shared: Arc<Shared>, token: ProgressToken, watch: CallWatch) -> Self {
        if let Ok(mut calls) = shared.calls.lock() {
            calls.insert(token.clone(), watch);
        }
        Self { shared, token }
    }
}

impl Drop for CallRegistration {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.shared.calls.lock() {
            calls.remove(&self.token);
        }
    }
}
