"""Reads herald's exported trajectories back with parsers of their formats.

Usage: trajectory_check.py openai FILE | sharegpt FILE

openai: every line's `messages` is validated as a list of the official
`openai` package's ChatCompletionMessageParam (pydantic validation of its
TypedDicts), and each tool message must answer a preceding tool call.
sharegpt: every line's `conversations` is validated against the ShareGPT
shape (`from` in system/human/gpt/tool, string `value`), each
<tool_call> block must hold JSON with `name` and `arguments`, and each
<tool_response> must follow a gpt turn with a call.
Prints one JSON summary line; exits non-zero on the first problem.
"""

import json
import re
import sys
from typing import List, Literal

import pydantic
from openai.types.chat import ChatCompletionMessageParam


def check_openai(lines):
    adapter = pydantic.TypeAdapter(List[ChatCompletionMessageParam])
    calls = 0
    for record in lines:
        messages = adapter.validate_python(record["messages"], strict=False)
        open_ids = set()
        for message in messages:
            for call in message.get("tool_calls") or []:
                json.loads(call["function"]["arguments"])
                open_ids.add(call["id"])
                calls += 1
            if message["role"] == "tool":
                assert message["tool_call_id"] in open_ids, message
        assert messages[-1]["role"] == "assistant", messages[-1]
    return calls


class Turn(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    from_: Literal["system", "human", "gpt", "tool"] = pydantic.Field(alias="from")
    value: str


class Record(pydantic.BaseModel):
    conversations: List[Turn]


def check_sharegpt(lines):
    calls = 0
    for raw in lines:
        record = Record.model_validate(raw)
        pending = 0
        for turn in record.conversations:
            if turn.from_ == "gpt":
                blocks = re.findall(r"<tool_call>\n(.*?)\n</tool_call>", turn.value, re.S)
                for block in blocks:
                    call = json.loads(block)
                    assert isinstance(call["name"], str) and "arguments" in call, call
                pending = len(blocks)
                calls += len(blocks)
            elif turn.from_ == "tool":
                assert pending > 0, "a tool response without a call"
                pending -= 1
                body = re.fullmatch(r"<tool_response>\n(.*)\n</tool_response>", turn.value, re.S)
                assert body, turn.value
                json.loads(body.group(1))
        assert record.conversations[-1].from_ == "gpt"
    return calls


def main():
    fmt, path = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    calls = check_openai(lines) if fmt == "openai" else check_sharegpt(lines)
    print(json.dumps({"records": len(lines), "tool_calls": calls}))


if __name__ == "__main__":
    main()
