//! `GET /api/openapi.json`: the OpenAPI document of every route.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::{api, error, openai};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "herald serve",
        description = "herald sessions over HTTP: OpenAI-compatible endpoints (each request is one agent turn, run with its whole tool loop) and the native session API. Every route needs `Authorization: Bearer <token>`; errors are `{\"error\": {\"message\", \"type\", \"code\"}}`."
    ),
    paths(
        openai::models::list,
        openai::models::get,
        openai::chat::completions,
        openai::responses::create,
        api::sessions::create,
        api::sessions::list,
        api::sessions::search,
        api::sessions::get,
        api::sessions::delete,
        api::turns::start,
        api::ops::submit,
        api::events::follow,
        api::control::interrupt,
        api::control::clarify,
        api::control::approvals,
        api::control::approve,
        api::control::elicitations,
        api::control::answer_elicitation,
        api::control::agents,
        api::control::cancel_agent,
        document,
    ),
    components(schemas(
        error::ErrorBody,
        error::ErrorDetail,
        openai::chat::ChatRequest,
        openai::chat::ChatMessage,
        openai::chat::StreamOptions,
        openai::responses::ResponsesRequest,
        api::sessions::CreateSession,
        api::sessions::Clarify,
        api::sessions::SessionInfo,
        api::sessions::SessionList,
        api::turns::TurnRequest,
        api::turns::TurnAccepted,
        api::turns::TurnResultView,
        api::control::Interrupted,
        api::control::ClarifyAnswer,
        api::control::ApprovalDecision,
        api::control::ApprovalList,
        api::control::ElicitationAnswer,
        api::control::ElicitationList,
        api::control::AgentList,
        api::control::Done,
        api::ops::OpAccepted,
    )),
    modifiers(&BearerAuth),
    tags(
        (name = "openai", description = "OpenAI-compatible endpoints"),
        (name = "sessions", description = "stored and open sessions"),
        (name = "turns", description = "running turns"),
        (name = "events", description = "a session's event stream"),
        (name = "control", description = "interrupt, clarify, approvals, elicitations, subagents"),
        (name = "meta", description = "this document")
    )
)]
pub(crate) struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The OpenAPI document of this server.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "meta",
    responses((status = 200, description = "OpenAPI 3.1 document", body = Object)),
    security(("bearer" = []))
)]
pub(crate) async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
