//! Streaming Chat Completions: `chat.completion.chunk` events (a role
//! chunk, content chunks, a `finish_reason` chunk, a `usage` chunk when
//! asked for) and `data: [DONE]`. Tool progress goes out as SSE comments
//! (`: tool read_file`), which clients ignore. A failed turn sends an
//! `{"error": ...}` event before `[DONE]`.

use axum::response::{IntoResponse, Response};
use herald_core::runtime::Session;
use herald_protocol::RunStatus;
use serde_json::{Value, json};

use super::chat::{Completion, finish_reason};
use super::follow::{Step, TurnFollower};
use crate::error::ApiError;
use crate::sse::{self, SseSender};
use crate::state::{AppState, StartedTurn, TurnSlot};

/// Starts the turn and answers with its chunk stream (or the error that
/// kept it from starting). The turn runs to its end whether or not the
/// client stays.
pub(super) fn start(
    state: &AppState,
    session: &Session,
    input: String,
    slot: TurnSlot,
    completion: Completion,
    include_usage: bool,
) -> Response {
    let (follower, turn) = match TurnFollower::start(state, session, input, slot) {
        Ok(started) => started,
        Err(err) => return err.into_response(),
    };
    let (tx, response) = sse::channel();
    // If the client goes away this task ends; the turn goes on (and frees
    // its slot) without it.
    tokio::spawn(async move {
        let chunks = Chunks {
            completion,
            include_usage,
        };
        produce(follower, turn, &tx, &chunks).await;
    });
    response
}

struct Chunks {
    completion: Completion,
    include_usage: bool,
}

impl Chunks {
    fn chunk(&self, choices: Value, usage: Option<Value>) -> String {
        let mut chunk = json!({
            "id": self.completion.id,
            "object": "chat.completion.chunk",
            "created": self.completion.created,
            "model": self.completion.model,
            "system_fingerprint": null,
            "choices": choices,
        });
        if self.include_usage {
            chunk["usage"] = usage.unwrap_or(Value::Null);
        }
        chunk.to_string()
    }

    fn delta(&self, delta: Value, finish: Option<&str>) -> String {
        self.chunk(
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]),
            None,
        )
    }
}

async fn produce(mut follower: TurnFollower, turn: StartedTurn, tx: &SseSender, chunks: &Chunks) {
    if !tx
        .data(chunks.delta(json!({"role": "assistant", "content": ""}), None))
        .await
    {
        return;
    }
    let finished = loop {
        let sent = match follower.next().await {
            Step::Text(text) => tx.data(chunks.delta(json!({"content": text}), None)).await,
            Step::Tool(name) => tx.comment(format!("tool {name}")).await,
            Step::Finished(finished) => break Some(finished),
            Step::Gone => break None,
        };
        if !sent {
            return;
        }
    };
    match finished {
        Some(f) if f.status != RunStatus::Failed => {
            let reason = finish_reason(&f.exit_reason);
            if !tx.data(chunks.delta(json!({}), Some(reason))).await {
                return;
            }
            if chunks.include_usage {
                let usage = chunks.chunk(json!([]), Some(super::chat_usage(f.usage)));
                if !tx.data(usage).await {
                    return;
                }
            }
        }
        Some(f) => {
            let error = turn.finished("").await.ok().and_then(|r| r.error);
            let message = error.unwrap_or_else(|| format!("the turn failed ({})", f.exit_reason));
            let err = super::chat::turn_failed(message);
            let _ = tx.data(json!(err.body()).to_string()).await;
        }
        None => {
            let err = ApiError::conflict("session_ended", "the session ended before the turn did");
            let _ = tx.data(json!(err.body()).to_string()).await;
        }
    }
    let _ = tx.data("[DONE]").await;
}
