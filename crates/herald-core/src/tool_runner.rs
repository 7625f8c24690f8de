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

use crate::intercept::Interception;
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

/// What the calls of one batch run with besides the registry: the
/// permission gate and the interceptors (hooks, learnings).
#[derive(Clone, Copy)]
pub(crate) struct CallGuards<'a> {
    pub gate: Option<&'a Arc<dyn PermissionGate>>,
    pub interception: Option<&'a Arc<Interception>>,
}

/// Runs `calls` and returns their result messages in call order. The
/// results keep the images their tools returned only with `images` (the
/// model takes images); otherwise only their text remains.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_tool_calls(
    images: bool,
    registry: &Arc<ToolRegistry>,
    guards: CallGuards<'_>,
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
        let mut result = run_one(registry, guards, call, state, cancel, events, observer).await;
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

/// Counts the batch against the task list and, when a reminder is due, appends it as one line to the batch's last result: the newest
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

#[allow(clippy::too_many_arguments)]
async fn run_one(
    registry: &Arc<ToolRegistry>,
    guards: CallGuards<'_>,
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
    let result = execute(registry, guards, call, state, cancel, observer).await;
    events.emit(completed_event(
        call,
        &result.content,
        result.is_error,
        started.elapsed(),
    ));
    Message::tool_result(call, result.content, result.is_error).with_images(result.images)
}

/// Runs one call through the registry, giving it a moment to wind down on
/// interrupt.
async fn execute(
    registry: &Arc<ToolRegistry>,
    guards: CallGuards<'_>,
    call: &ToolCall,
    state: &Arc<AgentState>,
    cancel: &CancellationToken,
    observer: &Arc<dyn CallObserver>,
) -> ToolResult {
    let ctx = ToolContext::new(Arc::clone(state), cancel.child_token())
        .with_call(&call.id, Arc::clone(registry))
        .with_observer(Arc::clone(observer))
        .with_gate(guards.gate.cloned())
        .with_interception(guards.interception.cloned());
    let execution = registry.execute(call, &ctx);
    tokio::pin!(execution);
    tokio::select! {
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
    }
}

/// Bytes of a result's text kept in its `tool.completed` event: a person
/// reading the stream sees what the model saw without the event carrying a
/// whole file.
const EVENT_OUTPUT_BYTES: usize = 4096;
/// Characters of an error result kept as the event's one-line reason.
const EVENT_ERROR_CHARS: usize = 300;

/// The `tool.completed` event of a finished call: status, size, the result
/// text (bounded), the reason of a failure and a command's exit code.
fn completed_event(call: &ToolCall, content: &str, is_error: bool, elapsed: Duration) -> EventKind {
    EventKind::ToolCompleted {
        call_id: call.id.clone(),
        name: call.name.clone(),
        status: if is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Ok
        },
        output_bytes: content.len() as u64,
        duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        output: head_and_tail(content, EVENT_OUTPUT_BYTES),
        error: is_error.then(|| error_line(content, EVENT_ERROR_CHARS)),
        exit_code: exit_code(content),
    }
}

/// `text` when it fits in `limit` bytes; otherwise its head and tail (cut at
/// char boundaries) around a `[… N bytes omitted …]` marker. The model's own
/// truncation (`truncate_head_tail`) words its marker as advice to the model;
/// this one only tells a reader what is missing.
fn head_and_tail(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut head = limit * 6 / 10;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (limit - head);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[\u{2026} {} bytes omitted \u{2026}]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// An error result's message on one line (whitespace runs as one space),
/// cut to `max` chars with an ellipsis. A result that is a JSON object with
/// an `error` string (`terminal` reports an interrupted command so) gives
/// that string.
fn error_line(text: &str, max: usize) -> String {
    let text = json_object(text)
        .and_then(|object| object.get("error")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| text.to_owned());
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max).collect();
    cut.push('\u{2026}');
    cut
}

/// The integer `exit_code` of a result that is a JSON object (`terminal`
/// returns `{output, exit_code}`, possibly followed by a note). Only such
/// results are parsed.
pub(crate) fn exit_code(content: &str) -> Option<i64> {
    // Only objects can carry one; the cheap test first (results are long).
    if !content.starts_with('{') || !content.contains("\"exit_code\"") {
        return None;
    }
    json_object(content)?.get("exit_code")?.as_i64()
}

/// The JSON object a result starts with (a note may follow it), if it
/// starts with one.
pub(crate) fn json_object(content: &str) -> Option<serde_json::Value> {
    if !content.starts_with('{') {
        return None;
    }
    let mut values = serde_json::Deserializer::from_str(content).into_iter::<serde_json::Value>();
    values.next()?.ok().filter(serde_json::Value::is_object)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn a_short_result_is_carried_whole() {
        let EventKind::ToolCompleted {
            output,
            error,
            exit_code,
            output_bytes,
            ..
        } = completed_event(&call("read_file"), "abc", false, Duration::ZERO)
        else {
            panic!("not tool.completed");
        };
        assert_eq!(output, "abc");
        assert_eq!(output_bytes, 3);
        assert_eq!(error, None);
        assert_eq!(exit_code, None);
    }

    #[test]
    fn a_long_result_keeps_head_and_tail_with_the_omitted_size() {
        let text = format!("{}{}", "h".repeat(5000), "t".repeat(5000));
        let out = head_and_tail(&text, 4096);
        assert!(out.starts_with(&"h".repeat(2457)), "{}", &out[..50]);
        assert!(out.ends_with(&"t".repeat(1639)));
        assert!(
            out.contains("[\u{2026} 5904 bytes omitted \u{2026}]"),
            "{out}"
        );
        // Multibyte text is cut at char boundaries.
        let wide = "\u{e9}".repeat(3000);
        let cut = head_and_tail(&wide, 101);
        assert!(cut.contains("bytes omitted"));
    }

    #[test]
    fn an_error_result_gives_its_reason_on_one_line() {
        let EventKind::ToolCompleted { status, error, .. } = completed_event(
            &call("read_file"),
            "not found: src/x.rs\n  did you mean src/y.rs?",
            true,
            Duration::ZERO,
        ) else {
            panic!("not tool.completed");
        };
        assert_eq!(status, ToolStatus::Error);
        assert_eq!(
            error.as_deref(),
            Some("not found: src/x.rs did you mean src/y.rs?")
        );
        let interrupted = error_line(
            r#"{"error":"interrupted: the user cancelled the command","exit_code":null,"output":"partial\n"}"#,
            300,
        );
        assert_eq!(interrupted, "interrupted: the user cancelled the command");
        let long = error_line(&"x".repeat(400), 300);
        assert_eq!(long.chars().count(), 301);
    }

    #[test]
    fn events_stored_before_the_new_fields_still_read() {
        let old = r#"{"type":"tool.completed","session_id":"s","agent_id":"root","ts":"t","call_id":"c","name":"read_file","status":"ok","output_bytes":3,"duration_ms":1}"#;
        let event: herald_protocol::Event = serde_json::from_str(old).unwrap();
        let EventKind::ToolCompleted {
            output,
            error,
            exit_code,
            ..
        } = event.kind
        else {
            panic!("not tool.completed");
        };
        assert_eq!((output.as_str(), error, exit_code), ("", None, None));
    }

    #[test]
    fn a_command_result_gives_its_exit_code() {
        assert_eq!(exit_code(r#"{"exit_code":3,"output":"boom\n"}"#), Some(3));
        assert_eq!(
            exit_code("{\"exit_code\":0,\"output\":\"\"}\nnote: the sandbox denied a write"),
            Some(0)
        );
        assert_eq!(
            exit_code(r#"{"exit_code":null,"output":"timed out"}"#),
            None
        );
        assert_eq!(exit_code("exit_code 3"), None);
        assert_eq!(exit_code(r#"{"output":"no code"}"#), None);
    }
}
