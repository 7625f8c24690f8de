"""Drives herald serve with the official `openai` package (code we did not
write): chat completions (plain, continued, streamed), the Responses API
(plain, continued, streamed), the model list and error mapping. Prints one
JSON object with what it saw; the Rust test checks it."""

import json
import os
import sys

import openai
from openai import OpenAI

url = os.environ["HERALD_URL"]
token = os.environ["HERALD_TOKEN"]
model = os.environ["HERALD_MODEL"]
client = OpenAI(base_url=url + "/v1", api_key=token, timeout=30, max_retries=0)
seen = {"openai_version": openai.__version__}

seen["models"] = [m.id for m in client.models.list().data]

raw = client.chat.completions.with_raw_response.create(
    model=model, messages=[{"role": "user", "content": "py chat: hello"}]
)
completion = raw.parse()
session = raw.headers.get("x-herald-session")
seen["chat"] = {
    "content": completion.choices[0].message.content,
    "finish_reason": completion.choices[0].finish_reason,
    "total_tokens": completion.usage.total_tokens,
    "prompt_tokens": completion.usage.prompt_tokens,
    "completion_tokens": completion.usage.completion_tokens,
    "session": session,
}

again = client.chat.completions.create(
    model=model,
    messages=[{"role": "user", "content": "py chat: again"}],
    extra_headers={"X-Herald-Session": session},
)
seen["chat_again"] = again.choices[0].message.content

stream = client.chat.completions.create(
    model=model,
    messages=[{"role": "user", "content": "py stream: read it"}],
    stream=True,
    stream_options={"include_usage": True},
)
pieces, finish, usage, roles = [], None, None, []
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage.total_tokens
    for choice in chunk.choices:
        if choice.delta.role:
            roles.append(choice.delta.role)
        if choice.delta.content:
            pieces.append(choice.delta.content)
        if choice.finish_reason:
            finish = choice.finish_reason
seen["stream"] = {
    "content": "".join(pieces),
    "pieces": len(pieces),
    "finish_reason": finish,
    "total_tokens": usage,
    "roles": roles,
}

first = client.responses.create(model=model, input="py responses: my name is Ada")
second = client.responses.create(
    model=model, input="py responses: who am I?", previous_response_id=first.id
)
seen["responses"] = {
    "first": first.output_text,
    "second": second.output_text,
    "status": second.status,
    "output_tokens": second.usage.output_tokens,
    "previous": second.previous_response_id == first.id,
}

types, deltas, final = [], [], None
for event in client.responses.create(
    model=model, input="py responses: stream", stream=True
):
    types.append(event.type)
    if event.type == "response.output_text.delta":
        deltas.append(event.delta)
    if event.type == "response.completed":
        final = event.response.output_text
seen["responses_stream"] = {"types": types, "text": "".join(deltas), "final": final}

errors = {}
try:
    client.chat.completions.create(
        model="no-such-model", messages=[{"role": "user", "content": "x"}]
    )
except openai.NotFoundError as err:
    errors["model"] = [err.status_code, err.code]
try:
    OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0).models.list()
except openai.AuthenticationError as err:
    errors["auth"] = [err.status_code, err.code]
try:
    client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "x"}],
        extra_headers={"X-Herald-Session": "ses_nope"},
    )
except openai.NotFoundError as err:
    errors["session"] = [err.status_code, err.code]
seen["errors"] = errors

json.dump(seen, sys.stdout)
