//! Rules about stored sessions that every front end applies the same way,
//! whether or not the session is open in this process.

use herald_protocol::AgentStatus;

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

/// Deletes the session trees rooted at `roots` (as `herald sessions prune`
/// chose them), except those another live herald process holds: the same
/// rule as [`delete_session`]. Returns how many sessions were deleted and
/// the roots kept because they are in use.
pub async fn delete_session_trees(
    store: &StoreHandle,
    roots: Vec<String>,
) -> Result<(usize, Vec<String>), RuntimeError> {
    store
        .call(move |s| {
            let mut free = Vec::with_capacity(roots.len());
            let mut held = Vec::new();
            for root in roots {
                match s.lease_holder(&root)? {
                    Some(holder) if holder.pid != std::process::id() && holder.is_alive() => {
                        held.push(root);
                    }
                    _ => free.push(root),
                }
            }
            let deleted = if free.is_empty() {
                0
            } else {
                s.delete_session_trees(&free)?
            };
            Ok::<_, herald_store::StoreError>((deleted, held))
        })
        .await
        .map_err(|err| RuntimeError::Store(err.to_string()))?
        .map_err(|err| RuntimeError::Store(err.to_string()))
}

/// Corrects `records` of the agent journal to their effective status:
/// entries that say `queued` or `running` but that no live process runs
/// (the lease holder of their root session is gone: killed, crashed) are
/// what they are, background agents `suspended` (resuming the session
/// restarts them) and synchronous ones `interrupted`, with an `error` that
/// says so. Only the records change; the resume corrects the journal itself.
pub async fn effective_agent_status(
    store: &StoreHandle,
    records: &mut [herald_store::AgentRecord],
) -> Result<(), RuntimeError> {
    let unfinished = |r: &herald_store::AgentRecord| {
        matches!(r.status, AgentStatus::Queued | AgentStatus::Running)
    };
    let mut roots: Vec<String> = records
        .iter()
        .filter(|r| unfinished(r))
        .map(|r| r.root_session_id.clone())
        .collect();
    roots.sort();
    roots.dedup();
    if roots.is_empty() {
        return Ok(());
    }
    let dead: Vec<String> = store
        .call(move |s| {
            let mut dead = Vec::new();
            for root in roots {
                if !s.lease_holder(&root)?.is_some_and(|h| h.is_alive()) {
                    dead.push(root);
                }
            }
            Ok::<_, herald_store::StoreError>(dead)
        })
        .await
        .map_err(|err| RuntimeError::Store(err.to_string()))?
        .map_err(|err| RuntimeError::Store(err.to_string()))?;
    for record in records
        .iter_mut()
        .filter(|r| unfinished(r) && dead.contains(&r.root_session_id))
    {
        record.status = if record.background {
            AgentStatus::Suspended
        } else {
            AgentStatus::Interrupted
        };
        record.error = Some(format!(
            "no herald process runs it any more (the process running session {} is gone); `herald --resume {}` {}",
            record.root_session_id,
            record.root_session_id,
            if record.background {
                "restarts it"
            } else {
                "records it as interrupted"
            }
        ));
    }
    Ok(())
}
