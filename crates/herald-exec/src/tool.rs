//! The `execute_code` tool: puts the pieces together for one run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use herald_sandbox::{Prepared, SandboxPolicy};
use herald_tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::OnceCell;

use crate::allow::allowed_tools;
use crate::child::{self, Ending, Finished, Launch};
use crate::env::{run_env, scrubbed_env};
use crate::outcome::{Outcome, Status, seconds};
use crate::python::probe_python;
use crate::rpc::{self, Dispatcher};
use crate::stubs::generate_stubs;
use crate::token::Token;
use crate::workspace::Workspace;

/// Settings of the tool (from `[code_execution]` and `[tools]`).
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// The interpreter found at start-up (see [`crate::find_python`]).
    pub python: PathBuf,
    /// Longest a script may run; a call may ask for less.
    pub timeout: Duration,
    /// Tool calls per run; later calls get an error.
    pub max_tool_calls: u32,
    /// Confine scripts with Landlock (writes: working directory, run
    /// directory, temp) even when the permission layer does not; runs fail
    /// when the kernel cannot. A call with `ctx.sandbox` set is confined by
    /// that policy whatever this says.
    pub landlock: bool,
    /// The registry's output limit, so the result JSON is cut cleanly
    /// (0 = no limit).
    pub result_limit_chars: usize,
}

/// The `execute_code` tool. Register it with [`herald_tools::typed`].
#[derive(Debug)]
pub struct ExecuteCode {
    config: ExecConfig,
    /// The real interpreter behind `config.python`, learned on first use.
    interpreter: OnceCell<PathBuf>,
}

impl ExecuteCode {
    /// A tool running scripts with `config`.
    pub fn new(config: ExecConfig) -> Self {
        Self {
            config,
            interpreter: OnceCell::new(),
        }
    }
}

/// Arguments of `execute_code`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct ExecuteCodeArgs {
    /// Python 3 source to run.
    #[schemars(description = "")]
    pub code: String,
    /// Seconds (default and max: the configured limit).
    pub timeout: Option<u64>,
}

impl TypedTool for ExecuteCode {
    type Args = ExecuteCodeArgs;
    const NAME: &'static str = "execute_code";
    const TOOLSET: &'static str = "code_execution";
    const DESCRIPTION: &'static str = "Run a Python 3 script that calls tools: for 3+ calls with logic between them; only \
its prints come back. `from herald_tools import read_file, write_file, patch, search_files, terminal, web_search, web_extract, \
session_search` (those enabled; same arguments; JSON results are dicts; errors raise HeraldToolError; terminal foreground \
only). Max 50 tool calls, 50 KB stdout; no API keys in its environment.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: ExecuteCodeArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let started = Instant::now();
        let mut outcome = self.execute(args, ctx, started).await;
        let failed = outcome.status != Status::Success;
        let sandbox_note = outcome.sandbox_note.take();
        // Room for the note, so the registry's cut never splits the JSON.
        let limit = match (&sandbox_note, self.config.result_limit_chars) {
            (_, 0) => 0,
            (Some(note), limit) => limit.saturating_sub(note.chars().count() + 1).max(1),
            (None, limit) => limit,
        };
        let mut text = outcome.render(limit);
        if let Some(note) = &sandbox_note {
            text.push('\n');
            text.push_str(note);
        }
        if failed {
            Err(ToolError::new(text))
        } else {
            Ok(text)
        }
    }
}

impl ExecuteCode {
    async fn execute(&self, args: ExecuteCodeArgs, ctx: &ToolContext, started: Instant) -> Outcome {
        match self.try_execute(args, ctx, started).await {
            Ok(outcome) => outcome,
            Err(message) => Outcome::setup_failed(message, started.elapsed()),
        }
    }

    /// Runs the script; `Err` is a problem found before it could start.
    async fn try_execute(
        &self,
        args: ExecuteCodeArgs,
        ctx: &ToolContext,
        started: Instant,
    ) -> Result<Outcome, String> {
        if args.code.trim().is_empty() {
            return Err("code is empty; pass the Python script to run".to_owned());
        }
        let timeout = match args.timeout {
            Some(0) => return Err("timeout must be at least 1 second".to_owned()),
            Some(secs) => Duration::from_secs(secs).min(self.config.timeout),
            None => self.config.timeout,
        };
        let registry = ctx.registry.clone().ok_or(
            "execute_code needs the agent's tool registry; it runs only inside the agent loop",
        )?;
        let cwd = ctx.state.cwd();
        if !cwd.is_dir() {
            return Err(format!(
                "the working directory {} does not exist; cd somewhere that exists with terminal first",
                cwd.display()
            ));
        }
        let python = self.interpreter(&cwd).await?;
        let allowed = allowed_tools(&registry);
        let specs: Vec<_> = allowed
            .iter()
            .filter_map(|name| registry.get(name).map(|tool| tool.spec()))
            .collect();
        let (workspace, listener) = Workspace::create(&args.code, &generate_stubs(&specs))?;
        let token = Token::generate()
            .map_err(|err| format!("cannot read /dev/urandom for the run's token: {err}"))?;
        let confinement = self.confinement(ctx, &cwd, workspace.dir())?;
        let env = run_env(
            scrubbed_env(std::env::vars_os(), &ctx.env),
            &workspace.socket,
            token.as_str(),
            workspace.dir(),
        );
        let child = child::spawn(Launch {
            python: &python,
            script: &workspace.script,
            cwd: &cwd,
            env,
            confinement: confinement.as_ref(),
        })
        .map_err(|err| format!("cannot start {}: {err}", python.display()))?;
        let dispatcher = Dispatcher::new(ctx, registry, token, allowed, self.config.max_tool_calls);
        let finished = tokio::select! {
            finished = child::supervise(child, timeout, &ctx.cancel) => finished,
            never = rpc::serve(&listener, &dispatcher) => match never {},
        };
        let run_dir = format!("{}/", workspace.dir().display());
        let mut outcome = summarize(
            finished,
            dispatcher.calls_made(),
            timeout,
            started.elapsed(),
            &run_dir,
        );
        if let Some(confinement) = &confinement {
            outcome.sandbox_note = sandbox_note(&outcome, confinement);
        }
        Ok(outcome)
    }

    /// The real interpreter, probed once per tool (skipping launcher shims).
    async fn interpreter(&self, cwd: &Path) -> Result<PathBuf, String> {
        self.interpreter
            .get_or_try_init(|| async {
                probe_python(&self.config.python, cwd)
                    .await
                    .map(|info| info.executable)
            })
            .await
            .cloned()
            .map_err(|err| err.to_string())
    }

    /// The sandbox of the script: the call's (`ctx.sandbox`, from the
    /// permission layer) or, with `code_execution.landlock`, writes limited
    /// to the working directory. The run directory is writable in both.
    /// Refuses to run unconfined when the kernel cannot enforce it.
    fn confinement(
        &self,
        ctx: &ToolContext,
        cwd: &Path,
        run_dir: &Path,
    ) -> Result<Option<Prepared>, String> {
        if let Some(policy) = &ctx.sandbox {
            return policy.prepare(&[run_dir]).map(Some).map_err(|reason| {
                format!(
                    "the script must run in the sandbox, which this system cannot provide ({reason}). \
                     It did not run, and was not run unconfined; ask the user to allow it outside the sandbox \
                     or to change the permission mode, or use normal tool calls"
                )
            });
        }
        if !self.config.landlock {
            return Ok(None);
        }
        let policy = SandboxPolicy {
            writable_roots: vec![cwd.to_owned()],
            network: true,
        };
        policy.prepare(&[run_dir]).map(Some).map_err(|reason| {
            format!(
                "code_execution.landlock is on but scripts cannot be confined: {reason}. \
                 The script did not run; ask the user to turn landlock off in config.toml or use normal tool calls"
            )
        })
    }
}

/// The `sandbox:` note for a confined script that failed with output that
/// looks like the sandbox stopped it.
fn sandbox_note(outcome: &Outcome, confinement: &Prepared) -> Option<String> {
    if outcome.status != Status::Error {
        return None;
    }
    let text = format!(
        "{}\n{}",
        outcome.output,
        outcome.error.as_deref().unwrap_or_default()
    );
    herald_sandbox::looks_denied(&text, confinement.network()).then(|| {
        format!(
            "sandbox: the script ran confined ({}). If it failed because of that, \
             run that step with terminal and unsandboxed: true to ask the user to run it outside the sandbox.",
            confinement.describe()
        )
    })
}

/// The outcome of a script that ran. `run_dir` is cut from tracebacks so
/// they name `script.py`, not a temp path.
fn summarize(
    finished: Finished,
    calls: u32,
    timeout: Duration,
    elapsed: Duration,
    run_dir: &str,
) -> Outcome {
    let stderr = finished.stderr.replace(run_dir, "");
    let stderr_or = |fallback: String| {
        if stderr.trim().is_empty() {
            fallback
        } else {
            stderr.clone()
        }
    };
    let (status, error) = match finished.ending {
        Ending::Exited(status) if status.success() => (Status::Success, None),
        Ending::Exited(status) => (
            Status::Error,
            Some(stderr_or(format!(
                "the script ended with {status} and printed nothing on stderr"
            ))),
        ),
        Ending::TimedOut => {
            let mut message = format!(
                "the script ran longer than its {} s timeout and was stopped (SIGTERM, then SIGKILL after {} s). \
                 Make it do less per run or pass a larger timeout",
                timeout.as_secs(),
                child::KILL_GRACE.as_secs()
            );
            if !stderr.trim().is_empty() {
                message.push_str("\nstderr:\n");
                message.push_str(&stderr);
            }
            (Status::Timeout, Some(message))
        }
        Ending::Interrupted => (
            Status::Interrupted,
            Some("the user interrupted the turn; the script was killed".to_owned()),
        ),
        Ending::Lost(message) => (Status::Error, Some(message)),
    };
    let stderr = (status == Status::Success && !stderr.trim().is_empty()).then_some(stderr);
    Outcome {
        status,
        output: finished.stdout.render("stdout"),
        stdout: Some(finished.stdout),
        error,
        stderr,
        tool_calls_made: calls,
        duration_seconds: seconds(elapsed),
        sandbox_note: None,
    }
}
