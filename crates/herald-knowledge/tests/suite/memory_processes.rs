//! Two processes writing the same memory file at once lose nothing: every
//! change is a locked read-modify-write.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use herald_knowledge::{MemoryLimits, MemoryStore, MemoryTarget};

const TEST_NAME: &str = "suite::memory_processes::two_processes_adding_at_once_keep_every_entry";
const PER_PROCESS: usize = 20;

fn limits() -> MemoryLimits {
    MemoryLimits {
        memory_chars: 100_000,
        ..MemoryLimits::default()
    }
}

/// The child's part: wait for the start signal, then add entries as fast as
/// possible so the two processes interleave.
fn child(home: &Path, tag: &str) {
    let go = home.join("go");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !go.exists() {
        assert!(Instant::now() < deadline, "no start signal");
        std::thread::yield_now();
    }
    let store = MemoryStore::new(home, limits());
    for i in 0..PER_PROCESS {
        store
            .add(MemoryTarget::Memory, &format!("{tag} wrote entry {i:02}"))
            .unwrap();
    }
}

#[test]
fn two_processes_adding_at_once_keep_every_entry() {
    if let (Ok(home), Ok(tag)) = (
        std::env::var("HERALD_TEST_MEMORY_HOME"),
        std::env::var("HERALD_TEST_MEMORY_TAG"),
    ) {
        child(Path::new(&home), &tag);
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = ["alpha", "beta"]
        .into_iter()
        .map(|tag| {
            Command::new(&exe)
                .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
                .env("HERALD_TEST_MEMORY_HOME", home.path())
                .env("HERALD_TEST_MEMORY_TAG", tag)
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn child test process")
        })
        .collect();
    std::fs::write(home.path().join("go"), "").unwrap();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child process failed");
    }
    let entries = MemoryStore::new(home.path(), limits())
        .read(MemoryTarget::Memory)
        .unwrap()
        .entries;
    assert_eq!(entries.len(), 2 * PER_PROCESS, "{entries:#?}");
    for tag in ["alpha", "beta"] {
        for i in 0..PER_PROCESS {
            let expected = format!("{tag} wrote entry {i:02}");
            assert!(entries.contains(&expected), "missing {expected}");
        }
    }
    // Nothing but the memory file, its lock and the start signal remain.
    let mut names: Vec<String> = std::fs::read_dir(home.path().join("memories"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [".MEMORY.md.lock", "MEMORY.md"]);
}
