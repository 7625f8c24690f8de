//! The process's one file watcher: a single inotify instance (through
//! `notify`) and one thread, `herald-watch`, shared by every session of the
//! process (`herald serve` holds hundreds; the kernel allows 128 inotify
//! instances per user).
//!
//! Only the directories that hold a watched file are watched, each without
//! recursion: what a build writes into `target/` or `node_modules/` never
//! reaches herald, and starting costs nothing whatever the size of the
//! tree. The `notify` callback drops at once every event that is not about
//! a watched file (or a watched directory itself), so a build writing
//! thousands of files into a watched directory costs a hash lookup each.
//! The rest is debounced — a path is looked at once things have been quiet
//! for [`QUIET`], or [`MAX_DELAY`] after its first event — and then
//! handed to the sessions that watch it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecursiveMode, Watcher};

use super::Files;

/// A changed path is looked at once no event came for this long.
const QUIET: Duration = Duration::from_millis(50);
/// ... or at the latest this long after its first event.
const MAX_DELAY: Duration = Duration::from_millis(300);

/// What the watcher thread is told.
enum Msg {
    /// A watched file (or directory) changed.
    Changed(PathBuf),
    /// Events were lost (the kernel queue overflowed): look at everything.
    Rescan,
    /// Start watching this directory.
    Watch(PathBuf),
    /// Stop watching this directory.
    Unwatch(PathBuf),
    /// A session's files, to be told of changes.
    Join(u64, Weak<Files>),
    /// The session is gone.
    Leave(u64),
    /// The watcher reported an error.
    Failed(String),
}

/// How many sessions watch each file and directory: read by the `notify`
/// callback to drop unrelated events before they cost anything more.
#[derive(Debug, Default)]
struct Index {
    files: HashMap<PathBuf, usize>,
    dirs: HashMap<PathBuf, usize>,
    /// Watch requests the thread has handled (tests wait for them).
    handled: usize,
}

/// The process's watcher (see the module documentation).
#[derive(Debug)]
pub(crate) struct Hub {
    tx: Sender<Msg>,
    index: Arc<Mutex<Index>>,
    next_id: AtomicU64,
}

impl Hub {
    /// The process's hub, started on first use; `None` when its thread
    /// cannot be started (then changes are noticed only between tool calls).
    pub(crate) fn shared() -> Option<&'static Hub> {
        static HUB: OnceLock<Option<Hub>> = OnceLock::new();
        HUB.get_or_init(Hub::start).as_ref()
    }

    /// A hub of its own (tests).
    #[cfg(test)]
    pub(crate) fn leak_new() -> Option<&'static Hub> {
        Hub::start().map(|hub| &*Box::leak(Box::new(hub)))
    }

    fn start() -> Option<Hub> {
        let (tx, rx) = std::sync::mpsc::channel();
        let index = Arc::new(Mutex::new(Index::default()));
        let (thread_tx, thread_index) = (tx.clone(), Arc::clone(&index));
        let started = std::thread::Builder::new()
            .name("herald-watch".to_owned())
            .spawn(move || run(&rx, thread_tx, &thread_index));
        match started {
            Ok(_) => Some(Hub {
                tx,
                index,
                next_id: AtomicU64::new(1),
            }),
            Err(err) => {
                tracing::warn!(
                    "cannot start the file watcher thread ({err}); changes to files are noticed only between tool calls"
                );
                None
            }
        }
    }

    /// An id for a session's files.
    pub(crate) fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Tells the hub of a session's files (to leave with their id).
    pub(crate) fn join(&self, files: &Arc<Files>) {
        let _ = self.tx.send(Msg::Join(files.id, Arc::downgrade(files)));
    }

    /// The session `id` is gone.
    pub(crate) fn leave(&self, id: u64) {
        let _ = self.tx.send(Msg::Leave(id));
    }

    /// One more session watches `path` (its directory is watched).
    pub(crate) fn track(&self, path: &Path) {
        let Some(dir) = path.parent() else {
            return;
        };
        let mut index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        *index.files.entry(path.to_path_buf()).or_default() += 1;
        let watchers = index.dirs.entry(dir.to_path_buf()).or_default();
        *watchers += 1;
        if *watchers == 1 {
            let _ = self.tx.send(Msg::Watch(dir.to_path_buf()));
        }
    }

    /// One session less watches `path`.
    pub(crate) fn untrack(&self, path: &Path) {
        let Some(dir) = path.parent() else {
            return;
        };
        let mut index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = index.files.get_mut(path) {
            *count -= 1;
            if *count == 0 {
                index.files.remove(path);
            }
        }
        if let Some(count) = index.dirs.get_mut(dir) {
            *count -= 1;
            if *count == 0 {
                index.dirs.remove(dir);
                let _ = self.tx.send(Msg::Unwatch(dir.to_path_buf()));
            }
        }
    }

    /// Directories watched now, and watch requests handled (tests).
    #[cfg(test)]
    pub(crate) fn watched_dirs(&self) -> (usize, usize) {
        let index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        (index.dirs.len(), index.handled)
    }
}

/// The `notify` callback: passes on what concerns a watched path, drops
/// the rest at once (reads, and everything in a watched directory that no
/// session watches).
fn callback(
    tx: Sender<Msg>,
    index: Arc<Mutex<Index>>,
) -> impl FnMut(notify::Result<notify::Event>) + Send + 'static {
    move |result| match result {
        Ok(event) => {
            if matches!(event.kind, EventKind::Access(kind) if kind != AccessKind::Close(AccessMode::Write))
            {
                return;
            }
            if event.need_rescan() {
                let _ = tx.send(Msg::Rescan);
            }
            let index = index.lock().unwrap_or_else(PoisonError::into_inner);
            for path in event.paths {
                if index.files.contains_key(&path) || index.dirs.contains_key(&path) {
                    let _ = tx.send(Msg::Changed(path));
                }
            }
        }
        Err(err) => {
            let _ = tx.send(Msg::Failed(err.to_string()));
        }
    }
}

/// The watcher thread: keeps the watches, debounces changes and hands
/// them to the sessions.
fn run(rx: &Receiver<Msg>, tx: Sender<Msg>, index: &Arc<Mutex<Index>>) {
    let mut watcher = match notify::recommended_watcher(callback(tx, Arc::clone(index))) {
        Ok(watcher) => Some(watcher),
        Err(err) => {
            tracing::warn!(
                "file watcher unavailable ({err}); changes to files are noticed only between tool calls"
            );
            None
        }
    };
    let mut sessions: HashMap<u64, Weak<Files>> = HashMap::new();
    let mut changed: HashSet<PathBuf> = HashSet::new();
    let mut rescan = false;
    // When the first pending change came, and the latest.
    let mut pending: Option<(Instant, Instant)> = None;
    let mut warned = HashSet::new();
    loop {
        let message = match pending {
            None => match rx.recv() {
                Ok(message) => message,
                Err(_) => return,
            },
            Some((first, latest)) => {
                let due = (latest + QUIET).min(first + MAX_DELAY);
                match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                    Ok(message) => message,
                    Err(RecvTimeoutError::Timeout) => {
                        let paths = std::mem::take(&mut changed);
                        let all = std::mem::take(&mut rescan);
                        pending = None;
                        rewatch_lost_dirs(watcher.as_mut(), index, &paths);
                        hand_out(&sessions, &paths, all);
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        };
        match message {
            Msg::Changed(path) => {
                changed.insert(path);
                let now = Instant::now();
                pending = Some((pending.map_or(now, |(first, _)| first), now));
            }
            Msg::Rescan => {
                rescan = true;
                let now = Instant::now();
                pending = Some((pending.map_or(now, |(first, _)| first), now));
            }
            Msg::Watch(dir) => {
                if let Some(watcher) = watcher.as_mut()
                    && let Err(err) = watcher.watch(&dir, RecursiveMode::NonRecursive)
                {
                    warn_once(&mut warned, &err, &dir);
                }
                index.lock().unwrap_or_else(PoisonError::into_inner).handled += 1;
            }
            Msg::Unwatch(dir) => {
                if let Some(watcher) = watcher.as_mut() {
                    let _ = watcher.unwatch(&dir);
                }
            }
            Msg::Join(id, files) => {
                sessions.insert(id, files);
            }
            Msg::Leave(id) => {
                sessions.remove(&id);
            }
            Msg::Failed(err) => {
                if warned.insert(err.clone()) {
                    tracing::warn!("file watcher: {err}");
                }
            }
        }
    }
}

/// Warns about a directory that cannot be watched, once per kind of
/// failure (the inotify watch limit would otherwise fill the log).
fn warn_once(warned: &mut HashSet<String>, err: &notify::Error, dir: &Path) {
    if matches!(err.kind, notify::ErrorKind::PathNotFound) {
        // Gone since: its files are gone too (the looks find them so).
        tracing::debug!(dir = %dir.display(), "a directory to watch is gone");
        return;
    }
    let kind = match &err.kind {
        notify::ErrorKind::MaxFilesWatch => {
            "the inotify watch limit is reached (sysctl fs.inotify.max_user_watches)".to_owned()
        }
        other => format!("{other:?}"),
    };
    if warned.insert(kind.clone()) {
        tracing::warn!(
            dir = %dir.display(),
            "cannot watch a directory: {kind}; changes there are noticed only between tool calls"
        );
    }
}

/// A watched directory that was itself deleted or moved lost its watch:
/// watch it again if it is back.
fn rewatch_lost_dirs(
    watcher: Option<&mut notify::RecommendedWatcher>,
    index: &Mutex<Index>,
    paths: &HashSet<PathBuf>,
) {
    let Some(watcher) = watcher else {
        return;
    };
    let lost: Vec<&PathBuf> = {
        let index = index.lock().unwrap_or_else(PoisonError::into_inner);
        paths
            .iter()
            .filter(|path| index.dirs.contains_key(*path))
            .collect()
    };
    for dir in lost {
        let _ = watcher.unwatch(dir);
        if dir.is_dir() {
            let _ = watcher.watch(dir, RecursiveMode::NonRecursive);
        }
    }
}

/// Tells every live session about `paths` (or, with `all`, to look at
/// every file it watches).
fn hand_out(sessions: &HashMap<u64, Weak<Files>>, paths: &HashSet<PathBuf>, all: bool) {
    for files in sessions.values().filter_map(Weak::upgrade) {
        if all {
            files.check_all();
        } else {
            files.check_paths(paths);
        }
    }
}
