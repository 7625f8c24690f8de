//! OpenAI Chat Completions output: SSE chunks (with optional real-server
//! quirks), non-streamed completions and error bodies.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::render::{RenderContext, SseEvents, arg_pieces, error_type, text_pieces, unix_now};
use crate::script::ScriptedThinking;
use crate::usage::TokenUsage;

/// Deviations from the reference stream format that real OpenAI-compatible
/// servers produce; clients must accept each of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quirks {
    /// The usage chunk has `choices: [{"index":0,"delta":{}}]` instead of `[]`.
    pub usage_choice_with_empty_delta: bool,
    /// Tool-call deltas also carry `"content":""`.
    pub empty_content_on_tool_deltas: bool,
    /// A reply holding tool calls ends with `finish_reason: "stop"`.
    pub stop_with_tool_calls: bool,
    /// Lines read `data:   {...}` (extra spaces after the colon).
    pub extra_spaces_after_data: bool,
}

fn usage_json(u: &TokenUsage) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
    })
}

struct ChunkWriter<'a> {
    ctx: &'a RenderContext<'a>,
    quirks: Quirks,
    created: u64,
    out: Vec<Bytes>,
}

impl ChunkWriter<'_> {
    fn push_raw(&mut self, payload: &str) {
        let sep = if self.quirks.extra_spaces_after_data {
            "   "
        } else {
            " "
        };
        self.out
            .push(Bytes::from(format!("data:{sep}{payload}\n\n")));
    }

    fn push(&mut self, choices: Value, usage: Option<Value>) {
        let mut chunk = json!({
            "id": format!("chatcmpl-{}", self.ctx.serial),
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.ctx.model,
            "choices": choices,
        });
        if let (Some(u), Some(obj)) = (usage, chunk.as_object_mut()) {
            obj.insert("usage".to_string(), u);
        }
        self.push_raw(&chunk.to_string());
    }

    fn delta(&mut self, delta: Value) {
        self.push(
            json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            None,
        );
    }
}

/// Renders the streamed reply.
pub(crate) fn stream(ctx: &RenderContext<'_>, quirks: Quirks) -> SseEvents {
    let mut w = ChunkWriter {
        ctx,
        quirks,
        created: unix_now(),
        out: Vec::new(),
    };
    let text = ctx.reply.text_part();
    let calls = ctx.reply.calls();
    let first_content = if text.is_empty() && !calls.is_empty() {
        Value::Null
    } else {
        json!("")
    };
    w.delta(json!({"role": "assistant", "content": first_content}));
    for block in ctx.reply.thinking() {
        if let ScriptedThinking::Thinking { text, .. } = block {
            for piece in text_pieces(text) {
                w.delta(json!({"content": null, "reasoning_content": piece}));
            }
        }
    }
    for piece in text_pieces(text) {
        w.delta(json!({"content": piece}));
    }
    for (i, call) in calls.iter().enumerate() {
        let mut head = json!({"tool_calls": [{
            "index": i,
            "id": ctx.call_id("call", i),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]});
        if quirks.empty_content_on_tool_deltas {
            head["content"] = json!("");
        }
        w.delta(head);
        for frag in arg_pieces(&call.arguments) {
            let mut d = json!({"tool_calls": [{"index": i, "function": {"arguments": frag}}]});
            if quirks.empty_content_on_tool_deltas {
                d["content"] = json!("");
            }
            w.delta(d);
        }
    }
    let body_end = w.out.len();
    let finish = if ctx.reply.is_cut() {
        "length"
    } else if calls.is_empty() || quirks.stop_with_tool_calls {
        "stop"
    } else {
        "tool_calls"
    };
    w.push(
        json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
        None,
    );
    let usage_choices = if quirks.usage_choice_with_empty_delta {
        json!([{"index": 0, "delta": {}}])
    } else {
        json!([])
    };
    w.push(usage_choices, Some(usage_json(&ctx.usage)));
    w.push_raw("[DONE]");
    SseEvents {
        events: w.out,
        body_end,
    }
}

/// Renders a non-streamed `chat.completion` object.
pub(crate) fn complete(ctx: &RenderContext<'_>) -> Value {
    let text = ctx.reply.text_part();
    let calls = ctx.reply.calls();
    let mut message = json!({
        "role": "assistant",
        "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) },
    });
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                json!({
                    "id": ctx.call_id("call", i),
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })
            })
            .collect();
    }
    json!({
        "id": format!("chatcmpl-{}", ctx.serial),
        "object": "chat.completion",
        "created": unix_now(),
        "model": ctx.model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": if ctx.reply.is_cut() {
                "length"
            } else if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            },
        }],
        "usage": usage_json(&ctx.usage),
    })
}

/// The OpenAI-shaped error body for an HTTP status.
pub(crate) fn error_body(code: u16, message: &str) -> Value {
    json!({"error": {"message": message, "type": error_type(code), "code": code}})
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::script::{Reply, ScriptedCall};

    fn parse(ev: &SseEvents) -> Vec<Value> {
        ev.events
            .iter()
            .map(|b| std::str::from_utf8(b).unwrap())
            .map(|s| s.trim_start_matches("data:").trim())
            .filter(|s| *s != "[DONE]")
            .map(|s| serde_json::from_str(s).unwrap())
            .collect()
    }

    fn ctx(reply: &Reply) -> RenderContext<'_> {
        RenderContext {
            reply,
            model: "m",
            conversation: "c",
            turn: 2,
            usage: TokenUsage {
                prompt_tokens: 10,
                cached_tokens: 4,
                cache_creation_tokens: 0,
                completion_tokens: 3,
            },
            serial: 1,
        }
    }

    #[test]
    fn quirks_appear() {
        let reply = Reply::ToolCalls {
            text: "hi".into(),
            calls: vec![ScriptedCall::raw("a", "{\"x\": 1234567890}")],
        };
        let q = Quirks {
            usage_choice_with_empty_delta: true,
            empty_content_on_tool_deltas: true,
            stop_with_tool_calls: true,
            extra_spaces_after_data: true,
        };
        let ev = stream(&ctx(&reply), q);
        assert!(ev.events.iter().all(|e| e.starts_with(b"data:   ")));
        let chunks = parse(&ev);
        let usage = chunks.last().unwrap();
        assert_eq!(usage["choices"], json!([{"index": 0, "delta": {}}]));
        assert_eq!(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
        assert!(
            chunks
                .iter()
                .any(|c| c["choices"][0]["finish_reason"] == "stop")
        );
        let tool_deltas: Vec<_> = chunks
            .iter()
            .filter(|c| !c["choices"][0]["delta"]["tool_calls"].is_null())
            .collect();
        assert!(tool_deltas.len() > 2);
        assert!(
            tool_deltas
                .iter()
                .all(|c| c["choices"][0]["delta"]["content"] == "")
        );
        let finish = std::str::from_utf8(&ev.events[ev.body_end]).unwrap();
        assert!(finish.contains("finish_reason\":\"stop"), "{finish}");
    }

    #[test]
    fn non_streamed_completion() {
        let reply = Reply::tool("grep", json!({"q": "x"}));
        let v = complete(&ctx(&reply));
        assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(v["choices"][0]["message"]["content"], Value::Null);
        assert_eq!(
            v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"q\":\"x\"}"
        );
        assert_eq!(error_body(429, "slow")["error"]["type"], "rate_limit_error");
    }
}
