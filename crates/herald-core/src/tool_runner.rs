//! Runs the tool calls of one assistant reply: concurrently when every call
//! is read-only, otherwise in order, always producing exactly one result per
//! call in call order, also on interrupt.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use herald_protocol::{EventKind, Message, ToolCall, ToolStatus};
use herald_store::PendingResult;
use herald_tools::{
    AgentState, CallObserver, PermissionGate, ToolContext, ToolRegistry, ToolResult,
};
use tokio_util::sync::CancellationToken;

use crate::{EventSink, Recorder, nested_calls};

/// How long a tool may take to wind down after an interrupt before it is dropped.
const INTERRUPT_GRACE: Duration = Duration::from_secs(3);

/// The result message of a call that never ran because the turn was interrupted.
fn not_started(call: &ToolCall) -> Message {
    Message::tool_result(
        call,
        "interrupted: the user stopped the turn before this call ran",
        true,
    )
}

/// Runs `calls` and returns their result messages in call order. The
/// results keep the images their tools returned only with `images` (the
/// model takes images); otherwise only their text remains.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_tool_calls(
    images: bool,
    registry: &Arc<ToolRegistry>,
    gate: Option<&Arc<dyn PermissionGate>>,
    calls: &[ToolCall],
    state: &Arc<AgentState>,
    cancel: &CancellationToken,
    events: &EventSink,
    recorder: Option<&Recorder>,
) -> Vec<Message> {
    let observer = nested_calls::observer(events, recorder);
    let observer = &observer;
    // In a batch of several calls each result is kept in the store as soon
    // as its call ends, so a crash before the batch is stored loses none.
    let keeper = recorder.filter(|_| calls.len() > 1);
    let run = |call| async move {
        let mut result = run_one(registry, gate, call, state, cancel, events, observer).await;
        if !images {
            result.images = Vec::new();
        }
        if let Some(recorder) = keeper {
            keep_result(recorder, &result).await;
        }
        result
    };
    let concurrent = calls.len() > 1 && calls.iter().all(|c| registry.is_read_only(&c.name));
    let mut results = if concurrent {
        join_all(calls.iter().map(run)).await
    } else {
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            if cancel.is_cancelled() {
                results.push(not_started(call));
            } else {
                results.push(run(call).await);
            }
        }
        results
    };
    if !cancel.is_cancelled() {
        append_todo_nudge(calls, &mut results, state);
    }
    results
}

/// Stores one finished call's result until its batch is stored. A failure
/// only costs the crash protection of this result, so it is logged.
async fn keep_result(recorder: &Recorder, result: &Message) {
    let Some(call_id) = result.tool_call_id.clone() else {
        return;
    };
    let kept = PendingResult {
        call_id,
        content: result.content.clone(),
        is_error: result.is_error,
        // Shared data: cloning the list copies no image.
        images: result.images.clone(),
    };
    let session = recorder.session_id.clone();
    match recorder
        .store
        .call(move |s| s.save_pending_result(&session, &kept))
        .await
    {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::warn!(%err, "cannot keep a finished tool result"),
        Err(err) => tracing::warn!(%err, "cannot keep a finished tool result"),
    }
}

/// Counts the batch against the task list and, when a reminder is due (SPEC
/// §8.1), appends it as one line to the batch's last result: the newest
/// message, so no earlier part of the conversation changes.
fn append_todo_nudge(calls: &[ToolCall], results: &mut [Message], state: &AgentState) {
    let outcome = calls
        .iter()
        .zip(results.iter())
        .map(|(call, result)| (call.name.as_str(), result.is_error));
    if let Some(line) = state.todos.after_batch(outcome)
        && let Some(last) = results.last_mut()
    {
        last.content.push_str("\n\n");
        last.content.push_str(line);
    }
}

async fn run_one(
    registry: &Arc<ToolRegistry>,
    gate: Option<&Arc<dyn PermissionGate>>,
    call: &ToolCall,
    state: &Arc<AgentState>,
    cancel: &CancellationToken,
    events: &EventSink,
    observer: &Arc<dyn CallObserver>,
) -> Message {
    events.emit(EventKind::ToolStarted {
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
    });
    let started = Instant::now();
    let ctx = ToolContext::new(Arc::clone(state), cancel.child_token())
        .with_call(&call.id, Arc::clone(registry))
        .with_observer(Arc::clone(observer))
        .with_gate(gate.cloned());
    let execution = registry.execute(call, &ctx);
    tokio::pin!(execution);
    let result = tokio::select! {
        biased;
        result = &mut execution => result,
        () = cancel.cancelled() => {
            // Tools watch their token and stop themselves; give them a moment
            // to kill child processes and report partial output.
            match tokio::time::timeout(INTERRUPT_GRACE, &mut execution).await {
                Ok(result) if result.is_error => result,
                Ok(result) => ToolResult::error(format!(
                    "interrupted: the user stopped the turn; the call had finished:\n{}",
                    result.content
                ))
                .with_images(result.images),
                Err(_) => ToolResult::error("interrupted: the user stopped this call before it finished"),
            }
        }
    };
    events.emit(EventKind::ToolCompleted {
        call_id: call.id.clone(),
        name: call.name.clone(),
        status: if result.is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Ok
        },
        output_bytes: result.content.len() as u64,
        duration_ms: started.elapsed().as_millis() as u64,
    });
    Message::tool_result(call, result.content, result.is_error).with_images(result.images)
}
