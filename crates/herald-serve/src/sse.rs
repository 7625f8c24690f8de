//! Server-sent event responses fed by a task: the task writes events into a
//! channel and ends when the client is gone (its sends fail) or it is done.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use tokio::sync::mpsc;
use utoipa::ToSchema;

/// One server-sent event of a `text/event-stream` answer, as the OpenAPI
/// document describes it (OpenAPI 3.1 has the schema of an event stream
/// describe each event); comment lines (keep-alives, tool progress) are not
/// events.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct SseEvent {
    /// The event's name, where the stream names its events.
    pub event: Option<String>,
    /// The payload: one JSON document (or `[DONE]` at the end of a Chat
    /// Completions stream).
    pub data: String,
    /// The event's number, where the stream numbers its events.
    pub id: Option<String>,
}

/// Events a slow client may fall behind by before the producer waits.
const BUFFER: usize = 256;

/// The sending side: a producer task writes events here.
pub(crate) struct SseSender(mpsc::Sender<Event>);

impl SseSender {
    /// Sends `event`; false once the client is gone.
    pub(crate) async fn send(&self, event: Event) -> bool {
        self.0.send(event).await.is_ok()
    }

    /// Sends `data` as a `data:` line.
    pub(crate) async fn data(&self, data: impl AsRef<str>) -> bool {
        self.send(Event::default().data(data.as_ref())).await
    }

    /// Resolves once the client is gone.
    pub(crate) async fn closed(&self) {
        self.0.closed().await;
    }

    /// Sends a comment line (`: text`), which clients ignore.
    pub(crate) async fn comment(&self, text: impl AsRef<str>) -> bool {
        self.send(Event::default().comment(text.as_ref())).await
    }
}

/// A channel and the SSE response that streams what is sent into it, with
/// a keep-alive comment every 15 seconds of silence.
pub(crate) fn channel() -> (SseSender, Response) {
    let (tx, rx) = mpsc::channel(BUFFER);
    let sse = Sse::new(receiver_stream(rx))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)));
    (SseSender(tx), sse.into_response())
}

fn receiver_stream(rx: mpsc::Receiver<Event>) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|event| (Ok(event), rx))
    })
}
