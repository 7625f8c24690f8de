//! The end of a session's conversation: the memory flush (see
//! [`crate::Agent::flush_at_session_end`]), bounded so leaving is never held
//! up for long, then the session's summary stored for search.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::Shared;
use crate::Agent;

/// Past the deadline the flush is cancelled; a tool that ignores the
/// cancel gets this much longer before the flush is abandoned.
const HARD_GRACE: Duration = Duration::from_secs(3);

/// Runs the end-of-session memory flush when `flush` (and the session
/// qualifies: enough user turns, memory enabled), within
/// `[memory] flush_timeout_seconds` and ended at once by `cancel`; then
/// stores the session's summary (the flush reply's closing paragraph, else
/// the latest compaction summary). A failure is logged, never fatal.
pub(super) async fn flush_and_summarise(
    agent: &mut Agent,
    shared: &Shared,
    cancel: &CancellationToken,
    flush: bool,
) {
    let report = if flush {
        let deadline = Instant::now() + shared.flush_timeout;
        let run = agent.flush_at_session_end(cancel, Some(deadline));
        match tokio::time::timeout(shared.flush_timeout + HARD_GRACE, run).await {
            Ok(report) => report,
            Err(_) => {
                tracing::warn!(session_id = %shared.session_id, "the memory flush did not stop at its deadline; abandoned");
                None
            }
        }
    } else {
        None
    };
    if let Some(report) = &report {
        tracing::info!(
            session_id = %shared.session_id,
            status = ?report.status,
            requests = report.requests,
            saved = report.saved,
            refused = report.refused,
            "memory flush at session end"
        );
    }
    let Some(summary) = agent.session_summary(report.as_ref()) else {
        return;
    };
    let id = shared.session_id.clone();
    match shared
        .store
        .call(move |s| s.set_summary(&id, &summary))
        .await
    {
        Ok(Ok(())) => {}
        Ok(Err(err)) => {
            tracing::warn!(session_id = %shared.session_id, "could not store the session summary: {err}")
        }
        Err(err) => tracing::error!(session_id = %shared.session_id, "{err}"),
    }
}
