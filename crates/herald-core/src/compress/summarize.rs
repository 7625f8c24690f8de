//! The model call that writes the structured summary of the middle of a
//! conversation.
//!
//! The request carries the session's own system prompt and tool list, so the
//! provider's cached prefix (system + tools + early messages) is reused; tool
//! calls are forbidden, and a final user message asks for the summary.

use herald_llm::{AssistantReply, ChatRequest, EncodedTools, LlmClient, LlmError, StreamUpdate};
use herald_protocol::{Message, Usage};
use tokio_util::sync::CancellationToken;

use super::{SUMMARY_MARKER, SUMMARY_REQUEST_MARKER};
use crate::prompt::keep_head_tail;

/// Longest summary kept; a longer reply keeps its head and tail.
pub const SUMMARY_MAX_CHARS: usize = 12_000;

/// The final user message of the summary request.
pub fn summary_instruction() -> String {
    format!(
        "{SUMMARY_REQUEST_MARKER}: the conversation is too long for the context window. \
Write a summary of everything above that will replace these messages; the most recent messages are kept as they are. \
Do not call tools. Use exactly these sections, each as short bullet points:\n\
## Goal\n## Constraints\n## Completed actions\n## Current state\n## Decisions\n## Files\n## Remaining work\n\
Keep exact file paths, commands, names, error messages and numbers that later work depends on. \
If an earlier summary is above, carry its content over. Stay under 1,200 words."
    )
}

/// The user message that stands for the summarised middle.
pub fn summary_message(summarised: usize, summary: &str) -> Message {
    let summary = keep_head_tail(summary.trim(), SUMMARY_MAX_CHARS, "the summary");
    Message::user(format!(
        "{SUMMARY_MARKER}: {summarised} earlier messages were replaced by this summary, written by you. \
The full transcript stays in the session store.\n\n{summary}"
    ))
}

/// Asks the model for the summary of `input` (head and middle, already cut
/// to fit). Fails on any provider error, on interrupt, and on an empty
/// answer; the caller then keeps the history unchanged.
pub async fn request_summary(
    client: &LlmClient,
    system: &str,
    tools: &EncodedTools,
    input: &[Message],
    cancel: &CancellationToken,
) -> Result<(String, Usage), LlmError> {
    let mut messages = Vec::with_capacity(input.len() + 1);
    messages.extend_from_slice(input);
    messages.push(Message::user(summary_instruction()));
    let request = ChatRequest {
        system,
        messages: &messages,
        tools,
        forbid_tool_calls: true,
    };
    let mut ignore = |_: StreamUpdate<'_>| {};
    let AssistantReply { text, usage, .. } = client.complete(request, &mut ignore, cancel).await?;
    if text.trim().is_empty() {
        return Err(LlmError {
            kind: herald_llm::ErrorKind::Protocol,
            message: "the model answered the summary request with no text".to_owned(),
            status: None,
            retry_after_ms: None,
        });
    }
    Ok((text, usage))
}
