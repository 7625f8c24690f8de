//! Anthropic Messages output: SSE events, non-streamed messages and error
//! bodies.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::render::{RenderContext, SseEvents, arg_pieces, error_type, text_pieces};
use crate::script::ScriptedThinking;

fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

fn stop_reason(ctx: &RenderContext<'_>) -> &'static str {
    if ctx.reply.is_cut() {
        "max_tokens"
    } else if ctx.reply.calls().is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

/// Renders the streamed reply.
pub(crate) fn stream(ctx: &RenderContext<'_>) -> SseEvents {
    let u = &ctx.usage;
    let mut out = vec![event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_{}", ctx.serial),
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {
                "input_tokens": u.uncached_input_tokens(),
                "cache_read_input_tokens": u.cached_tokens,
                "cache_creation_input_tokens": u.cache_creation_tokens,
                "output_tokens": 1,
            },
        }}),
    )];
    let text = ctx.reply.text_part();
    let calls = ctx.reply.calls();
    let mut index = 0usize;
    let mut pinged = false;
    let mut ping = |out: &mut Vec<Bytes>| {
        if !pinged {
            out.push(event("ping", &json!({"type": "ping"})));
            pinged = true;
        }
    };
    for block in ctx.reply.thinking() {
        let start = match block {
            ScriptedThinking::Thinking { .. } => json!({"type": "thinking", "thinking": ""}),
            ScriptedThinking::Redacted { data } => {
                json!({"type": "redacted_thinking", "data": data})
            }
        };
        out.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        ping(&mut out);
        if let ScriptedThinking::Thinking { text, signature } = block {
            for piece in text_pieces(text) {
                out.push(event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index,
                            "delta": {"type": "thinking_delta", "thinking": piece}}),
                ));
            }
            out.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "signature_delta", "signature": signature}}),
            ));
        }
        out.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    if !text.is_empty() || calls.is_empty() {
        out.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}),
        ));
        ping(&mut out);
        for piece in text_pieces(text) {
            out.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        out.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for (i, call) in calls.iter().enumerate() {
        out.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": ctx.call_id("toolu", i),
                                      "name": call.name, "input": {}}}),
        ));
        ping(&mut out);
        let fragments = std::iter::once("").chain(arg_pieces(&call.arguments));
        for frag in fragments {
            out.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": frag}}),
            ));
        }
        out.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let body_end = out.len();
    out.push(event(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason(ctx), "stop_sequence": null},
                "usage": {"output_tokens": u.completion_tokens}}),
    ));
    out.push(event("message_stop", &json!({"type": "message_stop"})));
    SseEvents {
        events: out,
        body_end,
    }
}

/// Renders a non-streamed `message` object. Invalid argument JSON is passed as
/// a string `input`.
pub(crate) fn complete(ctx: &RenderContext<'_>) -> Value {
    let text = ctx.reply.text_part();
    let calls = ctx.reply.calls();
    let mut content: Vec<Value> = ctx
        .reply
        .thinking()
        .iter()
        .map(|block| match block {
            ScriptedThinking::Thinking { text, signature } => {
                json!({"type": "thinking", "thinking": text, "signature": signature})
            }
            ScriptedThinking::Redacted { data } => {
                json!({"type": "redacted_thinking", "data": data})
            }
        })
        .collect();
    if !text.is_empty() || calls.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for (i, c) in calls.iter().enumerate() {
        let input = serde_json::from_str::<Value>(&c.arguments)
            .unwrap_or_else(|_| Value::String(c.arguments.clone()));
        content.push(json!({"type": "tool_use", "id": ctx.call_id("toolu", i),
                            "name": c.name, "input": input}));
    }
    let u = &ctx.usage;
    json!({
        "id": format!("msg_{}", ctx.serial),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason(ctx),
        "stop_sequence": null,
        "usage": {
            "input_tokens": u.uncached_input_tokens(),
            "cache_read_input_tokens": u.cached_tokens,
            "cache_creation_input_tokens": u.cache_creation_tokens,
            "output_tokens": u.completion_tokens,
        },
    })
}

/// The Anthropic-shaped error body for an HTTP status.
pub(crate) fn error_body(code: u16, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type(code), "message": message}})
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::script::{Reply, ScriptedCall};
    use crate::usage::TokenUsage;

    fn ctx(reply: &Reply) -> RenderContext<'_> {
        RenderContext {
            reply,
            model: "m",
            conversation: "c",
            turn: 0,
            usage: TokenUsage {
                prompt_tokens: 10,
                cached_tokens: 4,
                cache_creation_tokens: 6,
                completion_tokens: 3,
            },
            serial: 7,
        }
    }

    fn names(ev: &SseEvents) -> Vec<String> {
        ev.events
            .iter()
            .map(|b| {
                let s = std::str::from_utf8(b).unwrap();
                s.lines()
                    .next()
                    .unwrap()
                    .trim_start_matches("event: ")
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn event_order_for_text_and_tool() {
        let reply = Reply::ToolCalls {
            text: "ok".into(),
            calls: vec![ScriptedCall::raw("a", "{}")],
        };
        let ev = stream(&ctx(&reply));
        let n = names(&ev);
        assert_eq!(
            n,
            vec![
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(ev.body_end, 9);
        let text = std::str::from_utf8(&ev.events[9]).unwrap();
        assert!(text.contains("\"tool_use\""), "{text}");
    }

    #[test]
    fn non_streamed_message() {
        let reply = Reply::tools(vec![ScriptedCall::raw("a", "{bad")]);
        let v = complete(&ctx(&reply));
        assert_eq!(v["stop_reason"], "tool_use");
        assert_eq!(v["content"][0]["input"], "{bad");
        assert_eq!(v["usage"]["input_tokens"], 0);
        assert_eq!(
            error_body(401, "no")["error"]["type"],
            "authentication_error"
        );
    }

    #[test]
    fn thinking_blocks_stream_first_with_their_signature() {
        let reply = Reply::text("ok").with_thinking(vec![
            crate::ScriptedThinking::thinking("hm", "sig"),
            crate::ScriptedThinking::redacted("opaque"),
        ]);
        let ev = stream(&ctx(&reply));
        // Each event's data, parsed: the order of the events is what
        // counts, not the order of the keys in each.
        let data: Vec<Value> = ev
            .events
            .iter()
            .map(|b| {
                let text = std::str::from_utf8(b).unwrap();
                let line = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
                serde_json::from_str(line).unwrap()
            })
            .collect();
        let at = |wanted: Value| {
            data.iter()
                .position(|d| {
                    let part = d.get("delta").or_else(|| d.get("content_block"));
                    part.is_some_and(|p| {
                        wanted
                            .as_object()
                            .unwrap()
                            .iter()
                            .all(|(k, v)| p.get(k) == Some(v))
                    })
                })
                .unwrap_or_else(|| panic!("no event with {wanted} in {data:?}"))
        };
        let think = at(json!({"type": "thinking_delta", "thinking": "hm"}));
        let sig = at(json!({"type": "signature_delta", "signature": "sig"}));
        let redacted = at(json!({"type": "redacted_thinking", "data": "opaque"}));
        let text = at(json!({"type": "text_delta", "text": "ok"}));
        assert!(think < sig && sig < redacted && redacted < text, "{data:?}");
        let v = complete(&ctx(&reply));
        assert_eq!(v["content"][0]["signature"], "sig");
        assert_eq!(v["content"][1]["type"], "redacted_thinking");
        assert_eq!(v["content"][2]["text"], "ok");
    }
}
