//! Several openers racing on a brand-new database file: creation, the switch
//! to WAL mode and the migrations must wait for each other instead of failing
//! with "locked".
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use herald_store::{SCHEMA_VERSION, Store};

/// Set in the environment of a child process started by
/// [`processes_opening_a_new_file_at_once_all_succeed`]: the database it opens.
const CHILD_PATH_VAR: &str = "HERALD_STORE_TEST_OPEN_PATH";

/// Opens `path` from `n` threads released at the same instant; returns the
/// error messages of the openers that failed.
fn race_threads(path: &Path, n: usize) -> Vec<String> {
    let barrier = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            let path = path.to_owned();
            std::thread::spawn(move || {
                barrier.wait();
                Store::open(&path)
                    .and_then(|store| store.schema_version())
                    .map_err(|err| err.to_string())
            })
        })
        .collect();
    let mut errors = Vec::new();
    for handle in handles {
        match handle.join().unwrap() {
            Ok(version) => assert_eq!(version, SCHEMA_VERSION),
            Err(err) => errors.push(err),
        }
    }
    errors
}

fn journal_mode(path: &Path) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_query_value(None, "journal_mode", |row| row.get(0))
        .unwrap()
}

#[test]
fn threads_opening_a_new_file_at_once_all_succeed() {
    let started = Instant::now();
    let mut rounds = 0;
    // Bounded: at least 10 rounds, and more while under two seconds.
    while rounds < 10 || (rounds < 60 && started.elapsed() < Duration::from_secs(2)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home/state.db");
        let errors = race_threads(&path, 8);
        assert!(errors.is_empty(), "round {rounds}: {errors:#?}");
        assert_eq!(journal_mode(&path), "wal");
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        rounds += 1;
    }
}

/// Not a test of its own: the body a child process runs (see below). Without
/// the variable it has nothing to do.
#[test]
fn child_process_opens_the_store() {
    let Ok(path) = std::env::var(CHILD_PATH_VAR) else {
        return;
    };
    let store = Store::open(&path).unwrap_or_else(|err| panic!("open failed: {err}"));
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
}

#[test]
fn processes_opening_a_new_file_at_once_all_succeed() {
    let exe = std::env::current_exe().unwrap();
    for round in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let children: Vec<_> = (0..6)
            .map(|_| {
                Command::new(&exe)
                    .args([
                        "--exact",
                        "suite::concurrent_open::child_process_opens_the_store",
                        "--nocapture",
                    ])
                    .env(CHILD_PATH_VAR, &path)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "round {round}: a process failed to open the new store:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        assert_eq!(journal_mode(&path), "wal");
    }
}

/// The state another opener is in while it creates the file: rollback
/// journal, a write transaction open. `PRAGMA journal_mode=WAL` then answers
/// SQLITE_BUSY at once, without the busy handler; the store must retry until
/// the other side is done.
#[test]
fn open_waits_for_another_opener_still_creating_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let creator = rusqlite::Connection::open(&path).unwrap();
    creator
        .execute_batch("BEGIN IMMEDIATE; CREATE TABLE creating (x INTEGER);")
        .unwrap();
    let (opened_tx, opened_rx) = std::sync::mpsc::channel();
    let opener_path = path.clone();
    let opener = std::thread::spawn(move || {
        let started = Instant::now();
        let result = Store::open(&opener_path)
            .and_then(|store| store.schema_version())
            .map_err(|err| err.to_string());
        let _ = opened_tx.send(());
        (result, started.elapsed())
    });
    // Still waiting while the other side holds its transaction.
    assert!(
        opened_rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "open returned while another connection was creating the file"
    );
    creator.execute_batch("COMMIT").unwrap();
    drop(creator);
    let (result, waited) = opener.join().unwrap();
    assert_eq!(result, Ok(SCHEMA_VERSION));
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert_eq!(journal_mode(&path), "wal");
}

#[test]
fn a_lock_held_past_the_timeout_reports_the_time_really_waited() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(Store::open(&path).unwrap());
    // Another "process" holds the write lock for longer than the timeout.
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let mut store = Store::open(&path).unwrap();
    let started = Instant::now();
    let err = store
        .create_session(&herald_store::NewSession {
            id: "s1".into(),
            parent_session_id: None,
            agent_id: None,
            source: herald_store::SessionSource::Cli,
            cwd: "/w".into(),
            model: "m".into(),
            provider: "openai".into(),
            system_prompt: String::new(),
        })
        .unwrap_err();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(4),
        "gave up too early: {waited:?}"
    );
    let text = err.to_string();
    assert!(text.contains("locked"), "{text}");
    let seconds = format!("{:.1} s", waited.as_secs_f64());
    let low = format!("{:.1} s", waited.as_secs_f64() - 0.1);
    assert!(
        text.contains(&seconds) || text.contains(&low),
        "the message should state about {seconds}: {text}"
    );
}
