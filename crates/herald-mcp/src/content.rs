//! MCP tool results turned into the text a model reads.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// What one MCP tool call produced, ready for the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpCallResult {
    /// The text the model reads: text blocks as they are, other blocks as
    /// one descriptive line each.
    pub content: String,
    /// The server flagged the result as an error (`isError`), or the call
    /// failed (timeout, cancellation, server down, protocol error).
    pub is_error: bool,
    /// Images of the result (also described by a line in `content`); the
    /// tool adapter passes them on in `ToolResult::images`, for providers
    /// that take images.
    pub images: Vec<McpImage>,
}

/// An image a tool returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpImage {
    pub mime_type: String,
    /// Base64, as the server sent it.
    pub data: String,
}

impl McpCallResult {
    /// A failed call whose `content` says what happened.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }
}

fn short(value: &impl serde::Serialize) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    text.chars().take(300).collect()
}

/// Bytes encoded by a base64 text (without decoding it).
pub(crate) fn base64_len(data: &str) -> usize {
    let chars = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    let padding = data
        .trim_end()
        .bytes()
        .rev()
        .take_while(|&b| b == b'=')
        .count();
    (chars / 4 * 3 + (chars % 4).saturating_sub(1)).saturating_sub(padding)
}

fn resource_line(contents: &ResourceContents) -> String {
    match contents {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => match mime_type {
            Some(mime) => format!("[resource: {uri} ({mime})]\n{text}"),
            None => format!("[resource: {uri}]\n{text}"),
        },
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => format!(
            "[resource: {uri}, {}, {} bytes, binary content not shown]",
            mime_type.as_deref().unwrap_or("application/octet-stream"),
            base64_len(blob)
        ),
        #[allow(unreachable_patterns)]
        other => format!(
            "[resource: {}]",
            serde_json::to_string(other).unwrap_or_default()
        ),
    }
}

/// Maps a tool result: text as text; an image or audio block as a line
/// `[image: MIME, N bytes]`; an embedded resource as its URI line followed
/// by its text (or a line describing a binary one); a resource link as a
/// line with its URI, name and description; `structuredContent` as compact
/// JSON when there is no text block; `isError` as `is_error`.
pub fn map_call_result(result: CallToolResult) -> McpCallResult {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    let mut has_text = false;
    for block in result.content {
        match block {
            ContentBlock::Text(text) => {
                has_text = true;
                parts.push(text.text);
            }
            ContentBlock::Image(image) => {
                parts.push(format!(
                    "[image: {}, {} bytes]",
                    image.mime_type,
                    base64_len(&image.data)
                ));
                images.push(McpImage {
                    mime_type: image.mime_type,
                    data: image.data,
                });
            }
            ContentBlock::Audio(audio) => parts.push(format!(
                "[audio: {}, {} bytes, not shown]",
                audio.mime_type,
                base64_len(&audio.data)
            )),
            ContentBlock::Resource(embedded) => {
                has_text = true;
                parts.push(resource_line(&embedded.resource));
            }
            ContentBlock::ResourceLink(link) => {
                let mut line = format!("[resource link: {}", link.uri);
                if !link.name.is_empty() && link.name != link.uri {
                    line.push_str(&format!(" ({})", link.name));
                }
                if let Some(mime) = &link.mime_type {
                    line.push_str(&format!(", {mime}"));
                }
                line.push(']');
                if let Some(description) = link.description.as_deref().filter(|d| !d.is_empty()) {
                    line.push_str(&format!(" {description}"));
                }
                parts.push(line);
            }
            other => parts.push(format!("[content: {}]", short(&other))),
        }
    }
    if !has_text
        && let Some(structured) = result.structured_content
        && !structured.is_null()
    {
        parts.push(serde_json::to_string(&structured).unwrap_or_default());
    }
    let is_error = result.is_error.unwrap_or(false);
    let content = if parts.is_empty() {
        if is_error {
            "the tool reported an error without a message".to_owned()
        } else {
            "(the tool returned no content)".to_owned()
        }
    } else {
        parts.join("\n")
    };
    McpCallResult {
        content,
        is_error,
        images,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn base64_lengths() {
        assert_eq!(base64_len(""), 0);
        assert_eq!(base64_len("QQ=="), 1);
        assert_eq!(base64_len("QUI="), 2);
        assert_eq!(base64_len("QUJD"), 3);
        assert_eq!(base64_len("QUJDRA=="), 4);
        assert_eq!(base64_len("QUJDRA"), 4);
    }

    #[test]
    fn maps_blocks_and_structured_content() {
        let result: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "QUJD", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///a", "name": "a", "description": "the a"},
                {"type": "resource", "resource": {"uri": "test://x", "mimeType": "text/plain", "text": "body"}}
            ],
            "isError": true
        }))
        .unwrap();
        let mapped = map_call_result(result);
        assert!(mapped.is_error);
        assert_eq!(
            mapped.content,
            "hello\n[image: image/png, 3 bytes]\n[resource link: file:///a (a)] the a\n[resource: test://x (text/plain)]\nbody"
        );
        assert_eq!(mapped.images.len(), 1);

        let structured: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [], "structuredContent": {"a": 1}
        }))
        .unwrap();
        assert_eq!(map_call_result(structured).content, r#"{"a":1}"#);
    }
}
