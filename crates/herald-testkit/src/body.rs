//! The streamed response body: a list of SSE events followed by a clean end,
//! a broken connection, or silence.

use std::io;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;

/// How a streamed body ends after its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tail {
    /// End the body normally.
    End,
    /// Fail the body so the server breaks the connection.
    Abort,
    /// Never end; the connection stays open until the client drops it.
    Idle,
}

/// Pause before an abort so that the events already produced reach the client.
const FLUSH_PAUSE: Duration = Duration::from_millis(20);

/// Runs once when the body's last byte is produced.
pub(crate) type Done = Box<dyn FnOnce() + Send>;

/// How fast a simulated model answers: the wait before the first event,
/// then a steady rate of generated tokens (see [`crate::ScriptedServer::set_pace`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    /// Time to the first token.
    pub first_token: Duration,
    /// Generated tokens per second after it.
    pub tokens_per_second: f64,
}

impl Pace {
    /// The pause before the first of `events` events that carry `tokens`
    /// tokens, then before each later one but the last two: those are the
    /// stream's end (finish reason, usage, end marker), which a server sends
    /// at once after the last token.
    fn pauses(self, events: usize, tokens: u64) -> (Duration, Duration) {
        let generation = if self.tokens_per_second > 0.0 {
            Duration::from_secs_f64(tokens as f64 / self.tokens_per_second)
        } else {
            Duration::ZERO
        };
        let gaps = events.saturating_sub(3).max(1);
        (
            self.first_token,
            generation / u32::try_from(gaps).unwrap_or(u32::MAX),
        )
    }
}

struct State {
    events: std::vec::IntoIter<Bytes>,
    tail: Tail,
    on_done: Option<Done>,
    /// Pause before the next event, then before each later one.
    pause: Duration,
    between: Duration,
}

impl State {
    fn done(&mut self) {
        if let Some(f) = self.on_done.take() {
            f();
        }
    }
}

/// A body yielding `events` one frame each, then ending as `tail` says.
/// `on_done` runs when the last byte is produced (never for [`Tail::Idle`]).
/// With `pace`, the events come as a model carrying `tokens` generates them.
pub(crate) fn sse_body(
    events: Vec<Bytes>,
    tail: Tail,
    on_done: Done,
    pace: Option<(Pace, u64)>,
) -> Body {
    let (pause, between) = pace.map_or((Duration::ZERO, Duration::ZERO), |(pace, tokens)| {
        pace.pauses(events.len(), tokens)
    });
    let state = State {
        events: events.into_iter(),
        tail,
        on_done: Some(on_done),
        pause,
        between,
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        // The last two events (the stream's end) follow the last token at once.
        if !st.pause.is_zero() && st.events.len() > 2 {
            tokio::time::sleep(st.pause).await;
        }
        st.pause = st.between;
        if let Some(event) = st.events.next() {
            if st.events.len() == 0 && st.tail != Tail::Idle {
                st.done();
            }
            return Some((Ok(event), st));
        }
        match st.tail {
            Tail::End => {
                st.done();
                None
            }
            Tail::Abort => {
                // Let the server flush what was sent before breaking the
                // connection, so the client sees a partial body.
                tokio::time::sleep(FLUSH_PAUSE).await;
                st.done();
                st.tail = Tail::End;
                Some((
                    Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "testkit: stream aborted by injected fault",
                    )),
                    st,
                ))
            }
            Tail::Idle => {
                futures_util::future::pending::<()>().await;
                None
            }
        }
    });
    Body::from_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_reply_waits_for_its_first_token_then_spreads_the_rest() {
        let pace = Pace {
            first_token: Duration::from_millis(300),
            tokens_per_second: 50.0,
        };
        // 25 tokens at 50/s: half a second over the 5 gaps between the
        // first 6 of 8 events; the last two (the end) come at once.
        assert_eq!(
            pace.pauses(8, 25),
            (Duration::from_millis(300), Duration::from_millis(100))
        );
        // A single event still waits for its first token.
        assert_eq!(pace.pauses(1, 10).0, Duration::from_millis(300));
    }
}
