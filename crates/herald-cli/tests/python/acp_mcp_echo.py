"""A minimal MCP server on stdio (newline-delimited JSON-RPC) with one tool,
`echo`, for the ACP tests: the ACP client hands it to `herald acp` in
session/new, and the model calls it as mcp__echo__echo."""

import json
import sys


def reply(message_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if "id" not in message:
        continue
    if method == "initialize":
        reply(message["id"], {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo", "version": "1.0.0"},
        })
    elif method == "tools/list":
        reply(message["id"], {"tools": [{
            "name": "echo",
            "description": "Echoes its text back.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                            "required": ["text"]},
        }]})
    elif method == "tools/call":
        text = message["params"]["arguments"]["text"]
        reply(message["id"], {"content": [{"type": "text", "text": f"echo from the client's server: {text}"}]})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                     "error": {"code": -32601, "message": "no such method"}}) + "\n")
        sys.stdout.flush()
