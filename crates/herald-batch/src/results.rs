//! What a batch writes: `results.jsonl` (one line per item) and one
//! trajectory file per item, and reading them back for `--resume`,
//! `herald batch export` and reports.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use herald_protocol::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::BatchError;

/// How an item ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// The turn completed (and its answer fit the schema, if any).
    Completed,
    /// The turn failed, or the item could not start.
    Failed,
    /// The answer did not fit `output_schema`, also after the repair turn.
    InvalidOutput,
    /// Stopped for spending more than `budget_usd`.
    OverBudget,
    /// The turn hit `max_turns` before a final answer.
    MaxTurns,
    /// Stopped by the person running the batch (or `batch cancel`).
    Interrupted,
}

impl ItemStatus {
    /// The word used in results and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::InvalidOutput => "invalid_output",
            Self::OverBudget => "over_budget",
            Self::MaxTurns => "max_turns",
            Self::Interrupted => "interrupted",
        }
    }
}

/// Calls of one tool within an item.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolStat {
    pub calls: u64,
    /// Calls whose result was an error.
    pub errors: u64,
    pub duration_ms: u64,
}

/// Tokens an item used (its whole agent tree).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
}

/// One line of `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemResult {
    pub id: String,
    /// The content hash `--resume` matches by.
    pub hash: String,
    pub status: ItemStatus,
    /// The final answer (after the repair turn, when there was one).
    pub final_answer: Option<String>,
    /// The answer parsed as JSON, when the item has an `output_schema`.
    #[serde(default)]
    pub output: Option<Value>,
    /// Whether a repair turn was needed for the answer to fit the schema.
    #[serde(default)]
    pub repaired: bool,
    #[serde(default)]
    pub tokens: Tokens,
    /// USD; `None` when a model used has no price.
    pub cost_usd: Option<f64>,
    /// Model requests made.
    #[serde(default)]
    pub requests: u64,
    pub duration_ms: u64,
    /// Tool calls of the item's root agent in order (names).
    #[serde(default)]
    pub tool_sequence: Vec<String>,
    #[serde(default)]
    pub tool_stats: BTreeMap<String, ToolStat>,
    pub session_id: Option<String>,
    pub model: Option<String>,
    #[serde(default)]
    pub toolsets: Option<Vec<String>>,
    /// The item's working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// The worker that ran it (queue runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// The deterministic checks a worker graded in the attempt's directory
    /// (queued eval attempts); they travel back with the result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::eval::CheckOutcome>,
}

impl ItemResult {
    /// Tool calls in total.
    pub fn tool_calls(&self) -> u64 {
        self.tool_stats.values().map(|s| s.calls).sum()
    }
}

/// The conversation of one item, for export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    pub id: String,
    pub hash: String,
    pub session_id: Option<String>,
    /// Every message, the system prompt first.
    pub messages: Vec<Message>,
}

/// A batch's output directory.
#[derive(Debug, Clone)]
pub struct OutDir {
    pub dir: PathBuf,
}

impl OutDir {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `results.jsonl`.
    pub fn results_path(&self) -> PathBuf {
        self.dir.join("results.jsonl")
    }

    /// The trajectory file of the item with this hash.
    pub fn trajectory_path(&self, hash: &str) -> PathBuf {
        self.dir.join("trajectories").join(format!("{hash}.json"))
    }

    /// Where items with a `cwd` get their private copies.
    pub fn work_root(&self) -> PathBuf {
        self.dir.join("work")
    }

    /// Creates the directory and its `trajectories/`.
    pub fn create(&self) -> Result<(), BatchError> {
        let dir = self.dir.join("trajectories");
        std::fs::create_dir_all(&dir).map_err(|err| BatchError::io(&dir, err))
    }

    /// Every result line, in file order; a line cut short by a crash (the
    /// last one) is skipped.
    pub fn read_results(&self) -> Result<Vec<ItemResult>, BatchError> {
        read_results(&self.results_path())
    }

    /// Appends one result line and flushes it.
    pub fn append(&self, result: &ItemResult) -> Result<(), BatchError> {
        let path = self.results_path();
        let mut line = serde_json::to_string(result)
            .map_err(|err| BatchError::Invalid(format!("cannot encode a result: {err}")))?;
        line.push('\n');
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|err| BatchError::io(&path, err))?;
        file.write_all(line.as_bytes())
            .map_err(|err| BatchError::io(&path, err))
    }

    /// Writes an item's trajectory.
    pub fn write_trajectory(&self, trajectory: &Trajectory) -> Result<(), BatchError> {
        let path = self.trajectory_path(&trajectory.hash);
        let text = serde_json::to_vec(trajectory)
            .map_err(|err| BatchError::Invalid(format!("cannot encode a trajectory: {err}")))?;
        write_atomic(&path, &text)
    }

    /// Reads an item's trajectory, if it was written.
    pub fn read_trajectory(&self, hash: &str) -> Result<Option<Trajectory>, BatchError> {
        let path = self.trajectory_path(hash);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|err| BatchError::input(&path, 1, format!("not a trajectory: {err}"))),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(BatchError::io(&path, err)),
        }
    }

    /// Rewrites `results.jsonl` with one line per item of `order` (the
    /// latest result of each hash), in that order; results of items no
    /// longer in the task file are dropped.
    pub fn compact(&self, order: &[String]) -> Result<Vec<ItemResult>, BatchError> {
        let mut latest: HashMap<String, ItemResult> = HashMap::new();
        for result in self.read_results()? {
            latest.insert(result.hash.clone(), result);
        }
        let kept: Vec<ItemResult> = order.iter().filter_map(|h| latest.remove(h)).collect();
        let mut text = Vec::new();
        for result in &kept {
            serde_json::to_writer(&mut text, result)
                .map_err(|err| BatchError::Invalid(format!("cannot encode a result: {err}")))?;
            text.push(b'\n');
        }
        write_atomic(&self.results_path(), &text)?;
        Ok(kept)
    }
}

/// Reads a `results.jsonl`; a last line cut short by a crash is skipped.
pub fn read_results(path: &Path) -> Result<Vec<ItemResult>, BatchError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(BatchError::io(path, err)),
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut results = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str(line) {
            Ok(result) => results.push(result),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {}
            Err(err) => {
                return Err(BatchError::input(
                    path,
                    i + 1,
                    format!("not a result line: {err}"),
                ));
            }
        }
    }
    Ok(results)
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BatchError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|err| BatchError::io(parent, err))?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|err| BatchError::io(&tmp, err))?;
    std::fs::rename(&tmp, path).map_err(|err| BatchError::io(path, err))
}
