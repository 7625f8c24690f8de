//! `GET /api/sessions/{id}/messages`: a stored session's conversation as it
//! happened (compacted messages included), newest page first, with its
//! todo list and the number of its last stored event, so a client shows
//! the transcript at once and follows the live events from there without
//! opening the session.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use herald_core::runtime::Catalog;
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiPath, ApiQuery, ErrorBody};
use crate::state::AppState;

/// The most messages one page holds.
pub(crate) const MAX_PAGE: usize = 1000;
/// Messages per page unless asked otherwise.
pub(crate) const DEFAULT_PAGE: usize = 100;

/// Query of `GET /api/sessions/{id}/messages`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MessagesQuery {
    /// Only messages before this index (0-based, in the whole
    /// conversation); the end when absent.
    #[param(nullable = false)]
    pub before: Option<usize>,
    /// At most this many, the latest of them (default 100, 1..=1000).
    #[param(nullable = false, minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
}

/// One page of a stored conversation.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct MessagePage {
    /// The messages in order: `role`, `content`, `tool_calls`,
    /// `tool_call_id`, ..., with `id`, `seq` and `created_at` (Unix ms);
    /// a tool result also has `duration_ms`, how long its call ran, when
    /// the call's `tool.completed` event is stored.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<Value>,
    /// The index of the first message of the page in the conversation.
    pub start: usize,
    /// How many messages the conversation has.
    pub total: usize,
    /// The todo list (a JSON array), when the session keeps one.
    #[schema(value_type = Option<Object>)]
    pub todos: Option<Value>,
    /// The number of the session tree's last stored event: follow the
    /// event stream with `?after=` this to miss nothing.
    pub last_event_seq: u64,
}

/// A page of a stored session's messages.
#[utoipa::path(
    get,
    path = "/api/sessions/{id}/messages",
    tag = "sessions",
    params(("id" = String, Path, description = "session id"), MessagesQuery),
    responses(
        (status = 200, description = "the page", body = MessagePage),
        (status = 400, description = "a limit out of range", body = ErrorBody),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn page(
    State(state): State<Arc<AppState>>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<MessagesQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit must be 1 to {MAX_PAGE}, not {limit}"
        )));
    }
    let catalog = Catalog::new(state.store.clone());
    catalog.session(&id).await?;
    // Read before the transcript: an event stored in between is then
    // followed twice at worst, never missed.
    let last_event_seq = catalog.last_event_seq(&id).await?;
    let messages = catalog.transcript(&id).await?;
    let total = messages.len();
    let end = query.before.unwrap_or(total).min(total);
    let start = end.saturating_sub(limit);
    let todos = catalog
        .todos(&id)
        .await?
        .and_then(|text| serde_json::from_str::<Value>(&text).ok());
    let mut page = serde_json::to_value(&messages[start..end])
        .map_err(|err| ApiError::internal(format!("cannot encode messages: {err}")))?;
    let durations = catalog.tool_durations(&id).await?;
    add_durations(&mut page, &durations);
    Ok(Json(serde_json::json!({
        "messages": page,
        "start": start,
        "total": total,
        "todos": todos,
        "last_event_seq": last_event_seq,
    })))
}

/// Sets `duration_ms` on each tool result of `page` whose call has one.
fn add_durations(page: &mut Value, durations: &std::collections::HashMap<String, u64>) {
    let Some(messages) = page.as_array_mut() else {
        return;
    };
    for message in messages {
        let Some(object) = message.as_object_mut() else {
            continue;
        };
        let duration = object
            .get("tool_call_id")
            .and_then(Value::as_str)
            .and_then(|call| durations.get(call))
            .copied();
        if let Some(ms) = duration {
            object.insert("duration_ms".to_owned(), Value::from(ms));
        }
    }
}
