//! `herald hooks list|approve`: which hooks run in this directory, and the
//! approval a project's `.herald/hooks.toml` needs before its commands run.
//! A command of its own rather than `herald mcp approve`: hooks are not MCP
//! servers, and approving one file must not approve the other.

use herald_core::Settings;
use herald_core::hooks::{HookApprovals, HookOrigin, HookSpec, ProjectHooks};
use herald_protocol::terminal_safe;
use serde_json::{Value, json};

use crate::args::{CommonArgs, HooksAction};
use crate::{CliError, Exit, setup};

pub(crate) fn hooks(common: &CommonArgs, action: HooksAction) -> Result<Exit, CliError> {
    let settings = settings(common)?;
    match action {
        HooksAction::List { json, .. } => list(&settings, json),
        HooksAction::Approve { revoke, .. } => approve(&settings, revoke),
    }
}

/// Settings without the credentials check (nothing here calls a model).
fn settings(common: &CommonArgs) -> Result<Settings, CliError> {
    let env = setup::environment();
    let (home, path) = setup::config_location(common, &env);
    let config = crate::config_cmd::load(&path)?;
    Settings::resolve_without_credentials(&config, &path, home, &env, &setup::overrides(common))
        .map_err(CliError::usage)
}

fn hook_json(spec: &HookSpec, file: &str, runs: bool) -> Value {
    json!({
        "origin": match spec.origin {
            HookOrigin::User => "config",
            HookOrigin::Project => "project",
        },
        "file": file,
        "event": spec.event.as_str(),
        "matcher": spec.matcher,
        "command": spec.command,
        "timeout": spec.timeout.as_secs(),
        "runs": runs,
    })
}

fn hook_line(spec: &HookSpec) -> String {
    let matcher = spec
        .matcher
        .as_deref()
        .map_or_else(String::new, |m| format!(" [{m}]"));
    terminal_safe(&format!(
        "  {}{matcher}  {}  (timeout {} s)",
        spec.event,
        spec.command,
        spec.timeout.as_secs()
    ))
    .into_owned()
}

fn list(settings: &Settings, as_json: bool) -> Result<Exit, CliError> {
    let config_file = settings.config_path.display().to_string();
    let project = settings.project_hooks.as_ref();
    if as_json {
        let mut rows: Vec<Value> = settings
            .hooks
            .iter()
            .map(|spec| hook_json(spec, &config_file, true))
            .collect();
        if let Some(project) = project {
            let file = project.path.display().to_string();
            rows.extend(
                project
                    .hooks
                    .iter()
                    .map(|spec| hook_json(spec, &file, project.approved)),
            );
        }
        println!("{}", Value::Array(rows));
        return Ok(Exit::Completed);
    }
    if settings.hooks.is_empty() {
        println!("{config_file}: no hooks");
    } else {
        println!("{config_file}:");
        for spec in &settings.hooks {
            println!("{}", hook_line(spec));
        }
    }
    match project {
        None => println!(
            "no project hooks file ({})",
            herald_core::hooks::PROJECT_HOOKS_FILE
        ),
        Some(project) => {
            println!("{}: {}", project.path.display(), project_state(project));
            for spec in &project.hooks {
                println!("{}", hook_line(spec));
            }
        }
    }
    Ok(Exit::Completed)
}

fn project_state(project: &ProjectHooks) -> String {
    match (&project.problem, project.approved) {
        (Some(problem), _) => format!("cannot be used: {problem}"),
        (None, true) => "approved; these run".to_owned(),
        (None, false) if project.hooks.is_empty() => "no hooks".to_owned(),
        (None, false) => format!(
            "not approved; these do not run until you review them and run `herald hooks approve` in {}",
            project.project_dir().display()
        ),
    }
}

fn approve(settings: &Settings, revoke: bool) -> Result<Exit, CliError> {
    let Some(project) = &settings.project_hooks else {
        return Err(CliError::usage(anyhow::anyhow!(
            "no {} in {} or its parents up to the repository root",
            herald_core::hooks::PROJECT_HOOKS_FILE,
            settings.cwd.display()
        )));
    };
    let approvals = HookApprovals::in_home(&settings.home);
    let path = &project.path;
    if revoke {
        let removed = approvals
            .revoke(path)
            .map_err(|err| CliError::failed(anyhow::anyhow!(err)))?;
        println!(
            "{}: {}",
            path.display(),
            if removed {
                "approval withdrawn; its hooks no longer run"
            } else {
                "was not approved"
            }
        );
        return Ok(Exit::Completed);
    }
    if let Some(problem) = &project.problem {
        return Err(CliError::usage(anyhow::anyhow!(
            "{problem}; fix it, then approve it"
        )));
    }
    if project.hooks.is_empty() {
        return Err(CliError::usage(anyhow::anyhow!(
            "{} defines no hooks",
            path.display()
        )));
    }
    approvals
        .approve(project)
        .map_err(|err| CliError::failed(anyhow::anyhow!(err)))?;
    println!(
        "approved {} (as it is now; a change needs a new approval). These run from the next session on:",
        path.display()
    );
    for spec in &project.hooks {
        println!("{}", hook_line(spec));
    }
    Ok(Exit::Completed)
}
