//! Turns an OpenAI Chat Completions or Anthropic Messages request body into one
//! API-neutral view ([`RequestView`]) that scripts and invariant checks read.

use serde_json::Value;

/// Which wire API a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// OpenAI-compatible Chat Completions (`POST {base}/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`POST {base}/v1/messages`).
    Anthropic,
}

/// One message of a request's history, independent of the wire API.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NormMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool` (OpenAI tool results).
    /// Anthropic tool results stay in their `user` message.
    pub role: String,
    /// The message's text (text parts joined with `\n`); empty for OpenAI `tool`
    /// messages, whose content is in `tool_results`.
    pub text: String,
    /// Tool calls of an assistant message: `(id, name, raw JSON arguments)`.
    pub tool_calls: Vec<(String, String, String)>,
    /// Tool results carried by this message: `(call id, content)`.
    pub tool_results: Vec<(String, String)>,
    /// Images this message carries, in order: `(media type, base64 data)`.
    /// OpenAI: `image_url` parts (a URL that is not a `data:` URL gives an
    /// empty media type and the URL); Anthropic: `image` blocks, also
    /// those inside a `tool_result`'s content.
    pub images: Vec<(String, String)>,
    /// Anthropic `thinking` and `redacted_thinking` blocks of an assistant
    /// message, in order, each as its JSON text (keys sorted): they must
    /// come back byte for byte.
    pub thinking: Vec<String>,
}

/// A request as a script sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestView {
    /// Which API the request used.
    pub api: Api,
    /// The `model` field of the request.
    pub model: String,
    /// Conversation key: the text of the first user message.
    pub conversation: String,
    /// Number of assistant messages in the history.
    pub turn: usize,
    /// Every message in order. For OpenAI this includes `system` messages.
    pub messages: Vec<NormMessage>,
    /// Names of the offered tools, in request order.
    pub tool_names: Vec<String>,
    /// The system prompt (Anthropic top-level `system`; OpenAI system/developer
    /// messages joined with `\n\n`).
    pub system: String,
    /// The request forbids tool calls (`tool_choice` none).
    pub tool_choice_none: bool,
    /// The request asked for a streamed reply.
    pub stream: bool,
}

impl RequestView {
    /// Parses a request body of the given API. Errors name what is malformed.
    pub fn from_body(api: Api, body: &Value) -> Result<RequestView, String> {
        let obj = body
            .as_object()
            .ok_or_else(|| "request body is not a JSON object".to_string())?;
        let raw_messages = obj
            .get("messages")
            .and_then(Value::as_array)
            .ok_or_else(|| "request has no `messages` array".to_string())?;
        let mut messages = Vec::with_capacity(raw_messages.len());
        for (i, m) in raw_messages.iter().enumerate() {
            let msg = match api {
                Api::OpenAi => openai_message(m),
                Api::Anthropic => anthropic_message(m),
            }
            .map_err(|e| format!("message {i}: {e}"))?;
            messages.push(msg);
        }
        let system = match api {
            Api::OpenAi => messages
                .iter()
                .filter(|m| m.role == "system" || m.role == "developer")
                .map(|m| m.text.as_str())
                .collect::<Vec<_>>()
                .join("\n\n"),
            Api::Anthropic => obj.get("system").map(content_text).unwrap_or_default(),
        };
        let tool_names = obj
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| match api {
                        Api::OpenAi => t.pointer("/function/name").and_then(Value::as_str),
                        Api::Anthropic => t.get("name").and_then(Value::as_str),
                    })
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let tool_choice_none = match obj.get("tool_choice") {
            Some(Value::String(s)) => s == "none",
            Some(Value::Object(o)) => o.get("type").and_then(Value::as_str) == Some("none"),
            _ => false,
        };
        let conversation = messages
            .iter()
            .find(|m| m.role == "user")
            .map(|m| m.text.clone())
            .unwrap_or_default();
        let turn = messages.iter().filter(|m| m.role == "assistant").count();
        Ok(RequestView {
            api,
            model: obj
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            conversation,
            turn,
            messages,
            tool_names,
            system,
            tool_choice_none,
            stream: obj.get("stream").and_then(Value::as_bool).unwrap_or(false),
        })
    }

    /// The last message of the history, if any.
    pub fn last(&self) -> Option<&NormMessage> {
        self.messages.last()
    }

    /// Every tool result in the history, in order: `(call id, content)`.
    pub fn tool_results(&self) -> impl Iterator<Item = &(String, String)> {
        self.messages.iter().flat_map(|m| m.tool_results.iter())
    }

    /// Every image in the history, in order: `(media type, base64 data)`.
    pub fn images(&self) -> impl Iterator<Item = &(String, String)> {
        self.messages.iter().flat_map(|m| m.images.iter())
    }
}

/// The images of a `content` value: OpenAI `image_url` parts and Anthropic
/// `image` blocks with a base64 source, nested `tool_result` content too.
fn content_images(content: &Value, out: &mut Vec<(String, String)>) {
    let Value::Array(parts) = content else {
        return;
    };
    for part in parts {
        match part.get("type").and_then(Value::as_str) {
            Some("image_url") => {
                let url = part
                    .pointer("/image_url/url")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let image = url
                    .strip_prefix("data:")
                    .and_then(|rest| rest.split_once(";base64,"))
                    .map_or_else(
                        || (String::new(), url.to_string()),
                        |(mime, data)| (mime.to_string(), data.to_string()),
                    );
                out.push(image);
            }
            Some("image") => {
                let field = |name: &str| {
                    part.pointer(&format!("/source/{name}"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                out.push((field("media_type"), field("data")));
            }
            Some("tool_result") => {
                if let Some(inner) = part.get("content") {
                    content_images(inner, out);
                }
            }
            _ => {}
        }
    }
}

/// Text of a `content` value: a string, or an array of blocks whose `text`
/// blocks are joined with `\n`. Anything else gives an empty string.
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn role_of(m: &Value) -> Result<String, String> {
    m.get("role")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| "missing `role`".to_string())
}

fn openai_message(m: &Value) -> Result<NormMessage, String> {
    let role = role_of(m)?;
    let content = m.get("content").unwrap_or(&Value::Null);
    let mut msg = NormMessage {
        role,
        ..NormMessage::default()
    };
    if msg.role == "tool" {
        let id = m
            .get("tool_call_id")
            .and_then(Value::as_str)
            .ok_or_else(|| "tool message without `tool_call_id`".to_string())?;
        msg.tool_results
            .push((id.to_string(), content_text(content)));
        return Ok(msg);
    }
    // DeepSeek refuses its own `reasoning_content` in a request; other
    // servers ignore it at best.
    for key in ["reasoning_content", "reasoning"] {
        if m.get(key).is_some() {
            return Err(format!(
                "a {} message carries `{key}`: reasoning text must not be sent back",
                msg.role
            ));
        }
    }
    msg.text = content_text(content);
    content_images(content, &mut msg.images);
    if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
        for (i, c) in calls.iter().enumerate() {
            let id = c.get("id").and_then(Value::as_str);
            let name = c.pointer("/function/name").and_then(Value::as_str);
            let args = c.pointer("/function/arguments").and_then(Value::as_str);
            match (id, name) {
                (Some(id), Some(name)) => msg.tool_calls.push((
                    id.to_string(),
                    name.to_string(),
                    args.unwrap_or_default().to_string(),
                )),
                _ => return Err(format!("tool call {i} lacks `id` or `function.name`")),
            }
        }
    }
    Ok(msg)
}

fn anthropic_message(m: &Value) -> Result<NormMessage, String> {
    let role = role_of(m)?;
    let mut msg = NormMessage {
        role,
        ..NormMessage::default()
    };
    let content = m.get("content").unwrap_or(&Value::Null);
    let blocks = match content {
        Value::String(s) => {
            msg.text = s.clone();
            return Ok(msg);
        }
        Value::Array(blocks) => blocks,
        _ => return Err("`content` is neither a string nor an array".to_string()),
    };
    content_images(content, &mut msg.images);
    let mut texts = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let kind = b.get("type").and_then(Value::as_str);
        if let Some(kind @ ("thinking" | "redacted_thinking")) = kind {
            if i > msg.thinking.len() {
                return Err(format!(
                    "{kind} block {i} follows a block of another type: thinking blocks come first"
                ));
            }
            // Keys sorted whatever order the client wrote them in (JSON
            // objects keep their order when parsed).
            let mut text = String::new();
            crate::canonical::write_sorted(&crate::canonical::strip_cache_control(b), &mut text);
            msg.thinking.push(text);
        }
        match kind {
            Some("text") => texts.push(b.get("text").and_then(Value::as_str).unwrap_or_default()),
            Some("tool_use") => {
                let id = b.get("id").and_then(Value::as_str);
                let name = b.get("name").and_then(Value::as_str);
                let (Some(id), Some(name)) = (id, name) else {
                    return Err(format!("tool_use block {i} lacks `id` or `name`"));
                };
                let args = match b.get("input") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                msg.tool_calls
                    .push((id.to_string(), name.to_string(), args));
            }
            Some("tool_result") => {
                let id = b
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("tool_result block {i} lacks `tool_use_id`"))?;
                let text = b.get("content").map(content_text).unwrap_or_default();
                msg.tool_results.push((id.to_string(), text));
            }
            _ => {}
        }
    }
    msg.text = texts.join("\n");
    Ok(msg)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openai_view() {
        let body = json!({
            "model": "m",
            "stream": true,
            "tool_choice": "none",
            "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {}}}],
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "data"}
            ]
        });
        let v = RequestView::from_body(Api::OpenAi, &body).unwrap();
        assert_eq!(v.conversation, "hello");
        assert_eq!(v.turn, 1);
        assert_eq!(v.system, "sys");
        assert!(v.tool_choice_none);
        assert!(v.stream);
        assert_eq!(v.tool_names, vec!["read_file"]);
        assert_eq!(v.messages[2].tool_calls[0].2, "{\"path\":\"a\"}");
        assert_eq!(
            v.last().unwrap().tool_results,
            vec![("c1".into(), "data".into())]
        );
    }

    #[test]
    fn anthropic_view() {
        let body = json!({
            "model": "m",
            "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "tool_choice": {"type": "none"},
            "tools": [{"name": "grep", "description": "d", "input_schema": {}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "ok"},
                    {"type": "tool_use", "id": "t1", "name": "grep", "input": {"q": 1}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "r"}], "is_error": false}
                ]}
            ]
        });
        let v = RequestView::from_body(Api::Anthropic, &body).unwrap();
        assert_eq!(v.conversation, "a\nb");
        assert_eq!(v.system, "sys");
        assert_eq!(v.turn, 1);
        assert!(v.tool_choice_none);
        assert_eq!(v.tool_names, vec!["grep"]);
        assert_eq!(
            v.messages[1].tool_calls,
            vec![("t1".into(), "grep".into(), "{\"q\":1}".into())]
        );
        assert_eq!(v.tool_results().count(), 1);
    }

    #[test]
    fn images_are_read_from_both_apis() {
        let openai = json!({"messages": [
            {"role": "user", "content": "look"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "[image]"},
            {"role": "user", "content": [
                {"type": "text", "text": "from c1:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
            ]}
        ]});
        let v = RequestView::from_body(Api::OpenAi, &openai).unwrap();
        assert_eq!(v.conversation, "look");
        assert_eq!(v.last().unwrap().text, "from c1:");
        let images: Vec<_> = v.images().cloned().collect();
        assert_eq!(
            images,
            [
                ("image/png".to_string(), "QUJD".to_string()),
                (String::new(), "https://x/y.png".to_string())
            ]
        );
        let anthropic = json!({"messages": [
            {"role": "user", "content": "look"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [
                    {"type": "text", "text": "[image]"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}
                ]}
            ]}
        ]});
        let v = RequestView::from_body(Api::Anthropic, &anthropic).unwrap();
        assert_eq!(
            v.last().unwrap().tool_results,
            vec![("t1".into(), "[image]".into())]
        );
        assert_eq!(
            v.last().unwrap().images,
            vec![("image/png".into(), "QUJD".into())]
        );
    }

    #[test]
    fn malformed_bodies_are_errors() {
        assert!(RequestView::from_body(Api::OpenAi, &json!([])).is_err());
        assert!(RequestView::from_body(Api::OpenAi, &json!({"model": "m"})).is_err());
        let bad_tool = json!({"messages": [{"role": "tool", "content": "x"}]});
        assert!(RequestView::from_body(Api::OpenAi, &bad_tool).is_err());
        let bad_block = json!({"messages": [{"role": "user", "content": 3}]});
        assert!(RequestView::from_body(Api::Anthropic, &bad_block).is_err());
    }

    #[test]
    fn thinking_blocks_are_kept_first_and_reasoning_text_is_refused() {
        let body = json!({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "tool_use", "id": "a", "name": "n", "input": {}}]}]});
        let view = RequestView::from_body(Api::Anthropic, &body).unwrap();
        assert_eq!(
            view.messages[1].thinking,
            [r#"{"signature":"s","thinking":"t","type":"thinking"}"#]
        );
        let late = json!({"messages": [{"role": "assistant", "content": [
            {"type": "text", "text": "x"},
            {"type": "redacted_thinking", "data": "d"}]}]});
        let err = RequestView::from_body(Api::Anthropic, &late).unwrap_err();
        assert!(err.contains("come first"), "{err}");
        let sent_back = json!({"messages": [
            {"role": "assistant", "content": "a", "reasoning_content": "r"}]});
        let err = RequestView::from_body(Api::OpenAi, &sent_back).unwrap_err();
        assert!(err.contains("must not be sent back"), "{err}");
    }
}
