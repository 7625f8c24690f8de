//! Shared harness for driving the real `herald` binary against the scripted server.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod clocked;
pub mod pg;

use std::path::PathBuf;
use std::process::Output;

use herald_testkit::{Script, ScriptedServer};
use serde_json::Value;
use tempfile::TempDir;

/// Which wire API a run should use.
#[derive(Clone, Copy, Debug)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

pub struct Harness {
    pub server: ScriptedServer,
    pub home: TempDir,
    pub work: TempDir,
}

impl Harness {
    pub async fn new(script: Script) -> Self {
        let server = ScriptedServer::start(script).await.expect("start server");
        Self {
            server,
            home: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        }
    }

    /// The operations herald processes of this home submitted to their
    /// sessions, oldest first, as the runtime logs each one
    /// (`operation submitted ... op="user_turn"`): `(op, submission id)`.
    pub fn submitted_ops(&self) -> Vec<(String, String)> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.home.path().join("logs"))
            .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        let field = |line: &str, name: &str| -> Option<String> {
            let start = line.find(&format!("{name}="))? + name.len() + 1;
            let rest = line[start..].trim_start_matches('"');
            let end = rest.find(['"', ' ']).unwrap_or(rest.len());
            Some(rest[..end].to_owned())
        };
        files
            .iter()
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .flat_map(|text| {
                text.lines()
                    .filter(|line| line.contains("operation submitted"))
                    .filter_map(|line| Some((field(line, "op")?, field(line, "submission_id")?)))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Just the kinds of [`Harness::submitted_ops`].
    pub fn submitted_op_kinds(&self) -> Vec<String> {
        self.submitted_ops().into_iter().map(|(op, _)| op).collect()
    }

    /// Every recorded request of the conversations whose first user message
    /// contains `needle`, oldest first.
    pub fn requests_of(&self, needle: &str) -> Vec<herald_testkit::RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.conversation.contains(needle))
            .collect()
    }

    pub fn work_path(&self) -> PathBuf {
        self.work.path().canonicalize().unwrap()
    }

    /// Writes `$HERALD_HOME/config.toml`.
    pub fn config(&self, text: &str) {
        std::fs::write(self.home.path().join("config.toml"), text).unwrap();
    }

    /// A `herald` command with a clean environment pointing at the server.
    pub fn command(&self, wire: Wire) -> tokio::process::Command {
        let mut cmd = self.bare_command();
        let api = match wire {
            Wire::OpenAi => herald_testkit::Api::OpenAi,
            Wire::Anthropic => herald_testkit::Api::Anthropic,
        };
        cmd.envs(self.server.provider_env(api));
        cmd
    }

    /// A `herald` command with no provider variables at all.
    pub fn bare_command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(herald_bin());
        for (key, _) in std::env::vars() {
            if key.starts_with("OPENAI_")
                || key.starts_with("ANTHROPIC_")
                || key.starts_with("HERALD_")
            {
                cmd.env_remove(key);
            }
        }
        cmd.env("HERALD_HOME", self.home.path())
            .arg("--cwd")
            .arg(self.work.path())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// Runs `herald ARGS` without provider variables (a `sessions` or
    /// `usage` command, say), checks it succeeded, and parses its stdout as
    /// one JSON value.
    pub async fn cli_json(&self, args: &[&str]) -> Value {
        let output = self.bare_command().args(args).output().await.unwrap();
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// Runs `herald run --json PROMPT` and returns the output and parsed events.
    pub async fn run_json(&self, wire: Wire, extra: &[&str], prompt: &str) -> (Output, Vec<Value>) {
        let mut cmd = self.command(wire);
        cmd.arg("run").arg("--json").args(extra).arg(prompt);
        let output = cmd.output().await.expect("run herald");
        let events = parse_events(&output.stdout);
        (output, events)
    }
}

impl Harness {
    /// `herald ARGS` (the interactive session unless ARGS name a command)
    /// in a `rows`×`cols` pseudo-terminal, pointed at the scripted server
    /// with none of the caller's provider or herald variables.
    pub fn tui(&self, args: &[&str], rows: u16, cols: u16) -> herald_testkit::pty::PtySession {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_herald"));
        for (key, _) in std::env::vars() {
            if key.starts_with("OPENAI_")
                || key.starts_with("ANTHROPIC_")
                || key.starts_with("HERALD_")
            {
                command.env_remove(key);
            }
        }
        command
            .env("HERALD_HOME", self.home.path())
            .env("OPENAI_BASE_URL", self.server.openai_base_url())
            .env("OPENAI_API_KEY", "sk-test-openai")
            .env("HERALD_MODEL", "gpt-4.1-mini")
            .arg("--cwd")
            .arg(self.work.path())
            .args(args);
        herald_testkit::pty::PtySession::spawn(command, rows, cols).unwrap()
    }
}

pub fn parse_events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad event line {l:?}: {e}")))
        .collect()
}

pub fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

pub fn last(events: &[Value]) -> &Value {
    events.last().expect("at least one event")
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The tool result messages (text) of the last recorded request, OpenAI wire.
pub fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A `herald run --json` still running, read line by line.
pub struct LiveRun {
    pub child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    /// Every event line read so far.
    pub seen: Vec<String>,
}

impl LiveRun {
    /// Starts `herald run --json PROMPT` and reads events until one whose
    /// `type` is `event_type` (which is kept in `seen`).
    pub async fn until(h: &Harness, wire: Wire, prompt: &str, event_type: &str) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut cmd = h.command(wire);
        cmd.args(["run", "--json", prompt])
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut run = Self {
            child,
            lines: tokio::io::BufReader::new(stdout).lines(),
            seen: Vec::new(),
        };
        let marker = format!("\"type\":\"{event_type}\"");
        while let Some(line) = run.lines.next_line().await.unwrap() {
            let found = line.contains(&marker);
            run.seen.push(line);
            if found {
                return run;
            }
        }
        panic!("herald ended before a {event_type} event: {:?}", run.seen);
    }

    /// The last event read.
    pub fn last_event(&self) -> Value {
        serde_json::from_str(self.seen.last().unwrap()).unwrap()
    }

    /// Sends SIGINT, as Ctrl-C does.
    pub fn interrupt(&self) {
        let pid = self.child.id().unwrap() as i32;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
    }

    /// Reads the remaining events and waits for the exit (at most 30 s: a
    /// herald that does not exit, or a leftover process holding its stdout,
    /// fails the test). Asserts the herald process is gone afterwards.
    pub async fn finish(mut self) -> (std::process::ExitStatus, Vec<Value>) {
        let pid = self.child.id().unwrap() as i32;
        let rest = async {
            while let Some(line) = self.lines.next_line().await.unwrap() {
                self.seen.push(line);
            }
            self.child.wait().await.unwrap()
        };
        let status = tokio::time::timeout(std::time::Duration::from_secs(30), rest)
            .await
            .unwrap_or_else(|_| panic!("herald (pid {pid}) did not exit within 30 s"));
        assert_gone(&[pid], "the herald process").await;
        (status, parse_events(self.seen.join("\n").as_bytes()))
    }
}

/// A `terminal` command that writes its shell's pid and the pid of a `sleep`
/// it starts to `file` (relative to the working directory), then waits: both
/// must be gone once herald stops the command.
pub fn sleeper_command(file: &str) -> String {
    format!("echo $$ > {file}.tmp; sleep 1000 & echo $! >> {file}.tmp; mv {file}.tmp {file}; wait")
}

impl Harness {
    /// Waits (at most 20 s) until the [`sleeper_command`] writing `file` has
    /// recorded both its pids, and returns them.
    pub async fn sleeper_pids(&self, file: &str) -> Vec<i32> {
        let path = self.work_path().join(file);
        let t0 = std::time::Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(&path) {
                let pids: Vec<i32> = text.lines().map(|l| l.trim().parse().unwrap()).collect();
                assert_eq!(pids.len(), 2, "{text:?}");
                return pids;
            }
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(20),
                "the sleeper command never wrote {}",
                path.display()
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

/// The `herald` binary the harness runs: the test build's, or the one
/// `HERALD_BENCH_BIN` names (the benchmarks measure a release binary so).
pub fn herald_bin() -> PathBuf {
    std::env::var_os("HERALD_BENCH_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_herald")),
        PathBuf::from,
    )
}

/// SIGKILLs whichever of `pids` still run: the [`sleeper_command`]s of a
/// test that killed herald with SIGKILL (nothing stopped them) must not
/// outlive it.
pub fn kill_leftovers(pids: &[i32]) {
    for &pid in pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Asserts every pid in `pids` is gone within 5 s (see
/// [`herald_testkit::assert_gone_within`]).
pub async fn assert_gone(pids: &[i32], what: &str) {
    herald_testkit::assert_gone_within(pids, what, std::time::Duration::from_secs(5)).await;
}

/// The model's `agent_wait` call for one agent (60 s at most: the wait ends
/// as soon as the agent finishes).
pub fn wait_for_agent(id: &str) -> herald_testkit::Reply {
    herald_testkit::Reply::tool(
        "agent_wait",
        serde_json::json!({"agent_ids": [id], "timeout_seconds": 60}),
    )
}

/// The ids a `delegate_task(background=true)` result dispatched.
pub fn dispatched_ids(view: &herald_testkit::RequestView) -> Vec<String> {
    view.messages
        .iter()
        .flat_map(|m| m.tool_results.iter())
        .find_map(|(_, content)| {
            let value: Value = serde_json::from_str(content.split("\n\n").next()?).ok()?;
            (value["status"] == "dispatched").then(|| {
                value["agent_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// `git args` in `dir`, which must succeed; its trimmed output.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The model a recorded request asked for.
pub fn model_of(request: &herald_testkit::RecordedRequest) -> String {
    herald_testkit::RequestView::from_body(request.api, &request.body)
        .unwrap()
        .model
}
