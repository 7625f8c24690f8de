//! The server's tools: listed once at connect time, filtered, normalised
//! and named.

use std::collections::BTreeMap;
use std::sync::Mutex as StdMutex;
use std::time::Duration;

use rmcp::model::{ClientRequest, CustomRequest, ServerResult};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;

use super::transport::Connection;
use super::{McpError, McpToolInfo, SkippedTool, short_json};
use crate::config::McpServerConfig;
use crate::names::exposed_names;
use crate::schema::normalize_input_schema;

/// `mcp-<server>`, leaked once per distinct server name in the process
/// ([`herald_tools::Tool::toolset`] returns `&'static str`); the set of
/// configured names is small and fixed, so this is bounded.
pub(crate) fn toolset_name(server: &str) -> &'static str {
    static NAMES: StdMutex<Vec<&'static str>> = StdMutex::new(Vec::new());
    let wanted = format!("mcp-{server}");
    let mut names = match NAMES.lock() {
        Ok(names) => names,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(found) = names.iter().find(|n| **n == wanted) {
        return found;
    }
    let leaked: &'static str = Box::leak(wanted.into_boxed_str());
    names.push(leaked);
    leaked
}

/// Lists the server's tools, page by page, within the startup timeout.
/// Parsed tool by tool so one malformed tool does not lose the others.
pub(super) async fn list_tools(
    name: &str,
    conn: &Connection,
    config: &McpServerConfig,
) -> Result<(Vec<McpToolInfo>, Vec<SkippedTool>), McpError> {
    let seconds = config.startup_timeout_sec;
    let peer = conn.service.peer().clone();
    let raw = match tokio::time::timeout(Duration::from_secs(seconds), list_raw(&peer)).await {
        Ok(Ok(raw)) => raw,
        Ok(Err(message)) => {
            return Err(McpError::Startup {
                server: name.to_owned(),
                message: format!("tools/list failed: {message}"),
                stderr: conn.stderr_suffix(),
            });
        }
        Err(_) => {
            return Err(McpError::StartupTimeout {
                server: name.to_owned(),
                seconds,
                stage: "no answer to tools/list",
                stderr: conn.stderr_suffix(),
            });
        }
    };
    Ok(select_tools(name, config, raw))
}

async fn list_raw(peer: &Peer<RoleClient>) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    // A bound on pages, against a server that repeats its cursor forever.
    for _ in 0..1000 {
        let params = cursor.take().map(|c| serde_json::json!({ "cursor": c }));
        let response = peer
            .send_request(ClientRequest::CustomRequest(CustomRequest::new(
                "tools/list",
                params,
            )))
            .await
            .map_err(|e| e.to_string())?;
        let value = match response {
            ServerResult::CustomResult(custom) => custom.0,
            other => serde_json::to_value(&other).map_err(|e| e.to_string())?,
        };
        match value.get("tools") {
            Some(Value::Array(page)) => tools.extend(page.iter().cloned()),
            _ => {
                return Err(format!(
                    "the answer has no `tools` list: {}",
                    short_json(&value)
                ));
            }
        }
        match value.get("nextCursor") {
            Some(next) if !next.is_null() && next.as_str() != Some("") => {
                cursor = Some(next.clone())
            }
            _ => return Ok(tools),
        }
    }
    Err("more than 1000 pages of tools".to_owned())
}

fn glob_set(patterns: &[String]) -> Option<globset::GlobSet> {
    if patterns.is_empty() {
        return None;
    }
    let mut builder = globset::GlobSetBuilder::new();
    for pattern in patterns {
        // Validated with the config.
        if let Ok(glob) = globset::Glob::new(pattern) {
            builder.add(glob);
        }
    }
    builder.build().ok()
}

/// Filters, normalises and names the listed tools.
fn select_tools(
    server: &str,
    config: &McpServerConfig,
    raw: Vec<Value>,
) -> (Vec<McpToolInfo>, Vec<SkippedTool>) {
    let include = glob_set(&config.include_tools);
    let exclude = glob_set(&config.exclude_tools);
    let mut skipped = Vec::new();
    let mut accepted: BTreeMap<String, (String, Value, bool)> = BTreeMap::new();
    for (index, tool) in raw.into_iter().enumerate() {
        let Some(name) = tool
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            skipped.push(SkippedTool {
                name: format!("#{index}"),
                reason: "it has no name".to_owned(),
            });
            continue;
        };
        if include.as_ref().is_some_and(|set| !set.is_match(name))
            || exclude.as_ref().is_some_and(|set| set.is_match(name))
        {
            continue;
        }
        if accepted.contains_key(name) {
            skipped.push(SkippedTool {
                name: name.to_owned(),
                reason: "the server listed a tool of this name twice".to_owned(),
            });
            continue;
        }
        let schema = match normalize_input_schema(tool.get("inputSchema")) {
            Ok(schema) => schema,
            Err(reason) => {
                tracing::warn!(server, tool = name, "MCP tool skipped: {reason}");
                skipped.push(SkippedTool {
                    name: name.to_owned(),
                    reason,
                });
                continue;
            }
        };
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| tool.get("title").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        let read_only = tool
            .pointer("/annotations/readOnlyHint")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        accepted.insert(name.to_owned(), (description, schema, read_only));
    }
    let names = exposed_names(server, accepted.keys().map(String::as_str));
    let mut tools: Vec<McpToolInfo> = accepted
        .into_iter()
        .map(
            |(name, (description, input_schema, read_only_hint))| McpToolInfo {
                server: server.to_owned(),
                exposed_name: names.get(&name).cloned().unwrap_or_default(),
                description,
                input_schema,
                read_only_hint,
                name,
            },
        )
        .collect();
    tools.sort_by(|a, b| a.exposed_name.cmp(&b.exposed_name));
    (tools, skipped)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn select_tools_filters_normalises_and_sorts() {
        let mut config = McpServerConfig::stdio("x", Vec::<String>::new());
        config.exclude_tools = vec!["secret*".into()];
        let raw = vec![
            json!({"name": "zeta", "inputSchema": {"type": "object"}}),
            json!({"name": "alpha", "description": "A", "inputSchema": {"properties": {}},
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "secret-thing", "inputSchema": {"type": "object"}}),
            json!({"name": "bad", "inputSchema": {"type": "string"}}),
            json!({"inputSchema": {}}),
        ];
        let (tools, skipped) = select_tools("srv", &config, raw);
        let names: Vec<_> = tools.iter().map(|t| t.exposed_name.as_str()).collect();
        assert_eq!(names, ["mcp__srv__alpha", "mcp__srv__zeta"]);
        assert!(tools[0].read_only_hint);
        assert!(!tools[1].read_only_hint);
        assert_eq!(
            tools[0].input_schema,
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(skipped.len(), 2);
        assert_eq!(skipped[0].name, "bad");

        config.exclude_tools.clear();
        config.include_tools = vec!["z*".into()];
        let (tools, _) = select_tools(
            "srv",
            &config,
            vec![json!({"name": "zeta"}), json!({"name": "alpha"})],
        );
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "zeta");
    }

    #[test]
    fn toolset_names_are_interned() {
        let a = toolset_name("fs");
        let b = toolset_name("fs");
        assert_eq!(a, "mcp-fs");
        assert!(std::ptr::eq(a, b));
    }
}
