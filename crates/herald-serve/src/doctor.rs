//! The doctor's report over HTTP (`GET /api/doctor`, the Settings page).
//!
//! The checks themselves (config, credentials, provider, store, Python,
//! sandbox, browser, MCP servers) belong to the command line (`herald
//! doctor`), which knows how the configuration was located. The binary
//! hands a [`Doctor`] to the server at startup ([`crate::ServeConfig`]'s
//! `doctor`), so both run the very same checks.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use futures_util::future::BoxFuture;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// The verdict of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Works as configured.
    Ok,
    /// Works, but something is off (a feature disabled, a key missing).
    Warn,
    /// Broken: the detail says what to do.
    Fail,
}

/// One line of the doctor's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct DoctorCheck {
    /// What was checked (`config`, `provider`, `python`, `mcp:NAME`, …).
    pub name: String,
    pub status: CheckStatus,
    /// What was found, and for a warning or failure how to fix it.
    pub detail: String,
}

impl DoctorCheck {
    /// A check named `name`.
    pub fn new(name: impl Into<String>, status: CheckStatus, detail: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status,
            detail: detail.into(),
        }
    }
}

/// The answer of `GET /api/doctor` (and of `herald doctor --json`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DoctorReport {
    /// No check failed.
    pub ok: bool,
    /// Every check, in the order `herald doctor` prints them.
    pub checks: Vec<DoctorCheck>,
}

impl DoctorReport {
    /// The report of `checks`.
    pub fn new(checks: Vec<DoctorCheck>) -> Self {
        Self {
            ok: !checks.iter().any(|c| c.status == CheckStatus::Fail),
            checks,
        }
    }
}

/// Runs the doctor's checks on request. Implemented by the binary, which
/// owns them; the server only reports what it returns.
pub trait Doctor: Send + Sync {
    /// Every check, run now (a check may take seconds: the provider probe
    /// waits up to its timeout). An error means the checks could not run.
    fn run(&self) -> BoxFuture<'static, Result<Vec<DoctorCheck>, String>>;
}

/// The doctor's checks, run now (as `herald doctor --json` would).
#[utoipa::path(
    get,
    path = "/api/doctor",
    tag = "meta",
    responses(
        (status = 200, description = "every check with its status and detail", body = DoctorReport),
        (status = 500, description = "the checks could not run", body = ErrorBody),
        (status = 404, description = "this server has no doctor (embedded without the herald binary's checks)", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub(crate) async fn report(
    State(state): State<Arc<AppState>>,
) -> Result<Json<DoctorReport>, ApiError> {
    let Some(doctor) = state.doctor.clone() else {
        return Err(ApiError::not_found(
            "doctor_unavailable",
            "this server runs without the doctor's checks; run `herald doctor` on its machine",
        ));
    };
    let checks = doctor
        .run()
        .await
        .map_err(|err| ApiError::internal(format!("the doctor's checks could not run: {err}")))?;
    Ok(Json(DoctorReport::new(checks)))
}
