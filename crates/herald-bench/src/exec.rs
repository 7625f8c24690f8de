//! `execute_code`: end-to-end time of a script that calls no tool,
//! and the cost of one tool call over the socket RPC. Runs the real tool
//! through a real registry on a current-thread runtime, like `herald`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use herald_exec::{ExecConfig, ExecuteCode, find_python, probe_python};
use herald_protocol::ToolCall;
use herald_tools::{AgentState, ToolContext, ToolRegistry, typed};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::ms;
use crate::stats::{median, percentile};

/// Runs of the no-tool script.
const RUNS: usize = 20;
/// Tool calls in the RPC script.
const CALLS: usize = 1000;

/// The script timing its own loop of `read_file` calls.
const RPC_SCRIPT: &str = r#"
import time
from herald_tools import read_file
read_file("small.txt")
start = time.perf_counter()
for _ in range(1000):
    read_file("small.txt")
print(time.perf_counter() - start)
"#;

/// Measures and prints the table rows.
pub(crate) fn run() -> Result<()> {
    let python = find_python("").context("python3 is needed for the execute_code benchmark")?;
    let work = tempfile::tempdir()?;
    std::fs::write(work.path().join("small.txt"), "one\ntwo\nthree\n")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(measure(&python, work.path()))
}

async fn measure(python: &Path, work: &Path) -> Result<()> {
    let info = probe_python(python, work).await?;
    let registry = registry(python.to_owned());
    let state = AgentState::new(work.to_owned());

    let (cold, _) = execute(&registry, &state, "print('hi')").await?;
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let (took, result) = execute(&registry, &state, "print('hi')").await?;
        if result["output"] != "hi\n" {
            bail!("unexpected result {result}");
        }
        times.push(took);
    }
    let bare = bare_start(&info.executable, work)?;

    let (_, result) = execute(&registry, &state, RPC_SCRIPT).await?;
    let loop_secs: f64 = result["output"]
        .as_str()
        .and_then(|s| s.trim().parse().ok())
        .with_context(|| format!("unexpected result {result}"))?;
    let per_rpc = Duration::from_secs_f64(loop_secs / CALLS as f64);
    let direct = direct_calls(&registry, &state).await;

    println!(
        "| `execute_code` script with no tool calls, end to end (p50 / p95 of {RUNS}; first call {:.1} ms) | < 150 ms | {:.1} ms / {:.1} ms |",
        ms(cold),
        ms(median(&times)),
        ms(percentile(&times, 0.95))
    );
    println!(
        "| for comparison: the bare interpreter start (`python -c pass`, p50 of {RUNS}; Python {}) | — | {:.1} ms |",
        info.version,
        ms(median(&bare))
    );
    println!(
        "| `execute_code` per tool-call RPC, {CALLS} `read_file` calls from one script (round trip incl. the tool) | < 1 ms | {:.3} ms |",
        ms(per_rpc)
    );
    println!(
        "| the same `read_file` called directly through the registry (no RPC) | — | {:.3} ms |",
        ms(direct)
    );
    println!(
        "| RPC overhead per call (difference) | < 1 ms | {:.3} ms |",
        ms(per_rpc.saturating_sub(direct))
    );
    Ok(())
}

fn registry(python: PathBuf) -> Arc<ToolRegistry> {
    let mut registry = herald_tools::builtin::default_registry(50_000);
    registry.register(typed(ExecuteCode::new(ExecConfig {
        python,
        timeout: Duration::from_secs(300),
        // The RPC script makes 1,001 calls.
        max_tool_calls: 2 * CALLS as u32,
        landlock: false,
        result_limit_chars: 50_000,
    })));
    Arc::new(registry)
}

/// One `execute_code` call through the registry: its wall time and result.
async fn execute(
    registry: &Arc<ToolRegistry>,
    state: &Arc<AgentState>,
    code: &str,
) -> Result<(Duration, Value)> {
    let ctx = ToolContext::new(Arc::clone(state), CancellationToken::new())
        .with_call("bench", Arc::clone(registry));
    let call = ToolCall {
        id: "bench".into(),
        name: "execute_code".into(),
        arguments: json!({ "code": code }).to_string(),
    };
    let started = Instant::now();
    let result = registry.execute(&call, &ctx).await;
    let took = started.elapsed();
    if result.is_error {
        bail!("execute_code failed: {}", result.content);
    }
    Ok((took, serde_json::from_str(&result.content)?))
}

/// Mean time of `read_file` called in process, for comparison.
async fn direct_calls(registry: &Arc<ToolRegistry>, state: &Arc<AgentState>) -> Duration {
    let ctx = ToolContext::new(Arc::clone(state), CancellationToken::new())
        .with_call("direct", Arc::clone(registry));
    let call = ToolCall {
        id: "direct".into(),
        name: "read_file".into(),
        arguments: json!({ "path": "small.txt" }).to_string(),
    };
    let started = Instant::now();
    for _ in 0..CALLS {
        registry.execute(&call, &ctx).await;
    }
    started.elapsed() / CALLS as u32
}

/// Start-up times of the interpreter alone.
fn bare_start(python: &Path, work: &Path) -> Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let status = std::process::Command::new(python)
            .args(["-c", "pass"])
            .current_dir(work)
            .status()?;
        if !status.success() {
            bail!("{} -c pass failed", python.display());
        }
        times.push(started.elapsed());
    }
    Ok(times)
}
