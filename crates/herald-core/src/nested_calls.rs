//! What happens to tool calls an `execute_code` script makes: each becomes a
//! `sandbox.call` event and a row in the session's `events` table, and none
//! enters the model's context (SPEC §12).

use std::sync::Arc;

use herald_protocol::{EventKind, ToolStatus};
use herald_tools::{CallObserver, NestedCall, truncate_head_tail};

use crate::{EventSink, Recorder};

/// Event kind of the stored records (same name as the streamed event).
pub(crate) const SANDBOX_CALL: &str = "sandbox.call";
/// Stored arguments are cut to this many chars (head and tail); the byte
/// count of the full arguments is kept beside them.
const STORED_ARGS_CHARS: usize = 16_000;

/// Emits and stores nested calls of one agent.
struct NestedCallLog {
    events: EventSink,
    recorder: Option<Recorder>,
}

/// The observer the agent loop attaches to its tool calls.
pub(crate) fn observer(events: &EventSink, recorder: Option<&Recorder>) -> Arc<dyn CallObserver> {
    Arc::new(NestedCallLog {
        events: events.clone(),
        recorder: recorder.cloned(),
    })
}

impl CallObserver for NestedCallLog {
    fn nested_call(&self, call: &NestedCall<'_>) {
        let status = if call.is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Ok
        };
        let duration_ms = u64::try_from(call.duration.as_millis()).unwrap_or(u64::MAX);
        let args_bytes = call.arguments.len() as u64;
        self.events.emit(EventKind::SandboxCall {
            parent_call_id: call.parent_call_id.to_owned(),
            name: call.name.to_owned(),
            status,
            args_bytes,
            output_bytes: call.output_bytes,
            duration_ms,
        });
        let Some(recorder) = &self.recorder else {
            return;
        };
        let payload = serde_json::json!({
            "parent_call_id": call.parent_call_id,
            "name": call.name,
            "status": status,
            "arguments": truncate_head_tail(call.arguments, STORED_ARGS_CHARS),
            "args_bytes": args_bytes,
            "output_bytes": call.output_bytes,
            "duration_ms": duration_ms,
        })
        .to_string();
        let session = recorder.session_id.clone();
        // Queued, not awaited: the script is waiting for this call's answer.
        // A failed write loses one debug record, never the conversation.
        let _ = recorder.store.submit(move |store| {
            let _ = store.record_event(&session, SANDBOX_CALL, &payload);
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

    #[tokio::test]
    async fn nested_calls_are_emitted_and_stored() {
        let dir = tempfile::tempdir().unwrap();
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
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink_seen = Arc::clone(&seen);
        let events = EventSink::new("ses_1", "root", move |e| {
            sink_seen.lock().unwrap().push(e);
        });
        let recorder = Recorder {
            store: store.clone(),
            session_id: "ses_1".into(),
        };
        let log = observer(&events, Some(&recorder));
        log.nested_call(&NestedCall {
            parent_call_id: "call_9",
            name: "read_file",
            arguments: r#"{"path":"a.txt"}"#,
            is_error: false,
            output_bytes: 12,
            duration: Duration::from_millis(3),
        });
        let emitted = seen.lock().unwrap().clone();
        assert_eq!(
            emitted[0].kind,
            EventKind::SandboxCall {
                parent_call_id: "call_9".into(),
                name: "read_file".into(),
                status: ToolStatus::Ok,
                args_bytes: 16,
                output_bytes: 12,
                duration_ms: 3,
            }
        );
        let stored = store
            .call(|s| s.load_events("ses_1"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].kind, SANDBOX_CALL);
        let payload: serde_json::Value = serde_json::from_str(&stored[0].payload).unwrap();
        assert_eq!(payload["arguments"], r#"{"path":"a.txt"}"#);
        assert_eq!(payload["name"], "read_file");
        assert_eq!(payload["status"], "ok");
        assert_eq!(payload["parent_call_id"], "call_9");
    }
}
