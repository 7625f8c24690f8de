//! The slash commands an editor offers for a herald session
//! (`available_commands_update`): `/compact`, and one command per skill
//! found for the session's directory, which sends the skill with the
//! user's request as the turn.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandInput, UnstructuredCommandInput,
};
use herald_knowledge::SkillRoots;

/// What a prompt starting with `/` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// Compact the conversation now.
    Compact,
    /// A turn using skill `name` for `request`.
    Skill { name: String, request: String },
}

/// The commands herald itself has (besides skills).
const COMPACT: &str = "compact";

/// The command a prompt names, if it starts with `/` and names one:
/// `/compact`, or a skill among `skills`.
pub(crate) fn parse(prompt: &str, skills: &[String]) -> Option<Command> {
    let rest = prompt.trim_start().strip_prefix('/')?;
    let (name, request) = match rest.split_once(char::is_whitespace) {
        Some((name, request)) => (name, request.trim()),
        None => (rest.trim_end(), ""),
    };
    if name == COMPACT && request.is_empty() {
        return Some(Command::Compact);
    }
    skills.iter().any(|s| s == name).then(|| Command::Skill {
        name: name.to_owned(),
        request: request.to_owned(),
    })
}

/// The skills of `home` and `cwd` a user may invoke, as (name,
/// description). Reads every SKILL.md: call it off the async threads.
pub(crate) fn skills(home: &Path, cwd: &Path) -> Vec<(String, String)> {
    SkillRoots::new(home, cwd)
        .discover()
        .skills
        .into_iter()
        .filter(|s| s.name != COMPACT)
        .map(|s| (s.name, s.description))
        .collect()
}

/// Every command, for `available_commands_update`.
pub(crate) fn available(skills: &[(String, String)]) -> Vec<AvailableCommand> {
    let mut commands = vec![AvailableCommand::new(
        COMPACT,
        "Summarise the conversation so far to free context (herald keeps the summary and recent messages)",
    )];
    commands.extend(skills.iter().map(|(name, description)| {
        AvailableCommand::new(name.clone(), format!("Skill: {description}")).input(
            AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                "what to do with the skill",
            )),
        )
    }));
    commands
}

/// The turn a skill command sends: the skill's instructions, where its
/// files are, and the request. Reads the skill: off the async threads.
pub(crate) fn skill_prompt(
    home: &Path,
    cwd: &Path,
    name: &str,
    request: &str,
) -> Result<String, String> {
    let roots = SkillRoots::new(home, cwd);
    let skill = roots.find(name).map_err(|e| e.to_string())?;
    let text = herald_knowledge::skills::render_skill(&skill).map_err(|e| e.to_string())?;
    let request = if request.is_empty() {
        "follow the skill."
    } else {
        request
    };
    let dir: PathBuf = skill.dir;
    Ok(format!(
        "Use the skill `{name}` for this request. Its instructions:\n\n{text}\n\n\
         Its files are in {}; read them with read_file.\n\nRequest: {request}",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_name_commands_only_when_they_exist() {
        let skills = vec!["review".to_owned()];
        assert_eq!(parse("/compact", &skills), Some(Command::Compact));
        assert_eq!(
            parse("/review the parser ", &skills),
            Some(Command::Skill {
                name: "review".into(),
                request: "the parser".into()
            })
        );
        assert_eq!(parse("/compact now please", &skills), None);
        assert_eq!(parse("/unknown", &skills), None);
        assert_eq!(parse("no slash", &skills), None);
    }
}
