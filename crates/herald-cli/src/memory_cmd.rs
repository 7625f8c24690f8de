//! `herald memory show|edit`: the two memory files as the user
//! sees them, with the same usage figures the model sees.

use std::collections::HashMap;
use std::path::Path;

use herald_knowledge::memory::{MemorySnapshot, parse_entries};
use herald_knowledge::{MemoryLimits, MemoryStore, MemoryTarget};
use serde_json::json;

use crate::args::{CommonArgs, MemoryAction};
use crate::sessions_cmd::print_json;
use crate::{CliError, Exit, setup};

/// Runs one `herald memory` action. Needs no provider settings: only
/// `$HERALD_HOME` and `[memory]` of the config file.
pub(crate) async fn memory(common: &CommonArgs, action: MemoryAction) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (home, config_path) = setup::config_location(common, &env);
    let config = crate::config_cmd::load(&config_path)?;
    let store = MemoryStore::new(&home, herald_core::memory_limits(&config.memory));
    match action {
        MemoryAction::Show { json } => show(&store, json),
        MemoryAction::Edit { target } => {
            let target = if target == "user" {
                MemoryTarget::User
            } else {
                MemoryTarget::Memory
            };
            edit(&store, target, &env).await
        }
    }
}

fn disabled_note(target: MemoryTarget) -> String {
    let key = match target {
        MemoryTarget::Memory => "memory_enabled",
        MemoryTarget::User => "user_profile_enabled",
    };
    format!(
        "{}: disabled ([memory] {key} = false in config.toml)",
        target.label()
    )
}

fn show(store: &MemoryStore, json: bool) -> Result<Exit, CliError> {
    let limits = *store.limits();
    let mut snapshots: Vec<(MemoryTarget, Option<MemorySnapshot>)> = Vec::new();
    for target in MemoryTarget::ALL {
        let snapshot = if limits.enabled(target) {
            Some(store.read(target).map_err(CliError::failed)?)
        } else {
            None
        };
        snapshots.push((target, snapshot));
    }
    if json {
        let mut out = serde_json::Map::new();
        for (target, snapshot) in &snapshots {
            out.insert(
                target.as_str().to_owned(),
                json!({
                    "path": store.path(*target).display().to_string(),
                    "enabled": snapshot.is_some(),
                    "entries": snapshot.as_ref().map(|s| s.entries.clone()).unwrap_or_default(),
                    "used_chars": snapshot.as_ref().map_or(0, |s| s.usage.used),
                    "limit_chars": limits.limit(*target),
                }),
            );
        }
        print_json(&out)?;
        return Ok(Exit::Completed);
    }
    let blocks: Vec<String> = snapshots
        .iter()
        .map(|(target, snapshot)| match snapshot {
            Some(snapshot) => format!("{}\n{}", snapshot.render(), store.path(*target).display()),
            None => disabled_note(*target),
        })
        .collect();
    // The files are the agent's writing (and hand edits): no escape
    // sequence in them reaches the terminal.
    println!("{}", herald_protocol::terminal_safe(&blocks.join("\n\n")));
    Ok(Exit::Completed)
}

/// Opens the file in `$VISUAL` or `$EDITOR` (run through `sh`, so values
/// such as `code -w` work), or prints its path when neither is set. Afterwards
/// reports the usage and any entry the `memory` tool would refuse.
async fn edit(
    store: &MemoryStore,
    target: MemoryTarget,
    env: &HashMap<String, String>,
) -> Result<Exit, CliError> {
    if !store.limits().enabled(target) {
        return Err(CliError::usage(anyhow::anyhow!(
            "{}",
            disabled_note(target)
        )));
    }
    let path = store.path(target);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|err| {
            CliError::failed(anyhow::anyhow!("cannot create {}: {err}", parent.display()))
        })?;
    }
    if !path.exists() {
        std::fs::write(&path, "").map_err(|err| {
            CliError::failed(anyhow::anyhow!("cannot create {}: {err}", path.display()))
        })?;
    }
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|key| env.get(*key).filter(|v| !v.trim().is_empty()));
    let Some(editor) = editor else {
        println!("{}", path.display());
        eprintln!(
            "set $EDITOR (or $VISUAL) to open it directly; entries are separated by a line holding §"
        );
        return Ok(Exit::Completed);
    };
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status()
        .await
        .map_err(|err| {
            CliError::failed(anyhow::anyhow!("cannot start editor {editor:?}: {err}"))
        })?;
    if !status.success() {
        return Err(CliError::failed(anyhow::anyhow!(
            "editor {editor:?} exited with {status}; {} is unchanged unless you saved it",
            path.display()
        )));
    }
    report_after_edit(store, target, &path);
    Ok(Exit::Completed)
}

fn report_after_edit(store: &MemoryStore, target: MemoryTarget, path: &Path) {
    let limits: MemoryLimits = *store.limits();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let entries = parse_entries(&text);
    let usage = herald_knowledge::memory::Usage::of(&entries, limits.limit(target));
    eprintln!("{} {usage}", target.label());
    if usage.used > usage.limit {
        eprintln!(
            "warning: over the limit; the system prompt shows only the first {} chars",
            usage.limit
        );
    }
    for (i, entry) in entries.iter().enumerate() {
        if let Err(violation) = herald_knowledge::memory::guard::check(entry) {
            eprintln!("warning: entry {} would be {violation}", i + 1);
        }
    }
}
