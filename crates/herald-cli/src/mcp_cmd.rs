//! `herald mcp add|remove|get`: edits `[mcp_servers]` in config.toml,
//! keeping the file's comments and layout (toml_edit).

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

use crate::args::{CommonArgs, McpAction};
use crate::{CliError, Exit, setup};

pub(crate) async fn mcp(common: &CommonArgs, action: McpAction) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (_, path) = setup::config_location(common, &env);
    match action {
        McpAction::Add {
            name,
            url,
            headers,
            bearer_token_env_var,
            envs,
            force,
            command,
        } => {
            let server = NewServer {
                url,
                headers: pairs(&headers, "--header")?,
                bearer_token_env_var,
                env: pairs(&envs, "--env")?,
                command,
            };
            add(&path, &name, &server, force)
        }
        McpAction::Remove { name } => remove(&path, &name),
        McpAction::Get { name, json } => get(&path, &name, json),
        McpAction::Serve(_) => crate::mcp_serve_cmd::serve(common).await,
        McpAction::List { json, .. } => crate::mcp_status::list(common, json).await,
        McpAction::Test { name, json, .. } => crate::mcp_status::test(common, &name, json).await,
        McpAction::Approve { revoke, .. } => crate::mcp_status::approve(common, revoke),
    }
}

/// What `herald mcp add` was given.
struct NewServer {
    url: Option<String>,
    headers: Vec<(String, String)>,
    bearer_token_env_var: Option<String>,
    env: Vec<(String, String)>,
    command: Vec<String>,
}

fn usage(message: String) -> CliError {
    CliError::usage(anyhow::anyhow!(message))
}

/// `K=V` arguments as pairs; a missing `=` is a usage error.
fn pairs(items: &[String], flag: &str) -> Result<Vec<(String, String)>, CliError> {
    items
        .iter()
        .map(|item| {
            item.split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| usage(format!("{flag} takes KEY=VALUE, got '{item}'")))
        })
        .collect()
}

fn valid_name(name: &str) -> Result<(), CliError> {
    if !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Ok(())
    } else {
        Err(usage(format!(
            "invalid server name '{name}': use 1-40 letters, digits, '-' or '_' (its tools are named mcp__NAME__TOOL)"
        )))
    }
}

/// The config file as an editable document; a missing file is empty.
fn read(path: &Path) -> Result<DocumentMut, CliError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => {
            return Err(CliError::failed(anyhow::anyhow!(
                "cannot read {}: {err}",
                path.display()
            )));
        }
    };
    text.parse::<DocumentMut>()
        .map_err(|err| usage(format!("invalid config file {}: {err}", path.display())))
}

/// Writes through a temporary file and a rename, so a crash leaves either
/// the old or the new file.
fn write(path: &Path, doc: &DocumentMut) -> Result<(), CliError> {
    let failed = |err: std::io::Error, what: &PathBuf| {
        CliError::failed(anyhow::anyhow!("cannot write {}: {err}", what.display()))
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| failed(e, &dir.to_path_buf()))?;
    }
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, doc.to_string()).map_err(|e| failed(e, &tmp))?;
    std::fs::rename(&tmp, path).map_err(|e| failed(e, &path.to_path_buf()))
}

fn servers_table<'a>(doc: &'a mut DocumentMut, path: &Path) -> Result<&'a mut Table, CliError> {
    let item = doc.entry("mcp_servers").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    item.as_table_mut().ok_or_else(|| {
        usage(format!(
            "{}: mcp_servers is not a table; fix it by hand first",
            path.display()
        ))
    })
}

fn add(path: &Path, name: &str, server: &NewServer, force: bool) -> Result<Exit, CliError> {
    valid_name(name)?;
    if server.url.is_none() && server.command.is_empty() {
        return Err(usage(
            "give the server's command after `--` (herald mcp add NAME -- COMMAND ARGS...) or --url URL"
                .to_owned(),
        ));
    }
    let mut doc = read(path)?;
    // Comments at the end of the file (the template's commented keys of
    // the last section) stay where they are: before the new table.
    let trailing = doc.trailing().as_str().unwrap_or_default().to_owned();
    let servers = servers_table(&mut doc, path)?;
    if servers.contains_key(name) && !force {
        return Err(usage(format!(
            "an MCP server named '{name}' is already configured in {}; use --force to replace it or `herald mcp remove {name}`",
            path.display()
        )));
    }
    let mut table = Table::new();
    if let Some(url) = &server.url {
        table.insert("url", value(url.as_str()));
        if !server.headers.is_empty() {
            table.insert("headers", value(inline(&server.headers)));
        }
        if let Some(var) = &server.bearer_token_env_var {
            table.insert("bearer_token_env_var", value(var.as_str()));
        }
    } else if let Some((command, args)) = server.command.split_first() {
        table.insert("command", value(command.as_str()));
        let mut list = Array::new();
        for arg in args {
            list.push(arg.as_str());
        }
        table.insert("args", value(list));
    }
    if !server.env.is_empty() {
        table.insert("env", value(inline(&server.env)));
    }
    if !trailing.trim().is_empty() {
        table
            .decor_mut()
            .set_prefix(format!("{}\n\n", trailing.trim_end()));
    }
    servers.insert(name, Item::Table(table));
    if !trailing.trim().is_empty() {
        doc.set_trailing("");
    }
    write(path, &doc)?;
    println!(
        "added MCP server '{name}' to {}; its tools are available from the next session",
        path.display()
    );
    Ok(Exit::Completed)
}

fn inline(pairs: &[(String, String)]) -> InlineTable {
    let mut table = InlineTable::new();
    for (k, v) in pairs {
        table.insert(k, v.as_str().into());
    }
    table
}

fn configured_names(doc: &DocumentMut) -> String {
    let names: Vec<&str> = doc
        .get("mcp_servers")
        .and_then(Item::as_table)
        .map(|t| t.iter().map(|(k, _)| k).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "none is configured".to_owned()
    } else {
        format!("configured: {}", names.join(", "))
    }
}

fn remove(path: &Path, name: &str) -> Result<Exit, CliError> {
    let mut doc = read(path)?;
    let removed = doc
        .get_mut("mcp_servers")
        .and_then(Item::as_table_mut)
        .and_then(|t| t.remove(name));
    if removed.is_none() {
        return Err(usage(format!(
            "no MCP server '{name}' in {} ({})",
            path.display(),
            configured_names(&doc)
        )));
    }
    write(path, &doc)?;
    println!("removed MCP server '{name}' from {}", path.display());
    Ok(Exit::Completed)
}

fn get(path: &Path, name: &str, json: bool) -> Result<Exit, CliError> {
    let doc = read(path)?;
    let Some(item) = doc
        .get("mcp_servers")
        .and_then(Item::as_table)
        .and_then(|t| t.get(name))
    else {
        return Err(usage(format!(
            "no MCP server '{name}' in {} ({})",
            path.display(),
            configured_names(&doc)
        )));
    };
    let text = item.to_string();
    if json {
        let parsed: toml::Table = toml::from_str(&text)
            .map_err(|err| CliError::failed(anyhow::anyhow!("cannot read the entry: {err}")))?;
        let out = serde_json::to_string_pretty(&parsed).map_err(CliError::failed)?;
        println!("{out}");
    } else {
        println!("[mcp_servers.{name}]\n{}", text.trim());
    }
    Ok(Exit::Completed)
}
