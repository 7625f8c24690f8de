//! `GET /api/usage`: spend, tokens and the cache-hit share by day, model,
//! session or project — the same query and the same JSON as `herald usage
//! --json`.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use herald_core::runtime::Catalog;
use herald_store::UsageGrouping;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiQuery, ErrorBody};
use crate::state::AppState;

/// How usage rows are grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UsageBy {
    /// UTC calendar day.
    #[default]
    Day,
    Model,
    /// The root session of each tree.
    Session,
    /// The working directory of the root session.
    Project,
}

impl From<UsageBy> for UsageGrouping {
    fn from(by: UsageBy) -> Self {
        match by {
            UsageBy::Day => Self::Day,
            UsageBy::Model => Self::Model,
            UsageBy::Session => Self::Session,
            UsageBy::Project => Self::Project,
        }
    }
}

/// Query of `GET /api/usage`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// Only requests made at or after this time (Unix ms); all when absent
    /// (`herald usage --since` turns its age or date into this).
    #[param(nullable = false)]
    pub since_ms: Option<i64>,
    /// How rows are grouped (default `day`).
    #[serde(default)]
    #[param(inline)]
    pub by: UsageBy,
}

/// The answer of `GET /api/usage`, as `herald usage --json` prints it.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct UsageReport {
    /// The start of the period (Unix ms); `null` for all time.
    pub since_ms: Option<i64>,
    /// The grouping.
    pub by: UsageBy,
    /// One row per group, the most expensive first: `key` and the totals
    /// (`input`, `output`, `cached`, `cache_creation`, `requests`,
    /// `cost_usd`, `null` when a model has no price).
    #[schema(value_type = Vec<Object>)]
    pub rows: Vec<Value>,
    /// The sum of the rows.
    #[schema(value_type = Object)]
    pub total: Value,
}

/// Usage of the stored requests, grouped.
#[utoipa::path(
    get,
    path = "/api/usage",
    tag = "usage",
    params(UsageQuery),
    responses(
        (status = 200, description = "usage rows and their total", body = UsageReport),
        (status = 500, description = "the session store failed", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn report(
    State(state): State<Arc<AppState>>,
    ApiQuery(query): ApiQuery<UsageQuery>,
) -> Result<Json<Value>, ApiError> {
    let rows = Catalog::new(state.store.clone())
        .usage(query.since_ms, query.by.into())
        .await?;
    let total = Catalog::usage_total(&rows);
    Ok(Json(serde_json::json!({
        "since_ms": query.since_ms,
        "by": query.by,
        "rows": rows,
        "total": total,
    })))
}
