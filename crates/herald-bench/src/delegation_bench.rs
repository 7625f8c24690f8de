//! Delegation benchmarks: a fan-out of many concurrent background
//! subagents against the scripted server with fixed latency, and the
//! overhead of spawning one synchronous child.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use herald_testkit::{Reply, Script, ScriptedServer};
use serde_json::{Value, json};

use crate::child::run_measured;
use crate::ms;
use crate::stats::{median, percentile};

/// A `herald run --json` command against `server` with `config` written to
/// a fresh home; returns the command and the directories it needs alive.
fn command(
    herald: &Path,
    server: &ScriptedServer,
    config: &str,
    prompt: &str,
) -> Result<(std::process::Command, tempfile::TempDir, tempfile::TempDir)> {
    let home = tempfile::tempdir()?;
    let work = tempfile::tempdir()?;
    std::fs::write(home.path().join("config.toml"), config)?;
    std::fs::write(work.path().join("small.txt"), "one\ntwo\nthree\n")?;
    let mut cmd = std::process::Command::new(herald);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HERALD_HOME", home.path())
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "bench")
        .arg("--cwd")
        .arg(work.path())
        .args(["run", "--json", prompt]);
    Ok((cmd, home, work))
}

/// `children` background agents, each making 3 model calls (two cheap
/// `read_file` calls, then an answer) at `latency` per request.
async fn fan_out(herald: &Path, children: usize, latency: Duration) -> Result<()> {
    let tasks: Vec<Value> = (0..children)
        .map(|i| json!({"goal": format!("bench child {i}: read the file")}))
        .collect();
    let script = Script::new().responder(move |view| {
        if view.conversation.contains("bench root") {
            // Dispatch, then answer every later request (the run hands
            // finished results over as they arrive).
            return if view.turn == 0 {
                Reply::tool("delegate_task", json!({"background": true, "tasks": tasks}))
            } else {
                Reply::text("children reported")
            };
        }
        match view.turn {
            0 | 1 => Reply::tool("read_file", json!({"path": "small.txt", "limit": 3})),
            _ => Reply::text("child done"),
        }
    });
    let server = ScriptedServer::start(script).await?;
    server.set_latency(latency);
    let config = format!(
        "[delegation]\nmax_concurrent_children = {children}\nmax_background_agents = {children}\n"
    );
    let (cmd, _home, _work) = command(herald, &server, &config, "bench root: fan out")?;
    let measured = run_measured(cmd).await?;
    if !measured.success {
        bail!("the fan-out run failed");
    }
    let requests = server.requests();
    let child_requests = requests
        .iter()
        .filter(|r| r.conversation.contains("bench child"))
        .count();
    if child_requests != children * 3 {
        bail!(
            "expected {} child requests, saw {child_requests}",
            children * 3
        );
    }
    server.assert_invariants();
    let (stable, total) = server.prefix_stability();
    // The targets on the reference machine: 1,000 children, and 10,000.
    let (wall_target, rss_target) = if children > 1_000 {
        ("< 20 s at 10,000", "< 600 MB at 10,000")
    } else {
        ("< 5 s at 1,000", "< 500 MB at 1,000")
    };
    println!(
        "| {children} concurrent background subagents × 3 model calls at {} ms latency: wall time | {wall_target} | {:.2} s |",
        latency.as_millis(),
        measured.wall.as_secs_f64()
    );
    println!(
        "| same run: peak RSS | {rss_target} | {:.1} MB |",
        measured.max_rss_kb as f64 / 1024.0
    );
    println!(
        "| same run: process CPU / requests, prefix stability | — | {:.0} ms CPU for {} requests ({:.3} ms each); {stable}/{total} stable |",
        ms(measured.cpu),
        requests.len(),
        ms(measured.cpu) / requests.len().max(1) as f64
    );
    Ok(())
}

/// `spawns` synchronous single-goal delegations whose child answers at once
/// (zero latency): the `delegate_task` duration is the per-spawn overhead
/// (journal, child session, prompt, one request round trip, result).
async fn spawn_overhead(herald: &Path, spawns: usize) -> Result<()> {
    let script = Script::new().responder(move |view| {
        if view.conversation.contains("overhead root") {
            if view.turn < spawns {
                Reply::tool(
                    "delegate_task",
                    json!({"goal": format!("overhead child {}", view.turn)}),
                )
            } else {
                Reply::text("done")
            }
        } else {
            Reply::text("child answer")
        }
    });
    let server = ScriptedServer::start(script).await?;
    let (mut cmd, _home, _work) = command(herald, &server, "", "overhead root: spawn")?;
    cmd.arg("--max-iterations").arg(format!("{}", spawns + 5));
    let output = cmd
        .stdout(std::process::Stdio::piped())
        .output()
        .context("cannot run herald")?;
    if !output.status.success() {
        bail!("the spawn-overhead run failed");
    }
    let mut durations = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let event: Value = serde_json::from_str(line)?;
        if event["type"] == "tool.completed" && event["name"] == "delegate_task" {
            durations.push(Duration::from_millis(
                event["duration_ms"].as_u64().unwrap_or(0),
            ));
        }
    }
    if durations.len() != spawns {
        bail!(
            "expected {spawns} delegate_task calls, saw {}",
            durations.len()
        );
    }
    server.assert_invariants();
    println!(
        "| per-spawn overhead: synchronous delegate_task of one child answering at once (p50 / p95 of {spawns}) | — | {:.1} ms / {:.1} ms |",
        ms(median(&durations)),
        ms(percentile(&durations, 0.95))
    );
    Ok(())
}

/// Runs the delegation benchmarks and prints table rows.
pub(crate) fn run(herald: &Path) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(spawn_overhead(herald, 30))?;
    let children = std::env::var("HERALD_BENCH_CHILDREN")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    runtime.block_on(fan_out(herald, children, Duration::from_millis(200)))?;
    Ok(())
}
