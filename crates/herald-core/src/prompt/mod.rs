//! System prompt assembly.
//!
//! The prompt is a stack of layers, each with its own size budget: identity
//! (`$HERALD_HOME/SOUL.md` or the built-in one), the working rules, project
//! context files (`AGENTS.md` / `CLAUDE.md` from the repository root down to
//! the working directory, with the files they import by `@path`), the memory
//! snapshot, the skills index and the environment facts. It is built once
//! when a session starts, stored with the session and replayed byte for byte
//! afterwards, so the same inputs must always give the same bytes.

mod context_files;
mod context_layer;
mod report;

use std::path::{Path, PathBuf};

pub use context_files::{
    ContextFile, ContextFiles, Import, ImportRoots, ImportStatus, find_context_files,
};
pub use context_layer::{ContextFileReport, ContextReport};
pub use report::{LayerReport, PromptReport};

/// The built-in identity, used when `$HERALD_HOME/SOUL.md` is absent or empty.
const IDENTITY: &str = "You are herald, an autonomous agent working on the user's machine through tools. \
Work until the task is done, then reply with a concise answer: what you did, what you found, and anything left open.";

/// The working rules. Tool-specific guidance lives in each tool's
/// description, not here, so this text never needs to change.
const GUIDANCE: &str = "\
# Working rules
- Act through tools without asking permission. Read before you edit; verify changes (build, tests) when you can.
- Independent read-only calls (read_file, search_files) may go together in one reply; they run in parallel.
- A tool error is information: adjust the call and continue; never repeat a failing call unchanged.
- Paths are relative to the working directory below unless absolute. Keep answers short; do not restate tool output.";

/// Character budgets of the prompt layers. A layer over its budget keeps its
/// head and tail with a marker naming what was left out, so one oversized
/// file can never crowd out the rest of the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptBudgets {
    /// `SOUL.md`.
    pub soul_chars: usize,
    /// Each `AGENTS.md` / `CLAUDE.md` file (and each file they import).
    pub context_file_chars: usize,
    /// All project context files together, shared fairly when short
    /// (see `context_layer`).
    pub context_total_chars: usize,
    /// The memory snapshot block.
    pub memory_chars: usize,
    /// The skills index block.
    pub skills_chars: usize,
}

impl Default for PromptBudgets {
    fn default() -> Self {
        Self {
            soul_chars: 4_000,
            context_file_chars: 8_000,
            context_total_chars: 16_000,
            memory_chars: 6_000,
            skills_chars: 4_000,
        }
    }
}

/// Everything the system prompt is built from. Collected by the front end
/// when a session starts; the prompt is a pure function of these values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptInputs {
    /// The session's working directory; context files are searched from here.
    pub cwd: PathBuf,
    /// The model name, stated in the environment facts.
    pub model: String,
    /// `$HERALD_HOME`, where `SOUL.md` may replace the built-in identity
    /// (context files may import from it too).
    pub home: Option<PathBuf>,
    /// The user's home directory (`$HOME`): `@~/…` imports start there, and
    /// `~/.claude` may be imported from.
    pub user_home: Option<PathBuf>,
    /// The memory snapshot (MEMORY.md / USER.md as loaded at session start).
    pub memory_block: Option<String>,
    /// The compact skills index.
    pub skills_index: Option<String>,
    /// `YYYY-MM-DD`, stated in the environment facts.
    pub date: String,
    /// Size limits of each layer.
    pub budgets: PromptBudgets,
}

impl PromptInputs {
    /// Inputs for `cwd` and `model` with today's (UTC) date, default budgets
    /// and no home, memory or skills layers.
    pub fn new(cwd: impl Into<PathBuf>, model: impl Into<String>) -> Self {
        let now = herald_protocol::now_rfc3339();
        let date = now.get(..10).unwrap_or(&now).to_owned();
        Self {
            cwd: cwd.into(),
            model: model.into(),
            home: None,
            user_home: std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(PathBuf::from),
            memory_block: None,
            skills_index: None,
            date,
            budgets: PromptBudgets::default(),
        }
    }

    /// Sets `$HERALD_HOME` (for `SOUL.md`).
    pub fn with_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
    }
}

/// Builds the system prompt of a new session: identity, working rules,
/// project context, memory, skills index and environment facts, in that
/// order, each within its budget. Deterministic for given inputs.
pub fn build_system_prompt(inputs: &PromptInputs) -> String {
    build_prompt_report(inputs).text
}

/// [`build_system_prompt`] with an account of each layer (sizes, budgets,
/// cuts, context files and imports): the one builder behind both a new
/// session's prompt and `herald context`, so the two cannot disagree.
pub fn build_prompt_report(inputs: &PromptInputs) -> PromptReport {
    let budgets = &inputs.budgets;
    let mut sections: Vec<String> = Vec::with_capacity(6);
    let mut layers: Vec<LayerReport> = Vec::with_capacity(6);
    let mut add = |text: Option<String>, name, source: String, budget, cut_chars| {
        layers.push(LayerReport {
            name,
            source,
            chars: text.as_deref().map_or(0, |t| t.chars().count()),
            budget,
            cut_chars,
        });
        sections.extend(text);
    };
    let (text, source, cut) = identity(inputs.home.as_deref(), budgets.soul_chars);
    add(
        Some(text),
        "identity",
        source,
        Some(budgets.soul_chars),
        cut,
    );
    add(
        Some(GUIDANCE.to_owned()),
        "working rules",
        "built in".to_owned(),
        None,
        0,
    );
    let roots = ImportRoots {
        user_home: inputs.user_home.clone(),
        herald_home: inputs.home.clone(),
    };
    let found = find_context_files(&inputs.cwd, &roots);
    let (text, context) = context_layer::render(
        &found,
        budgets.context_file_chars,
        budgets.context_total_chars,
    );
    let cut = context.files.iter().map(|f| f.cut_chars).sum();
    let source = format!(
        "{} file(s) from {} down to {}",
        context.files.len(),
        context.repo_root.as_deref().map_or_else(
            || "the filesystem root".to_owned(),
            |r| r.display().to_string()
        ),
        inputs.cwd.display()
    );
    add(
        text,
        "project context",
        source,
        Some(budgets.context_total_chars),
        cut,
    );
    for (block, limit, name, source) in [
        (
            &inputs.memory_block,
            budgets.memory_chars,
            "memory",
            "memory snapshot (MEMORY.md, USER.md)",
        ),
        (
            &inputs.skills_index,
            budgets.skills_chars,
            "skills index",
            "skills index",
        ),
    ] {
        let text = block.as_deref().map(str::trim).filter(|t| !t.is_empty());
        let (text, cut) = match text {
            Some(text) => {
                let (kept, cut) = head_tail(text, limit, name);
                (Some(kept), cut)
            }
            None => (None, 0),
        };
        add(text, name, source.to_owned(), Some(limit), cut);
    }
    let environment = format!(
        "# Environment\n- Working directory: {}\n- Platform: {} ({})\n- Date: {}\n- Model: {}",
        inputs.cwd.display(),
        std::env::consts::OS,
        std::env::consts::ARCH,
        inputs.date,
        inputs.model,
    );
    add(
        Some(environment),
        "environment",
        "built in".to_owned(),
        None,
        0,
    );
    let mut prompt = sections.join("\n\n");
    prompt.push('\n');
    PromptReport {
        chars: prompt.chars().count(),
        bytes: prompt.len(),
        text: prompt,
        layers,
        context,
    }
}

/// `SOUL.md` from the home directory when it holds text, else the built-in
/// identity; with its source and the characters cut.
fn identity(home: Option<&Path>, limit: usize) -> (String, String, usize) {
    let path = home.map(|home| home.join("SOUL.md"));
    let soul = path
        .as_ref()
        .and_then(|path| std::fs::read(path).ok())
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .filter(|text| !text.is_empty());
    match (soul, path) {
        (Some(text), Some(path)) => {
            let (text, cut) = head_tail(&text, limit, "SOUL.md");
            (text, path.display().to_string(), cut)
        }
        _ => (IDENTITY.to_owned(), "built in".to_owned(), 0),
    }
}

/// `text` if it fits in `limit` characters, else its head and tail with a
/// marker in between naming `what` was cut and by how much. The result is at
/// most `limit` characters plus the marker line.
pub(crate) fn keep_head_tail(text: &str, limit: usize, what: &str) -> String {
    head_tail(text, limit, what).0
}

/// [`keep_head_tail`] and the number of characters it left out.
fn head_tail(text: &str, limit: usize, what: &str) -> (String, usize) {
    let total = text.chars().count();
    if total <= limit {
        return (text.to_owned(), 0);
    }
    let head_chars = limit * 7 / 10;
    let tail_chars = limit - head_chars;
    let byte_at = |n: usize| text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
    let head = &text[..byte_at(head_chars)];
    let tail = &text[byte_at(total - tail_chars)..];
    let cut = total - head_chars - tail_chars;
    (
        format!(
            "{head}\n[... {cut} of {total} characters of {what} left out to fit the prompt budget ...]\n{tail}"
        ),
        cut,
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn inputs(cwd: &Path) -> PromptInputs {
        let mut inputs = PromptInputs::new(cwd, "m1");
        inputs.date = "2026-01-02".into();
        inputs
    }

    #[test]
    fn prompt_names_environment_and_is_compact() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let prompt = build_system_prompt(&inputs(dir.path()));
        assert!(prompt.contains(&format!("Working directory: {}", dir.path().display())));
        assert!(prompt.contains("Model: m1"));
        assert!(prompt.contains("Date: 2026-01-02"));
        assert!(prompt.starts_with(IDENTITY));
        assert!(!prompt.contains("# Project context"));
        assert!(prompt.len() < 2000, "{}", prompt.len());
    }

    #[test]
    fn layers_come_in_order_and_the_prompt_is_deterministic() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        let sub = repo.path().join("crate");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(repo.path().join("AGENTS.md"), "outer rules").unwrap();
        std::fs::write(sub.join("AGENTS.md"), "inner rules").unwrap();
        std::fs::write(home.path().join("SOUL.md"), "You are Ada.\n").unwrap();
        let mut inputs = inputs(&sub).with_home(home.path());
        inputs.memory_block = Some("MEMORY [1% — 20/2,200 chars]\nuses tabs".into());
        inputs.skills_index = Some("Skills: deploy — ship it".into());
        let prompt = build_system_prompt(&inputs);
        let at = |needle: &str| {
            prompt
                .find(needle)
                .unwrap_or_else(|| panic!("{needle} missing"))
        };
        assert!(prompt.starts_with("You are Ada."));
        assert!(!prompt.contains(IDENTITY));
        assert!(at("# Working rules") < at("outer rules"));
        assert!(at("outer rules") < at("inner rules"));
        assert!(at("inner rules") < at("uses tabs"));
        assert!(at("uses tabs") < at("deploy — ship it"));
        assert!(at("deploy — ship it") < at("# Environment"));
        assert_eq!(prompt, build_system_prompt(&inputs));
    }

    #[test]
    fn oversized_layers_keep_their_heads() {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        let big = format!("FIRST{}LAST", "x".repeat(50_000));
        std::fs::write(repo.path().join("AGENTS.md"), &big).unwrap();
        let mut inputs = inputs(repo.path());
        inputs.memory_block = Some(format!("MEMSTART{}MEMEND", "m".repeat(20_000)));
        let report = build_prompt_report(&inputs);
        let prompt = &report.text;
        // A context file keeps its head and says how to read the rest.
        assert!(prompt.contains("FIRST") && !prompt.contains("LAST"));
        let agents = repo.path().join("AGENTS.md");
        assert!(prompt.contains(&format!(
            "[... 42,009 more chars: read_file {} from line 1]",
            agents.display()
        )));
        // Memory keeps head and tail.
        assert!(prompt.contains("MEMSTART") && prompt.contains("MEMEND"));
        let budgets = PromptBudgets::default();
        assert!(
            prompt.len() < budgets.context_file_chars + budgets.memory_chars + 3_000,
            "{}",
            prompt.len()
        );
        let layer = |name: &str| report.layers.iter().find(|l| l.name == name).unwrap();
        assert_eq!(layer("project context").cut_chars, 42_009);
        assert_eq!(layer("memory").cut_chars, 20_014 - 6_000);
        assert_eq!(report.context.files[0].kept_chars, 8_000);
        assert_eq!(report.chars, prompt.chars().count());
        let names: Vec<_> = report.layers.iter().map(|l| l.name).collect();
        assert_eq!(
            names,
            [
                "identity",
                "working rules",
                "project context",
                "memory",
                "skills index",
                "environment"
            ]
        );
        assert_eq!(layer("skills index").chars, 0);
    }

    #[test]
    fn a_short_budget_keeps_every_head_and_the_root_file() {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        let a = repo.path().join("a");
        let b = a.join("b");
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(repo.path().join("AGENTS.md"), "R".repeat(5_000)).unwrap();
        std::fs::write(a.join("AGENTS.md"), "A".repeat(5_000)).unwrap();
        std::fs::write(b.join("AGENTS.md"), "B".repeat(5_000)).unwrap();
        let mut inputs = inputs(&b);
        inputs.budgets.context_total_chars = 10_100;
        let report = build_prompt_report(&inputs);
        let prompt = &report.text;
        for ch in ["R", "A", "B"] {
            assert!(prompt.contains(&ch.repeat(3_366)), "{ch} lost its head");
            assert!(!prompt.contains(&ch.repeat(3_368)), "{ch} over its share");
        }
        assert_eq!(prompt.matches("more chars: read_file").count(), 3);
        // Outermost first.
        let root_file = repo.path().join("AGENTS.md").display().to_string();
        assert!(prompt.find(&root_file).unwrap() < prompt.find("AAAA").unwrap());
        assert!(prompt.find("RRRR").unwrap() < prompt.find("AAAA").unwrap());
        let kept: Vec<usize> = report.context.files.iter().map(|f| f.kept_chars).collect();
        assert_eq!(kept, [3_367, 3_367, 3_366]);
    }

    #[test]
    fn imports_and_their_notes_reach_the_prompt() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join("CLAUDE.md"), "@docs/style.md\n@../outside.md").unwrap();
        std::fs::create_dir(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/style.md"), "STYLE-RULES").unwrap();
        let report = build_prompt_report(&inputs(&root));
        let heading = format!(
            "## {} (imported by {})\nSTYLE-RULES",
            root.join("docs/style.md").display(),
            root.join("CLAUDE.md").display()
        );
        assert!(report.text.contains(&heading), "{}", report.text);
        assert!(
            report
                .text
                .contains("@../outside.md [import not loaded: outside the repository")
        );
        assert_eq!(report.context.imports.len(), 2);
        assert_eq!(report.context.files.len(), 2);
    }

    #[test]
    fn keep_head_tail_respects_char_boundaries() {
        let text = "é".repeat(100);
        let cut = keep_head_tail(&text, 10, "x");
        assert!(cut.starts_with("ééééééé\n[... 90 of 100"));
        assert!(cut.ends_with("...]\nééé"), "{cut}");
        assert_eq!(keep_head_tail("short", 10, "x"), "short");
    }
}
