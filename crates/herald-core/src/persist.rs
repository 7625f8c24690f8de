//! The session store behind a dedicated thread, so SQLite work never blocks
//! the async runtime. Jobs run in order, one at a time, and this thread is
//! the only one that touches the connection.
//!
//! Jobs that queue up while the thread is busy run as one group: one
//! transaction, one commit (see [`Store::begin_group`]). Many sessions
//! writing at once then cost one write of each changed page instead of one
//! per job. A caller waiting on [`StoreHandle::call`] hears back only after
//! its group's commit, so nothing is reported saved before it is.

use std::path::Path;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use herald_store::{Store, StoreError};

/// Told whether the job's writes were committed; for the job's caller.
type Reply = Box<dyn FnOnce(Result<(), StoreGone>) + Send>;

/// A queued job on a store `S`; it returns its reply when someone waits
/// for the outcome.
type JobOn<S> = Box<dyn FnOnce(&mut S) -> Option<Reply> + Send>;

/// A queued job.
type Job = JobOn<Store>;

/// The group commit [`run_group`] drives: [`Store`]'s, behind a trait so
/// its failure paths (a commit that fails, a group SQLite rolled back
/// itself) can be driven in tests.
trait GroupCommit {
    fn begin_group(&mut self) -> Result<(), StoreError>;
    fn in_group(&self) -> bool;
    fn commit_group(&mut self) -> Result<(), StoreError>;
}

impl GroupCommit for Store {
    fn begin_group(&mut self) -> Result<(), StoreError> {
        Store::begin_group(self)
    }

    fn in_group(&self) -> bool {
        Store::in_group(self)
    }

    fn commit_group(&mut self) -> Result<(), StoreError> {
        Store::commit_group(self)
    }
}

/// Most jobs in one group: their callers wait for the group's commit, so
/// an unbounded group would hold the first of them back too long.
const MAX_GROUP: usize = 128;

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

/// The store could not take or keep a job's writes.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreGone {
    /// The thread is gone (it panicked, failed to start or was closed).
    #[error("the session store thread stopped; the session cannot be saved")]
    Stopped,
    /// The job ran, but the commit of the group it ran in failed, so its
    /// writes were rolled back.
    #[error("the session store could not save this change: {0}")]
    NotCommitted(Arc<StoreError>),
    /// SQLite rolled the job's group back after a failure in a later job
    /// (a full disk, an I/O error), taking this job's writes with it.
    #[error(
        "the session store lost this change: SQLite rolled its transaction back after a \
         failed write (is the disk full?); see the log"
    )]
    RolledBack,
}

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
        self.queue(Box::new(move |store| {
            job(store);
            None
        }))
    }

    fn queue(&self, job: Job) -> Result<(), StoreGone> {
        self.jobs
            .send(Request::Run(job))
            .map_err(|_| StoreGone::Stopped)
    }

    /// Runs `job` on the store thread and waits for its result, which
    /// comes once the job's writes are committed.
    pub async fn call<R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Store) -> R + Send + 'static,
    ) -> Result<R, StoreGone> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.queue(Box::new(move |store| {
            let result = job(store);
            Some(Box::new(move |committed: Result<(), StoreGone>| {
                let _ = tx.send(committed.map(|()| result));
            }))
        }))?;
        rx.await.unwrap_or(Err(StoreGone::Stopped))
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

/// The store thread's loop: takes every job queued so far (up to
/// [`MAX_GROUP`], stopping at a close) and runs them in order as a group.
fn serve(mut store: Store, queue: &mpsc::Receiver<Request>) {
    let mut jobs = Vec::with_capacity(MAX_GROUP);
    while let Ok(first) = queue.recv() {
        let mut next = Some(first);
        let mut close = None;
        while let Some(request) = next.take() {
            match request {
                Request::Run(job) => jobs.push(job),
                Request::Close(done) => {
                    close = Some(done);
                    break;
                }
            }
            if jobs.len() < MAX_GROUP {
                next = queue.try_recv().ok();
            }
        }
        run_group(&mut store, jobs.drain(..));
        if let Some(done) = close {
            // Closing the connection checkpoints and removes the log; the
            // queue goes with this function, so later jobs see `Stopped`.
            drop(store);
            let _ = done.send(());
            return;
        }
    }
}

/// Runs `jobs` in order in one transaction and answers their callers after
/// its commit. A lone job, or a group the store cannot open, runs as before
/// groups: each job commits its own writes.
fn run_group<S: GroupCommit>(store: &mut S, jobs: impl ExactSizeIterator<Item = JobOn<S>>) {
    let mut grouped = jobs.len() > 1 && store.begin_group().is_ok();
    let mut replies = Vec::new();
    for job in jobs {
        let reply = job(store);
        if !grouped {
            if let Some(reply) = reply {
                reply(Ok(()));
            }
            continue;
        }
        replies.extend(reply);
        if !store.in_group() {
            // SQLite rolled the group back after a failure (a full disk, an
            // I/O error): the writes so far are lost; the rest commit alone.
            tracing::error!("the store's group of writes was rolled back by SQLite");
            replies
                .drain(..)
                .for_each(|reply| reply(Err(StoreGone::RolledBack)));
            grouped = false;
        }
    }
    if grouped {
        let committed = store.commit_group().map_err(|err| {
            tracing::error!("committing the store's group of writes failed: {err}");
            StoreGone::NotCommitted(Arc::new(err))
        });
        replies
            .into_iter()
            .for_each(|reply| reply(committed.clone()));
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
    fn jobs_queued_together_commit_as_one_group_and_hear_back_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let store = StoreHandle::open(&db).unwrap();
        let (release, held) = mpsc::channel::<()>();
        store.send(move |_| {
            let _ = held.recv_timeout(Duration::from_secs(20));
        });
        // Queued while the thread is held (calls queue when first polled,
        // so these are polled together): they run as one group.
        let first = store.call(|s| {
            s.create_session(&session("ses_a")).unwrap();
            s.in_group()
        });
        let failing = store.call(|s| {
            let message = herald_protocol::Message::user("lost");
            s.append_messages("ses_missing", std::slice::from_ref(&message))
        });
        let last = store.call(|s| s.create_session(&session("ses_b")));
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            release.send(()).unwrap();
        });
        let runtime = runtime();
        let (first, failing, last) = runtime.block_on(async { tokio::join!(first, failing, last) });
        releaser.join().unwrap();
        assert!(first.unwrap(), "the jobs were not grouped");
        assert!(
            failing.unwrap().is_err(),
            "a message for a missing session was stored"
        );
        last.unwrap().unwrap();
        // After the answers, another connection sees both sessions: the
        // failed job rolled back alone.
        let other = herald_store::Store::open(&db).unwrap();
        assert!(other.get_session("ses_a").unwrap().is_some());
        assert!(other.get_session("ses_b").unwrap().is_some());
        // A lone job runs as before groups, committing its own writes.
        let alone = runtime.block_on(store.call(|s| s.in_group())).unwrap();
        assert!(!alone, "a lone job ran inside a group");
    }

    /// A store whose group commit fails as told, recording what ran.
    #[derive(Default)]
    struct FailingGroups {
        open: bool,
        refuse_begin: bool,
        refuse_commit: bool,
        commits: usize,
        /// Each job's name and whether it ran inside the group.
        ran: Vec<(&'static str, bool)>,
    }

    impl GroupCommit for FailingGroups {
        fn begin_group(&mut self) -> Result<(), StoreError> {
            if self.refuse_begin {
                return Err(StoreError::UnknownSession("begin refused".into()));
            }
            self.open = true;
            Ok(())
        }

        fn in_group(&self) -> bool {
            self.open
        }

        fn commit_group(&mut self) -> Result<(), StoreError> {
            self.open = false;
            self.commits += 1;
            if self.refuse_commit {
                return Err(StoreError::UnknownSession("disk full".into()));
            }
            Ok(())
        }
    }

    type Outcomes = Arc<Mutex<Vec<(&'static str, Result<(), String>)>>>;

    /// A job named `name` whose caller waits; `then` runs after it (to
    /// roll the group back, say). Its outcome lands in `outcomes`.
    fn awaited(
        name: &'static str,
        outcomes: &Outcomes,
        then: fn(&mut FailingGroups),
    ) -> JobOn<FailingGroups> {
        let outcomes = Arc::clone(outcomes);
        Box::new(move |store: &mut FailingGroups| {
            let grouped = store.open;
            store.ran.push((name, grouped));
            then(store);
            Some(Box::new(move |committed: Result<(), StoreGone>| {
                let told = committed.map_err(|e| e.to_string());
                outcomes.lock().unwrap().push((name, told));
            }) as Reply)
        })
    }

    /// A job nobody waits for.
    fn fire_and_forget(name: &'static str) -> JobOn<FailingGroups> {
        Box::new(move |store: &mut FailingGroups| {
            let grouped = store.open;
            store.ran.push((name, grouped));
            None
        })
    }

    fn nothing(_: &mut FailingGroups) {}

    #[test]
    fn a_failed_commit_reaches_every_waiting_caller_of_the_group() {
        let mut store = FailingGroups {
            refuse_commit: true,
            ..FailingGroups::default()
        };
        let outcomes = Outcomes::default();
        let jobs = vec![
            awaited("a", &outcomes, nothing),
            fire_and_forget("b"),
            awaited("c", &outcomes, nothing),
        ];
        run_group(&mut store, jobs.into_iter());
        assert_eq!(store.ran, [("a", true), ("b", true), ("c", true)]);
        assert_eq!(store.commits, 1);
        let outcomes = outcomes.lock().unwrap();
        assert_eq!(outcomes.len(), 2, "{outcomes:?}");
        for (name, told) in outcomes.iter() {
            let err = told.as_ref().unwrap_err();
            assert!(
                err.contains("could not save this change") && err.contains("disk full"),
                "{name}: {err}"
            );
        }
    }

    #[test]
    fn a_group_rolled_back_by_sqlite_fails_its_jobs_so_far_and_the_rest_commit_alone() {
        let mut store = FailingGroups::default();
        let outcomes = Outcomes::default();
        let jobs = vec![
            awaited("a", &outcomes, nothing),
            // SQLite rolls the transaction back during this job.
            awaited("b", &outcomes, |s| s.open = false),
            awaited("c", &outcomes, nothing),
        ];
        run_group(&mut store, jobs.into_iter());
        assert_eq!(store.ran, [("a", true), ("b", true), ("c", false)]);
        assert_eq!(store.commits, 0, "a rolled-back group was committed");
        let outcomes = outcomes.lock().unwrap();
        let lost = StoreGone::RolledBack.to_string();
        assert_eq!(
            *outcomes,
            [("a", Err(lost.clone())), ("b", Err(lost)), ("c", Ok(()))]
        );
    }

    #[test]
    fn jobs_run_alone_when_a_group_cannot_begin() {
        let mut store = FailingGroups {
            refuse_begin: true,
            ..FailingGroups::default()
        };
        let outcomes = Outcomes::default();
        let jobs = vec![
            awaited("a", &outcomes, nothing),
            awaited("b", &outcomes, nothing),
        ];
        run_group(&mut store, jobs.into_iter());
        assert_eq!(store.ran, [("a", false), ("b", false)]);
        assert_eq!(store.commits, 0);
        assert_eq!(*outcomes.lock().unwrap(), [("a", Ok(())), ("b", Ok(()))]);
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
