"""Drives `herald acp` with the official ACP Python SDK (agent-client-protocol
on PyPI) as the client, and prints one JSON object with everything it saw:
each raw message from herald (through the SDK's stream observer, so updates
newer than the SDK's schema are seen too), the answers and timings.

Usage: acp_client.py session|subagents|client_io
Environment: HERALD_BIN, HERALD_WORK, HERALD_HOME, OPENAI_BASE_URL,
OPENAI_API_KEY, HERALD_MODEL.
"""

import asyncio
import importlib.metadata
import json
import os
import sys
import time

from acp import RequestError, spawn_agent_process, text_block
from acp.connection import StreamDirection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    ImageContentBlock,
    KillTerminalResponse,
    McpServerStdio,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    SseMcpServer,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

HERALD = os.environ["HERALD_BIN"]
WORK = os.environ["HERALD_WORK"]
ENV = {key: os.environ[key] for key in
       ("HERALD_HOME", "OPENAI_BASE_URL", "OPENAI_API_KEY", "HERALD_MODEL", "PATH")}
# A 1×1 PNG.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
ECHO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "acp_mcp_echo.py")


class Recorder:
    """Every message herald sent, in order, and the permission requests."""

    def __init__(self):
        self.incoming = []
        self.permissions = []

    def observe(self, event):
        if event.direction == StreamDirection.INCOMING:
            self.incoming.append(event.message)

    def mark(self):
        return len(self.incoming)

    def updates(self, since=0):
        return [m["params"] for m in self.incoming[since:] if m.get("method") == "session/update"]


class Client:
    """The editor: answers permission requests from a queue of choices
    (`once` when it is empty)."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.answers = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        choice = self.answers.pop(0) if self.answers else "once"
        self.recorder.permissions.append({
            "session_id": session_id,
            "tool_call": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
            "options": [o.model_dump(mode="json", by_alias=True, exclude_none=True) for o in options],
            "choice": choice,
        })
        if choice == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def session_update(self, session_id, update, **kwargs):
        pass


class Editor(Client):
    """An editor that offers its file system and terminals: reads return its
    buffers (unsaved text that differs from the disk), writes go into them
    and never to the disk, and commands run in its own terminals. It records
    every request herald made of it."""

    def __init__(self, recorder, buffers):
        super().__init__(recorder)
        self.buffers = dict(buffers)
        self.requests = []
        self.terminals = {}

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        self.requests.append({"method": "fs/read_text_file", "session_id": session_id, "path": path})
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        with open(path) as f:
            return ReadTextFileResponse(content=f.read())

    async def write_text_file(self, session_id, path, content, **kwargs):
        self.requests.append({"method": "fs/write_text_file", "session_id": session_id,
                              "path": path, "content": content})
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def create_terminal(self, session_id, command, args=None, env=None, cwd=None,
                              output_byte_limit=None, **kwargs):
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.requests.append({"method": "terminal/create", "session_id": session_id,
                              "command": command, "args": args, "cwd": cwd,
                              "output_byte_limit": output_byte_limit, "terminal_id": terminal_id})
        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        self.terminals[terminal_id] = {"process": process, "output": b"",
                                       "reader": asyncio.create_task(process.stdout.read())}
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def _finished(self, terminal_id):
        terminal = self.terminals[terminal_id]
        code = await terminal["process"].wait()
        terminal["output"] = await terminal["reader"]
        return code

    async def wait_for_terminal_exit(self, session_id, terminal_id, **kwargs):
        self.requests.append({"method": "terminal/wait_for_exit", "terminal_id": terminal_id})
        code = await self._finished(terminal_id)
        return WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(self, session_id, terminal_id, **kwargs):
        self.requests.append({"method": "terminal/output", "terminal_id": terminal_id})
        code = await self._finished(terminal_id)
        return TerminalOutputResponse(output=self.terminals[terminal_id]["output"].decode(),
                                      truncated=False,
                                      exit_status=TerminalExitStatus(exit_code=code))

    async def kill_terminal(self, session_id, terminal_id, **kwargs):
        self.requests.append({"method": "terminal/kill", "terminal_id": terminal_id})
        self.terminals[terminal_id]["process"].kill()
        return KillTerminalResponse()

    async def release_terminal(self, session_id, terminal_id, **kwargs):
        self.requests.append({"method": "terminal/release", "terminal_id": terminal_id})
        return ReleaseTerminalResponse()


def spawn(recorder, client):
    return spawn_agent_process(client, HERALD, "acp", env=ENV, cwd=WORK,
                               observers=[recorder.observe])


def echo_server():
    # The same servers again on load and resume: the session's tool list
    # must not change (the provider's prompt cache depends on it).
    return [McpServerStdio(name="echo", command=sys.executable, args=[ECHO], env=[])]


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def error_of(call):
    try:
        await call
    except RequestError as err:
        return {"code": err.code, "message": str(err), "data": err.data}
    return None


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def session_scenario(out):
    recorder = Recorder()
    client = Client(recorder)
    started = time.perf_counter()
    async with spawn(recorder, client) as (conn, process):
        init = await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        out["initialize_ms"] = (time.perf_counter() - started) * 1000
        out["initialize"] = dump(init)
        new = await conn.new_session(cwd=WORK, mcp_servers=echo_server())
        sid = new.session_id
        out["session_id"] = sid
        out["new"] = dump(new)

        async def turn(name, text):
            mark = recorder.mark()
            t0 = time.perf_counter()
            response = await conn.prompt(session_id=sid, prompt=[text_block(text)])
            out[name] = {"stop": response.stop_reason, "updates": recorder.updates(mark),
                         "ms": (time.perf_counter() - t0) * 1000}

        await turn("hello", "acp session: write the notes, then fix them")
        client.answers = ["once", "deny"]
        await turn("approve", "approve: touch two files")
        out["permissions"] = recorder.permissions
        await turn("mcp", "mcp: echo ping through the client's server")
        # A prompt with an image: it reaches the model with the text.
        mark = recorder.mark()
        response = await conn.prompt(session_id=sid, prompt=[
            text_block("image: what is in this picture?"),
            ImageContentBlock(type="image", data=PIXEL, mime_type="image/png")])
        out["image"] = {"stop": response.stop_reason, "updates": recorder.updates(mark)}

        # Malformed lines and unknown methods, then the session still works.
        mark = recorder.mark()
        process.stdin.write(b'{this is not json\n')
        process.stdin.write(b'{"jsonrpc": "2.0", "id": "x1", "method": 7}\n')
        process.stdin.write(b'[1, 2, 3]\n')
        await process.stdin.drain()
        out["unknown_method"] = await error_of(conn._conn.send_request("herald/frobnicate", {}))
        out["bad_params"] = await error_of(conn._conn.send_request("session/prompt", {"sessionId": sid}))
        out["unknown_session"] = await error_of(
            conn.prompt(session_id="ses_nope", prompt=[text_block("hi")]))
        # Bytes that are no image: refused before anything is sent.
        out["image_prompt"] = await error_of(conn.prompt(session_id=sid, prompt=[
            text_block("not an image"),
            ImageContentBlock(type="image", data="bm90IGFuIGltYWdl", mime_type="image/png")]))
        out["audio_prompt"] = await error_of(conn._conn.send_request("session/prompt", {
            "sessionId": sid, "prompt": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]}))
        out["bad_mode"] = await error_of(conn.set_session_mode(session_id=sid, mode_id="godmode"))
        out["malformed_answers"] = [m for m in recorder.incoming[mark:]
                                    if "error" in m and m.get("id") in (None, "x1")]
        # Bad requests get their error and leave the stored sessions as they were.
        out["authenticate"] = dump(await conn.authenticate(method_id="herald"))
        before = sorted(s.session_id for s in (await conn.list_sessions()).sessions)
        out["relative_cwd"] = await error_of(conn.new_session(cwd="relative/dir", mcp_servers=[]))
        out["missing_cwd"] = await error_of(
            conn.new_session(cwd=os.path.join(WORK, "no-such-dir"), mcp_servers=[]))
        out["sse_server"] = await error_of(conn.new_session(cwd=WORK, mcp_servers=[
            SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[])]))
        out["unknown_load"] = await error_of(
            conn.load_session(cwd=WORK, session_id="ses_nope", mcp_servers=[]))
        out["bad_cursor"] = await error_of(conn.list_sessions(cursor="zzz"))
        after = sorted(s.session_id for s in (await conn.list_sessions()).sessions)
        out["sessions_unchanged"] = before == after and sid in after
        await turn("after_errors", "after errors: are you still there?")

        # Cancel in the middle of a running command: the command ends.
        pids_file = os.path.join(WORK, "sleeper.pids")
        prompt = asyncio.create_task(
            conn.prompt(session_id=sid, prompt=[text_block("cancel: run the sleeper")]))
        for _ in range(400):
            if os.path.exists(pids_file):
                break
            await asyncio.sleep(0.05)
        with open(pids_file) as f:
            pids = [int(line) for line in f.read().split()]
        await conn.cancel(session_id=sid)
        response = await prompt
        for _ in range(100):
            if not any(alive(pid) for pid in pids):
                break
            await asyncio.sleep(0.05)
        out["cancel"] = {"stop": response.stop_reason, "pids": pids,
                         "alive_after": [pid for pid in pids if alive(pid)]}

        mark = recorder.mark()
        await conn.set_session_mode(session_id=sid, mode_id="read-only")
        await asyncio.sleep(0.2)
        out["set_mode_updates"] = recorder.updates(mark)
        listed = await conn.list_sessions(cwd=WORK)
        out["list"] = [s.session_id for s in listed.sessions]

    # Load in a new process: the history streams once, before the answer.
    recorder = Recorder()
    async with spawn(recorder, Client(recorder)) as (conn, process):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        mark = recorder.mark()
        await conn.load_session(cwd=WORK, session_id=sid, mcp_servers=echo_server())
        answer = max(i for i, m in enumerate(recorder.incoming) if "result" in m)
        await asyncio.sleep(0.3)
        out["load"] = recorder.updates(mark)
        out["load_before_answer"] = [m["params"] for m in recorder.incoming[mark:answer]
                                     if m.get("method") == "session/update"]

    # Resume in another: nothing is replayed, and the conversation goes on.
    recorder = Recorder()
    async with spawn(recorder, Client(recorder)) as (conn, process):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        mark = recorder.mark()
        await conn.resume_session(cwd=WORK, session_id=sid, mcp_servers=echo_server())
        await asyncio.sleep(0.3)
        out["resume"] = recorder.updates(mark)
        mark = recorder.mark()
        try:
            response = await conn.prompt(session_id=sid, prompt=[text_block("resumed: what did we do?")])
            out["after_resume"] = {"stop": response.stop_reason, "updates": recorder.updates(mark)}
        except RequestError as err:
            out["after_resume"] = {"error": {"code": err.code, "data": err.data}}


async def subagents_scenario(out):
    for opt_in in (True, False):
        recorder = Recorder()
        client = Client(recorder)
        name = "opt_in" if opt_in else "nested"
        async with spawn(recorder, client) as (conn, process):
            capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
            if opt_in:
                capabilities["subagents"] = {}
            # Raw, so a capability newer than the SDK's schema goes out as is.
            await conn._conn.send_request("initialize", {
                "protocolVersion": 1, "clientCapabilities": capabilities})
            new = await conn.new_session(cwd=WORK, mcp_servers=[])
            sid = new.session_id
            mark = recorder.mark()
            response = await conn.prompt(session_id=sid, prompt=[text_block(f"acp fanout {name}: three children")])
            result = {"session_id": sid, "stop": response.stop_reason,
                      "updates": recorder.updates(mark), "permissions": recorder.permissions}
            if opt_in:
                # A background child that ends after the turn: its end arrives
                # without another prompt.
                mark = recorder.mark()
                response = await conn.prompt(session_id=sid, prompt=[text_block("background: one child")])
                result["background_stop"] = response.stop_reason
                answered = recorder.mark()
                for _ in range(400):
                    late = [u for u in recorder.updates(answered)
                            if u["update"].get("sessionUpdate") == "subagent_update"
                            and u["update"].get("state", {}).get("state") == "idle"]
                    if late:
                        break
                    await asyncio.sleep(0.05)
                result["background_updates"] = recorder.updates(mark)
                result["after_turn"] = recorder.updates(answered)

                # Cancel one child from the editor, by its session id.
                mark = recorder.mark()
                pids_file = os.path.join(WORK, "slow.pids")
                prompt = asyncio.create_task(conn.prompt(
                    session_id=sid, prompt=[text_block("slow child: start it")]))
                for _ in range(400):
                    if os.path.exists(pids_file):
                        break
                    await asyncio.sleep(0.05)
                with open(pids_file) as f:
                    pids = [int(line) for line in f.read().split()]
                slow = [u["update"]["sessionId"] for u in recorder.updates(mark)
                        if u["update"].get("sessionUpdate") == "subagent_update"
                        and "slow" in (u["update"].get("title") or "")]
                await conn.cancel(session_id=slow[0])
                response = await prompt
                for _ in range(100):
                    if not any(alive(pid) for pid in pids):
                        break
                    await asyncio.sleep(0.05)
                result["child_cancel"] = {"stop": response.stop_reason, "child": slow[0],
                                          "updates": recorder.updates(mark),
                                          "alive_after": [p for p in pids if alive(p)]}
            out[name] = result


async def client_io_scenario(out):
    buffer_path = os.path.join(WORK, "buffer.txt")
    # With the editor's file system and terminals.
    recorder = Recorder()
    editor = Editor(recorder, {buffer_path: "unsaved buffer line\n"})
    async with spawn(recorder, editor) as (conn, process):
        init = await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True))
        out["initialize"] = dump(init)
        new = await conn.new_session(cwd=WORK, mcp_servers=[])
        sid = new.session_id
        out["session_id"] = sid
        mark = recorder.mark()
        response = await conn.prompt(session_id=sid, prompt=[text_block("client io: use the editor")])
        out["offered"] = {"stop": response.stop_reason, "updates": recorder.updates(mark),
                          "requests": list(editor.requests), "buffers": dict(editor.buffers)}
        # A subagent in the same checkout writes through the editor too.
        before = len(editor.requests)
        response = await conn.prompt(session_id=sid, prompt=[text_block("client io child: delegate a write")])
        out["offered_child"] = {"stop": response.stop_reason,
                                "requests": editor.requests[before:], "buffers": dict(editor.buffers)}
    # Without the offer: herald's own tools.
    recorder = Recorder()
    editor = Editor(recorder, {buffer_path: "unsaved buffer line\n"})
    async with spawn(recorder, editor) as (conn, process):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        new = await conn.new_session(cwd=WORK, mcp_servers=[])
        mark = recorder.mark()
        response = await conn.prompt(session_id=new.session_id,
                                     prompt=[text_block("local io: use herald's own tools")])
        out["not_offered"] = {"stop": response.stop_reason, "updates": recorder.updates(mark),
                              "requests": editor.requests}


async def main():
    try:
        await run()
    except RequestError as err:
        raise SystemExit(f"herald answered with an error: {err.code} {err} {err.data}")


async def run():
    out = {"acp_version": importlib.metadata.version("agent-client-protocol")}
    scenario = sys.argv[1]
    if scenario == "session":
        await session_scenario(out)
    elif scenario == "subagents":
        await subagents_scenario(out)
    elif scenario == "client_io":
        await client_io_scenario(out)
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    print(json.dumps(out))


asyncio.run(main())
