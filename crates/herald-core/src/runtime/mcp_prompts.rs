//! The MCP prompts of a session: front ends offer them as slash commands
//! `/<server>:<prompt>` (listed with [`Session::mcp_prompts`]) and send
//! the text [`Session::mcp_prompt_text`] fills in as a user turn, so every
//! front end parses arguments and renders prompts the same way.

use herald_mcp::McpPrompt;
use tokio_util::sync::CancellationToken;

use super::{RuntimeError, Session};

impl Session {
    /// The prompts the session's MCP servers offer, by server and name;
    /// waits for servers still starting (each within its start timeout).
    pub async fn mcp_prompts(&self) -> Vec<McpPrompt> {
        self.shared.mcp.prompts().await
    }

    /// Fills in MCP prompt `command` (`<server>:<prompt>`) with the
    /// arguments on `line` (`key=value` words, or words in argument order)
    /// and returns the text to send as the next user turn. Ended by the
    /// session's end.
    pub async fn mcp_prompt_text(&self, command: &str, line: &str) -> Result<String, RuntimeError> {
        let cancel: CancellationToken = self.shared.cancel.child_token();
        Ok(self.shared.mcp.prompt_text(command, line, &cancel).await?)
    }
}
