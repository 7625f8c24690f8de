//! A small Chrome DevTools Protocol client: JSON-RPC over one WebSocket to
//! the browser endpoint, with flat sessions (`Target.attachToTarget` /
//! auto-attach with `flatten: true`), so every page, frame and worker is
//! addressed by the `sessionId` of its messages on the same socket.
//!
//! Commands are `{id, method, params, sessionId}`; their answers come back
//! by `id` and resolve the waiting [`Connection::call`] (each with a time
//! limit). Every other message is an event, handed in order to the one
//! receiver [`Connection::connect`] returns.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::BrowserError;

/// The longest message accepted from the browser (a full-page screenshot
/// of a long page is tens of megabytes of base64).
const MAX_MESSAGE: usize = 256 * 1024 * 1024;
/// How long the WebSocket handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One event of the browser: its method, parameters, and the session it
/// belongs to (`None` for the browser target itself).
#[derive(Debug, Clone)]
pub struct Event {
    /// `Page.loadEventFired`, `Target.attachedToTarget`, …
    pub method: String,
    /// The event's parameters.
    pub params: Value,
    /// The flat session the event came from.
    pub session_id: Option<String>,
}

type Answer = Result<Value, BrowserError>;

#[derive(Default)]
struct Pending {
    waiting: HashMap<u64, oneshot::Sender<Answer>>,
    /// Set once the socket is gone: no call may wait any more.
    closed: bool,
}

/// A connection to a browser's DevTools endpoint.
pub struct Connection {
    out: mpsc::UnboundedSender<Message>,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicU64,
    tasks: [tokio::task::AbortHandle; 2],
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

/// Removes a call's entry when its caller stops waiting (a time limit, a
/// dialog that made the answer moot), so nothing piles up.
struct Forget<'a> {
    pending: &'a Mutex<Pending>,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(self.pending).waiting.remove(&self.id);
    }
}

fn lock(pending: &Mutex<Pending>) -> std::sync::MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Connection {
    /// Connects to `ws_url` (a `ws://…/devtools/browser/…` URL) and starts
    /// the tasks that read and write the socket. Returns the connection and
    /// the receiver of every event, in the order the browser sent them.
    pub async fn connect(
        ws_url: &str,
    ) -> Result<(Self, mpsc::UnboundedReceiver<Event>), BrowserError> {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let connect_err = |reason: String| BrowserError::Connect {
            url: ws_url.to_owned(),
            reason,
        };
        let (socket, _) = tokio::time::timeout(
            CONNECT_TIMEOUT,
            tokio_tungstenite::connect_async_with_config(ws_url, Some(config), true),
        )
        .await
        .map_err(|_| connect_err(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())))?
        .map_err(|err| connect_err(err.to_string()))?;
        let (mut sink, mut stream) = socket.split();
        let (out, mut outgoing) = mpsc::unbounded_channel::<Message>();
        let (events_tx, events) = mpsc::unbounded_channel();
        let pending = Arc::new(Mutex::new(Pending::default()));
        let writer = tokio::spawn(async move {
            while let Some(message) = outgoing.recv().await {
                if sink.send(message).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let reader = {
            let pending = Arc::clone(&pending);
            tokio::spawn(async move {
                while let Some(Ok(message)) = stream.next().await {
                    match message {
                        Message::Text(text) => dispatch(text.as_str(), &pending, &events_tx),
                        Message::Close(_) => break,
                        _ => {}
                    }
                }
                let mut pending = lock(&pending);
                pending.closed = true;
                for (_, waiter) in pending.waiting.drain() {
                    let _ = waiter.send(Err(BrowserError::Closed));
                }
            })
        };
        Ok((
            Self {
                out,
                pending,
                next_id: AtomicU64::new(1),
                tasks: [writer.abort_handle(), reader.abort_handle()],
            },
            events,
        ))
    }

    /// Whether the socket is gone (the browser exited or closed it).
    pub fn is_closed(&self) -> bool {
        lock(&self.pending).closed
    }

    /// Sends `method` with `params` to `session` (the browser itself when
    /// `None`) and waits at most `limit` for the answer's `result`.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        limit: Duration,
    ) -> Result<Value, BrowserError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if pending.closed {
                return Err(BrowserError::Closed);
            }
            pending.waiting.insert(id, tx);
        }
        let _forget = Forget {
            pending: &self.pending,
            id,
        };
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = Value::from(session);
        }
        self.out
            .send(Message::text(message.to_string()))
            .map_err(|_| BrowserError::Closed)?;
        match tokio::time::timeout(limit, rx).await {
            Err(_) => Err(BrowserError::Timeout {
                method: method.to_owned(),
                seconds: limit.as_secs().max(1),
            }),
            Ok(Err(_)) => Err(BrowserError::Closed),
            Ok(Ok(Err(err))) => Err(err),
            Ok(Ok(Ok(Value::Object(mut answer)))) => {
                if let Some(error) = answer.get("error") {
                    let message = error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown error");
                    let data = error.get("data").and_then(Value::as_str);
                    return Err(BrowserError::Protocol {
                        method: method.to_owned(),
                        message: match data {
                            Some(data) => format!("{message} ({data})"),
                            None => message.to_owned(),
                        },
                    });
                }
                Ok(answer.remove("result").unwrap_or(Value::Null))
            }
            Ok(Ok(Ok(_))) => Err(BrowserError::Protocol {
                method: method.to_owned(),
                message: "the answer is not a JSON object".to_owned(),
            }),
        }
    }

    /// Stops the socket's tasks (the browser sees the connection close).
    pub fn shutdown(&self) {
        for task in &self.tasks {
            task.abort();
        }
        let mut pending = lock(&self.pending);
        pending.closed = true;
        for (_, waiter) in pending.waiting.drain() {
            let _ = waiter.send(Err(BrowserError::Closed));
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Routes one message: an answer to its caller, anything else to the
/// event receiver. Unparsable messages are dropped (and logged).
fn dispatch(text: &str, pending: &Mutex<Pending>, events: &mpsc::UnboundedSender<Event>) {
    let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(text) else {
        tracing::debug!("unparsable DevTools message ({} bytes)", text.len());
        return;
    };
    if let Some(id) = message.get("id").and_then(Value::as_u64) {
        if let Some(waiter) = lock(pending).waiting.remove(&id) {
            let _ = waiter.send(Ok(Value::Object(message)));
        }
        return;
    }
    let Some(Value::String(method)) = message.remove("method") else {
        return;
    };
    let session_id = match message.remove("sessionId") {
        Some(Value::String(id)) => Some(id),
        _ => None,
    };
    let _ = events.send(Event {
        method,
        params: message.remove("params").unwrap_or(Value::Null),
        session_id,
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn answers_go_to_their_caller_and_events_to_the_receiver() {
        let pending = Mutex::new(Pending::default());
        let (tx, mut rx) = oneshot::channel();
        lock(&pending).waiting.insert(7, tx);
        let (events_tx, mut events) = mpsc::unbounded_channel();
        dispatch(r#"{"id":7,"result":{"a":1}}"#, &pending, &events_tx);
        let answer = rx.try_recv().unwrap().unwrap();
        assert_eq!(answer["result"]["a"], 1);
        dispatch(
            r#"{"method":"Page.loadEventFired","params":{"timestamp":1},"sessionId":"S"}"#,
            &pending,
            &events_tx,
        );
        dispatch("not json", &pending, &events_tx);
        let event = events.try_recv().unwrap();
        assert_eq!(event.method, "Page.loadEventFired");
        assert_eq!(event.session_id.as_deref(), Some("S"));
        assert_eq!(event.params["timestamp"], 1);
        assert!(events.try_recv().is_err());
    }
}
