//! The `terminal` tool: runs a bash command in the agent's persistent
//! working directory, or starts it in the background.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use herald_sandbox::Prepared;

use super::shell::{
    OutputBuffer, exit_code, lock, prepare_sandbox, pump, shell_quote, spawn_bash, terminate,
};
use crate::{
    AgentState, CommandEnd, CommandRequest, ToolContext, ToolError, TypedTool, track_group,
};

/// Default seconds before a foreground command is killed.
const DEFAULT_TIMEOUT_SECS: u64 = 180;
/// Output kept from a foreground command: this much of the head and the tail
/// (the registry cuts it further to the configured limit).
const KEEP_BYTES: usize = 512 * 1024;
/// How long output is still collected after the shell exits (children it
/// left running may hold the pipe open).
const DRAIN: Duration = Duration::from_millis(250);

/// The `terminal` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct Terminal;

/// Arguments of `terminal`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct TerminalArgs {
    /// Bash command line.
    #[schemars(description = "")]
    pub command: String,
    /// Seconds (default 180).
    pub timeout: Option<u64>,
    /// Directory for this call only.
    pub workdir: Option<String>,
    /// Return a process_id at once.
    #[schemars(description = "")]
    pub background: Option<bool>,
    /// Only after a sandbox failure: run unsandboxed (the user approves).
    pub unsandboxed: Option<bool>,
}

impl TypedTool for Terminal {
    type Args = TerminalArgs;
    const NAME: &'static str = "terminal";
    const TOOLSET: &'static str = "terminal";
    const DESCRIPTION: &'static str = "Run a bash command; cd persists. Returns {output, exit_code}, stdout and stderr \
interleaved; stdin is empty (no interactive programs). Servers, watchers, long jobs: background=true, then process. Prefer \
read_file/search_files/patch over cat/grep/sed.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: TerminalArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        if args.command.trim().is_empty() {
            return Err(ToolError::new(
                "command is empty; pass the shell command to run",
            ));
        }
        let (dir, note) = working_dir(&ctx.state, args.workdir.as_deref()).await?;
        // `unsandboxed` is for the permission layer: it asks the user and
        // then runs the call without `ctx.sandbox`. Here only that counts.
        let sandbox = prepare_sandbox(ctx, &[])?;
        if args.background.unwrap_or(false) {
            let proc = ctx.state.processes.spawn_journaled(
                &args.command,
                &dir,
                ctx.state.process_journal(),
                sandbox.as_ref(),
                &ctx.env,
            )?;
            let mut result = json!({ "process_id": proc.id, "pid": proc.pid });
            add_note(&mut result, note);
            return Ok(result.to_string());
        }
        let timeout = args.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS);
        if timeout == 0 {
            return Err(ToolError::new(
                "timeout must be at least 1 second (default 180)",
            ));
        }
        // A command the sandbox confines runs here, where the sandbox is;
        // an unconfined one runs where the user watches, when offered.
        if sandbox.is_none()
            && let Some(commands) = ctx.state.command_backend()
        {
            let request = CommandRequest {
                command: args.command,
                cwd: dir,
                timeout_secs: timeout,
                output_limit: KEEP_BYTES,
                call_id: ctx.call_id.clone(),
            };
            let ran = commands
                .run(request, &ctx.cancel)
                .await
                .map_err(|e| ToolError::new(format!("could not run the command: {e}")))?;
            let mut output = ran.output;
            if ran.truncated {
                output.insert_str(0, "[earlier output was cut]\n");
            }
            let outcome = match ran.end {
                CommandEnd::Exited(code) => Outcome::Exited(code),
                CommandEnd::TimedOut => Outcome::TimedOut,
                CommandEnd::Cancelled => Outcome::Cancelled,
            };
            return ended(outcome, output, timeout).map(|mut result| {
                add_note(&mut result, note);
                result.to_string()
            });
        }
        let persist = args.workdir.is_none();
        let sandbox_note = |result: &Value| {
            let failed = result["exit_code"].as_i64() != Some(0);
            let output = result["output"].as_str().unwrap_or_default();
            sandbox.as_ref().filter(|_| failed)?.denial_note(output)
        };
        run_foreground(&args.command, &dir, timeout, persist, ctx, sandbox.as_ref())
            .await
            .map(|mut result| {
                add_note(&mut result, note);
                let mut text = result.to_string();
                if let Some(sandbox_note) = sandbox_note(&result) {
                    text.push('\n');
                    text.push_str(&sandbox_note);
                }
                text
            })
    }
}

/// Start of the name of the file a foreground command's final directory is
/// written to: `herald-cwd-<pid>-`, so files of dead runs can be found.
fn cwd_file_prefix(pid: u32) -> String {
    format!("herald-cwd-{pid}-")
}

/// Deletes the directory-tracking files in `dir` (the temp directory) that
/// herald processes no longer running left behind (killed mid-command).
/// Returns how many were removed.
pub fn remove_stale_cwd_files(dir: &Path) -> usize {
    crate::remove_dead_process_entries(dir, "herald-cwd-")
}

fn add_note(result: &mut Value, note: Option<String>) {
    if let (Some(note), Some(obj)) = (note, result.as_object_mut()) {
        obj.insert("note".into(), json!(note));
    }
}

/// The directory a call runs in: `workdir` (resolved against the current
/// directory) or the current directory. A current directory that was deleted
/// is replaced by its nearest existing ancestor, with a note.
async fn working_dir(
    state: &AgentState,
    workdir: Option<&str>,
) -> Result<(PathBuf, Option<String>), ToolError> {
    if let Some(workdir) = workdir {
        let dir = state.resolve(workdir);
        return if is_dir(&dir).await {
            Ok((dir, None))
        } else {
            Err(ToolError::new(format!(
                "workdir '{}' is not an existing directory; omit workdir to use the current directory ({})",
                dir.display(),
                state.cwd().display()
            )))
        };
    }
    let cwd = state.cwd();
    if is_dir(&cwd).await {
        return Ok((cwd, None));
    }
    let mut dir = cwd.as_path();
    while let Some(parent) = dir.parent() {
        dir = parent;
        if is_dir(dir).await {
            break;
        }
    }
    let dir = dir.to_path_buf();
    state.set_cwd(dir.clone());
    let note = format!(
        "the previous directory {} no longer exists; now in {}",
        cwd.display(),
        dir.display()
    );
    Ok((dir, Some(note)))
}

async fn is_dir(path: &Path) -> bool {
    tokio::fs::metadata(path).await.is_ok_and(|m| m.is_dir())
}

enum Outcome {
    Exited(Option<i32>),
    TimedOut,
    Cancelled,
}

async fn run_foreground(
    command: &str,
    dir: &Path,
    timeout: u64,
    persist_cwd: bool,
    ctx: &ToolContext,
    sandbox: Option<&Prepared>,
) -> Result<Value, ToolError> {
    let cwd_file = tokio::task::spawn_blocking(|| {
        tempfile::Builder::new()
            .prefix(&cwd_file_prefix(std::process::id()))
            .tempfile()
            .map(tempfile::NamedTempFile::into_temp_path)
    })
    .await
    .map_err(|e| ToolError::new(format!("could not prepare the command: {e}")))?
    .map_err(|e| ToolError::new(format!("could not create a temporary file: {e}")))?;
    // The EXIT trap records the final directory and keeps the exit status.
    let script = format!(
        "__herald_exit() {{ __herald_status=$?; pwd -P > {} 2>/dev/null; exit $__herald_status; }}\n\
         trap __herald_exit EXIT\n{command}\n",
        shell_quote(&cwd_file.to_string_lossy())
    );
    let spawned = spawn_bash(&script, dir, Stdio::null(), sandbox, &ctx.env)?;
    let (mut child, pid) = (spawned.child, spawned.pid);
    // Known until the command is done, so no exit of herald leaves it running.
    let _group = track_group(pid, false, command, None, ctx.state.process_journal());
    let buffer = Arc::new(Mutex::new(OutputBuffer::new(KEEP_BYTES, KEEP_BYTES)));
    let mut reader = tokio::spawn(pump(spawned.output, Arc::clone(&buffer), || {}));

    let outcome = tokio::select! {
        status = child.wait() => Outcome::Exited(status.ok().map(exit_code)),
        () = tokio::time::sleep(Duration::from_secs(timeout)) => Outcome::TimedOut,
        () = ctx.cancel.cancelled() => Outcome::Cancelled,
    };
    if !matches!(outcome, Outcome::Exited(_)) {
        terminate(&mut child, pid).await;
    }
    if tokio::time::timeout(DRAIN, &mut reader).await.is_err() {
        reader.abort();
    }
    let output = lock(&buffer).text();

    if persist_cwd && let Ok(text) = tokio::fs::read_to_string(&cwd_file).await {
        let new_dir = PathBuf::from(text.trim_end_matches('\n'));
        if new_dir.is_absolute() && is_dir(&new_dir).await {
            ctx.state.set_cwd(new_dir);
        }
    }
    let _ = tokio::task::spawn_blocking(move || drop(cwd_file)).await;
    ended(outcome, output, timeout)
}

/// The tool's answer for a command that ended as `outcome` with `output`.
fn ended(outcome: Outcome, output: String, timeout: u64) -> Result<Value, ToolError> {
    match outcome {
        Outcome::Exited(code) => Ok(json!({ "output": output, "exit_code": code })),
        Outcome::TimedOut => Err(ToolError::new(
            json!({
                "output": output,
                "exit_code": null,
                "error": format!(
                    "command timed out after {timeout}s and was killed with its child processes. \
                     Raise timeout, or use background=true and the process tool for long-running commands."
                ),
            })
            .to_string(),
        )),
        Outcome::Cancelled => Err(ToolError::new(
            json!({
                "output": output,
                "exit_code": null,
                "error": "interrupted: the user cancelled the command and it was killed",
            })
            .to_string(),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Instant;

    use herald_protocol::ToolCall;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::builtin::default_registry;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(AgentState::new(dir.to_path_buf()), CancellationToken::new())
    }

    async fn run(ctx: &ToolContext, command: &str) -> Value {
        let args = TerminalArgs {
            command: command.to_owned(),
            timeout: None,
            workdir: None,
            background: None,
            unsandboxed: None,
        };
        let out = Terminal.run(args, ctx).await.unwrap();
        serde_json::from_str(&out).unwrap()
    }

    #[tokio::test]
    async fn cwd_persists_between_calls() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        let ctx = ctx(tmp.path());
        let first = run(&ctx, "cd sub").await;
        assert_eq!(first["exit_code"], 0);
        let second = run(&ctx, "pwd").await;
        let expected = tmp.path().canonicalize().unwrap().join("sub");
        assert_eq!(
            second["output"].as_str().unwrap().trim(),
            expected.to_str().unwrap()
        );
        assert_eq!(ctx.state.cwd(), expected);
    }

    #[tokio::test]
    async fn exit_codes_are_reported_and_cwd_kept_on_exit() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        let ctx = ctx(tmp.path());
        let result = run(&ctx, "cd d; exit 3").await;
        assert_eq!(result["exit_code"], 3);
        assert!(ctx.state.cwd().ends_with("d"));
        assert_eq!(run(&ctx, "false").await["exit_code"], 1);
        assert_eq!(run(&ctx, "nosuchcommand_xyz").await["exit_code"], 127);
    }

    #[tokio::test]
    async fn stderr_is_interleaved_and_ansi_stripped() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let result = run(
            &ctx,
            "echo one; echo two >&2; echo three; printf '\\033[31mred\\033[0m\\n'",
        )
        .await;
        assert_eq!(result["output"], "one\ntwo\nthree\nred\n");
    }

    #[tokio::test]
    async fn workdir_applies_to_one_call_only() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("w")).unwrap();
        let ctx = ctx(tmp.path());
        let args = TerminalArgs {
            command: "pwd".into(),
            timeout: None,
            workdir: Some("w".into()),
            background: None,
            unsandboxed: None,
        };
        let out: Value = serde_json::from_str(&Terminal.run(args, &ctx).await.unwrap()).unwrap();
        assert!(out["output"].as_str().unwrap().trim().ends_with("/w"));
        assert_eq!(ctx.state.cwd(), tmp.path());
        let args = TerminalArgs {
            command: "pwd".into(),
            timeout: None,
            workdir: Some("missing".into()),
            background: None,
            unsandboxed: None,
        };
        let err = Terminal.run(args, &ctx).await.unwrap_err();
        assert!(err.0.contains("not an existing directory"), "{err}");
    }

    #[tokio::test]
    async fn timeout_kills_the_process_group() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let start = Instant::now();
        let args = TerminalArgs {
            command: "echo started; sleep 30 & sleep 30".into(),
            timeout: Some(1),
            workdir: None,
            background: None,
            unsandboxed: None,
        };
        let err = Terminal.run(args, &ctx).await.unwrap_err();
        assert!(
            start.elapsed() < Duration::from_secs(4),
            "{:?}",
            start.elapsed()
        );
        let value: Value = serde_json::from_str(&err.0).unwrap();
        assert_eq!(value["output"], "started\n");
        assert!(value["exit_code"].is_null());
        assert!(
            value["error"]
                .as_str()
                .unwrap()
                .contains("timed out after 1s")
        );
    }

    #[tokio::test]
    async fn cancellation_interrupts_the_command() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        });
        let start = Instant::now();
        let registry = default_registry(10_000);
        let call = ToolCall {
            id: "c1".into(),
            name: "terminal".into(),
            arguments: r#"{"command": "sleep 30"}"#.into(),
        };
        let result = registry.execute(&call, &ctx).await;
        assert!(result.is_error);
        assert!(result.content.contains("interrupted"), "{}", result.content);
        assert!(start.elapsed() < Duration::from_secs(4));
    }

    #[tokio::test]
    async fn registry_dispatch_and_validation() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let registry = default_registry(10_000);
        let call = ToolCall {
            id: "c1".into(),
            name: "terminal".into(),
            arguments: r#"{"command": "echo hi"}"#.into(),
        };
        let result = registry.execute(&call, &ctx).await;
        assert!(!result.is_error);
        assert_eq!(result.content, r#"{"output":"hi\n","exit_code":0}"#);
        let call = ToolCall {
            id: "c2".into(),
            name: "terminal".into(),
            arguments: r#"{"timeout": 5}"#.into(),
        };
        let result = registry.execute(&call, &ctx).await;
        assert!(result.is_error);
        assert!(
            result
                .content
                .contains("missing required parameter 'command'")
        );
    }

    #[tokio::test]
    async fn deleted_cwd_falls_back_to_an_existing_parent() {
        let tmp = tempfile::tempdir().unwrap();
        let gone = tmp.path().join("gone");
        std::fs::create_dir(&gone).unwrap();
        let ctx = ctx(&gone);
        std::fs::remove_dir(&gone).unwrap();
        let result = run(&ctx, "true").await;
        assert!(
            result["note"]
                .as_str()
                .unwrap()
                .contains("no longer exists")
        );
        assert_eq!(ctx.state.cwd(), tmp.path());
    }
}
