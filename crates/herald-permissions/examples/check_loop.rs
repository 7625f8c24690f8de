//! Profiling aid: loops `Policy::check` on fresh 200-character commands
//! (the `herald-bench permissions` fresh-command row) and prints the p50.
//! `cargo run --release -p herald-permissions --example check_loop [N] [repeat]`

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use herald_permissions::{CallInfo, Mode, Policy, PolicyConfig};

const COMMAND_200: &str = "cd crates/herald-core && cargo test --workspace --locked -- --nocapture 2>&1 | tee /tmp/test.log | grep -E '^(test result|FAILED)' && git status --short && echo \"done at $(date +%s)\" > build-done1.txt";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(200_000);
    let what = args.next().unwrap_or_default();
    let repeat = what == "repeat";
    if what == "parse" {
        return parse_only(n);
    }
    let policy = Policy::new(PolicyConfig {
        mode: Mode::WorkspaceWrite,
        allow: vec!["terminal(cargo *)".into(), "write_file(~/notes/**)".into()],
        allow_network: vec!["terminal(curl https://example.com/*)".into()],
        ask: vec!["terminal(git commit*)".into()],
        deny: vec!["terminal(docker *)".into(), "mcp__fs__delete*".into()],
        project_ask: vec!["terminal(make deploy*)".into()],
        project_deny: Vec::new(),
        writable_roots: vec!["/srv/cache".into()],
        home: Some("/home/user".into()),
        sandbox_available: true,
        read_only_tools: Vec::new(),
    })?;
    let cwd = Path::new("/work/project");
    let mut times = Vec::with_capacity(n);
    let mut last = None;
    for i in 0..n {
        let command = if repeat {
            COMMAND_200.to_owned()
        } else {
            COMMAND_200.replace("build-done1.txt", &format!("b{i:09}.txt"))
        };
        let args = serde_json::json!({ "command": command });
        let call = CallInfo {
            tool: "terminal",
            args: &args,
            cwd,
            read_only: false,
        };
        let start = Instant::now();
        last = Some(black_box(policy.check(black_box(&call))));
        times.push(start.elapsed());
    }
    times.sort();
    let p50 = times.get(times.len() / 2).copied().unwrap_or_default();
    println!(
        "p50 {:.1} µs over {n}; last: {last:?}",
        p50.as_secs_f64() * 1e6
    );
    Ok(())
}

/// The tree-sitter parse alone, on the same fresh commands.
fn parse_only(n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into())?;
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let command = COMMAND_200.replace("build-done1.txt", &format!("b{i:09}.txt"));
        let start = Instant::now();
        let tree = black_box(parser.parse(black_box(&command), None));
        times.push(start.elapsed());
        drop(tree);
    }
    times.sort();
    let p50 = times.get(times.len() / 2).copied().unwrap_or_default();
    println!("parse only: p50 {:.1} µs over {n}", p50.as_secs_f64() * 1e6);
    Ok(())
}
