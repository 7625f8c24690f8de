//! `herald-bench prompt`: the size of what every request repeats — the
//! default system prompt plus every default tool schema, exactly as the
//! binary sends them.
//!
//! A fresh session is started in an empty working directory (a repository
//! root, so no context file from a parent directory leaks in) with an empty
//! `$HERALD_HOME`, and the first request the scripted server receives is
//! measured on both wires, with a per-tool breakdown so the biggest schemas
//! are easy to find.

use std::path::Path;

use anyhow::{Context, Result, bail};
use herald_testkit::{Reply, Script, ScriptedServer};
use serde_json::Value;

/// What one wire's first request repeats on every turn.
struct PromptSize {
    system_bytes: usize,
    tools_bytes: usize,
    /// `(tool name, bytes of its encoded schema)`, largest first.
    per_tool: Vec<(String, usize)>,
}

impl PromptSize {
    fn total(&self) -> usize {
        self.system_bytes + self.tools_bytes
    }
}

async fn measure(herald: &Path, anthropic: bool) -> Result<PromptSize> {
    let server = ScriptedServer::start(Script::new().responder(|_| Reply::text("ok"))).await?;
    let home = tempfile::tempdir()?;
    let work = tempfile::tempdir()?;
    std::fs::create_dir(work.path().join(".git"))?;
    let mut cmd = std::process::Command::new(herald);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HERALD_HOME", home.path())
        .arg("--cwd")
        .arg(work.path())
        .args(["run", "--json", "hello"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if anthropic {
        cmd.env("HERALD_PROVIDER", "anthropic")
            .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
            .env("ANTHROPIC_API_KEY", "bench");
    } else {
        cmd.env("OPENAI_BASE_URL", server.openai_base_url())
            .env("OPENAI_API_KEY", "bench");
    }
    let status = tokio::task::spawn_blocking(move || cmd.status())
        .await
        .context("the herald process waiter stopped")?
        .context("cannot start herald")?;
    if !status.success() {
        bail!("herald run failed while measuring the prompt ({status})");
    }
    let requests = server.requests();
    let first = requests.first().context("herald sent no request")?;
    let system_bytes = if anthropic {
        first.body["system"].as_array().map_or(0, |blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .map(str::len)
                .sum()
        })
    } else {
        first.body["messages"][0]["content"]
            .as_str()
            .map_or(0, str::len)
    };
    let tools = first.body["tools"].as_array().cloned().unwrap_or_default();
    let mut per_tool: Vec<(String, usize)> = tools
        .iter()
        .map(|tool| {
            let name = tool
                .pointer("/function/name")
                .or_else(|| tool.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned();
            (name, tool.to_string().len())
        })
        .collect();
    per_tool.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(PromptSize {
        system_bytes,
        tools_bytes: first.body["tools"].to_string().len(),
        per_tool,
    })
}

/// Prints the prompt-size rows for both wires and, with `breakdown`, the
/// size of each tool schema (it would break the table of a full run).
pub(crate) fn run(herald: &Path, breakdown: bool) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let openai = runtime.block_on(measure(herald, false))?;
    let anthropic = runtime.block_on(measure(herald, true))?;
    for (name, size) in [("OpenAI", &openai), ("Anthropic", &anthropic)] {
        println!(
            "| default system prompt + {} tool schemas, {name} encoding | < 4,000 tokens | {} + {} = {} bytes ≈ {} tokens |",
            size.per_tool.len(),
            size.system_bytes,
            size.tools_bytes,
            size.total(),
            size.total() / 4
        );
    }
    if !breakdown {
        return Ok(());
    }
    println!();
    println!("Tool schemas, OpenAI encoding, largest first (bytes ≈ tokens):");
    println!();
    for (tool, bytes) in &openai.per_tool {
        println!("- `{tool}`: {bytes} ≈ {}", bytes / 4);
    }
    println!();
    Ok(())
}
