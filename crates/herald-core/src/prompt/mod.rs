//! System prompt assembly (SPEC §6).
//!
//! The prompt is a stack of layers, each with its own size budget: identity
//! (`$HERALD_HOME/SOUL.md` or the built-in one), the working rules, project
//! context files (`AGENTS.md` / `CLAUDE.md` from the repository root down to
//! the working directory), the memory snapshot, the skills index and the
//! environment facts. It is built once when a session starts, stored with the
//! session and replayed byte for byte afterwards, so the same inputs must
//! always give the same bytes.

mod context_files;

use std::path::{Path, PathBuf};

pub use context_files::{ContextFile, find_context_files};

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

/// The heading and preamble of the project-context layer.
const PROJECT_CONTEXT_HEADER: &str = "\
# Project context
Instructions from the project's context files, outermost directory first. Follow them; where they conflict, the file deeper in the tree wins.";

/// Character budgets of the prompt layers. A layer over its budget keeps its
/// head and tail with a marker naming what was left out, so one oversized
/// file can never crowd out the rest of the prompt (SPEC principle 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptBudgets {
    /// `SOUL.md`.
    pub soul_chars: usize,
    /// Each `AGENTS.md` / `CLAUDE.md` file.
    pub context_file_chars: usize,
    /// All project context files together.
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
    /// `$HERALD_HOME`, where `SOUL.md` may replace the built-in identity.
    pub home: Option<PathBuf>,
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
    let budgets = &inputs.budgets;
    let mut sections: Vec<String> = Vec::with_capacity(6);
    sections.push(identity(inputs.home.as_deref(), budgets.soul_chars));
    sections.push(GUIDANCE.to_owned());
    let files = find_context_files(&inputs.cwd);
    if let Some(context) = render_context_files(&files, budgets) {
        sections.push(context);
    }
    for (block, limit, what) in [
        (&inputs.memory_block, budgets.memory_chars, "memory"),
        (&inputs.skills_index, budgets.skills_chars, "skills index"),
    ] {
        if let Some(text) = block.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            sections.push(keep_head_tail(text, limit, what));
        }
    }
    sections.push(format!(
        "# Environment\n- Working directory: {}\n- Platform: {} ({})\n- Date: {}\n- Model: {}",
        inputs.cwd.display(),
        std::env::consts::OS,
        std::env::consts::ARCH,
        inputs.date,
        inputs.model,
    ));
    let mut prompt = sections.join("\n\n");
    prompt.push('\n');
    prompt
}

/// `SOUL.md` from the home directory when it holds text, else the built-in
/// identity.
fn identity(home: Option<&Path>, limit: usize) -> String {
    let soul = home
        .map(|home| home.join("SOUL.md"))
        .and_then(|path| std::fs::read(&path).ok())
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .filter(|text| !text.is_empty());
    match soul {
        Some(text) => keep_head_tail(&text, limit, "SOUL.md"),
        None => IDENTITY.to_owned(),
    }
}

/// The project-context layer, or `None` when there are no files. Budget goes
/// to the innermost files first (they are the most specific); a file left
/// with too little room is named but not included, so the model can still
/// read it with `read_file`.
fn render_context_files(files: &[ContextFile], budgets: &PromptBudgets) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    const MIN_USEFUL: usize = 200;
    let mut remaining = budgets.context_total_chars;
    let mut bodies: Vec<Option<String>> = vec![None; files.len()];
    for (i, file) in files.iter().enumerate().rev() {
        let limit = budgets.context_file_chars.min(remaining);
        if limit < MIN_USEFUL.min(file.text.chars().count()) || limit == 0 {
            continue;
        }
        let body = keep_head_tail(&file.text, limit, &file.path.display().to_string());
        remaining = remaining.saturating_sub(body.chars().count().min(limit));
        bodies[i] = Some(body);
    }
    let mut out = String::from(PROJECT_CONTEXT_HEADER);
    for (file, body) in files.iter().zip(bodies) {
        out.push_str("\n\n## ");
        out.push_str(&file.path.display().to_string());
        out.push('\n');
        match body {
            Some(body) => out.push_str(&body),
            None => out.push_str(
                "[left out: the project-context budget is spent; read this file with read_file if it matters]",
            ),
        }
    }
    Some(out)
}

/// `text` if it fits in `limit` characters, else its head and tail with a
/// marker in between naming `what` was cut and by how much. The result is at
/// most `limit` characters plus the marker line.
pub(crate) fn keep_head_tail(text: &str, limit: usize, what: &str) -> String {
    let total = text.chars().count();
    if total <= limit {
        return text.to_owned();
    }
    let head_chars = limit * 7 / 10;
    let tail_chars = limit - head_chars;
    let byte_at = |n: usize| text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
    let head = &text[..byte_at(head_chars)];
    let tail = &text[byte_at(total - tail_chars)..];
    format!(
        "{head}\n[... {} of {total} characters of {what} left out to fit the prompt budget ...]\n{tail}",
        total - head_chars - tail_chars
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
    fn oversized_layers_keep_head_and_tail() {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        let big = format!("FIRST{}LAST", "x".repeat(50_000));
        std::fs::write(repo.path().join("AGENTS.md"), &big).unwrap();
        let mut inputs = inputs(repo.path());
        inputs.memory_block = Some(format!("MEMSTART{}MEMEND", "m".repeat(20_000)));
        let prompt = build_system_prompt(&inputs);
        assert!(prompt.contains("FIRST") && prompt.contains("LAST"));
        assert!(prompt.contains("characters of") && prompt.contains("left out"));
        assert!(prompt.contains("MEMSTART") && prompt.contains("MEMEND"));
        let budgets = PromptBudgets::default();
        assert!(
            prompt.len() < budgets.context_file_chars + budgets.memory_chars + 3_000,
            "{}",
            prompt.len()
        );
    }

    #[test]
    fn total_budget_prefers_the_innermost_files() {
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
        let prompt = build_system_prompt(&inputs);
        assert!(prompt.contains(&"B".repeat(5_000)));
        assert!(prompt.contains(&"A".repeat(5_000)));
        assert!(!prompt.contains(&"R".repeat(300)));
        assert!(prompt.contains("the project-context budget is spent"));
        // The left-out file is still named, outermost first.
        let root_file = repo.path().join("AGENTS.md").display().to_string();
        assert!(prompt.find(&root_file).unwrap() < prompt.find("AAAA").unwrap());
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
