//! Suite files: YAML (`tasks:` a list) or JSONL (one task a line). A task
//! has an `id`, a `prompt`, optionally a `cwd` (copied for each attempt),
//! a `setup` shell command run in the copy before the agent, and `checks`:
//! one-key objects such as `- tool_called: read_file`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::checks::Check;
use crate::BatchError;

/// One task of a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalTask {
    pub id: String,
    pub prompt: String,
    /// A directory each attempt works in a fresh copy of; relative to the
    /// suite file. Without it each attempt starts in an empty directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// A shell command run in the attempt's directory before the agent.
    #[serde(default)]
    pub setup: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub toolsets: Option<Vec<String>>,
    #[serde(default)]
    pub max_turns: Option<u32>,
    #[serde(default)]
    pub checks: Vec<Check>,
}

/// A suite: its tasks in order.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    #[serde(default)]
    pub name: Option<String>,
    pub tasks: Vec<EvalTask>,
}

/// Reads a suite (`.jsonl` is JSONL, anything else YAML) and checks it:
/// unique ids, non-empty prompts, existing directories, valid patterns.
pub fn load_suite(path: &Path) -> Result<Suite, BatchError> {
    let text = std::fs::read_to_string(path).map_err(|err| BatchError::io(path, err))?;
    let mut suite = if path.extension().is_some_and(|e| e == "jsonl") {
        let mut tasks = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let task: EvalTask = serde_json::from_str(line)
                .map_err(|err| BatchError::input(path, i + 1, format!("not a task: {err}")))?;
            tasks.push(task);
        }
        Suite { name: None, tasks }
    } else {
        serde_saphyr::from_str(&text).map_err(|err| {
            BatchError::input(
                path,
                1,
                format!("not a suite (`tasks:` a list of tasks with id, prompt and checks): {err}"),
            )
        })?
    };
    if suite.tasks.is_empty() {
        return Err(BatchError::input(path, 1, "the suite has no tasks"));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let mut seen = std::collections::HashSet::new();
    for task in &mut suite.tasks {
        let fail = |message: String| {
            BatchError::Invalid(format!("{}: task `{}`: {message}", path.display(), task.id))
        };
        if task.id.trim().is_empty() {
            return Err(BatchError::Invalid(format!(
                "{}: a task has an empty `id`",
                path.display()
            )));
        }
        if !seen.insert(task.id.clone()) {
            return Err(fail(
                "the id is used twice; give each task its own".to_owned(),
            ));
        }
        if task.prompt.trim().is_empty() {
            return Err(fail("the prompt is empty".to_owned()));
        }
        if let Some(cwd) = &task.cwd {
            let dir = base.join(cwd);
            if !dir.is_dir() {
                return Err(fail(format!("`cwd` {} is not a directory", dir.display())));
            }
            // Absolute: queued attempts find it from a worker's directory.
            task.cwd = Some(dir.canonicalize().unwrap_or(dir));
        }
        for check in &task.checks {
            check.validate().map_err(fail)?;
        }
    }
    if suite.name.is_none() {
        suite.name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    }
    Ok(suite)
}
