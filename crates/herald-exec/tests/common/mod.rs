//! Runs the real `execute_code` tool through a real registry of built-in
//! tools, the way the agent loop does, with python3 from PATH.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use herald_exec::{ExecConfig, ExecuteCode, find_python};
use herald_protocol::ToolCall;
use herald_tools::{AgentState, CallObserver, NestedCall, ToolContext, ToolRegistry, typed};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The variable that lets the `execute_code` tests skip when Python 3 is
/// missing; without it a missing interpreter fails them.
pub const SKIP_PYTHON: &str = "HERALD_TEST_SKIP_PYTHON";

/// The interpreter. When python3 is missing this panics, unless
/// `HERALD_TEST_SKIP_PYTHON=1` is set: then it prints that the test was
/// skipped and returns `None` (the caller returns).
pub fn python() -> Option<PathBuf> {
    match find_python("") {
        Ok(path) => Some(path),
        Err(err) if std::env::var(SKIP_PYTHON).is_ok_and(|v| v == "1") => {
            eprintln!("SKIPPED (python3 missing, {SKIP_PYTHON}=1): {err}");
            None
        }
        Err(err) => panic!(
            "execute_code tests need Python 3 on PATH: {err}. \
             Install python3, or set {SKIP_PYTHON}=1 to skip these tests."
        ),
    }
}

/// The interpreter for a test that proves the sandbox confines scripts:
/// required even with `HERALD_TEST_SKIP_PYTHON=1`, since a sandbox test
/// that skips proves nothing and CI installs python3. Panics, saying what
/// to install, when python3 is missing.
pub fn python_for_sandbox() -> PathBuf {
    find_python("").unwrap_or_else(|err| {
        panic!(
            "this test proves that the sandbox confines execute_code scripts and needs \
             Python 3 on PATH: {err}. Install python3 ({SKIP_PYTHON} does not skip the \
             sandbox tests)."
        )
    })
}

/// Default settings of the tool for tests.
pub fn config(python: PathBuf) -> ExecConfig {
    ExecConfig {
        python,
        timeout: Duration::from_secs(300),
        max_tool_calls: 50,
        landlock: false,
        result_limit_chars: 50_000,
    }
}

/// Nested calls seen by the observer: (parent id, tool, failed).
#[derive(Default)]
pub struct Seen(pub Mutex<Vec<(String, String, bool)>>);

impl CallObserver for Seen {
    fn nested_call(&self, call: &NestedCall<'_>) {
        self.0.lock().unwrap().push((
            call.parent_call_id.to_owned(),
            call.name.to_owned(),
            call.is_error,
        ));
    }
}

/// One finished execute_code call.
pub struct Run {
    pub json: Value,
    /// The `sandbox: ...` line after the JSON, if any.
    pub sandbox_note: Option<String>,
    pub is_error: bool,
    pub seen: Arc<Seen>,
    pub wall: Duration,
}

impl Run {
    pub fn status(&self) -> &str {
        self.json["status"].as_str().unwrap_or_default()
    }

    pub fn output(&self) -> &str {
        self.json["output"].as_str().unwrap_or_default()
    }

    pub fn error(&self) -> &str {
        self.json["error"].as_str().unwrap_or_default()
    }

    pub fn calls(&self) -> u64 {
        self.json["tool_calls_made"].as_u64().unwrap()
    }
}

/// A registry with the built-in tools and `execute_code`.
pub fn registry(config: ExecConfig) -> Arc<ToolRegistry> {
    let mut registry = herald_tools::builtin::default_registry(50_000);
    registry.register(typed(ExecuteCode::new(config)));
    Arc::new(registry)
}

/// Runs `code` in `cwd` and parses the result.
pub async fn run(
    config: ExecConfig,
    cwd: &Path,
    code: &str,
    timeout: Option<u64>,
    cancel: CancellationToken,
) -> Run {
    run_confined(config, cwd, code, timeout, cancel, None).await
}

/// [`run`] with `ctx.sandbox` set to `sandbox`.
pub async fn run_confined(
    config: ExecConfig,
    cwd: &Path,
    code: &str,
    timeout: Option<u64>,
    cancel: CancellationToken,
    sandbox: Option<herald_sandbox::SandboxPolicy>,
) -> Run {
    let registry = registry(config);
    let seen = Arc::new(Seen::default());
    let mut ctx = ToolContext::new(AgentState::new(cwd.to_owned()), cancel)
        .with_call("call_1", Arc::clone(&registry))
        .with_observer(seen.clone());
    ctx.sandbox = sandbox.map(Arc::new);
    let mut args = json!({ "code": code });
    if let Some(timeout) = timeout {
        args["timeout"] = json!(timeout);
    }
    let call = ToolCall {
        id: "call_1".into(),
        name: "execute_code".into(),
        arguments: args.to_string(),
    };
    let started = std::time::Instant::now();
    let result = registry.execute(&call, &ctx).await;
    let wall = started.elapsed();
    let (body, sandbox_note) = match result.content.split_once("\nsandbox: ") {
        Some((body, note)) => (body, Some(format!("sandbox: {note}"))),
        None => (result.content.as_str(), None),
    };
    let json: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("result is not JSON ({e}): {}", result.content));
    Run {
        json,
        sandbox_note,
        is_error: result.is_error,
        seen,
        wall,
    }
}

/// Asserts every pid in `pids` is gone within 2 s (see
/// [`herald_testkit::assert_gone_within`]).
pub async fn assert_gone(pids: &[i32], what: &str) {
    herald_testkit::assert_gone_within(pids, what, std::time::Duration::from_secs(2)).await;
}

/// Python that starts a `sleep` grandchild and prints `SCRIPT_PID SLEEP_PID`
/// on its first line.
pub const SPAWN_SLEEPER: &str = "import os, subprocess\n\
    _sleeper = subprocess.Popen(['sleep', '1000'])\n\
    print(os.getpid(), _sleeper.pid, flush=True)\n";

/// The two pids [`SPAWN_SLEEPER`] printed on the first line of `output`.
pub fn spawned_pids(output: &str) -> Vec<i32> {
    let pids: Vec<i32> = output
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{output:?}");
    pids
}
