//! `mcp_search` and `mcp_call`: how a session reaches MCP tools whose
//! schemas would take more than their budget of the context window. Those
//! tools stay registered (so permissions, toolsets and `execute_code` see
//! them) but are not listed in requests; the model finds them by keyword
//! and calls them through `mcp_call`, so 200 MCP tools cost two small
//! schemas and the prompt stays the same from session to session.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_protocol::{ToolCall, ToolSpec};
use herald_tools::{Tool, ToolContext, ToolResult};
use serde_json::{Value, json};

use crate::server::McpToolInfo;

/// Toolset of the two tools.
pub const SEARCH_TOOLSET: &str = "mcp";

/// Matches returned when the model does not say.
const DEFAULT_LIMIT: usize = 5;
/// Most matches one search returns.
const MAX_LIMIT: usize = 20;

/// `mcp_search`: finds unlisted MCP tools by keyword.
pub(crate) struct McpSearch {
    spec: ToolSpec,
    /// Every unlisted tool, sorted by exposed name.
    catalog: Arc<Vec<McpToolInfo>>,
}

/// `mcp_call`: runs an unlisted MCP tool by name.
pub(crate) struct McpCall {
    spec: ToolSpec,
}

/// The two tools for `catalog` (the unlisted tools).
pub(crate) fn search_tools(catalog: Vec<McpToolInfo>) -> Vec<Arc<dyn Tool>> {
    let servers: std::collections::BTreeSet<&str> =
        catalog.iter().map(|t| t.server.as_str()).collect();
    let servers = servers.into_iter().collect::<Vec<_>>().join(", ");
    let search = McpSearch {
        spec: ToolSpec {
            name: "mcp_search".to_owned(),
            description: format!(
                "Find tools of the connected MCP servers ({servers}; {} tools, not listed here to \
                 keep the prompt small). Give keywords for what you need; you get the best \
                 matching tools with their descriptions and argument schemas. Then run one with \
                 mcp_call.",
                catalog.len()
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Keywords, e.g. `read file` or `github issue`; a tool's exact name also works."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most tools to return (default 5)."}
                },
                "required": ["query"]
            }),
        },
        catalog: Arc::new(catalog),
    };
    let call = McpCall {
        spec: ToolSpec {
            name: "mcp_call".to_owned(),
            description: "Run an MCP tool found with mcp_search: `tool` is its full name \
                          (mcp__SERVER__TOOL), `arguments` an object matching its schema."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "description": "Full tool name from mcp_search."},
                    "arguments": {"type": "object", "description": "The tool's arguments."}
                },
                "required": ["tool", "arguments"]
            }),
        },
    };
    vec![Arc::new(search), Arc::new(call)]
}

/// How well `tool` matches the lower-cased query `words` (0 = not at all).
fn score(tool: &McpToolInfo, query: &str, words: &[&str]) -> u32 {
    let name = tool.exposed_name.to_ascii_lowercase();
    if name == query || tool.name.eq_ignore_ascii_case(query) {
        return 1_000;
    }
    let description = tool.description.to_lowercase();
    let mut total = 0;
    for word in words {
        if tool.name.to_ascii_lowercase().contains(word) {
            total += 4;
        } else if name.contains(word) {
            total += 2;
        }
        if description.contains(word) {
            total += 1;
        }
    }
    total
}

impl McpSearch {
    fn run(&self, args: &Value, ctx: &ToolContext) -> ToolResult {
        let Some(query) = args.get("query").and_then(Value::as_str) else {
            return ToolResult::error("mcp_search needs `query`: keywords for the tool you need");
        };
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_LIMIT, |n| usize::try_from(n).unwrap_or(MAX_LIMIT))
            .clamp(1, MAX_LIMIT);
        let query = query.trim().to_lowercase();
        let words: Vec<&str> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        // A subagent finds only the tools it was given.
        let visible = |tool: &McpToolInfo| {
            ctx.registry
                .as_ref()
                .is_none_or(|r| r.get(&tool.exposed_name).is_some())
        };
        let mut ranked: Vec<(u32, &McpToolInfo)> = self
            .catalog
            .iter()
            .filter(|t| visible(t))
            .map(|t| (score(t, &query, &words), t))
            .filter(|(s, _)| *s > 0)
            .collect();
        // Best first; ties keep name order (the catalog's), so the same
        // query always gives the same answer.
        ranked.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
        if ranked.is_empty() {
            let servers: std::collections::BTreeSet<&str> = self
                .catalog
                .iter()
                .filter(|t| visible(t))
                .map(|t| t.server.as_str())
                .collect();
            return ToolResult::ok(format!(
                "No MCP tool matches `{query}`. Servers you can search: {}. Try other keywords.",
                servers.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        let found: Vec<Value> = ranked
            .iter()
            .take(limit)
            .map(|(_, t)| {
                json!({
                    "tool": t.exposed_name,
                    "description": t.description,
                    "read_only": t.read_only_hint,
                    "parameters": t.input_schema,
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&json!({
            "matches": found,
            "more": ranked.len().saturating_sub(limit),
            "how_to_call": "mcp_call {\"tool\": NAME, \"arguments\": {...}}",
        }))
        .unwrap_or_default();
        ToolResult::ok(text)
    }
}

impl Tool for McpSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn toolset(&self) -> &'static str {
        SEARCH_TOOLSET
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move { self.run(&args, ctx) })
    }
}

impl Tool for McpCall {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn toolset(&self) -> &'static str {
        SEARCH_TOOLSET
    }

    /// The permission check applies to the MCP tool it runs, not to this
    /// wrapper (which only dispatches).
    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let Some(tool) = args.get("tool").and_then(Value::as_str) else {
                return ToolResult::error(
                    "mcp_call needs `tool`: a full name (mcp__SERVER__TOOL) from mcp_search",
                );
            };
            if !tool.starts_with("mcp__") {
                return ToolResult::error(format!(
                    "mcp_call runs MCP tools only (mcp__SERVER__TOOL); call `{tool}` directly"
                ));
            }
            let Some(registry) = ctx.registry.clone() else {
                return ToolResult::error("mcp_call cannot run tools here");
            };
            if registry.get(tool).is_none() {
                return ToolResult::error(format!(
                    "no MCP tool `{tool}` is available to you; find tools with mcp_search"
                ));
            }
            let arguments = args.get("arguments").cloned().unwrap_or_else(|| json!({}));
            let call = ToolCall {
                id: ctx.call_id.clone(),
                name: tool.to_owned(),
                arguments: arguments.to_string(),
            };
            // Through the registry: validation, the permission gate and the
            // output limit apply to the MCP tool itself.
            registry.execute(&call, ctx).await
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn info(server: &str, name: &str, description: &str) -> McpToolInfo {
        McpToolInfo {
            server: server.into(),
            name: name.into(),
            exposed_name: format!("mcp__{server}__{name}"),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": {}}),
            read_only_hint: false,
        }
    }

    #[test]
    fn matches_rank_names_over_descriptions_and_are_stable() {
        let catalog = vec![
            info("fs", "read_text_file", "Read a file as text."),
            info("fs", "write_file", "Write a file."),
            info("gh", "create_issue", "Open an issue on GitHub."),
            info("gh", "list_issues", "List the issues of a repository."),
        ];
        let tools = search_tools(catalog.clone());
        let search = McpSearch {
            spec: tools[0].spec().clone(),
            catalog: Arc::new(catalog),
        };
        let ctx = ToolContext::new(
            herald_tools::AgentState::new(std::env::temp_dir()),
            tokio_util::sync::CancellationToken::new(),
        );
        let out = search.run(&json!({"query": "issue"}), &ctx);
        let parsed: Value = serde_json::from_str(&out.content).unwrap();
        let names: Vec<&str> = parsed["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["tool"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["mcp__gh__create_issue", "mcp__gh__list_issues"]);
        let exact = search.run(&json!({"query": "mcp__fs__write_file", "limit": 1}), &ctx);
        assert!(
            exact.content.contains("mcp__fs__write_file"),
            "{}",
            exact.content
        );
        assert!(!exact.content.contains("read_text_file"));
        let none = search.run(&json!({"query": "kubernetes"}), &ctx);
        assert!(
            none.content.contains("No MCP tool matches"),
            "{}",
            none.content
        );
        assert!(search.run(&json!({}), &ctx).is_error);
    }
}
