//! Calling a tool: [`McpServer::call`].

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientNotification, ClientRequest, RequestId, ServerResult,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::handler::{CallRegistration, CallWatch};
use super::{CallRequest, McpServer, short_json};
use crate::content::{McpCallResult, map_call_result};

impl McpServer {
    /// Calls a tool of this server. The one entry point for tool calls:
    /// what differs between callers (call id, cancellation, progress,
    /// elicitation) is in the [`CallRequest`].
    ///
    /// Never fails: errors are results the model can read. A call taking
    /// longer than `tool_timeout_sec`, or whose `cancel` fires, is cancelled
    /// (the server is sent `notifications/cancelled`, as it is when this
    /// future is dropped). While the user is being asked for input (an
    /// elicitation), the call's `tool_timeout_sec` does not run. When the
    /// server's connection has closed (a crashed stdio server) it is
    /// restarted once, on the next call, and that call's result says so;
    /// after a second failure the server is reported down.
    pub async fn call(&self, call: CallRequest) -> McpCallResult {
        let CallRequest {
            tool,
            args,
            cancel,
            call_id,
            progress,
            elicit,
        } = call;
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return McpCallResult::error(format!(
                    "arguments for MCP tool `{tool}` must be a JSON object, got {other}"
                ));
            }
        };
        let (peer, generation, note) = match self.peer_for_call().await {
            Ok(found) => found,
            Err(result) => return result,
        };
        let mut params = CallToolRequestParams::new(tool.clone());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let watch = CallWatch::new(&tool, &call_id, progress, elicit);
        let outcome = self.send_call(&peer, request, watch, &cancel).await;
        let mut result = match outcome {
            CallOutcome::Result(result) => result,
            CallOutcome::Closed => self.connection_lost(generation, &tool).await,
        };
        if let Some(note) = note {
            result.content = format!("{note}\n{}", result.content);
        }
        result
    }

    /// Sends a `tools/call` request, registered with the handler while it
    /// runs, and waits for its result, its cancellation or its timeout.
    async fn send_call(
        &self,
        peer: &Peer<RoleClient>,
        request: ClientRequest,
        watch: CallWatch,
        cancel: &CancellationToken,
    ) -> CallOutcome {
        let tool = watch.tool.clone();
        let tool = tool.as_str();
        let handle = match peer
            .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(err) => return outcome_of_error(&self.name, tool, err),
        };
        let mut watch = watch;
        watch.request_id = handle.id.clone();
        watch.seq = self
            .shared
            .next_call
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let user_wait = Arc::clone(&watch.user_wait);
        let registration =
            CallRegistration::new(self.shared.clone(), handle.progress_token.clone(), watch);
        let mut guard = CancelGuard {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let timeout = Duration::from_secs(self.config.tool_timeout_sec);
        let started = tokio::time::Instant::now();
        let outcome = tokio::select! {
            response = handle.await_response() => {
                guard.disarm();
                match response {
                    Ok(ServerResult::CallToolResult(result)) => CallOutcome::Result(map_call_result(result)),
                    Ok(ServerResult::InputRequiredResult(_)) => CallOutcome::Result(McpCallResult::error(format!(
                        "MCP tool `{tool}` of server `{}` asked for more input in a multi-round-trip result, which herald does not support yet (elicitation/create requests are).",
                        self.name
                    ))),
                    Ok(ServerResult::CreateTaskResult(_)) => CallOutcome::Result(McpCallResult::error(format!(
                        "MCP tool `{tool}` of server `{}` answered with a task, which herald does not support yet.",
                        self.name
                    ))),
                    Ok(other) => CallOutcome::Result(McpCallResult::error(format!(
                        "MCP server `{}` sent an unexpected answer to the call of `{tool}`: {}",
                        self.name,
                        short_json(&other)
                    ))),
                    Err(err) => outcome_of_error(&self.name, tool, err),
                }
            }
            () = cancel.cancelled() => {
                guard.cancel("cancelled by the user").await;
                CallOutcome::Result(McpCallResult::error(format!(
                    "Interrupted: the call to MCP tool `{tool}` of server `{}` was cancelled.",
                    self.name
                )))
            }
            () = user_wait.expired(started, timeout) => {
                guard.cancel("timed out").await;
                CallOutcome::Result(McpCallResult::error(format!(
                    "MCP tool `{tool}` of server `{}` did not finish within tool_timeout_sec = {} s, \
                     so the call was cancelled. Try a smaller request, or raise tool_timeout_sec in \
                     [mcp_servers.{}] if the tool legitimately needs longer.",
                    self.name, self.config.tool_timeout_sec, self.name
                )))
            }
        };
        drop(registration);
        outcome
    }
}

/// How a request ended.
pub(super) enum CallOutcome {
    Result(McpCallResult),
    /// The transport closed: the server is gone.
    Closed,
}

/// What a failed request means: the connection closed, or an error
/// result naming the server and the tool (or method).
pub(super) fn outcome_of_error(server: &str, tool: &str, err: ServiceError) -> CallOutcome {
    match err {
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => CallOutcome::Closed,
        ServiceError::McpError(data) => CallOutcome::Result(McpCallResult::error(format!(
            "MCP server `{server}` rejected the call to `{tool}`: {} (code {})",
            data.message, data.code.0
        ))),
        other => CallOutcome::Result(McpCallResult::error(format!(
            "calling MCP tool `{tool}` of server `{server}` failed: {other}"
        ))),
    }
}

/// How long a call has been waiting for the user's answers.
#[derive(Default)]
pub(super) struct UserWait {
    state: StdMutex<UserWaitState>,
}

#[derive(Default)]
struct UserWaitState {
    open: u32,
    since: Option<std::time::Instant>,
    total: Duration,
}

/// One question to the user in progress; ends on drop.
pub(super) struct Waiting<'a>(&'a UserWait);

impl UserWait {
    pub(super) fn begin(&self) -> Waiting<'_> {
        if let Ok(mut state) = self.state.lock() {
            state.open += 1;
            if state.open == 1 {
                state.since = Some(std::time::Instant::now());
            }
        }
        Waiting(self)
    }

    /// Time spent waiting so far, and whether a question is open now.
    fn paused(&self) -> (Duration, bool) {
        match self.state.lock() {
            Ok(state) => {
                let running = state.since.map(|s| s.elapsed()).unwrap_or_default();
                (state.total + running, state.open > 0)
            }
            Err(_) => (Duration::ZERO, false),
        }
    }

    /// Resolves once the call has run for `limit`, not counting the time
    /// spent waiting for the user.
    async fn expired(&self, start: tokio::time::Instant, limit: Duration) {
        loop {
            let (paused, open) = self.paused();
            if open {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            let ran = start.elapsed().saturating_sub(paused);
            if ran >= limit {
                return;
            }
            tokio::time::sleep(limit - ran).await;
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Ok(mut state) = self.0.state.lock() {
            state.open = state.open.saturating_sub(1);
            if state.open == 0
                && let Some(since) = state.since.take()
            {
                state.total += since.elapsed();
            }
        }
    }
}

/// Sends `notifications/cancelled` for a request that is abandoned: by
/// [`CancelGuard::cancel`], or on drop (the call's future was dropped).
pub(super) struct CancelGuard {
    pub(super) peer: Peer<RoleClient>,
    pub(super) id: Option<RequestId>,
}

fn cancelled_notification(id: RequestId, reason: &str) -> ClientNotification {
    ClientNotification::CancelledNotification(CancelledNotification::new(
        CancelledNotificationParam::new(Some(id), Some(reason.to_owned())),
    ))
}

impl CancelGuard {
    pub(super) fn disarm(&mut self) {
        self.id = None;
    }

    pub(super) async fn cancel(&mut self, reason: &str) {
        if let Some(id) = self.id.take() {
            let _ = self
                .peer
                .send_notification(cancelled_notification(id, reason))
                .await;
        }
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(id) = self.id.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let peer = self.peer.clone();
            runtime.spawn(async move {
                let _ = peer
                    .send_notification(cancelled_notification(id, "request abandoned"))
                    .await;
            });
        }
    }
}
