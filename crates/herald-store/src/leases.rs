//! One writing process per session. A process that runs a session holds its
//! lease (owner pid and start time, renewed by a heartbeat); another process
//! that wants the same session is refused while the owner lives, and takes the
//! lease over once the owner is gone (killed, crashed).

use crate::write_unit::WriteUnit;
use rusqlite::{OptionalExtension, params};

use crate::error::{StoreError, sql};
use crate::owner::ProcessIdentity;
use crate::store::{Store, now_ms, to_i64};

/// The holder of a session's lease.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LeaseHolder {
    pub pid: u32,
    /// The owner's start time (see [`ProcessIdentity::started`]).
    pub started: u64,
    /// Unix milliseconds of the owner's last heartbeat.
    pub heartbeat_at: i64,
}

impl LeaseHolder {
    /// The owner as a process identity.
    pub fn identity(&self) -> ProcessIdentity {
        ProcessIdentity {
            pid: self.pid,
            started: self.started,
        }
    }

    /// Whether the owning process still runs.
    pub fn is_alive(&self) -> bool {
        self.identity().is_alive()
    }
}

/// What [`Store::acquire_lease`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseOutcome {
    /// The caller now holds the lease (it was free, or its owner was dead).
    Acquired {
        /// The dead process the lease was taken from, if any.
        reclaimed_from: Option<u32>,
    },
    /// A live process holds it.
    Busy(LeaseHolder),
    /// A dead process holds it whose leftover processes were not looked for
    /// yet (it is not among the `swept` the caller passed): the caller
    /// ends them first, then asks again. Taking the lease over before that
    /// would lose the only record that this process died running.
    Unswept(LeaseHolder),
}

fn holder(row: &rusqlite::Row<'_>) -> rusqlite::Result<LeaseHolder> {
    Ok(LeaseHolder {
        pid: u32::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
        started: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
        heartbeat_at: row.get(2)?,
    })
}

impl Store {
    /// Takes the lease of `session_id` for `owner` unless another live
    /// process holds it, or a dead one not in `swept` (the dead owners whose
    /// leftover processes the caller has ended; see [`Store::stale_leases`]).
    /// Atomic across processes (one write transaction).
    pub fn acquire_lease(
        &mut self,
        session_id: &str,
        owner: &ProcessIdentity,
        swept: &[ProcessIdentity],
    ) -> Result<LeaseOutcome, StoreError> {
        const CTX: &str = "taking the session lease";
        let path = &self.path;
        let tx = WriteUnit::begin(&self.conn).map_err(sql(path, CTX))?;
        let current = tx
            .prepare_cached(
                "SELECT owner_pid, owner_started, heartbeat_at FROM session_leases \
                 WHERE session_id = ?1",
            )
            .and_then(|mut s| s.query_row([session_id], holder).optional())
            .map_err(sql(path, CTX))?;
        let reclaimed_from = match current {
            Some(held) if held.is_alive() => return Ok(LeaseOutcome::Busy(held)),
            Some(dead) if !swept.contains(&dead.identity()) => {
                return Ok(LeaseOutcome::Unswept(dead));
            }
            Some(dead) => Some(dead.pid),
            None => None,
        };
        let now = now_ms();
        tx.prepare_cached(
            "INSERT INTO session_leases (session_id, owner_pid, owner_started, acquired_at, heartbeat_at) \
             VALUES (?1, ?2, ?3, ?4, ?4) \
             ON CONFLICT(session_id) DO UPDATE SET owner_pid = ?2, owner_started = ?3, \
             acquired_at = ?4, heartbeat_at = ?4",
        )
        .and_then(|mut s| {
            s.execute(params![
                session_id,
                i64::from(owner.pid),
                to_i64(owner.started),
                now
            ])
        })
        .map_err(sql(path, CTX))?;
        tx.commit().map_err(sql(path, CTX))?;
        Ok(LeaseOutcome::Acquired { reclaimed_from })
    }

    /// Renews `owner`'s lease; `false` when it no longer holds it.
    pub fn renew_lease(
        &mut self,
        session_id: &str,
        owner: &ProcessIdentity,
    ) -> Result<bool, StoreError> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE session_leases SET heartbeat_at = ?4 WHERE session_id = ?1 \
                 AND owner_pid = ?2 AND owner_started = ?3",
            )
            .and_then(|mut s| {
                s.execute(params![
                    session_id,
                    i64::from(owner.pid),
                    to_i64(owner.started),
                    now_ms()
                ])
            })
            .map_err(sql(&self.path, "renewing the session lease"))?;
        Ok(changed > 0)
    }

    /// Gives the lease up (only if `owner` holds it).
    pub fn release_lease(
        &mut self,
        session_id: &str,
        owner: &ProcessIdentity,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "DELETE FROM session_leases WHERE session_id = ?1 AND owner_pid = ?2 \
                 AND owner_started = ?3",
            )
            .and_then(|mut s| {
                s.execute(params![
                    session_id,
                    i64::from(owner.pid),
                    to_i64(owner.started)
                ])
            })
            .map_err(sql(&self.path, "releasing the session lease"))?;
        Ok(())
    }

    /// Every lease whose holder is dead, with its session: herald processes
    /// that died (killed, crashed) while running a session. Their tool
    /// processes may still run; a clean exit releases its leases, so a
    /// process that ended cleanly is never among them.
    pub fn stale_leases(&self) -> Result<Vec<(String, LeaseHolder)>, StoreError> {
        const CTX: &str = "reading the session leases";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT owner_pid, owner_started, heartbeat_at, session_id FROM session_leases",
            )
            .map_err(sql(&self.path, CTX))?;
        let rows = stmt
            .query_map([], |row| Ok((row.get::<_, String>(3)?, holder(row)?)))
            .map_err(sql(&self.path, CTX))?;
        let me = ProcessIdentity::current();
        let mut stale = Vec::new();
        for row in rows {
            let (session, held) = row.map_err(sql(&self.path, CTX))?;
            // This process's own leases need no look at /proc.
            if held.identity() != me && !held.is_alive() {
                stale.push((session, held));
            }
        }
        Ok(stale)
    }

    /// Who holds the lease of `session_id`, alive or not.
    pub fn lease_holder(&self, session_id: &str) -> Result<Option<LeaseHolder>, StoreError> {
        self.conn
            .prepare_cached(
                "SELECT owner_pid, owner_started, heartbeat_at FROM session_leases \
                 WHERE session_id = ?1",
            )
            .and_then(|mut s| s.query_row([session_id], holder).optional())
            .map_err(sql(&self.path, "reading the session lease"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_live_owner_blocks_and_a_dead_one_is_reclaimed() {
        let mut store = Store::open_in_memory().unwrap();
        let me = ProcessIdentity::current();
        assert_eq!(
            store.acquire_lease("s1", &me, &[]).unwrap(),
            LeaseOutcome::Acquired {
                reclaimed_from: None
            }
        );
        // Held by a live process (this one): a second taker is refused.
        match store.acquire_lease("s1", &me, &[]).unwrap() {
            LeaseOutcome::Busy(held) => assert_eq!(held.pid, me.pid),
            other => panic!("expected busy, got {other:?}"),
        }
        assert!(store.renew_lease("s1", &me).unwrap());
        store.release_lease("s1", &me).unwrap();
        assert!(store.lease_holder("s1").unwrap().is_none());

        // A dead owner (an exited child) loses the lease to the next taker.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = ProcessIdentity::of(child.id()).unwrap_or(ProcessIdentity {
            pid: child.id(),
            started: 1,
        });
        child.wait().unwrap();
        assert!(matches!(
            store.acquire_lease("s2", &dead, &[]).unwrap(),
            LeaseOutcome::Acquired { .. }
        ));
        // Not before its leftovers were looked for: it stays listed as stale.
        match store.acquire_lease("s2", &me, &[]).unwrap() {
            LeaseOutcome::Unswept(held) => assert_eq!(held.identity(), dead),
            other => panic!("expected unswept, got {other:?}"),
        }
        let stale = store.stale_leases().unwrap();
        assert_eq!(stale.len(), 1, "{stale:?}");
        assert_eq!(stale[0].0, "s2");
        assert_eq!(stale[0].1.identity(), dead);
        assert_eq!(
            store.acquire_lease("s2", &me, &[dead]).unwrap(),
            LeaseOutcome::Acquired {
                reclaimed_from: Some(dead.pid)
            }
        );
        assert!(!store.renew_lease("s2", &dead).unwrap());
        assert!(store.stale_leases().unwrap().is_empty());
    }
}
