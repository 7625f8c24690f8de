//! Tool processes that outlive the herald run that started them.
//!
//! Two mechanisms, one exact and one descriptive. Every tool process
//! carries its owner (this herald process's pid and start time) in its
//! environment from before it runs (`herald_sandbox::OWNER_VAR`); before a
//! session lease is taken, [`sweep_dead_owners`] kills every process marked
//! by a herald process that died holding a lease, found through `/proc`.
//! And while a session runs, every process group its tools start is
//! recorded in the store ([`StoreProcessJournal`]), with background
//! processes copying their output to a log file under
//! `$HERALD_HOME/processes/`: when a later run takes the session over,
//! [`reap_orphans`] ends what is left of those groups and reports the
//! background processes with their logs rather than silently losing them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use herald_store::{ProcessIdentity, ToolProcess};
use herald_tools::ProcessJournal;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::StoreHandle;

/// Most of a dead background process's log shown again.
const ADOPTED_LOG_BYTES: u64 = 256 * 1024;

/// Records one agent's tool process groups in the store.
#[derive(Debug)]
pub struct StoreProcessJournal {
    store: StoreHandle,
    session_id: String,
    owner: ProcessIdentity,
    log_dir: Option<PathBuf>,
}

impl StoreProcessJournal {
    /// A journal for `session_id`; background output is copied under
    /// `log_dir` when given (created when the first log is).
    pub fn new(store: StoreHandle, session_id: &str, log_dir: Option<PathBuf>) -> Self {
        Self {
            store,
            session_id: session_id.to_owned(),
            owner: ProcessIdentity::current(),
            log_dir,
        }
    }
}

impl ProcessJournal for StoreProcessJournal {
    fn started(&self, pgid: u32, background: bool, command: &str, log: Option<&Path>) {
        let record = ToolProcess {
            pgid,
            proc_started: ProcessIdentity::of(pgid).map_or(0, |p| p.started),
            session_id: self.session_id.clone(),
            owner: self.owner,
            background,
            command: command.chars().take(2000).collect(),
            log_path: log.map(|p| p.display().to_string()),
        };
        self.store.send(move |s| {
            let _ = s.record_tool_process(&record);
        });
    }

    fn ended(&self, pgid: u32) {
        let owner = self.owner.pid;
        self.store.send(move |s| {
            let _ = s.forget_tool_process(pgid, owner);
        });
    }

    fn log_path(&self, process_id: &str) -> Option<PathBuf> {
        let dir = self.log_dir.as_ref()?;
        // Once per background process: a directory that cannot be made
        // leaves the output in memory only.
        std::fs::create_dir_all(dir).ok()?;
        Some(dir.join(format!(
            "{}-{}-{process_id}.log",
            self.session_id, self.owner.pid
        )))
    }
}

/// Kills the tool processes of every herald process that died holding a
/// session lease (found by their mark, see the module docs), then forgets
/// the dead owners' leases of sessions other than `session_id` (whose
/// lease the caller takes over): nothing of theirs is left to look for.
/// Returns the dead owners swept, for `Store::acquire_lease`. Costs one
/// small store query when no herald process died; a pass over `/proc`
/// only when one did.
pub async fn sweep_dead_owners(
    store: &StoreHandle,
    session_id: &str,
) -> Result<Vec<ProcessIdentity>, String> {
    let stale = store
        .call(|s| s.stale_leases())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    if stale.is_empty() {
        return Ok(Vec::new());
    }
    let mut dead: Vec<ProcessIdentity> = stale.iter().map(|(_, held)| held.identity()).collect();
    dead.sort_by_key(|d| (d.pid, d.started));
    dead.dedup();
    let owners: Vec<herald_sandbox::Owner> = dead
        .iter()
        .map(|d| herald_sandbox::Owner {
            pid: d.pid,
            started: d.started,
        })
        .collect();
    let started = std::time::Instant::now();
    let sweep = tokio::task::spawn_blocking(move || herald_sandbox::kill_orphans_of(&owners))
        .await
        .map_err(|e| format!("looking for the processes of dead herald runs failed: {e}"))?;
    for killed in &sweep.killed {
        tracing::info!(
            pid = killed.pid,
            owner = killed.owner.pid,
            command = %killed.command,
            "killed a tool process a killed herald run left"
        );
    }
    tracing::debug!(
        owners = dead.len(),
        killed = sweep.killed.len(),
        scanned = sweep.scanned,
        passes = sweep.passes,
        micros = started.elapsed().as_micros(),
        "swept the processes of dead herald runs"
    );
    let others: Vec<(String, ProcessIdentity)> = stale
        .into_iter()
        .filter(|(session, _)| session != session_id)
        .map(|(session, held)| (session, held.identity()))
        .collect();
    if !others.is_empty() {
        store
            .call(move |s| {
                for (session, owner) in &others {
                    s.release_lease(session, owner)?;
                }
                Ok::<_, herald_store::StoreError>(())
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
    }
    Ok(dead)
}

/// A background process of a dead run that was stopped, with its log.
#[derive(Debug, Clone)]
pub struct StoppedProcess {
    pub session_id: String,
    pub command: String,
    pub pid: u32,
    /// The end of its saved output.
    pub log: Vec<u8>,
    /// The dead herald process that had started it.
    pub owner_pid: u32,
}

/// Ends the process groups that dead herald runs of `session_ids` left
/// running and forgets their records. Returns the background ones, so the
/// caller can show them (`process list`) with their logs.
pub async fn reap_orphans(store: &StoreHandle, session_ids: Vec<String>) -> Vec<StoppedProcess> {
    let found = match store
        .call(move |s| s.orphaned_tool_processes(&session_ids))
        .await
    {
        Ok(Ok(found)) => found,
        _ => return Vec::new(),
    };
    let mut stopped = Vec::new();
    for process in found {
        if group_is_ours(&process) {
            stop_group(process.pgid).await;
            tracing::info!(
                pgid = process.pgid,
                command = %process.command,
                "stopped a tool process group a killed herald run left"
            );
        }
        let (pgid, owner) = (process.pgid, process.owner.pid);
        let _ = store
            .call(move |s| s.forget_tool_process(pgid, owner))
            .await;
        if process.background {
            let log = match &process.log_path {
                Some(path) => read_tail(Path::new(path), ADOPTED_LOG_BYTES).await,
                None => Vec::new(),
            };
            stopped.push(StoppedProcess {
                session_id: process.session_id,
                command: process.command,
                pid: process.pgid,
                log,
                owner_pid: owner,
            });
        }
    }
    stopped
}

/// Whether signalling the group `pgid` can only reach what the dead run
/// started: its leader still runs (same start time), or the leader is gone
/// and its group id cannot have been reused (the kernel does not hand out a
/// pid while a group of that id has members). A leader pid now held by an
/// unrelated process means the number was reused: hands off.
fn group_is_ours(process: &ToolProcess) -> bool {
    match ProcessIdentity::of(process.pgid) {
        Some(now) => process.proc_started == 0 || now.started == process.proc_started,
        None => true,
    }
}

/// SIGTERM to the group, then SIGKILL after a short grace.
async fn stop_group(pgid: u32) {
    let Ok(raw) = i32::try_from(pgid) else {
        return;
    };
    let group = Pid::from_raw(raw);
    if killpg(group, Signal::SIGTERM).is_err() {
        return; // nothing left in the group
    }
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if killpg(group, None).is_err() {
            return;
        }
    }
    let _ = killpg(group, Signal::SIGKILL);
}

/// The last `max` bytes of the file at `path` (empty when unreadable).
async fn read_tail(path: &Path, max: u64) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let Ok(mut file) = tokio::fs::File::open(path).await else {
        return Vec::new();
    };
    let len = file.metadata().await.map_or(0, |m| m.len());
    if len > max {
        let _ = file.seek(std::io::SeekFrom::Start(len - max)).await;
    }
    let mut bytes = Vec::new();
    let _ = file.take(max).read_to_end(&mut bytes).await;
    bytes
}

/// Removes what dead herald runs left behind: in the temp directory, the
/// directory-tracking files of foreground commands and `execute_code` run
/// directories; in `cwd` (top level only), the temporary files of atomic
/// writes that were cut short. Blocking; run it off the async runtime.
pub fn remove_stale_temp_files(cwd: &Path) {
    let tmp = std::env::temp_dir();
    let cwd_files = herald_tools::builtin::remove_stale_cwd_files(&tmp);
    let run_dirs = herald_exec::remove_stale_run_dirs(&tmp);
    let writes = herald_tools::remove_stale_temp_files(cwd).map_or(0, |v| v.len());
    if cwd_files + run_dirs + writes > 0 {
        tracing::info!(
            cwd_files,
            run_dirs,
            writes,
            "removed files of dead herald runs"
        );
    }
}
