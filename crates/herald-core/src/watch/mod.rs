//! Files changed under the agent: when a file the session read or edited
//! is changed by someone else (the user in an editor, a `git checkout` in
//! another terminal), the model is told with a short note at the end of the
//! next tool result or user message ("`src/main.rs` changed outside this
//! session: +12 −3 lines since you last read it"), once per change, and the
//! `file_changed` hooks run.
//!
//! How a change is told from herald's own:
//!
//! - Each watched file keeps what the model knows of it: a hash per line
//!   of its text when `read_file` read it or `write_file`/`patch` wrote it
//!   (told through [`herald_tools::FileTracker`], before the write), and
//!   its `stat` stamp. A change is a difference in content, so an event
//!   caused by herald's own write finds none.
//! - While a call that may change files other than through the file tools
//!   runs (`terminal`, `execute_code`, `delegate_task`, an MCP tool; a
//!   rewind), what changes counts as the session's own: the snapshots are
//!   brought up to date without a note. The stamps of the watched files are
//!   compared right before such a call (what changed until then is an
//!   outside change) and right after it (what changed during it is the
//!   session's), so no event delay decides which is which.
//! - Right before a note could be appended (after each tool batch, before
//!   each user message) the stamps are compared again: a change whose
//!   event is still on its way is not missed.
//!
//! The watcher (`hub.rs`) notices changes as they happen, so hooks run
//! then. Only files under the working directory that git would not ignore
//! are watched (`rules.rs`), at most [`MAX_WATCHED_FILES`] per session,
//! each of at most 8 MiB. `[watch] enabled = false` turns all of it off.

mod hub;
mod rules;
mod snapshot;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use herald_tools::FileTracker;

pub use snapshot::{ChangeKind, FileChange, Since};

use hub::Hub;
use rules::IgnoreRules;
use snapshot::{Disk, Lines, Stamp};

/// Files one session watches at most; past it the least recently used
/// one is dropped.
pub const MAX_WATCHED_FILES: usize = 2000;
/// Longest a comparison of the watched files' stamps may hold up the
/// agent (a hung network file system); after it the agent goes on.
const SWEEP_LIMIT: Duration = Duration::from_secs(2);

/// What one watched file was, for the model.
#[derive(Debug)]
struct Watched {
    /// The path shown to the model (relative to the working directory).
    shown: String,
    /// Its text as the model knows it.
    base: Lines,
    /// What the model last did with it.
    since: Since,
    /// Its stamp at the last look; `None`: look at it again.
    stamp: Option<Stamp>,
    /// A change made outside the session, not yet told.
    pending: Option<Pending>,
    /// Moves whenever herald reads or writes the file: a look that began
    /// before is dropped (it may have read the file before herald's
    /// write and would take that write for an outside change).
    generation: u64,
    /// Writes by herald under way: no look counts meanwhile.
    writing: u32,
    /// Whether the hub watches it (its directory existed when it was
    /// first seen; a file herald creates is watched once written).
    at_hub: bool,
    /// When it was last used, for dropping the least recently used.
    used: u64,
}

/// An outside change, not yet told.
#[derive(Debug)]
struct Pending {
    kind: ChangeKind,
    /// The file's text now (`None`: deleted or no longer text).
    now: Option<Lines>,
}

#[derive(Debug, Default)]
struct State {
    files: HashMap<PathBuf, Watched>,
    clock: u64,
}

/// How a change found by a look is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Take {
    /// As the session's own while one of its calls that may change files
    /// runs, else as an outside change.
    Current,
    /// As the session's own (what changed during such a call).
    Own,
}

/// The watched files of one session (shared with the watcher thread,
/// the file tools and the agents of the session tree).
pub(crate) struct Files {
    /// The working directory.
    cwd: PathBuf,
    /// Its ignore rules, read on first use (off the async runtime: they
    /// read files).
    rules: std::sync::OnceLock<IgnoreRules>,
    state: Mutex<State>,
    /// Calls that may change files, running now.
    own_calls: AtomicUsize,
    hub: Option<&'static Hub>,
    /// This session's id at the hub.
    id: u64,
    /// Told of each outside change as it is noticed (the hooks).
    listener: Mutex<Option<tokio::sync::mpsc::UnboundedSender<FileChange>>>,
}

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Files")
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        if let Some(hub) = self.hub {
            hub.leave(self.id);
            let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
            for (path, watched) in &state.files {
                if watched.at_hub {
                    hub.untrack(path);
                }
            }
        }
    }
}

impl Files {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn rules(&self) -> &IgnoreRules {
        self.rules.get_or_init(|| IgnoreRules::new(&self.cwd))
    }

    /// The key of `path` (absolute, symbolic links of its directories
    /// resolved; with `follow`, of the file too), or `None` when it is not
    /// watched (outside the working directory, under `.git`, ignored).
    fn key(&self, path: &Path, follow: bool) -> Option<PathBuf> {
        let key = if follow {
            std::fs::canonicalize(path).ok()?
        } else {
            canonical_parent(path)?
        };
        (!self.rules().ignores(&key)).then_some(key)
    }

    /// What the model sees of `key`: the path under the working directory.
    fn shown(&self, key: &Path) -> String {
        key.strip_prefix(self.rules().root())
            .unwrap_or(key)
            .display()
            .to_string()
    }

    /// Starts watching `key` as `watched`, dropping the least recently
    /// used file past [`MAX_WATCHED_FILES`].
    fn insert(&self, state: &mut State, key: PathBuf, mut watched: Watched) {
        if let Some(hub) = self.hub
            && key.parent().is_some_and(Path::is_dir)
        {
            hub.track(&key);
            watched.at_hub = true;
        }
        state.files.insert(key, watched);
        if state.files.len() > MAX_WATCHED_FILES
            && let Some(oldest) = state
                .files
                .iter()
                .min_by_key(|(_, w)| w.used)
                .map(|(k, _)| k.clone())
        {
            self.remove(state, &oldest);
        }
    }

    /// Stops watching `key`.
    fn remove(&self, state: &mut State, key: &Path) {
        if let Some(watched) = state.files.remove(key)
            && watched.at_hub
            && let Some(hub) = self.hub
        {
            hub.untrack(key);
        }
    }

    /// `path` was read: `content` (with `meta`) as read, or read here.
    fn read(&self, path: &Path, content: Option<&[u8]>, meta: Option<&std::fs::Metadata>) {
        let Some(key) = self.key(path, true) else {
            return;
        };
        let (stamp, lines) = match content {
            Some(bytes) => (meta.map(Stamp::of), snapshot::lines_of(bytes)),
            None => match snapshot::load(&key) {
                Disk::Text(stamp, lines) => (Some(stamp), Some(lines)),
                Disk::Missing | Disk::NotText(_) => (None, None),
            },
        };
        let mut state = self.lock();
        state.clock += 1;
        let used = state.clock;
        let Some(lines) = lines else {
            self.remove(&mut state, &key);
            return;
        };
        match state.files.get_mut(&key) {
            Some(watched) => {
                watched.base = lines;
                watched.since = Since::Read;
                watched.stamp = stamp;
                watched.pending = None;
                watched.generation += 1;
                watched.used = used;
            }
            None => {
                let watched = Watched {
                    shown: self.shown(&key),
                    base: lines,
                    since: Since::Read,
                    stamp,
                    pending: None,
                    generation: 0,
                    writing: 0,
                    at_hub: false,
                    used,
                };
                self.insert(&mut state, key, watched);
            }
        }
    }

    /// herald is about to write `content` to `path`; a file not watched
    /// yet is watched from now on when `start` says so.
    fn writing(&self, path: &Path, content: &[u8], start: bool) {
        let Some(key) = self.key(path, false) else {
            return;
        };
        let lines = snapshot::lines_of(content);
        let mut state = self.lock();
        state.clock += 1;
        let used = state.clock;
        let Some(lines) = lines else {
            self.remove(&mut state, &key);
            return;
        };
        match state.files.get_mut(&key) {
            Some(watched) => {
                watched.base = lines;
                watched.since = Since::Edited;
                watched.stamp = None;
                watched.pending = None;
                watched.generation += 1;
                watched.writing += 1;
                watched.used = used;
            }
            None if start => {
                let watched = Watched {
                    shown: self.shown(&key),
                    base: lines,
                    since: Since::Edited,
                    stamp: None,
                    pending: None,
                    generation: 0,
                    writing: 1,
                    at_hub: false,
                    used,
                };
                self.insert(&mut state, key, watched);
            }
            None => {}
        }
    }

    /// The write to `path` ended; after a failure the file's content is
    /// taken as it is.
    fn written(&self, path: &Path, ok: bool) {
        let Some(key) = self.key(path, false) else {
            return;
        };
        let disk = (!ok).then(|| snapshot::load(&key));
        let mut state = self.lock();
        let Some(watched) = state.files.get_mut(&key) else {
            return;
        };
        watched.writing = watched.writing.saturating_sub(1);
        watched.generation += 1;
        if ok
            && !watched.at_hub
            && let Some(hub) = self.hub
        {
            // Its directory exists now.
            hub.track(&key);
            watched.at_hub = true;
        }
        match disk {
            None => {}
            Some(Disk::Text(stamp, lines)) => {
                watched.base = lines;
                watched.stamp = Some(stamp);
            }
            Some(Disk::Missing | Disk::NotText(_)) => self.remove(&mut state, &key),
        }
    }

    /// Files to look at: all, or those of `only` (and those in a
    /// directory of `only`), with their generation and stamp.
    fn looks(&self, only: Option<&HashSet<PathBuf>>) -> Vec<(PathBuf, u64, Option<Stamp>)> {
        let state = self.lock();
        state
            .files
            .iter()
            .filter(|(_, w)| w.writing == 0)
            .filter(|(key, _)| {
                only.is_none_or(|paths| {
                    paths.contains(*key) || key.parent().is_some_and(|dir| paths.contains(dir))
                })
            })
            .map(|(key, w)| (key.clone(), w.generation, w.stamp))
            .collect()
    }

    /// Looks at the watched files among `paths` (the watcher's events).
    pub(crate) fn check_paths(&self, paths: &HashSet<PathBuf>) {
        for (key, generation, _) in self.looks(Some(paths)) {
            let disk = snapshot::load(&key);
            self.apply(&key, generation, disk, Take::Current);
        }
    }

    /// Looks at every watched file (events were lost).
    pub(crate) fn check_all(&self) {
        for (key, generation, _) in self.looks(None) {
            let disk = snapshot::load(&key);
            self.apply(&key, generation, disk, Take::Current);
        }
    }

    /// Reads again each watched file whose stamp moved since the last look.
    fn sweep(&self, take: Take) {
        for (key, generation, stamp) in self.looks(None) {
            let now = snapshot::stamp(&key);
            if now.is_some() && now == stamp {
                continue;
            }
            if now.is_none() && stamp.is_none() && self.is_missing_known(&key) {
                continue;
            }
            let disk = snapshot::load(&key);
            self.apply(&key, generation, disk, take);
        }
    }

    /// Whether `key` is known to be gone already (its deletion is pending).
    fn is_missing_known(&self, key: &Path) -> bool {
        self.lock().files.get(key).is_some_and(|w| {
            w.pending
                .as_ref()
                .is_some_and(|p| p.kind == ChangeKind::Deleted)
        })
    }

    /// Takes what a look at `key` found (`disk`), unless herald read or
    /// wrote the file since the look began.
    fn apply(&self, key: &Path, generation: u64, disk: Disk, take: Take) {
        let own = take == Take::Own || self.own_calls.load(Ordering::SeqCst) > 0;
        let change = {
            let mut state = self.lock();
            let Some(watched) = state.files.get_mut(key) else {
                return;
            };
            if watched.generation != generation || watched.writing > 0 {
                return;
            }
            let (kind, now) = match disk {
                Disk::Text(stamp, lines) => {
                    watched.stamp = Some(stamp);
                    if lines == watched.base {
                        watched.pending = None;
                        return;
                    }
                    if own {
                        // An outside change not yet told stays to be told
                        // (what the model then knows is the content now).
                        match watched.pending.as_mut() {
                            Some(pending) => pending.now = Some(lines),
                            None => watched.base = lines,
                        }
                        return;
                    }
                    if watched.pending.as_ref().and_then(|p| p.now.as_ref()) == Some(&lines) {
                        return;
                    }
                    let (added, removed) = snapshot::line_changes(&watched.base, &lines);
                    (ChangeKind::Edited { added, removed }, Some(lines))
                }
                Disk::Missing | Disk::NotText(_) if own => {
                    self.remove(&mut state, key);
                    return;
                }
                Disk::Missing => {
                    watched.stamp = None;
                    (ChangeKind::Deleted, None)
                }
                Disk::NotText(stamp) => {
                    watched.stamp = stamp;
                    (ChangeKind::NotText, None)
                }
            };
            if watched.pending.as_ref().is_some_and(|p| p.kind == kind) && now.is_none() {
                return;
            }
            watched.pending = Some(Pending { kind, now });
            FileChange {
                path: watched.shown.clone(),
                absolute: key.to_path_buf(),
                kind,
                since: watched.since,
            }
        };
        tracing::info!(path = %change.path, change = change.kind.as_str(), "a watched file changed outside the session");
        let listener = self.listener.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(listener) = listener.as_ref() {
            let _ = listener.send(change);
        }
    }

    /// The outside changes not yet told, sorted by path; each is told
    /// once (what the model knows of the file becomes its content now).
    fn take_changes(&self) -> Vec<FileChange> {
        let mut state = self.lock();
        let mut changes = Vec::new();
        let mut gone = Vec::new();
        for (key, watched) in &mut state.files {
            let Some(pending) = watched.pending.take() else {
                continue;
            };
            changes.push(FileChange {
                path: watched.shown.clone(),
                absolute: key.clone(),
                kind: pending.kind,
                since: watched.since,
            });
            match pending.now {
                Some(now) => watched.base = now,
                None => gone.push(key.clone()),
            }
        }
        for key in gone {
            self.remove(&mut state, &key);
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        changes
    }

    fn is_empty(&self) -> bool {
        self.lock().files.is_empty()
    }
}

/// `path` made absolute with the symbolic links of its directories
/// resolved (directories that do not exist yet are kept as written).
fn canonical_parent(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let mut dir = path.parent()?;
    let mut missing = Vec::new();
    loop {
        match std::fs::canonicalize(dir) {
            Ok(real) => {
                let mut key = real;
                key.extend(missing.iter().rev());
                key.push(name);
                return Some(key);
            }
            Err(_) => {
                missing.push(dir.file_name()?);
                dir = dir.parent()?;
            }
        }
    }
}

/// What the file tools of one agent tell the session's [`FileWatch`].
#[derive(Debug)]
struct Tracker {
    files: Arc<Files>,
    /// The root agent: its reads are watched and its writes start
    /// watching a file. A subagent's writes only keep the snapshots of
    /// files already watched up to date (they are herald's own).
    root: bool,
}

impl FileTracker for Tracker {
    fn read(&self, path: &Path, content: Option<&[u8]>, meta: Option<&std::fs::Metadata>) {
        if self.root {
            self.files.read(path, content, meta);
        }
    }

    fn writing(&self, path: &Path, content: &[u8]) {
        self.files.writing(path, content, self.root);
    }

    fn written(&self, path: &Path, ok: bool) {
        self.files.written(path, ok);
    }
}

/// The file watching of one session (see the module documentation).
#[derive(Debug)]
pub struct FileWatch {
    files: Arc<Files>,
}

impl FileWatch {
    /// Watches files for a session working in `cwd`, on the process's
    /// watcher (started on first use).
    pub fn start(cwd: &Path) -> Arc<Self> {
        Self::on_hub(cwd, Hub::shared())
    }

    fn on_hub(cwd: &Path, hub: Option<&'static Hub>) -> Arc<Self> {
        let files = Arc::new(Files {
            cwd: cwd.to_path_buf(),
            rules: std::sync::OnceLock::new(),
            state: Mutex::default(),
            own_calls: AtomicUsize::new(0),
            hub,
            id: hub.map_or(0, Hub::new_id),
            listener: Mutex::new(None),
        });
        if let Some(hub) = hub {
            hub.join(&files);
        }
        Arc::new(Self { files })
    }

    /// What an agent's file tools tell the watch: the root agent's
    /// (`root`) reads and writes are watched; a subagent's writes only
    /// keep watched files' snapshots up to date.
    pub fn tracker(&self, root: bool) -> Arc<dyn FileTracker> {
        Arc::new(Tracker {
            files: Arc::clone(&self.files),
            root,
        })
    }

    /// Sends each outside change to `listener` as it is noticed (the
    /// `file_changed` hooks).
    pub fn set_listener(&self, listener: tokio::sync::mpsc::UnboundedSender<FileChange>) {
        *self
            .files
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(listener);
    }

    /// Stops sending outside changes to the listener (the session ends);
    /// what was sent is still handled.
    pub fn close_listener(&self) {
        self.files
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// Starts a stretch during which changes count as the session's own
    /// (a call that may change files runs); what changed before it is an
    /// outside change. End it with [`OwnChanges::end`].
    pub async fn own_changes(&self) -> OwnChanges {
        self.sweep(Take::Current).await;
        self.files.own_calls.fetch_add(1, Ordering::SeqCst);
        OwnChanges {
            files: Some(Arc::clone(&self.files)),
        }
    }

    /// The note for the outside changes not yet told (one line per file),
    /// if there are any. Each change is told once. The watched files'
    /// stamps are compared first, unless `just_looked` (an
    /// [`OwnChanges::end`] right before did).
    pub async fn take_note(&self, just_looked: bool) -> Option<String> {
        if !just_looked {
            self.sweep(Take::Current).await;
        }
        let changes = self.files.take_changes();
        (!changes.is_empty()).then(|| snapshot::render_note(&changes))
    }

    /// Compares the watched files' stamps off the async runtime, for at
    /// most [`SWEEP_LIMIT`].
    async fn sweep(&self, take: Take) {
        sweep(&self.files, take).await;
    }
}

async fn sweep(files: &Arc<Files>, take: Take) {
    if files.is_empty() {
        return;
    }
    let files = Arc::clone(files);
    let work = tokio::task::spawn_blocking(move || files.sweep(take));
    if tokio::time::timeout(SWEEP_LIMIT, work).await.is_err() {
        tracing::warn!("looking for changed files took over {SWEEP_LIMIT:?}; going on without");
    }
}

/// A stretch during which changes count as the session's own (see
/// [`FileWatch::own_changes`]). Dropped without [`OwnChanges::end`], it
/// ends without the final look.
#[derive(Debug)]
pub struct OwnChanges {
    files: Option<Arc<Files>>,
}

impl OwnChanges {
    /// Ends the stretch: what changed during it is taken as the session's
    /// own first.
    pub async fn end(mut self) {
        if let Some(files) = self.files.take() {
            sweep(&files, Take::Own).await;
            files.own_calls.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for OwnChanges {
    fn drop(&mut self) {
        if let Some(files) = self.files.take() {
            files.own_calls.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests;
