"""Drives `herald mcp serve` over stdio with the official `mcp` Python package
(code we did not write): the handshake, tools/list, run (new and continued),
progress notifications, delegate + agent_status + agent_result,
session_search, bad arguments, a call an ask rule covers (denied: nobody to
ask), a read-only server refusing a write, and a --yolo server running
what the ask rule covers.
Prints one JSON object with what it saw; the Rust test checks it.

Environment: HERALD_BIN (the binary), HERALD_WORK (its --cwd), and the
provider variables (HERALD_HOME, OPENAI_BASE_URL, ...) passed on to it."""

import asyncio
import importlib.metadata
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HERALD = os.environ["HERALD_BIN"]
WORK = os.environ["HERALD_WORK"]
PASSED = ["HERALD_HOME", "HERALD_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "PATH", "HOME"]
ENV = {k: os.environ[k] for k in PASSED if k in os.environ}


def server(*extra):
    return StdioServerParameters(
        command=HERALD, args=["--cwd", WORK, "mcp", "serve", *extra], env=ENV, cwd=WORK
    )


def texts(result):
    return [c.text for c in result.content if c.type == "text"]


def seen_result(result):
    return {
        "is_error": bool(result.is_error),
        "texts": texts(result),
        "structured": result.structured_content,
    }


async def main_server(seen):
    async with stdio_client(server()) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            seen["server_info"] = {"name": init.server_info.name, "version": init.server_info.version}
            seen["protocol_version"] = init.protocol_version
            seen["has_tools_capability"] = init.capabilities.tools is not None

            listed = await session.list_tools()
            seen["tools"] = {
                t.name: {
                    "input": t.input_schema,
                    "output": t.output_schema,
                    "read_only": t.annotations.read_only_hint if t.annotations else None,
                }
                for t in listed.tools
            }

            first = await session.call_tool("run", {"prompt": "mcp hello: remember the zebra"})
            seen["first"] = seen_result(first)
            session_id = first.structured_content["session_id"]

            again = await session.call_tool(
                "run", {"prompt": "mcp hello: what did I ask?", "session_id": session_id}
            )
            seen["again"] = seen_result(again)

            progress = []

            async def on_progress(value, total, message):
                progress.append({"progress": value, "total": total, "message": message})

            with_tool = await session.call_tool(
                "run", {"prompt": "mcp progress: read the notes"}, progress_callback=on_progress
            )
            seen["progress_run"] = seen_result(with_tool)
            seen["progress"] = progress

            started = await session.call_tool("delegate", {"prompt": "mcp background: count the notes"})
            seen["delegate"] = seen_result(started)
            agent_id = started.structured_content["agent_id"]
            status = await session.call_tool("agent_status", {"agent_id": agent_id})
            seen["status_early"] = seen_result(status)
            result = await session.call_tool("agent_result", {"agent_id": agent_id, "wait": 60})
            seen["agent_result"] = seen_result(result)
            status = await session.call_tool("agent_status", {"agent_id": agent_id})
            seen["status_late"] = seen_result(status)

            asked = await session.call_tool("run", {"prompt": "mcp asks: touch the file"})
            seen["headless_ask"] = seen_result(asked)

            found = await session.call_tool("session_search", {"query": "zebra"})
            seen["search"] = seen_result(found)

            before = await session.call_tool("session_search", {"limit": 10})
            unknown = await session.call_tool(
                "run", {"prompt": "mcp never sent", "session_id": "ses_doesnotexist"}
            )
            seen["unknown_session"] = seen_result(unknown)
            bad = await session.call_tool("run", {"prompt": "mcp never sent", "colour": "blue"})
            seen["bad_argument"] = seen_result(bad)
            mixed = await session.call_tool(
                "run", {"prompt": "mcp never sent", "session_id": session_id, "toolsets": ["file"]}
            )
            seen["toolsets_with_session"] = seen_result(mixed)
            no_agent = await session.call_tool("agent_result", {"agent_id": "mcpagent_nope"})
            seen["unknown_agent"] = seen_result(no_agent)
            after = await session.call_tool("session_search", {"limit": 10})
            seen["sessions_before"] = before.structured_content
            seen["sessions_after"] = after.structured_content
            try:
                await session.call_tool("no_such_tool", {})
                seen["unknown_tool"] = "no error"
            except Exception as err:  # the protocol error, raised by the client
                seen["unknown_tool"] = str(err)


async def read_only_server(seen):
    async with stdio_client(server("--mode", "read-only")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            refused = await session.call_tool("run", {"prompt": "mcp readonly: write the file"})
            seen["read_only"] = seen_result(refused)


async def yolo_server(seen):
    async with stdio_client(server("--yolo")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            allowed = await session.call_tool("run", {"prompt": "mcp yolo: touch the file"})
            seen["yolo"] = seen_result(allowed)


async def main():
    seen = {"mcp_version": importlib.metadata.version("mcp")}
    await main_server(seen)
    await read_only_server(seen)
    await yolo_server(seen)
    json.dump(seen, sys.stdout)


asyncio.run(main())
