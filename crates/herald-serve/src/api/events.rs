//! `GET /api/sessions/{id}/events`: the session tree's events (subagents'
//! included) as server-sent events, each `data:` one JSON event as `herald
//! run --json` prints it, with `id:` its number. `Last-Event-ID` (or
//! `?after=N`) first replays the stored events after N, then follows live
//! ones, none missed or repeated; without either the stream starts now.
//! `assistant.delta` events are live only and carry no id. The stream ends
//! when the session ends. A session another herald process holds (a CLI
//! run) cannot be followed here: with a starting point its stored events
//! are replayed and the stream ends; without one it is 409.

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::response::sse::Event as SseEvent;
use herald_core::runtime::{self, ClarifyPolicy, Subscription};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::{ApiError, ApiPath, ApiQuery, ErrorBody};
use crate::sse::{self, SseSender};
use crate::state::AppState;

/// Query of the event stream.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Replay the stored events after this number first (0: all of them).
    /// The `Last-Event-ID` header wins over it.
    #[param(nullable = false)]
    pub after: Option<u64>,
}

fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default().trim();
    text.parse().map(Some).map_err(|_| {
        ApiError::bad_request(format!(
            "Last-Event-ID must be an event number, not {text:?}"
        ))
    })
}

/// Follows the session's events.
#[utoipa::path(
    get,
    path = "/api/sessions/{id}/events",
    tag = "events",
    params(
        ("id" = String, Path, description = "session id"),
        ("Last-Event-ID" = Option<u64>, Header, nullable = false, description = "resume after this event"),
        EventsQuery
    ),
    responses(
        (status = 200, description = "text/event-stream of events (`id:` = event number)", content_type = "text/event-stream", body = crate::sse::SseEvent),
        (status = 400, description = "a bad Last-Event-ID", body = ErrorBody),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 409, description = "another process holds the session (with Last-Event-ID or after, its stored events are replayed instead), or it has ended", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn follow(
    State(state): State<Arc<AppState>>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let after = last_event_id(&headers)?.or(query.after);
    let sub = match (state.session(&id, ClarifyPolicy::Ask).await, after) {
        (Ok(session), after) => session.events(after),
        (Err(err), Some(after)) if err.code == "session_in_use" => {
            runtime::replay(&state.store, &id, after).await?
        }
        (Err(err), _) => return Err(err),
    };
    let (tx, response) = sse::channel();
    tokio::spawn(async move {
        tokio::select! {
            () = forward(sub, &tx) => {}
            () = tx.closed() => {}
        }
    });
    Ok(response)
}

async fn forward(mut sub: Subscription, tx: &SseSender) {
    while let Some(event) = sub.next().await {
        let data = match serde_json::to_string(&*event) {
            Ok(data) => data,
            Err(err) => {
                tracing::warn!("an event could not be encoded: {err}");
                continue;
            }
        };
        let mut sse = SseEvent::default().data(data);
        if let Some(seq) = event.seq {
            sse = sse.id(seq.to_string());
        }
        if !tx.send(sse).await {
            return;
        }
    }
}
