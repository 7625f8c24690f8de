//! Rewinding a stored session that no process runs (`herald rewind`): the
//! same plan and apply as an open session's `rewind` operation, with the
//! session's lease held from the plan to the end so nobody opens it
//! meanwhile.

use std::path::Path;

use super::RuntimeError;
use crate::checkpoints::{RewindError, RewindOutcome, RewindPlan, RewindScope};
use crate::{LeaseError, LeaseWait, SessionLease, StoreHandle};

/// A worked-out rewind of a stored session, holding its lease: look at
/// [`StoredRewind::plan`], then [`StoredRewind::apply`] it or drop it
/// (nothing changed; the lease is released).
pub struct StoredRewind {
    store: StoreHandle,
    plan: RewindPlan,
    lease: SessionLease,
}

impl StoredRewind {
    /// Takes the lease of `session_id` (refused with
    /// [`RuntimeError::SessionInUse`] while another process runs it) and
    /// plans the rewind to before its user turn `turn`. Nothing changes.
    pub async fn prepare(
        store: &StoreHandle,
        home: &Path,
        session_id: &str,
        turn: u32,
        scope: RewindScope,
    ) -> Result<Self, RuntimeError> {
        let lease = SessionLease::acquire(store, session_id, LeaseWait::No, |_| {})
            .await
            .map_err(|err| match err {
                LeaseError::Busy { session_id, pid } => RuntimeError::SessionInUse(format!(
                    "session {session_id} is in use by herald process {pid}; end that session first (or rewind it there), then rewind"
                )),
                LeaseError::Store { .. } => RuntimeError::Store(err.to_string()),
            })?;
        match crate::checkpoints::plan_rewind(store, home, session_id, turn, scope).await {
            Ok(plan) => Ok(Self {
                store: store.clone(),
                plan,
                lease,
            }),
            Err(err) => {
                lease.release().await;
                Err(err.into())
            }
        }
    }

    /// What the rewind will do.
    pub fn plan(&self) -> &RewindPlan {
        &self.plan
    }

    /// Applies the rewind and releases the lease.
    pub async fn apply(self) -> Result<RewindOutcome, RuntimeError> {
        let outcome = crate::checkpoints::apply_rewind(&self.store, self.plan).await;
        self.lease.release().await;
        Ok(outcome?)
    }

    /// Gives the rewind up (nothing changed) and releases the lease.
    pub async fn cancel(self) {
        self.lease.release().await;
    }
}

impl From<RewindError> for RuntimeError {
    fn from(err: RewindError) -> Self {
        match err {
            RewindError::UnknownSession(id) => Self::UnknownSession(id),
            RewindError::Store(message) => Self::Store(message),
            // The checkpoints' own storage (a shadow git repository) failed.
            RewindError::Shadow(_) => Self::Store(err.to_string()),
            other => Self::Invalid(other.to_string()),
        }
    }
}
