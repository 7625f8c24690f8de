//! The web UI: its files, embedded in the binary and served at `/`, and the
//! browser login (`GET /login?code=` with the one-time code printed at
//! start, `POST /api/login` with the token typed into the page,
//! `POST /api/logout`). The page is plain ES modules with no build step; it
//! talks only to the public API, as any other client would.

mod assets;
pub(crate) mod auth;
pub(crate) mod guard;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde::Deserialize;

use self::auth::{COOKIE, LoginRefusal, clear_cookie, cookie_value, set_cookie};
use self::guard::{Guard, client_ip};
use crate::error::ApiError;

/// The routes of the page and of logging in.
pub(crate) fn router(guard: Arc<Guard>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/favicon.ico", get(favicon))
        .route("/assets/{name}", get(asset))
        .route("/login", get(login_with_code))
        .route("/api/login", post(login_with_token))
        .route("/api/logout", post(logout))
        .with_state(guard)
}

fn file(name: &str) -> Response {
    match assets::find(name) {
        Some(asset) => (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(asset.content_type),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
            asset.body,
        )
            .into_response(),
        None => {
            ApiError::not_found("not_found", format!("the UI has no file {name:?}")).into_response()
        }
    }
}

async fn index() -> Response {
    file("index.html")
}

async fn favicon() -> Response {
    file("icon.svg")
}

async fn asset(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    file(&name)
}

/// Query of `GET /login`.
#[derive(Debug, Deserialize)]
struct CodeQuery {
    code: Option<String>,
}

/// Where the login page goes after a code: the UI with a cookie, or the UI
/// saying why not (it then asks for the token).
fn redirect(to: &str, cookie: Option<String>) -> Response {
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, to.to_owned())]).into_response();
    if let Some(cookie) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

async fn login_with_code(
    State(guard): State<Arc<Guard>>,
    query: Result<Query<CodeQuery>, axum::extract::rejection::QueryRejection>,
    request: Request,
) -> Response {
    let code = query.ok().and_then(|q| q.0.code).unwrap_or_default();
    if code.is_empty() {
        return redirect("/", None);
    }
    match guard.auth.login_with_code(client_ip(&request), &code) {
        Ok(value) => redirect("/", Some(set_cookie(&value, guard.secure))),
        Err(LoginRefusal::Wrong) => redirect("/#/login/code-refused", None),
        Err(LoginRefusal::TooMany { .. }) => redirect("/#/login/too-many", None),
    }
}

/// Body of `POST /api/login`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenLogin {
    token: String,
}

async fn login_with_token(State(guard): State<Arc<Guard>>, request: Request) -> Response {
    let client = client_ip(&request);
    let body: Bytes = match axum::body::to_bytes(request.into_body(), 64 * 1024).await {
        Ok(body) => body,
        Err(_) => {
            return ApiError::bad_request("the login body could not be read").into_response();
        }
    };
    let login: TokenLogin = match serde_json::from_slice(&body) {
        Ok(login) => login,
        Err(err) => {
            return ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "invalid_json",
                format!("send {{\"token\": \"...\"}}: {err}"),
            )
            .into_response();
        }
    };
    match guard.auth.login_with_token(client, &login.token) {
        Ok(value) => {
            let mut response = StatusCode::NO_CONTENT.into_response();
            if let Ok(cookie) = HeaderValue::from_str(&set_cookie(&value, guard.secure)) {
                response.headers_mut().insert(header::SET_COOKIE, cookie);
            }
            response
        }
        Err(LoginRefusal::Wrong) => ApiError::unauthorized(
            "the token is wrong; it is the --token given to herald serve, HERALD_SERVE_TOKEN, or the one in $HERALD_HOME/serve.token",
        )
        .into_response(),
        Err(LoginRefusal::TooMany { retry_after_secs }) => {
            let mut response = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "too_many_logins",
                format!(
                    "too many failed logins from this address; retry in {retry_after_secs} s"
                ),
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
            response
        }
    }
}

async fn logout(State(guard): State<Arc<Guard>>, request: Request) -> Response {
    if let Some(value) = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| cookie_value(v, COOKIE))
    {
        guard.auth.forget(value);
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    if let Ok(cookie) = HeaderValue::from_str(&clear_cookie()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}
