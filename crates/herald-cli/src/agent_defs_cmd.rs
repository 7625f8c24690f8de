//! `herald agents defs`: the agent definitions a session in this directory
//! would offer `delegate_task`, with where each comes from, what it grants,
//! and the files skipped or overridden.

use herald_core::delegation::{AgentDef, AgentDefs};
use herald_protocol::one_line;
use serde_json::json;

use crate::args::CommonArgs;
use crate::sessions_cmd::print_json;
use crate::{CliError, Exit, setup};

/// Lists the definitions. Needs no provider settings or store.
pub(crate) async fn defs(common: &CommonArgs, json: bool) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (home, _) = setup::config_location(common, &env);
    let cwd = crate::skills_cmd::working_dir(common)?;
    let found = tokio::task::spawn_blocking(move || AgentDefs::discover(&home, &cwd))
        .await
        .map_err(CliError::failed)?;
    if json {
        print_json(&json!({
            "definitions": found.definitions,
            "skipped": found.problems,
            "shadowed": found.shadowed,
        }))?;
        return Ok(Exit::Completed);
    }
    if found.definitions.is_empty() {
        println!(
            "no agent definitions (Markdown files with name, description, tools and model front matter in .agents/agents/, .claude/agents/ or $HERALD_HOME/agents/)"
        );
    }
    for def in &found.definitions {
        print!("{}", render(def));
    }
    for problem in &found.problems {
        eprintln!("skipped: {}", one_line(problem));
    }
    for shadowed in &found.shadowed {
        eprintln!("shadowed: {}", one_line(shadowed));
    }
    Ok(Exit::Completed)
}

/// One definition: name, source and file; description; what it grants;
/// notes. Text from the files is stripped of terminal control sequences.
fn render(def: &AgentDef) -> String {
    let tools = def
        .tools
        .as_ref()
        .map_or_else(|| "all".to_owned(), |t| t.join(", "));
    let iterations = def
        .max_iterations
        .map_or_else(|| "default".to_owned(), |n| n.to_string());
    let mut text = format!(
        "{}  [{}]  {}\n  {}\n  tools: {}  model: {}  max_iterations: {iterations}\n",
        one_line(&def.name),
        def.source.as_str(),
        one_line(&def.path.display().to_string()),
        one_line(&def.description),
        one_line(&tools),
        one_line(def.model.as_deref().unwrap_or("inherit")),
    );
    for note in &def.notes {
        text.push_str(&format!("  note: {}\n", one_line(note)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_field() {
        let def = AgentDef {
            name: "reviewer".into(),
            description: "Reviews\ncode".into(),
            tools: Some(vec!["read_file".into(), "search_files".into()]),
            model: None,
            max_iterations: Some(5),
            isolation: None,
            instructions: "x".into(),
            path: "/p/.claude/agents/reviewer.md".into(),
            source: herald_core::delegation::DefSource::Claude,
            notes: vec!["tool WebFetch left out: no web".into()],
        };
        assert_eq!(
            render(&def),
            "reviewer  [.claude]  /p/.claude/agents/reviewer.md\n  Reviews code\n  tools: read_file, search_files  model: inherit  max_iterations: 5\n  note: tool WebFetch left out: no web\n"
        );
    }
}
