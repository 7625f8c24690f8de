//! What a watched file held, as a hash per line; the line counts of a
//! change between two of them; and the note the model reads.

use std::hash::{Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Largest file whose lines are compared; a larger one is not watched.
pub(crate) const MAX_WATCHED_BYTES: u64 = 8 * 1024 * 1024;
/// Bytes looked at for NUL to tell binary files (as `read_file` does).
const BINARY_PROBE: usize = 8192;
/// Time a line diff may take before it is approximated.
const DIFF_LIMIT: Duration = Duration::from_millis(200);
/// Files named in one note; the rest are counted.
pub(crate) const MAX_NOTED_FILES: usize = 10;

/// A file's text as one hash per line (the line without its `\n`): enough
/// to count changed lines, at 8 bytes a line whatever the line's length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lines(Vec<u64>);

impl Lines {
    /// The lines of `bytes`; a last line without `\n` counts.
    pub(crate) fn of(bytes: &[u8]) -> Self {
        let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
        let mut hashes = Vec::with_capacity(newlines + 1);
        let mut rest = bytes;
        while !rest.is_empty() {
            let (line, next) = match rest.iter().position(|&b| b == b'\n') {
                Some(at) => (&rest[..at], &rest[at + 1..]),
                None => (rest, &[][..]),
            };
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            line.hash(&mut hasher);
            hashes.push(hasher.finish());
            rest = next;
        }
        Self(hashes)
    }

    /// Number of lines.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// A file as `stat` sees it: when any of these moved, the file may have
/// changed and is read again; while none did, it is not read at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    ctime: (i64, i64),
    #[cfg(unix)]
    inode: (u64, u64),
}

impl Stamp {
    /// The stamp of `meta`.
    pub(crate) fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            ctime: (meta.ctime(), meta.ctime_nsec()),
            #[cfg(unix)]
            inode: (meta.dev(), meta.ino()),
        }
    }
}

/// What a look at a file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Disk {
    /// It is gone (or is no longer a regular file).
    Missing,
    /// It is there but holds no text to compare: binary, too large or
    /// unreadable.
    NotText(Option<Stamp>),
    /// Its lines.
    Text(Stamp, Lines),
}

/// The stamp of `path`, `None` when it cannot be had (gone, unreadable).
pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    std::fs::metadata(path).ok().map(|meta| Stamp::of(&meta))
}

/// Reads `path` as [`Disk`]: its stamp from before the read (a change
/// during the read moves the stamp, so it is read again later), then its
/// lines. Special files are never opened (a FIFO would block).
pub(crate) fn load(path: &Path) -> Disk {
    let meta = match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => meta,
        Ok(_) => return Disk::Missing,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Disk::Missing,
        Err(_) => return Disk::NotText(None),
    };
    let stamp = Stamp::of(&meta);
    if meta.len() > MAX_WATCHED_BYTES {
        return Disk::NotText(Some(stamp));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    let read = std::fs::File::open(path)
        .and_then(|file| file.take(MAX_WATCHED_BYTES + 1).read_to_end(&mut bytes));
    match read {
        Ok(_) => text_of(stamp, &bytes),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Disk::Missing,
        Err(_) => Disk::NotText(Some(stamp)),
    }
}

/// `bytes` stamped `stamp`, as [`Disk`].
pub(crate) fn text_of(stamp: Stamp, bytes: &[u8]) -> Disk {
    match lines_of(bytes) {
        Some(lines) => Disk::Text(stamp, lines),
        None => Disk::NotText(Some(stamp)),
    }
}

/// The lines of `bytes`, or `None` when they are no text herald compares
/// (binary, or over [`MAX_WATCHED_BYTES`]).
pub(crate) fn lines_of(bytes: &[u8]) -> Option<Lines> {
    let probe = &bytes[..bytes.len().min(BINARY_PROBE)];
    (bytes.len() as u64 <= MAX_WATCHED_BYTES && !probe.contains(&0)).then(|| Lines::of(bytes))
}

/// Lines added and removed from `old` to `new`. A diff that takes longer
/// than [`DIFF_LIMIT`] is approximated (never wrong about whether anything
/// changed, only about how much).
pub(crate) fn line_changes(old: &Lines, new: &Lines) -> (usize, usize) {
    let deadline = Instant::now() + DIFF_LIMIT;
    let ops = similar::capture_diff_slices_deadline(
        similar::Algorithm::Myers,
        &old.0,
        &new.0,
        Some(deadline),
    );
    let (mut added, mut removed) = (0, 0);
    for op in ops {
        match op {
            similar::DiffOp::Equal { .. } => {}
            similar::DiffOp::Delete { old_len, .. } => removed += old_len,
            similar::DiffOp::Insert { new_len, .. } => added += new_len,
            similar::DiffOp::Replace {
                old_len, new_len, ..
            } => {
                removed += old_len;
                added += new_len;
            }
        }
    }
    (added, removed)
}

/// What the model last did with a file: what "since you last …" says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// It read the file.
    Read,
    /// It wrote or patched the file.
    Edited,
}

/// How a file changed outside the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Its text changed by this many lines.
    Edited {
        /// Lines added.
        added: usize,
        /// Lines removed.
        removed: usize,
    },
    /// It was deleted.
    Deleted,
    /// It no longer holds text herald compares (binary, or over 8 MiB).
    NotText,
}

impl ChangeKind {
    /// The word for the `file_changed` hook: `edited`, `deleted` or
    /// `not_text`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Edited { .. } => "edited",
            Self::Deleted => "deleted",
            Self::NotText => "not_text",
        }
    }
}

/// A change to a file the session read or edited, made outside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The path as the model knows it: relative to the working directory.
    pub path: String,
    /// The file's full path.
    pub absolute: PathBuf,
    /// What changed.
    pub kind: ChangeKind,
    /// What the model last did with it.
    pub since: Since,
}

/// The note appended for `changes` (sorted by path): one line per file,
/// at most [`MAX_NOTED_FILES`], the rest counted.
pub(crate) fn render_note(changes: &[FileChange]) -> String {
    let mut lines: Vec<String> = changes
        .iter()
        .take(MAX_NOTED_FILES)
        .map(|change| {
            let since = match change.since {
                Since::Read => "since you last read it",
                Since::Edited => "since you last edited it",
            };
            let path = &change.path;
            match change.kind {
                ChangeKind::Edited { added, removed } => format!(
                    "[herald] `{path}` changed outside this session: +{added} \u{2212}{removed} lines {since}"
                ),
                ChangeKind::Deleted => {
                    format!("[herald] `{path}` was deleted outside this session {since}")
                }
                ChangeKind::NotText => format!(
                    "[herald] `{path}` changed outside this session {since}; it is no longer text herald compares (binary, or over 8 MiB)"
                ),
            }
        })
        .collect();
    if changes.len() > MAX_NOTED_FILES {
        lines.push(format!(
            "[herald] \u{2026} and {} more files you read or edited changed outside this session",
            changes.len() - MAX_NOTED_FILES
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn change(path: &str, kind: ChangeKind, since: Since) -> FileChange {
        FileChange {
            path: path.to_owned(),
            absolute: PathBuf::from("/w").join(path),
            kind,
            since,
        }
    }

    #[test]
    fn lines_hash_each_line_without_its_newline() {
        assert_eq!(Lines::of(b"").len(), 0);
        assert_eq!(Lines::of(b"a").len(), 1);
        assert_eq!(Lines::of(b"a\n").len(), 1);
        assert_eq!(Lines::of(b"a\nb").len(), 2);
        assert_eq!(Lines::of(b"a\n\n").len(), 2);
        // A last line with or without its newline is the same line.
        assert_eq!(Lines::of(b"x\ny"), Lines::of(b"x\ny\n"));
        assert_ne!(Lines::of(b"x\ny"), Lines::of(b"x\nz"));
    }

    #[test]
    fn line_changes_count_added_and_removed_lines() {
        let old = Lines::of(b"one\ntwo\nthree\nfour\n");
        assert_eq!(line_changes(&old, &old), (0, 0));
        let appended = Lines::of(b"one\ntwo\nthree\nfour\nfive\nsix\n");
        assert_eq!(line_changes(&old, &appended), (2, 0));
        let replaced = Lines::of(b"one\nTWO\nthree\n");
        assert_eq!(line_changes(&old, &replaced), (1, 2));
        assert_eq!(line_changes(&old, &Lines::default()), (0, 4));
        assert_eq!(line_changes(&Lines::default(), &old), (4, 0));
        // Twelve lines added in the middle, three removed at the end.
        let base: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let mut edited: Vec<String> = (1..=17).map(|i| format!("line {i}")).collect();
        for i in 0..12 {
            edited.insert(5, format!("new {i}"));
        }
        let edited = edited.join("\n");
        assert_eq!(
            line_changes(&Lines::of(base.as_bytes()), &Lines::of(edited.as_bytes())),
            (12, 3)
        );
    }

    #[test]
    fn binary_and_oversized_files_hold_no_text() {
        let stamp = Stamp {
            len: 0,
            modified: None,
            #[cfg(unix)]
            ctime: (0, 0),
            #[cfg(unix)]
            inode: (0, 0),
        };
        assert!(matches!(text_of(stamp, b"ok\n"), Disk::Text(..)));
        assert_eq!(text_of(stamp, b"a\0b"), Disk::NotText(Some(stamp)));
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_WATCHED_BYTES + 1)
            .unwrap();
        assert!(matches!(load(&big), Disk::NotText(Some(_))));
        assert_eq!(load(&dir.path().join("gone")), Disk::Missing);
        assert_eq!(load(dir.path()), Disk::Missing);
        std::fs::write(dir.path().join("t"), "a\nb\n").unwrap();
        let Disk::Text(_, lines) = load(&dir.path().join("t")) else {
            panic!("text expected");
        };
        assert_eq!(lines, Lines::of(b"a\nb"));
    }

    #[test]
    fn a_stamp_moves_when_the_file_is_replaced_or_resized() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "one\n").unwrap();
        let first = stamp(&path).unwrap();
        assert_eq!(stamp(&path), Some(first));
        std::fs::write(&path, "one\ntwo\n").unwrap();
        assert_ne!(stamp(&path), Some(first));
        let second = stamp(&path).unwrap();
        // Replaced by rename with the same size: another inode.
        std::fs::write(dir.path().join("g"), "one\nTWO\n").unwrap();
        std::fs::rename(dir.path().join("g"), &path).unwrap();
        assert_ne!(stamp(&path), Some(second));
        assert_eq!(stamp(&dir.path().join("none")), None);
    }

    #[test]
    fn the_note_is_one_line_per_file() {
        let note = render_note(&[
            change(
                "src/main.rs",
                ChangeKind::Edited {
                    added: 12,
                    removed: 3,
                },
                Since::Read,
            ),
            change("src/lib.rs", ChangeKind::Deleted, Since::Edited),
            change("logo.png", ChangeKind::NotText, Since::Read),
        ]);
        assert_eq!(
            note,
            "[herald] `src/main.rs` changed outside this session: +12 \u{2212}3 lines since you last read it\n\
             [herald] `src/lib.rs` was deleted outside this session since you last edited it\n\
             [herald] `logo.png` changed outside this session since you last read it; it is no longer text herald compares (binary, or over 8 MiB)"
        );
    }

    #[test]
    fn the_note_names_at_most_ten_files() {
        let changes: Vec<FileChange> = (0..13)
            .map(|i| {
                change(
                    &format!("f{i:02}.txt"),
                    ChangeKind::Edited {
                        added: 1,
                        removed: 0,
                    },
                    Since::Read,
                )
            })
            .collect();
        let note = render_note(&changes);
        let lines: Vec<&str> = note.lines().collect();
        assert_eq!(lines.len(), MAX_NOTED_FILES + 1, "{note}");
        assert!(lines[9].contains("`f09.txt`"), "{note}");
        assert!(!note.contains("f10.txt"), "{note}");
        assert_eq!(
            lines[10],
            "[herald] \u{2026} and 3 more files you read or edited changed outside this session"
        );
    }
}
