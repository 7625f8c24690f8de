use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::{ErrorKind, LlmError};

type EventStream =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// Server-sent events from a streaming response, with an idle timeout and
/// cancellation applied to every read.
pub(crate) struct SseReader {
    events: EventStream,
    idle: Duration,
}

impl SseReader {
    pub(crate) fn new(response: reqwest::Response, idle: Duration) -> Self {
        Self {
            events: Box::pin(response.bytes_stream().eventsource()),
            idle,
        }
    }

    /// The next event; `Ok(None)` when the server closed the stream.
    pub(crate) async fn next(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<Option<Event>, LlmError> {
        let read = tokio::time::timeout(self.idle, self.events.next());
        let item = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(LlmError::cancelled()),
            item = read => item,
        };
        match item {
            Err(_) => Err(LlmError::new(
                ErrorKind::IdleTimeout,
                format!(
                    "the provider sent nothing for {} s (stream_idle_timeout)",
                    self.idle.as_secs_f64()
                ),
            )),
            Ok(None) => Ok(None),
            Ok(Some(Ok(event))) => Ok(Some(event)),
            Ok(Some(Err(EventStreamError::Transport(err)))) => Err(LlmError::new(
                ErrorKind::Network,
                format!("the connection broke while streaming: {err}"),
            )),
            Ok(Some(Err(err))) => Err(LlmError::new(
                ErrorKind::Truncated,
                format!("malformed event stream: {err}"),
            )),
        }
    }
}
