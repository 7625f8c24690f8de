//! `session_search`: herald's own `session_search` tool
//! (`herald_core::SessionSearch`) over every stored session, answered to
//! the MCP client instead of a model.

use std::path::Path;

use herald_core::{SessionSearch, SessionSearchArgs, StoreHandle};
use herald_tools::{AgentState, ToolContext, TypedTool};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::tools;

/// herald's session_search argument schema (what its model sees).
pub(crate) fn schema(store: &StoreHandle) -> Value {
    herald_tools::typed(SessionSearch::new(store.clone(), String::new()))
        .spec()
        .parameters
        .clone()
}

/// Searches with `arguments` (herald's session_search arguments). No
/// session is hidden: the caller is not inside one.
pub(crate) async fn search(
    store: &StoreHandle,
    cwd: &Path,
    tool: &Tool,
    arguments: Option<JsonObject>,
) -> CallToolResult {
    let args: SessionSearchArgs = match tools::parse(tool, arguments) {
        Ok(args) => args,
        Err(message) => return CallToolResult::error(vec![ContentBlock::text(message)]),
    };
    let search = SessionSearch::new(store.clone(), String::new());
    let ctx = ToolContext::new(AgentState::new(cwd.to_path_buf()), CancellationToken::new());
    match search.run(args, &ctx).await {
        Ok(text) => {
            let structured = match serde_json::from_str::<Value>(&text) {
                Ok(value @ Value::Object(_)) => Some(value),
                _ => None,
            };
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = structured;
            result
        }
        Err(err) => CallToolResult::error(vec![ContentBlock::text(err.to_string())]),
    }
}
