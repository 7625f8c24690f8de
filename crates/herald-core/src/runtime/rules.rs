//! Rules about stored sessions that every front end applies the same way,
//! whether or not the session is open in this process.

use super::RuntimeError;
use crate::StoreHandle;

/// Deletes the stored session `id` with its messages, events and subagent
/// sessions, unless another live herald process holds it (its lease): then
/// [`RuntimeError::SessionInUse`] and nothing changes. A session held by this
/// process must be closed by its owner first. Returns whether a session was
/// deleted (`false`: no such session).
pub async fn delete_session(store: &StoreHandle, id: &str) -> Result<bool, RuntimeError> {
    let key = id.to_owned();
    let result = store
        .call(move |s| {
            if let Some(holder) = s.lease_holder(&key)?
                && holder.pid != std::process::id()
                && holder.is_alive()
            {
                return Ok(Err(holder.pid));
            }
            s.delete_session(&key).map(Ok)
        })
        .await
        .map_err(|err| RuntimeError::Store(err.to_string()))?
        .map_err(|err| RuntimeError::Store(err.to_string()))?;
    result.map_err(|pid| {
        RuntimeError::SessionInUse(format!(
            "session {id} is in use by herald process {pid}; stop it (or end the session there) first"
        ))
    })
}
