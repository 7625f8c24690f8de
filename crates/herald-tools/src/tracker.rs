//! Told what the file tools read and write. herald-core's file watcher keeps
//! what each file held when the agent last saw it, so that a change made by
//! someone else can be told from herald's own writes and reported to the
//! model.

use std::fs::Metadata;
use std::path::Path;

/// Receives what `read_file`, `write_file` and `patch` saw and wrote. The
/// calls come from the file worker threads (never the async runtime), so an
/// implementation may do a little file I/O; it must never fail the tool.
pub trait FileTracker: Send + Sync + std::fmt::Debug {
    /// `path` was read. `content` is the whole file as read and `meta` its
    /// metadata from before the read, when the tool read it whole; `None`
    /// leaves reading it to the tracker.
    fn read(&self, path: &Path, content: Option<&[u8]>, meta: Option<&Metadata>);

    /// herald is about to replace the content of `path` with `content`:
    /// called before the write, so that the change it causes is known as
    /// herald's own whenever it is noticed.
    fn writing(&self, path: &Path, content: &[u8]);

    /// The write announced by [`FileTracker::writing`] ended; `ok` is false
    /// when it failed (the file is as it was).
    fn written(&self, path: &Path, ok: bool);
}
