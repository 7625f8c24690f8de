//! Every route, and the JSON answers for unknown paths and methods.

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};

use crate::error::ApiError;
use crate::state::AppState;
use crate::{api, openai, openapi};

/// The router over `state` (without the auth and limit layers).
pub(crate) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/models", get(openai::models::list))
        .route("/v1/models/{model}", get(openai::models::get))
        .route("/v1/chat/completions", post(openai::chat::completions))
        .route("/v1/responses", post(openai::responses::create))
        .route(
            "/api/sessions",
            post(api::sessions::create).get(api::sessions::list),
        )
        .route("/api/sessions/search", get(api::sessions::search))
        .route(
            "/api/sessions/{id}",
            get(api::sessions::get).delete(api::sessions::delete),
        )
        .route("/api/sessions/{id}/messages", get(api::messages::page))
        .route("/api/sessions/{id}/turns", post(api::turns::start))
        .route("/api/sessions/{id}/ops", post(api::ops::submit))
        .route("/api/sessions/{id}/events", get(api::events::follow))
        .route(
            "/api/sessions/{id}/interrupt",
            post(api::control::interrupt),
        )
        .route("/api/sessions/{id}/questions", get(api::control::questions))
        .route(
            "/api/sessions/{id}/clarify/{request_id}",
            post(api::control::clarify),
        )
        .route("/api/sessions/{id}/approvals", get(api::control::approvals))
        .route(
            "/api/sessions/{id}/approvals/{request_id}",
            post(api::control::approve),
        )
        .route(
            "/api/sessions/{id}/elicitations",
            get(api::control::elicitations),
        )
        .route(
            "/api/sessions/{id}/elicitations/{request_id}",
            post(api::control::answer_elicitation),
        )
        .route("/api/sessions/{id}/agents", get(api::control::agents))
        .route(
            "/api/sessions/{id}/agents/{agent_id}/cancel",
            post(api::control::cancel_agent),
        )
        .route(
            "/api/sessions/{id}/agents/{agent_id}/messages",
            post(api::control::message_agent),
        )
        .route(
            "/api/sessions/{id}/agents/{agent_id}/followup",
            post(api::control::follow_up_agent),
        )
        .route("/api/usage", get(api::usage::report))
        .route("/api/settings", get(api::settings::view))
        .route("/api/doctor", get(crate::doctor::report))
        .route("/api/openapi.json", get(openapi::document))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::not_found(
        "not_found",
        "no such route; GET /api/openapi.json lists them",
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        "method_not_allowed",
        "this route does not take that method; GET /api/openapi.json lists them",
    )
}
