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

struct State {
    events: std::vec::IntoIter<Bytes>,
    tail: Tail,
    on_done: Option<Done>,
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
pub(crate) fn sse_body(events: Vec<Bytes>, tail: Tail, on_done: Done) -> Body {
    let state = State {
        events: events.into_iter(),
        tail,
        on_done: Some(on_done),
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move {
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
