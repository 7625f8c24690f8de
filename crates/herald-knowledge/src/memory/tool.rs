//! The `memory` tool: the model's way to curate the two memory files.

use herald_tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{MemoryError, MemoryStore, MemoryTarget};
use crate::fsutil::blocking;

/// What a `memory` call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(description = "")]
pub enum MemoryAction {
    // Append `content` as a new entry.
    Add,
    // Replace the entry containing `old_text` with `content`.
    Replace,
    // Delete the entry containing `old_text`.
    Remove,
    // Show the file as it is now.
    Read,
}

/// Arguments of `memory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct MemoryArgs {
    pub action: MemoryAction,
    pub target: MemoryTarget,
    /// add, replace
    pub content: Option<String>,
    /// replace/remove: a few words of the entry
    pub old_text: Option<String>,
}

/// The `memory` tool over one `$HERALD_HOME`.
#[derive(Debug, Clone)]
pub struct MemoryTool {
    store: MemoryStore,
}

impl MemoryTool {
    /// A tool writing to `store`.
    pub fn new(store: MemoryStore) -> Self {
        Self { store }
    }
}

impl TypedTool for MemoryTool {
    type Args = MemoryArgs;
    const NAME: &'static str = "memory";
    const TOOLSET: &'static str = "memory";
    const DESCRIPTION: &'static str = "Memory across sessions, shown in the system prompt as of session start. \
target=memory: your notes (environment, conventions, quirks); user: the user's profile (preferences, corrections). \
Durable facts only: no secrets, one-offs or things easy to re-find. Each file has a char limit ([% used/limit]); above ~80%, \
merge entries before adding.";
    const READ_ONLY: bool = false;

    async fn run(&self, args: MemoryArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let store = self.store.clone();
        blocking(move || {
            let content = args.content.as_deref().unwrap_or_default();
            let old_text = args.old_text.as_deref().unwrap_or_default();
            let result = match args.action {
                MemoryAction::Add => store.add(args.target, content).map(|o| o.render()),
                MemoryAction::Replace => store
                    .replace(args.target, old_text, content)
                    .map(|o| o.render()),
                MemoryAction::Remove => store.remove(args.target, old_text).map(|o| o.render()),
                MemoryAction::Read => store.read(args.target).map(|s| s.render()),
            };
            result.map_err(|err: MemoryError| ToolError::new(err.to_string()))
        })
        .await
    }
}
