//! A stored conversation as the updates `session/load` streams once:
//! the user's messages, the agent's text and reasoning, and each tool call
//! with its result (edits with their diffs).

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, ImageContent, SessionUpdate, ToolCall, ToolCallStatus,
};
use herald_protocol::{Message, Role};

use crate::tools;
use crate::translate::chunk;

/// The updates that show `messages` (in order) to the client.
pub(crate) fn replay(messages: &[Message], cwd: &Path) -> Vec<SessionUpdate> {
    let results: HashMap<&str, &Message> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref().map(|id| (id, m)))
        .collect();
    let mut updates = Vec::new();
    for message in messages {
        match message.role {
            Role::System | Role::Tool => {}
            Role::User => {
                if !message.content.is_empty() {
                    updates.push(SessionUpdate::UserMessageChunk(chunk(&message.content)));
                }
                for image in &message.images {
                    updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                        ContentBlock::Image(ImageContent::new(
                            image.data.to_string(),
                            image.mime_type.clone(),
                        )),
                    )));
                }
            }
            Role::Assistant => {
                for piece in &message.reasoning {
                    let text = piece.text();
                    if !text.is_empty() {
                        updates.push(SessionUpdate::AgentThoughtChunk(chunk(text)));
                    }
                }
                if !message.content.is_empty() {
                    updates.push(SessionUpdate::AgentMessageChunk(chunk(&message.content)));
                }
                for call in &message.tool_calls {
                    let view = tools::view(&call.name, &call.arguments, cwd);
                    let result = results.get(call.id.as_str());
                    let status = match result {
                        Some(r) if r.is_error => ToolCallStatus::Failed,
                        Some(_) => ToolCallStatus::Completed,
                        None => ToolCallStatus::Failed,
                    };
                    let mut content = view.content;
                    if !matches!(call.name.as_str(), "patch" | "write_file") {
                        content.extend(
                            result
                                .map(|r| tools::output_content(&call.name, &r.content))
                                .unwrap_or_default(),
                        );
                    }
                    updates.push(SessionUpdate::ToolCall(
                        ToolCall::new(call.id.clone(), view.title)
                            .name(call.name.clone())
                            .kind(view.kind)
                            .status(status)
                            .locations(view.locations)
                            .content(content)
                            .raw_input(
                                serde_json::from_str::<serde_json::Value>(&call.arguments).ok(),
                            ),
                    ));
                }
            }
        }
    }
    updates
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use herald_protocol::ToolCall as HeraldCall;

    #[test]
    fn a_stored_turn_replays_in_order_with_its_results() {
        let call = HeraldCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path": "a.txt"}"#.into(),
        };
        let messages = vec![
            Message::user("read a.txt"),
            Message::assistant("Reading.", vec![call.clone()]),
            Message::tool_result(&call, "hello", false),
            Message::assistant("It says hello.", Vec::new()),
        ];
        let wire: Vec<serde_json::Value> = replay(&messages, Path::new("/w"))
            .iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect();
        let kinds: Vec<&str> = wire
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "agent_message_chunk"
            ]
        );
        assert_eq!(wire[2]["status"], "completed");
        assert_eq!(wire[2]["content"][0]["content"]["text"], "hello");
    }
}
