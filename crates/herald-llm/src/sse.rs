//! Reading a provider's response body: raw chunks with an idle timeout and
//! cancellation, what the body holds (an event stream or one JSON document),
//! and the server-sent events of a stream.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::{ErrorKind, LlmError};

type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

type EventStream =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// How long a finished stream is read on after its reply was complete, so a
/// well-behaved server's end marker and end of body can still be consumed
/// (which lets the connection go back to the pool) without making anyone wait.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// The most a non-streamed JSON answer may hold.
const MAX_JSON_BODY: usize = 64 * 1024 * 1024;

fn idle_error(idle: Duration) -> LlmError {
    LlmError::new(
        ErrorKind::IdleTimeout,
        format!(
            "the provider sent nothing for {} s (stream_idle_timeout)",
            idle.as_secs_f64()
        ),
    )
}

/// The next item of `stream`, bounded by the idle timeout and `cancel`:
/// `Ok(None)` at the end of the stream, an error when it went idle or the
/// turn was cancelled.
async fn next_within<S: Stream + Unpin>(
    stream: &mut S,
    idle: Duration,
    cancel: &CancellationToken,
) -> Result<Option<S::Item>, LlmError> {
    let read = tokio::time::timeout(idle, stream.next());
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(LlmError::cancelled()),
        item = read => item.map_err(|_| idle_error(idle)),
    }
}

/// A response body read chunk by chunk, each read bounded by the idle timeout
/// and the turn's cancellation.
pub(crate) struct BodyReader {
    bytes: ByteStream,
    idle: Duration,
}

impl BodyReader {
    pub(crate) fn new(response: reqwest::Response, idle: Duration) -> Self {
        Self {
            bytes: Box::pin(response.bytes_stream()),
            idle,
        }
    }

    /// The next chunk; `Ok(None)` at the end of the body.
    pub(crate) async fn chunk(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<Option<Bytes>, LlmError> {
        match next_within(&mut self.bytes, self.idle, cancel).await? {
            None => Ok(None),
            Some(Ok(bytes)) => Ok(Some(bytes)),
            Some(Err(err)) => Err(LlmError::new(
                ErrorKind::Network,
                format!(
                    "the connection broke while reading the answer: {}",
                    crate::error_chain(&err)
                ),
            )),
        }
    }

    /// Puts bytes already read back in front of the rest of the body.
    pub(crate) fn unread(self, head: Vec<u8>) -> Self {
        if head.is_empty() {
            return self;
        }
        let head = futures_util::stream::iter([Ok(Bytes::from(head))]);
        Self {
            bytes: Box::pin(head.chain(self.bytes)),
            idle: self.idle,
        }
    }

    /// The whole body (a non-streamed answer).
    pub(crate) async fn read_all(
        mut self,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, LlmError> {
        let mut out = Vec::new();
        while let Some(chunk) = self.chunk(cancel).await? {
            if out.len() + chunk.len() > MAX_JSON_BODY {
                return Err(LlmError::new(
                    ErrorKind::Protocol,
                    format!(
                        "the provider's answer is larger than {} MiB; that is not a model reply",
                        MAX_JSON_BODY / (1024 * 1024)
                    ),
                ));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    /// The body as server-sent events.
    pub(crate) fn events(self) -> SseReader {
        SseReader {
            events: Box::pin(self.bytes.eventsource()),
            idle: self.idle,
        }
    }
}

/// What a successful response body holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFormat {
    /// `text/event-stream`: the streamed reply.
    EventStream,
    /// One JSON document: a server that ignored `stream: true` (or an error
    /// object sent with status 200).
    Json,
}

impl BodyFormat {
    /// What the `Content-Type` declares; `None` for anything else.
    pub(crate) fn declared(content_type: &str) -> Option<Self> {
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if essence == "text/event-stream" {
            Some(Self::EventStream)
        } else if essence == "application/json" || essence.ends_with("+json") {
            Some(Self::Json)
        } else {
            None
        }
    }
}

/// What the first bytes of a body look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniff {
    /// Too few bytes to tell.
    NeedMore,
    /// The body is (or starts like) this format.
    Looks(BodyFormat),
    /// Neither an event stream nor JSON (an HTML page, plain text, ...).
    Neither,
}

/// Classifies the start of a body: a JSON object, an SSE field (`data:`,
/// `event:`, `id:`, `retry:`) or comment (`:`), or something else.
pub(crate) fn sniff(head: &[u8]) -> Sniff {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let head = &head[start..];
    let Some(&first) = head.first() else {
        return Sniff::NeedMore;
    };
    if first == b'{' {
        return Sniff::Looks(BodyFormat::Json);
    }
    if first == b':' {
        return Sniff::Looks(BodyFormat::EventStream);
    }
    let mut incomplete = false;
    for field in [&b"data:"[..], b"event:", b"id:", b"retry:"] {
        if head.starts_with(field) {
            return Sniff::Looks(BodyFormat::EventStream);
        }
        if field.starts_with(head) {
            incomplete = true;
        }
    }
    if incomplete {
        Sniff::NeedMore
    } else {
        Sniff::Neither
    }
}

/// Server-sent events from a streaming response, with an idle timeout and
/// cancellation applied to every read.
pub(crate) struct SseReader {
    events: EventStream,
    idle: Duration,
}

impl SseReader {
    /// The next event; `Ok(None)` when the server closed the stream.
    pub(crate) async fn next(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<Option<Event>, LlmError> {
        match next_within(&mut self.events, self.idle, cancel).await? {
            None => Ok(None),
            Some(Ok(event)) => Ok(Some(event)),
            Some(Err(EventStreamError::Transport(err))) => Err(LlmError::new(
                ErrorKind::Network,
                format!(
                    "the connection broke while streaming: {}",
                    crate::error_chain(&err)
                ),
            )),
            Some(Err(err)) => Err(LlmError::new(
                ErrorKind::Truncated,
                format!("malformed event stream: {err}"),
            )),
        }
    }

    /// The reply is complete: whatever the server still sends (its end
    /// marker, the end of the body) is read on a background task for a short
    /// while and dropped, so the caller never waits for a server that keeps
    /// the connection open.
    pub(crate) fn drain_in_background(self) {
        let mut events = self.events;
        tokio::spawn(async move {
            let _ = tokio::time::timeout(DRAIN_LIMIT, async {
                while let Some(Ok(_)) = events.next().await {}
            })
            .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_formats() {
        assert_eq!(
            BodyFormat::declared("text/event-stream; charset=utf-8"),
            Some(BodyFormat::EventStream)
        );
        assert_eq!(
            BodyFormat::declared("Application/JSON"),
            Some(BodyFormat::Json)
        );
        assert_eq!(
            BodyFormat::declared("application/problem+json"),
            Some(BodyFormat::Json)
        );
        assert_eq!(BodyFormat::declared("text/html; charset=utf-8"), None);
        assert_eq!(BodyFormat::declared(""), None);
    }

    #[test]
    fn sniffs_the_first_bytes() {
        assert_eq!(sniff(b""), Sniff::NeedMore);
        assert_eq!(sniff(b" \r\n"), Sniff::NeedMore);
        assert_eq!(sniff(b"da"), Sniff::NeedMore);
        assert_eq!(
            sniff(b"data: {\"x\":1}"),
            Sniff::Looks(BodyFormat::EventStream)
        );
        assert_eq!(
            sniff(b"event: message_start\n"),
            Sniff::Looks(BodyFormat::EventStream)
        );
        assert_eq!(sniff(b": ping\n\n"), Sniff::Looks(BodyFormat::EventStream));
        assert_eq!(
            sniff(b"\xEF\xBB\xBF\n{\"choices\":[]}"),
            Sniff::Looks(BodyFormat::Json)
        );
        assert_eq!(sniff(b"<!doctype html>"), Sniff::Neither);
        assert_eq!(sniff(b"Bad gateway"), Sniff::Neither);
        assert_eq!(sniff(b"dat!"), Sniff::Neither);
    }
}
