use herald_protocol::{Message, ToolCall, Usage};

/// Tool schemas already encoded for one provider. Built once per session:
/// the tool list never changes, so neither do these bytes. Clones share
/// them, and a client hands agents with the same tools the same bytes (see
/// [`crate::LlmClient::encode_tools`]): 10,000 children hold one copy.
#[derive(Debug, Clone)]
pub struct EncodedTools {
    pub(crate) json: std::sync::Arc<str>,
    pub(crate) count: usize,
}

impl EncodedTools {
    /// The encoded JSON array (used by benchmarks to size the prompt).
    pub fn as_str(&self) -> &str {
        &self.json
    }

    /// True when no tools are offered.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Everything one model request needs, borrowed from the session.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a EncodedTools,
    /// Keep the tools in the request (so the prefix stays cached) but forbid
    /// calling them: used for the final summary at the iteration limit.
    pub forbid_tool_calls: bool,
}

/// The model's complete answer to one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantReply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// The provider's stop reason, as sent.
    pub finish_reason: Option<String>,
    /// What the model reasoned before answering (thinking blocks, streamed
    /// reasoning text), in order; kept with the assistant message.
    pub reasoning: Vec<herald_protocol::Reasoning>,
    /// The reply was still streaming when the request reached its
    /// wall-clock limit (`request_timeout_seconds`) and holds what had
    /// arrived by then: like a reply cut at the output cap, its last tool
    /// call may be incomplete. `finish_reason` is then `None` (the provider
    /// sent none) and `usage` is an estimate (see
    /// [`AssistantReply::estimate_output_tokens`]).
    pub timed_out: bool,
}

impl AssistantReply {
    /// Whether the reply stopped at the output cap (`max_tokens`) rather
    /// than where the model ended it: OpenAI's `finish_reason: "length"`,
    /// Anthropic's `stop_reason: "max_tokens"`. Its last tool call may be
    /// incomplete.
    pub fn reached_output_cap(&self) -> bool {
        matches!(self.finish_reason.as_deref(), Some("length" | "max_tokens"))
    }

    /// Whether the reply was cut short, at the output cap or at the
    /// request's time limit: its last tool call must not run.
    pub fn is_cut(&self) -> bool {
        self.timed_out || self.reached_output_cap()
    }

    /// Fills in the output tokens of a reply cut at the time limit, whose
    /// final usage never arrived: about four bytes of text, reasoning and
    /// call arguments per token, so a runaway reply is not recorded as free.
    pub(crate) fn estimate_output_tokens(&mut self) {
        if self.usage.output_tokens > 0 {
            return;
        }
        let reasoning: usize = self
            .reasoning
            .iter()
            .map(|r| match r {
                herald_protocol::Reasoning::Text { text } => text.len(),
                herald_protocol::Reasoning::Thinking { thinking, .. } => thinking.len(),
                herald_protocol::Reasoning::RedactedThinking { data } => data.len(),
            })
            .sum();
        let calls: usize = self
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum();
        let bytes = self.text.len() + reasoning + calls;
        self.usage.output_tokens = u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX);
    }
}

/// Progress reported while a request is in flight.
#[derive(Debug, Clone, Copy)]
pub enum StreamUpdate<'a> {
    /// A piece of assistant text as it streams in. After a retry, text the
    /// caller already received is not sent again: the deltas of one request
    /// always concatenate to its reply's text (see [`TextRestart`](Self::TextRestart)).
    TextDelta(&'a str),
    /// The text streamed so far for this request is void: a retried request
    /// answered differently from the text sent before the failure, or
    /// shorter. The reply's text follows again from its start.
    TextRestart,
    /// A piece of the model's reasoning as it streams in (thinking text,
    /// `reasoning_content`). Shown only: a retried request may repeat it.
    ReasoningDelta(&'a str),
    /// A transient failure; the request is retried after `delay_ms`.
    Retry {
        attempt: u32,
        delay_ms: u64,
        reason: &'a str,
    },
    /// The endpoint answered 429 and its governor now allows fewer requests
    /// in flight (for the whole process), pausing new ones for `pause_ms`.
    Throttled {
        endpoint: &'a str,
        limit: usize,
        in_flight: usize,
        pause_ms: u64,
    },
    /// The provider in use failed (after its retries) in a way another may
    /// not, and the request moves to the next `[[fallback]]` entry; or the
    /// cooldown is over and the primary is tried again.
    Fallback {
        from_provider: &'a str,
        from_model: &'a str,
        to_provider: &'a str,
        to_model: &'a str,
        reason: &'a str,
    },
}

/// A history exercising every message shape without images: the golden
/// encodings of both providers are written from it.
#[cfg(test)]
pub(crate) fn golden_history() -> Vec<Message> {
    let a = ToolCall {
        id: "call_a".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"a.txt"}"#.into(),
    };
    let b = ToolCall {
        id: "call_b".into(),
        name: "terminal".into(),
        arguments: "not json".into(),
    };
    vec![
        Message::user("hi \"there\""),
        Message::assistant("Let me look.", vec![a.clone(), b.clone()]),
        Message::tool_result(&a, "line 1\nline 2", false),
        Message::tool_result(&b, "", true),
        Message::assistant("", vec![]),
        Message::user("thanks"),
    ]
}

/// A turn whose two tool results carry images (one and two), followed by
/// the model's answer and the next user message.
#[cfg(test)]
pub(crate) fn image_history() -> Vec<Message> {
    use herald_protocol::ImageData;
    let a = ToolCall {
        id: "call_a".into(),
        name: "screenshot".into(),
        arguments: "{}".into(),
    };
    let b = ToolCall {
        id: "call_b".into(),
        name: "read_file".into(),
        arguments: "{}".into(),
    };
    let c = ToolCall {
        id: "call_c".into(),
        name: "charts".into(),
        arguments: "{}".into(),
    };
    vec![
        Message::user("look"),
        Message::assistant("", vec![a.clone(), b.clone(), c.clone()]),
        Message::tool_result(&a, "[image: image/png, 3 bytes]", false)
            .with_images(vec![ImageData::new("image/png", "QUJD")]),
        Message::tool_result(&b, "plain text", false),
        Message::tool_result(&c, "", false).with_images(vec![
            ImageData::new("image/jpeg", "/9j/"),
            ImageData::new("image/webp", "UklG"),
        ]),
        Message::assistant("I see a chart.", vec![]),
        Message::user("and now?"),
    ]
}

/// The tool list of the golden encodings.
#[cfg(test)]
pub(crate) fn golden_specs() -> Vec<herald_protocol::ToolSpec> {
    vec![herald_protocol::ToolSpec {
        name: "read_file".into(),
        description: "Reads a file.".into(),
        parameters: serde_json::json!({"type":"object","properties":{"path":{"type":"string"}}}),
    }]
}
