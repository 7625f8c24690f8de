//! The session lease seen from a running session: taken before anything of
//! the session is written, renewed by a heartbeat while the session runs,
//! released when it ends. A second process that wants the same session gets
//! [`LeaseError::Busy`] (or waits for it), so one session never has two
//! writers interleaving their conversations.

use std::time::Duration;

use herald_store::{LeaseOutcome, ProcessIdentity};
use tokio_util::sync::CancellationToken;

use crate::StoreHandle;

/// How often the holder renews its lease.
const HEARTBEAT: Duration = Duration::from_secs(10);
/// How often a waiting process asks again.
const WAIT_POLL: Duration = Duration::from_millis(250);

/// Why a lease could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Another live herald process runs the session.
    #[error(
        "session {session_id} is in use by herald process {pid}; wait for it to finish, stop it, or pass --wait to wait for it"
    )]
    Busy { session_id: String, pid: u32 },
    /// The store failed.
    #[error("cannot take the lease of session {session_id}: {message}")]
    Store { session_id: String, message: String },
}

/// Whether to wait for a busy session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseWait {
    /// Fail at once with [`LeaseError::Busy`].
    No,
    /// Wait until the owner ends; `on_wait` is told once who holds it.
    Yes,
}

/// A held lease; released on [`SessionLease::release`] or drop.
#[derive(Debug)]
pub struct SessionLease {
    store: StoreHandle,
    session_id: String,
    owner: ProcessIdentity,
    heartbeat: CancellationToken,
    /// The dead process the lease was taken from, if any.
    pub reclaimed_from: Option<u32>,
}

impl SessionLease {
    /// Takes the lease of `session_id` for this process. With
    /// [`LeaseWait::Yes`], waits while another live process holds it,
    /// calling `on_wait(pid)` once.
    pub async fn acquire(
        store: &StoreHandle,
        session_id: &str,
        wait: LeaseWait,
        mut on_wait: impl FnMut(u32),
    ) -> Result<Self, LeaseError> {
        let owner = ProcessIdentity::current();
        let mut told = false;
        loop {
            // Herald processes that died holding a lease (this session's
            // among them) may have left tool processes no record knows of;
            // they are ended before the lease that names their owner is
            // taken over, so a crash right after cannot lose that name.
            let swept = crate::orphans::sweep_dead_owners(store, session_id)
                .await
                .map_err(|message| LeaseError::Store {
                    session_id: session_id.to_owned(),
                    message,
                })?;
            let id = session_id.to_owned();
            let outcome = store
                .call(move |s| s.acquire_lease(&id, &owner, &swept))
                .await
                .map_err(|e| LeaseError::Store {
                    session_id: session_id.to_owned(),
                    message: e.to_string(),
                })?
                .map_err(|e| LeaseError::Store {
                    session_id: session_id.to_owned(),
                    message: e.to_string(),
                })?;
            match outcome {
                LeaseOutcome::Acquired { reclaimed_from } => {
                    if let Some(pid) = reclaimed_from {
                        tracing::info!(session_id, pid, "took over the lease of a dead process");
                    }
                    let heartbeat = CancellationToken::new();
                    spawn_heartbeat(
                        store.clone(),
                        session_id.to_owned(),
                        owner,
                        heartbeat.clone(),
                    );
                    return Ok(Self {
                        store: store.clone(),
                        session_id: session_id.to_owned(),
                        owner,
                        heartbeat,
                        reclaimed_from,
                    });
                }
                // Died since the sweep: sweep again, then take it.
                LeaseOutcome::Unswept(_) => {}
                LeaseOutcome::Busy(holder) => {
                    if wait == LeaseWait::No {
                        return Err(LeaseError::Busy {
                            session_id: session_id.to_owned(),
                            pid: holder.pid,
                        });
                    }
                    if !told {
                        on_wait(holder.pid);
                        told = true;
                    }
                    tokio::time::sleep(WAIT_POLL).await;
                }
            }
        }
    }

    /// The session this lease is for.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Gives the lease up and waits until the store has done so.
    pub async fn release(self) {
        self.heartbeat.cancel();
        let (id, owner) = (self.session_id.clone(), self.owner);
        let _ = self.store.call(move |s| s.release_lease(&id, &owner)).await;
    }
}

impl Drop for SessionLease {
    fn drop(&mut self) {
        if self.heartbeat.is_cancelled() {
            return;
        }
        self.heartbeat.cancel();
        let (id, owner) = (self.session_id.clone(), self.owner);
        // Queued: runs on the store thread before it shuts down.
        self.store.send(move |s| {
            let _ = s.release_lease(&id, &owner);
        });
    }
}

fn spawn_heartbeat(
    store: StoreHandle,
    session_id: String,
    owner: ProcessIdentity,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = tokio::time::sleep(HEARTBEAT) => {}
                () = stop.cancelled() => return,
            }
            let id = session_id.clone();
            match store.call(move |s| s.renew_lease(&id, &owner)).await {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => {
                    tracing::warn!(session_id, "lost the session lease to another process");
                    return;
                }
                _ => return,
            }
        }
    });
}
