//! `run`: one agent turn, answered when it ends. While it works, a client
//! that sent a `progressToken` gets one progress notification per tool
//! call and per reply with text; cancelling the request interrupts the
//! turn.

use rmcp::model::{CallToolResult, JsonObject, ProgressNotificationParam, ProgressToken, Tool};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};

use super::tools::{self, TurnArgs};
use super::turn;
use crate::state::AppState;

/// Runs the turn `arguments` describe and answers with its end.
pub(crate) async fn call(
    state: &AppState,
    tool: &Tool,
    arguments: Option<JsonObject>,
    context: &RequestContext<RoleServer>,
) -> CallToolResult {
    let args: TurnArgs = match tools::parse(tool, arguments) {
        Ok(args) => args,
        Err(message) => return turn::error(message),
    };
    let turn::Started {
        session,
        mut events,
        turn,
    } = match turn::start(state, args).await {
        Ok(started) => started,
        Err(message) => return turn::error(message),
    };
    let session_id = session.id().to_owned();
    let mut progress = Progress::new(context);
    let mut interrupted = false;
    // Sent from this task (not a spawned one): over streamable HTTP the
    // notifications then travel on this request's own stream.
    loop {
        tokio::select! {
            () = context.ct.cancelled(), if !interrupted => {
                interrupted = true;
                let _ = session.submit(herald_core::runtime::Op::Interrupt {});
            }
            event = events.next() => match event {
                None => break,
                Some(event) if turn::is_end(&event, &session_id) => break,
                Some(event) => {
                    if let Some(message) = turn::describe(&event, &session_id) {
                        progress.send(message).await;
                    }
                }
            },
        }
    }
    match turn.finished(&session_id).await {
        Ok(result) => turn::tool_result(&session_id, &result),
        Err(err) => turn::error(format!("{} (session {session_id})", err.message)),
    }
}

/// Progress notifications for one request, when it asked for them.
struct Progress {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    count: u32,
}

impl Progress {
    fn new(context: &RequestContext<RoleServer>) -> Self {
        Self {
            peer: context.peer.clone(),
            token: context.meta.get_progress_token(),
            count: 0,
        }
    }

    /// Sends the next notification (progress 1, 2, ...; no total).
    async fn send(&mut self, message: String) {
        let Some(token) = &self.token else {
            return;
        };
        self.count += 1;
        let param = ProgressNotificationParam::new(token.clone(), f64::from(self.count))
            .with_message(message);
        if let Err(err) = self.peer.notify_progress(param).await {
            tracing::debug!(%err, "mcp: a progress notification was not delivered");
        }
    }
}
