use serde::{Deserialize, Serialize};

use crate::ImageData;

/// Who wrote a message. The system prompt is kept apart from the history, so
/// `System` only appears in wire formats that need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One tool invocation requested by the model. `arguments` is kept as the raw
/// JSON text the model produced so replays are byte-identical.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A provider-neutral conversation message. Providers translate it to their
/// wire format; the history itself never changes once appended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Images of a tool result (see [`Message::with_images`]). Absent from
    /// the JSON when empty, so a history without images serialises exactly
    /// as it did before images existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageData>,
    /// What an assistant message's model reasoned before answering, in the
    /// order it came. Absent from the JSON when empty, so a history without
    /// reasoning serialises exactly as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<Reasoning>,
}

/// One piece of a model's reasoning, kept with its assistant message so a
/// provider that requires it gets it back unchanged, and so people can read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reasoning {
    /// An Anthropic `thinking` block. Its text and signature go back
    /// byte for byte in later requests (the API checks the signature
    /// across tool use).
    Thinking { thinking: String, signature: String },
    /// An Anthropic `redacted_thinking` block: opaque, sent back unchanged.
    RedactedThinking { data: String },
    /// Reasoning text an OpenAI-compatible server streamed
    /// (`reasoning_content`): stored and shown, never sent back (those
    /// APIs refuse or ignore it in requests).
    Text { text: String },
}

impl Reasoning {
    /// The readable text of this piece (empty for redacted thinking).
    pub fn text(&self) -> &str {
        match self {
            Reasoning::Thinking { thinking, .. } => thinking,
            Reasoning::Text { text } => text,
            Reasoning::RedactedThinking { .. } => "",
        }
    }
}

impl Message {
    /// A plain user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content.into())
    }

    /// An assistant message, possibly carrying tool calls.
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::plain(Role::Assistant, content.into())
        }
    }

    /// The result of one tool call, paired to it by `call_id`.
    pub fn tool_result(call: &ToolCall, content: impl Into<String>, is_error: bool) -> Self {
        Self {
            tool_call_id: Some(call.id.clone()),
            tool_name: Some(call.name.clone()),
            is_error,
            ..Self::plain(Role::Tool, content.into())
        }
    }

    /// This message with `images` attached: a tool result whose tool
    /// returned images, or a person's message with pictures. Providers
    /// that take images send them with the text; a tool result's text
    /// should still describe them for models that cannot see them.
    #[must_use]
    pub fn with_images(mut self, images: Vec<ImageData>) -> Self {
        self.images = images;
        self
    }

    fn plain(role: Role, content: String) -> Self {
        Self {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            is_error: false,
            images: Vec::new(),
            reasoning: Vec::new(),
        }
    }

    /// This assistant message with the reasoning that preceded it.
    #[must_use]
    pub fn with_reasoning(mut self, reasoning: Vec<Reasoning>) -> Self {
        self.reasoning = reasoning;
        self
    }
}

/// What the model is told about a tool: its name, when to use it, and the JSON
/// schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn call() -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "shot".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn a_message_without_images_serialises_as_before_images_existed() {
        let plain = Message::tool_result(&call(), "out", true);
        let json = serde_json::to_string(&plain).unwrap();
        assert_eq!(
            json,
            r#"{"role":"tool","content":"out","tool_call_id":"c1","tool_name":"shot","is_error":true}"#
        );
        // Stored JSON from before images existed reads back unchanged.
        let back: Message = serde_json::from_str(&json).unwrap();
        assert_eq!(back, plain);
        assert!(back.images.is_empty());
    }

    #[test]
    fn images_round_trip_after_the_other_fields() {
        let message = Message::tool_result(&call(), "[image: image/png, 3 bytes]", false)
            .with_images(vec![ImageData::new("image/png", "QUJD")]);
        let json = serde_json::to_string(&message).unwrap();
        assert_eq!(
            json,
            r#"{"role":"tool","content":"[image: image/png, 3 bytes]","tool_call_id":"c1","tool_name":"shot","images":[{"mime_type":"image/png","data":"QUJD"}]}"#
        );
        let back: Message = serde_json::from_str(&json).unwrap();
        assert_eq!(back, message);
    }

    #[test]
    fn reasoning_round_trips_and_is_absent_when_empty() {
        let plain = Message::assistant("ok", vec![]);
        assert!(!serde_json::to_string(&plain).unwrap().contains("reasoning"));
        let message = Message::assistant("ok", vec![call()]).with_reasoning(vec![
            Reasoning::Thinking {
                thinking: "hm \"x\"".into(),
                signature: "sig==".into(),
            },
            Reasoning::RedactedThinking {
                data: "opaque".into(),
            },
            Reasoning::Text {
                text: "plain".into(),
            },
        ]);
        let json = serde_json::to_string(&message).unwrap();
        assert!(
            json.contains(r#"{"type":"thinking","thinking":"hm \"x\"","signature":"sig=="}"#),
            "{json}"
        );
        let back: Message = serde_json::from_str(&json).unwrap();
        assert_eq!(back, message);
        assert_eq!(back.reasoning[1].text(), "");
    }
}
