//! The `process` tool: list, poll, read,/// What to do (see the tool description).for, kill and write to the
//! background processes started by `terminal(background=true)`.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::process::{BackgroundProcess, WaitOutcome};
use crate::{ToolContext, ToolError, TypedTool};

/// Default seconds `wait` blocks.
const DEFAULT_WAIT_SECS: u64 = 30;
/// Longest command text shown by `list`.
const COMMAND_CHARS: usize = 200;

/// The `process` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessTool;

/// What to do with background processes.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[schemars(description = "")]
#[serde(rename_all = "lowercase")]
pub enum ProcessAction {
    List,
    Poll,
    Log,
    Wait,
    Kill,
    Write,
}

/// Arguments of `process`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct ProcessArgs {
    /// list | poll (status + new output) | log (all output) | wait | kill | write (stdin)
    #[schemars(description = "")]
    pub action: ProcessAction,
    /// e.g. proc_1 (all but list).
    pub process_id: Option<String>,
    /// write: end with "\n" for a line.
    pub input: Option<String>,
    /// wait: seconds (default 30).
    pub timeout: Option<u64>,
}

impl TypedTool for ProcessTool {
    type Args = ProcessArgs;
    const NAME: &'static str = "process";
    const TOOLSET: &'static str = "terminal";
    const DESCRIPTION: &'static str = "Manage terminal(background=true) processes: list; poll (status, new output); log (all output); \
wait (until exit or timeout); kill (with its children); write (stdin).";
    const READ_ONLY: bool = false;

    async fn run(&self, args: ProcessArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let table = &ctx.state.processes;
        if let ProcessAction::List = args.action {
            return Ok(list(&table.list()));
        }
        let name = action_name(args.action);
        let Some(id) = args.process_id.as_deref().filter(|s| !s.trim().is_empty()) else {
            return Err(ToolError::new(format!(
                "process_id is required for action '{name}'. Known processes: {}",
                table.known_ids()
            )));
        };
        let Some(proc) = table.get(id) else {
            return Err(ToolError::new(format!(
                "unknown process_id '{id}'. Known processes: {}",
                table.known_ids()
            )));
        };
        match args.action {
            ProcessAction::List => Ok(list(&table.list())),
            ProcessAction::Poll => {
                let output = proc.take_new_output();
                Ok(report(&proc, Some(output), None))
            }
            ProcessAction::Log => Ok(report(&proc, Some(proc.log()), None)),
            ProcessAction::Wait => {
                let secs = args.timeout.unwrap_or(DEFAULT_WAIT_SECS);
                match proc.wait(Duration::from_secs(secs), &ctx.cancel).await {
                    WaitOutcome::Exited => Ok(report(&proc, Some(proc.take_new_output()), None)),
                    WaitOutcome::TimedOut => {
                        let note = format!("still running after waiting {secs}s");
                        Ok(report(&proc, Some(proc.take_new_output()), Some(&note)))
                    }
                    WaitOutcome::Cancelled => Err(ToolError::new(format!(
                        "interrupted while waiting for {}; it is still running",
                        proc.id
                    ))),
                }
            }
            ProcessAction::Kill => {
                let note = if proc.exit().is_some() {
                    "had already exited"
                } else {
                    proc.kill().await;
                    "killed"
                };
                Ok(report(&proc, None, Some(note)))
            }
            ProcessAction::Write => {
                let Some(input) = args.input else {
                    return Err(ToolError::new(
                        "input is required for action 'write' (the text to send to stdin)",
                    ));
                };
                proc.write(&input).await?;
                Ok(report(
                    &proc,
                    None,
                    Some(&format!("wrote {} bytes", input.len())),
                ))
            }
        }
    }
}

fn action_name(action: ProcessAction) -> &'static str {
    match action {
        ProcessAction::List => "list",
        ProcessAction::Poll => "poll",
        ProcessAction::Log => "log",
        ProcessAction::Wait => "wait",
        ProcessAction::Kill => "kill",
        ProcessAction::Write => "write",
    }
}

/// Status fields shared by every report.
fn status(proc: &BackgroundProcess) -> serde_json::Map<String, Value> {
    let mut map = serde_json::Map::new();
    map.insert("process_id".into(), json!(proc.id));
    match proc.exit() {
        None => {
            map.insert("status".into(), json!("running"));
        }
        Some(exit) => {
            map.insert("status".into(), json!("exited"));
            map.insert("exit_code".into(), json!(exit.code));
        }
    }
    let runtime = (proc.runtime().as_secs_f64() * 10.0).round() / 10.0;
    map.insert("runtime_s".into(), json!(runtime));
    map
}

/// A process's status with `output` and `note`. A confined process that
/// failed on what looks like the sandbox gets a `sandbox:` line after the
/// JSON.
fn report(proc: &BackgroundProcess, output: Option<String>, note: Option<&str>) -> String {
    let mut map = status(proc);
    if let Some(note) = note {
        map.insert("note".into(), json!(note));
    }
    let sandbox_note = output.as_deref().and_then(|o| proc.sandbox_note(o));
    if let Some(output) = output {
        map.insert("output".into(), json!(output));
    }
    let mut text = Value::Object(map).to_string();
    if let Some(sandbox_note) = sandbox_note {
        text.push('\n');
        text.push_str(&sandbox_note);
    }
    text
}

fn list(procs: &[Arc<BackgroundProcess>]) -> String {
    if procs.is_empty() {
        return "No background processes. Start one with terminal(background=true).".to_owned();
    }
    let items: Vec<Value> = procs
        .iter()
        .map(|p| {
            let mut map = status(p);
            map.insert("pid".into(), json!(p.pid));
            let command: String = p.command.chars().take(COMMAND_CHARS).collect();
            map.insert("command".into(), json!(command));
            Value::Object(map)
        })
        .collect();
    json!({ "processes": items }).to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;
    use std::time::Instant;

    use herald_protocol::ToolCall;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::builtin::default_registry;
    use crate::{AgentState, ToolRegistry, ToolResult};

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(AgentState::new(dir.to_path_buf()), CancellationToken::new())
    }

    async fn call(
        registry: &ToolRegistry,
        ctx: &ToolContext,
        name: &str,
        args: Value,
    ) -> ToolResult {
        let call = ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args.to_string(),
        };
        registry.execute(&call, ctx).await
    }

    async fn start(registry: &ToolRegistry, ctx: &ToolContext, command: &str) -> String {
        let result = call(
            registry,
            ctx,
            "terminal",
            json!({"command": command, "background": true}),
        )
        .await;
        assert!(!result.is_error, "{}", result.content);
        let value: Value = serde_json::from_str(&result.content).unwrap();
        assert!(value["pid"].as_u64().unwrap() > 0);
        value["process_id"].as_str().unwrap().to_owned()
    }

    fn parse(result: &ToolResult) -> Value {
        assert!(!result.is_error, "{}", result.content);
        serde_json::from_str(&result.content).unwrap()
    }

    #[tokio::test]
    async fn background_process_can_be_waited_for_and_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let registry = default_registry(10_000);
        let id = start(
            &registry,
            &ctx,
            "echo hi; echo err >&2; sleep 0.2; echo bye; exit 4",
        )
        .await;
        assert_eq!(id, "proc_1");
        let waited = parse(
            &call(
                &registry,
                &ctx,
                "process",
                json!({"action": "wait", "process_id": id}),
            )
            .await,
        );
        assert_eq!(waited["status"], "exited");
        assert_eq!(waited["exit_code"], 4);
        assert_eq!(waited["output"], "hi\nerr\nbye\n");
        // Everything was reported by wait; poll has nothing new, log has all.
        let polled = parse(
            &call(
                &registry,
                &ctx,
                "process",
                json!({"action": "poll", "process_id": "proc_1"}),
            )
            .await,
        );
        assert_eq!(polled["output"], "");
        let log = parse(
            &call(
                &registry,
                &ctx,
                "process",
                json!({"action": "log", "process_id": "1"}),
            )
            .await,
        );
        assert_eq!(log["output"], "hi\nerr\nbye\n");
        let list = parse(&call(&registry, &ctx, "process", json!({"action": "list"})).await);
        let procs = list["processes"].as_array().unwrap();
        assert_eq!(procs.len(), 1);
        assert_eq!(procs[0]["process_id"], "proc_1");
        assert_eq!(procs[0]["status"], "exited");
        assert!(procs[0]["command"].as_str().unwrap().starts_with("echo hi"));
    }

    #[tokio::test]
    async fn write_poll_and_kill_an_interactive_process() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let registry = default_registry(10_000);
        let id = start(&registry, &ctx, "cat").await;
        let written = call(
            &registry,
            &ctx,
            "process",
            json!({"action": "write", "process_id": id, "input": "hello\n"}),
        )
        .await;
        assert!(!written.is_error, "{}", written.content);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = String::new();
        while !seen.contains("hello") && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let polled = parse(
                &call(
                    &registry,
                    &ctx,
                    "process",
                    json!({"action": "poll", "process_id": id}),
                )
                .await,
            );
            assert_eq!(polled["status"], "running");
            seen.push_str(polled["output"].as_str().unwrap());
        }
        assert_eq!(seen, "hello\n");
        let killed = parse(
            &call(
                &registry,
                &ctx,
                "process",
                json!({"action": "kill", "process_id": id}),
            )
            .await,
        );
        assert_eq!(killed["status"], "exited");
        assert_eq!(killed["note"], "killed");
        let again = call(
            &registry,
            &ctx,
            "process",
            json!({"action": "write", "process_id": id, "input": "x"}),
        )
        .await;
        assert!(again.is_error);
        assert!(again.content.contains("has exited"), "{}", again.content);
    }

    #[tokio::test]
    async fn wait_times_out_and_returns_on_cancel() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let registry = default_registry(10_000);
        let id = start(&registry, &ctx, "sleep 30").await;
        let start_at = Instant::now();
        let waited = parse(
            &call(
                &registry,
                &ctx,
                "process",
                json!({"action": "wait", "process_id": id, "timeout": 1}),
            )
            .await,
        );
        assert!(start_at.elapsed() < Duration::from_secs(3));
        assert_eq!(waited["status"], "running");
        assert!(waited["note"].as_str().unwrap().contains("still running"));
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        });
        let result = call(
            &registry,
            &ctx,
            "process",
            json!({"action": "wait", "process_id": id}),
        )
        .await;
        assert!(result.is_error);
        assert!(result.content.contains("interrupted"), "{}", result.content);
        assert!(start_at.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn missing_and_unknown_ids_list_known_processes() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let registry = default_registry(10_000);
        let result = call(&registry, &ctx, "process", json!({"action": "poll"})).await;
        assert!(result.is_error);
        assert!(
            result
                .content
                .contains("process_id is required for action 'poll'"),
            "{}",
            result.content
        );
        assert!(result.content.contains("none"), "{}", result.content);
        let result = call(&registry, &ctx, "process", json!({"action": "list"})).await;
        assert!(result.content.starts_with("No background processes"));
        start(&registry, &ctx, "true").await;
        let result = call(
            &registry,
            &ctx,
            "process",
            json!({"action": "kill", "process_id": "proc_9"}),
        )
        .await;
        assert!(result.is_error);
        assert!(
            result.content.contains("unknown process_id 'proc_9'"),
            "{}",
            result.content
        );
        assert!(
            result.content.contains("Known processes: proc_1"),
            "{}",
            result.content
        );
        let result = call(
            &registry,
            &ctx,
            "process",
            json!({"action": "stop", "process_id": "proc_1"}),
        )
        .await;
        assert!(result.is_error);
        assert!(
            result.content.contains("'action' must be one of"),
            "{}",
            result.content
        );
    }

    #[tokio::test]
    async fn dropping_the_table_kills_running_processes() {
        let tmp = tempfile::tempdir().unwrap();
        let state = AgentState::new(tmp.path().to_path_buf());
        let proc = state.processes.spawn("sleep 30", tmp.path()).unwrap();
        let pid = nix::unistd::Pid::from_raw(i32::try_from(proc.pid).unwrap());
        drop(state);
        let rx_done = proc
            .wait(Duration::from_secs(5), &CancellationToken::new())
            .await;
        assert_eq!(rx_done, WaitOutcome::Exited);
        assert!(nix::sys::signal::killpg(pid, None).is_err());
    }
}
