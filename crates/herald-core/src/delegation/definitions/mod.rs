//! Agent definitions: Markdown files with YAML front matter (`name`,
//! `description`, `tools`, `model`, `max_iterations`) that `delegate_task`
//! can name with `agent: NAME` — the body becomes the child's instructions,
//! its tools the child's allow list. Claude Code subagent files
//! (`.claude/agents/*.md`) are read as they are written there.
//!
//! Where they are found, first found wins for a name: the project folders
//! from the working directory up to the repository root (nearest first),
//! each with `.agents/agents/` before `.claude/agents/`, then
//! `$HERALD_HOME/agents/`. A project's definition so overrides a personal
//! one of the same name, and herald's own folder overrides Claude Code's.
//! A file that cannot be used is skipped with a problem naming it.

mod names;
mod parse;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use names::{HERALD_TOOLS, map_tools, resolve_model};
pub use parse::{ParsedDef, parse, validate_name};

/// Largest definition file read, in bytes.
pub const MAX_FILE_BYTES: u64 = 64 * 1024;
/// Most definitions read, so a huge folder cannot stall a session.
pub const MAX_DEFINITIONS: usize = 200;
/// Most definitions the `delegate_task` description lists.
pub const MAX_LISTED: usize = 30;
/// Longest `name: description` line in that list, in chars.
pub const MAX_LINE_CHARS: usize = 160;

/// Which folder a definition came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DefSource {
    /// A project's `.agents/agents/`.
    Agents,
    /// A project's `.claude/agents/` (Claude Code subagents).
    Claude,
    /// `$HERALD_HOME/agents/`.
    Home,
}

impl DefSource {
    /// Short label used in listings.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agents => ".agents",
            Self::Claude => ".claude",
            Self::Home => "home",
        }
    }
}

/// One usable agent definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentDef {
    pub name: String,
    pub description: String,
    /// herald tool names; `None` = every tool the delegating agent may grant.
    pub tools: Option<Vec<String>>,
    /// `None` = the children's usual model; else an alias or a model id.
    pub model: Option<String>,
    pub max_iterations: Option<u32>,
    /// Children of this definition work in their own git worktree.
    pub isolation: Option<crate::delegation::worktree::WorktreeBase>,
    /// The child's instructions (the file's body).
    pub instructions: String,
    pub path: PathBuf,
    pub source: DefSource,
    /// What herald left out or changed when reading it.
    pub notes: Vec<String>,
}

/// The definitions one session can use, sorted by name, and what was
/// skipped (one line per file, naming it).
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentDefs {
    pub definitions: Vec<AgentDef>,
    /// Files that cannot be used, with why (warned about).
    pub problems: Vec<String>,
    /// Files overridden by an earlier one of the same name (precedence at
    /// work, not a mistake: listed, not warned about).
    pub shadowed: Vec<String>,
}

/// The folders definitions are read from, in precedence order.
pub fn definition_dirs(home: &Path, cwd: &Path) -> Vec<(PathBuf, DefSource)> {
    let mut dirs = Vec::new();
    for dir in herald_knowledge::skills::project_dirs(cwd) {
        dirs.push((dir.join(".agents/agents"), DefSource::Agents));
        dirs.push((dir.join(".claude/agents"), DefSource::Claude));
    }
    dirs.push((home.join("agents"), DefSource::Home));
    dirs
}

impl AgentDefs {
    /// Reads every definition for a session in `cwd` with `home` as
    /// `$HERALD_HOME`. Blocking file reads: async callers use
    /// `spawn_blocking`.
    pub fn discover(home: &Path, cwd: &Path) -> Self {
        let mut found = Self::default();
        for (dir, source) in definition_dirs(home, cwd) {
            for path in markdown_files(&dir) {
                if found.definitions.len() >= MAX_DEFINITIONS {
                    found.problems.push(format!(
                        "stopped after {MAX_DEFINITIONS} agent definitions; remove unused ones"
                    ));
                    return found.sorted();
                }
                match load(&path, source) {
                    Ok(def) => {
                        if let Some(first) = found.definitions.iter().find(|d| d.name == def.name) {
                            found.shadowed.push(format!(
                                "{}: agent {:?} is shadowed by {}",
                                path.display(),
                                def.name,
                                first.path.display()
                            ));
                        } else {
                            found.definitions.push(def);
                        }
                    }
                    Err(reason) => found
                        .problems
                        .push(format!("{}: skipped: {reason}", path.display())),
                }
            }
        }
        found.sorted()
    }

    fn sorted(mut self) -> Self {
        self.definitions.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }

    /// The definition called `name`, or the error the model reads (listing
    /// the names there are).
    pub fn find(&self, name: &str) -> Result<&AgentDef, String> {
        let name = name.trim();
        if let Some(def) = self.definitions.iter().find(|d| d.name == name) {
            return Ok(def);
        }
        Err(if self.definitions.is_empty() {
            format!(
                "no agent definition {name:?}: there are none (they are Markdown files in .agents/agents/, .claude/agents/ or $HERALD_HOME/agents/); leave agent out to delegate without one"
            )
        } else {
            format!(
                "no agent definition {name:?}; available: {}. Nothing was started",
                self.names().join(", ")
            )
        })
    }

    /// Every name, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.definitions.iter().map(|d| d.name.as_str()).collect()
    }

    /// The lines appended to the `delegate_task` description: one
    /// `name: description` per definition, bounded in count and length.
    /// Empty when there are none.
    pub fn tool_listing(&self) -> String {
        if self.definitions.is_empty() {
            return String::new();
        }
        let mut text = String::from(
            "\nAgent definitions (agent: NAME uses one: its instructions, tools and model):",
        );
        for def in self.definitions.iter().take(MAX_LISTED) {
            let line = herald_protocol::one_line(&format!("{}: {}", def.name, def.description));
            text.push_str("\n- ");
            text.push_str(&cut(&line, MAX_LINE_CHARS));
        }
        let rest = self.definitions.len().saturating_sub(MAX_LISTED);
        if rest > 0 {
            text.push_str(&format!("\n(and {rest} more)"));
        }
        text
    }
}

/// The first `max` chars of `text`, ending in `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((at, _)) if text.chars().count() > max => format!("{}…", &text[..at]),
        _ => text.to_owned(),
    }
}

/// The `*.md` files directly in `dir`, sorted (none when it is missing).
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "md")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| !n.starts_with('.'))
                && p.is_file()
        })
        .collect();
    files.sort();
    files
}

fn load(path: &Path, source: DefSource) -> Result<AgentDef, String> {
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "{size} bytes is larger than the {MAX_FILE_BYTES}-byte limit for an agent definition"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let parsed = parse(&text, stem)?;
    Ok(AgentDef {
        name: parsed.name,
        description: parsed.description,
        tools: parsed.tools,
        model: parsed.model,
        max_iterations: parsed.max_iterations,
        isolation: parsed.isolation,
        instructions: parsed.instructions,
        path: path.to_path_buf(),
        source,
        notes: parsed.notes,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn def(name: &str, description: &str) -> String {
        format!(
            "---\nname: {name}\ndescription: {description}\ntools: Read\n---\nYou are {name}.\n"
        )
    }

    #[test]
    fn project_over_home_and_agents_over_claude() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        let cwd = repo.path().join("sub");
        std::fs::create_dir_all(&cwd).unwrap();
        write(home.path(), "agents/reviewer.md", &def("reviewer", "home"));
        write(home.path(), "agents/mine.md", &def("mine", "only at home"));
        write(
            repo.path(),
            ".claude/agents/reviewer.md",
            &def("reviewer", "claude"),
        );
        write(
            repo.path(),
            ".agents/agents/reviewer.md",
            &def("reviewer", "agents"),
        );
        write(
            repo.path(),
            ".claude/agents/tester.md",
            &def("tester", "claude tester"),
        );
        write(&cwd, ".claude/agents/tester.md", &def("tester", "nearest"));
        write(repo.path(), ".claude/agents/notes.txt", "not markdown");
        let found = AgentDefs::discover(home.path(), &cwd);
        let summary: Vec<(&str, &str, DefSource)> = found
            .definitions
            .iter()
            .map(|d| (d.name.as_str(), d.description.as_str(), d.source))
            .collect();
        assert_eq!(
            summary,
            [
                ("mine", "only at home", DefSource::Home),
                ("reviewer", "agents", DefSource::Agents),
                ("tester", "nearest", DefSource::Claude),
            ]
        );
        assert!(found.problems.is_empty(), "{:?}", found.problems);
        let shadowed = found.shadowed.join("\n");
        assert_eq!(found.shadowed.len(), 3, "{shadowed}");
        assert!(
            shadowed.contains(".claude/agents/reviewer.md: agent \"reviewer\" is shadowed by")
                && shadowed.contains("agents/reviewer.md: agent \"reviewer\" is shadowed by"),
            "{shadowed}"
        );
        assert!(!shadowed.contains("notes.txt"), "{shadowed}");
        assert_eq!(found.definitions[1].instructions, "You are reviewer.");
        assert!(
            found.definitions[1]
                .path
                .ends_with(".agents/agents/reviewer.md")
        );
    }

    #[test]
    fn bad_files_are_skipped_with_a_problem_naming_them() {
        let home = tempfile::tempdir().unwrap();
        write(home.path(), "agents/good.md", &def("good", "fine"));
        write(
            home.path(),
            "agents/broken.md",
            "---\nname: [oops\n---\nbody",
        );
        write(home.path(), "agents/plain.md", "no front matter at all");
        let big = format!("{}{}", def("big", "d"), "x".repeat(MAX_FILE_BYTES as usize));
        write(home.path(), "agents/big.md", &big);
        let found = AgentDefs::discover(home.path(), home.path());
        assert_eq!(found.names(), ["good"]);
        let problems = found.problems.join("\n");
        assert!(
            problems.contains("broken.md: skipped: the front matter is not valid YAML"),
            "{problems}"
        );
        assert!(
            problems.contains("plain.md: skipped: it must start with a '---' line"),
            "{problems}"
        );
        assert!(
            problems.contains("big.md: skipped:") && problems.contains("limit"),
            "{problems}"
        );
    }

    #[test]
    fn find_lists_the_names_and_the_listing_is_bounded() {
        let home = tempfile::tempdir().unwrap();
        let none = AgentDefs::discover(home.path(), home.path());
        assert!(none.find("x").unwrap_err().contains("there are none"));
        assert_eq!(none.tool_listing(), "");
        for i in 0..(MAX_LISTED + 2) {
            let long = "word ".repeat(100);
            write(
                home.path(),
                &format!("agents/a{i:02}.md"),
                &def(&format!("a{i:02}"), &long),
            );
        }
        let found = AgentDefs::discover(home.path(), home.path());
        let err = found.find("nope").unwrap_err();
        assert!(
            err.contains("available: a00, a01") && err.contains("Nothing was started"),
            "{err}"
        );
        assert_eq!(found.find(" a01 ").unwrap().name, "a01");
        let listing = found.tool_listing();
        let lines: Vec<&str> = listing.lines().filter(|l| l.starts_with("- ")).collect();
        assert_eq!(lines.len(), MAX_LISTED);
        assert!(
            lines
                .iter()
                .all(|l| l.chars().count() <= MAX_LINE_CHARS + 2 && l.ends_with('…'))
        );
        assert!(listing.ends_with("(and 2 more)"), "{listing}");
    }
}
