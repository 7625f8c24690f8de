//! OpenAI-compatible Chat Completions: request encoding and stream assembly.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;

use herald_protocol::{DataUrl, Message, Reasoning, Role, ToolCall, ToolSpec, Usage};
use serde::{Deserialize, Serialize};

use crate::{
    AssistantReply, ChatRequest, EncodedTools, ErrorKind, LlmError, ReasoningConfig, StreamUpdate,
};

/// Encodes tool specs as `[{"type":"function","function":{...}}]`.
pub(crate) fn encode_tools(specs: &[ToolSpec]) -> EncodedTools {
    #[derive(Serialize)]
    struct Function<'a> {
        name: &'a str,
        description: &'a str,
        parameters: &'a serde_json::Value,
    }
    #[derive(Serialize)]
    struct Tool<'a> {
        r#type: &'static str,
        function: Function<'a>,
    }
    let tools: Vec<Tool<'_>> = specs
        .iter()
        .map(|s| Tool {
            r#type: "function",
            function: Function {
                name: &s.name,
                description: &s.description,
                parameters: &s.parameters,
            },
        })
        .collect();
    EncodedTools {
        json: serde_json::to_string(&tools)
            .unwrap_or_else(|_| "[]".to_owned())
            .into(),
        count: specs.len(),
    }
}

/// A Chat Completions message as sent, borrowing the stored one.
#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// `null` for an assistant message that only calls tools.
    content: Option<WireContent<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

/// A message's `content`: its text, or (a user message with images, sent
/// to a model that takes them) the text part and then the images.
#[derive(Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(&'a str),
    Parts(Vec<ImagePart<'a>>),
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

impl<'a> WireMessage<'a> {
    fn of(message: &'a Message, images: bool) -> Self {
        let calls_only = message.role == Role::Assistant
            && message.content.is_empty()
            && !message.tool_calls.is_empty();
        let content = if message.role == Role::User && images && !message.images.is_empty() {
            let mut parts = Vec::with_capacity(1 + message.images.len());
            if !message.content.is_empty() {
                parts.push(ImagePart::Text {
                    text: Cow::Borrowed(&message.content),
                });
            }
            parts.extend(message.images.iter().map(|image| ImagePart::ImageUrl {
                image_url: ImageUrl {
                    url: image.data_url(),
                },
            }));
            Some(WireContent::Parts(parts))
        } else {
            (!calls_only).then_some(WireContent::Text(message.content.as_str()))
        };
        Self {
            role: role_name(message.role),
            content,
            tool_calls: message
                .tool_calls
                .iter()
                .map(|call| WireCall {
                    id: &call.id,
                    r#type: "function",
                    function: WireFunction {
                        name: &call.name,
                        arguments: &call.arguments,
                    },
                })
                .collect(),
            tool_call_id: message.tool_call_id.as_deref(),
        }
    }
}

/// The wire name of a role.
fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// One content part of a user message with images: the person's own, or
/// the one that carries tool images.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ImagePart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl<'a> },
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: DataUrl<'a>,
}

#[derive(Serialize)]
struct ImageMessage<'a> {
    role: &'static str,
    content: Vec<ImagePart<'a>>,
}

/// The `user` message that shows the images of a run of tool results
/// (Chat Completions refuses images in `tool` messages): for each result
/// with images, a text part naming its call, then its images as `data:`
/// URLs. `None` when no result of the run has images.
fn image_message(results: &[Message]) -> Option<ImageMessage<'_>> {
    let with_images = results.iter().filter(|m| !m.images.is_empty());
    let mut content = Vec::new();
    for result in with_images {
        let call = result.tool_call_id.as_deref().unwrap_or_default();
        let text = match (result.tool_name.as_deref(), result.images.len()) {
            (Some(name), 1) => format!("The result of tool call {call} ({name}) has this image:"),
            (Some(name), n) => {
                format!("The result of tool call {call} ({name}) has these {n} images:")
            }
            (None, 1) => format!("The result of tool call {call} has this image:"),
            (None, n) => format!("The result of tool call {call} has these {n} images:"),
        };
        content.push(ImagePart::Text {
            text: Cow::Owned(text),
        });
        content.extend(result.images.iter().map(|image| ImagePart::ImageUrl {
            image_url: ImageUrl {
                url: image.data_url(),
            },
        }));
    }
    (!content.is_empty()).then_some(ImageMessage {
        role: "user",
        content,
    })
}

/// How the Chat Completions API writes a request body (see [`crate::body`]).
/// Field order is fixed so two requests of one conversation share their
/// bytes up to the first new message.
///
/// With `images`, the images of tool results follow each run of `tool`
/// messages (the results of one assistant reply) as one `user` message
/// (see [`image_message`]); the history decides where, so every request
/// of a conversation writes it at the same place with the same bytes.
/// The output cap sent when `max_tokens` is not configured: a reply is
/// never unbounded (a small local model can otherwise generate for
/// minutes). Reasoning models count their hidden reasoning in it too.
pub const DEFAULT_OUTPUT_CAP: u32 = 8_192;
/// [`DEFAULT_OUTPUT_CAP`] for a request with `reasoning_effort`.
pub const DEFAULT_REASONING_OUTPUT_CAP: u32 = 32_768;

/// The cap a request carries: `max_tokens` as configured, else the default.
pub(crate) fn output_cap(max_tokens: Option<u32>, reasoning: &ReasoningConfig) -> u32 {
    max_tokens.unwrap_or(if reasoning.effort.is_some() {
        DEFAULT_REASONING_OUTPUT_CAP
    } else {
        DEFAULT_OUTPUT_CAP
    })
}

pub(crate) struct Wire<'a> {
    pub model: &'a str,
    pub max_tokens: Option<u32>,
    pub images: bool,
    pub reasoning: &'a ReasoningConfig,
}

impl crate::body::Wire for Wire<'_> {
    fn head(&self, req: &ChatRequest<'_>, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        out.extend_from_slice(b"{\"model\":");
        serde_json::to_writer(&mut *out, self.model)?;
        out.extend_from_slice(b",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
        // Reasoning models refuse `max_tokens`: their cap counts the hidden
        // reasoning too and is called `max_completion_tokens`.
        let max = output_cap(self.max_tokens, self.reasoning);
        match self.reasoning.effort {
            Some(_) => {
                let _ = write!(out, ",\"max_completion_tokens\":{max}");
            }
            None => {
                let _ = write!(out, ",\"max_tokens\":{max}");
            }
        }
        if let Some(effort) = self.reasoning.effort {
            let _ = write!(out, ",\"reasoning_effort\":\"{}\"", effort.as_str());
        }
        if !req.tools.is_empty() {
            out.extend_from_slice(b",\"tools\":");
            out.extend_from_slice(req.tools.json.as_bytes());
            if req.forbid_tool_calls {
                out.extend_from_slice(b",\"tool_choice\":\"none\"");
            }
        }
        out.extend_from_slice(b",\"messages\":[");
        let system = WireMessage {
            role: "system",
            content: Some(WireContent::Text(req.system)),
            tool_calls: Vec::new(),
            tool_call_id: None,
        };
        serde_json::to_writer(&mut *out, &system)
    }

    fn segment_end(&self, _messages: &[Message], start: usize) -> usize {
        start + 1
    }

    fn boundary_flag(&self, messages: &[Message], end: usize) -> bool {
        self.images && run_ends_before(messages, end)
    }

    fn segment(
        &self,
        messages: &[Message],
        start: usize,
        _end: usize,
        _last: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        out.push(b',');
        serde_json::to_writer(&mut *out, &WireMessage::of(&messages[start], self.images))?;
        if self.images && run_ends_before(messages, start + 1) {
            let run_start = messages[..start]
                .iter()
                .rposition(|m| m.role != Role::Tool)
                .map_or(0, |i| i + 1);
            if let Some(shown) = image_message(&messages[run_start..=start]) {
                out.push(b',');
                serde_json::to_writer(&mut *out, &shown)?;
            }
        }
        Ok(())
    }

    fn last_is_plain(&self) -> bool {
        true
    }
}

/// Whether a run of tool results ends right before `end`.
fn run_ends_before(messages: &[Message], end: usize) -> bool {
    end > 0
        && messages[end - 1].role == Role::Tool
        && messages.get(end).is_none_or(|m| m.role != Role::Tool)
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// Reasoning text of DeepSeek, vLLM and similar servers (some call it
    /// `reasoning`).
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Builds one reply out of streamed chunks: text deltas in order, tool calls
/// assembled by `index` (id and name arrive once, arguments in fragments).
#[derive(Default)]
pub(crate) struct Assembler {
    text: String,
    reasoning: String,
    calls: BTreeMap<usize, PartialCall>,
    usage: Usage,
    finish_reason: Option<String>,
    done: bool,
}

impl Assembler {
    /// Feeds one `data:` payload. Returns true once the stream is complete.
    pub(crate) fn push(
        &mut self,
        data: &str,
        on_update: &mut (dyn FnMut(StreamUpdate<'_>) + Send),
    ) -> Result<bool, LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|err| chunk_error(&err, data))?;
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(serde_json::Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(LlmError::new(
                ErrorKind::Server,
                format!("the provider reported an error mid-stream: {message}"),
            ));
        }
        let has_usage = chunk.usage.is_some();
        if let Some(usage) = chunk.usage {
            self.usage = usage.into_usage();
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.reasoning_content.filter(|t| !t.is_empty()) {
                    on_update(StreamUpdate::ReasoningDelta(&text));
                    self.reasoning.push_str(&text);
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    on_update(StreamUpdate::TextDelta(&text));
                    self.text.push_str(&text);
                }
                for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                    let slot = self
                        .calls
                        .entry(call.index.unwrap_or(position))
                        .or_default();
                    if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                        slot.id = id;
                    }
                    if let Some(function) = call.function {
                        if let Some(name) = function.name.filter(|n| !n.is_empty())
                            && slot.name.is_empty()
                        {
                            slot.name = name;
                        }
                        if let Some(arguments) = function.arguments {
                            slot.arguments.push_str(&arguments);
                        }
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        // Usage sent with or after the finish reason is the last thing a
        // reply holds: it is complete even if `[DONE]` never comes. (Usage
        // seen before the finish reason may be a running count, so it does
        // not end the reply.)
        Ok(has_usage && self.finish_reason.is_some())
    }

    /// True once the model's finish reason arrived: the reply's content is
    /// complete even if its usage or `[DONE]` never comes.
    pub(crate) fn has_finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The finished reply. A stream that stopped before `[DONE]` and before
    /// any `finish_reason` is truncated.
    pub(crate) fn finish(self) -> Result<AssistantReply, LlmError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(LlmError::new(
                ErrorKind::Truncated,
                "the stream ended before the reply was complete",
            ));
        }
        Ok(self.into_reply())
    }

    /// What has arrived so far, for a reply cut at the request's time limit
    /// (its last call's arguments may be incomplete).
    pub(crate) fn cut_short(self) -> AssistantReply {
        self.into_reply()
    }

    fn into_reply(self) -> AssistantReply {
        let tool_calls = self
            .calls
            .into_values()
            .enumerate()
            .filter(|(_, call)| !call.name.is_empty())
            .map(|(i, call)| ToolCall {
                id: if call.id.is_empty() {
                    format!("call_{i}")
                } else {
                    call.id
                },
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        let reasoning = if self.reasoning.is_empty() {
            Vec::new()
        } else {
            vec![Reasoning::Text {
                text: self.reasoning,
            }]
        };
        AssistantReply {
            text: self.text,
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish_reason,
            reasoning,
            timed_out: false,
        }
    }
}

impl WireUsage {
    fn into_usage(self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            cached_tokens: self
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_creation_tokens: 0,
        }
    }
}

/// A stream chunk that could not be read. Text that is not JSON at all (cut,
/// garbled or interleaved in transit) is a broken stream and is retried like
/// a truncated one; well-formed JSON of the wrong shape means the server
/// speaks another dialect, which a retry would not change.
fn chunk_error(err: &serde_json::Error, data: &str) -> LlmError {
    match err.classify() {
        serde_json::error::Category::Data => LlmError::new(
            ErrorKind::Protocol,
            format!(
                "the provider sent a stream chunk that is not a Chat Completions chunk ({err}): {}",
                preview(data)
            ),
        ),
        _ => LlmError::new(
            ErrorKind::Truncated,
            format!(
                "the stream broke: a chunk is not valid JSON ({err}): {}",
                preview(data)
            ),
        ),
    }
}

fn preview(data: &str) -> String {
    data.chars().take(200).collect()
}

/// A non-streamed `chat.completion` (a server that ignored `stream: true`).
#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    choices: Vec<CompletionChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct CompletionChoice {
    #[serde(default)]
    message: Option<CompletionMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct CompletionMessage {
    /// A string, null, or (some servers) a list of `{"type":"text","text"}` parts.
    #[serde(default)]
    content: serde_json::Value,
    #[serde(default)]
    tool_calls: Vec<CompletionCall>,
}

#[derive(Deserialize)]
struct CompletionCall {
    #[serde(default)]
    id: String,
    function: CompletionFunction,
}

#[derive(Deserialize)]
struct CompletionFunction {
    #[serde(default)]
    name: String,
    /// A JSON string as the API specifies; some servers send the object.
    #[serde(default)]
    arguments: serde_json::Value,
}

/// The text of a message `content`: a string, or the text parts of a list.
fn content_text(content: &serde_json::Value) -> String {
    match content {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(serde_json::Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Reads a whole non-streamed answer into the reply a stream would have
/// produced. The error says what is wrong with the answer; the caller adds
/// where it came from.
pub(crate) fn parse_completion(body: &serde_json::Value) -> Result<AssistantReply, String> {
    let completion = Completion::deserialize(body)
        .map_err(|err| format!("it is not a Chat Completions answer ({err})"))?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err("the answer holds no choices".to_owned());
    };
    let message = choice
        .message
        .ok_or_else(|| "the answer's choice holds no message".to_owned())?;
    let tool_calls = message
        .tool_calls
        .into_iter()
        .filter(|call| !call.function.name.is_empty())
        .enumerate()
        .map(|(i, call)| ToolCall {
            id: if call.id.is_empty() {
                format!("call_{i}")
            } else {
                call.id
            },
            name: call.function.name,
            arguments: match call.function.arguments {
                serde_json::Value::String(text) => text,
                serde_json::Value::Null => "{}".to_owned(),
                other => other.to_string(),
            },
        })
        .collect();
    Ok(AssistantReply {
        text: content_text(&message.content),
        tool_calls,
        usage: completion
            .usage
            .map(WireUsage::into_usage)
            .unwrap_or_default(),
        finish_reason: choice.finish_reason,
        reasoning: Vec::new(),
        timed_out: false,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn encode_body(
        model: &str,
        max_tokens: Option<u32>,
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

    fn assemble(chunks: &[&str]) -> Result<(AssistantReply, String), LlmError> {
        let mut assembler = Assembler::default();
        let mut streamed = String::new();
        let mut on_update = |u: StreamUpdate<'_>| {
            if let StreamUpdate::TextDelta(t) = u {
                streamed.push_str(t);
            }
        };
        for chunk in chunks {
            if assembler.push(chunk, &mut on_update)? {
                break;
            }
        }
        Ok((assembler.finish()?, streamed))
    }

    #[test]
    fn assembles_text_and_usage() {
        let (reply, streamed) = assemble(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":64}}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(reply.text, "Hello");
        assert_eq!(streamed, "Hello");
        assert_eq!(reply.usage.input_tokens, 100);
        assert_eq!(reply.usage.output_tokens, 5);
        assert_eq!(reply.usage.cached_tokens, 64);
        assert!(reply.tool_calls.is_empty());
    }

    #[test]
    fn assembles_fragmented_parallel_tool_calls_by_index() {
        let (reply, _) = assemble(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"search_files","arguments":"{\"pat"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"x\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.txt\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(reply.tool_calls.len(), 2);
        assert_eq!(reply.tool_calls[0].id, "a");
        assert_eq!(reply.tool_calls[0].name, "read_file");
        assert_eq!(reply.tool_calls[0].arguments, r#"{"path":"a.txt"}"#);
        assert_eq!(reply.tool_calls[1].name, "search_files");
        assert_eq!(reply.tool_calls[1].arguments, r#"{"pattern":"x"}"#);
    }

    #[test]
    fn tolerates_real_server_quirks() {
        // Empty content on tool deltas, finish_reason "stop" with tool calls,
        // a usage chunk whose choices hold an empty delta, keys out of order
        // and padding spaces around the payload.
        let (reply, _) = assemble(&[
            r#"   {"choices":[{"delta":{"content":"","tool_calls":[{"function":{"arguments":"","name":"terminal"},"id":"c1","index":0,"type":"function"}]}}]}"#,
            r#"{"choices":[{"delta":{"content":"","tool_calls":[{"index":0,"function":{"arguments":"{\"command\":\"ls\"}"}}]}}]}"#,
            r#"{"choices":[{"finish_reason":"stop","delta":{"content":""}}]}"#,
            r#"{"usage":{"completion_tokens":7,"prompt_tokens":50},"choices":[{"index":0,"delta":{}}]}"#,
            "  [DONE]  ",
        ])
        .unwrap();
        assert_eq!(reply.text, "");
        assert_eq!(reply.tool_calls.len(), 1);
        assert_eq!(reply.tool_calls[0].name, "terminal");
        assert_eq!(reply.tool_calls[0].arguments, r#"{"command":"ls"}"#);
        assert_eq!(reply.usage.output_tokens, 7);
        assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn missing_index_uses_position_and_missing_id_is_generated() {
        let (reply, _) = assemble(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"a","arguments":"{}"}},{"function":{"name":"b","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        let ids: Vec<_> = reply.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_0", "call_1"]);
    }

    #[test]
    fn stream_without_finish_is_truncated() {
        let err = assemble(&[r#"{"choices":[{"delta":{"content":"Hel"}}]}"#]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Truncated);
    }

    #[test]
    fn malformed_chunk_is_a_retryable_broken_stream_and_error_chunk_is_reported() {
        // Mid-stream, after text was received: the stream is broken, like a
        // truncated one, and is retried.
        let err = assemble(&[
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lo"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        ])
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Truncated);
        assert!(err.kind.is_retryable());
        assert!(err.message.contains("not valid JSON"), "{}", err.message);
        assert_eq!(
            assemble(&["{not json"]).unwrap_err().kind,
            ErrorKind::Truncated
        );
        // Valid JSON of another shape is a dialect mismatch: not retried.
        let err = assemble(&[r#"{"choices":"none"}"#]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Protocol);
        assert!(!err.kind.is_retryable());
        let err = assemble(&[r#"{"error":{"message":"overloaded"}}"#]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Server);
        assert!(err.message.contains("overloaded"));
    }

    #[test]
    fn reply_is_complete_at_usage_after_finish_without_done() {
        let mut assembler = Assembler::default();
        let mut ignore = |_: StreamUpdate<'_>| {};
        let chunks = [
            r#"{"choices":[{"delta":{"content":"Hi"}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}"#,
        ];
        let complete: Vec<bool> = chunks
            .iter()
            .map(|c| assembler.push(c, &mut ignore).unwrap())
            .collect();
        assert_eq!(complete, [false, false, true]);
        let reply = assembler.finish().unwrap();
        assert_eq!(reply.text, "Hi");
        assert_eq!(reply.usage.input_tokens, 9);
        assert_eq!(reply.finish_reason.as_deref(), Some("stop"));

        // Usage in the same chunk as the finish reason completes it too.
        let mut assembler = Assembler::default();
        assert!(
            assembler
                .push(
                    r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
                    &mut ignore,
                )
                .unwrap()
        );

        // A running usage count before the finish reason does not.
        let mut assembler = Assembler::default();
        assert!(
            !assembler
                .push(
                    r#"{"choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
                    &mut ignore,
                )
                .unwrap()
        );
        assert!(!assembler.has_finished());
    }

    #[test]
    fn parses_a_non_streamed_completion() {
        let body = serde_json::json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Looking.",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
                    {"type": "function", "function": {"name": "terminal", "arguments": {"command": "ls"}}}
                ]}}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 8, "prompt_tokens_details": {"cached_tokens": 16}}
        });
        let reply = parse_completion(&body).unwrap();
        assert_eq!(reply.text, "Looking.");
        assert_eq!(reply.tool_calls.len(), 2);
        assert_eq!(reply.tool_calls[0].id, "c1");
        assert_eq!(reply.tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(reply.tool_calls[1].id, "call_1");
        assert_eq!(reply.tool_calls[1].arguments, r#"{"command":"ls"}"#);
        assert_eq!(reply.usage.input_tokens, 30);
        assert_eq!(reply.usage.output_tokens, 8);
        assert_eq!(reply.usage.cached_tokens, 16);
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));

        let parts = serde_json::json!({"choices": [{"finish_reason": "stop", "message": {
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]});
        assert_eq!(parse_completion(&parts).unwrap().text, "ab");
        assert!(parse_completion(&serde_json::json!({"choices": []})).is_err());
        assert!(parse_completion(&serde_json::json!({"choices": 3})).is_err());
    }

    #[test]
    fn body_keeps_messages_prefix_stable() {
        let tools = encode_tools(&[ToolSpec {
            name: "t".into(),
            description: "d".into(),
            parameters: serde_json::json!({"type":"object","properties":{}}),
        }]);
        let mut messages = vec![Message::user("hi")];
        let req = ChatRequest {
            system: "sys",
            messages: &messages,
            tools: &tools,
            forbid_tool_calls: false,
        };
        let first = encode_body("m", None, true, &ReasoningConfig::default(), &req).unwrap();
        let call = ToolCall {
            id: "c".into(),
            name: "t".into(),
            arguments: "{}".into(),
        };
        messages.push(Message::assistant("", vec![call.clone()]));
        messages.push(Message::tool_result(&call, "out", false));
        let req = ChatRequest {
            system: "sys",
            messages: &messages,
            tools: &tools,
            forbid_tool_calls: false,
        };
        let second = encode_body("m", None, true, &ReasoningConfig::default(), &req).unwrap();
        // Everything but the closing "]}" of the first body is a prefix of the second.
        assert!(second.starts_with(&first[..first.len() - 2]));
        let value: serde_json::Value = serde_json::from_slice(&second).unwrap();
        assert_eq!(value["messages"][0]["role"], "system");
        assert_eq!(value["messages"][2]["content"], serde_json::Value::Null);
        assert_eq!(
            value["messages"][2]["tool_calls"][0]["function"]["name"],
            "t"
        );
        assert_eq!(value["messages"][3]["tool_call_id"], "c");
        assert_eq!(value["stream_options"]["include_usage"], true);
        assert!(value.get("tool_choice").is_none());
    }

    #[test]
    fn a_users_images_follow_their_text_as_data_urls_and_only_for_image_models() {
        use herald_protocol::ImageData;
        let messages = vec![
            Message::user("what is in this picture?")
                .with_images(vec![ImageData::new("image/png", "QUJD")]),
        ];
        let sent: serde_json::Value = serde_json::from_str(&body(&messages, true)).unwrap();
        assert_eq!(
            sent["messages"][1],
            serde_json::json!({"role": "user", "content": [
                {"type": "text", "text": "what is in this picture?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
            ]})
        );
        // A text-only model gets the text alone, as a plain string.
        let sent: serde_json::Value = serde_json::from_str(&body(&messages, false)).unwrap();
        assert_eq!(
            sent["messages"][1],
            serde_json::json!({"role": "user", "content": "what is in this picture?"})
        );
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
            encode_body("m", Some(100), images, &ReasoningConfig::default(), &req).unwrap(),
        )
        .unwrap()
    }

    /// The bytes herald sends for this history (the tool schema's keys in
    /// the order it declares them), as it did before tool results could
    /// carry images: a history without images must keep them exactly (the
    /// provider's prompt cache of stored sessions depends on it).
    const GOLDEN: &str = r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":100,"tools":[{"type":"function","function":{"name":"read_file","description":"Reads a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}],"messages":[{"role":"system","content":"sys"},{"role":"user","content":"hi \"there\""},{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}},{"id":"call_b","type":"function","function":{"name":"terminal","arguments":"not json"}}]},{"role":"tool","content":"line 1\nline 2","tool_call_id":"call_a"},{"role":"tool","content":"","tool_call_id":"call_b"},{"role":"assistant","content":""},{"role":"user","content":"thanks"}]}"#;

    #[test]
    fn a_history_without_images_encodes_byte_for_byte_as_before() {
        let history = crate::types::golden_history();
        assert_eq!(body(&history, true), GOLDEN);
        assert_eq!(body(&history, false), GOLDEN);
    }

    #[test]
    fn tool_images_follow_the_run_of_results_as_one_user_message() {
        let history = crate::types::image_history();
        let sent = body(&history, true);
        let value: serde_json::Value = serde_json::from_str(&sent).unwrap();
        assert_eq!(
            value["messages"],
            serde_json::json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "look"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}},
                    {"id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
                    {"id": "call_c", "type": "function", "function": {"name": "charts", "arguments": "{}"}}
                ]},
                {"role": "tool", "content": "[image: image/png, 3 bytes]", "tool_call_id": "call_a"},
                {"role": "tool", "content": "plain text", "tool_call_id": "call_b"},
                {"role": "tool", "content": "", "tool_call_id": "call_c"},
                {"role": "user", "content": [
                    {"type": "text", "text": "The result of tool call call_a (screenshot) has this image:"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
                    {"type": "text", "text": "The result of tool call call_c (charts) has these 2 images:"},
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}},
                    {"type": "image_url", "image_url": {"url": "data:image/webp;base64,UklG"}}
                ]},
                {"role": "assistant", "content": "I see a chart."},
                {"role": "user", "content": "and now?"}
            ])
        );
        // The exact bytes of the image message, fields in this order.
        assert!(sent.contains(r#"{"role":"tool","content":"","tool_call_id":"call_c"},{"role":"user","content":[{"type":"text","text":"The result of tool call call_a (screenshot) has this image:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,QUJD"}},"#));
    }

    #[test]
    fn the_image_message_is_written_alike_by_every_later_request() {
        let history = crate::types::image_history();
        // The request right after the tools ran ends with the image message;
        // the next one (after the model's answer) starts with the same bytes.
        let first = body(&history[..5], true);
        let second = body(&history, true);
        assert!(first.ends_with(r#""url":"data:image/webp;base64,UklG"}}]}]}"#));
        assert!(second.starts_with(&first[..first.len() - 2]));
        assert_eq!(body(&history, true), second);
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
        assert!(!sent.contains("image_url"));
        assert!(sent.contains(r#""content":"[image: image/png, 3 bytes]""#));
    }

    #[test]
    fn reasoning_effort_goes_with_max_completion_tokens() {
        let tools = encode_tools(&[]);
        let history = vec![Message::user("go")];
        let req = ChatRequest {
            system: "sys",
            messages: &history,
            tools: &tools,
            forbid_tool_calls: false,
        };
        let reasoning = ReasoningConfig {
            effort: Some(crate::ReasoningEffort::Low),
            thinking_budget: Some(4096),
        };
        let sent = encode_body("o3", Some(500), true, &reasoning, &req).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&sent).unwrap();
        assert_eq!(value["reasoning_effort"], "low");
        assert_eq!(value["max_completion_tokens"], 500);
        assert!(value.get("max_tokens").is_none());
        assert!(value.get("thinking").is_none());
        let plain = encode_body("m", Some(500), true, &ReasoningConfig::default(), &req).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&plain).unwrap();
        assert_eq!(value["max_tokens"], 500);
        assert!(value.get("reasoning_effort").is_none());
        assert!(value.get("max_completion_tokens").is_none());
    }

    #[test]
    fn a_request_without_a_configured_cap_carries_the_default_one() {
        let tools = encode_tools(&[]);
        let history = vec![Message::user("go")];
        let req = ChatRequest {
            system: "sys",
            messages: &history,
            tools: &tools,
            forbid_tool_calls: false,
        };
        let plain = encode_body("m", None, true, &ReasoningConfig::default(), &req).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&plain).unwrap();
        assert_eq!(value["max_tokens"], DEFAULT_OUTPUT_CAP);
        let reasoning = ReasoningConfig {
            effort: Some(crate::ReasoningEffort::High),
            thinking_budget: None,
        };
        let reasoned = encode_body("o3", None, true, &reasoning, &req).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&reasoned).unwrap();
        assert_eq!(value["max_completion_tokens"], DEFAULT_REASONING_OUTPUT_CAP);
        assert!(value.get("max_tokens").is_none());
    }

    #[test]
    fn reasoning_content_is_kept_and_streamed_but_never_sent_back() {
        let mut assembler = Assembler::default();
        let mut seen = Vec::new();
        let mut on_update = |u: StreamUpdate<'_>| {
            if let StreamUpdate::ReasoningDelta(t) = u {
                seen.push(t.to_owned());
            }
        };
        for chunk in [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"First, "}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"think."}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Answer"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ] {
            assembler.push(chunk, &mut on_update).unwrap();
        }
        let reply = assembler.finish().unwrap();
        assert_eq!(seen, ["First, ", "think."]);
        assert_eq!(reply.text, "Answer");
        assert_eq!(
            reply.reasoning,
            vec![Reasoning::Text {
                text: "First, think.".into()
            }]
        );
        let history = vec![
            Message::user("go"),
            Message::assistant(reply.text.clone(), vec![]).with_reasoning(reply.reasoning),
            Message::user("next"),
        ];
        let sent = body(&history, true);
        assert!(!sent.contains("think."), "{sent}");
        assert!(!sent.contains("reasoning"), "{sent}");
    }
}
