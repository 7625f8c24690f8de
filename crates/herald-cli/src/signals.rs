//! Stop signals. SIGINT (Ctrl-C), SIGTERM and SIGHUP all stop a run the same
//! way: the session's cancel token fires, running tools kill their process
//! groups, the interrupted results are stored, and herald exits with
//! 128 + the signal number. A second stop signal ends the process at once —
//! from a plain signal handler, so even a runtime stuck in a blocking call
//! cannot delay it — after SIGKILLing every tool process group still running.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::Exit;

/// Which stop signal arrived first, if any.
#[derive(Debug, Clone, Default)]
pub(crate) struct StopSignal {
    received: Arc<AtomicI32>,
}

impl StopSignal {
    /// The signal number received, if any.
    pub(crate) fn received(&self) -> Option<i32> {
        match self.received.load(Ordering::Acquire) {
            0 => None,
            n => Some(n),
        }
    }

    /// The exit status for a run this signal stopped.
    pub(crate) fn exit(&self) -> Exit {
        match self.received() {
            Some(n) if n == Signal::SIGTERM as i32 => Exit::Terminated,
            Some(n) if n == Signal::SIGHUP as i32 => Exit::HungUp,
            _ => Exit::Interrupted,
        }
    }
}

/// Listens for SIGINT, SIGTERM and SIGHUP: the first cancels `cancel` (and
/// the returned [`StopSignal`] says which it was); from then on the next one
/// exits at once.
pub(crate) fn stop_on_signals(cancel: CancellationToken) -> StopSignal {
    stop_on(
        &[
            SignalKind::interrupt(),
            SignalKind::terminate(),
            SignalKind::hangup(),
        ],
        cancel,
    )
}

/// [`stop_on_signals`] for SIGTERM and SIGHUP only (the interactive loop
/// handles Ctrl-C itself: it interrupts a turn, not the session).
pub(crate) fn stop_on_termination(cancel: CancellationToken) -> StopSignal {
    stop_on(&[SignalKind::terminate(), SignalKind::hangup()], cancel)
}

fn stop_on(kinds: &[SignalKind], cancel: CancellationToken) -> StopSignal {
    let stop = StopSignal::default();
    let mut streams = Vec::new();
    for kind in kinds {
        match signal(*kind) {
            Ok(stream) => streams.push((kind.as_raw_value(), stream)),
            Err(err) => tracing::warn!(%err, "cannot listen for a stop signal"),
        }
    }
    let received = Arc::clone(&stop.received);
    tokio::spawn(async move {
        if streams.is_empty() {
            return;
        }
        let waits = streams.iter_mut().map(|(number, stream)| {
            let number = *number;
            Box::pin(async move {
                stream.recv().await;
                number
            })
        });
        let (number, _, _) = futures_util::future::select_all(waits).await;
        received.store(number, Ordering::Release);
        tracing::info!(signal = number, "stop signal: interrupting the session");
        arm_immediate_exit();
        cancel.cancel();
    });
    stop
}

/// Ends the process at once: kills the tools' process groups, then exits
/// with 128 + the signal. Only async-signal-safe calls.
extern "C" fn exit_now(signal: nix::libc::c_int) {
    herald_tools::kill_tracked_groups();
    // SAFETY: `_exit` is async-signal-safe and never returns.
    unsafe { nix::libc::_exit(128 + signal) }
}

/// Makes the next SIGINT, SIGTERM or SIGHUP call [`exit_now`].
fn arm_immediate_exit() {
    let action = SigAction::new(
        SigHandler::Handler(exit_now),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only makes async-signal-safe calls.
        if let Err(err) = unsafe { sigaction(signal, &action) } {
            tracing::warn!(%err, "cannot arm the immediate exit");
        }
    }
}
