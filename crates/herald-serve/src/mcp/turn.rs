//! Starting the agent turn of a `run` or `delegate` call, following its
//! events, and turning its end into a tool result.

use herald_core::runtime::{ClarifyPolicy, OpenMode, Session, Subscription, TurnResult};
use herald_protocol::{Event, EventKind, RunStatus};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use super::tools::TurnArgs;
use crate::error::ApiError;
use crate::state::{AppState, StartedTurn};

/// A turn that started: its session, a subscription taken before it
/// started (so none of its events is missed), and its end.
pub(crate) struct Started {
    pub(crate) session: Session,
    pub(crate) events: Subscription,
    pub(crate) turn: StartedTurn,
}

/// Opens the session `args` names (or a new one) and starts the turn.
/// Every refusal happens before anything is stored, and its message says
/// what to change.
pub(crate) async fn start(state: &AppState, args: TurnArgs) -> Result<Started, String> {
    if args.prompt.trim().is_empty() {
        return Err("prompt is empty; send the task or question for herald's agent".to_owned());
    }
    let session_id = args
        .session_id
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty());
    if session_id.is_some() && args.toolsets.is_some() {
        return Err(
            "toolsets apply only to a new session (a stored session keeps the tools it started with); omit toolsets to continue the session, or omit session_id to start a new one"
                .to_owned(),
        );
    }
    let slot = state.reserve_turn().map_err(|e| e.message)?;
    let session = match session_id {
        Some(id) => state
            .session(&id, ClarifyPolicy::Unavailable)
            .await
            .map_err(|err| session_error(&id, err))?,
        None => {
            let mut settings = state.settings.clone();
            if let Some(toolsets) = args.toolsets {
                settings.toolsets = Some(toolsets);
            }
            state
                .open_with(OpenMode::New, ClarifyPolicy::Unavailable, settings)
                .await
                .map_err(|err| err.message)?
        }
    };
    let events = session.events(None);
    let turn = state
        .start_turn(&session, args.prompt, Vec::new(), slot)
        .map_err(|err| err.message)?;
    Ok(Started {
        session,
        events,
        turn,
    })
}

fn session_error(id: &str, err: ApiError) -> String {
    if err.code == "session_not_found" {
        format!(
            "no herald session '{id}'; omit session_id to start a new session, or find one with session_search"
        )
    } else {
        err.message
    }
}

/// Whether `event` ends the turn of session `root` (its `run.completed`).
pub(crate) fn is_end(event: &Event, root: &str) -> bool {
    matches!(event.kind, EventKind::RunCompleted { .. })
        && event.agent_id == "root"
        && event.session_id == root
}

/// What a progress report says about `event`, if it is one worth telling:
/// a tool call of the agent or of a subagent, a reply with text, a retry.
pub(crate) fn describe(event: &Event, root: &str) -> Option<String> {
    let from_root = event.agent_id == "root" && event.session_id == root;
    match &event.kind {
        EventKind::ToolStarted { name, .. } if from_root => Some(format!("tool: {name}")),
        EventKind::SubagentTool { tool, .. } => Some(format!("{}: {tool}", event.agent_id)),
        EventKind::AssistantMessage { text, .. } if from_root && !text.trim().is_empty() => {
            Some(format!("reply: {}", snippet(text)))
        }
        EventKind::Retry { reason, .. } if from_root => Some(format!("retrying: {reason}")),
        _ => None,
    }
}

/// The root agent's tool name, when `event` starts one of its calls.
pub(crate) fn root_tool<'a>(event: &'a Event, root: &str) -> Option<&'a str> {
    match &event.kind {
        EventKind::ToolStarted { name, .. }
            if event.agent_id == "root" && event.session_id == root =>
        {
            Some(name)
        }
        _ => None,
    }
}

/// The first line of `text`, at most 120 characters.
fn snippet(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(120).collect();
    if out.len() < line.len() {
        out.push('…');
    }
    out
}

/// `status` of a finished turn.
pub(crate) fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
        RunStatus::Interrupted => "interrupted",
    }
}

/// The structured answer of a finished turn.
pub(crate) fn summary(session_id: &str, result: &TurnResult) -> Value {
    let mut out = json!({
        "answer": result.final_response,
        "session_id": session_id,
        "status": status_name(result.status),
        "exit_reason": result.exit_reason.as_str(),
        "iterations": result.iterations,
        "usage": {
            "input_tokens": result.usage.input,
            "output_tokens": result.usage.output,
            "cached_tokens": result.usage.cached,
        },
    });
    if let Some(error) = &result.error {
        out["error"] = json!(error);
    }
    out
}

/// A finished turn as a tool result: the answer, then the session id; a
/// failed or interrupted turn is an error result saying why.
pub(crate) fn tool_result(session_id: &str, result: &TurnResult) -> CallToolResult {
    let structured = summary(session_id, result);
    let resume = format!("session_id: {session_id} (pass it as session_id to continue)");
    let mut out = match result.status {
        RunStatus::Completed => CallToolResult::success(vec![
            ContentBlock::text(result.final_response.clone()),
            ContentBlock::text(resume),
        ]),
        RunStatus::Failed => {
            let why = result
                .error
                .clone()
                .unwrap_or_else(|| format!("the turn ended with {}", result.exit_reason.as_str()));
            CallToolResult::error(vec![
                ContentBlock::text(format!("herald's agent failed: {why}")),
                ContentBlock::text(resume),
            ])
        }
        RunStatus::Interrupted => CallToolResult::error(vec![
            ContentBlock::text("herald's turn was interrupted before it finished"),
            ContentBlock::text(resume),
        ]),
    };
    out.structured_content = Some(structured);
    out
}

/// An error result with `message`.
pub(crate) fn error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(agent: &str, session: &str, kind: EventKind) -> Event {
        Event {
            ts: String::new(),
            session_id: session.to_owned(),
            agent_id: agent.to_owned(),
            seq: None,
            submission_id: None,
            kind,
        }
    }

    #[test]
    fn progress_tells_tools_replies_and_subagents() {
        let tool = EventKind::ToolStarted {
            call_id: "c1".into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        };
        assert_eq!(
            describe(&event("root", "s", tool.clone()), "s").as_deref(),
            Some("tool: read_file")
        );
        assert_eq!(describe(&event("root", "other", tool), "s"), None);
        let reply = EventKind::AssistantMessage {
            text: "Let me look.\nmore".into(),
            tool_calls: Vec::new(),
        };
        assert_eq!(
            describe(&event("root", "s", reply), "s").as_deref(),
            Some("reply: Let me look.")
        );
        let silent = EventKind::AssistantMessage {
            text: " ".into(),
            tool_calls: Vec::new(),
        };
        assert_eq!(describe(&event("root", "s", silent), "s"), None);
        assert_eq!(snippet(&"x".repeat(200)).chars().count(), 121);
    }
}
