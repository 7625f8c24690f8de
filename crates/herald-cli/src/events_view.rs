//! `herald sessions show ID --events`: a session's stored event stream, as
//! one readable line per event or (with `--json`) one JSON event per line.
//!
//! Rows are read as JSON values rather than `EventKind`s, so event types
//! this build does not know and rows written before the whole stream was
//! stored (bare `sandbox.call` payloads) still show.

use herald_store::StoredEvent;
use serde_json::{Map, Value};

use crate::render::preview;

/// The stored event as the JSON line `--json` prints: the event as emitted
/// plus its stored `id`.
pub(crate) fn json_event(stored: &StoredEvent) -> Value {
    let mut object = match serde_json::from_str::<Value>(&stored.payload) {
        Ok(Value::Object(object)) => object,
        Ok(other) => Map::from_iter([("payload".to_owned(), other)]),
        Err(_) => Map::from_iter([("payload".to_owned(), Value::from(stored.payload.clone()))]),
    };
    object
        .entry("type")
        .or_insert_with(|| Value::from(stored.kind.clone()));
    object
        .entry("session_id")
        .or_insert_with(|| Value::from(stored.session_id.clone()));
    object
        .entry("agent_id")
        .or_insert_with(|| Value::from(stored.agent_id.clone()));
    object.insert("id".to_owned(), Value::from(stored.id));
    Value::Object(object)
}

fn text<'a>(event: &'a Value, key: &str) -> &'a str {
    event[key].as_str().unwrap_or_default()
}

fn number(event: &Value, key: &str) -> u64 {
    event[key].as_u64().unwrap_or_default()
}

/// `HH:MM:SS.mmm` of the event's timestamp.
fn clock(event: &Value, created_at: i64) -> String {
    match text(event, "ts").split_once('T') {
        Some((_, time)) => time.trim_end_matches('Z').to_owned(),
        None => crate::sessions_cmd::when(created_at),
    }
}

/// One readable line: id, time, agent, type and what matters for that type;
/// stored text (model output, tool arguments, errors) is stripped of
/// terminal control sequences.
pub(crate) fn human_line(stored: &StoredEvent) -> String {
    let event = json_event(stored);
    let kind = text(&event, "type");
    let detail = match kind {
        "session.started" => format!(
            "{} ({}) in {}{}",
            text(&event, "model"),
            text(&event, "provider"),
            text(&event, "cwd"),
            if event["resumed"] == true {
                ", resumed"
            } else {
                ""
            }
        ),
        "assistant.message" => {
            let calls: Vec<&str> = event["tool_calls"]
                .as_array()
                .map(|calls| calls.iter().map(|c| text(c, "name")).collect())
                .unwrap_or_default();
            let mut line = preview(text(&event, "text"), 100);
            if !calls.is_empty() {
                line.push_str(&format!(" → {}", calls.join(", ")));
            }
            line
        }
        "tool.started" => format!(
            "{} {}",
            text(&event, "name"),
            preview(text(&event, "arguments"), 100)
        ),
        "tool.completed" => format!(
            "{} {} in {} ms ({} bytes)",
            text(&event, "name"),
            text(&event, "status"),
            number(&event, "duration_ms"),
            number(&event, "output_bytes")
        ),
        "sandbox.call" => format!(
            "{} {} in {} ms {} (inside {})",
            text(&event, "name"),
            text(&event, "status"),
            number(&event, "duration_ms"),
            preview(text(&event, "arguments"), 100),
            text(&event, "parent_call_id")
        ),
        "usage" => format!(
            "in {} out {} cached {} · {}",
            number(&event, "input_tokens"),
            number(&event, "output_tokens"),
            number(&event, "cached_tokens"),
            event["cost_usd"]
                .as_f64()
                .map_or_else(|| "cost unknown".to_owned(), |usd| format!("${usd}"))
        ),
        "retry" => format!(
            "attempt {} in {} ms: {}",
            number(&event, "attempt"),
            number(&event, "delay_ms"),
            preview(text(&event, "reason"), 120)
        ),
        "compaction" => format!(
            "~{} → ~{} tokens",
            number(&event, "tokens_before"),
            number(&event, "tokens_after")
        ),
        "subagent.started" => format!(
            "depth {}{} from {}: {}",
            number(&event, "depth"),
            if event["background"] == true {
                ", background"
            } else {
                ""
            },
            text(&event, "parent_id"),
            preview(text(&event, "goal"), 100)
        ),
        "subagent.tool" => text(&event, "tool").to_owned(),
        "subagent.completed" => format!(
            "{} ({}) after {:.1} s: {}",
            text(&event, "status"),
            text(&event, "exit_reason"),
            event["duration_seconds"].as_f64().unwrap_or_default(),
            preview(text(&event, "summary"), 100)
        ),
        "run.completed" => format!(
            "{} ({}) after {} iterations, {} ms: {}",
            text(&event, "status"),
            text(&event, "exit_reason"),
            number(&event, "iterations"),
            number(&event, "duration_ms"),
            preview(text(&event, "final_response"), 100)
        ),
        "hook.ran" => format!(
            "{} {} in {} ms: {}{}",
            text(&event, "event"),
            text(&event, "outcome"),
            number(&event, "duration_ms"),
            preview(text(&event, "command"), 80),
            match event["message"].as_str() {
                Some(message) => format!(" ({})", preview(message, 120)),
                None => String::new(),
            }
        ),
        "error" => format!(
            "{}{}",
            if event["fatal"] == true {
                "fatal: "
            } else {
                ""
            },
            preview(text(&event, "message"), 160)
        ),
        _ => {
            let mut rest = event.as_object().cloned().unwrap_or_default();
            for key in ["id", "type", "session_id", "agent_id", "ts"] {
                rest.remove(key);
            }
            preview(&Value::Object(rest).to_string(), 160)
        }
    };
    let line = format!(
        "#{} {} {} {kind} {detail}",
        stored.id,
        clock(&event, stored.created_at),
        text(&event, "agent_id")
    );
    herald_protocol::one_line(line.trim_end())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn stored(id: i64, kind: &str, payload: &str) -> StoredEvent {
        StoredEvent {
            id,
            session_id: "ses_1".into(),
            agent_id: "root".into(),
            kind: kind.into(),
            payload: payload.into(),
            created_at: 0,
            root_session_id: Some("ses_1".into()),
            seq: Some(id),
        }
    }

    #[test]
    fn hook_runs_show_event_outcome_duration_command_and_why() {
        let row = stored(
            3,
            "hook.ran",
            r#"{"type":"hook.ran","session_id":"ses_1","agent_id":"root","ts":"2025-01-02T03:04:05.678Z","event":"pre_tool","command":"./guard.sh","outcome":"blocked","duration_ms":7,"message":"no rm"}"#,
        );
        assert_eq!(
            human_line(&row),
            "#3 03:04:05.678 root hook.ran pre_tool blocked in 7 ms: ./guard.sh (no rm)"
        );
    }

    #[test]
    fn sandbox_calls_show_tool_arguments_status_and_duration() {
        let row = stored(
            7,
            "sandbox.call",
            r#"{"type":"sandbox.call","session_id":"ses_1","agent_id":"root","ts":"2025-01-02T03:04:05.678Z","parent_call_id":"call_1","name":"read_file","status":"ok","arguments":"{\"path\":\"a.txt\"}","args_bytes":16,"output_bytes":9,"duration_ms":4}"#,
        );
        assert_eq!(
            human_line(&row),
            r#"#7 03:04:05.678 root sandbox.call read_file ok in 4 ms {"path":"a.txt"} (inside call_1)"#
        );
        let json = json_event(&row);
        assert_eq!(json["id"], 7);
        assert_eq!(json["type"], "sandbox.call");
        assert_eq!(json["arguments"], r#"{"path":"a.txt"}"#);
    }

    #[test]
    fn rows_from_before_the_event_stream_still_read() {
        // v6 stored bare payloads without type, ids or timestamp.
        let row = stored(
            3,
            "sandbox.call",
            r#"{"parent_call_id":"call_1","name":"terminal","status":"error","arguments":"{}","duration_ms":12}"#,
        );
        let line = human_line(&row);
        assert!(
            line.contains("root sandbox.call terminal error in 12 ms {}"),
            "{line}"
        );
        assert_eq!(json_event(&row)["type"], "sandbox.call");
        let unknown = stored(4, "future.kind", "not json");
        assert_eq!(json_event(&unknown)["payload"], "not json");
        assert!(human_line(&unknown).contains("future.kind"));
    }
}
