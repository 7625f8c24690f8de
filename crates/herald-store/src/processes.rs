//! The process groups tools started, recorded while they run, so a run that
//! starts after a killed one can end the groups it left behind (and report
//! the background ones with their logs).

use rusqlite::params;

use crate::error::{StoreError, sql};
use crate::owner::ProcessIdentity;
use crate::store::{Store, now_ms, to_i64};

/// One running process group of a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolProcess {
    /// Process group id (the leader's pid).
    pub pgid: u32,
    /// Start time of the leader (see [`ProcessIdentity::started`]).
    pub proc_started: u64,
    pub session_id: String,
    /// The herald process that started it.
    pub owner: ProcessIdentity,
    /// Started by `terminal(background=true)`.
    pub background: bool,
    pub command: String,
    /// Where its output is copied, for background processes.
    pub log_path: Option<String>,
}

impl ToolProcess {
    /// The group leader as a process identity.
    pub fn leader(&self) -> ProcessIdentity {
        ProcessIdentity {
            pid: self.pgid,
            started: self.proc_started,
        }
    }
}

impl Store {
    /// Records a started process group.
    pub fn record_tool_process(&mut self, process: &ToolProcess) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO tool_processes (pgid, session_id, owner_pid, owner_started, \
                 proc_started, background, command, log_path, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    i64::from(process.pgid),
                    process.session_id,
                    i64::from(process.owner.pid),
                    to_i64(process.owner.started),
                    to_i64(process.proc_started),
                    i64::from(process.background),
                    process.command,
                    process.log_path,
                    now_ms()
                ])
            })
            .map_err(sql(&self.path, "recording a tool process"))?;
        Ok(())
    }

    /// Forgets a process group that ended (or was taken care of).
    pub fn forget_tool_process(&mut self, pgid: u32, owner_pid: u32) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("DELETE FROM tool_processes WHERE pgid = ?1 AND owner_pid = ?2")
            .and_then(|mut s| s.execute(params![i64::from(pgid), i64::from(owner_pid)]))
            .map_err(sql(&self.path, "forgetting a tool process"))?;
        Ok(())
    }

    /// Process groups recorded for the sessions in `session_ids` whose owner
    /// is no longer running, oldest first.
    pub fn orphaned_tool_processes(
        &self,
        session_ids: &[String],
    ) -> Result<Vec<ToolProcess>, StoreError> {
        const CTX: &str = "reading tool processes";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT pgid, session_id, owner_pid, owner_started, proc_started, background, \
                 command, log_path FROM tool_processes WHERE session_id = ?1 ORDER BY created_at",
            )
            .map_err(sql(&self.path, CTX))?;
        let mut found = Vec::new();
        for session in session_ids {
            let rows = stmt
                .query_map([session], |row| {
                    Ok(ToolProcess {
                        pgid: u32::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                        session_id: row.get(1)?,
                        owner: ProcessIdentity {
                            pid: u32::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
                            started: u64::try_from(row.get::<_, i64>(3)?).unwrap_or(0),
                        },
                        proc_started: u64::try_from(row.get::<_, i64>(4)?).unwrap_or(0),
                        background: row.get::<_, i64>(5)? != 0,
                        command: row.get(6)?,
                        log_path: row.get(7)?,
                    })
                })
                .map_err(sql(&self.path, CTX))?;
            for row in rows {
                let process = row.map_err(sql(&self.path, CTX))?;
                if !process.owner.is_alive() {
                    found.push(process);
                }
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn only_processes_of_dead_owners_are_orphans() {
        let mut store = Store::open_in_memory().unwrap();
        let me = ProcessIdentity::current();
        let gone = ProcessIdentity {
            pid: me.pid,
            started: me.started + 7,
        };
        for (pgid, owner) in [(100, me), (200, gone)] {
            store
                .record_tool_process(&ToolProcess {
                    pgid,
                    proc_started: 5,
                    session_id: "s".into(),
                    owner,
                    background: pgid == 200,
                    command: "sleep 100".into(),
                    log_path: None,
                })
                .unwrap();
        }
        let orphans = store.orphaned_tool_processes(&["s".into()]).unwrap();
        if cfg!(target_os = "linux") {
            assert_eq!(orphans.len(), 1);
            assert_eq!(orphans[0].pgid, 200);
            assert!(orphans[0].background);
        }
        store.forget_tool_process(200, gone.pid).unwrap();
        assert!(
            store
                .orphaned_tool_processes(&["s".into()])
                .unwrap()
                .is_empty()
        );
    }
}
