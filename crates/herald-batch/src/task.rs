//! Task files: JSONL (one item a line: a JSON string, the prompt, or an
//! object) or CSV (a header row, then one item a row). A row's `prompt`
//! is a `{column}` template over its other fields; a few fields are the
//! item's settings.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::BatchError;
use crate::distribution::Distribution;

/// The fields of a row that are settings, not template values.
pub const RESERVED: &[&str] = &[
    "id",
    "prompt",
    "cwd",
    "model",
    "toolsets",
    "budget_usd",
    "max_turns",
    "output_schema",
];

/// One item of a batch, ready to run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Task {
    /// Its position in the file, from 0.
    pub index: usize,
    /// The row's `id`, or the start of its hash.
    pub id: String,
    /// The prompt with the row's fields filled in.
    pub prompt: String,
    /// A directory the item works in a private copy of.
    pub cwd: Option<PathBuf>,
    pub model: Option<String>,
    /// The item's toolsets (its own, or drawn from the distribution).
    pub toolsets: Option<Vec<String>>,
    /// Spend past this interrupts the item's turn.
    pub budget_usd: Option<f64>,
    /// The most model requests of the item's turn (`max_iterations`).
    pub max_turns: Option<u32>,
    /// JSON Schema the final answer must satisfy.
    pub output_schema: Option<Value>,
    /// The content hash `--resume` matches items by.
    pub hash: String,
    /// Set on the queued attempts of an eval suite: the worker prepares
    /// the task's directory and grades its deterministic checks there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval: Option<crate::eval::queued::EvalWork>,
}

/// Reads the tasks of `path` (`.csv` is CSV, anything else JSONL); the
/// distribution, if any, gives items without `toolsets` theirs.
pub fn load_tasks(
    path: &Path,
    distribution: Option<&Distribution>,
) -> Result<Vec<Task>, BatchError> {
    let text = std::fs::read_to_string(path).map_err(|err| BatchError::io(path, err))?;
    let rows = if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
    {
        csv_rows(path, &text)?
    } else {
        jsonl_rows(path, &text)?
    };
    if rows.is_empty() {
        return Err(BatchError::input(path, 1, "the file has no items"));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let mut tasks = Vec::with_capacity(rows.len());
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (index, (line, row)) in rows.into_iter().enumerate() {
        let task = task_of(index, &row, base, distribution)
            .map_err(|message| BatchError::input(path, line, message))?;
        if let Some(first) = seen.insert(task.id.clone(), line) {
            return Err(BatchError::input(
                path,
                line,
                format!(
                    "item `{}` is also on line {first}; give each item its own `id` (identical rows need one)",
                    task.id
                ),
            ));
        }
        tasks.push(task);
    }
    Ok(tasks)
}

/// A row of a task file and the line it starts on.
type Row = (usize, Map<String, Value>);

/// `(line, row)` of each JSONL item; blank lines are skipped.
fn jsonl_rows(path: &Path, text: &str) -> Result<Vec<Row>, BatchError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|err| BatchError::input(path, i + 1, format!("not JSON: {err}")))?;
        let row = match value {
            Value::String(prompt) => {
                let mut row = Map::new();
                row.insert("prompt".to_owned(), Value::String(prompt));
                row
            }
            Value::Object(row) => row,
            _ => {
                return Err(BatchError::input(
                    path,
                    i + 1,
                    "an item is a JSON string (the prompt) or an object with a `prompt` field",
                ));
            }
        };
        rows.push((i + 1, row));
    }
    Ok(rows)
}

/// `(line, row)` of each CSV row; cells are strings, empty cells absent,
/// and the setting columns are parsed (`toolsets` comma-separated,
/// `output_schema` JSON).
fn csv_rows(path: &Path, text: &str) -> Result<Vec<Row>, BatchError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|err| BatchError::input(path, 1, format!("unreadable CSV header: {err}")))?
        .clone();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|err| {
            let line = err.position().map_or(0, |p| p.line() as usize);
            BatchError::input(path, line, format!("unreadable CSV row: {err}"))
        })?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let mut row = Map::new();
        for (name, cell) in headers.iter().zip(record.iter()) {
            if cell.is_empty() {
                continue;
            }
            let value = match name {
                "toolsets" => Value::Array(
                    cell.split(',')
                        .map(|s| Value::String(s.trim().to_owned()))
                        .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
                        .collect(),
                ),
                "budget_usd" | "max_turns" => serde_json::from_str(cell).map_err(|_| {
                    BatchError::input(
                        path,
                        line,
                        format!("`{name}` must be a number, got `{cell}`"),
                    )
                })?,
                "output_schema" => serde_json::from_str(cell).map_err(|err| {
                    BatchError::input(path, line, format!("`output_schema` is not JSON: {err}"))
                })?,
                _ => Value::String(cell.to_owned()),
            };
            row.insert(name.to_owned(), value);
        }
        rows.push((line, row));
    }
    Ok(rows)
}

fn task_of(
    index: usize,
    row: &Map<String, Value>,
    base: &Path,
    distribution: Option<&Distribution>,
) -> Result<Task, String> {
    let template = match row.get("prompt") {
        Some(Value::String(p)) if !p.trim().is_empty() => p,
        Some(Value::String(_)) => return Err("the `prompt` is empty".to_owned()),
        Some(_) => return Err("`prompt` must be a string".to_owned()),
        None => return Err("the item has no `prompt` field".to_owned()),
    };
    let prompt = crate::template::render(template, row)?;
    let id = match row.get("id") {
        None => None,
        Some(Value::String(id)) if !id.trim().is_empty() => Some(id.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => return Err("`id` must be a non-empty string or a number".to_owned()),
    };
    let cwd = match row.get("cwd") {
        None => None,
        Some(Value::String(dir)) => {
            let dir = base.join(dir);
            if !dir.is_dir() {
                return Err(format!("`cwd` {} is not a directory", dir.display()));
            }
            Some(dir)
        }
        Some(_) => return Err("`cwd` must be a directory path".to_owned()),
    };
    let model = match row.get("model") {
        None => None,
        Some(Value::String(m)) if !m.trim().is_empty() => Some(m.clone()),
        Some(_) => return Err("`model` must be a non-empty string".to_owned()),
    };
    let own_toolsets = match row.get("toolsets") {
        None => None,
        Some(Value::Array(sets)) => Some(
            sets.iter()
                .map(|s| {
                    s.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| "`toolsets` must be a list of names".to_owned())
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => return Err("`toolsets` must be a list of names".to_owned()),
    };
    let budget_usd = match row.get("budget_usd") {
        None => None,
        Some(v) => match v.as_f64() {
            Some(b) if b > 0.0 => Some(b),
            _ => return Err("`budget_usd` must be a positive number".to_owned()),
        },
    };
    let max_turns = match row.get("max_turns") {
        None => None,
        Some(v) => match v.as_u64() {
            Some(n @ 1..=10_000) => Some(n as u32),
            _ => return Err("`max_turns` must be a whole number from 1 to 10000".to_owned()),
        },
    };
    let output_schema = match row.get("output_schema") {
        None => None,
        Some(schema @ Value::Object(_)) => {
            crate::output::check_schema(schema)?;
            Some(schema.clone())
        }
        Some(_) => return Err("`output_schema` must be a JSON Schema object".to_owned()),
    };
    let identity = serde_json::json!({
        "id": id,
        "prompt": prompt,
        "cwd": row.get("cwd"),
        "model": model,
        "toolsets": own_toolsets,
        "budget_usd": budget_usd,
        "max_turns": max_turns,
        "output_schema": output_schema,
        "toolset_distribution": distribution.filter(|_| own_toolsets.is_none()).map(Distribution::to_json),
    });
    let hash = crate::hash::content_hash(&identity);
    let toolsets = own_toolsets.or_else(|| distribution.map(|d| d.sample(&hash)));
    Ok(Task {
        index,
        id: id.unwrap_or_else(|| hash[..12].to_owned()),
        prompt,
        cwd,
        model,
        toolsets,
        budget_usd,
        max_turns,
        output_schema,
        hash,
        eval: None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap_or_default();
        path
    }

    #[test]
    fn jsonl_and_csv_give_the_same_items() {
        let dir = tempfile::tempdir().unwrap_or_else(|_| std::process::abort());
        let a = write(
            dir.path(),
            "t.jsonl",
            "{\"id\":\"x\",\"prompt\":\"Summarise {file}\",\"file\":\"a.md\",\"toolsets\":[\"file\"],\"max_turns\":3}\n\n\"plain prompt\"\n",
        );
        let b = write(
            dir.path(),
            "t.csv",
            "id,prompt,file,toolsets,max_turns\nx,Summarise {file},a.md,file,3\n",
        );
        let ja = load_tasks(&a, None).unwrap_or_default();
        let jb = load_tasks(&b, None).unwrap_or_default();
        assert_eq!(ja.len(), 2);
        assert_eq!(ja[0].prompt, "Summarise a.md");
        assert_eq!(ja[0].hash, jb[0].hash);
        assert_eq!(ja[1].prompt, "plain prompt");
        assert_eq!(ja[1].id.len(), 12);
    }

    #[test]
    fn bad_rows_name_their_line() {
        let dir = tempfile::tempdir().unwrap_or_else(|_| std::process::abort());
        let cases = [
            ("{\"prompt\":\"a\"}\n{\"nope\":1}\n", "no `prompt`"),
            ("{\"prompt\":\"a {b}\"}\n", "`b`"),
            ("{\"prompt\":\"a\",\"max_turns\":0}\n", "max_turns"),
            ("{\"prompt\":\"a\"}\n{\"prompt\":\"a\"}\n", "also on line 1"),
            (
                "{\"prompt\":\"a\",\"output_schema\":{\"type\":\"nonsense\"}}\n",
                "output_schema",
            ),
            ("[1]\n", "JSON string"),
        ];
        for (text, want) in cases {
            let path = write(dir.path(), "bad.jsonl", text);
            let err = load_tasks(&path, None).map(|_| ()).unwrap_err().to_string();
            assert!(err.contains(want), "{text}: {err}");
            assert!(err.contains("bad.jsonl:"), "{err}");
        }
    }
}
