//! The endless reply ([`crate::Endless`]): tokens streamed one at a time
//! until the client goes away, or until the output cap the request carries
//! is reached, where the stream ends as a provider ends a reply cut at
//! `max_tokens`.

use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::body::Done;
use crate::normalize::Api;
use crate::render::{RenderContext, unix_now};
use crate::script::{ENDLESS_CALL_PREFIX, Endless};

/// The output cap a request carries: `max_completion_tokens` (OpenAI
/// reasoning models) or `max_tokens`; `None` when it carries none.
pub(crate) fn output_cap(body: &Value) -> Option<u64> {
    body.get("max_completion_tokens")
        .or_else(|| body.get("max_tokens"))
        .and_then(Value::as_u64)
}

/// The framed events of an endless reply: what opens it, the one event
/// each token is, and what closes it at the cap.
pub(crate) struct Parts {
    head: Vec<Bytes>,
    token: Bytes,
    tail: Vec<Bytes>,
}

/// Renders the parts of `endless` on `api`; the tail reports `cap` output
/// tokens (it is sent only when that many tokens were).
pub(crate) fn parts(api: Api, ctx: &RenderContext<'_>, endless: &Endless, cap: u64) -> Parts {
    match api {
        Api::OpenAi => openai_parts(ctx, endless, cap),
        Api::Anthropic => anthropic_parts(ctx, endless, cap),
    }
}

fn openai_parts(ctx: &RenderContext<'_>, endless: &Endless, cap: u64) -> Parts {
    let created = unix_now();
    let chunk = |choices: Value, usage: Option<Value>| {
        let mut chunk = json!({
            "id": format!("chatcmpl-{}", ctx.serial),
            "object": "chat.completion.chunk",
            "created": created,
            "model": ctx.model,
            "choices": choices,
        });
        if let Some(usage) = usage {
            chunk["usage"] = usage;
        }
        Bytes::from(format!("data: {chunk}\n\n"))
    };
    let delta = |delta: Value| {
        chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            None,
        )
    };
    let mut head = Vec::new();
    let token = match &endless.call {
        None => {
            head.push(delta(json!({"role": "assistant", "content": ""})));
            delta(json!({"content": endless.token}))
        }
        Some(name) => {
            head.push(delta(json!({"role": "assistant", "content": null})));
            head.push(delta(json!({"tool_calls": [{
                "index": 0,
                "id": ctx.call_id("call", 0),
                "type": "function",
                "function": {"name": name, "arguments": ENDLESS_CALL_PREFIX},
            }]})));
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": endless.token}}]}))
        }
    };
    let u = &ctx.usage;
    let tail = vec![
        chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": "length"}]),
            None,
        ),
        chunk(
            json!([]),
            Some(json!({
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": cap,
                "total_tokens": u.prompt_tokens + cap,
                "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
            })),
        ),
        Bytes::from_static(b"data: [DONE]\n\n"),
    ];
    Parts { head, token, tail }
}

fn anthropic_parts(ctx: &RenderContext<'_>, endless: &Endless, cap: u64) -> Parts {
    let event = |name: &str, data: Value| Bytes::from(format!("event: {name}\ndata: {data}\n\n"));
    let u = &ctx.usage;
    let mut head = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {
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
    let block_delta = |delta: Value| {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        )
    };
    let token = match &endless.call {
        None => {
            head.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}}),
            ));
            head.push(event("ping", json!({"type": "ping"})));
            block_delta(json!({"type": "text_delta", "text": endless.token}))
        }
        Some(name) => {
            head.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "tool_use", "id": ctx.call_id("toolu", 0),
                                         "name": name, "input": {}}}),
            ));
            head.push(event("ping", json!({"type": "ping"})));
            head.push(block_delta(
                json!({"type": "input_json_delta", "partial_json": ENDLESS_CALL_PREFIX}),
            ));
            block_delta(json!({"type": "input_json_delta", "partial_json": endless.token}))
        }
    };
    let tail = vec![
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": "max_tokens", "stop_sequence": null},
                   "usage": {"output_tokens": cap}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ];
    Parts { head, token, tail }
}

struct State {
    head: std::vec::IntoIter<Bytes>,
    token: Bytes,
    tail: std::vec::IntoIter<Bytes>,
    every: Duration,
    /// Tokens still to send before the tail; `None`: without end.
    left: Option<u64>,
    on_done: Option<Done>,
}

/// The streamed body: the head at once, then a token every `every` until
/// `cap` tokens were sent (then the tail, and the body ends) or the client
/// goes away (dropping the body); without a cap it never ends by itself.
pub(crate) fn body(parts: Parts, every: Duration, cap: Option<u64>, on_done: Done) -> Body {
    let state = State {
        head: parts.head.into_iter(),
        token: parts.token,
        tail: parts.tail.into_iter(),
        every,
        left: cap,
        on_done: Some(on_done),
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        if let Some(event) = st.head.next() {
            return Some((Ok::<Bytes, std::io::Error>(event), st));
        }
        if st.left != Some(0) {
            tokio::time::sleep(st.every).await;
            if let Some(left) = st.left.as_mut() {
                *left -= 1;
            }
            return Some((Ok(st.token.clone()), st));
        }
        match st.tail.next() {
            Some(event) => {
                if st.tail.len() == 0
                    && let Some(done) = st.on_done.take()
                {
                    done();
                }
                Some((Ok(event), st))
            }
            None => None,
        }
    });
    Body::from_stream(stream)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::script::Reply;
    use crate::usage::TokenUsage;

    fn ctx(reply: &Reply) -> RenderContext<'_> {
        RenderContext {
            reply,
            model: "m",
            conversation: "c",
            turn: 0,
            usage: TokenUsage::default(),
            serial: 1,
        }
    }

    fn data(event: &Bytes) -> Value {
        let text = std::str::from_utf8(event).unwrap();
        let line = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn the_cap_comes_from_either_field() {
        assert_eq!(output_cap(&json!({"max_tokens": 7})), Some(7));
        assert_eq!(output_cap(&json!({"max_completion_tokens": 9})), Some(9));
        assert_eq!(output_cap(&json!({})), None);
    }

    #[test]
    fn the_tail_ends_at_the_cap_as_a_provider_does() {
        let reply = Reply::endless();
        let Reply::Endless(endless) = &reply else {
            panic!()
        };
        let openai = parts(Api::OpenAi, &ctx(&reply), endless, 12);
        assert_eq!(
            data(&openai.token)["choices"][0]["delta"]["content"],
            "lorem "
        );
        assert_eq!(
            data(&openai.tail[0])["choices"][0]["finish_reason"],
            "length"
        );
        assert_eq!(data(&openai.tail[1])["usage"]["completion_tokens"], 12);
        let anthropic = parts(Api::Anthropic, &ctx(&reply), endless, 12);
        let delta = data(&anthropic.tail[1]);
        assert_eq!(delta["delta"]["stop_reason"], "max_tokens");
        assert_eq!(delta["usage"]["output_tokens"], 12);
    }

    #[test]
    fn an_endless_call_streams_arguments_that_never_close() {
        let reply = Reply::endless_call("write_file");
        let Reply::Endless(endless) = &reply else {
            panic!()
        };
        let openai = parts(Api::OpenAi, &ctx(&reply), endless, 3);
        let head = data(&openai.head[1]);
        assert_eq!(
            head["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
            "write_file"
        );
        let anthropic = parts(Api::Anthropic, &ctx(&reply), endless, 3);
        assert_eq!(data(&anthropic.token)["delta"]["partial_json"], "lorem ");
    }
}
