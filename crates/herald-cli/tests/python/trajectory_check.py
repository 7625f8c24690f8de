"""Reads herald's exported trajectories back with parsers of their formats.

Usage: trajectory_check.py openai FILE | sharegpt FILE

openai: every line's `messages` is validated as a list of the official
`openai` package's ChatCompletionMessageParam (pydantic validation of its
TypedDicts), and each tool message must answer a preceding tool call.
sharegpt: the file is first loaded with Hugging Face `datasets` (the
loader training pipelines use for ShareGPT data), and the schema it infers
for `conversations` must be a list of {from, value} strings; then every
line's `conversations` is validated against the ShareGPT shape (`from` in
system/human/gpt/tool, string `value`), each
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


def load_with_datasets(path):
    """Loads a ShareGPT file with `datasets`, offline, into a temporary cache."""
    import os
    import tempfile

    cache = tempfile.mkdtemp(prefix="herald-hf-")
    os.environ["HF_HOME"] = cache
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    from datasets import Features, List as HfList, Value, load_dataset

    dataset = load_dataset("json", data_files=path, split="train", cache_dir=cache)
    turn = {"from": Value("string"), "value": Value("string")}
    expected = Features({"conversations": HfList(turn)})["conversations"]
    found = dataset.features["conversations"]
    assert found == expected, f"conversations load as {found}, not {expected}"
    for row in dataset:
        assert row["conversations"], "an empty conversation"
        for t in row["conversations"]:
            assert t["from"] and t["value"] is not None, t
    return len(dataset)


def check_sharegpt(lines, path):
    loaded = load_with_datasets(path)
    assert loaded == len(lines), (loaded, len(lines))
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
    calls = check_openai(lines) if fmt == "openai" else check_sharegpt(lines, path)
    print(json.dumps({"records": len(lines), "tool_calls": calls}))


if __name__ == "__main__":
    main()
