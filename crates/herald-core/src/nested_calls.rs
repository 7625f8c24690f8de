//! What happens to tool calls an `execute_code` script makes: each becomes a
//! `sandbox.call` event, stored with the session's event stream (tool,
//! arguments, status, duration), and none enters the model's context
//!. The same observer turns progress reported by a running call
//! into `tool.progress` events.

use std::sync::Arc;

use herald_protocol::{Event, EventKind, ToolStatus};
use herald_tools::{CallObserver, NestedCall, truncate_head_tail};

use crate::{EventSink, Recorder};

/// The `arguments` of a `sandbox.call` event are cut to this many chars
/// (head and tail); `args_bytes` keeps the size of the full arguments.
const EVENT_ARGS_CHARS: usize = 16_000;

/// Emits (and so stores) nested calls of one agent.
struct NestedCallLog {
    events: EventSink,
    /// Stores the events itself when the sink does not (a library caller's
    /// sink without a store): the rows exist whenever the agent has a store.
    recorder: Option<Recorder>,
}

/// The observer the agent loop attaches to its tool calls.
pub(crate) fn observer(events: &EventSink, recorder: Option<&Recorder>) -> Arc<dyn CallObserver> {
    Arc::new(NestedCallLog {
        events: events.clone(),
        recorder: recorder.filter(|_| !events.is_recorded()).cloned(),
    })
}

impl CallObserver for NestedCallLog {
    fn nested_call(&self, call: &NestedCall<'_>) {
        let status = if call.is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Ok
        };
        let kind = EventKind::SandboxCall {
            parent_call_id: call.parent_call_id.to_owned(),
            name: call.name.to_owned(),
            status,
            arguments: truncate_head_tail(call.arguments, EVENT_ARGS_CHARS).into_owned(),
            args_bytes: call.arguments.len() as u64,
            output_bytes: call.output_bytes,
            duration_ms: u64::try_from(call.duration.as_millis()).unwrap_or(u64::MAX),
        };
        if let Some(recorder) = &self.recorder {
            // Queued, not awaited: the script is waiting for this call's answer.
            let event = Event::new(
                self.events.session_id(),
                self.events.agent_id(),
                kind.clone(),
            );
            crate::events::store_event(&recorder.store, &recorder.session_id, event);
        }
        self.events.emit(kind);
    }

    fn progress(&self, update: &herald_tools::CallProgress<'_>) {
        self.events.emit(EventKind::ToolProgress {
            call_id: update.call_id.to_owned(),
            name: update.name.to_owned(),
            progress: update.progress,
            total: update.total,
            message: update.message.map(str::to_owned),
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use herald_store::{NewSession, SessionSource};

    use super::*;
    use crate::StoreHandle;

    fn call() -> NestedCall<'static> {
        NestedCall {
            parent_call_id: "call_9",
            name: "read_file",
            arguments: r#"{"path":"a.txt"}"#,
            is_error: false,
            output_bytes: 12,
            duration: Duration::from_millis(3),
        }
    }

    async fn stored_calls(store: &StoreHandle) -> Vec<serde_json::Value> {
        let stored = store
            .call(|s| s.load_events("ses_1"))
            .await
            .unwrap()
            .unwrap();
        stored
            .iter()
            .map(|e| {
                assert_eq!(e.kind, "sandbox.call");
                serde_json::from_str(&e.payload).unwrap()
            })
            .collect()
    }

    #[tokio::test]
    async fn nested_calls_are_emitted_and_stored() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink_seen = Arc::clone(&seen);
        let events = EventSink::new("ses_1", "root", move |e| {
            sink_seen.lock().unwrap().push(e);
        })
        .recorded(&store, "ses_1", 0);
        let recorder = Recorder {
            store: store.clone(),
            session_id: "ses_1".into(),
        };
        observer(&events, Some(&recorder)).nested_call(&call());
        let emitted = seen.lock().unwrap().clone();
        assert_eq!(
            emitted[0].kind,
            EventKind::SandboxCall {
                parent_call_id: "call_9".into(),
                name: "read_file".into(),
                status: ToolStatus::Ok,
                arguments: r#"{"path":"a.txt"}"#.into(),
                args_bytes: 16,
                output_bytes: 12,
                duration_ms: 3,
            }
        );
        // Stored once (by the recorded sink), as the event itself: written
        // with the output's batch at the latest when the last sink goes.
        drop(events);
        let stored = stored_calls(&store).await;
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0]["type"], "sandbox.call");
        assert_eq!(stored[0]["arguments"], r#"{"path":"a.txt"}"#);
        assert_eq!(stored[0]["name"], "read_file");
        assert_eq!(stored[0]["status"], "ok");
        assert_eq!(stored[0]["duration_ms"], 3);
        assert_eq!(stored[0]["parent_call_id"], "call_9");
    }

    #[tokio::test]
    async fn a_sink_without_a_store_leaves_the_row_to_the_recorder() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        let events = EventSink::new("ses_1", "root", |_| {});
        let recorder = Recorder {
            store: store.clone(),
            session_id: "ses_1".into(),
        };
        observer(&events, Some(&recorder)).nested_call(&call());
        let stored = stored_calls(&store).await;
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0]["name"], "read_file");
    }

    async fn store(dir: &tempfile::TempDir) -> StoreHandle {
        let store = StoreHandle::open(&dir.path().join("state.db")).unwrap();
        store
            .call(|s| {
                s.create_session(&NewSession {
                    id: "ses_1".into(),
                    parent_session_id: None,
                    agent_id: Some("root".into()),
                    source: SessionSource::Cli,
                    cwd: "/w".into(),
                    model: "m".into(),
                    provider: "openai".into(),
                    system_prompt: "s".into(),
                })
            })
            .await
            .unwrap()
            .unwrap();
        store
    }
}
