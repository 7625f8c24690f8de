//! `mcp_list_resources` and `mcp_read_resource`: the resources of the
//! session's MCP servers (documents, files, records a server exposes by
//! URI), reachable by the model. Both are read-only (toolset `mcp`), and
//! are offered whenever a server is configured, whatever its state, so a
//! session's tool list depends only on the configuration.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_protocol::{ImageData, ToolSpec};
use herald_tools::{Tool, ToolContext, ToolResult};
use serde_json::{Value, json};

use crate::content::base64_len;
use crate::hub::ServerHandle;
use crate::server::McpServer;

/// Toolset of the two tools.
pub const RESOURCES_TOOLSET: &str = "mcp";

/// Entries of one kind listed per server before the rest is only counted.
const MAX_LISTED: usize = 200;

/// Characters of a description kept in a listing line.
const DESCRIPTION_CHARS: usize = 200;

/// The servers the two tools reach.
struct Servers {
    /// Every enabled server, in name order.
    all: Vec<Arc<ServerHandle>>,
    /// Toolsets (`mcp-<server>`) that have tools in this session.
    with_tools: BTreeSet<&'static str>,
}

impl Servers {
    /// The servers the calling agent may reach: those whose toolset its
    /// registry has (a subagent given `mcp-ev` reaches `ev` only), and
    /// those that have no tools in the session (nothing to scope them by).
    fn visible(&self, ctx: &ToolContext) -> Vec<&Arc<ServerHandle>> {
        let toolsets = ctx.registry.as_ref().map(|r| r.toolsets());
        self.all
            .iter()
            .filter(|s| {
                !self.with_tools.contains(s.toolset())
                    || toolsets.as_ref().is_none_or(|t| t.contains(s.toolset()))
            })
            .collect()
    }

    /// The visible server `name`, or an error naming the visible ones.
    fn find(&self, name: &str, ctx: &ToolContext) -> Result<Arc<ServerHandle>, String> {
        let visible = self.visible(ctx);
        visible
            .iter()
            .find(|s| s.name() == name)
            .map(|s| Arc::clone(s))
            .ok_or_else(|| {
                let names: Vec<&str> = visible.iter().map(|s| s.name()).collect();
                format!(
                    "no MCP server `{name}` in this session; the servers are: {}",
                    if names.is_empty() {
                        "(none available to you)".to_owned()
                    } else {
                        names.join(", ")
                    }
                )
            })
    }
}

/// `mcp_list_resources`.
struct ListResources {
    spec: ToolSpec,
    servers: Arc<Servers>,
}

/// `mcp_read_resource`.
struct ReadResource {
    spec: ToolSpec,
    servers: Arc<Servers>,
}

/// The two tools for `servers` (the enabled servers, in name order), given
/// the toolsets that have tools in the session; none without servers.
pub(crate) fn resource_tools(
    servers: &[Arc<ServerHandle>],
    with_tools: BTreeSet<&'static str>,
) -> Vec<Arc<dyn Tool>> {
    if servers.is_empty() {
        return Vec::new();
    }
    let names = servers
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ");
    let servers = Arc::new(Servers {
        all: servers.to_vec(),
        with_tools,
    });
    let list = ListResources {
        spec: ToolSpec {
            name: "mcp_list_resources".to_owned(),
            description: format!(
                "List the resources (documents, files, records) the MCP servers ({names}) \
                 expose by URI, and their URI templates: URI, name, MIME type, description. \
                 Read one with mcp_read_resource."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "Only this server (default: all)."}
                }
            }),
        },
        servers: Arc::clone(&servers),
    };
    let read = ReadResource {
        spec: ToolSpec {
            name: "mcp_read_resource".to_owned(),
            description: "Read a resource of an MCP server by URI (from mcp_list_resources; \
                          for a template, fill in every {placeholder}). Returns its text; \
                          binary contents are described, images attached."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The server's name."},
                    "uri": {"type": "string", "description": "The resource's URI."}
                },
                "required": ["server", "uri"]
            }),
        },
        servers,
    };
    vec![Arc::new(list), Arc::new(read)]
}

/// The live server behind `handle`, waiting while it starts (until the
/// call is interrupted).
async fn live(handle: &ServerHandle, ctx: &ToolContext) -> Result<Arc<McpServer>, String> {
    tokio::select! {
        found = handle.server() => found,
        () = ctx.cancel.cancelled() => Err(format!(
            "interrupted while MCP server `{}` was still starting",
            handle.name()
        )),
    }
}

fn text_of<'a>(item: &'a Value, key: &str) -> Option<&'a str> {
    item.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// `- URI · name · mime — description` for a resource or template.
fn listing_line(item: &Value, uri_key: &str) -> Option<String> {
    let uri = text_of(item, uri_key)?;
    let mut line = format!("- {uri}");
    let name = text_of(item, "title").or_else(|| text_of(item, "name"));
    if let Some(name) = name.filter(|n| *n != uri) {
        line.push_str(&format!(" · {name}"));
    }
    if let Some(mime) = text_of(item, "mimeType") {
        line.push_str(&format!(" · {mime}"));
    }
    if let Some(size) = item.get("size").and_then(Value::as_u64) {
        line.push_str(&format!(" · {size} bytes"));
    }
    if let Some(description) = text_of(item, "description") {
        let short: String = description
            .chars()
            .take(DESCRIPTION_CHARS)
            .collect::<String>()
            .replace('\n', " ");
        line.push_str(&format!(" — {short}"));
        if description.chars().count() > DESCRIPTION_CHARS {
            line.push('…');
        }
    }
    Some(line)
}

fn push_listing(out: &mut String, items: &[Value], uri_key: &str) {
    let lines: Vec<String> = items
        .iter()
        .filter_map(|item| listing_line(item, uri_key))
        .collect();
    for line in lines.iter().take(MAX_LISTED) {
        out.push_str(line);
        out.push('\n');
    }
    if lines.len() > MAX_LISTED {
        out.push_str(&format!("- … and {} more\n", lines.len() - MAX_LISTED));
    }
}

impl ListResources {
    async fn run(&self, args: &Value, ctx: &ToolContext) -> ToolResult {
        let only = args.get("server").and_then(Value::as_str).map(str::trim);
        let selected: Vec<Arc<ServerHandle>> = match only.filter(|s| !s.is_empty()) {
            Some(name) => match self.servers.find(name, ctx) {
                Ok(handle) => vec![handle],
                Err(message) => return ToolResult::error(message),
            },
            None => self.servers.visible(ctx).into_iter().cloned().collect(),
        };
        if selected.is_empty() {
            return ToolResult::error("no MCP server is available to you in this session");
        }
        let mut out = String::new();
        let mut failures = 0;
        for handle in &selected {
            if !out.is_empty() {
                out.push('\n');
            }
            match self.server_section(handle, ctx).await {
                Ok(section) => out.push_str(&section),
                Err(message) => {
                    failures += 1;
                    out.push_str(&format!("MCP server `{}`: {message}\n", handle.name()));
                }
            }
        }
        if failures == selected.len() && only.is_some() {
            return ToolResult::error(out.trim_end().to_owned());
        }
        ToolResult::ok(out.trim_end().to_owned())
    }

    /// The listing of one server.
    async fn server_section(
        &self,
        handle: &ServerHandle,
        ctx: &ToolContext,
    ) -> Result<String, String> {
        let server = live(handle, ctx)
            .await
            .map_err(|reason| format!("unavailable ({reason}); continue without it"))?;
        if !server.offers_resources() {
            return Ok(format!(
                "MCP server `{}`: no resources (it does not offer any)\n",
                handle.name()
            ));
        }
        let resources = server.list_resources(&ctx.cancel).await?;
        // Templates are optional: a server may not implement the method.
        let templates = match server.list_resource_templates(&ctx.cancel).await {
            Ok(templates) => templates,
            Err(message) if ctx.cancel.is_cancelled() => return Err(message),
            Err(message) => {
                tracing::debug!(server = %handle.name(), "no resource templates: {message}");
                Vec::new()
            }
        };
        let mut out = format!(
            "MCP server `{}`: {} resources, {} resource templates\n",
            handle.name(),
            resources.len(),
            templates.len()
        );
        push_listing(&mut out, &resources, "uri");
        if !templates.is_empty() {
            out.push_str("templates (fill in each {placeholder}, then read the URI):\n");
            push_listing(&mut out, &templates, "uriTemplate");
        }
        Ok(out)
    }
}

impl ReadResource {
    async fn run(&self, args: &Value, ctx: &ToolContext) -> ToolResult {
        let (Some(name), Some(uri)) = (
            args.get("server").and_then(Value::as_str).map(str::trim),
            args.get("uri").and_then(Value::as_str).map(str::trim),
        ) else {
            return ToolResult::error(
                "mcp_read_resource needs `server` and `uri`; find them with mcp_list_resources",
            );
        };
        let handle = match self.servers.find(name, ctx) {
            Ok(handle) => handle,
            Err(message) => return ToolResult::error(message),
        };
        let server = match live(&handle, ctx).await {
            Ok(server) => server,
            Err(reason) => {
                return ToolResult::error(format!(
                    "MCP server `{name}` is unavailable: {reason}. Continue without its resources."
                ));
            }
        };
        if !server.offers_resources() {
            return ToolResult::error(format!(
                "MCP server `{name}` offers no resources (it does not declare the resources \
                 capability); use its tools instead"
            ));
        }
        match server.read_resource(uri, &ctx.cancel).await {
            Ok(contents) => map_contents(&contents),
            Err(message) if ctx.cancel.is_cancelled() => ToolResult::error(message),
            Err(message) => ToolResult::error(format!(
                "{message}\nCheck the URI with mcp_list_resources (server `{name}`); for a \
                 template, fill in every {{placeholder}}."
            )),
        }
    }
}

/// The contents of a read: text as it is (with a header line per part when
/// there are several), an image blob attached and described by a line,
/// another blob described by a line with its MIME type and size.
fn map_contents(contents: &[Value]) -> ToolResult {
    if contents.is_empty() {
        return ToolResult::ok("(the resource is empty)");
    }
    let single = contents.len() == 1;
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for item in contents {
        let uri = item.get("uri").and_then(Value::as_str).unwrap_or("");
        let mime = text_of(item, "mimeType");
        if let Some(text) = item.get("text").and_then(Value::as_str) {
            if single {
                parts.push(text.to_owned());
            } else {
                match mime {
                    Some(mime) => parts.push(format!("[resource: {uri} ({mime})]\n{text}")),
                    None => parts.push(format!("[resource: {uri}]\n{text}")),
                }
            }
        } else if let Some(blob) = item.get("blob").and_then(Value::as_str) {
            let mime = mime.unwrap_or("application/octet-stream");
            let bytes = base64_len(blob);
            if mime.starts_with("image/") {
                parts.push(format!("[image: {uri}, {mime}, {bytes} bytes]"));
                images.push(ImageData {
                    mime_type: mime.to_owned(),
                    data: blob.split_whitespace().collect::<String>().into(),
                });
            } else {
                parts.push(format!(
                    "[resource: {uri}, {mime}, {bytes} bytes, binary content not shown]"
                ));
            }
        } else {
            parts.push(format!("[resource: {uri}, no text or blob]"));
        }
    }
    ToolResult::ok(parts.join("\n")).with_images(images)
}

impl Tool for ListResources {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn toolset(&self) -> &'static str {
        RESOURCES_TOOLSET
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move { self.run(&args, ctx).await })
    }
}

impl Tool for ReadResource {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn toolset(&self) -> &'static str {
        RESOURCES_TOOLSET
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move { self.run(&args, ctx).await })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn contents_map_to_text_lines_and_images() {
        let one = map_contents(&[json!({"uri": "a://1", "mimeType": "text/plain", "text": "hi"})]);
        assert_eq!(one.content, "hi");
        assert!(!one.is_error);
        let mixed = map_contents(&[
            json!({"uri": "a://1", "mimeType": "text/plain", "text": "hi"}),
            json!({"uri": "a://2", "mimeType": "application/gzip", "blob": "QUJD"}),
            json!({"uri": "a://3", "mimeType": "image/png", "blob": "QUJD"}),
        ]);
        assert_eq!(
            mixed.content,
            "[resource: a://1 (text/plain)]\nhi\n[resource: a://2, application/gzip, 3 bytes, \
             binary content not shown]\n[image: a://3, image/png, 3 bytes]"
        );
        assert_eq!(mixed.images.len(), 1);
        assert_eq!(mixed.images[0].mime_type, "image/png");
    }

    #[test]
    fn listing_lines_name_uri_name_mime_and_description() {
        let line = listing_line(
            &json!({"uri": "x://a", "name": "a", "mimeType": "text/plain", "description": "the a\nfile"}),
            "uri",
        );
        assert_eq!(line.unwrap(), "- x://a · a · text/plain — the a file");
        assert!(listing_line(&json!({"name": "no uri"}), "uri").is_none());
    }
}
