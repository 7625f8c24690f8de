//! `herald-bench mcp`: what MCP servers cost.
//!
//! - Session start with three stdio servers (server-everything twice and
//!   server-filesystem, the real npm packages in `.ci/mcp`): time from
//!   spawning `herald run` to the first model request, cold (a fresh
//!   `$HERALD_HOME`: the session waits for the servers) and warm (the tool
//!   lists of the last start are cached: the servers start in the
//!   background), next to the same run with no server. Target: < 20 ms.
//! - Per-call overhead over stdio: `echo` of server-everything called
//!   through herald's tool registry (validation, permission-free context,
//!   redaction, result mapping) against the same call written as raw
//!   JSON-RPC lines on the server's pipes by this program. Target: the
//!   difference of the medians < 1 ms.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use herald_mcp::{McpServer, McpServerConfig, mcp_tools};
use herald_protocol::ToolCall;
use herald_sandbox::EnvFilter;
use herald_testkit::{Reply, Script, ScriptedServer};
use herald_tools::{AgentState, ToolContext, ToolRegistry};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::ms;
use crate::stats::{median, percentile};

/// Session starts measured per case.
const STARTS: usize = 7;
/// Calls measured per path after warm-up.
const CALLS: usize = 400;

fn server_js(package: &str) -> Result<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/mcp/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    if !path.is_file() {
        bail!(
            "{} is missing: run .ci/install-mcp-servers first",
            path.display()
        );
    }
    Ok(path.canonicalize()?.display().to_string())
}

fn toml_str(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

fn three_servers(dir: &Path) -> Result<String> {
    let everything = toml_str(&server_js("server-everything")?);
    let filesystem = toml_str(&server_js("server-filesystem")?);
    Ok(format!(
        "[mcp_servers.ev]\ncommand = \"node\"\nargs = [{everything}, \"stdio\"]\n\n\
         [mcp_servers.ev2]\ncommand = \"node\"\nargs = [{everything}, \"stdio\"]\n\n\
         [mcp_servers.fs]\ncommand = \"node\"\nargs = [{filesystem}, {}]\n",
        toml_str(&dir.display().to_string())
    ))
}

/// One `herald run`: time from spawn to the first request, and how many
/// tools that request listed.
async fn first_request(herald: &Path, home: &Path, work: &Path) -> Result<(Duration, usize)> {
    let server = ScriptedServer::start(Script::new().responder(|_| Reply::text("ok"))).await?;
    let mut cmd = tokio::process::Command::new(herald);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HERALD_HOME", home)
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "bench")
        .arg("--cwd")
        .arg(work)
        .args(["run", "--json", "hello"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let spawned = Instant::now();
    let status = cmd.status().await.context("cannot start herald")?;
    if !status.success() {
        bail!("herald run failed ({status})");
    }
    let requests = server.requests();
    let first = requests.first().context("herald sent no request")?;
    let tools = first.body["tools"].as_array().map_or(0, Vec::len);
    Ok((first.received_at.duration_since(spawned), tools))
}

async fn session_start_rows(herald: &Path) -> Result<()> {
    let work = tempfile::tempdir()?;
    let config = three_servers(work.path())?;
    let bare_home = tempfile::tempdir()?;
    let mut bare = Vec::new();
    for _ in 0..STARTS {
        bare.push(
            first_request(herald, bare_home.path(), work.path())
                .await?
                .0,
        );
    }
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    let mut tools = (0, 0);
    for _ in 0..STARTS {
        // A fresh home each time: no cached tool list.
        let home = tempfile::tempdir()?;
        std::fs::write(home.path().join("config.toml"), &config)?;
        let (elapsed, listed) = first_request(herald, home.path(), work.path()).await?;
        cold.push(elapsed);
        tools.0 = listed;
    }
    let home = tempfile::tempdir()?;
    std::fs::write(home.path().join("config.toml"), &config)?;
    first_request(herald, home.path(), work.path()).await?;
    for _ in 0..STARTS {
        let (elapsed, listed) = first_request(herald, home.path(), work.path()).await?;
        warm.push(elapsed);
        tools.1 = listed;
    }
    if tools.0 != tools.1 {
        bail!(
            "cold and warm sessions listed different tools ({} vs {})",
            tools.0,
            tools.1
        );
    }
    println!(
        "| first model request, no MCP server (p50 of {STARTS}) | — | {:.2} ms |",
        ms(median(&bare))
    );
    println!(
        "| first model request, 3 stdio MCP servers, tool lists cached from the last start (p50 of {STARTS}; {} tools listed) | < 20 ms | {:.2} ms |",
        tools.1,
        ms(median(&warm))
    );
    println!(
        "| first model request, 3 stdio MCP servers, first start ever (waits for the servers; p50 of {STARTS}) | — | {:.2} ms |",
        ms(median(&cold))
    );
    Ok(())
}

/// A raw JSON-RPC client on server-everything's pipes.
struct RawClient {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
}

impl RawClient {
    async fn start(js: &str) -> Result<Self> {
        let mut child = tokio::process::Command::new("node")
            .args([js, "stdio"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start node")?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut client = Self {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            next_id: 1,
        };
        client
            .request(
                "initialize",
                serde_json::json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"}
                }),
            )
            .await?;
        client
            .send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(client)
    }

    async fn send(&mut self, message: &serde_json::Value) -> Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    async fn request(
        &mut self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .await?;
        while let Some(line) = self.lines.next_line().await? {
            let message: serde_json::Value = serde_json::from_str(&line)?;
            if message["id"] == id {
                return Ok(message);
            }
        }
        bail!("the server closed its output")
    }
}

async fn call_overhead_rows() -> Result<()> {
    let js = server_js("server-everything")?;
    let echo = serde_json::json!({"name": "echo", "arguments": {"message": "bench"}});
    let mut raw = RawClient::start(&js).await?;
    let mut raw_times = Vec::with_capacity(CALLS);
    for i in 0..CALLS + 50 {
        let t0 = Instant::now();
        let answer = raw.request("tools/call", echo.clone()).await?;
        if i >= 50 {
            raw_times.push(t0.elapsed());
        }
        if answer.get("result").is_none() {
            bail!("raw echo failed: {answer}");
        }
    }
    let _ = raw.child.kill().await;

    let config = McpServerConfig::stdio("node", [js.clone(), "stdio".to_owned()]);
    let server = McpServer::connect("ev", &config, &EnvFilter::default())
        .await
        .context("cannot connect to server-everything")?;
    let mut registry = ToolRegistry::new(50_000);
    for tool in mcp_tools(&server) {
        registry.register(tool);
    }
    let registry = Arc::new(registry);
    let mut ctx = ToolContext::new(
        AgentState::new(std::env::temp_dir()),
        CancellationToken::new(),
    );
    ctx.registry = Some(Arc::clone(&registry));
    let call = ToolCall {
        id: "call_1".to_owned(),
        name: "mcp__ev__echo".to_owned(),
        arguments: r#"{"message":"bench"}"#.to_owned(),
    };
    let mut herald_times = Vec::with_capacity(CALLS);
    for i in 0..CALLS + 50 {
        let t0 = Instant::now();
        let result = registry.execute(&call, &ctx).await;
        if i >= 50 {
            herald_times.push(t0.elapsed());
        }
        if result.is_error {
            bail!("echo through herald failed: {}", result.content);
        }
    }
    server.shutdown().await;
    let raw_p50 = median(&raw_times);
    let herald_p50 = median(&herald_times);
    println!(
        "| MCP call over stdio, raw JSON-RPC round trip to server-everything `echo` (p50 / p95 of {CALLS}) | — | {:.3} / {:.3} ms |",
        ms(raw_p50),
        ms(percentile(&raw_times, 0.95))
    );
    println!(
        "| same call through herald's registry and MCP client (p50 / p95) | — | {:.3} / {:.3} ms |",
        ms(herald_p50),
        ms(percentile(&herald_times, 0.95))
    );
    println!(
        "| per-call overhead of herald over the raw round trip (difference of p50s) | < 1 ms | {:.3} ms |",
        ms(herald_p50.saturating_sub(raw_p50))
    );
    Ok(())
}

/// Prints the MCP rows.
pub(crate) fn run(herald: &Path) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(session_start_rows(herald))?;
    runtime.block_on(call_overhead_rows())?;
    Ok(())
}
