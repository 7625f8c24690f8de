//! Claude Code names in agent definitions, translated: tool names
//! (`Read`, `Bash`, ...) to herald's tools, and the model aliases
//! (`sonnet`, `opus`, `haiku`) to Anthropic model ids.

use herald_llm::ProviderKind;

/// Claude Code tool names and the herald tools they become.
const CLAUDE_TOOLS: &[(&str, &[&str])] = &[
    ("Read", &["read_file"]),
    ("NotebookRead", &["read_file"]),
    ("Write", &["write_file"]),
    ("Edit", &["patch"]),
    ("MultiEdit", &["patch"]),
    ("Bash", &["terminal"]),
    ("BashOutput", &["process"]),
    ("KillShell", &["process"]),
    ("KillBash", &["process"]),
    ("Grep", &["search_files"]),
    ("Glob", &["search_files"]),
    ("LS", &["search_files"]),
    ("TodoWrite", &["todo_write", "todo_read"]),
    ("TodoRead", &["todo_read"]),
    ("Skill", &["skills_list", "skill_view"]),
    ("WebFetch", &["web_extract"]),
    ("WebSearch", &["web_search"]),
];

/// Claude Code tools herald has no equivalent of, and why.
const CLAUDE_ONLY: &[(&str, &str)] = &[
    (
        "NotebookEdit",
        "herald has no notebook editor (patch edits the JSON)",
    ),
    (
        "Task",
        "a child delegates only when the delegate_task call gives it role orchestrator",
    ),
    ("ExitPlanMode", "herald has no plan mode"),
    ("SlashCommand", "herald has no slash-command tool"),
];

/// Every tool herald itself can register. A definition naming one the
/// delegating agent lacks (its toolsets leave it out) simply does not get
/// it; any other name it lacks is an error.
pub const HERALD_TOOLS: &[&str] = &[
    "read_file",
    "write_file",
    "patch",
    "search_files",
    "terminal",
    "process",
    "todo_write",
    "todo_read",
    "execute_code",
    "memory",
    "clarify",
    "skills_list",
    "skill_view",
    "skill_manage",
    "session_search",
    "delegate_task",
    "agent_status",
    "agent_list",
    "agent_wait",
    "agent_cancel",
    "mcp_search",
    "mcp_call",
    "web_extract",
    "web_search",
];

/// Maps written tool names to herald tool names (order kept, duplicates
/// removed) and notes what was left out. Claude Code names match without
/// regard to case; other names (herald's, `mcp__SERVER__TOOL`) pass through
/// and are checked when the definition is used.
pub fn map_tools(written: &[String]) -> (Vec<String>, Vec<String>) {
    let mut tools: Vec<String> = Vec::new();
    let mut notes = Vec::new();
    let mut add = |name: &str| {
        if !tools.iter().any(|t| t == name) {
            tools.push(name.to_owned());
        }
    };
    for name in written {
        if name.contains('(') {
            notes.push(format!(
                "tool {name} left out: herald grants whole tools, not argument patterns (put such rules in [permissions])"
            ));
        } else if let Some((_, mapped)) = CLAUDE_TOOLS
            .iter()
            .find(|(claude, _)| claude.eq_ignore_ascii_case(name))
        {
            mapped.iter().for_each(|m| add(m));
        } else if let Some((claude, why)) = CLAUDE_ONLY
            .iter()
            .find(|(claude, _)| claude.eq_ignore_ascii_case(name))
        {
            notes.push(format!("tool {claude} left out: {why}"));
        } else {
            add(name);
        }
    }
    (tools, notes)
}

/// The Anthropic model a Claude Code alias stands for.
fn alias(model: &str) -> Option<&'static str> {
    match model.to_ascii_lowercase().as_str() {
        "sonnet" => Some("claude-sonnet-4-5"),
        "opus" => Some("claude-opus-4-1"),
        "haiku" => Some("claude-haiku-4-5"),
        _ => None,
    }
}

/// What a definition's `model` alias does, for listings.
pub fn model_note(model: &str) -> Option<String> {
    alias(model).map(|id| {
        format!(
            "model {model} is {id} when children run on anthropic; on other providers they use the delegating agent's model"
        )
    })
}

/// The model a child runs on: `None` = the children's usual model. An
/// alias becomes its Anthropic id on `anthropic` and is dropped elsewhere
/// (the second value says so); a full id is used as written.
pub fn resolve_model(
    model: Option<&str>,
    provider: ProviderKind,
) -> (Option<String>, Option<String>) {
    let Some(model) = model else {
        return (None, None);
    };
    match alias(model) {
        Some(id) if provider == ProviderKind::Anthropic => (Some(id.to_owned()), None),
        Some(_) => (
            None,
            Some(format!(
                "model alias {model} applies only on anthropic; the child uses the usual model on {}",
                provider.as_str()
            )),
        ),
        None => (Some(model.to_owned()), None),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn claude_names_map_and_others_pass_through() {
        let (tools, notes) = map_tools(&strings(&[
            "Read",
            "grep",
            "Glob",
            "Bash",
            "terminal",
            "mcp__github__list_issues",
            "WebSearch",
            "NotebookEdit",
            "Bash(git diff:*)",
            "Task",
        ]));
        assert_eq!(
            tools,
            [
                "read_file",
                "search_files",
                "terminal",
                "mcp__github__list_issues",
                "web_search"
            ]
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].contains("NotebookEdit") && notes[0].contains("notebook"));
        assert!(notes[1].contains("Bash(git diff:*)") && notes[1].contains("[permissions]"));
        assert!(notes[2].contains("role orchestrator"));
    }

    #[test]
    fn aliases_only_on_anthropic() {
        assert_eq!(
            resolve_model(Some("sonnet"), ProviderKind::Anthropic),
            (Some("claude-sonnet-4-5".to_owned()), None)
        );
        let (model, note) = resolve_model(Some("Haiku"), ProviderKind::OpenAi);
        assert_eq!(model, None);
        assert!(note.unwrap().contains("only on anthropic"));
        assert_eq!(
            resolve_model(Some("gpt-4.1-mini"), ProviderKind::OpenAi),
            (Some("gpt-4.1-mini".to_owned()), None)
        );
        assert_eq!(resolve_model(None, ProviderKind::OpenAi), (None, None));
        assert!(model_note("opus").unwrap().contains("claude-opus-4-1"));
        assert_eq!(model_note("gpt-4.1"), None);
    }
}
