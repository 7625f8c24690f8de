//! Anthropic Messages API: request encoding (system as a top-level block,
//! tool results grouped into user turns, cache breakpoints) and stream assembly.

use std::collections::BTreeMap;

use herald_protocol::{ImageData, Message, Reasoning, Role, ToolCall, ToolSpec, Usage};
use serde::{Deserialize, Serialize};

use crate::{
    AssistantReply, ChatRequest, EncodedTools, ErrorKind, LlmError, ReasoningConfig, StreamUpdate,
};

/// The API version header value herald speaks.
pub(crate) const API_VERSION: &str = "2023-06-01";

/// Encodes tool specs as `[{"name","description","input_schema"}]`.
pub(crate) fn encode_tools(specs: &[ToolSpec]) -> EncodedTools {
    #[derive(Serialize)]
    struct Tool<'a> {
        name: &'a str,
        description: &'a str,
        input_schema: &'a serde_json::Value,
    }
    let tools: Vec<Tool<'_>> = specs
        .iter()
        .map(|s| Tool {
            name: &s.name,
            description: &s.description,
            input_schema: &s.parameters,
        })
        .collect();
    EncodedTools {
        json: serde_json::to_string(&tools)
            .unwrap_or_else(|_| "[]".to_owned())
            .into(),
        count: specs.len(),
    }
}

#[derive(Serialize)]
struct CacheControl {
    r#type: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl {
    r#type: "ephemeral",
};

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    /// A thinking block exactly as it came: the API checks its signature.
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: serde_json::Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An image the person attached to their message.
    Image {
        source: ImageSource<'a>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ResultContent<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl Block<'_> {
    fn mark_cache(&mut self) {
        let slot = match self {
            Block::Text { cache_control, .. }
            | Block::ToolUse { cache_control, .. }
            | Block::ToolResult { cache_control, .. } => cache_control,
            // Never last in a message: a text or tool_use block follows.
            Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::Image { .. } => {
                return;
            }
        };
        *slot = Some(EPHEMERAL);
    }
}

/// A `tool_result`'s content: a string, or (when the result carries images)
/// its text block followed by one `image` block per image.
#[derive(Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(&'a str),
    Parts(Vec<ResultPart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResultPart<'a> {
    Text { text: &'a str },
    Image { source: ImageSource<'a> },
}

/// `{"type":"base64","media_type":...,"data":...}`.
#[derive(Serialize)]
struct ImageSource<'a> {
    r#type: &'static str,
    media_type: &'a str,
    data: &'a str,
}

impl<'a> ImageSource<'a> {
    fn of(image: &'a ImageData) -> Self {
        Self {
            r#type: "base64",
            media_type: &image.mime_type,
            data: &image.data,
        }
    }
}

impl<'a> ResultContent<'a> {
    /// The content of a tool result: its text as a string as long as no
    /// image is sent (the shape every history had before images), else
    /// the text block (left out when there is no text: empty text blocks
    /// are refused) and the images.
    fn of(message: &'a Message, images: bool) -> Self {
        let text = message.content.as_str();
        if !images || message.images.is_empty() {
            return Self::Text(if text.is_empty() { "(no output)" } else { text });
        }
        let mut parts = Vec::with_capacity(1 + message.images.len());
        if !text.trim().is_empty() {
            parts.push(ResultPart::Text { text });
        }
        parts.extend(
            message
                .images
                .iter()
                .map(|image: &'a ImageData| ResultPart::Image {
                    source: ImageSource::of(image),
                }),
        );
        Self::Parts(parts)
    }
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

fn non_empty(text: &str) -> &str {
    if text.trim().is_empty() {
        "(empty)"
    } else {
        text
    }
}

/// The end (exclusive) of the Anthropic turn starting at `start`:
/// consecutive tool results make one user turn, any other message its own.
fn turn_end(messages: &[Message], start: usize) -> usize {
    if messages[start].role != Role::Tool {
        return start + 1;
    }
    messages[start..]
        .iter()
        .position(|m| m.role != Role::Tool)
        .map_or(messages.len(), |n| start + n)
}

/// [`turn_end`] for the body cache's tests.
#[cfg(test)]
pub(crate) fn tests_turn_end(messages: &[Message], start: usize) -> usize {
    turn_end(messages, start)
}

/// One Anthropic turn made of `messages` (a run of tool results becomes
/// one user message of `tool_result` blocks, with their images when
/// `images` is set).
fn wire_turn(messages: &[Message], images: bool) -> WireMessage<'_> {
    let first = &messages[0];
    match first.role {
        Role::Tool => WireMessage {
            role: "user",
            content: messages
                .iter()
                .map(|message| Block::ToolResult {
                    tool_use_id: message.tool_call_id.as_deref().unwrap_or_default(),
                    content: ResultContent::of(message, images),
                    is_error: message.is_error,
                    cache_control: None,
                })
                .collect(),
        },
        Role::User | Role::System => {
            // Images first, then the text (the order Anthropic advises);
            // the text block stays last for the cache breakpoint.
            let shown = if images { first.images.as_slice() } else { &[] };
            let mut content = Vec::with_capacity(1 + shown.len());
            content.extend(shown.iter().map(|image| Block::Image {
                source: ImageSource::of(image),
            }));
            content.push(Block::Text {
                text: non_empty(&first.content),
                cache_control: None,
            });
            WireMessage {
                role: "user",
                content,
            }
        }
        Role::Assistant => {
            let message = first;
            let mut content =
                Vec::with_capacity(1 + message.tool_calls.len() + message.reasoning.len());
            // Thinking blocks first, unchanged, as the API requires
            // across tool use; streamed reasoning text is never sent.
            content.extend(message.reasoning.iter().filter_map(|piece| match piece {
                Reasoning::Thinking {
                    thinking,
                    signature,
                } => Some(Block::Thinking {
                    thinking,
                    signature,
                }),
                Reasoning::RedactedThinking { data } => Some(Block::RedactedThinking { data }),
                Reasoning::Text { .. } => None,
            }));
            if !message.content.trim().is_empty() || message.tool_calls.is_empty() {
                content.push(Block::Text {
                    text: non_empty(&message.content),
                    cache_control: None,
                });
            }
            content.extend(message.tool_calls.iter().map(|call| Block::ToolUse {
                id: &call.id,
                name: &call.name,
                input: tool_input(&call.arguments),
                cache_control: None,
            }));
            WireMessage {
                role: "assistant",
                content,
            }
        }
    }
}

/// The `input` object for a stored call. Arguments that are not a JSON object
/// (the model produced invalid JSON) replay as `{}`; the error result that
/// followed them tells the model what went wrong.
fn tool_input(arguments: &str) -> serde_json::Value {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => serde_json::Value::Object(Default::default()),
    }
}

/// How the Messages API writes a request body (see [`crate::body`]): cache
/// breakpoints on the system block and on the newest message. Tool results
/// carry their images as `image` blocks when `images` is set, else only
/// their text.
pub(crate) struct Wire<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub images: bool,
    pub reasoning: &'a ReasoningConfig,
}

impl crate::body::Wire for Wire<'_> {
    fn head(&self, req: &ChatRequest<'_>, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        #[derive(Serialize)]
        struct Thinking {
            r#type: &'static str,
            budget_tokens: u32,
        }
        #[derive(Serialize)]
        struct Head<'a> {
            model: &'a str,
            max_tokens: u32,
            #[serde(skip_serializing_if = "Option::is_none")]
            thinking: Option<Thinking>,
            stream: bool,
            system: [Block<'a>; 1],
        }
        let head = Head {
            model: self.model,
            max_tokens: self.max_tokens,
            thinking: self
                .reasoning
                .thinking_budget
                .map(|budget_tokens| Thinking {
                    r#type: "enabled",
                    budget_tokens,
                }),
            stream: true,
            system: [Block::Text {
                text: non_empty(req.system),
                cache_control: Some(EPHEMERAL),
            }],
        };
        serde_json::to_writer(&mut *out, &head)?;
        // Reopen the object: the encoded tools and the messages follow.
        out.pop();
        if !req.tools.is_empty() {
            out.extend_from_slice(b",\"tools\":");
            out.extend_from_slice(req.tools.json.as_bytes());
            if req.forbid_tool_calls {
                out.extend_from_slice(b",\"tool_choice\":{\"type\":\"none\"}");
            }
        }
        out.extend_from_slice(b",\"messages\":[");
        Ok(())
    }

    fn segment_end(&self, messages: &[Message], start: usize) -> usize {
        turn_end(messages, start)
    }

    fn boundary_flag(&self, _messages: &[Message], _end: usize) -> bool {
        false
    }

    fn segment(
        &self,
        messages: &[Message],
        start: usize,
        end: usize,
        last: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        if start > 0 {
            out.push(b',');
        }
        let mut turn = wire_turn(&messages[start..end], self.images);
        if last && let Some(block) = turn.content.last_mut() {
            block.mark_cache();
        }
        serde_json::to_writer(&mut *out, &turn)
    }

    fn last_is_plain(&self) -> bool {
        false
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop {},
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop {},
    Ping {},
    Error {
        error: WireError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    r#type: String,
    #[serde(default)]
    message: String,
}

struct ToolBlock {
    id: String,
    name: String,
    json: String,
}

/// Builds one reply from Messages stream events.
#[derive(Default)]
pub(crate) struct Assembler {
    text: String,
    tools: BTreeMap<usize, ToolBlock>,
    /// Thinking and redacted thinking blocks by index, kept whole.
    thinking: BTreeMap<usize, Reasoning>,
    uncached_input: u64,
    cache_read: u64,
    cache_creation: u64,
    output: u64,
    stop_reason: Option<String>,
    done: bool,
}

impl Assembler {
    fn apply_usage(&mut self, usage: WireUsage) {
        if let Some(v) = usage.input_tokens {
            self.uncached_input = v;
        }
        if let Some(v) = usage.cache_read_input_tokens {
            self.cache_read = v;
        }
        if let Some(v) = usage.cache_creation_input_tokens {
            self.cache_creation = v;
        }
        if let Some(v) = usage.output_tokens {
            self.output = v;
        }
    }

    /// True once the stop reason arrived: the message's content is complete
    /// even if `message_stop` never comes.
    pub(crate) fn has_finished(&self) -> bool {
        self.stop_reason.is_some()
    }

    /// Feeds one event's data. Returns true once the message is complete:
    /// at `message_stop`, or at the `message_delta` carrying the stop reason
    /// and the final usage.
    pub(crate) fn push(
        &mut self,
        data: &str,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
    ) -> Result<bool, LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        let event: StreamEvent =
            serde_json::from_str(data).map_err(|err| event_error(&err, data))?;
        match event {
            StreamEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.apply_usage(usage);
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                StartBlock::Text { text } if !text.is_empty() => {
                    on_update(StreamUpdate::TextDelta(&text));
                    self.text.push_str(&text);
                }
                StartBlock::Thinking {
                    thinking,
                    signature,
                } => {
                    if !thinking.is_empty() {
                        on_update(StreamUpdate::ReasoningDelta(&thinking));
                    }
                    self.thinking.insert(
                        index,
                        Reasoning::Thinking {
                            thinking,
                            signature,
                        },
                    );
                }
                StartBlock::RedactedThinking { data } => {
                    self.thinking
                        .insert(index, Reasoning::RedactedThinking { data });
                }
                StartBlock::ToolUse { id, name } => {
                    self.tools.insert(
                        index,
                        ToolBlock {
                            id,
                            name,
                            json: String::new(),
                        },
                    );
                }
                _ => {}
            },
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => {
                    on_update(StreamUpdate::TextDelta(&text));
                    self.text.push_str(&text);
                }
                BlockDelta::InputJsonDelta { partial_json } => {
                    if let Some(tool) = self.tools.get_mut(&index) {
                        tool.json.push_str(&partial_json);
                    }
                }
                BlockDelta::ThinkingDelta { thinking: piece } => {
                    if let Some(Reasoning::Thinking { thinking, .. }) =
                        self.thinking.get_mut(&index)
                    {
                        on_update(StreamUpdate::ReasoningDelta(&piece));
                        thinking.push_str(&piece);
                    }
                }
                BlockDelta::SignatureDelta { signature: piece } => {
                    if let Some(Reasoning::Thinking { signature, .. }) =
                        self.thinking.get_mut(&index)
                    {
                        signature.push_str(&piece);
                    }
                }
                BlockDelta::Other => {}
            },
            StreamEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                // The stop reason with the final usage is the last thing a
                // message holds: it is complete even if `message_stop` never
                // comes.
                if let Some(usage) = usage {
                    self.apply_usage(usage);
                    if self.stop_reason.is_some() {
                        return Ok(true);
                    }
                }
            }
            StreamEvent::MessageStop {} => {
                self.done = true;
                return Ok(true);
            }
            StreamEvent::Error { error } => {
                let kind = match error.r#type.as_str() {
                    "overloaded_error" | "api_error" | "rate_limit_error" => ErrorKind::Server,
                    _ => ErrorKind::BadRequest,
                };
                return Err(LlmError::new(
                    kind,
                    format!(
                        "the provider reported an error mid-stream ({}): {}",
                        error.r#type, error.message
                    ),
                ));
            }
            StreamEvent::ContentBlockStop {} | StreamEvent::Ping {} | StreamEvent::Unknown => {}
        }
        Ok(false)
    }

    /// The finished reply; a stream that stopped before both `message_stop`
    /// and the stop reason is truncated.
    pub(crate) fn finish(self) -> Result<AssistantReply, LlmError> {
        if !self.done && self.stop_reason.is_none() {
            return Err(LlmError::new(
                ErrorKind::Truncated,
                "the stream ended before message_stop",
            ));
        }
        Ok(self.into_reply())
    }

    /// What has arrived so far, for a reply cut at the request's time limit.
    /// A thinking block without its signature is left out: the API refuses
    /// it in later requests, and it was never finished.
    pub(crate) fn cut_short(mut self) -> AssistantReply {
        self.thinking.retain(|_, block| match block {
            Reasoning::Thinking { signature, .. } => !signature.is_empty(),
            _ => true,
        });
        self.into_reply()
    }

    fn into_reply(self) -> AssistantReply {
        let tool_calls = self
            .tools
            .into_values()
            .map(|t| ToolCall {
                id: t.id,
                name: t.name,
                arguments: if t.json.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    t.json
                },
            })
            .collect();
        AssistantReply {
            text: self.text,
            tool_calls,
            reasoning: self.thinking.into_values().collect(),
            usage: Usage {
                input_tokens: self.uncached_input + self.cache_read + self.cache_creation,
                output_tokens: self.output,
                cached_tokens: self.cache_read,
                cache_creation_tokens: self.cache_creation,
            },
            finish_reason: self.stop_reason,
            timed_out: false,
        }
    }
}

/// A stream event that could not be read: text that is not JSON is a broken
/// stream (retried like a truncated one); well-formed JSON of the wrong shape
/// is a protocol mismatch a retry would not change.
fn event_error(err: &serde_json::Error, data: &str) -> LlmError {
    let preview: String = data.chars().take(200).collect();
    match err.classify() {
        serde_json::error::Category::Data => LlmError::new(
            ErrorKind::Protocol,
            format!(
                "the provider sent a stream event that is not a Messages event ({err}): {preview}"
            ),
        ),
        _ => LlmError::new(
            ErrorKind::Truncated,
            format!("the stream broke: an event is not valid JSON ({err}): {preview}"),
        ),
    }
}

/// A non-streamed `message` (a server that ignored `stream: true`).
#[derive(Deserialize)]
struct WholeMessage {
    #[serde(default)]
    content: Vec<WholeBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WholeBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: serde_json::Value,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    #[serde(other)]
    Other,
}

/// Reads a whole non-streamed answer into the reply a stream would have
/// produced. The error says what is wrong with the answer; the caller adds
/// where it came from.
pub(crate) fn parse_message(body: &serde_json::Value) -> Result<AssistantReply, String> {
    let message = WholeMessage::deserialize(body)
        .map_err(|err| format!("it is not a Messages answer ({err})"))?;
    let mut assembler = Assembler {
        stop_reason: message.stop_reason,
        done: true,
        ..Assembler::default()
    };
    if let Some(usage) = message.usage {
        assembler.apply_usage(usage);
    }
    for (index, block) in message.content.into_iter().enumerate() {
        match block {
            WholeBlock::Text { text } => assembler.text.push_str(&text),
            WholeBlock::ToolUse { id, name, input } => {
                let json = match input {
                    serde_json::Value::String(text) => text,
                    serde_json::Value::Null => String::new(),
                    other => other.to_string(),
                };
                assembler.tools.insert(index, ToolBlock { id, name, json });
            }
            WholeBlock::Thinking {
                thinking,
                signature,
            } => {
                let block = Reasoning::Thinking {
                    thinking,
                    signature,
                };
                assembler.thinking.insert(index, block);
            }
            WholeBlock::RedactedThinking { data } => {
                let block = Reasoning::RedactedThinking { data };
                assembler.thinking.insert(index, block);
            }
            WholeBlock::Other => {}
        }
    }
    assembler.finish().map_err(|err| err.message)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn encode_body(
        model: &str,
        max_tokens: u32,
        images: bool,
        reasoning: &ReasoningConfig,
        req: &ChatRequest<'_>,
    ) -> Result<Vec<u8>, serde_json::Error> {
        let wire = Wire {
            model,
            max_tokens,
            images,
            reasoning,
        };
        crate::body::encode_full(&wire, req)
    }

    fn assemble(events: &[&str]) -> Result<AssistantReply, LlmError> {
        let mut assembler = Assembler::default();
        let mut on_update = |_: StreamUpdate<'_>| {};
        for event in events {
            if assembler.push(event, &mut on_update)? {
                break;
            }
        }
        assembler.finish()
    }

    #[test]
    fn assembles_text_tool_use_and_cache_usage() {
        let reply = assemble(&[
            r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"cache_read_input_tokens":90,"cache_creation_input_tokens":5,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me look."}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\":\"a\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .unwrap();
        assert_eq!(reply.text, "Let me look.");
        assert_eq!(reply.tool_calls.len(), 1);
        assert_eq!(reply.tool_calls[0].id, "toolu_1");
        assert_eq!(reply.tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(reply.usage.input_tokens, 105);
        assert_eq!(reply.usage.cached_tokens, 90);
        assert_eq!(reply.usage.cache_creation_tokens, 5);
        assert_eq!(reply.usage.output_tokens, 20);
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_use"));
    }

    #[test]
    fn tool_without_input_gets_empty_object_and_missing_stop_is_truncated() {
        let reply = assemble(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"todo_read","input":{}}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .unwrap();
        assert_eq!(reply.tool_calls[0].arguments, "{}");
        let err = assemble(&[r#"{"type":"message_start","message":{}}"#]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Truncated);
    }

    #[test]
    fn message_is_complete_at_stop_reason_with_usage_without_message_stop() {
        let mut assembler = Assembler::default();
        let mut ignore = |_: StreamUpdate<'_>| {};
        let events = [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":7,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#,
        ];
        let complete: Vec<bool> = events
            .iter()
            .map(|e| assembler.push(e, &mut ignore).unwrap())
            .collect();
        assert_eq!(complete, [false, false, false, false, true]);
        let reply = assembler.finish().unwrap();
        assert_eq!(reply.text, "Hi");
        assert_eq!(reply.usage.output_tokens, 3);
        assert_eq!(reply.finish_reason.as_deref(), Some("end_turn"));
        // A stream that closes after the stop reason (no usage, no
        // message_stop) still holds the whole message.
        let reply = assemble(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"ok"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
        ])
        .unwrap();
        assert_eq!(reply.text, "ok");
    }

    #[test]
    fn malformed_event_is_a_retryable_broken_stream() {
        let err = assemble(&[
            r#"{"type":"message_start","message":{}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_del"#,
        ])
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Truncated);
        assert!(err.kind.is_retryable());
        let err = assemble(&[r#"{"type":"content_block_delta","index":"x"}"#]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Protocol);
    }

    #[test]
    fn parses_a_non_streamed_message() {
        let body = serde_json::json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "todo_read", "input": {}},
                {"type": "tool_use", "id": "toolu_3", "name": "patch", "input": "{not json"}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 90,
                      "cache_creation_input_tokens": 5, "output_tokens": 20}
        });
        let reply = parse_message(&body).unwrap();
        assert_eq!(reply.text, "Let me look.");
        let args: Vec<_> = reply
            .tool_calls
            .iter()
            .map(|c| c.arguments.as_str())
            .collect();
        assert_eq!(args, [r#"{"path":"a"}"#, "{}", "{not json"]);
        assert_eq!(reply.tool_calls[0].id, "toolu_1");
        assert_eq!(reply.usage.input_tokens, 105);
        assert_eq!(reply.usage.cached_tokens, 90);
        assert_eq!(reply.usage.output_tokens, 20);
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_use"));
        assert!(parse_message(&serde_json::json!({"content": "text"})).is_err());
    }

    #[test]
    fn overload_error_event_is_retryable() {
        let err = assemble(&[
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ])
        .unwrap_err();
        assert!(err.kind.is_retryable());
    }

    #[test]
    fn body_groups_tool_results_and_marks_cache_breakpoints() {
        let tools = encode_tools(&[ToolSpec {
            name: "t".into(),
            description: "d".into(),
            parameters: serde_json::json!({"type":"object","properties":{}}),
        }]);
        let a = ToolCall {
            id: "a".into(),
            name: "t".into(),
            arguments: "{\"x\":1}".into(),
        };
        let b = ToolCall {
            id: "b".into(),
            name: "t".into(),
            arguments: "not json".into(),
        };
        let messages = vec![
            Message::user("hi"),
            Message::assistant("", vec![a.clone(), b.clone()]),
            Message::tool_result(&a, "one", false),
            Message::tool_result(&b, "two", true),
        ];
        let req = ChatRequest {
            system: "sys",
            messages: &messages,
            tools: &tools,
            forbid_tool_calls: true,
        };
        let body: serde_json::Value = serde_json::from_slice(
            &encode_body("claude", 1024, true, &ReasoningConfig::default(), &req).unwrap(),
        )
        .unwrap();
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["tool_choice"]["type"], "none");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"][0]["type"], "tool_use");
        assert_eq!(msgs[1]["content"][0]["input"]["x"], 1);
        assert_eq!(msgs[1]["content"][1]["input"], serde_json::json!({}));
        assert!(msgs[1]["content"][1].get("cache_control").is_none());
        let results = msgs[2]["content"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(results[1]["is_error"], true);
        assert_eq!(results[1]["cache_control"]["type"], "ephemeral");
        assert!(results[0].get("cache_control").is_none());
    }

    fn body(messages: &[Message], images: bool) -> String {
        let tools = encode_tools(&crate::types::golden_specs());
        let req = ChatRequest {
            system: "sys",
            messages,
            tools: &tools,
            forbid_tool_calls: false,
        };
        String::from_utf8(
            encode_body("claude", 1024, images, &ReasoningConfig::default(), &req).unwrap(),
        )
        .unwrap()
    }

    /// The bytes herald sends for this history (the tool schema's keys in
    /// the order it declares them), as it did before tool results could
    /// carry images: a history without images must keep them exactly.
    const GOLDEN: &str = r#"{"model":"claude","max_tokens":1024,"stream":true,"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],"tools":[{"name":"read_file","description":"Reads a file.","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi \"there\""}]},{"role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"call_a","name":"read_file","input":{"path":"a.txt"}},{"type":"tool_use","id":"call_b","name":"terminal","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_a","content":"line 1\nline 2"},{"type":"tool_result","tool_use_id":"call_b","content":"(no output)","is_error":true}]},{"role":"assistant","content":[{"type":"text","text":"(empty)"}]},{"role":"user","content":[{"type":"text","text":"thanks","cache_control":{"type":"ephemeral"}}]}]}"#;

    #[test]
    fn a_history_without_images_encodes_byte_for_byte_as_before() {
        let history = crate::types::golden_history();
        assert_eq!(body(&history, true), GOLDEN);
        assert_eq!(body(&history, false), GOLDEN);
    }

    #[test]
    fn tool_results_with_images_send_text_and_image_blocks() {
        let history = crate::types::image_history();
        let sent = body(&history[..5], true);
        let value: serde_json::Value = serde_json::from_str(&sent).unwrap();
        assert_eq!(
            value["messages"][2],
            serde_json::json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_a", "content": [
                    {"type": "text", "text": "[image: image/png, 3 bytes]"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}
                ]},
                {"type": "tool_result", "tool_use_id": "call_b", "content": "plain text"},
                // No text: no (refused) empty text block, only the images.
                {"type": "tool_result", "tool_use_id": "call_c", "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": "UklG"}}
                ], "cache_control": {"type": "ephemeral"}}
            ]})
        );
        assert!(sent.contains(r#"{"type":"tool_result","tool_use_id":"call_a","content":[{"type":"text","text":"[image: image/png, 3 bytes]"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"QUJD"}}]},"#));
        // The next request writes the same blocks (the breakpoint moves on).
        let next = body(&history, true);
        let next: serde_json::Value = serde_json::from_str(&next).unwrap();
        let mut expected = value["messages"][2].clone();
        expected["content"][2]
            .as_object_mut()
            .unwrap()
            .remove("cache_control");
        assert_eq!(next["messages"][2], expected);
    }

    #[test]
    fn a_users_images_come_before_their_text_and_only_for_image_models() {
        use herald_protocol::ImageData;
        let messages = vec![
            Message::user("what is in this picture?")
                .with_images(vec![ImageData::new("image/png", "QUJD")]),
        ];
        let sent: serde_json::Value = serde_json::from_str(&body(&messages, true)).unwrap();
        assert_eq!(
            sent["messages"][0],
            serde_json::json!({"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}},
                {"type": "text", "text": "what is in this picture?", "cache_control": {"type": "ephemeral"}}
            ]})
        );
        let sent: serde_json::Value = serde_json::from_str(&body(&messages, false)).unwrap();
        assert_eq!(
            sent["messages"][0],
            serde_json::json!({"role": "user", "content": [
                {"type": "text", "text": "what is in this picture?", "cache_control": {"type": "ephemeral"}}
            ]})
        );
    }

    #[test]
    fn without_images_only_the_text_of_the_results_is_sent() {
        let history = crate::types::image_history();
        let stripped: Vec<Message> = history
            .iter()
            .cloned()
            .map(|m| m.with_images(Vec::new()))
            .collect();
        let sent = body(&history, false);
        assert_eq!(sent, body(&stripped, true));
        assert!(!sent.contains(r#""type":"image""#));
        assert!(
            sent.contains(
                r#"{"type":"tool_result","tool_use_id":"call_c","content":"(no output)"}"#
            )
        );
    }

    #[test]
    fn thinking_blocks_are_assembled_and_sent_back_unchanged_first() {
        let reply = assemble(&[
            r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me \"think\""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" more."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB=="}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"opaque+/="}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":2}}"#,
        ])
        .unwrap();
        assert_eq!(
            reply.reasoning,
            vec![
                Reasoning::Thinking {
                    thinking: "Let me \"think\" more.".into(),
                    signature: "EqQB==".into(),
                },
                Reasoning::RedactedThinking {
                    data: "opaque+/=".into()
                },
            ]
        );
        let call = &reply.tool_calls[0];
        let mut reasoning = reply.reasoning.clone();
        reasoning.push(Reasoning::Text {
            text: "never sent".into(),
        });
        let history = vec![
            Message::user("go"),
            Message::assistant("", vec![call.clone()]).with_reasoning(reasoning),
            Message::tool_result(call, "out", false),
        ];
        let sent = body(&history, true);
        assert!(
            sent.contains(r#"{"role":"assistant","content":[{"type":"thinking","thinking":"Let me \"think\" more.","signature":"EqQB=="},{"type":"redacted_thinking","data":"opaque+/="},{"type":"tool_use","id":"toolu_1","#),
            "{sent}"
        );
        assert!(!sent.contains("never sent"), "{sent}");
        assert!(
            !sent.contains(r#""thinking":{"#),
            "off unless configured: {sent}"
        );
    }

    #[test]
    fn a_thinking_budget_is_sent_with_max_tokens_past_it() {
        let tools = encode_tools(&[]);
        let history = vec![Message::user("go")];
        let req = ChatRequest {
            system: "sys",
            messages: &history,
            tools: &tools,
            forbid_tool_calls: false,
        };
        let reasoning = ReasoningConfig {
            thinking_budget: Some(2048),
            effort: Some(crate::ReasoningEffort::High),
        };
        let max = reasoning.anthropic_max_tokens(None);
        let sent = encode_body("claude", max, true, &reasoning, &req).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&sent).unwrap();
        assert_eq!(
            value["thinking"],
            serde_json::json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(value["max_tokens"], 2048 + 8192);
        assert!(value.get("reasoning_effort").is_none());
    }

    #[test]
    fn a_whole_message_keeps_its_thinking() {
        let body = serde_json::json!({"content": [
            {"type": "thinking", "thinking": "hm", "signature": "s"},
            {"type": "text", "text": "ok"}], "stop_reason": "end_turn"});
        let reply = parse_message(&body).unwrap();
        assert_eq!(reply.text, "ok");
        assert_eq!(
            reply.reasoning,
            vec![Reasoning::Thinking {
                thinking: "hm".into(),
                signature: "s".into()
            }]
        );
    }
}
