"""Drives `/mcp` of a running `herald serve` with the official `mcp` Python
package's streamable-HTTP client: with the bearer token (tools/list, a run
with progress), and without it or with a wrong one (refused). Prints one
JSON object with what it saw; the Rust test checks it.

Environment: HERALD_MCP_URL (http://127.0.0.1:PORT/mcp), HERALD_TOKEN."""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL = os.environ["HERALD_MCP_URL"]
TOKEN = os.environ["HERALD_TOKEN"]


def texts(result):
    return [c.text for c in result.content if c.type == "text"]


async def with_token(seen):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with http:
        async with streamable_http_client(URL, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                seen["tools"] = [t.name for t in listed.tools]
                progress = []

                async def on_progress(value, total, message):
                    progress.append({"progress": value, "message": message})

                result = await session.call_tool(
                    "run", {"prompt": "mcp http: say hi"}, progress_callback=on_progress
                )
                seen["run"] = {
                    "is_error": bool(result.is_error),
                    "texts": texts(result),
                    "structured": result.structured_content,
                }
                seen["progress"] = progress


async def refused(headers):
    """The error the client raises when the server refuses it."""
    http = create_mcp_http_client(headers=headers)
    try:
        async with http:
            async with streamable_http_client(URL, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await asyncio.wait_for(session.initialize(), 20)
                    return "initialized without a valid token"
    except BaseException as err:  # an ExceptionGroup from the task group, or the error itself
        return describe(err)


def describe(err):
    inner = getattr(err, "exceptions", None)
    if inner:
        return "; ".join(describe(e) for e in inner)
    return f"{type(err).__name__}: {err}"


async def main():
    seen = {}
    await with_token(seen)
    seen["no_token"] = await refused({})
    seen["wrong_token"] = await refused({"Authorization": "Bearer wrong"})
    json.dump(seen, sys.stdout)


asyncio.run(main())
