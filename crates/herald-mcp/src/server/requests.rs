//! Requests other than tool calls: the `resources/*` and `prompts/*` methods.

use std::time::Duration;

use rmcp::model::{ClientRequest, CustomRequest, ServerResult};
use rmcp::service::ServiceError;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::call::{CallOutcome, CancelGuard, outcome_of_error};
use super::{McpServer, short_json};

impl McpServer {
    /// Whether the server declared the `resources` capability (resources
    /// can be listed and read).
    pub fn offers_resources(&self) -> bool {
        self.resources
    }

    /// `resources/list`, every page: the server's resources as it sent
    /// them (objects with `uri`, `name`, `mimeType`, `description`...).
    /// Errors are messages for the model.
    pub async fn list_resources(&self, cancel: &CancellationToken) -> Result<Vec<Value>, String> {
        self.list_pages("resources/list", "resources", cancel).await
    }

    /// `resources/templates/list`, every page: objects with `uriTemplate`,
    /// `name`, `mimeType`, `description`...
    pub async fn list_resource_templates(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Vec<Value>, String> {
        self.list_pages("resources/templates/list", "resourceTemplates", cancel)
            .await
    }

    /// `resources/read` of `uri`: the result's `contents` (objects with
    /// `uri`, `mimeType` and `text` or base64 `blob`).
    pub async fn read_resource(
        &self,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<Value>, String> {
        let result = self
            .request(
                "resources/read",
                Some(serde_json::json!({ "uri": uri })),
                cancel,
            )
            .await?;
        match result.get("contents") {
            Some(Value::Array(contents)) => Ok(contents.clone()),
            _ => Err(format!(
                "MCP server `{}` sent a resources/read answer without `contents`: {}",
                self.name,
                short_json(&result)
            )),
        }
    }

    /// Whether the server declared the `prompts` capability (prompt
    /// templates can be listed and filled in).
    pub fn offers_prompts(&self) -> bool {
        self.prompts
    }

    /// `prompts/list`, every page: objects with `name`, `title`,
    /// `description` and `arguments` (`name`, `description`, `required`).
    pub async fn list_prompts(&self, cancel: &CancellationToken) -> Result<Vec<Value>, String> {
        self.list_pages("prompts/list", "prompts", cancel).await
    }

    /// `prompts/get` of prompt `name` with `arguments`: the result's
    /// `messages` (objects with `role` and `content`).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: &std::collections::BTreeMap<String, String>,
        cancel: &CancellationToken,
    ) -> Result<Vec<Value>, String> {
        let result = self
            .request(
                "prompts/get",
                Some(serde_json::json!({ "name": name, "arguments": arguments })),
                cancel,
            )
            .await?;
        match result.get("messages") {
            Some(Value::Array(messages)) => Ok(messages.clone()),
            _ => Err(format!(
                "MCP server `{}` sent a prompts/get answer without `messages`: {}",
                self.name,
                short_json(&result)
            )),
        }
    }

    async fn list_pages(
        &self,
        method: &str,
        key: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<Value>, String> {
        let mut items = Vec::new();
        let mut cursor: Option<Value> = None;
        // A bound on pages, against a server that repeats its cursor forever.
        for _ in 0..100 {
            let params = cursor.take().map(|c| serde_json::json!({ "cursor": c }));
            let page = self.request(method, params, cancel).await?;
            match page.get(key) {
                Some(Value::Array(found)) => items.extend(found.iter().cloned()),
                _ => {
                    return Err(format!(
                        "MCP server `{}` sent a {method} answer without `{key}`: {}",
                        self.name,
                        short_json(&page)
                    ));
                }
            }
            match page.get("nextCursor") {
                Some(next) if !next.is_null() && next.as_str() != Some("") => {
                    cursor = Some(next.clone());
                }
                _ => return Ok(items),
            }
        }
        Ok(items)
    }

    /// Sends one request other than a tool call and returns its raw
    /// result: with `tool_timeout_sec`, cancellation, and the restart/down
    /// handling of calls. Errors are messages for the model.
    async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        cancel: &CancellationToken,
    ) -> Result<Value, String> {
        let (peer, generation, _note) = self.peer_for_call().await.map_err(|r| r.content)?;
        let request = ClientRequest::CustomRequest(CustomRequest::new(method.to_owned(), params));
        let handle = match peer
            .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(err) => return Err(self.request_failed(method, err, generation).await),
        };
        let mut guard = CancelGuard {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let timeout = Duration::from_secs(self.config.tool_timeout_sec);
        tokio::select! {
            response = handle.await_response() => {
                guard.disarm();
                match response {
                    Ok(ServerResult::CustomResult(custom)) => Ok(custom.0),
                    Ok(other) => serde_json::to_value(&other).map_err(|e| e.to_string()),
                    Err(err) => Err(self.request_failed(method, err, generation).await),
                }
            }
            () = cancel.cancelled() => {
                guard.cancel("cancelled by the user").await;
                Err(format!("Interrupted: the {method} request to MCP server `{}` was cancelled.", self.name))
            }
            () = tokio::time::sleep(timeout) => {
                guard.cancel("timed out").await;
                Err(format!(
                    "MCP server `{}` did not answer {method} within tool_timeout_sec = {} s. Try                      again later, or raise tool_timeout_sec in [mcp_servers.{}].",
                    self.name, self.config.tool_timeout_sec, self.name
                ))
            }
        }
    }

    async fn request_failed(&self, method: &str, err: ServiceError, generation: u64) -> String {
        match outcome_of_error(&self.name, method, err) {
            CallOutcome::Result(result) => result.content,
            CallOutcome::Closed => self.connection_lost(generation, method).await.content,
        }
    }
}
