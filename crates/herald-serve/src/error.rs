//! Errors as OpenAI-style JSON (`{"error":{"message","type","code"}}`) with
//! the status code that says what went wrong, and the body, query and path
//! extractors whose rejections are such errors too: no answer of this
//! server is axum's `text/plain` rejection.

use axum::Json;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use herald_core::runtime::RuntimeError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use utoipa::ToSchema;

/// An error answer: status, message, OpenAI error `type` and `code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong and what to do about it.
    pub message: String,
    /// OpenAI's error class (`invalid_request_error`, ...).
    pub kind: &'static str,
    /// A stable machine-readable code (`session_not_found`, ...).
    pub code: &'static str,
}

/// The JSON body of every error answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The inside of [`ErrorBody`].
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub code: String,
}

impl ApiError {
    /// An error with every field given.
    pub fn new(
        status: StatusCode,
        kind: &'static str,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            status,
            message: message.into(),
            kind,
            code,
        }
    }

    /// 400: the request is malformed.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_request",
            message,
        )
    }

    /// 401: no or a wrong bearer token.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "invalid_api_key",
            message,
        )
    }

    /// 404 with `code`.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            code,
            message,
        )
    }

    /// 409 with `code`.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "invalid_request_error", code, message)
    }

    /// 429: too many turns run at once.
    pub fn too_many_turns(limit: usize) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "too_many_turns",
            format!(
                "{limit} turns are running, the most this server runs at once (--max-concurrent-turns); retry when one has ended"
            ),
        )
    }

    /// 500: the server or its store failed.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "internal_error",
            message,
        )
    }

    /// The JSON body of this error.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                message: self.message.clone(),
                kind: self.kind.to_owned(),
                code: self.code.to_owned(),
            },
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.status)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::warn!(status = %self.status, code = self.code, "{}", self.message);
        }
        (self.status, Json(self.body())).into_response()
    }
}

impl From<RuntimeError> for ApiError {
    fn from(err: RuntimeError) -> Self {
        let message = err.to_string();
        match err {
            RuntimeError::UnknownSession(_) | RuntimeError::NoEarlierSession(_) => {
                Self::not_found("session_not_found", message)
            }
            RuntimeError::SessionInUse(_) => Self::conflict("session_in_use", message),
            RuntimeError::TurnRunning(_) => Self::conflict("session_busy", message),
            RuntimeError::Ended(_) => Self::conflict("session_ended", message),
            RuntimeError::UnknownRequest(_) => Self::not_found("request_not_found", message),
            RuntimeError::Invalid(_) => Self::bad_request(message),
            RuntimeError::Config(_) => Self::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "invalid_configuration",
                message,
            ),
            RuntimeError::Store(_) => Self::internal(message),
            RuntimeError::McpPrompt(_) => Self::bad_request(message),
        }
    }
}

/// A JSON body whose rejection (bad JSON, wrong content type, too large) is
/// an [`ApiError`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<Value>::from_request(req, state).await {
            Ok(Json(value)) => from_object(value).map(Self),
            Err(rejection) => Err(body_rejection(rejection.status(), rejection.body_text())),
        }
    }
}

/// `value` as a `T`, when it is a JSON object: every body this server takes
/// is one (serde would also read a struct from an array of its fields). A
/// number without a fraction is an integer, as JSON Schema has it (`2.0`
/// is the integer 2), where serde would refuse it for an integer field.
pub fn from_object<T: DeserializeOwned>(mut value: Value) -> Result<T, ApiError> {
    whole_numbers_as_integers(&mut value);
    if !value.is_object() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_json",
            "the body must be a JSON object",
        ));
    }
    serde_json::from_value(value).map_err(|err| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_json",
            format!("the body does not fit this operation: {err}"),
        )
    })
}

/// A query string whose rejection (a missing or malformed parameter) is a
/// 400 [`ApiError`] with code `invalid_query`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(Self(value)),
            Err(rejection) => Err(rejected(
                rejection.status(),
                "invalid_query",
                rejection.body_text(),
            )),
        }
    }
}

/// Path parameters whose rejection (not UTF-8 once percent-decoded) is a
/// 400 [`ApiError`] with code `invalid_path`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(rejection) => Err(rejected(
                rejection.status(),
                "invalid_path",
                rejection.body_text(),
            )),
        }
    }
}

/// Turns every float without a fraction that an `i64` holds exactly (up to
/// 2^53) into an integer.
fn whole_numbers_as_integers(value: &mut Value) {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() <= EXACT
            {
                #[allow(clippy::cast_possible_truncation)]
                let whole = f as i64;
                *value = Value::from(whole);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

/// A body that could not be read or parsed: 413 when too large, else 400.
pub fn body_rejection(status: StatusCode, text: String) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::new(
            status,
            "invalid_request_error",
            "request_too_large",
            "the request body is larger than this server accepts (--max-body-bytes)",
        );
    }
    rejected(status, "invalid_json", text)
}

/// An extractor's rejection as an error: a client error is a 400 with
/// `code`, anything else (a route without the parameters its handler
/// reads) a 500.
fn rejected(status: StatusCode, code: &'static str, text: String) -> ApiError {
    if status.is_client_error() {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", code, text)
    } else {
        ApiError::internal(text)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn runtime_errors_map_to_statuses() {
        let cases = [
            (RuntimeError::UnknownSession("x".into()), 404),
            (RuntimeError::NoEarlierSession("x".into()), 404),
            (RuntimeError::SessionInUse("x".into()), 409),
            (RuntimeError::TurnRunning("x".into()), 409),
            (RuntimeError::Ended("x".into()), 409),
            (RuntimeError::UnknownRequest("x".into()), 404),
            (RuntimeError::Invalid("x".into()), 400),
            (RuntimeError::Config("x".into()), 400),
            (RuntimeError::Store("x".into()), 500),
        ];
        for (err, status) in cases {
            assert_eq!(ApiError::from(err).status.as_u16(), status);
        }
    }

    #[test]
    fn bodies_are_objects_and_whole_numbers_integers() {
        #[derive(Debug, serde::Deserialize, PartialEq)]
        struct Body {
            turn: u32,
        }
        let body: Body = from_object(serde_json::json!({"turn": 3.0})).unwrap();
        assert_eq!(body, Body { turn: 3 });
        assert_eq!(
            from_object::<Body>(serde_json::json!({"turn": 3.5}))
                .unwrap_err()
                .status,
            400
        );
        let array = from_object::<Body>(serde_json::json!([3])).unwrap_err();
        assert_eq!((array.status.as_u16(), array.code), (400, "invalid_json"));
    }

    #[test]
    fn the_body_is_openai_shaped() {
        let json = serde_json::to_value(ApiError::bad_request("nope").body()).unwrap();
        assert_eq!(json["error"]["message"], "nope");
        assert_eq!(json["error"]["type"], "invalid_request_error");
        assert_eq!(json["error"]["code"], "invalid_request");
    }
}
