//! `GET /v1/models`: the configured model (and the `herald` alias) in
//! OpenAI's list format.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::MODEL_ALIAS;
use crate::error::{ApiError, ApiPath};
use crate::state::AppState;

fn model_object(id: &str) -> Value {
    json!({"id": id, "object": "model", "created": 0, "owned_by": "herald"})
}

/// Lists the models requests may name.
#[utoipa::path(
    get,
    path = "/v1/models",
    tag = "openai",
    responses((status = 200, description = "OpenAI model list: the configured model and the `herald` alias", body = Object)),
    security(("bearer" = []))
)]
pub(crate) async fn list(State(state): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [model_object(&state.settings.model), model_object(MODEL_ALIAS)],
    }))
}

/// One model, or 404.
#[utoipa::path(
    get,
    path = "/v1/models/{model}",
    tag = "openai",
    params(("model" = String, Path, description = "model id")),
    responses(
        (status = 200, description = "the model", body = Object),
        (status = 404, description = "no such model", body = crate::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    ApiPath(model): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    super::check_model(&state, Some(&model))?;
    Ok(Json(model_object(&model)))
}
