//! JSON-RPC 2.0 over newline-delimited stdio, as ACP frames it: parsing
//! one incoming line into a request, notification or response (or the
//! error it must be answered with), the single writer every outgoing
//! message goes through, and the table of requests herald sent the client
//! that wait for their answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol_schema::v1::Error as RpcError;
use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// One well-formed incoming message.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A call the client waits on: answered with `result` or `error`.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A call nobody waits on (`session/cancel`).
    Notification { method: String, params: Value },
    /// The client's answer to a request herald sent.
    Response {
        id: Value,
        outcome: Result<Value, RpcError>,
    },
}

/// A line that is not a usable message, and the error response it gets
/// (`id` is `null` when the line had no usable id).
#[derive(Debug)]
pub(crate) struct Malformed {
    pub id: Value,
    pub error: RpcError,
}

/// Parses one line of input.
pub(crate) fn parse_line(line: &str) -> Result<Incoming, Malformed> {
    let value: Value = serde_json::from_str(line).map_err(|err| Malformed {
        id: Value::Null,
        error: RpcError::parse_error().data(json!(format!(
            "the line is not JSON ({err}); send one JSON-RPC 2.0 object per line"
        ))),
    })?;
    let invalid = |id: Value, why: &str| Malformed {
        id,
        error: RpcError::invalid_request().data(json!(why)),
    };
    let Value::Object(mut object) = value else {
        return Err(invalid(
            Value::Null,
            "expected one JSON-RPC 2.0 object per line (batches are not supported)",
        ));
    };
    let id = object.remove("id");
    if id.as_ref().is_some_and(|id| !valid_id(id)) {
        return Err(invalid(Value::Null, "`id` must be a string or an integer"));
    }
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(
            id.unwrap_or(Value::Null),
            "`jsonrpc` must be \"2.0\"",
        ));
    }
    let params = object.remove("params").unwrap_or(Value::Null);
    match (object.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Incoming::Notification { method, params }),
        (Some(_), id) => Err(invalid(
            id.unwrap_or(Value::Null),
            "`method` must be a string",
        )),
        (None, Some(id)) => {
            let outcome = match (object.remove("result"), object.remove("error")) {
                (Some(result), None) => Ok(result),
                (None, Some(error)) => Err(serde_json::from_value::<RpcError>(error)
                    .unwrap_or_else(|_| RpcError::internal_error())),
                _ => {
                    return Err(invalid(
                        id,
                        "a response needs exactly one of `result` and `error`",
                    ));
                }
            };
            Ok(Incoming::Response { id, outcome })
        }
        (None, None) => Err(invalid(
            Value::Null,
            "a message needs a `method` (request, notification) or an `id` (response)",
        )),
    }
}

fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// Everything herald writes to stdout, one JSON object per line, in the
/// order it was handed over (cheap to clone).
#[derive(Clone, Debug)]
pub(crate) struct Outbox {
    lines: mpsc::UnboundedSender<String>,
}

impl Outbox {
    /// An outbox and the task that writes it to `out` until every clone is
    /// dropped. Lines queued together are flushed together.
    pub(crate) fn spawn<W: AsyncWrite + Unpin + Send + 'static>(
        mut out: W,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (lines, mut queue) = mpsc::unbounded_channel::<String>();
        let writer = tokio::spawn(async move {
            while let Some(first) = queue.recv().await {
                let mut batch = first;
                batch.push('\n');
                while let Ok(next) = queue.try_recv() {
                    batch.push_str(&next);
                    batch.push('\n');
                }
                if let Err(err) = out.write_all(batch.as_bytes()).await {
                    tracing::warn!(%err, "cannot write to stdout; the client went away");
                    return;
                }
                if let Err(err) = out.flush().await {
                    tracing::warn!(%err, "cannot flush stdout; the client went away");
                    return;
                }
            }
        });
        (Self { lines }, writer)
    }

    fn send(&self, message: &Value) {
        match serde_json::to_string(message) {
            Ok(line) => {
                let _ = self.lines.send(line);
            }
            Err(err) => tracing::error!(%err, "cannot encode an outgoing message"),
        }
    }

    /// Answers request `id`.
    pub(crate) fn respond(&self, id: Value, outcome: Result<Value, RpcError>) {
        let message = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        self.send(&message);
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: impl serde::Serialize) {
        match serde_json::to_value(params) {
            Ok(params) => self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params})),
            Err(err) => tracing::error!(%err, method, "cannot encode a notification"),
        }
    }
}

/// Why a request herald sent the client got no usable answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PeerError {
    #[error("the client answered {method} with an error: {error}")]
    Refused { method: String, error: RpcError },
    #[error("the client closed the connection before answering {0}")]
    Gone(String),
    #[error("the client's answer to {method} does not fit its schema: {message}")]
    Malformed { method: String, message: String },
}

type Waiter = oneshot::Sender<Result<Value, RpcError>>;

/// Requests herald sends the client (`session/request_permission`), each
/// waiting for the response with its id.
#[derive(Debug)]
pub(crate) struct Peer {
    outbox: Outbox,
    next_id: AtomicI64,
    waiting: Mutex<HashMap<i64, Waiter>>,
}

impl Peer {
    pub(crate) fn new(outbox: Outbox) -> Self {
        Self {
            outbox,
            next_id: AtomicI64::new(0),
            waiting: Mutex::new(HashMap::new()),
        }
    }

    /// Sends `method` and waits for the client's answer, decoded as `R`.
    pub(crate) async fn request<R: serde::de::DeserializeOwned>(
        self: &Arc<Self>,
        method: &str,
        params: impl serde::Serialize,
    ) -> Result<R, PeerError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (done, answer) = oneshot::channel();
        self.lock().insert(id, done);
        let params = serde_json::to_value(params).map_err(|err| PeerError::Malformed {
            method: method.to_owned(),
            message: err.to_string(),
        })?;
        self.outbox
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let value = answer
            .await
            .map_err(|_| PeerError::Gone(method.to_owned()))?
            .map_err(|error| PeerError::Refused {
                method: method.to_owned(),
                error,
            })?;
        serde_json::from_value(value).map_err(|err| PeerError::Malformed {
            method: method.to_owned(),
            message: err.to_string(),
        })
    }

    /// Hands a response to the request waiting for it; a response to no
    /// request of ours is logged and dropped.
    pub(crate) fn resolve(&self, id: &Value, outcome: Result<Value, RpcError>) {
        let waiter = id.as_i64().and_then(|id| self.lock().remove(&id));
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(outcome);
            }
            None => tracing::warn!(%id, "a response to no request herald sent; ignored"),
        }
    }

    /// Fails every waiting request (the client closed stdin).
    pub(crate) fn close(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Waiter>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn code(line: &str) -> i32 {
        i32::from(parse_line(line).unwrap_err().error.code)
    }

    #[test]
    fn malformed_lines_get_the_json_rpc_codes() {
        assert_eq!(code("{not json"), -32700);
        assert_eq!(code("[1, 2]"), -32600);
        assert_eq!(code(r#"{"id": 1, "method": "x"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc": "2.0", "id": 1, "method": 7}"#), -32600);
        assert_eq!(
            code(r#"{"jsonrpc": "2.0", "id": {"a": 1}, "method": "x"}"#),
            -32600
        );
        assert_eq!(code(r#"{"jsonrpc": "2.0"}"#), -32600);
        let bad = parse_line(r#"{"jsonrpc": "1.0", "id": 5, "method": "x"}"#).unwrap_err();
        assert_eq!(bad.id, json!(5));
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        assert!(matches!(
            parse_line(r#"{"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": {}}"#),
            Ok(Incoming::Request { .. })
        ));
        assert!(matches!(
            parse_line(r#"{"jsonrpc": "2.0", "method": "session/cancel", "params": {}}"#),
            Ok(Incoming::Notification { .. })
        ));
        assert!(matches!(
            parse_line(r#"{"jsonrpc": "2.0", "id": 3, "result": {"outcome": {}}}"#),
            Ok(Incoming::Response { outcome: Ok(_), .. })
        ));
        assert!(matches!(
            parse_line(r#"{"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "x"}}"#),
            Ok(Incoming::Response {
                outcome: Err(_),
                ..
            })
        ));
    }
}
