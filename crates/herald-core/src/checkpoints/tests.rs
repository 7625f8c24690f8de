#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;

struct Dirs {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    Dirs {
        home,
        work: work.canonicalize().unwrap(),
        _tmp: tmp,
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(root: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(root.join(rel)).ok()
}

/// Every file below `dir` with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(
                    path.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&path).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn user_git(work: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=u", "-c", "user.email=u@x"])
        .args(args)
        .current_dir(work)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn rewind_files(shadow: &Shadow, session: &str, target: &str) -> Vec<FileChange> {
    let now = shadow.snapshot(session, "before rewind").unwrap();
    let changes = shadow.changes(&now.commit, target).unwrap();
    shadow.restore(target, &changes).unwrap();
    changes
}

#[test]
fn restore_brings_back_modified_and_deleted_files_and_removes_created_ones() {
    let d = dirs();
    write(&d.work, "keep.txt", "same\n");
    write(&d.work, "edit.txt", "one\ntwo\n");
    write(&d.work, "gone/deep.txt", "deep\n");
    let shadow = Shadow::for_work_tree(&d.home, &d.work).unwrap();
    let before = shadow.snapshot("ses_t", "before turn 1").unwrap();
    assert!(before.created);
    assert!(shadow.git_dir().starts_with(d.home.join("checkpoints")));

    // The turn: edit, create (in a new directory), delete.
    write(&d.work, "edit.txt", "one\nTWO\nthree\n");
    write(&d.work, "new/made.txt", "made\n");
    std::fs::remove_file(d.work.join("gone/deep.txt")).unwrap();
    std::fs::remove_dir(d.work.join("gone")).unwrap();
    let after = shadow.snapshot("ses_t", "after turn 1").unwrap();
    let stats = shadow.stats(&before.commit, &after.commit).unwrap();
    assert_eq!(stats.files_changed, 3);
    assert_eq!(stats.insertions, 3, "{stats:?}"); // TWO, three, made
    assert_eq!(stats.deletions, 2, "{stats:?}"); // two, deep

    let changes = rewind_files(&shadow, "ses_t", &before.commit);
    let actions: Vec<(String, Action)> = changes
        .iter()
        .map(|c| (c.path.display().to_string(), c.action))
        .collect();
    assert_eq!(
        actions,
        vec![
            ("edit.txt".to_owned(), Action::Restore),
            ("gone/deep.txt".to_owned(), Action::Recreate),
            ("new/made.txt".to_owned(), Action::Delete),
        ]
    );
    assert_eq!(read(&d.work, "edit.txt").as_deref(), Some("one\ntwo\n"));
    assert_eq!(read(&d.work, "gone/deep.txt").as_deref(), Some("deep\n"));
    assert_eq!(read(&d.work, "keep.txt").as_deref(), Some("same\n"));
    assert!(!d.work.join("new/made.txt").exists());
    assert!(
        !d.work.join("new").exists(),
        "the emptied directory goes too"
    );
}

#[test]
fn an_unchanged_tree_reuses_the_last_commit() {
    let d = dirs();
    write(&d.work, "a.txt", "a\n");
    let shadow = Shadow::for_work_tree(&d.home, &d.work).unwrap();
    let first = shadow.snapshot("ses_t", "one").unwrap();
    let second = shadow.snapshot("ses_t", "two").unwrap();
    assert_eq!(first.commit, second.commit);
    assert!(!second.created);
    assert_eq!(
        shadow.stats(&first.commit, &second.commit).unwrap(),
        herald_store::ChangeStats::default()
    );
    write(&d.work, "a.txt", "b\n");
    let third = shadow.snapshot("ses_t", "three").unwrap();
    assert!(third.created);
    assert_ne!(third.commit, first.commit);
}

#[test]
fn ignored_files_are_neither_snapshotted_nor_touched() {
    let d = dirs();
    write(&d.work, ".gitignore", "build/\n*.log\n");
    write(&d.work, "src.txt", "v1\n");
    write(&d.work, "build/out.bin", "old build\n");
    let shadow = Shadow::for_work_tree(&d.home, &d.work).unwrap();
    let before = shadow.snapshot("ses_t", "before").unwrap();
    write(&d.work, "src.txt", "v2\n");
    write(&d.work, "build/out.bin", "new build\n");
    write(&d.work, "run.log", "log\n");
    let changes = rewind_files(&shadow, "ses_t", &before.commit);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(read(&d.work, "src.txt").as_deref(), Some("v1\n"));
    assert_eq!(
        read(&d.work, "build/out.bin").as_deref(),
        Some("new build\n")
    );
    assert_eq!(read(&d.work, "run.log").as_deref(), Some("log\n"));
}

#[test]
fn large_files_are_left_out_and_left_alone() {
    let d = dirs();
    write(&d.work, "small.txt", "s1\n");
    write(&d.work, "big.dat", &"x".repeat(2_000));
    let shadow = Shadow::for_work_tree(&d.home, &d.work)
        .unwrap()
        .with_max_file_bytes(1_000);
    let before = shadow.snapshot("ses_t", "before").unwrap();
    assert_eq!(before.too_large, vec![PathBuf::from("big.dat")]);
    // A file that grows past the bound after being snapshotted small.
    write(&d.work, "grows.dat", "tiny\n");
    let middle = shadow.snapshot("ses_t", "middle").unwrap();
    write(&d.work, "grows.dat", &"y".repeat(3_000));
    write(&d.work, "big.dat", &"z".repeat(2_500));
    write(&d.work, "huge-new.dat", &"n".repeat(5_000));
    write(&d.work, "small.txt", "s2\n");
    let now = shadow.snapshot("ses_t", "now").unwrap();
    assert_eq!(
        now.too_large,
        vec![
            PathBuf::from("big.dat"),
            PathBuf::from("grows.dat"),
            PathBuf::from("huge-new.dat")
        ]
    );
    let changes = shadow.changes(&now.commit, &middle.commit).unwrap();
    // grows.dat is in the older snapshot but exists now unsnapshotted: kept.
    assert!(
        changes
            .iter()
            .any(|c| c.path == Path::new("grows.dat") && c.action == Action::Keep),
        "{changes:?}"
    );
    shadow.restore(&middle.commit, &changes).unwrap();
    assert_eq!(read(&d.work, "small.txt").as_deref(), Some("s1\n"));
    assert_eq!(read(&d.work, "big.dat").unwrap().len(), 2_500);
    assert_eq!(read(&d.work, "grows.dat").unwrap().len(), 3_000);
    assert_eq!(read(&d.work, "huge-new.dat").unwrap().len(), 5_000);
}

#[test]
fn the_users_git_repository_is_never_touched() {
    let d = dirs();
    user_git(&d.work, &["init", "-q"]);
    write(&d.work, "tracked.txt", "committed\n");
    user_git(&d.work, &["add", "tracked.txt"]);
    user_git(&d.work, &["commit", "-q", "-m", "first"]);
    let git_before = tree(&d.work.join(".git"));
    let shadow = Shadow::for_work_tree(&d.home, &d.work).unwrap();
    let before = shadow.snapshot("ses_t", "before").unwrap();
    write(&d.work, "tracked.txt", "changed by the agent\n");
    write(&d.work, "untracked.txt", "new\n");
    let after = shadow.snapshot("ses_t", "after").unwrap();
    // The shadow snapshot never holds the user's .git.
    let changes = shadow.changes(&before.commit, &after.commit).unwrap();
    assert!(
        changes.iter().all(|c| !c.path.starts_with(".git")),
        "{changes:?}"
    );
    rewind_files(&shadow, "ses_t", &before.commit);
    assert_eq!(read(&d.work, "tracked.txt").as_deref(), Some("committed\n"));
    assert!(!d.work.join("untracked.txt").exists());
    assert_eq!(tree(&d.work.join(".git")), git_before);
    assert!(!shadow.git_dir().starts_with(&d.work));
}

#[test]
fn a_nested_repository_without_commits_does_not_fail_the_snapshot() {
    let d = dirs();
    write(&d.work, "a.txt", "a\n");
    std::fs::create_dir_all(d.work.join("vendor/lib")).unwrap();
    user_git(&d.work.join("vendor/lib"), &["init", "-q"]);
    write(&d.work, "vendor/lib/x.txt", "x\n");
    let shadow = Shadow::for_work_tree(&d.home, &d.work).unwrap();
    let before = shadow.snapshot("ses_t", "before").unwrap();
    write(&d.work, "a.txt", "b\n");
    rewind_files(&shadow, "ses_t", &before.commit);
    assert_eq!(read(&d.work, "a.txt").as_deref(), Some("a\n"));
    assert_eq!(read(&d.work, "vendor/lib/x.txt").as_deref(), Some("x\n"));
}

#[test]
fn each_working_tree_has_its_own_shadow_repository() {
    let d = dirs();
    let other = d.work.join("sub");
    std::fs::create_dir_all(&other).unwrap();
    let a = Shadow::for_work_tree(&d.home, &d.work).unwrap();
    let b = Shadow::for_work_tree(&d.home, &other).unwrap();
    assert_ne!(a.git_dir(), b.git_dir());
    assert_eq!(
        Shadow::for_work_tree(&d.home, &d.work.join("sub/.."))
            .unwrap()
            .git_dir(),
        a.git_dir()
    );
}

#[test]
fn a_rewind_record_starts_the_live_history() {
    let stored = vec![
        Message::user("one"),
        Message::assistant("1", vec![]),
        Message::user("two"),
        rewind_record(2, 2),
        Message::user("one"),
        Message::assistant("1", vec![]),
    ];
    assert!(is_rewind_record(&stored[3]));
    assert!(stored[3].content.contains("turn 2 is left out"));
    let live = crate::live_history(stored);
    assert_eq!(live.len(), 2);
    assert_eq!(live[0].content, "one");
    assert!(rewind_record(2, 4).content.contains("turns 2 to 4 are"));
}

#[test]
fn only_sessions_with_writing_tools_outside_read_only_mode_take_snapshots() {
    use herald_permissions::Mode;
    let full = herald_tools::builtin::default_registry(10_000);
    assert!(can_change_files(&full, Mode::WorkspaceWrite));
    assert!(can_change_files(&full, Mode::FullAccess));
    assert!(!can_change_files(&full, Mode::ReadOnly));
    let mut only_reads = herald_tools::builtin::default_registry(10_000);
    for name in ["terminal", "process", "write_file"] {
        only_reads.remove(name);
    }
    // patch alone still writes.
    assert!(can_change_files(&only_reads, Mode::FullAccess));
    only_reads.remove("patch");
    // What is left (read_file, search_files) changes no file.
    assert!(!can_change_files(&only_reads, Mode::FullAccess));
}

#[test]
fn a_herald_home_inside_the_tree_is_not_snapshotted() {
    let d = dirs();
    let home = d.work.join(".herald");
    std::fs::create_dir_all(&home).unwrap();
    write(&d.work, "a.txt", "a\n");
    write(&home, "state.db", "old state");
    let shadow = Shadow::for_work_tree(&home, &d.work).unwrap();
    let before = shadow.snapshot("ses_t", "before").unwrap();
    write(&d.work, "a.txt", "b\n");
    write(&home, "state.db", "new state");
    let after = shadow.snapshot("ses_t", "after").unwrap();
    let changes = shadow.changes(&before.commit, &after.commit).unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].path, Path::new("a.txt"));
    rewind_files(&shadow, "ses_t", &before.commit);
    assert_eq!(read(&d.work, "a.txt").as_deref(), Some("a\n"));
    assert_eq!(read(&home, "state.db").as_deref(), Some("new state"));
    assert!(shadow.git_dir().join("HEAD").exists());
}

/// A session in a store, with its checkpointer and gate, for rewinds.
struct Session {
    d: Dirs,
    store: crate::StoreHandle,
    gate: std::sync::Arc<SnapshotGate>,
    checkpoints: Checkpointer,
}

async fn session() -> Session {
    let d = dirs();
    write(&d.work, "a.txt", "a\n");
    let store = crate::StoreHandle::open(&d.home.join("state.db")).unwrap();
    let cwd = d.work.display().to_string();
    store
        .call(move |s| {
            s.create_session(&herald_store::NewSession {
                id: "ses_t".into(),
                parent_session_id: None,
                agent_id: None,
                source: herald_store::SessionSource::Cli,
                cwd,
                model: "m".into(),
                provider: "p".into(),
                system_prompt: "sys".into(),
            })
        })
        .await
        .unwrap()
        .unwrap();
    let gate = std::sync::Arc::new(SnapshotGate::default());
    let checkpoints = Checkpointer::open(
        &store,
        "ses_t",
        d.work.clone(),
        d.home.clone(),
        FileSnapshots::Taken,
        1,
        std::sync::Arc::clone(&gate),
    )
    .await;
    Session {
        d,
        store,
        gate,
        checkpoints,
    }
}

impl Session {
    /// One turn: a read-only call, then (with `edit`) a writing call that
    /// applies `edit` to the working tree.
    async fn turn(&mut self, edit: Option<&dyn Fn(&Path)>) {
        use crate::intercept::{BeforeCall, CallInterceptor, CallSite};
        self.checkpoints
            .before_turn(&crate::EventSink::discard())
            .await;
        for read_only in [true, false] {
            if !read_only && edit.is_none() {
                continue;
            }
            let site = CallSite {
                session_id: "ses_t",
                agent_id: "root",
                cwd: &self.d.work,
                read_only,
            };
            let mut call = herald_protocol::ToolCall {
                id: "c".into(),
                name: "write_file".into(),
                arguments: "{}".into(),
            };
            assert_eq!(self.gate.before(site, &mut call).await, BeforeCall::Proceed);
        }
        if let Some(edit) = edit {
            edit(&self.d.work);
        }
        self.checkpoints.after_turn().await;
    }

    async fn plan(&self, turn: u32, scope: RewindScope) -> Result<RewindPlan, RewindError> {
        plan_rewind(&self.store, &self.d.home, "ses_t", turn, scope).await
    }
}

#[tokio::test]
async fn a_rewind_to_a_turn_without_a_snapshot_restores_the_next_later_one() {
    let mut s = session().await;
    s.turn(None).await;
    // An edit by hand between the turns, then a turn that writes.
    write(&s.d.work, "hand.txt", "by hand\n");
    s.turn(Some(&|work: &Path| {
        write(work, "a.txt", "changed\n");
        write(work, "new.txt", "made\n");
    }))
    .await;
    assert_eq!(s.gate.snapshots_started(), 1, "only the writing turn");
    let rows = s
        .store
        .call(|st| st.checkpoints("ses_t", false))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rows[0].commit_id, None);
    assert_eq!(rows[0].note.as_deref(), Some(NO_WRITES_NOTE));

    // A fork at such a turn works (it copies the conversation only).
    assert!(fork_history(&s.store, "ses_t", 1).await.is_ok());
    let plan = s.plan(1, RewindScope::Both).await.unwrap();
    let files = plan.files.as_ref().unwrap();
    assert_eq!(Some(&files.target), rows[1].commit_id.as_ref());
    assert!(
        files.note.as_deref().unwrap().contains("before turn 2"),
        "{:?}",
        files.note
    );
    apply_rewind(&s.store, plan).await.unwrap();
    assert_eq!(read(&s.d.work, "a.txt").as_deref(), Some("a\n"));
    assert!(!s.d.work.join("new.txt").exists());
    assert_eq!(
        read(&s.d.work, "hand.txt").as_deref(),
        Some("by hand\n"),
        "the edit by hand before the later snapshot is kept"
    );
}

#[tokio::test]
async fn a_rewind_to_a_turn_without_a_later_snapshot_changes_no_file() {
    let mut s = session().await;
    s.turn(None).await;
    s.turn(None).await;
    write(&s.d.work, "hand.txt", "by hand\n");
    let plan = s.plan(1, RewindScope::FilesOnly).await.unwrap();
    let files = plan.files.as_ref().unwrap();
    assert!(files.changes.is_empty(), "{:?}", files.changes);
    assert!(!plan.changes_files());
    assert!(
        files
            .note
            .as_deref()
            .unwrap()
            .contains("herald changed no files since turn 1 began"),
        "{:?}",
        files.note
    );
    apply_rewind(&s.store, plan).await.unwrap();
    assert_eq!(read(&s.d.work, "a.txt").as_deref(), Some("a\n"));
    assert_eq!(read(&s.d.work, "hand.txt").as_deref(), Some("by hand\n"));
}

#[tokio::test]
async fn a_failed_snapshot_still_refuses_a_files_rewind() {
    let mut s = session().await;
    s.turn(None).await;
    s.turn(None).await;
    s.turn(Some(&|work: &Path| write(work, "a.txt", "three\n")))
        .await;
    // Turn 2's snapshot failed (as if git had): turns 1 and 2 cannot be
    // restored, even though turn 3 has a snapshot.
    let rows = s
        .store
        .call(|st| st.checkpoints("ses_t", false))
        .await
        .unwrap()
        .unwrap();
    let id = rows[1].id;
    s.store
        .call(move |st| st.set_checkpoint_snapshot(id, None, Some("git is missing")))
        .await
        .unwrap()
        .unwrap();
    for turn in [1, 2] {
        match s.plan(turn, RewindScope::FilesOnly).await {
            Err(RewindError::NoSnapshot { reason, .. }) => {
                assert!(reason.contains("git is missing"), "{reason}");
            }
            other => panic!("turn {turn}: {other:?}"),
        }
    }
    // The conversation alone still rewinds.
    assert!(s.plan(1, RewindScope::ConversationOnly).await.is_ok());
    assert!(s.plan(3, RewindScope::FilesOnly).await.is_ok());
}

#[tokio::test]
async fn a_files_rewind_keeps_the_start_of_later_turns_without_a_snapshot() {
    let mut s = session().await;
    s.turn(Some(&|work: &Path| write(work, "a.txt", "one\n")))
        .await;
    s.turn(None).await;
    // Files only: the conversation (and turn 2) stays.
    let plan = s.plan(1, RewindScope::FilesOnly).await.unwrap();
    apply_rewind(&s.store, plan).await.unwrap();
    assert_eq!(read(&s.d.work, "a.txt").as_deref(), Some("a\n"));
    // Turn 2 began with turn 1's change, which no later snapshot holds now.
    let plan = s.plan(2, RewindScope::FilesOnly).await.unwrap();
    assert!(plan.changes_files());
    apply_rewind(&s.store, plan).await.unwrap();
    assert_eq!(read(&s.d.work, "a.txt").as_deref(), Some("one\n"));
}

/// Content unlike any other (so its blob is only in one snapshot), large
/// enough that dropping it shows in the repository's size.
fn bulky(tag: &str) -> String {
    (0..20_000).map(|i| format!("{tag} line {i}\n")).collect()
}

/// Whether the shadow repository `git_dir` holds the blob of `content`.
fn has_blob(git_dir: &Path, content: &str) -> bool {
    use std::io::Write as _;
    let mut hash = std::process::Command::new("git")
        .args(["hash-object", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    hash.stdin
        .take()
        .unwrap()
        .write_all(content.as_bytes())
        .unwrap();
    let out = hash.wait_with_output().unwrap();
    let sha = String::from_utf8(out.stdout).unwrap();
    std::process::Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["cat-file", "-e", sha.trim()])
        .status()
        .unwrap()
        .success()
}

impl Session {
    async fn rows(&self) -> Vec<herald_store::CheckpointRecord> {
        self.store
            .call(|st| st.checkpoints("ses_t", true))
            .await
            .unwrap()
            .unwrap()
    }

    fn git_dir(&self) -> PathBuf {
        Shadow::for_work_tree(&self.d.home, &self.d.work)
            .unwrap()
            .git_dir()
            .to_path_buf()
    }

    /// Three turns, each writing new content to `a.txt`; the first two
    /// more than two seconds (of git's whole-second commit times) before
    /// the third.
    async fn three_turns(&mut self) -> [String; 3] {
        let versions = [bulky("one"), bulky("two"), bulky("three")];
        for (n, version) in versions.iter().enumerate() {
            if n == 2 {
                tokio::time::sleep(std::time::Duration::from_millis(3_500)).await;
            }
            let v = version.clone();
            self.turn(Some(&move |work: &Path| write(work, "a.txt", &v)))
                .await;
        }
        versions
    }
}

#[tokio::test]
async fn pruning_drops_old_checkpoints_and_what_only_they_kept() {
    let mut s = session().await;
    let [one, two, three] = s.three_turns().await;
    let git_dir = s.git_dir();
    assert!(has_blob(&git_dir, &one) && has_blob(&git_dir, &two));

    let retention = Retention {
        keep_for: Some(std::time::Duration::from_secs(2)),
        max_bytes: None,
    };
    let report = prune(&s.store, &s.d.home, retention).await.unwrap();
    assert_eq!(report.checkpoints_removed, 2, "{report:?}");
    assert!(report.snapshots_removed >= 2, "{report:?}");
    assert_eq!(report.repositories, 1);
    assert_eq!(report.repositories_removed, 0);
    assert!(report.failures.is_empty(), "{report:?}");
    assert!(
        report.bytes_after < report.bytes_before,
        "{} -> {}",
        report.bytes_before,
        report.bytes_after
    );
    assert!(!has_blob(&git_dir, &one), "turn 1's content is gone");
    // What turn 3 started from (turn 2's result) and ended with are kept.
    assert!(has_blob(&git_dir, &two) && has_blob(&git_dir, &three));
    let rows = s.rows().await;
    assert_eq!(rows.iter().map(|r| r.turn).collect::<Vec<_>>(), vec![3]);

    // Turn 3 still rewinds: its files come back.
    let plan = s.plan(3, RewindScope::FilesOnly).await.unwrap();
    apply_rewind(&s.store, plan).await.unwrap();
    assert_eq!(read(&s.d.work, "a.txt"), Some(two.clone()));
    // Turn 1 does not.
    assert!(s.plan(1, RewindScope::FilesOnly).await.is_err());

    // A second prune finds nothing more to do, and a next turn snapshots.
    let again = prune(&s.store, &s.d.home, retention).await.unwrap();
    assert_eq!(again.checkpoints_removed, 0, "{again:?}");
    s.turn(Some(&|work: &Path| write(work, "b.txt", "b\n")))
        .await;
    assert!(s.rows().await.last().unwrap().end_commit_id.is_some());
    assert!(!super::prune_due(&s.d.home), "a prune just finished");
}

#[tokio::test]
async fn over_the_size_limit_the_oldest_go_until_it_fits() {
    let mut s = session().await;
    s.three_turns().await;
    let git_dir = s.git_dir();
    // No age limit; a limit nothing fits under: everything goes.
    let retention = Retention {
        keep_for: None,
        max_bytes: Some(1),
    };
    let report = prune(&s.store, &s.d.home, retention).await.unwrap();
    assert_eq!(report.checkpoints_removed, 3, "{report:?}");
    assert_eq!(report.repositories_removed, 1, "{report:?}");
    assert_eq!(report.bytes_after, 0, "{report:?}");
    assert!(!git_dir.exists());
    assert!(s.rows().await.is_empty());
    // The conversation rewinds no files now, and the next turn starts a
    // new repository.
    s.turn(Some(&|work: &Path| write(work, "b.txt", "b\n")))
        .await;
    assert!(git_dir.exists());

    // A limit that fits keeps everything.
    let roomy = Retention {
        keep_for: None,
        max_bytes: Some(1 << 30),
    };
    let report = prune(&s.store, &s.d.home, roomy).await.unwrap();
    assert_eq!(report.checkpoints_removed, 0, "{report:?}");
    assert_eq!(s.rows().await.len(), 1);
}

#[tokio::test]
async fn pruning_frees_a_chain_left_by_an_older_version() {
    let mut s = session().await;
    let [one, two, three] = s.three_turns().await;
    let git_dir = s.git_dir();
    // Rebuild what older versions left: the session's snapshots chained as
    // parents under its ref, no ref per snapshot, rows naming the chain.
    let git = |args: &[&str], stdin: Option<&str>| -> String {
        use std::io::Write as _;
        let mut child = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&git_dir)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
        drop(input);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let rows = s.rows().await;
    let mut chain: Vec<(String, String)> = Vec::new();
    let mut parent: Option<String> = None;
    for row in &rows {
        for commit in [&row.commit_id, &row.end_commit_id].into_iter().flatten() {
            if chain.iter().any(|(old, _)| old == commit) {
                continue;
            }
            let tree = git(&["rev-parse", &format!("{commit}^{{tree}}")], None);
            let mut args = vec!["commit-tree", tree.as_str(), "-m", "old"];
            if let Some(p) = &parent {
                args.extend(["-p", p.as_str()]);
            }
            let new = git(&args, None);
            parent = Some(new.clone());
            chain.push((commit.clone(), new));
        }
    }
    let refs = git(
        &["for-each-ref", "--format=%(refname)", "refs/herald/"],
        None,
    );
    let mut update: String = refs
        .lines()
        .filter(|r| r.starts_with("refs/herald/snapshots/"))
        .map(|r| format!("delete {r}\n"))
        .collect();
    update.push_str(&format!(
        "update refs/herald/sessions/ses_t {}\n",
        parent.clone().unwrap()
    ));
    git(&["update-ref", "--stdin"], Some(&update));
    git(&["gc", "--quiet", "--prune=now"], None);
    {
        let db = rusqlite::Connection::open(s.d.home.join("state.db")).unwrap();
        for (old, new) in &chain {
            db.execute(
                "UPDATE checkpoints SET commit_id = ?2 WHERE commit_id = ?1",
                [old, new],
            )
            .unwrap();
            db.execute(
                "UPDATE checkpoints SET end_commit_id = ?2 WHERE end_commit_id = ?1",
                [old, new],
            )
            .unwrap();
        }
    }
    assert!(has_blob(&git_dir, &one));

    let retention = Retention {
        keep_for: Some(std::time::Duration::from_secs(2)),
        max_bytes: None,
    };
    let report = prune(&s.store, &s.d.home, retention).await.unwrap();
    assert_eq!(report.checkpoints_removed, 2, "{report:?}");
    assert!(report.failures.is_empty(), "{report:?}");
    // Turn 3's commits still have turn 2's as parent, which pins turn 1's
    // content until turn 3 goes too; it keeps its own ref meanwhile.
    assert!(has_blob(&git_dir, &two) && has_blob(&git_dir, &three));
    let plan = s.plan(3, RewindScope::FilesOnly).await.unwrap();
    apply_rewind(&s.store, plan).await.unwrap();
    assert_eq!(read(&s.d.work, "a.txt"), Some(two));
    // Once turn 3 goes, nothing of the chain is left.
    let all = Retention {
        keep_for: None,
        max_bytes: Some(1),
    };
    prune(&s.store, &s.d.home, all).await.unwrap();
    assert!(!git_dir.exists() || !has_blob(&git_dir, &one));
}
