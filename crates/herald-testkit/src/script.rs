//! What the scripted server answers: per-conversation reply lists and an
//! optional fallback responder.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::normalize::RequestView;

/// One tool call the scripted model makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedCall {
    /// Tool name.
    pub name: String,
    /// Raw JSON argument text, streamed as-is (it may be deliberately invalid).
    pub arguments: String,
}

impl ScriptedCall {
    /// A call whose arguments are the JSON serialization of `arguments`.
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        ScriptedCall {
            name: name.into(),
            arguments: arguments.to_string(),
        }
    }

    /// A call with raw argument text (use this for invalid JSON).
    pub fn raw(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        ScriptedCall {
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// One piece of scripted reasoning before a reply's text and calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptedThinking {
    /// Anthropic: a `thinking` block (thinking deltas, then a
    /// `signature_delta`). OpenAI: `reasoning_content` deltas of `text`
    /// (the signature is not sent).
    Thinking {
        /// The reasoning text.
        text: String,
        /// The block's signature (Anthropic only).
        signature: String,
    },
    /// Anthropic: a `redacted_thinking` block carrying `data`. OpenAI:
    /// nothing.
    Redacted {
        /// The opaque payload.
        data: String,
    },
}

impl ScriptedThinking {
    /// A thinking block with its signature.
    pub fn thinking(text: impl Into<String>, signature: impl Into<String>) -> Self {
        ScriptedThinking::Thinking {
            text: text.into(),
            signature: signature.into(),
        }
    }

    /// A redacted thinking block.
    pub fn redacted(data: impl Into<String>) -> Self {
        ScriptedThinking::Redacted { data: data.into() }
    }
}

/// One scripted model reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A final text answer (no tool calls).
    Text(String),
    /// Optional text followed by one or more tool calls.
    ToolCalls {
        /// Text streamed before the calls (may be empty).
        text: String,
        /// The calls, in order.
        calls: Vec<ScriptedCall>,
    },
    /// `reply` preceded by reasoning (see [`Reply::with_thinking`]).
    Reasoned {
        /// The reasoning, streamed first, in order.
        thinking: Vec<ScriptedThinking>,
        /// The text and calls that follow.
        reply: Box<Reply>,
    },
    /// `0`, ended by the output cap (`finish_reason: "length"`,
    /// `stop_reason: "max_tokens"`) instead of a normal stop: what a
    /// provider sends when a reply reaches `max_tokens`.
    Cut(Box<Reply>),
    /// A reply that does not end by itself, like a small model that keeps
    /// generating (see [`Endless`]).
    Endless(Endless),
}

/// A reply streamed without end: one token every `every` until the client
/// goes away, or until the output cap the request carries (`max_tokens`,
/// `max_completion_tokens`) is reached, where it ends as a provider does
/// (`finish_reason: "length"`, `stop_reason: "max_tokens"`, usage with
/// that many output tokens). Each token is one delta of `token`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endless {
    /// The text of each token.
    pub token: String,
    /// The pause before each token.
    pub every: std::time::Duration,
    /// `Some(name)`: the tokens are the arguments of one call of this tool,
    /// which never close (`{"path":"endless.txt","content":"` then the
    /// tokens); `None`: they are text.
    pub call: Option<String>,
}

/// What an endless call's arguments start with, before its tokens.
pub const ENDLESS_CALL_PREFIX: &str = r#"{"path":"endless.txt","content":""#;

impl Reply {
    /// A text-only reply.
    pub fn text(text: impl Into<String>) -> Self {
        Reply::Text(text.into())
    }

    /// A reply with a single tool call whose arguments are `arguments` as JSON.
    pub fn tool(name: impl Into<String>, arguments: Value) -> Self {
        Reply::ToolCalls {
            text: String::new(),
            calls: vec![ScriptedCall::new(name, arguments)],
        }
    }

    /// A reply with several tool calls and no text.
    pub fn tools(calls: Vec<ScriptedCall>) -> Self {
        Reply::ToolCalls {
            text: String::new(),
            calls,
        }
    }

    /// This reply preceded by `thinking`: Anthropic thinking blocks, or
    /// `reasoning_content` deltas on the OpenAI wire.
    pub fn with_thinking(self, thinking: Vec<ScriptedThinking>) -> Self {
        Reply::Reasoned {
            thinking,
            reply: Box::new(self),
        }
    }

    /// Text streamed without end, a token (`"lorem "`) every 5 ms (see
    /// [`Endless`]).
    pub fn endless() -> Self {
        Reply::Endless(Endless {
            token: "lorem ".to_owned(),
            every: std::time::Duration::from_millis(5),
            call: None,
        })
    }

    /// One call of `tool` whose arguments stream without end (see
    /// [`Endless::call`]), a token every 5 ms.
    pub fn endless_call(tool: impl Into<String>) -> Self {
        Reply::Endless(Endless {
            token: "lorem ".to_owned(),
            every: std::time::Duration::from_millis(5),
            call: Some(tool.into()),
        })
    }

    /// This reply ended by the output cap (see [`Reply::Cut`]).
    pub fn cut(self) -> Self {
        Reply::Cut(Box::new(self))
    }

    /// Whether the reply ends at the output cap.
    pub fn is_cut(&self) -> bool {
        matches!(self, Reply::Cut(_))
    }

    /// The reasoning streamed before the text (empty for most replies).
    pub fn thinking(&self) -> &[ScriptedThinking] {
        match self {
            Reply::Reasoned { thinking, .. } => thinking,
            Reply::Cut(reply) => reply.thinking(),
            _ => &[],
        }
    }

    /// The reply's text part (empty for [`Reply::Endless`], whose text is
    /// made as it streams).
    pub fn text_part(&self) -> &str {
        match self {
            Reply::Text(t) | Reply::ToolCalls { text: t, .. } => t,
            Reply::Reasoned { reply, .. } | Reply::Cut(reply) => reply.text_part(),
            Reply::Endless(_) => "",
        }
    }

    /// The reply's tool calls (empty for [`Reply::Text`] and
    /// [`Reply::Endless`]).
    pub fn calls(&self) -> &[ScriptedCall] {
        match self {
            Reply::Text(_) | Reply::Endless(_) => &[],
            Reply::ToolCalls { calls, .. } => calls,
            Reply::Reasoned { reply, .. } | Reply::Cut(reply) => reply.calls(),
        }
    }

    /// Bytes of generated content (reasoning, text, tool names and arguments).
    pub fn content_bytes(&self) -> usize {
        let thinking: usize = self
            .thinking()
            .iter()
            .map(|t| match t {
                ScriptedThinking::Thinking { text, .. } => text.len(),
                ScriptedThinking::Redacted { data } => data.len(),
            })
            .sum();
        thinking
            + self.text_part().len()
            + self
                .calls()
                .iter()
                .map(|c| c.name.len() + c.arguments.len())
                .sum::<usize>()
    }
}

type Responder = Arc<dyn Fn(&RequestView) -> Reply + Send + Sync>;

/// Builder for what the server answers.
#[derive(Clone, Default)]
pub struct Script {
    conversations: Vec<(String, Vec<Reply>)>,
    responder: Option<Responder>,
}

impl fmt::Debug for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Script")
            .field("conversations", &self.conversations)
            .field("responder", &self.responder.is_some())
            .finish()
    }
}

/// The outcome of looking a request up in a [`Script`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The reply to send.
    Reply(Reply),
    /// No reply: the message explains why (sent as an HTTP 400).
    Error(String),
}

impl Script {
    /// An empty script: every request gets an HTTP 400 until conversations or a
    /// responder are added.
    pub fn new() -> Self {
        Script::default()
    }

    /// Scripts the conversation whose first user message contains
    /// `first_user_contains`: reply `i` answers the request whose history holds
    /// `i` assistant messages. Earlier-added conversations win.
    pub fn conversation(mut self, first_user_contains: &str, replies: Vec<Reply>) -> Self {
        self.conversations
            .push((first_user_contains.to_string(), replies));
        self
    }

    /// Fallback for requests no conversation matches.
    pub fn responder(mut self, f: impl Fn(&RequestView) -> Reply + Send + Sync + 'static) -> Self {
        self.responder = Some(Arc::new(f));
        self
    }

    /// Picks the reply for a request.
    pub fn lookup(&self, view: &RequestView) -> Lookup {
        if let Some((needle, replies)) = self
            .conversations
            .iter()
            .find(|(needle, _)| view.conversation.contains(needle.as_str()))
        {
            return match replies.get(view.turn) {
                Some(reply) => Lookup::Reply(reply.clone()),
                None => Lookup::Error(format!(
                    "testkit: script exhausted for conversation matching {needle:?}: \
                     request has {} assistant messages but only {} replies are scripted",
                    view.turn,
                    replies.len()
                )),
            };
        }
        match &self.responder {
            Some(f) => Lookup::Reply(f(view)),
            None => Lookup::Error(format!(
                "testkit: no script for conversation {:?}",
                excerpt(&view.conversation, 80)
            )),
        }
    }
}

/// The first `max` characters of `s`, with `…` when cut.
pub(crate) fn excerpt(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::normalize::Api;
    use serde_json::json;

    fn view(first: &str, turn: usize) -> RequestView {
        RequestView {
            api: Api::OpenAi,
            model: String::new(),
            conversation: first.to_string(),
            turn,
            messages: vec![],
            tool_names: vec![],
            system: String::new(),
            tool_choice_none: false,
            stream: true,
        }
    }

    #[test]
    fn lookup_by_needle_and_turn() {
        let s = Script::new()
            .conversation("alpha", vec![Reply::text("a0"), Reply::text("a1")])
            .conversation("beta", vec![Reply::tool("x", json!({"k": 1}))]);
        assert_eq!(
            s.lookup(&view("say alpha now", 1)),
            Lookup::Reply(Reply::text("a1"))
        );
        assert_eq!(
            s.lookup(&view("beta", 0)).clone(),
            Lookup::Reply(Reply::tools(vec![ScriptedCall::raw("x", "{\"k\":1}")]))
        );
        let Lookup::Error(e) = s.lookup(&view("alpha", 2)) else {
            panic!("expected exhausted")
        };
        assert!(e.contains("exhausted"), "{e}");
        let Lookup::Error(e) = s.lookup(&view("gamma", 0)) else {
            panic!("expected no script")
        };
        assert!(e.contains("no script"), "{e}");
    }

    #[test]
    fn responder_is_fallback() {
        let s = Script::new()
            .conversation("alpha", vec![])
            .responder(|v| Reply::text(format!("turn {}", v.turn)));
        assert_eq!(
            s.lookup(&view("other", 3)),
            Lookup::Reply(Reply::text("turn 3"))
        );
        assert!(matches!(s.lookup(&view("alpha", 0)), Lookup::Error(_)));
    }

    #[test]
    fn excerpt_cuts_on_chars() {
        assert_eq!(excerpt("héllo", 2), "hé…");
        assert_eq!(excerpt("hi", 2), "hi");
    }
}
