//! `herald skills list|view|create|delete`. The user acts here,
//! so any skill under `$HERALD_HOME/skills/` may be created or deleted;
//! project skills are listed and shown but left to their repository.

use std::io::Read;
use std::path::{Path, PathBuf};

use herald_knowledge::skills::{SkillError, render_file, render_skill};
use herald_knowledge::{Actor, SkillManager, SkillRoots};
use herald_protocol::one_line;
use serde_json::json;

use crate::args::{CommonArgs, SkillsAction};
use crate::sessions_cmd::print_json;
use crate::{CliError, Exit, setup};

/// Runs one `herald skills` action. Needs no provider settings.
pub(crate) async fn skills(common: &CommonArgs, action: SkillsAction) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (home, _) = setup::config_location(common, &env);
    let cwd = working_dir(common)?;
    let roots = SkillRoots::new(&home, &cwd);
    match action {
        SkillsAction::List { json, .. } => list(&roots, json),
        SkillsAction::View { name, file, .. } => {
            let skill = roots.find(&name).map_err(skill_error)?;
            let text = match file {
                Some(path) => render_file(&skill, &path),
                None => render_skill(&skill),
            }
            .map_err(skill_error)?;
            // Skills come from projects and the agent: no escape sequence
            // in them reaches the terminal.
            println!("{}", herald_protocol::terminal_safe(&text));
            Ok(Exit::Completed)
        }
        SkillsAction::Create {
            name,
            description,
            category,
            body,
        } => {
            let body = match body {
                Some(path) => read_body(&path)?,
                None => template(&name),
            };
            let content = skill_md(&name, &description, category.as_deref(), &body)?;
            let message = SkillManager::new(roots, Actor::User)
                .create(&name, &content)
                .map_err(skill_error)?;
            println!("{message}");
            Ok(Exit::Completed)
        }
        SkillsAction::Delete { name } => {
            let message = SkillManager::new(roots, Actor::User)
                .delete(&name)
                .map_err(skill_error)?;
            println!("{message}");
            Ok(Exit::Completed)
        }
    }
}

/// Bad input is a usage error (exit 2); a filesystem failure is exit 1.
fn skill_error(err: SkillError) -> CliError {
    match err {
        SkillError::Io { .. } => CliError::failed(err),
        SkillError::Foreign { ref name, .. } => CliError::usage(anyhow::anyhow!(
            "skill {name:?} is not in $HERALD_HOME/skills (it belongs to a project); delete or edit its folder there"
        )),
        other => CliError::usage(other),
    }
}

/// The project directory: `--cwd` (canonical) or the current directory.
pub(crate) fn working_dir(common: &CommonArgs) -> Result<PathBuf, CliError> {
    match &common.cwd {
        Some(dir) => dir
            .canonicalize()
            .map_err(|err| CliError::usage(anyhow::anyhow!("--cwd {}: {err}", dir.display()))),
        None => std::env::current_dir().map_err(|err| {
            CliError::failed(anyhow::anyhow!("cannot read the current directory: {err}"))
        }),
    }
}

fn list(roots: &SkillRoots, json: bool) -> Result<Exit, CliError> {
    let found = roots.discover();
    if json {
        print_json(&json!({
            "skills": found.skills,
            "rejected": found.rejected,
            "skipped": found.problems,
        }))?;
        return Ok(Exit::Completed);
    }
    if found.skills.is_empty() && found.rejected.is_empty() {
        println!(
            "no skills yet (create one with `herald skills create NAME --description TEXT`, or let the agent save one)"
        );
    }
    for skill in &found.skills {
        let category = skill
            .category
            .as_ref()
            .map(|c| format!(", {c}"))
            .unwrap_or_default();
        let created = if skill.herald_created { ", herald" } else { "" };
        let user_only = if skill.model_invocable {
            ""
        } else {
            ", user-only"
        };
        println!(
            "{}  [{}{}{created}{user_only}]  {}",
            one_line(&skill.name),
            skill.source.as_str(),
            one_line(&category),
            one_line(&skill.description)
        );
        if let Some(warning) = &skill.warning {
            println!("  warning: {}", one_line(warning));
        }
    }
    // Skills that failed to load are listed with why, so none vanishes.
    for bad in &found.rejected {
        println!(
            "{}  [{}]  error: {} ({})",
            one_line(&bad.name),
            bad.source.as_str(),
            one_line(&bad.error),
            one_line(&bad.path.display().to_string())
        );
    }
    for note in &found.notes {
        eprintln!("skipped: {}", one_line(note));
    }
    Ok(Exit::Completed)
}

/// The body from a file, or from standard input for `-`.
fn read_body(path: &Path) -> Result<String, CliError> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|err| {
            CliError::failed(anyhow::anyhow!("cannot read standard input: {err}"))
        })?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|err| {
        CliError::usage(anyhow::anyhow!(
            "cannot read --body {}: {err}",
            path.display()
        ))
    })
}

/// A starting body with the sections a useful skill has.
fn template(name: &str) -> String {
    format!(
        "# {name}\n\n## When to use\n- (the situations this procedure is for)\n\n## Steps\n1. (the commands and edits that work, in order)\n\n## Pitfalls\n- (what went wrong before and the fix)\n\n## Verify\n- (how to confirm it worked)\n"
    )
}

/// `SKILL.md` text. Strings are written as JSON strings, which YAML reads
/// as double-quoted scalars, so any description is quoted safely.
fn skill_md(
    name: &str,
    description: &str,
    category: Option<&str>,
    body: &str,
) -> Result<String, CliError> {
    let quote = |s: &str| serde_json::to_string(s).map_err(CliError::failed);
    let mut text = format!(
        "---\nname: {name}\ndescription: {}\n",
        quote(description.trim())?
    );
    if let Some(category) = category.map(str::trim).filter(|c| !c.is_empty()) {
        text.push_str(&format!("metadata:\n  category: {}\n", quote(category)?));
    }
    text.push_str("---\n");
    text.push_str(body.trim_start_matches('\n'));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}
