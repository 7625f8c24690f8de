//! File tools against hazardous files, end to end: special files answer at
//! once instead of hanging the run, and a huge one-line file is read and
//! searched in bounded memory (peak RSS of the real binary is measured).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{Harness, Wire, last, of_type, stderr, tool_results};
use herald_testkit::{Reply, Script, ScriptedCall};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn read_file_on_a_fifo_answers_at_once_and_search_skips_it() {
    let script = Script::new().conversation(
        "look at the pipe",
        vec![
            Reply::tool("read_file", json!({"path": "pipe"})),
            Reply::tools(vec![
                ScriptedCall::new("search_files", json!({"pattern": "hello"})),
                ScriptedCall::new(
                    "patch",
                    json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
                ),
            ]),
            Reply::text("The pipe is not a file."),
        ],
    );
    let h = Harness::new(script).await;
    let work = h.work_path();
    nix::unistd::mkfifo(&work.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::write(work.join("notes.txt"), "hello there\n").unwrap();

    let started = Instant::now();
    // Before the fix, opening the FIFO waited for a writer forever.
    let (output, events) = tokio::time::timeout(
        Duration::from_secs(60),
        h.run_json(Wire::OpenAi, &[], "Please look at the pipe"),
    )
    .await
    .expect("herald hung on a FIFO");
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let done = last(&events);
    assert_eq!(done["type"], "run.completed");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["final_response"], "The pipe is not a file.");
    let completed = of_type(&events, "tool.completed");
    let statuses: Vec<&Value> = completed.iter().map(|e| &e["status"]).collect();
    assert_eq!(statuses, [&json!("error"), &json!("ok"), &json!("error")]);

    let requests = h.server.requests();
    assert_eq!(requests.len(), 3);
    let first = tool_results(&requests[1].body);
    assert_eq!(first.len(), 1);
    assert!(
        first[0].starts_with("not a regular file: pipe is a FIFO"),
        "{first:?}"
    );
    let all = tool_results(&requests[2].body);
    assert_eq!(all.len(), 3);
    assert_eq!(all[1], "notes.txt:1:hello there");
    assert!(all[2].starts_with("not a regular file: pipe"), "{all:?}");
    h.server.assert_invariants();
}

/// Size of the one-line file: larger than the RSS limit on its own, so
/// holding the line (or a copy) fails the test, and small enough for a CI
/// disk that the build has nearly filled (300 MiB once ran one out of space).
const BIG_FILE_BYTES: usize = 128 * 1024 * 1024;
/// Peak RSS allowed for the whole `herald run` process.
const RSS_LIMIT_KB: u64 = 100 * 1024;

/// Writes `needle` followed by `bytes` of `x`, with no newline at all.
fn write_one_line_file(path: &Path, bytes: usize) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    file.write_all(b"needle").unwrap();
    let chunk = vec![b'x'; 1024 * 1024];
    for _ in 0..bytes / chunk.len() {
        file.write_all(&chunk).unwrap();
    }
    file.flush().unwrap();
}

/// `VmHWM` (peak resident set size, kB) of process `pid`, while it runs.
fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `herald run --json PROMPT` and returns its events and the highest
/// peak RSS seen while it ran.
async fn run_measured(h: &Harness, prompt: &str) -> (Vec<Value>, u64) {
    let mut cmd = h.command(Wire::OpenAi);
    cmd.args(["run", "--json", prompt])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id().unwrap();
    let output = tokio::spawn(child.wait_with_output());
    let mut peak = 0;
    let deadline = Instant::now() + Duration::from_secs(240);
    while !output.is_finished() {
        assert!(Instant::now() < deadline, "herald did not finish");
        if let Some(kb) = peak_rss_kb(pid) {
            peak = peak.max(kb);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let output = output.await.unwrap().unwrap();
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    (common::parse_events(&output.stdout), peak)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_one_line_file_is_read_and_searched_in_bounded_memory() {
    let script = Script::new()
        .conversation(
            "read the big file",
            vec![
                Reply::tool("read_file", json!({"path": "big.txt"})),
                Reply::text("read"),
            ],
        )
        .conversation(
            "search the big file",
            vec![
                Reply::tool("search_files", json!({"pattern": "needle"})),
                Reply::text("searched"),
            ],
        );
    let h = Harness::new(script).await;
    write_one_line_file(&h.work_path().join("big.txt"), BIG_FILE_BYTES);
    // Every reply waits a moment, so the process is still alive (and its
    // peak RSS readable) after the tool ran.
    h.server.set_latency(Duration::from_millis(300));

    let (events, read_peak) = run_measured(&h, "Please read the big file").await;
    assert_eq!(last(&events)["final_response"], "read");
    let (events, search_peak) = run_measured(&h, "Please search the big file").await;
    assert_eq!(last(&events)["final_response"], "searched");
    eprintln!("peak RSS: read_file {read_peak} kB, search_files {search_peak} kB");

    let requests = h.server.requests();
    assert_eq!(requests.len(), 4);
    let read = tool_results(&requests[1].body);
    let expected_cut = format!(
        " [... line cut: {} of {} bytes not shown]",
        BIG_FILE_BYTES + 6 - 2000,
        BIG_FILE_BYTES + 6
    );
    assert!(read[0].starts_with("1|needlexxx"), "{}", &read[0][..50]);
    assert!(
        read[0].contains(&expected_cut),
        "{}",
        &read[0][read[0].len() - 200..]
    );
    assert!(read[0].ends_with("[lines 1-1 of 1; end of file]"));
    let search = tool_results(&requests[3].body);
    assert!(
        search[0].starts_with("big.txt:1:needlexxx"),
        "{}",
        &search[0][..50]
    );
    assert!(search[0].contains("only the first 1 MiB"), "{}", search[0]);

    assert!(read_peak > 0 && search_peak > 0, "no RSS samples");
    assert!(
        read_peak < RSS_LIMIT_KB,
        "read_file of a {BIG_FILE_BYTES}-byte line peaked at {read_peak} kB"
    );
    assert!(
        search_peak < RSS_LIMIT_KB,
        "search_files of a {BIG_FILE_BYTES}-byte line peaked at {search_peak} kB"
    );
    h.server.assert_invariants();
}
