//! `herald mcp list|test|approve`: start servers to see whether they work
//! and what they offer, and approve a project's `.mcp.json`.

use std::collections::BTreeMap;

use herald_core::{Settings, load_permission_setup, session_servers};
use herald_mcp::{McpServer, McpServerConfig, ProjectApprovals};
use herald_protocol::{one_line, terminal_safe};
use serde_json::json;

use crate::args::CommonArgs;
use crate::{CliError, Exit, setup};

/// Settings for commands that never call the model (no key needed).
fn settings(common: &CommonArgs) -> Result<Settings, CliError> {
    let env = setup::environment();
    let (home, path) = setup::config_location(common, &env);
    let config = crate::config_cmd::load(&path)?;
    Settings::resolve_without_credentials(&config, &path, home, &env, &setup::overrides(common))
        .map_err(CliError::usage)
}

/// Where a server came from, for listings.
fn origin(settings: &Settings, name: &str) -> &'static str {
    if settings.mcp_servers.contains_key(name) {
        "config"
    } else {
        "project"
    }
}

fn describe(config: &McpServerConfig) -> String {
    match (&config.url, &config.command) {
        (Some(url), _) => url.clone(),
        (None, Some(command)) => {
            let mut text = command.clone();
            for arg in &config.args {
                text.push(' ');
                text.push_str(arg);
            }
            text
        }
        (None, None) => String::new(),
    }
}

/// One server's line of `herald mcp list`.
struct Row {
    name: String,
    origin: &'static str,
    target: String,
    status: String,
    tools: usize,
    schema_tokens: usize,
    message: Option<String>,
}

impl Row {
    fn to_json(&self) -> serde_json::Value {
        json!({
            "name": self.name,
            "origin": self.origin,
            "target": self.target,
            "status": self.status,
            "tools": self.tools,
            "schema_tokens": self.schema_tokens,
            "message": self.message,
        })
    }
}

async fn connect(
    name: &str,
    config: &McpServerConfig,
    env: &herald_sandbox::EnvFilter,
) -> Result<std::sync::Arc<McpServer>, String> {
    McpServer::connect(name, config, env)
        .await
        .map_err(|err| err.to_string())
}

pub(crate) async fn list(common: &CommonArgs, json: bool) -> Result<Exit, CliError> {
    let settings = settings(common)?;
    let env = load_permission_setup(&settings)
        .map_err(|err| CliError::usage(anyhow::anyhow!(err)))?
        .env;
    let started = session_servers(&settings);
    let mut all: BTreeMap<String, (McpServerConfig, Option<&'static str>)> = started
        .iter()
        .map(|(name, config)| (name.clone(), (config.clone(), None)))
        .collect();
    if let Some(project) = settings.project_mcp.as_ref().filter(|p| !p.approved) {
        for (name, config) in &project.servers.servers {
            all.entry(name.clone())
                .or_insert_with(|| (config.clone(), Some("needs approval")));
        }
    }
    let rows = futures_util::future::join_all(all.iter().map(|(name, (config, held))| {
        let env = &env;
        let settings = &settings;
        async move {
            let mut row = Row {
                name: name.clone(),
                origin: origin(settings, name),
                target: describe(config),
                status: String::new(),
                tools: 0,
                schema_tokens: 0,
                message: None,
            };
            if let Some(held) = held {
                row.status = (*held).to_owned();
                row.message = Some("run `herald mcp approve` to let it start".to_owned());
            } else if !config.enabled {
                row.status = "disabled".to_owned();
            } else {
                match connect(name, config, env).await {
                    Ok(server) => {
                        row.status = "ok".to_owned();
                        row.tools = server.tools().len();
                        row.schema_tokens = server.tools().iter().map(|t| t.schema_tokens()).sum();
                        server.shutdown().await;
                    }
                    Err(err) => {
                        row.status = "failed".to_owned();
                        row.message = Some(err);
                    }
                }
            }
            row
        }
    }))
    .await;
    if json {
        let out: Vec<_> = rows.iter().map(Row::to_json).collect();
        println!("{}", serde_json::Value::Array(out));
        return Ok(Exit::Completed);
    }
    if rows.is_empty() {
        println!(
            "no MCP servers configured; add one with `herald mcp add NAME -- COMMAND ARGS...`"
        );
        return Ok(Exit::Completed);
    }
    for row in &rows {
        println!(
            "{:<16} {:<15} {:>3} tools {:>6} schema tokens  {} ({})",
            row.name, row.status, row.tools, row.schema_tokens, row.target, row.origin
        );
        if let Some(message) = &row.message {
            // A server's own words (its stderr, its errors).
            println!("    {}", terminal_safe(message).replace('\n', "\n    "));
        }
    }
    Ok(Exit::Completed)
}

pub(crate) async fn test(common: &CommonArgs, name: &str, json: bool) -> Result<Exit, CliError> {
    let settings = settings(common)?;
    let mut servers = session_servers(&settings);
    if let Some(project) = &settings.project_mcp {
        for (project_name, config) in &project.servers.servers {
            servers
                .entry(project_name.clone())
                .or_insert_with(|| config.clone());
        }
    }
    let Some(config) = servers.get(name) else {
        let known: Vec<&str> = servers.keys().map(String::as_str).collect();
        return Err(CliError::usage(anyhow::anyhow!(
            "no MCP server '{name}' (configured: {})",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )));
    };
    // Testing is the user's explicit request to start it, also for a
    // project server not approved yet and a disabled one.
    let mut config = config.clone();
    config.enabled = true;
    let env = load_permission_setup(&settings)
        .map_err(|err| CliError::usage(anyhow::anyhow!(err)))?
        .env;
    let started = std::time::Instant::now();
    let server = match connect(name, &config, &env).await {
        Ok(server) => server,
        Err(err) => {
            if json {
                println!(
                    "{}",
                    json!({"name": name, "status": "failed", "message": err})
                );
            } else {
                eprintln!("{}", terminal_safe(&err));
            }
            return Ok(Exit::Failed);
        }
    };
    let elapsed = started.elapsed();
    if json {
        let tools: Vec<_> = server
            .tools()
            .iter()
            .map(|t| {
                json!({
                    "name": t.exposed_name,
                    "server_name": t.name,
                    "read_only": t.read_only_hint,
                    "schema_tokens": t.schema_tokens(),
                })
            })
            .collect();
        let skipped: Vec<_> = server
            .skipped_tools()
            .iter()
            .map(|s| json!({"name": s.name, "reason": s.reason}))
            .collect();
        println!(
            "{}",
            json!({
                "name": name,
                "status": "ok",
                "server": server.server_info().map(|(n, v)| format!("{n} {v}")),
                "startup_ms": elapsed.as_millis() as u64,
                "tools": tools,
                "skipped": skipped,
            })
        );
    } else {
        // What the server says about itself and its tools is its own text:
        // no escape sequence in it reaches the terminal.
        let info = server
            .server_info()
            .map_or_else(String::new, |(n, v)| one_line(&format!(" ({n} {v})")));
        println!(
            "{name}{info}: started in {} ms, {} tools",
            elapsed.as_millis(),
            server.tools().len()
        );
        for tool in server.tools() {
            let first_line = one_line(tool.description.lines().next().unwrap_or(""));
            let marker = if tool.read_only_hint {
                " [read-only]"
            } else {
                ""
            };
            println!("  {}{marker}  {first_line}", tool.exposed_name);
        }
        for skipped in server.skipped_tools() {
            println!(
                "  (left out: {}: {})",
                one_line(&skipped.name),
                one_line(&skipped.reason)
            );
        }
    }
    server.shutdown().await;
    Ok(Exit::Completed)
}

pub(crate) fn approve(common: &CommonArgs, revoke: bool) -> Result<Exit, CliError> {
    let settings = settings(common)?;
    let Some(project) = &settings.project_mcp else {
        return Err(CliError::usage(anyhow::anyhow!(
            "no .mcp.json in {} or its parents up to the repository root",
            settings.cwd.display()
        )));
    };
    let approvals = ProjectApprovals::in_home(&settings.home);
    let path = &project.servers.path;
    if revoke {
        let removed = approvals.revoke(path).map_err(CliError::failed)?;
        println!(
            "{}: {}",
            path.display(),
            if removed {
                "approval withdrawn; its servers no longer start"
            } else {
                "was not approved"
            }
        );
        return Ok(Exit::Completed);
    }
    for problem in &project.servers.problems {
        eprintln!("{}: {problem}", path.display());
    }
    if project.servers.servers.is_empty() {
        return Err(CliError::usage(anyhow::anyhow!(
            "{} defines no usable MCP server",
            path.display()
        )));
    }
    approvals
        .approve(&project.servers)
        .map_err(CliError::failed)?;
    println!(
        "approved {} (as it is now; a change needs a new approval). These start in the next session:",
        path.display()
    );
    for (name, config) in &project.servers.servers {
        println!("  {name}: {}", describe(config));
    }
    Ok(Exit::Completed)
}
