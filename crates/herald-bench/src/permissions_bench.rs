//! `herald-bench permissions`: the cost of judging one call (target:
//! p50 < 50 µs for a 200-character command) and of
//! redacting one tool result, in this process (no binary start).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use herald_permissions::{CallInfo, Mode, Policy, PolicyConfig};
use herald_sandbox::Redactor;

use crate::stats::{median, percentile};

/// Calls measured per case after warm-up.
const SAMPLES: usize = 5_000;

/// A realistic 200-character command: a chain with a pipeline, a
/// substitution and a redirection.
const COMMAND_200: &str = "cd crates/herald-core && cargo test --workspace --locked -- --nocapture 2>&1 | tee /tmp/test.log | grep -E '^(test result|FAILED)' && git status --short && echo \"done at $(date +%s)\" > build-done1.txt";

fn policy() -> Result<Policy> {
    Ok(Policy::new(PolicyConfig {
        mode: Mode::WorkspaceWrite,
        allow: vec!["terminal(cargo *)".into(), "write_file(~/notes/**)".into()],
        allow_network: Vec::new(),
        ask: vec!["terminal(git commit*)".into()],
        deny: vec!["terminal(docker *)".into(), "mcp__fs__delete*".into()],
        project_ask: vec!["terminal(make deploy*)".into()],
        project_deny: Vec::new(),
        writable_roots: vec!["/srv/cache".into()],
        home: Some("/home/user".into()),
        sandbox_available: true,
        read_only_tools: Vec::new(),
    })?)
}

fn time_calls(policy: &Policy, tool: &str, args: &serde_json::Value) -> Vec<Duration> {
    let cwd = Path::new("/work/project");
    let call = CallInfo {
        tool,
        args,
        cwd,
        read_only: false,
    };
    for _ in 0..500 {
        black_box(policy.check(black_box(&call)));
    }
    (0..SAMPLES)
        .map(|_| {
            let start = Instant::now();
            black_box(policy.check(black_box(&call)));
            start.elapsed()
        })
        .collect()
}

/// Each call a command never seen before (a different file name of the
/// same length), so no per-thread parse cache helps.
fn time_fresh_commands(policy: &Policy) -> Vec<Duration> {
    let cwd = Path::new("/work/project");
    let commands: Vec<serde_json::Value> = (0..SAMPLES + 500)
        .map(|i| {
            let command = COMMAND_200.replace("build-done1.txt", &format!("b{i:09}.txt"));
            serde_json::json!({ "command": command })
        })
        .collect();
    let mut times = Vec::with_capacity(SAMPLES);
    for (i, args) in commands.iter().enumerate() {
        let call = CallInfo {
            tool: "terminal",
            args,
            cwd,
            read_only: false,
        };
        let start = Instant::now();
        black_box(policy.check(black_box(&call)));
        if i >= 500 {
            times.push(start.elapsed());
        }
    }
    times
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub(crate) fn run() -> Result<()> {
    let policy = policy()?;
    assert_eq!(
        COMMAND_200.len(),
        200,
        "the benchmark command must be 200 chars"
    );
    let fresh = time_fresh_commands(&policy);
    println!(
        "| permission check, 200-char chained command never seen before (p50 / p95 of {SAMPLES}) | < 50 µs p50 | {:.1} µs / {:.1} µs |",
        us(median(&fresh)),
        us(percentile(&fresh, 0.95))
    );
    let cases = [
        (
            "terminal, the same 200-char command repeated (parse cached)",
            "terminal",
            serde_json::json!({ "command": COMMAND_200 }),
        ),
        (
            "terminal, `ls -la`",
            "terminal",
            serde_json::json!({ "command": "ls -la" }),
        ),
        (
            "write_file inside the workspace",
            "write_file",
            serde_json::json!({ "path": "src/main.rs", "content": "fn main() {}" }),
        ),
    ];
    for (name, tool, args) in &cases {
        let times = time_calls(&policy, tool, args);
        let target = "—";
        println!(
            "| permission check, {name} (p50 / p95 of {SAMPLES}) | {target} | {:.1} µs / {:.1} µs |",
            us(median(&times)),
            us(percentile(&times, 0.95))
        );
    }
    let redactor = Redactor::new(vec!["sk-configured-key-0123456789".to_owned()]);
    let clean = "test result: ok. 42 passed; 0 failed; finished in 0.31s\n".repeat(900);
    let times: Vec<Duration> = (0..500)
        .map(|_| {
            let start = Instant::now();
            black_box(redactor.redact(black_box(&clean)));
            start.elapsed()
        })
        .collect();
    println!(
        "| redaction of a {} KB tool result with no secret (p50 / p95 of 500) | — | {:.1} µs / {:.1} µs |",
        clean.len() / 1024,
        us(median(&times)),
        us(percentile(&times, 0.95))
    );
    Ok(())
}
