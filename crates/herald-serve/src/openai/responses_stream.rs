//! Streaming Responses: `response.created`, `response.in_progress`, the
//! message item and its text part opening, `response.output_text.delta`
//! per piece of text, their closing events, and `response.completed` (or
//! `response.failed`). Each event is `event: TYPE` with a JSON `data`
//! carrying `type` and `sequence_number`. Tool progress goes out as SSE
//! comments.

use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use herald_core::runtime::Session;
use herald_protocol::RunStatus;
use serde_json::{Value, json};

use super::follow::{Step, TurnFollower};
use super::responses::{Outcome, ResponseIds};
use crate::sse::{self, SseSender};
use crate::state::{AppState, StartedTurn, TurnSlot};

/// Starts the turn and answers with its event stream (or the error that
/// kept it from starting). The turn runs to its end whether or not the
/// client stays.
pub(super) fn start(
    state: &AppState,
    session: &Session,
    input: String,
    slot: TurnSlot,
    ids: ResponseIds,
) -> Response {
    let (follower, turn) = match TurnFollower::start(state, session, input, slot) {
        Ok(started) => started,
        Err(err) => return err.into_response(),
    };
    let (tx, response) = sse::channel();
    tokio::spawn(async move {
        let mut out = Writer {
            tx,
            ids,
            sequence: 0,
        };
        produce(follower, turn, &mut out).await;
    });
    response
}

struct Writer {
    tx: SseSender,
    ids: ResponseIds,
    sequence: u64,
}

impl Writer {
    /// Sends event `kind` with `fields`; false once the client is gone.
    async fn send(&mut self, kind: &str, mut fields: Value) -> bool {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        self.tx
            .send(Event::default().event(kind).data(fields.to_string()))
            .await
    }

    fn part(&self, text: &str) -> Value {
        json!({
            "item_id": self.ids.message_id,
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": text, "annotations": [], "logprobs": []},
        })
    }
}

async fn produce(mut follower: TurnFollower, turn: StartedTurn, out: &mut Writer) {
    let running = out.ids.object(&Outcome::Running);
    let item = out.ids.message_item("", "in_progress");
    let opened = out
        .send("response.created", json!({"response": running}))
        .await
        && out
            .send("response.in_progress", json!({"response": running}))
            .await
        && out
            .send(
                "response.output_item.added",
                json!({"output_index": 0, "item": item}),
            )
            .await
        && out.send("response.content_part.added", out.part("")).await;
    if !opened {
        return;
    }
    let mut text = String::new();
    let finished = loop {
        let sent = match follower.next().await {
            Step::Text(piece) => {
                text.push_str(&piece);
                let delta = json!({
                    "item_id": out.ids.message_id,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                });
                out.send("response.output_text.delta", delta).await
            }
            Step::Tool(name) => out.tx.comment(format!("tool {name}")).await,
            Step::Finished(finished) => break Some(finished),
            Step::Gone => break None,
        };
        if !sent {
            return;
        }
    };
    let failure = match &finished {
        Some(f) if f.status != RunStatus::Failed => None,
        Some(f) => Some(
            turn.finished("")
                .await
                .ok()
                .and_then(|r| r.error)
                .unwrap_or_else(|| format!("the turn failed ({})", f.exit_reason)),
        ),
        None => Some("the session ended before the turn did".to_owned()),
    };
    if let Some(message) = failure {
        let failed = out.ids.object(&Outcome::Failed { message: &message });
        let _ = out
            .send("response.failed", json!({"response": failed}))
            .await;
        return;
    }
    let usage = finished.map(|f| f.usage).unwrap_or_default();
    let done = json!({
        "item_id": out.ids.message_id,
        "output_index": 0,
        "content_index": 0,
        "text": text,
        "logprobs": [],
    });
    let item = out.ids.message_item(&text, "completed");
    let completed = out.ids.object(&Outcome::Completed { text: &text, usage });
    let _ = out.send("response.output_text.done", done).await
        && out
            .send("response.content_part.done", out.part(&text))
            .await
        && out
            .send(
                "response.output_item.done",
                json!({"output_index": 0, "item": item}),
            )
            .await
        && out
            .send("response.completed", json!({"response": completed}))
            .await;
}
