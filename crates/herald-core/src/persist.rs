//! The session store behind a dedicated thread, so SQLite work never blocks
//! the async runtime. Jobs run in order, one at a time.
//!
//! A turn's own writes ([`StoreHandle::call_write`]) may instead run at once
//! on the calling thread, which saves waking the store thread and then being
//! woken by it (on a virtual machine each wake-up is an interrupt to the
//! other CPU and a cold cache). That is done only when it cannot block:
//! nothing is queued or running on the store thread, the database is on a
//! local file system, the attempt does not wait for another process's lock
//! (it fails at once and the write goes to the thread), commits never run a
//! checkpoint (its disk syncs run on the store thread), and no write done
//! that way was slow lately.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use herald_store::{CHECKPOINT_PAGES, Store, StoreError};

type Job = Box<dyn FnOnce(&mut Store) + Send>;

/// What the store thread is asked to do.
enum Request {
    Run(Job),
    /// Copy the write-ahead log back into the database (asked for by a
    /// write that ran on another thread and found the log full).
    Checkpoint,
    /// Close the database after the jobs queued before, then say so.
    Close(mpsc::SyncSender<()>),
}

/// An inline write that took longer than this (the disk is busy, or the
/// system is throttling writers) sends every write to the store thread for
/// [`SLOW_BACKOFF`].
const SLOW_WRITE: Duration = Duration::from_millis(10);
/// See [`SLOW_WRITE`].
const SLOW_BACKOFF: Duration = Duration::from_secs(30);

/// What the store thread and the callers share.
#[derive(Debug)]
struct Shared {
    /// The connection; `None` once closed. The store thread holds the lock
    /// while it runs a job; an inline write only ever tries it.
    store: Mutex<Option<Store>>,
    /// Requests sent to the thread and not yet finished. An inline write
    /// runs only when this is zero, so it never overtakes a queued job.
    queued: AtomicUsize,
    /// The write-ahead log's size in pages after the last commit.
    log_pages: Arc<AtomicU32>,
    /// A [`Request::Checkpoint`] is on its way.
    checkpoint_asked: AtomicBool,
    /// Whether inline writes are allowed at all (a local file system).
    inline_allowed: bool,
    /// Inline writes are off until this many milliseconds after `epoch`.
    slow_until_ms: AtomicU64,
    epoch: Instant,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Store>> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checkpoints when the log has reached the size at which SQLite would.
    fn checkpoint_if_due(&self, store: &mut Store) {
        if self.log_pages.load(Ordering::Relaxed) >= CHECKPOINT_PAGES {
            if let Err(err) = store.checkpoint() {
                tracing::warn!(%err, "cannot checkpoint the session store");
            }
            // The next commit reports the log's new size.
            self.log_pages.store(0, Ordering::Relaxed);
        }
    }

    fn inline_paused(&self) -> bool {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        now < self.slow_until_ms.load(Ordering::Relaxed)
    }

    fn pause_inline(&self) {
        let until = self.epoch.elapsed() + SLOW_BACKOFF;
        let until = u64::try_from(until.as_millis()).unwrap_or(u64::MAX);
        self.slow_until_ms.store(until, Ordering::Relaxed);
    }
}

/// A cloneable handle to the store thread.
#[derive(Clone, Debug)]
pub struct StoreHandle {
    jobs: mpsc::Sender<Request>,
    shared: Arc<Shared>,
}

/// The store thread is gone (it panicked or failed to start).
#[derive(Debug, thiserror::Error)]
#[error("the session store thread stopped; the session cannot be saved")]
pub struct StoreGone;

impl StoreHandle {
    /// Opens (creating and migrating) the database at `path`, then starts
    /// the thread that serves it.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let mut store = Store::open(path)?;
        let log_pages = store.defer_checkpoints()?;
        let shared = Arc::new(Shared {
            store: Mutex::new(Some(store)),
            queued: AtomicUsize::new(0),
            log_pages,
            checkpoint_asked: AtomicBool::new(false),
            inline_allowed: on_local_disk(path),
            slow_until_ms: AtomicU64::new(0),
            epoch: Instant::now(),
        });
        let (jobs, queue) = mpsc::channel::<Request>();
        let served = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("herald-store".into())
            .spawn(move || serve(&served, &queue))
            .map_err(|source| StoreError::Io {
                action: "starting the store thread",
                path: Default::default(),
                source,
            })?;
        Ok(Self { jobs, shared })
    }

    /// Sends `request` to the thread, counting it until it has run.
    fn queue(&self, request: Request) -> Result<(), StoreGone> {
        self.shared.queued.fetch_add(1, Ordering::AcqRel);
        self.jobs.send(request).map_err(|_| {
            self.shared.queued.fetch_sub(1, Ordering::AcqRel);
            StoreGone
        })
    }

    /// Queues `job` on the store thread without waiting for it: for records
    /// whose failure must not hold up the agent (nested tool calls). Jobs
    /// still run in order, so later awaited writes land after it.
    pub fn submit(&self, job: impl FnOnce(&mut Store) + Send + 'static) -> Result<(), StoreGone> {
        self.queue(Request::Run(Box::new(job)))
    }

    /// Runs `job` on the store thread and waits for its result.
    pub async fn call<R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Store) -> R + Send + 'static,
    ) -> Result<R, StoreGone> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.queue(Request::Run(Box::new(move |store| {
            let _ = tx.send(job(store));
        })))?;
        rx.await.map_err(|_| StoreGone)
    }

    /// Runs a write of one transaction and waits for its result: at once on
    /// this thread when that cannot block (see the module's doc), otherwise
    /// on the store thread like [`StoreHandle::call`]. `job` may run twice:
    /// when the inline attempt meets another process's lock it has changed
    /// nothing (a write transaction takes the lock first), and the store
    /// thread runs it again, waiting for the lock as usual. So it must be
    /// one transaction, or a read.
    pub async fn call_write<R, F>(&self, job: F) -> Result<Result<R, StoreError>, StoreGone>
    where
        R: Send + 'static,
        F: Fn(&mut Store) -> Result<R, StoreError> + Send + 'static,
    {
        match self.try_inline(&job) {
            Some(Err(StoreError::Locked { .. })) | None => self.call(job).await,
            Some(done) => Ok(done),
        }
    }

    /// Runs `job` here if nothing is queued, the thread is idle and inline
    /// writes are allowed; `None` when it did not run.
    fn try_inline<R>(
        &self,
        job: &dyn Fn(&mut Store) -> Result<R, StoreError>,
    ) -> Option<Result<R, StoreError>> {
        let shared = &*self.shared;
        if !shared.inline_allowed
            || shared.queued.load(Ordering::Acquire) != 0
            || shared.inline_paused()
        {
            return None;
        }
        let mut guard = shared.store.try_lock().ok()?;
        // A job queued between the first look and taking the lock runs
        // first: it was asked for first.
        if shared.queued.load(Ordering::Acquire) != 0 {
            return None;
        }
        let store = guard.as_mut()?;
        let started = Instant::now();
        let result = store.without_waiting(|store| job(store));
        drop(guard);
        if started.elapsed() > SLOW_WRITE {
            shared.pause_inline();
        }
        if shared.log_pages.load(Ordering::Relaxed) >= CHECKPOINT_PAGES
            && !shared.checkpoint_asked.swap(true, Ordering::AcqRel)
            && self.queue(Request::Checkpoint).is_err()
        {
            shared.checkpoint_asked.store(false, Ordering::Release);
        }
        Some(result)
    }

    /// Queues `job` on the store thread without waiting (bookkeeping whose
    /// failure must not hold up the caller). Jobs still run in order.
    pub fn send(&self, job: impl FnOnce(&mut Store) + Send + 'static) {
        let _ = self.queue(Request::Run(Box::new(job)));
    }

    /// Closes the database once the jobs queued before have run, waiting at
    /// most `timeout`; later jobs fail with [`StoreGone`]. Closing the last
    /// connection copies the write-ahead log into the database and removes
    /// it, so the next process opening the file need not read the log back
    /// (a process that just exits leaves it, and the next open scans all of
    /// it). Blocks the calling thread: call it once the async work is done.
    /// Returns whether the store closed in time (false when it was gone).
    pub fn close_blocking(&self, timeout: Duration) -> bool {
        let (done, closed) = mpsc::sync_channel(1);
        if self.queue(Request::Close(done)).is_err() {
            return false;
        }
        closed.recv_timeout(timeout).is_ok()
    }
}

/// The store thread's loop: runs each request with the connection locked.
fn serve(shared: &Shared, queue: &mpsc::Receiver<Request>) {
    while let Ok(request) = queue.recv() {
        let mut guard = shared.lock();
        let closing = match (request, guard.as_mut()) {
            (Request::Run(job), Some(store)) => {
                job(store);
                shared.checkpoint_if_due(store);
                None
            }
            (Request::Checkpoint, Some(store)) => {
                shared.checkpoint_asked.store(false, Ordering::Release);
                shared.checkpoint_if_due(store);
                None
            }
            (Request::Close(done), _) => {
                // Closing the connection checkpoints and removes the log.
                drop(guard.take());
                Some(done)
            }
            // Closed already: a dropped job's caller sees `StoreGone`.
            (_, None) => None,
        };
        shared.queued.fetch_sub(1, Ordering::AcqRel);
        drop(guard);
        if let Some(done) = closing {
            let _ = done.send(());
            return;
        }
    }
}

/// Whether `path` is on a file system whose writes go to this machine's
/// page cache and disks (not a network or FUSE file system, whose writes
/// may wait on a server): only there may a write run inline.
fn on_local_disk(path: &Path) -> bool {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    nix::sys::statfs::statfs(dir.unwrap_or(Path::new(".")))
        .is_ok_and(|info| herald_tools::is_local_file_system(info.filesystem_type()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn session(id: &str) -> herald_store::NewSession {
        herald_store::NewSession {
            id: id.into(),
            parent_session_id: None,
            agent_id: None,
            source: herald_store::SessionSource::Cli,
            cwd: "/w".into(),
            model: "m".into(),
            provider: "openai".into(),
            system_prompt: "sys".into(),
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// The name of the thread a job ran on.
    fn thread_name() -> String {
        std::thread::current().name().unwrap_or("").to_owned()
    }

    #[test]
    fn a_write_runs_on_the_calling_thread_when_nothing_is_queued() {
        let dir = tempfile::tempdir().unwrap();
        let store = StoreHandle::open(&dir.path().join("state.db")).unwrap();
        assert!(
            store.shared.inline_allowed,
            "the temporary directory is not on a local file system"
        );
        let here = thread_name();
        let ran_on = runtime()
            .block_on(store.call_write(|s| {
                s.create_session(&session("ses_a"))?;
                Ok(thread_name())
            }))
            .unwrap()
            .unwrap();
        assert_eq!(ran_on, here);
        let found = runtime()
            .block_on(store.call(|s| s.get_session("ses_a")))
            .unwrap()
            .unwrap();
        assert!(found.is_some());
    }

    #[test]
    fn a_write_waits_its_turn_behind_a_queued_job_and_runs_on_the_store_thread() {
        let dir = tempfile::tempdir().unwrap();
        let store = StoreHandle::open(&dir.path().join("state.db")).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let (release, held) = mpsc::channel::<()>();
        let first = Arc::clone(&order);
        store.send(move |_| {
            let _ = held.recv_timeout(Duration::from_secs(20));
            first.lock().unwrap().push("queued job".to_owned());
        });
        let second = Arc::clone(&order);
        let write = store.call_write(move |_| {
            second
                .lock()
                .unwrap()
                .push(format!("write on {}", thread_name()));
            Ok(())
        });
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            release.send(()).unwrap();
        });
        runtime().block_on(write).unwrap().unwrap();
        releaser.join().unwrap();
        assert_eq!(
            *order.lock().unwrap(),
            vec!["queued job".to_owned(), "write on herald-store".to_owned()]
        );
    }

    #[test]
    fn a_write_that_meets_another_process_lock_goes_to_the_store_thread_and_waits() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let store = StoreHandle::open(&db).unwrap();
        let other = rusqlite::Connection::open(&db).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let runs = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&runs);
        let write = store.call_write(move |s| {
            seen.lock().unwrap().push(thread_name());
            s.create_session(&session("ses_locked")).map(drop)
        });
        let holder = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            other.execute_batch("ROLLBACK").unwrap();
        });
        let started = Instant::now();
        runtime().block_on(write).unwrap().unwrap();
        holder.join().unwrap();
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "the write did not wait for the lock"
        );
        let runs = runs.lock().unwrap().clone();
        assert_eq!(runs, vec![thread_name(), "herald-store".to_owned()]);
        let reopened = herald_store::Store::open(&db).unwrap();
        assert!(reopened.get_session("ses_locked").unwrap().is_some());
    }

    #[test]
    fn a_full_log_from_inline_writes_is_checkpointed_by_the_store_thread() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let store = StoreHandle::open(&db).unwrap();
        let rt = runtime();
        rt.block_on(store.call_write(|s| s.create_session(&session("ses_big")).map(drop)))
            .unwrap()
            .unwrap();
        let text = "x".repeat(64 * 1024);
        let mut writes = 0;
        // Inline writes never checkpoint: the log grows past the size at
        // which SQLite would have copied it back.
        while store.shared.log_pages.load(Ordering::Relaxed) < CHECKPOINT_PAGES {
            let text = text.clone();
            rt.block_on(store.call_write(move |s| {
                s.append_messages("ses_big", &[herald_protocol::Message::user(text.clone())])
                    .map(drop)
            }))
            .unwrap()
            .unwrap();
            writes += 1;
            assert!(writes < 1000, "the log never filled");
        }
        // The write that filled it asked the store thread for a checkpoint.
        rt.block_on(store.call(|_| ())).unwrap();
        assert_eq!(store.shared.log_pages.load(Ordering::Relaxed), 0);
        assert!(!store.shared.checkpoint_asked.load(Ordering::Relaxed));
        rt.block_on(store.call_write(|s| {
            s.append_messages("ses_big", &[herald_protocol::Message::user("small")])
                .map(drop)
        }))
        .unwrap()
        .unwrap();
        let pages = store.shared.log_pages.load(Ordering::Relaxed);
        assert!(pages < 64, "the log did not start over: {pages} pages");
        assert!(store.close_blocking(Duration::from_secs(10)));
        let reopened = herald_store::Store::open(&db).unwrap();
        assert_eq!(reopened.load_messages("ses_big").unwrap().len(), writes + 1);
    }

    #[test]
    fn closing_runs_the_queued_jobs_first_then_refuses_new_ones() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let store = StoreHandle::open(&db).unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        store.send(move |_| {
            std::thread::sleep(Duration::from_millis(50));
            flag.store(true, Ordering::SeqCst);
        });
        assert!(store.close_blocking(Duration::from_secs(10)));
        assert!(ran.load(Ordering::SeqCst), "a queued job was dropped");
        assert!(!dir.path().join("state.db-wal").exists());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(runtime.block_on(store.call(|_| ())).is_err());
        assert!(store.submit(|_| ()).is_err());
        assert!(!store.close_blocking(Duration::from_secs(1)));
    }

    #[test]
    fn closing_gives_up_at_the_timeout_and_the_store_still_closes_after_the_job() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let store = StoreHandle::open(&db).unwrap();
        store.send(|s| {
            // Something for the close to fold in.
            s.create_session(&session("ses_slow")).unwrap();
        });
        let (release, held) = mpsc::channel::<()>();
        store.send(move |_| {
            let _ = held.recv_timeout(Duration::from_secs(20));
        });
        let started = std::time::Instant::now();
        assert!(!store.close_blocking(Duration::from_millis(100)));
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(100) && waited < Duration::from_secs(5),
            "close_blocking returned after {waited:?}"
        );
        let wal = dir.path().join("state.db-wal");
        assert!(wal.exists(), "closed while a job was still running");
        // The close stays queued behind the job and runs when it ends.
        release.send(()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while wal.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!wal.exists(), "the store never closed after the job ended");
        let reopened = herald_store::Store::open(&db).unwrap();
        assert!(reopened.get_session("ses_slow").unwrap().is_some());
    }
}
