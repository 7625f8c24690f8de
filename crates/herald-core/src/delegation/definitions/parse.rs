//! One agent definition file: YAML front matter between `---` lines (split
//! as skills are, parsed with serde-saphyr) and the instructions after it,
//! in the Claude Code subagent format (`tools` as a comma-separated string
//! or a YAML list; keys herald does not use, such as `color`, ignored).

use serde::Deserialize;

use super::names::{map_tools, model_note};

/// Longest definition name.
pub const MAX_NAME_CHARS: usize = 64;

/// `tools` as Claude Code writes it (`Read, Grep`) or as a YAML list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ToolsField {
    Text(String),
    List(Vec<String>),
}

/// The front-matter keys herald reads.
#[derive(Debug, Default, Deserialize)]
struct Front {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    tools: Option<ToolsField>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    max_iterations: Option<u32>,
    #[serde(default)]
    isolation: Option<String>,
}

/// A definition as its file says it, before it is applied to a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedDef {
    pub name: String,
    /// Whitespace collapsed to single spaces.
    pub description: String,
    /// herald tool names (Claude Code names mapped); `None` = every tool
    /// the delegating agent may grant.
    pub tools: Option<Vec<String>>,
    /// `None` for `inherit` or no model; otherwise as written (an alias
    /// such as `sonnet` or a full model id).
    pub model: Option<String>,
    pub max_iterations: Option<u32>,
    /// `isolation: worktree` (or `worktree:fresh`, `worktree:<ref>`):
    /// its children work in their own git worktree.
    pub isolation: Option<crate::delegation::worktree::WorktreeBase>,
    /// The markdown after the front matter, trimmed: the child's instructions.
    pub instructions: String,
    /// What herald changed or left out (tools it has no equivalent of, an
    /// alias that depends on the provider).
    pub notes: Vec<String>,
}

/// Parses a definition; `stem` is the file name without `.md`, the name
/// when the front matter has none. The error says what is wrong and how to
/// fix it.
pub fn parse(text: &str, stem: &str) -> Result<ParsedDef, String> {
    let unmarked = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !(unmarked.starts_with("---\n") || unmarked.starts_with("---\r\n")) {
        return Err("it must start with a '---' line, then YAML front matter (name, description, tools, model), then '---' and the agent's instructions".to_owned());
    }
    let (yaml, body) =
        herald_knowledge::skills::frontmatter::split(text).map_err(|e| e.to_string())?;
    let front: Front = if yaml.trim().is_empty() {
        Front::default()
    } else {
        serde_saphyr::from_str(yaml).map_err(|err| {
            let detail = err.to_string();
            let first = detail.lines().next().unwrap_or("invalid YAML").trim();
            format!(
                "the front matter is not valid YAML ({first}); it must be a mapping such as:\nname: reviewer\ndescription: When to use this agent\ntools: Read, Grep"
            )
        })?
    };
    let name = front
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(stem)
        .to_owned();
    validate_name(&name)?;
    let description = front
        .description
        .as_deref()
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .ok_or("the front matter has no description; add one saying when to use this agent")?;
    let mut notes = Vec::new();
    let raw_tools: Vec<String> = match front.tools {
        None => Vec::new(),
        Some(ToolsField::Text(text)) => text.split(',').map(str::to_owned).collect(),
        Some(ToolsField::List(list)) => list,
    };
    let raw_tools: Vec<String> = raw_tools
        .iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    let tools = if raw_tools.is_empty() {
        None
    } else {
        let (mapped, dropped) = map_tools(&raw_tools);
        notes.extend(dropped);
        if mapped.is_empty() {
            return Err(format!(
                "none of its tools ({}) has a herald equivalent; name herald tools (read_file, search_files, terminal, ...) or remove `tools` to give it every tool",
                raw_tools.join(", ")
            ));
        }
        Some(mapped)
    };
    let model = front
        .model
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty() && !m.eq_ignore_ascii_case("inherit"))
        .map(str::to_owned);
    if let Some(note) = model.as_deref().and_then(model_note) {
        notes.push(note);
    }
    if front.max_iterations == Some(0) {
        return Err(
            "max_iterations is 0; give at least 1, or remove it to use [delegation] max_iterations"
                .to_owned(),
        );
    }
    let isolation = match front.isolation.as_deref() {
        Some(text) => crate::delegation::worktree::WorktreeBase::parse(text)?,
        None => None,
    };
    Ok(ParsedDef {
        name,
        description,
        tools,
        model,
        max_iterations: front.max_iterations,
        isolation,
        instructions: body.trim().to_owned(),
        notes,
    })
}

/// Checks a definition name: 1–64 chars of `[a-z0-9._-]`, starting with a
/// letter or digit (Claude Code names are lowercase words with hyphens).
pub fn validate_name(name: &str) -> Result<(), String> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    let ok_start = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS || !ok_chars || !ok_start {
        return Err(format!(
            "invalid agent name {name:?}: use 1-{MAX_NAME_CHARS} chars of lowercase a-z, 0-9, '.', '_' or '-', starting with a letter or digit (e.g. code-reviewer)"
        ));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A definition as Claude Code's `/agents` command writes it.
    const CLAUDE: &str = "---\nname: code-reviewer\ndescription: Expert code review specialist. Use immediately after writing or modifying code.\ntools: Read, Grep, Glob, Bash\nmodel: inherit\ncolor: red\n---\n\nYou are a senior code reviewer.\n\nWhen invoked:\n1. Run git diff\n";

    #[test]
    fn claude_code_format_with_a_comma_list() {
        let def = parse(CLAUDE, "file-stem").unwrap();
        assert_eq!(def.name, "code-reviewer");
        assert_eq!(
            def.description,
            "Expert code review specialist. Use immediately after writing or modifying code."
        );
        assert_eq!(
            def.tools.as_deref().unwrap(),
            ["read_file", "search_files", "terminal"]
        );
        assert_eq!(def.model, None, "inherit means the parent's model");
        assert_eq!(def.max_iterations, None);
        assert!(
            def.instructions
                .starts_with("You are a senior code reviewer.")
        );
        assert!(def.instructions.ends_with("1. Run git diff"));
        assert!(def.notes.is_empty(), "{:?}", def.notes);
        let crlf = CLAUDE.replace('\n', "\r\n");
        assert_eq!(parse(&crlf, "x").unwrap().tools, def.tools);
    }

    #[test]
    fn yaml_lists_herald_names_aliases_and_limits() {
        let text = "---\nname: fixer\ndescription: |\n  Fixes tests.\n  Runs them.\ntools:\n  - read_file\n  - Edit\n  - MultiEdit\n  - NotebookEdit\n  - TodoWrite\nmodel: sonnet\nmax_iterations: 12\n---\nFix it.\n";
        let def = parse(text, "x").unwrap();
        assert_eq!(def.description, "Fixes tests. Runs them.");
        assert_eq!(
            def.tools.as_deref().unwrap(),
            ["read_file", "patch", "todo_write", "todo_read"]
        );
        assert_eq!(def.model.as_deref(), Some("sonnet"));
        assert_eq!(def.max_iterations, Some(12));
        let notes = def.notes.join("\n");
        assert!(
            notes.contains("NotebookEdit") && notes.contains("notebook"),
            "{notes}"
        );
        assert!(
            notes.contains("sonnet") && notes.contains("anthropic"),
            "{notes}"
        );
        let full = "---\ndescription: d\nmodel: gpt-4.1-mini\n---\nx";
        let def = parse(full, "mini").unwrap();
        assert_eq!(def.model.as_deref(), Some("gpt-4.1-mini"));
        assert!(def.notes.is_empty());
        assert_eq!(def.tools, None, "no tools key: every tool");
    }

    #[test]
    fn isolation_in_front_matter_is_read_and_checked() {
        let def = parse("---\ndescription: d\nisolation: worktree\n---\nb", "x").unwrap();
        assert_eq!(
            def.isolation,
            Some(crate::delegation::worktree::WorktreeBase::Head)
        );
        let def = parse(
            "---\ndescription: d\nisolation: worktree:release\n---\nb",
            "x",
        )
        .unwrap();
        assert_eq!(
            def.isolation,
            Some(crate::delegation::worktree::WorktreeBase::Ref(
                "release".into()
            ))
        );
        let err = parse("---\ndescription: d\nisolation: vm\n---\nb", "x").unwrap_err();
        assert!(err.contains("isolation \"vm\" is not known"), "{err}");
    }

    #[test]
    fn a_missing_name_comes_from_the_file_name() {
        let def = parse("---\ndescription: Looks things up\n---\nbody", "researcher").unwrap();
        assert_eq!(def.name, "researcher");
        let err = parse("---\ndescription: d\n---\nbody", "Code Reviewer").unwrap_err();
        assert!(
            err.contains("invalid agent name \"Code Reviewer\""),
            "{err}"
        );
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let cases = [
            ("just text", "must start with a '---' line"),
            ("---\nname: x\n", "not closed"),
            ("---\nname: [unclosed\n---\nbody", "not valid YAML"),
            ("---\njust a string\n---\nbody", "not valid YAML"),
            ("---\nname: x\n---\nbody", "no description"),
            ("---\n---\nbody", "no description"),
            (
                "---\ndescription: d\ntools: NotebookEdit, ExitPlanMode\n---\nb",
                "none of its tools",
            ),
            (
                "---\ndescription: d\nmax_iterations: many\n---\nb",
                "not valid YAML",
            ),
            (
                "---\ndescription: d\nmax_iterations: 0\n---\nb",
                "max_iterations is 0",
            ),
            (
                "---\ndescription: d\ntools: {a: 1}\n---\nb",
                "not valid YAML",
            ),
            (
                "---\nname: Bad_Name\ndescription: d\n---\nb",
                "invalid agent name",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(text, "x").unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn empty_tools_mean_every_tool() {
        for text in [
            "---\ndescription: d\ntools:\n---\nb",
            "---\ndescription: d\ntools: \"\"\n---\nb",
            "---\ndescription: d\ntools: []\n---\nb",
        ] {
            assert_eq!(parse(text, "x").unwrap().tools, None, "{text:?}");
        }
    }
}
