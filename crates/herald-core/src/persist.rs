//! The session store behind a dedicated thread, so SQLite work never blocks
//! the async runtime. Jobs run in order, one at a time, and this thread is
//! the only one that touches the connection.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use herald_store::{Store, StoreError};

type Job = Box<dyn FnOnce(&mut Store) + Send>;

/// What the store thread is asked to do.
enum Request {
    Run(Job),
    /// Close the database after the jobs queued before, then say so.
    Close(mpsc::SyncSender<()>),
}

/// A cloneable handle to the store thread.
#[derive(Clone, Debug)]
pub struct StoreHandle {
    jobs: mpsc::Sender<Request>,
}

/// The store thread is gone (it panicked or failed to start).
#[derive(Debug, thiserror::Error)]
#[error("the session store thread stopped; the session cannot be saved")]
pub struct StoreGone;

impl StoreHandle {
    /// Opens (creating and migrating) the database at `path`, then starts
    /// the thread that serves it.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let store = Store::open(path)?;
        let (jobs, queue) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("herald-store".into())
            .spawn(move || serve(store, &queue))
            .map_err(|source| StoreError::Io {
                action: "starting the store thread",
                path: Default::default(),
                source,
            })?;
        Ok(Self { jobs })
    }

    /// Queues `job` on the store thread without waiting for it: for records
    /// whose failure must not hold up the agent (nested tool calls). Jobs
    /// still run in order, so later awaited writes land after it.
    pub fn submit(&self, job: impl FnOnce(&mut Store) + Send + 'static) -> Result<(), StoreGone> {
        self.jobs
            .send(Request::Run(Box::new(job)))
            .map_err(|_| StoreGone)
    }

    /// Runs `job` on the store thread and waits for its result.
    pub async fn call<R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Store) -> R + Send + 'static,
    ) -> Result<R, StoreGone> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(move |store| {
            let _ = tx.send(job(store));
        })?;
        rx.await.map_err(|_| StoreGone)
    }

    /// Queues `job` on the store thread without waiting (bookkeeping whose
    /// failure must not hold up the caller). Jobs still run in order.
    pub fn send(&self, job: impl FnOnce(&mut Store) + Send + 'static) {
        let _ = self.submit(job);
    }

    /// Closes the database once the jobs queued before have run, waiting at
    /// most `timeout`; later jobs fail with [`StoreGone`]. Closing the last
    /// connection copies the write-ahead log into the database and removes
    /// it, so the next process opening the file need not read the log back.
    /// Blocks the calling thread: call it once the async work is done.
    /// Returns whether the store closed in time (false when it was gone).
    pub fn close_blocking(&self, timeout: Duration) -> bool {
        let (done, closed) = mpsc::sync_channel(1);
        if self.jobs.send(Request::Close(done)).is_err() {
            return false;
        }
        closed.recv_timeout(timeout).is_ok()
    }
}

/// The store thread's loop: runs each request in the order it came.
fn serve(store: Store, queue: &mpsc::Receiver<Request>) {
    let mut store = Some(store);
    while let Ok(request) = queue.recv() {
        match (request, store.as_mut()) {
            (Request::Run(job), Some(open)) => job(open),
            (Request::Close(done), _) => {
                // Closing the connection checkpoints and removes the log.
                drop(store.take());
                let _ = done.send(());
                return;
            }
            // Closed already: a dropped job's caller sees `StoreGone`.
            (Request::Run(_), None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

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
    fn a_call_waits_its_turn_behind_a_queued_job_and_runs_on_the_store_thread() {
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
        let write = store.call(move |_| {
            second
                .lock()
                .unwrap()
                .push(format!("write on {}", thread_name()));
        });
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            release.send(()).unwrap();
        });
        runtime().block_on(write).unwrap();
        releaser.join().unwrap();
        assert_eq!(
            *order.lock().unwrap(),
            vec!["queued job".to_owned(), "write on herald-store".to_owned()]
        );
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
