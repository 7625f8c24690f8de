//! MCP tools as herald tools.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use herald_protocol::ToolSpec;
use herald_tools::{CallProgress, ElicitAnswer, Tool, ToolContext, ToolResult};

use crate::hub::ServerHandle;
use crate::server::{CallRequest, ElicitationHandler, McpServer, McpToolInfo, ProgressSink};

struct McpTool {
    server: Arc<ServerHandle>,
    /// The tool's name on the server.
    tool: String,
    spec: ToolSpec,
    read_only: bool,
    /// False past the schema budget: found with `mcp_search`, run with
    /// `mcp_call`.
    listed: bool,
}

/// One herald tool per tool of `server` (in [`McpServer::tools`] order):
/// named `mcp__<server>__<tool>`, in toolset `mcp-<server>`, read-only when
/// the server annotates it `readOnlyHint`. Calls go through
/// [`McpServer::call`] with the context's call id and cancel
/// token; progress goes to the context's observer, the server's requests
/// for user input (elicitation) to the context's permission gate.
pub fn mcp_tools(server: &Arc<McpServer>) -> Vec<Arc<dyn Tool>> {
    tools_of(
        &ServerHandle::ready(Arc::clone(server)),
        server.tools(),
        true,
    )
}

/// Tools for `infos`, served by `handle` (which may still be starting: a
/// call waits for it); `listed` says whether requests list them.
pub(crate) fn tools_of(
    handle: &Arc<ServerHandle>,
    infos: &[McpToolInfo],
    listed: bool,
) -> Vec<Arc<dyn Tool>> {
    infos
        .iter()
        .map(|info| {
            let description = if info.description.trim().is_empty() {
                format!("Tool `{}` of MCP server `{}`.", info.name, info.server)
            } else {
                info.description.clone()
            };
            Arc::new(McpTool {
                server: Arc::clone(handle),
                tool: info.name.clone(),
                spec: ToolSpec {
                    name: info.exposed_name.clone(),
                    description,
                    parameters: info.input_schema.clone(),
                },
                read_only: info.read_only_hint,
                listed,
            }) as Arc<dyn Tool>
        })
        .collect()
}

/// Puts the server's requests for input during this call to the context's
/// permission gate (which asks the user, or declines when nobody can
/// answer); without a gate they are declined.
fn elicitation_handler(ctx: &ToolContext) -> ElicitationHandler {
    let ctx = ctx.clone();
    Arc::new(move |request| {
        let ctx = ctx.clone();
        Box::pin(async move {
            match ctx.gate.clone() {
                Some(gate) => gate.elicit(request, &ctx).await,
                None => ElicitAnswer::decline(),
            }
        })
    })
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn toolset(&self) -> &'static str {
        self.server.toolset()
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn listed(&self) -> bool {
        self.listed
    }

    fn call<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let server = tokio::select! {
                found = self.server.server() => found,
                () = ctx.cancel.cancelled() => return ToolResult::error(format!(
                    "Interrupted while MCP server `{}` was still starting.",
                    self.server.name()
                )),
            };
            let server = match server {
                Ok(server) => server,
                Err(reason) => {
                    return ToolResult::error(format!(
                        "MCP tool `{}` is unavailable: {reason}. Continue without it.",
                        self.spec.name
                    ));
                }
            };
            let progress = ctx.observer.clone().map(|observer| {
                let name = self.spec.name.clone();
                Arc::new(move |update: crate::ProgressUpdate| {
                    observer.progress(&CallProgress {
                        call_id: &update.call_id,
                        name: &name,
                        progress: update.progress,
                        total: update.total,
                        message: update.message.as_deref(),
                    });
                }) as ProgressSink
            });
            let elicit = elicitation_handler(ctx);
            let result = server
                .call(CallRequest {
                    tool: self.tool.clone(),
                    args,
                    cancel: ctx.cancel.clone(),
                    call_id: ctx.call_id.clone(),
                    progress,
                    elicit: Some(elicit),
                })
                .await;
            let images = result
                .images
                .into_iter()
                .map(|image| herald_protocol::ImageData {
                    mime_type: image.mime_type,
                    data: image.data.into(),
                })
                .collect();
            ToolResult {
                content: result.content,
                is_error: result.is_error,
                images,
            }
        })
    }
}
