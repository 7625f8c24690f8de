//! The `todo_write` and `todo_read` tools: a session task list
//! that lives beside the conversation instead of inside the prompt, so
//! planning never disturbs the cached prefix.
//!
//! The list is held in [`TodoState`] on the agent's [`crate::AgentState`]. The
//! agent persists it after each change ([`TodoState::take_changed`]), restores
//! it on resume ([`TodoState::restore`]), and the tool runner asks
//! [`TodoState::after_batch`] whether the newest tool result should carry a
//! one-line reminder. All usage rules live in the tool descriptions.

use std::sync::{Mutex, MutexGuard, PoisonError};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{ToolContext, ToolError, TypedTool};

/// Most items the list may hold; a write that would exceed it is refused.
pub const MAX_TODO_ITEMS: usize = 256;
/// Longest item content in chars; longer content is cut and marked.
pub const MAX_TODO_CONTENT_CHARS: usize = 4000;
/// Tool calls without a todo update (while items are open) after which the
/// next result gets a reminder; the reminder fires once the count exceeds it.
pub const TODO_NUDGE_AFTER_CALLS: u32 = 10;

/// The reminder appended after too many calls without a todo update.
pub const STALE_PLAN_NUDGE: &str =
    "[todo] 10+ tool calls since the task list last changed; call todo_read to review your plan.";
/// The reminder appended to a failing result while items are open.
pub const FAILURE_NUDGE: &str = "[todo] This failure may affect your plan; call todo_read to review it (cancel and re-plan items that no longer work).";

const CUT_MARKER: &str = " [cut to 4000 chars]";

/// The four states of a task. There is deliberately no `failed` or `blocked`:
/// a failed item is cancelled and replaced by a revised one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

impl TodoStatus {
    /// Reads a status leniently (case, spaces, dashes and common synonyms),
    /// so a sloppy item is normalised instead of rejected.
    pub fn parse_lenient(text: &str) -> Option<Self> {
        let key: String = text
            .trim()
            .to_ascii_lowercase()
            .chars()
            .filter(|c| !matches!(c, ' ' | '-' | '_'))
            .collect();
        match key.as_str() {
            "pending" | "todo" | "open" | "notstarted" => Some(Self::Pending),
            "inprogress" | "active" | "doing" | "started" | "working" => Some(Self::InProgress),
            "completed" | "complete" | "done" | "finished" => Some(Self::Completed),
            "cancelled" | "canceled" | "cancel" | "dropped" | "skipped" => Some(Self::Cancelled),
            _ => None,
        }
    }

    /// Open items still need work: `pending` and `in_progress`.
    pub fn is_open(self) -> bool {
        matches!(self, Self::Pending | Self::InProgress)
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// One task: an id the model chose, what to do, and its state. List order is
/// priority; there are no other fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    pub id: String,
    pub content: String,
    pub status: TodoStatus,
}

/// Item counts returned with every list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TodoCounts {
    pub total: usize,
    pub pending: usize,
    pub in_progress: usize,
    pub completed: usize,
    pub cancelled: usize,
}

impl TodoCounts {
    fn of(items: &[TodoItem]) -> Self {
        let mut counts = Self {
            total: items.len(),
            ..Self::default()
        };
        for item in items {
            match item.status {
                TodoStatus::Pending => counts.pending += 1,
                TodoStatus::InProgress => counts.in_progress += 1,
                TodoStatus::Completed => counts.completed += 1,
                TodoStatus::Cancelled => counts.cancelled += 1,
            }
        }
        counts
    }
}

/// One agent's task list plus the bookkeeping that drives persistence and the
/// reminders. Shared by the todo tools, the tool runner and the agent.
#[derive(Debug, Default)]
pub struct TodoState {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    items: Vec<TodoItem>,
    /// Bumped on every change; compared with `saved` to know what to persist.
    version: u64,
    saved: u64,
    /// Tool calls since the list last changed (reported by `todo_read`).
    calls_since_update: u32,
    /// Tool calls since the model last wrote or read the list, or was
    /// reminded; drives the stale-plan reminder.
    calls_since_checkpoint: u32,
}

impl TodoState {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current list in priority order.
    pub fn items(&self) -> Vec<TodoItem> {
        self.lock().items.clone()
    }

    /// Whether any item is `pending` or `in_progress`.
    pub fn has_open_items(&self) -> bool {
        self.lock().items.iter().any(|i| i.status.is_open())
    }

    /// Tool calls since the list last changed.
    pub fn calls_since_update(&self) -> u32 {
        self.lock().calls_since_update
    }

    /// The list as JSON when it changed since the last call, so the agent can
    /// store it in the same round trip as the new messages; `None` otherwise.
    pub fn take_changed(&self) -> Option<String> {
        let mut inner = self.lock();
        if inner.version == inner.saved {
            return None;
        }
        inner.saved = inner.version;
        serde_json::to_string(&inner.items).ok()
    }

    /// Replaces the list with one stored earlier (a resumed session). The
    /// restored list counts as saved.
    pub fn restore(&self, json: &str) -> Result<(), serde_json::Error> {
        let items: Vec<TodoItem> = serde_json::from_str(json)?;
        let mut inner = self.lock();
        inner.items = items;
        inner.saved = inner.version;
        inner.calls_since_update = 0;
        inner.calls_since_checkpoint = 0;
        Ok(())
    }

    /// The open items as one compact message, for re-showing the plan after
    /// context compression; `None` when nothing is open.
    pub fn open_items_message(&self) -> Option<String> {
        let inner = self.lock();
        let open: Vec<&TodoItem> = inner.items.iter().filter(|i| i.status.is_open()).collect();
        if open.is_empty() {
            return None;
        }
        let mut text = String::from("[todo] Your task list, kept across context compression:");
        for item in &open {
            let mark = if item.status == TodoStatus::InProgress {
                "[>]"
            } else {
                "[ ]"
            };
            text.push_str(&format!(
                "\n{mark} {}. {} ({})",
                item.id,
                item.content,
                item.status.as_str()
            ));
        }
        let closed = inner.items.len() - open.len();
        if closed > 0 {
            text.push_str(&format!(
                "\n({closed} completed or cancelled items not shown; todo_read lists all.)"
            ));
        }
        Some(text)
    }

    /// Accounts for one finished batch of tool calls (name and whether it
    /// failed, in call order) and returns the one line to append to the
    /// batch's last result, if any: a plan review after a failure, or a
    /// `todo_read` reminder once more than 10 calls passed without an update.
    /// Both need open items; a successful todo call resets the count.
    pub fn after_batch<'a>(
        &self,
        results: impl IntoIterator<Item = (&'a str, bool)>,
    ) -> Option<&'static str> {
        let mut counted = 0u32;
        let mut failed = false;
        for (name, is_error) in results {
            let is_todo = name == TodoWrite::NAME || name == TodoRead::NAME;
            if is_todo && !is_error {
                // The tool itself reset the counters when it ran.
                counted = 0;
                failed = false;
            } else if !is_todo {
                counted += 1;
                failed |= is_error;
            }
        }
        let mut inner = self.lock();
        inner.calls_since_update = inner.calls_since_update.saturating_add(counted);
        inner.calls_since_checkpoint = inner.calls_since_checkpoint.saturating_add(counted);
        if !inner.items.iter().any(|i| i.status.is_open()) {
            return None;
        }
        if failed {
            inner.calls_since_checkpoint = 0;
            return Some(FAILURE_NUDGE);
        }
        if inner.calls_since_checkpoint > TODO_NUDGE_AFTER_CALLS {
            inner.calls_since_checkpoint = 0;
            return Some(STALE_PLAN_NUDGE);
        }
        None
    }

    /// Applies a `todo_write` call and returns its report (full list, counts
    /// and any normalisation notes). Over the item cap nothing changes.
    fn write(&self, raw: Vec<Value>, merge: bool) -> Result<String, ToolError> {
        let mut inner = self.lock();
        let mut notes = Vec::new();
        let items = if merge {
            merge_items(&inner.items, raw, &mut notes)
        } else {
            replace_items(raw, &mut notes)
        };
        if items.len() > MAX_TODO_ITEMS {
            return Err(ToolError::new(format!(
                "the list would hold {} items; the limit is {MAX_TODO_ITEMS}. Nothing was changed. \
                 Drop completed and cancelled items (merge=false with the items you keep) or group small steps into one item.",
                items.len()
            )));
        }
        let in_progress = items
            .iter()
            .filter(|i| i.status == TodoStatus::InProgress)
            .count();
        if in_progress > 1 {
            notes.push(format!(
                "{in_progress} items are in_progress; keep exactly one in progress"
            ));
        }
        if items != inner.items {
            inner.items = items;
            inner.version += 1;
        }
        inner.calls_since_update = 0;
        inner.calls_since_checkpoint = 0;
        Ok(report(&inner.items, None, &notes))
    }

    /// Answers a `todo_read` call; reading the plan counts as a checkpoint
    /// for the reminder but not as an update.
    fn read(&self) -> String {
        let mut inner = self.lock();
        inner.calls_since_checkpoint = 0;
        report(&inner.items, Some(inner.calls_since_update), &[])
    }
}

/// The JSON both tools return.
fn report(items: &[TodoItem], calls_since_update: Option<u32>, notes: &[String]) -> String {
    let mut out = Map::new();
    out.insert(
        "todos".into(),
        serde_json::to_value(items).unwrap_or_default(),
    );
    out.insert(
        "counts".into(),
        serde_json::to_value(TodoCounts::of(items)).unwrap_or_default(),
    );
    if let Some(calls) = calls_since_update {
        out.insert("tool_calls_since_update".into(), Value::from(calls));
    }
    if !notes.is_empty() {
        out.insert("notes".into(), Value::from(notes.to_vec()));
    }
    Value::Object(out).to_string()
}

/// One input item after normalisation. `None` fields were not given (or were
/// unusable), which matters when merging into an existing item.
struct Incoming {
    id: Option<String>,
    content: Option<String>,
    status: Option<TodoStatus>,
}

/// Reads one raw item leniently, noting every repair.
fn normalise(raw: Value, position: usize, notes: &mut Vec<String>) -> Option<Incoming> {
    let n = position + 1;
    let obj = match raw {
        Value::Object(obj) => obj,
        Value::String(text) => {
            notes.push(format!(
                "item {n} was a bare string; read it as a pending item's content"
            ));
            let mut obj = Map::new();
            obj.insert("content".into(), Value::String(text));
            obj
        }
        other => {
            notes.push(format!(
                "item {n} is not an object ({}); skipped",
                json_kind(&other)
            ));
            return None;
        }
    };
    let id = match obj.get("id") {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Some(Value::Number(num)) => Some(num.to_string()),
        None | Some(Value::Null) => None,
        Some(Value::String(_)) => None,
        Some(other) => {
            notes.push(format!(
                "item {n}: id must be a string, got {}; a new id was assigned",
                json_kind(other)
            ));
            None
        }
    };
    let content = match obj.get("content") {
        Some(Value::String(s)) => Some(s.trim().to_owned()).filter(|s| !s.is_empty()),
        None | Some(Value::Null) => None,
        Some(other) => {
            notes.push(format!("item {n}: content should be a string"));
            Some(other.to_string())
        }
    }
    .map(|content| cap_content(content, n, notes));
    let status = match obj.get("status") {
        Some(Value::String(s)) => {
            let parsed = TodoStatus::parse_lenient(s);
            match parsed {
                Some(status) if status.as_str() != s.as_str() => {
                    notes.push(format!("item {n}: status '{s}' read as {}", status.as_str()));
                }
                Some(_) => {}
                None => notes.push(format!(
                    "item {n}: unknown status '{s}' (use pending, in_progress, completed or cancelled)"
                )),
            }
            parsed
        }
        None | Some(Value::Null) => None,
        Some(other) => {
            notes.push(format!(
                "item {n}: status must be a string, got {}",
                json_kind(other)
            ));
            None
        }
    };
    let unknown: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "id" | "content" | "status"))
        .collect();
    if !unknown.is_empty() {
        notes.push(format!(
            "item {n}: ignored field(s) {} (items have only id, content, status; order is priority)",
            unknown.join(", ")
        ));
    }
    Some(Incoming {
        id,
        content,
        status,
    })
}

fn cap_content(content: String, n: usize, notes: &mut Vec<String>) -> String {
    let total = content.chars().count();
    if total <= MAX_TODO_CONTENT_CHARS {
        return content;
    }
    let keep = MAX_TODO_CONTENT_CHARS - CUT_MARKER.chars().count();
    let mut cut: String = content.chars().take(keep).collect();
    cut.push_str(CUT_MARKER);
    notes.push(format!(
        "item {n}: content was {total} chars; cut to {MAX_TODO_CONTENT_CHARS}"
    ));
    cut
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The smallest positive integer id not used in `items`.
fn fresh_id(items: &[TodoItem]) -> String {
    let mut n = items.len() + 1;
    while items.iter().any(|i| i.id == n.to_string()) {
        n += 1;
    }
    n.to_string()
}

/// `merge=false`: the input becomes the list. A repeated id keeps the later
/// item, at the later item's position.
fn replace_items(raw: Vec<Value>, notes: &mut Vec<String>) -> Vec<TodoItem> {
    let mut items: Vec<TodoItem> = Vec::with_capacity(raw.len());
    for (position, value) in raw.into_iter().enumerate() {
        let Some(incoming) = normalise(value, position, notes) else {
            continue;
        };
        let n = position + 1;
        let Some(content) = incoming.content else {
            notes.push(format!("item {n} has no content; skipped"));
            continue;
        };
        let status = incoming.status.unwrap_or_else(|| {
            notes.push(format!("item {n}: no valid status; set to pending"));
            TodoStatus::Pending
        });
        let id = match incoming.id {
            Some(id) => {
                if let Some(at) = items.iter().position(|i| i.id == id) {
                    notes.push(format!(
                        "duplicate id '{id}': kept the later item (item {n})"
                    ));
                    items.remove(at);
                }
                id
            }
            None => {
                let id = fresh_id(&items);
                notes.push(format!("item {n} had no id; assigned '{id}'"));
                id
            }
        };
        items.push(TodoItem {
            id,
            content,
            status,
        });
    }
    items
}

/// `merge=true`: known ids get the fields that were given; new ids are
/// appended in input order.
fn merge_items(current: &[TodoItem], raw: Vec<Value>, notes: &mut Vec<String>) -> Vec<TodoItem> {
    let mut items = current.to_vec();
    for (position, value) in raw.into_iter().enumerate() {
        let Some(incoming) = normalise(value, position, notes) else {
            continue;
        };
        let n = position + 1;
        if let Some(existing) = incoming
            .id
            .as_ref()
            .and_then(|id| items.iter_mut().find(|i| &i.id == id))
        {
            if let Some(content) = incoming.content {
                existing.content = content;
            }
            if let Some(status) = incoming.status {
                existing.status = status;
            }
            continue;
        }
        let Some(content) = incoming.content else {
            match incoming.id {
                Some(id) => notes.push(format!(
                    "item {n}: no item has id '{id}' and no content was given; skipped"
                )),
                None => notes.push(format!("item {n} has neither id nor content; skipped")),
            }
            continue;
        };
        let status = incoming.status.unwrap_or(TodoStatus::Pending);
        let id = incoming.id.unwrap_or_else(|| {
            let id = fresh_id(&items);
            notes.push(format!("item {n} had no id; assigned '{id}'"));
            id
        });
        items.push(TodoItem {
            id,
            content,
            status,
        });
    }
    items
}

/// The `todo_write` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct TodoWrite;

/// Arguments of `todo_write`. Items are taken as raw JSON so that a sloppy
/// item is repaired (and reported) instead of failing the whole call.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct TodoWriteArgs {
    // Items in priority order; the tool description explains the fields.
    #[schemars(schema_with = "todo_items_schema")]
    pub todos: Vec<Value>,
    // false replaces the list; true updates by id and appends new ids.
    #[serde(default)]
    pub merge: bool,
}

fn todo_items_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let schema = serde_json::json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "content": {"type": "string"},
                "status": {"enum": ["pending", "in_progress", "completed", "cancelled"]}
            },
            "required": ["id", "content", "status"]
        }
    });
    match schema {
        Value::Object(map) => schemars::Schema::from(map),
        _ => schemars::Schema::default(),
    }
}

impl TypedTool for TodoWrite {
    type Args = TodoWriteArgs;
    const NAME: &'static str = "todo_write";
    const TOOLSET: &'static str = "todo";
    const DESCRIPTION: &'static str = "Plan multi-step work (3+ steps; not simple tasks). Order is priority. merge=true \
updates items by id and appends new ones; false replaces the list. Keep one in_progress; mark completed at once; on failure \
cancel and add a revised item; no test/verify items unless asked; update silently.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: TodoWriteArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        ctx.state.todos.write(args.todos, args.merge)
    }
}

/// The `todo_read` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct TodoRead;

/// `todo_read` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct TodoReadArgs {}

impl TypedTool for TodoRead {
    type Args = TodoReadArgs;
    const NAME: &'static str = "todo_read";
    const TOOLSET: &'static str = "todo";
    const DESCRIPTION: &'static str =
        "The task list, its counts and the tool calls since it last changed.";
    const READ_ONLY: bool = true;

    async fn run(&self, _args: TodoReadArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        Ok(ctx.state.todos.read())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use herald_protocol::ToolCall;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::{AgentState, ToolRegistry, typed};

    fn setup() -> (ToolRegistry, ToolContext) {
        let mut registry = ToolRegistry::new(100_000);
        registry.register(typed(TodoWrite));
        registry.register(typed(TodoRead));
        let state = AgentState::new(std::env::temp_dir());
        (registry, ToolContext::new(state, CancellationToken::new()))
    }

    async fn call(registry: &ToolRegistry, ctx: &ToolContext, name: &str, args: Value) -> Value {
        let call = ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args.to_string(),
        };
        let result = registry.execute(&call, ctx).await;
        assert!(!result.is_error, "{}", result.content);
        serde_json::from_str(&result.content).unwrap()
    }

    async fn write(ctx: &ToolContext, registry: &ToolRegistry, todos: Value, merge: bool) -> Value {
        call(
            registry,
            ctx,
            "todo_write",
            json!({"todos": todos, "merge": merge}),
        )
        .await
    }

    fn ids(out: &Value) -> Vec<String> {
        out["todos"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn replace_returns_full_list_and_counts() {
        let (registry, ctx) = setup();
        let out = write(
            &ctx,
            &registry,
            json!([
                {"id": "1", "content": "Set up", "status": "completed"},
                {"id": "2", "content": "Build", "status": "in_progress"},
                {"id": "3", "content": "Ship", "status": "pending"},
                {"id": "4", "content": "Old idea", "status": "cancelled"}
            ]),
            false,
        )
        .await;
        assert_eq!(ids(&out), ["1", "2", "3", "4"]);
        assert_eq!(
            out["counts"],
            json!({"total": 4, "pending": 1, "in_progress": 1, "completed": 1, "cancelled": 1})
        );
        assert!(out.get("notes").is_none(), "{out}");
        // A second replace drops what it does not mention.
        let out = write(
            &ctx,
            &registry,
            json!([{"id": "9", "content": "Only", "status": "pending"}]),
            false,
        )
        .await;
        assert_eq!(ids(&out), ["9"]);
        assert_eq!(out["counts"]["total"], 1);
    }

    #[tokio::test]
    async fn duplicate_ids_keep_the_later_item_at_its_position() {
        let (registry, ctx) = setup();
        let out = write(
            &ctx,
            &registry,
            json!([
                {"id": "a", "content": "first a", "status": "pending"},
                {"id": "b", "content": "b", "status": "pending"},
                {"id": "a", "content": "second a", "status": "in_progress"}
            ]),
            false,
        )
        .await;
        assert_eq!(ids(&out), ["b", "a"]);
        assert_eq!(out["todos"][1]["content"], "second a");
        assert!(out["notes"].to_string().contains("duplicate id 'a'"));
    }

    #[tokio::test]
    async fn merge_updates_given_fields_and_appends_new_ids() {
        let (registry, ctx) = setup();
        write(
            &ctx,
            &registry,
            json!([
                {"id": "1", "content": "one", "status": "in_progress"},
                {"id": "2", "content": "two", "status": "pending"}
            ]),
            false,
        )
        .await;
        let out = write(
            &ctx,
            &registry,
            json!([
                {"id": "1", "status": "completed"},
                {"id": "2", "content": "two, revised"},
                {"id": "3", "content": "three", "status": "pending"}
            ]),
            true,
        )
        .await;
        assert_eq!(ids(&out), ["1", "2", "3"]);
        assert_eq!(
            out["todos"][0],
            json!({"id": "1", "content": "one", "status": "completed"})
        );
        assert_eq!(
            out["todos"][1],
            json!({"id": "2", "content": "two, revised", "status": "pending"})
        );
        assert_eq!(out["counts"]["completed"], 1);
        // An unknown id without content cannot become an item.
        let out = write(
            &ctx,
            &registry,
            json!([{"id": "7", "status": "done"}]),
            true,
        )
        .await;
        assert_eq!(ids(&out), ["1", "2", "3"]);
        assert!(out["notes"].to_string().contains("no item has id '7'"));
    }

    #[tokio::test]
    async fn bad_items_are_normalised_with_notes() {
        let (registry, ctx) = setup();
        let out = write(
            &ctx,
            &registry,
            json!([
                {"id": 5, "content": "numeric id", "status": "Done"},
                {"content": "no id", "status": "in progress"},
                "bare string task",
                {"id": "x", "content": "bad status", "status": "blocked", "priority": "high"},
                {"id": "y", "status": "pending"},
                42
            ]),
            false,
        )
        .await;
        let todos = out["todos"].as_array().unwrap();
        assert_eq!(todos.len(), 4, "{out}");
        assert_eq!(
            todos[0],
            json!({"id": "5", "content": "numeric id", "status": "completed"})
        );
        assert_eq!(todos[1]["status"], "in_progress");
        assert!(!todos[1]["id"].as_str().unwrap().is_empty());
        assert_eq!(todos[2]["content"], "bare string task");
        assert_eq!(todos[2]["status"], "pending");
        assert_eq!(todos[3]["status"], "pending");
        let notes = out["notes"].to_string();
        for expected in [
            "status 'Done' read as completed",
            "had no id",
            "bare string",
            "unknown status 'blocked'",
            "ignored field(s) priority",
            "item 5 has no content; skipped",
            "item 6 is not an object",
        ] {
            assert!(notes.contains(expected), "missing {expected:?} in {notes}");
        }
        // Assigned ids never collide with given ones.
        let all = ids(&out);
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(all.len(), unique.len(), "duplicate ids in {all:?}");
    }

    #[tokio::test]
    async fn long_content_is_cut_and_marked() {
        let (registry, ctx) = setup();
        let long = "é".repeat(MAX_TODO_CONTENT_CHARS + 500);
        let out = write(
            &ctx,
            &registry,
            json!([{"id": "1", "content": long, "status": "pending"}]),
            false,
        )
        .await;
        let content = out["todos"][0]["content"].as_str().unwrap();
        assert_eq!(content.chars().count(), MAX_TODO_CONTENT_CHARS);
        assert!(content.ends_with(CUT_MARKER));
        assert!(out["notes"].to_string().contains("cut to 4000"));
    }

    #[tokio::test]
    async fn over_the_item_cap_is_an_error_and_keeps_the_list() {
        let (registry, ctx) = setup();
        write(
            &ctx,
            &registry,
            json!([{"id": "keep", "content": "k", "status": "pending"}]),
            false,
        )
        .await;
        let many: Vec<Value> = (0..=MAX_TODO_ITEMS)
            .map(|i| json!({"id": i.to_string(), "content": "x", "status": "pending"}))
            .collect();
        let call = ToolCall {
            id: "c".into(),
            name: "todo_write".into(),
            arguments: json!({"todos": many}).to_string(),
        };
        let result = registry.execute(&call, &ctx).await;
        assert!(result.is_error);
        assert!(
            result
                .content
                .contains("would hold 257 items; the limit is 256"),
            "{}",
            result.content
        );
        assert_eq!(ctx.state.todos.items().len(), 1);
        // Exactly at the cap is fine.
        let at_cap: Vec<Value> = many.into_iter().take(MAX_TODO_ITEMS).collect();
        let out = write(&ctx, &registry, Value::from(at_cap), false).await;
        assert_eq!(out["counts"]["total"], MAX_TODO_ITEMS);
    }

    #[tokio::test]
    async fn several_in_progress_items_get_a_note() {
        let (registry, ctx) = setup();
        let out = write(
            &ctx,
            &registry,
            json!([
                {"id": "1", "content": "a", "status": "in_progress"},
                {"id": "2", "content": "b", "status": "in_progress"}
            ]),
            false,
        )
        .await;
        assert!(out["notes"].to_string().contains("keep exactly one"));
    }

    #[tokio::test]
    async fn read_reports_calls_since_update_and_changes_are_taken_once() {
        let (registry, ctx) = setup();
        let todos = &ctx.state.todos;
        assert_eq!(todos.take_changed(), None);
        write(
            &ctx,
            &registry,
            json!([{"id": "1", "content": "a", "status": "in_progress"}]),
            false,
        )
        .await;
        let saved = todos.take_changed().unwrap();
        assert!(saved.contains("\"in_progress\""), "{saved}");
        assert_eq!(todos.take_changed(), None);
        // An identical rewrite is not a change.
        write(
            &ctx,
            &registry,
            json!([{"id": "1", "content": "a", "status": "in_progress"}]),
            false,
        )
        .await;
        assert_eq!(todos.take_changed(), None);
        todos.after_batch([("terminal", false), ("read_file", false), ("patch", false)]);
        let out = call(&registry, &ctx, "todo_read", json!({})).await;
        assert_eq!(out["tool_calls_since_update"], 3);
        assert_eq!(out["counts"]["in_progress"], 1);
        // Reading is not an update.
        todos.after_batch([("todo_read", false), ("terminal", false)]);
        assert_eq!(todos.calls_since_update(), 4);
    }

    #[test]
    fn restore_round_trips_and_counts_as_saved() {
        let a = TodoState::default();
        a.write(
            vec![json!({"id": "1", "content": "persist me", "status": "pending"})],
            false,
        )
        .unwrap();
        let json = a.take_changed().unwrap();
        let b = TodoState::default();
        b.restore(&json).unwrap();
        assert_eq!(a.items(), b.items());
        assert_eq!(b.take_changed(), None);
        assert!(b.restore("not json").is_err());
        assert_eq!(b.items().len(), 1);
    }

    #[test]
    fn stale_plan_reminder_after_more_than_ten_calls_with_open_items() {
        let state = TodoState::default();
        // No open items: never a reminder.
        for _ in 0..20 {
            assert_eq!(state.after_batch([("terminal", false)]), None);
        }
        state
            .write(
                vec![json!({"id": "1", "content": "a", "status": "in_progress"})],
                false,
            )
            .unwrap();
        for _ in 0..10 {
            assert_eq!(state.after_batch([("terminal", false)]), None);
        }
        assert_eq!(
            state.after_batch([("terminal", false)]),
            Some(STALE_PLAN_NUDGE)
        );
        // Once per crossing: the count starts again.
        assert_eq!(state.after_batch([("terminal", false)]), None);
        // A todo call in the batch resets the count for the calls before it.
        let batch: Vec<(&str, bool)> = std::iter::repeat_n(("read_file", false), 15)
            .chain([("todo_read", false), ("read_file", false)])
            .collect();
        assert_eq!(state.after_batch(batch), None);
    }

    #[test]
    fn failure_reminder_only_with_open_items() {
        let state = TodoState::default();
        assert_eq!(state.after_batch([("terminal", true)]), None);
        state
            .write(
                vec![
                    json!({"id": "1", "content": "a", "status": "completed"}),
                    json!({"id": "2", "content": "b", "status": "pending"}),
                ],
                false,
            )
            .unwrap();
        assert_eq!(
            state.after_batch([("read_file", true), ("terminal", false)]),
            Some(FAILURE_NUDGE)
        );
        // A failing todo call itself is not a plan failure.
        assert_eq!(state.after_batch([("todo_write", true)]), None);
        state
            .write(
                vec![json!({"id": "2", "content": "b", "status": "completed"})],
                true,
            )
            .unwrap();
        assert_eq!(state.after_batch([("terminal", true)]), None);
    }

    #[test]
    fn open_items_message_lists_only_open_items() {
        let state = TodoState::default();
        assert_eq!(state.open_items_message(), None);
        state
            .write(
                vec![
                    json!({"id": "1", "content": "set up", "status": "completed"}),
                    json!({"id": "2", "content": "build", "status": "in_progress"}),
                    json!({"id": "3", "content": "ship", "status": "pending"}),
                ],
                false,
            )
            .unwrap();
        let text = state.open_items_message().unwrap();
        assert!(text.contains("[>] 2. build (in_progress)"), "{text}");
        assert!(text.contains("[ ] 3. ship (pending)"), "{text}");
        assert!(!text.contains("set up"), "{text}");
        assert!(text.contains("1 completed or cancelled"), "{text}");
    }

    #[test]
    fn schema_is_compact_and_describes_items() {
        let tool = typed(TodoWrite);
        let schema = tool.spec().parameters.to_string();
        assert!(schema.contains("in_progress"), "{schema}");
        assert!(tool.spec().description.len() < 800);
        assert!(typed(TodoRead).read_only());
        let _unused: Arc<dyn crate::Tool> = typed(TodoRead);
    }
}
