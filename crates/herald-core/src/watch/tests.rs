#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

/// A working directory with `files`, and a watch on it that has no
/// watcher thread (only the looks at tool boundaries), or one of its own.
fn setup(files: &[(&str, &str)], hub: Option<&'static Hub>) -> (tempfile::TempDir, Arc<FileWatch>) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let watch = FileWatch::on_hub(dir.path(), hub);
    (dir, watch)
}

/// What `read_file` tells the tracker for a whole read of `path`.
fn read(tracker: &Arc<dyn FileTracker>, path: &Path) {
    let meta = std::fs::metadata(path).unwrap();
    let bytes = std::fs::read(path).unwrap();
    tracker.read(path, Some(&bytes), Some(&meta));
}

/// What `write_file` does.
fn write(tracker: &Arc<dyn FileTracker>, path: &Path, text: &str) {
    tracker.writing(path, text.as_bytes());
    std::fs::write(path, text).unwrap();
    tracker.written(path, true);
}

/// Someone else's edit: a new file renamed over the old one, as editors
/// save (another inode, so the stamp moves even within one clock tick).
fn edit(path: &Path, text: &str) {
    let new = path.with_extension("edited~");
    std::fs::write(&new, text).unwrap();
    std::fs::rename(new, path).unwrap();
}

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn an_outside_edit_is_noted_once() {
    let (dir, watch) = setup(&[("src/main.rs", &lines(10))], None);
    let tracker = watch.tracker(true);
    let path = dir.path().join("src/main.rs");
    read(&tracker, &path);
    assert_eq!(watch.take_note(false).await, None, "nothing changed yet");
    let mut edited = lines(8);
    edited.push_str(&"added\n".repeat(12));
    edit(&path, &edited);
    assert_eq!(
        watch.take_note(false).await.as_deref(),
        Some(
            "[herald] `src/main.rs` changed outside this session: +12 \u{2212}2 lines since you last read it"
        )
    );
    assert_eq!(watch.take_note(false).await, None, "told once");
    // A second edit is measured from what the note told.
    edit(&path, &format!("{edited}one more\n"));
    let note = watch.take_note(false).await.unwrap();
    assert!(note.contains("+1 \u{2212}0 lines"), "{note}");
}

#[tokio::test]
async fn heralds_own_writes_are_not_noted() {
    let (dir, watch) = setup(&[("a.txt", "one\n")], None);
    let tracker = watch.tracker(true);
    let path = dir.path().join("a.txt");
    read(&tracker, &path);
    write(&tracker, &path, "one\ntwo\n");
    assert_eq!(watch.take_note(false).await, None);
    // A file herald created is watched from then on.
    let created = dir.path().join("new/b.txt");
    std::fs::create_dir_all(created.parent().unwrap()).unwrap();
    write(&tracker, &created, "b\n");
    assert_eq!(watch.take_note(false).await, None);
    edit(&created, "b\nc\n");
    let note = watch.take_note(false).await.unwrap();
    assert_eq!(
        note,
        "[herald] `new/b.txt` changed outside this session: +1 \u{2212}0 lines since you last edited it"
    );
    // A failed write leaves the snapshot at what the file holds.
    tracker.writing(&path, b"never written\n");
    tracker.written(&path, false);
    assert_eq!(watch.take_note(false).await, None);
}

#[tokio::test]
async fn changes_during_the_sessions_own_calls_are_its_own() {
    let (dir, watch) = setup(&[("a.txt", "one\n"), ("b.txt", "one\n")], None);
    let tracker = watch.tracker(true);
    let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    read(&tracker, &a);
    read(&tracker, &b);
    // Changed before the command: outside. Changed during it: its own.
    edit(&a, "one\ntwo\n");
    let own = watch.own_changes().await;
    edit(&b, "one\ntwo\n");
    own.end().await;
    let note = watch.take_note(false).await.unwrap();
    assert!(note.contains("`a.txt`"), "{note}");
    assert!(!note.contains("`b.txt`"), "{note}");
    // An outside change still to be told stays when the session's command
    // then changes the file too.
    edit(&a, "four\n");
    let own = watch.own_changes().await;
    edit(&a, "four\nfive\n");
    own.end().await;
    let note = watch.take_note(false).await.unwrap();
    assert!(
        note.contains("`a.txt` changed outside this session: +1"),
        "{note}"
    );
    assert_eq!(watch.take_note(false).await, None);
    // A file the session's command deleted is simply no longer watched.
    let own = watch.own_changes().await;
    std::fs::remove_file(&b).unwrap();
    own.end().await;
    assert_eq!(watch.take_note(false).await, None);
    // A stretch dropped without its end still ends.
    drop(watch.own_changes().await);
    edit(&a, "three\n");
    assert!(watch.take_note(false).await.is_some());
}

#[tokio::test]
async fn deleted_and_binary_files_are_noted() {
    let (dir, watch) = setup(&[("a.txt", "a\n"), ("b.txt", "b\n")], None);
    let tracker = watch.tracker(true);
    let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    read(&tracker, &a);
    read(&tracker, &b);
    std::fs::remove_file(&a).unwrap();
    std::fs::write(&b, b"\x00\x01binary").unwrap();
    let note = watch.take_note(false).await.unwrap();
    assert_eq!(
        note,
        "[herald] `a.txt` was deleted outside this session since you last read it\n\
         [herald] `b.txt` changed outside this session since you last read it; it is no longer text herald compares (binary, or over 8 MiB)"
    );
    // Neither is watched any more.
    std::fs::write(&a, "back\n").unwrap();
    assert_eq!(watch.take_note(false).await, None);
    assert!(watch.files.is_empty());
}

#[tokio::test]
async fn ignored_files_and_git_internals_are_not_watched() {
    let (dir, watch) = setup(
        &[
            (".git/HEAD", "ref: refs/heads/main\n"),
            (".gitignore", "target/\n*.log\n"),
            ("target/out.txt", "x\n"),
            ("run.log", "x\n"),
            ("src/lib.rs", "x\n"),
        ],
        None,
    );
    let tracker = watch.tracker(true);
    for path in [".git/HEAD", "target/out.txt", "run.log", "src/lib.rs"] {
        read(&tracker, &dir.path().join(path));
    }
    for path in [".git/HEAD", "target/out.txt", "run.log", "src/lib.rs"] {
        edit(&dir.path().join(path), "changed\n");
    }
    let note = watch.take_note(false).await.unwrap();
    assert_eq!(
        note,
        "[herald] `src/lib.rs` changed outside this session: +1 \u{2212}1 lines since you last read it"
    );
    // Outside the working directory nothing is watched either.
    let other = tempfile::tempdir().unwrap();
    let outside = other.path().join("o.txt");
    std::fs::write(&outside, "o\n").unwrap();
    read(&tracker, &outside);
    edit(&outside, "p\n");
    assert_eq!(watch.take_note(false).await, None);
}

#[tokio::test]
async fn a_subagents_tools_only_keep_snapshots_up_to_date() {
    let (dir, watch) = setup(&[("a.txt", "a\n"), ("b.txt", "b\n")], None);
    let (root, child) = (watch.tracker(true), watch.tracker(false));
    let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    read(&root, &a);
    // The child's write is herald's own; its read starts nothing.
    write(&child, &a, "a\nfrom the child\n");
    read(&child, &b);
    edit(&b, "b changed\n");
    assert_eq!(watch.take_note(false).await, None);
    // A file only the child wrote is not watched.
    let c = dir.path().join("c.txt");
    write(&child, &c, "c\n");
    edit(&c, "c changed\n");
    assert_eq!(watch.take_note(false).await, None);
}

#[tokio::test]
async fn reading_a_changed_file_again_drops_its_note() {
    let (dir, watch) = setup(&[("a.txt", "a\n")], None);
    let tracker = watch.tracker(true);
    let path = dir.path().join("a.txt");
    read(&tracker, &path);
    edit(&path, "a\nb\n");
    read(&tracker, &path);
    assert_eq!(watch.take_note(false).await, None);
}

#[tokio::test]
async fn paths_resolve_through_symbolic_links_and_missing_directories() {
    let (dir, _watch) = setup(&[("real/a.txt", "a\n")], None);
    std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
    let real = std::fs::canonicalize(dir.path().join("real")).unwrap();
    assert_eq!(
        canonical_parent(&dir.path().join("link/a.txt")),
        Some(real.join("a.txt"))
    );
    assert_eq!(
        canonical_parent(&dir.path().join("link/new/deeper/b.txt")),
        Some(real.join("new/deeper/b.txt"))
    );
}

/// Waits up to 10 s for the listener to hear of a change.
async fn heard(
    received: &mut tokio::sync::mpsc::UnboundedReceiver<FileChange>,
) -> Option<FileChange> {
    tokio::time::timeout(Duration::from_secs(10), received.recv())
        .await
        .ok()
        .flatten()
}

#[tokio::test]
async fn the_watcher_hears_an_outside_edit_as_it_happens() {
    let Some(hub) = Hub::leak_new() else {
        panic!("the watcher thread did not start");
    };
    let (dir, watch) = setup(&[("a.txt", "a\n"), ("other.txt", "o\n")], Some(hub));
    let (changes, mut received) = tokio::sync::mpsc::unbounded_channel();
    watch.set_listener(changes);
    let tracker = watch.tracker(true);
    let path = dir.path().join("a.txt");
    read(&tracker, &path);
    assert_eq!(hub.watched_dirs().0, 1);
    let started = std::time::Instant::now();
    while hub.watched_dirs().1 < 1 {
        assert!(started.elapsed() < Duration::from_secs(5), "never watched");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // herald's own write and a file nobody read: nothing to hear.
    write(&tracker, &path, "a\nb\n");
    edit(&dir.path().join("other.txt"), "x\n");
    // An outside edit: heard without any tool boundary.
    edit(&path, "a\nb\nc\n");
    let change = heard(&mut received).await.unwrap();
    assert_eq!(change.path, "a.txt");
    assert_eq!(
        change.kind,
        ChangeKind::Edited {
            added: 1,
            removed: 0
        }
    );
    assert_eq!(change.since, Since::Edited);
    assert_eq!(
        change.absolute,
        std::fs::canonicalize(&path).unwrap(),
        "the full path"
    );
    // The note tells it once; the watcher did not hear it twice.
    assert!(
        watch
            .take_note(false)
            .await
            .unwrap()
            .contains("+1 \u{2212}0")
    );
    assert_eq!(watch.take_note(false).await, None);
    assert!(received.try_recv().is_err());
    // A file herald creates in a new directory is watched once written.
    let created = dir.path().join("new/c.txt");
    tracker.writing(&created, b"c\n");
    std::fs::create_dir_all(created.parent().unwrap()).unwrap();
    std::fs::write(&created, "c\n").unwrap();
    tracker.written(&created, true);
    let started = std::time::Instant::now();
    while hub.watched_dirs().1 < 2 {
        assert!(started.elapsed() < Duration::from_secs(5), "never watched");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(hub.watched_dirs().0, 2);
    edit(&created, "c\nd\n");
    let change = heard(&mut received).await.unwrap();
    assert_eq!(change.path, "new/c.txt");
    // When the session goes, so do its watches.
    drop(tracker);
    drop(watch);
    let started = std::time::Instant::now();
    while hub.watched_dirs().0 > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the watch stayed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn the_least_recently_used_file_goes_past_the_limit() {
    let (dir, watch) = setup(&[], None);
    let tracker = watch.tracker(true);
    let paths: Vec<PathBuf> = (0..=MAX_WATCHED_FILES)
        .map(|i| dir.path().join(format!("f{i}.txt")))
        .collect();
    for path in &paths {
        std::fs::write(path, "x\n").unwrap();
        read(&tracker, path);
    }
    assert_eq!(watch.files.lock().files.len(), MAX_WATCHED_FILES);
    edit(&paths[0], "y\n");
    edit(&paths[MAX_WATCHED_FILES], "y\n");
    let note = watch.take_note(false).await.unwrap();
    assert!(!note.contains("`f0.txt`"), "{note}");
    assert!(
        note.contains(&format!("`f{MAX_WATCHED_FILES}.txt`")),
        "{note}"
    );
}
