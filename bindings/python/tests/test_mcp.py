"""MCP from Python: an McpBridge serving tools whose handlers are Python (Worker(tools=...)),
called through McpBridge.handle_rpc (both eras, the MCP headers, progress as SSE frames,
invalid arguments, an unknown tool, a handler that raises or returns junk, a task that asks
for input and resumes, a cancelled task, log messages at a modern call's level, an ask
expiring after input_timeout) and through serve
with the official MCP Python client (mcp 2.3.0, the version tests/interop/mcp pins), also as
the example script over memory:// and file://."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import agentlog
from agentlog import ToolCall
from agentlog.types import CallToolResult, Tool

from conftest import agent_name

MODERN = "2026-07-28"
CALLS: list[dict[str, Any]] = []


def tools(agent: str) -> list[Tool]:
    """greet (a structured answer, progress), boom (raises), junk (returns no result), all
    on one tool agent so one worker serves them."""
    name_schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }
    return [
        {"name": "greet", "description": "Says hello", "inputSchema": name_schema, "agent": agent},
        {"name": "boom", "inputSchema": {"type": "object"}, "agent": agent},
        {"name": "junk", "inputSchema": {"type": "object"}, "agent": agent, "taskSupport": "optional"},
    ]


async def greet(call: ToolCall) -> CallToolResult:
    CALLS.append({"name": call.name, "arguments": call.arguments, "task": call.task.task_id})
    await call.task.report(1, 2, "halfway")
    await call.task.report(2, 2)
    who = call.arguments["name"]
    return {
        "content": [{"type": "text", "text": f"Hello, {who}!"}],
        "structuredContent": {"greeting": f"Hello, {who}!"},
    }


async def boom(call: ToolCall) -> CallToolResult:
    raise ValueError(f"boom from {call.name}")


async def junk(call: ToolCall) -> CallToolResult:
    return {"content": "not a list"}  # type: ignore[typeddict-item]


@pytest.fixture
async def served() -> AsyncIterator[tuple[agentlog.McpBridge, agentlog.Bridge]]:
    """An McpBridge over memory:// with its worker, and an A2A bridge on the tool agent (to
    read what reached the log)."""
    CALLS.clear()
    agent = agent_name()
    log = await agentlog.open_log("memory://")
    mcp = await agentlog.McpBridge.open(log, tools(agent), name="pytools", version="9.9")
    handlers = {"greet": greet, "boom": boom, "junk": junk}
    async with agentlog.Worker(log, agent, tools=handlers, bridge=mcp):
        yield mcp, await agentlog.Bridge.open(log, agent)


def rpc(method: str, params: dict[str, Any] | None = None, id: int = 1) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode()


def modern(params: dict[str, Any]) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {**params, "_meta": meta}


async def answer(reply: agentlog.McpReply) -> dict[str, Any]:
    assert reply.body is not None, reply
    parsed: dict[str, Any] = json.loads(reply.body)
    return parsed


async def test_tools_list_gives_the_definitions_in_both_eras(served: tuple[agentlog.McpBridge, agentlog.Bridge]) -> None:
    mcp, _ = served
    assert [t["name"] for t in mcp.tools] == ["greet", "boom", "junk"]
    assert mcp.tools[2]["taskSupport"] == "optional"
    assert len(mcp.agents) == 1
    legacy = await mcp.handle_rpc(rpc("tools/list"))
    assert (legacy.status, legacy.content_type, legacy.frames) == (200, "application/json", None)
    listed = (await answer(legacy))["result"]["tools"]
    assert [t["name"] for t in listed] == ["boom", "greet", "junk"]
    assert listed[1]["description"] == "Says hello"
    assert listed[2]["execution"] == {"taskSupport": "optional"}
    headers = {"mcp-protocol-version": MODERN, "MCP-METHOD": "tools/list"}
    result = (await answer(await mcp.handle_rpc(rpc("tools/list", modern({})), headers=headers)))["result"]
    assert [t["name"] for t in result["tools"]] == ["boom", "greet", "junk"]
    assert result["resultType"] == "complete" and "execution" not in result["tools"][0]
    info = result["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert info == {"name": "pytools", "version": "9.9"}


async def test_a_call_round_trips_through_the_python_handler(served: tuple[agentlog.McpBridge, agentlog.Bridge]) -> None:
    mcp, bridge = served
    call = {"name": "greet", "arguments": {"name": "Ada"}}
    result = (await answer(await mcp.handle_rpc(rpc("tools/call", call))))["result"]
    assert result["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert result["structuredContent"] == {"greeting": "Hello, Ada!"}
    assert not result.get("isError")
    assert CALLS[0]["name"] == "greet" and CALLS[0]["arguments"] == {"name": "Ada"}
    # The call was a task on the tool agent's topics, completed by the handler.
    task = await bridge.get_task({"id": CALLS[0]["task"]})
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    # Modern, over "HTTP" (headers checked against the body, names in any case).
    headers = {"MCP-Protocol-Version": MODERN, "mcp-method": "tools/call", "Mcp-Name": "greet"}
    reply = await mcp.handle_rpc(rpc("tools/call", modern(call)), headers=headers)
    assert reply.status == 200
    assert (await answer(reply))["result"]["content"][0]["text"] == "Hello, Ada!"
    # A header naming another tool than the body: -32020, 400, nothing run.
    headers["Mcp-Name"] = "boom"
    reply = await mcp.handle_rpc(rpc("tools/call", modern(call)), headers=headers)
    assert reply.status == 400
    assert (await answer(reply))["error"]["code"] == -32020
    assert len(CALLS) == 2


async def test_progress_streams_as_sse_frames_before_the_answer(served: tuple[agentlog.McpBridge, agentlog.Bridge]) -> None:
    mcp, _ = served
    call = {"name": "greet", "arguments": {"name": "Bo"}, "_meta": {"progressToken": "p1"}}
    reply = await mcp.handle_rpc(rpc("tools/call", call, id=7), accepts_stream=True)
    assert (reply.status, reply.content_type, reply.body) == (200, "text/event-stream", None)
    assert reply.frames is not None
    frames = [frame async for frame in reply.frames]
    messages = []
    for frame in frames:
        assert frame.startswith(b"data: ") and frame.endswith(b"\n\n"), frame
        messages.append(json.loads(frame[len(b"data: ") :]))
    progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
    assert progress == [
        {"progressToken": "p1", "progress": 1.0, "total": 2.0, "message": "halfway"},
        {"progressToken": "p1", "progress": 2.0, "total": 2.0},
    ]
    assert messages[-1]["id"] == 7
    assert messages[-1]["result"]["content"][0]["text"] == "Hello, Bo!"


async def test_invalid_arguments_and_unknown_tools_write_nothing(served: tuple[agentlog.McpBridge, agentlog.Bridge]) -> None:
    mcp, bridge = served
    before = len((await bridge.list_tasks()).get("tasks", []))
    # Arguments failing inputSchema: a tool error the model can correct (SEP-1303), as the
    # SDK answers it, not -32602; the handler never runs.
    bad = await answer(await mcp.handle_rpc(rpc("tools/call", {"name": "greet", "arguments": {"name": 5}})))
    assert bad["result"]["isError"] is True
    assert "Invalid arguments for tool greet" in bad["result"]["content"][0]["text"]
    # A tool nobody serves: -32602.
    unknown = await answer(await mcp.handle_rpc(rpc("tools/call", {"name": "nope", "arguments": {}})))
    assert unknown["error"]["code"] == -32602 and "nope" in unknown["error"]["message"]
    modern_unknown = await mcp.handle_rpc(rpc("tools/call", modern({"name": "nope"})))
    assert modern_unknown.status == 400
    assert CALLS == []
    assert len((await bridge.list_tasks()).get("tasks", [])) == before


async def test_a_handler_that_raises_or_returns_junk_is_a_json_rpc_error(served: tuple[agentlog.McpBridge, agentlog.Bridge]) -> None:
    mcp, _ = served
    raised = await answer(await mcp.handle_rpc(rpc("tools/call", {"name": "boom", "arguments": {}})))
    assert raised["error"]["code"] == -32603
    assert "ValueError: boom from boom" in raised["error"]["message"]
    returned = await answer(await mcp.handle_rpc(rpc("tools/call", {"name": "junk"})))
    assert returned["error"]["code"] == -32603
    assert "the handler returned" in returned["error"]["message"], returned


async def test_a_notification_is_accepted_without_a_body(served: tuple[agentlog.McpBridge, agentlog.Bridge]) -> None:
    mcp, _ = served
    reply = await mcp.handle_rpc(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert (reply.status, reply.body, reply.frames, reply.content_type) == (202, None, None, None)


async def test_bad_tools_and_bad_workers_are_refused_clearly() -> None:
    log = await agentlog.open_log("memory://")
    with pytest.raises(agentlog.ConfigError, match="inputSchema"):
        await agentlog.McpBridge.open(log, [{"name": "x"}])
    with pytest.raises(agentlog.ConfigError, match="tool \"bad name\""):
        await agentlog.McpBridge.open(log, [{"name": "bad name", "inputSchema": {"type": "object"}}])
    with pytest.raises(agentlog.ConfigError, match="tools"):
        await agentlog.McpBridge.open(log, {"not": "tools"})
    mcp = await agentlog.McpBridge.open(log, {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})
    assert mcp.agents == ["mcp.t"]

    async def task_handler(task: agentlog.TaskContext) -> None:
        await task.complete()

    def not_async(call: ToolCall) -> CallToolResult:
        return {"content": []}

    # A handler and tools together are one agent's worker (its default handler and tools).
    assert not agentlog.Worker(log, "mcp.t", task_handler, tools={"t": greet}).running
    with pytest.raises(TypeError, match="needs a handler"):
        agentlog.Worker(log, "mcp.t")
    with pytest.raises(TypeError, match="tool \"t\" must be an `async def`"):
        agentlog.Worker(log, "mcp.t", tools={"t": not_async})  # type: ignore[dict-item]
    with pytest.raises(agentlog.ConfigError, match="no tool on agent \"elsewhere\""):
        agentlog.Worker(log, "elsewhere", tools={"t": greet}, bridge=mcp)


async def test_the_official_mcp_client_calls_python_tools_through_serve() -> None:
    CALLS.clear()
    agent = agent_name()
    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, agent_name())
    mcp = await agentlog.McpBridge.open(log, tools(agent))
    async with agentlog.Worker(log, agent, tools={"greet": greet, "boom": boom}, bridge=mcp):
        async with await agentlog.serve(bridge, "127.0.0.1:0", mcp=mcp) as server:
            assert server.mcp_url == f"{server.url}mcp"
            for mode in ("auto", "legacy", MODERN):
                async with Client(server.mcp_url, mode=mode) as client:
                    listed = await client.list_tools()
                    assert {t.name for t in listed.tools} == {"greet", "boom", "junk"}
                    seen: list[tuple[float, float | None]] = []

                    async def progress(progress: float, total: float | None, message: str | None) -> None:
                        seen.append((progress, total))

                    done = await client.call_tool("greet", {"name": "Cy"}, progress_callback=progress)
                    assert done.content[0].text == "Hello, Cy!"  # type: ignore[union-attr]
                    assert done.structured_content == {"greeting": "Hello, Cy!"}
                    assert seen == [(1, 2), (2, 2)], (mode, seen)
                    invalid = await client.call_tool("greet", {})
                    assert invalid.is_error
                    with pytest.raises(Exception, match="boom from boom"):
                        await client.call_tool("boom", {})
    assert len(CALLS) == 3


@pytest.mark.parametrize("log", ["memory://", "file"])
async def test_the_mcp_example_serves_python_tools_to_the_official_client(log: str, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'log'}" if log == "file" else log
    example = Path(__file__).resolve().parents[1] / "examples" / "mcp_tools.py"
    agent = await asyncio.create_subprocess_exec(
        sys.executable,
        str(example),
        "--listen",
        "127.0.0.1:0",
        "--log",
        url,
        stdout=asyncio.subprocess.PIPE,
        # Ctrl-C as a terminal delivers it, whatever the runner's own SIGINT is (see test_serve.py).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert agent.stdout is not None
        banner = (await asyncio.wait_for(agent.stdout.readline(), 30)).decode()
        assert banner.startswith("serving MCP tools at http://127.0.0.1:"), banner
        mcp_url = banner.split(" at ")[1].split(" ")[0]
        async with Client(mcp_url, mode="legacy") as client:
            assert client.server_info is not None and client.server_info.name == "python-tools"
            assert {t.name for t in (await client.list_tools()).tools} == {"greet", "add", "divide"}
            added = await client.call_tool("add", {"a": 2, "b": 3.5})
            assert added.structured_content == {"sum": 5.5}
            divided = await client.call_tool("divide", {"a": 1, "b": 0})
            assert divided.is_error and divided.content[0].text == "cannot divide by zero"  # type: ignore[union-attr]
            greeted = await client.call_tool("greet", {"name": "Di"})
            assert greeted.content[0].text == "Hello, Di!"  # type: ignore[union-attr]
        agent.send_signal(signal.SIGINT)
        out, _ = await asyncio.wait_for(agent.communicate(), 20)
        assert agent.returncode == 0 and out.decode().strip().endswith("stopped"), out
    finally:
        if agent.returncode is None:
            agent.kill()
            await agent.wait()


TASKS = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
}


async def test_a_task_asks_for_input_resumes_and_another_is_cancelled() -> None:
    agent = agent_name()
    log = await agentlog.open_log("memory://")
    seen: dict[str, Any] = {"cancelled": False}

    async def colour(call: ToolCall) -> CallToolResult:
        if call.input_responses is None:
            request = {"method": "elicitation/create", "params": {"message": "which colour?", "requestedSchema": {"type": "object"}}}
            await call.ask("which colour?", {"colour": request})
            return {"content": []}  # dropped: ask ended the turn
        picked = call.input_responses["colour"]["content"]["c"]
        return {"content": [{"type": "text", "text": f"picked {picked}"}]}

    started = asyncio.Event()

    async def wait(call: ToolCall) -> CallToolResult:
        started.set()
        try:
            await call.task.wait_cancelled()
        finally:
            seen["cancelled"] = call.task.cancelled
        return {"content": []}

    optional = {"type": "object"}
    definitions: list[Tool] = [
        {"name": "colour", "inputSchema": optional, "agent": agent, "taskSupport": "optional"},
        {"name": "wait", "inputSchema": optional, "agent": agent, "taskSupport": "required"},
    ]
    mcp = await agentlog.McpBridge.open(log, definitions)

    async def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await answer(await mcp.handle_rpc(rpc(method, {**params, "_meta": TASKS})))

    async def status(task_id: str, want: str) -> dict[str, Any]:
        for _ in range(500):
            got: dict[str, Any] = (await call("tasks/get", {"taskId": task_id}))["result"]
            if got["status"] == want:
                return got
            await asyncio.sleep(0.02)
        raise AssertionError(f"{task_id} never became {want}: {got}")

    async with agentlog.Worker(log, agent, tools={"colour": colour, "wait": wait}, bridge=mcp):
        created = (await call("tools/call", {"name": "colour"}))["result"]
        assert created["resultType"] == "task", created
        asking = await status(created["taskId"], "input_required")
        assert asking["statusMessage"] == "which colour?"
        responses = {"colour": {"action": "accept", "content": {"c": "red"}}}
        await call("tasks/update", {"taskId": created["taskId"], "inputResponses": responses})
        done = await status(created["taskId"], "completed")
        assert done["result"]["content"] == [{"type": "text", "text": "picked red"}]

        waiting = (await call("tools/call", {"name": "wait"}))["result"]
        # Cancel once the handler runs (a cancel before the worker takes the call never
        # reaches a handler).
        await asyncio.wait_for(started.wait(), 10)
        await call("tasks/cancel", {"taskId": waiting["taskId"]})
        await status(waiting["taskId"], "cancelled")
        for _ in range(250):
            if seen["cancelled"]:
                break
            await asyncio.sleep(0.02)
        assert seen["cancelled"] is True


def log_level(level: str, *, elicitation: bool = False) -> dict[str, Any]:
    """A modern ``_meta`` asking log messages at ``level`` (and progress under ``tok``)."""
    capabilities: dict[str, Any] = {"elicitation": {}} if elicitation else {}
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/logLevel": level,
        "progressToken": "tok",
    }


async def test_log_messages_stream_in_order_before_the_result_at_the_level_asked() -> None:
    agent = agent_name()
    log = await agentlog.open_log("memory://")
    refused: list[str] = []

    async def chatty(call: ToolCall) -> CallToolResult:
        await call.task.log("debug", {"step": "connect"}, "db")
        await call.task.report(1, 2)
        await call.task.log("info", "halfway")
        await call.task.report(2, 2)
        await call.task.log("error", {"slow": True}, logger="db")
        try:
            await call.task.log("loud", "no such level")  # type: ignore[arg-type]
        except agentlog.InvalidParamsError as e:
            refused.append(str(e))
        return {"content": [{"type": "text", "text": "done"}]}

    definitions: list[Tool] = [{"name": "chatty", "inputSchema": {"type": "object"}, "agent": agent}]
    mcp = await agentlog.McpBridge.open(log, definitions)
    async with agentlog.Worker(log, agent, tools={"chatty": chatty}, bridge=mcp):
        call = {"name": "chatty", "_meta": log_level("info")}
        reply = await mcp.handle_rpc(rpc("tools/call", call, id=3), accepts_stream=True)
        assert (reply.status, reply.content_type) == (200, "text/event-stream"), reply
        assert reply.frames is not None
        messages = [json.loads(frame[len(b"data: ") :]) async for frame in reply.frames]
    summary = []
    for m in messages:
        if m.get("method") == "notifications/message":
            summary.append(("log", m["params"]))
        elif m.get("method") == "notifications/progress":
            summary.append(("progress", m["params"]["progress"]))
        else:
            summary.append(("result", m["result"]["content"][0]["text"]))
    # debug is below the level asked: on the log, not sent.
    assert summary == [
        ("progress", 1.0),
        ("log", {"level": "info", "data": "halfway"}),
        ("progress", 2.0),
        ("log", {"level": "error", "logger": "db", "data": {"slow": True}}),
        ("result", "done"),
    ]
    assert messages[-1]["id"] == 3
    assert len(refused) == 1 and "level" in refused[0], refused


async def test_an_ask_waits_input_timeout_then_the_call_expires() -> None:
    agent = agent_name()
    log = await agentlog.open_log("memory://")

    async def confirm(call: ToolCall) -> CallToolResult:
        if call.input_responses is None:
            request = {"method": "elicitation/create", "params": {"message": "sure?", "requestedSchema": {"type": "object"}}}
            await call.ask("sure?", {"ok": request})
            return {"content": []}
        return {"content": [{"type": "text", "text": "confirmed"}]}

    anything = {"type": "object"}
    definitions: list[Tool] = [
        {"name": "confirm", "inputSchema": anything, "agent": agent},
        {"name": "patient", "inputSchema": anything, "agent": agent},
    ]
    handlers = {"confirm": confirm, "patient": confirm}
    mcp = await agentlog.McpBridge.open(log, definitions)
    bridge = await agentlog.Bridge.open(log, agent)

    async def task_handler(task: agentlog.TaskContext) -> None:
        await task.complete()

    with pytest.raises(TypeError, match="input_timeout must be >= 0"):
        agentlog.Worker(log, agent, tools=handlers, input_timeout=-1)
    with pytest.raises(TypeError, match="input_timeout must be seconds or a dict"):
        agentlog.Worker(log, agent, tools=handlers, input_timeout="soon")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match='names tool "confrim"'):
        agentlog.Worker(log, agent, tools=handlers, input_timeout={"confrim": 1})
    with pytest.raises(TypeError, match="needs tools="):
        agentlog.Worker(log, agent, task_handler, input_timeout=1)

    async def ask(name: str) -> tuple[dict[str, Any], str, float]:
        """A modern sync call of ``name``: the call, its task id, its recorded deadline (ms)."""
        call = {"name": name, "_meta": log_level("info", elicitation=True)}
        asked = (await answer(await mcp.handle_rpc(rpc("tools/call", call))))["result"]
        assert asked["resultType"] == "input_required", asked
        call["requestState"] = asked["requestState"]
        task_id = asked["requestState"].rsplit("#", 1)[0].split(":", 1)[1]
        waiting = await bridge.get_task({"id": task_id})
        assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        deadline: float = waiting["status"]["message"]["metadata"]["agentlog.mcp"]["inputDeadlineMs"]
        return call, task_id, deadline

    # Whole milliseconds, truncated as the worker's clock is: with the fraction, a deadline
    # set in the same millisecond would read as up to 1 ms early.
    def now_ms() -> int:
        return time.time_ns() // 1_000_000

    # One number: every tool's asks wait that long.
    async with agentlog.Worker(log, agent, tools=handlers, bridge=mcp, input_timeout=30):
        asked_at = now_ms()
        _, _, deadline = await ask("patient")
        assert asked_at + 30_000 <= deadline < asked_at + 35_000, (asked_at, deadline)
    # A dict: those tools; the others keep the default (15 minutes).
    async with agentlog.Worker(log, agent, tools=handlers, bridge=mcp, input_timeout={"confirm": 0.5}):
        asked_at = now_ms()
        _, _, deadline = await ask("patient")
        assert asked_at + 900_000 <= deadline < asked_at + 905_000, (asked_at, deadline)
        asked_at = now_ms()
        call, task_id, deadline = await ask("confirm")
        assert asked_at + 500 <= deadline < asked_at + 5_500, (asked_at, deadline)
        for _ in range(500):
            task = await bridge.get_task({"id": task_id})
            if task["status"]["state"] == "TASK_STATE_CANCELED":
                break
            await asyncio.sleep(0.02)
        assert task["status"]["state"] == "TASK_STATE_CANCELED", task
        assert time.time() * 1000 >= deadline
        call["inputResponses"] = {"ok": {"action": "accept", "content": {}}}
        refused = await mcp.handle_rpc(rpc("tools/call", call))
        body = await answer(refused)
        assert (refused.status, body["error"]["code"]) == (400, -32602), body
        assert "expired" in body["error"]["message"], body


async def test_prompts_resources_and_completions_answered_by_python_handlers() -> None:
    """A prompt, a resource template and their completions configured with a worker's agent,
    answered by Python handlers through the log (both eras); a reload adds a tool and a
    2026-07-28 listen stream that asked hears the tools' list changed."""
    agent = agent_name()
    log = await agentlog.open_log("memory://")
    definitions: dict[str, Any] = {
        "prompts": [{"name": "brief", "arguments": [{"name": "topic", "required": True}],
                     "agent": agent, "completionAgent": agent}],
        "resourceTemplates": [{"uriTemplate": "notes://{id}", "name": "note", "mimeType": "text/plain",
                               "agent": agent, "completionAgent": agent}],
    }
    mcp = await agentlog.McpBridge.open(log, definitions)

    async def brief(call: ToolCall) -> dict[str, Any]:
        topic = call.arguments["topic"]
        return {"messages": [{"role": "user", "content": {"type": "text", "text": f"Brief me on {topic}."}}]}

    async def note(call: ToolCall) -> list[dict[str, Any]]:
        if call.arguments["id"] == "misshapen":
            return [{"text": "no uri"}]
        return [{"uri": call.arguments["uri"], "mimeType": "text/plain", "text": f"note {call.arguments['id']}"}]

    async def topics(call: ToolCall) -> list[str]:
        assert call.arguments["argument"] == "topic"
        return [t for t in ["logs", "latency", "disks"] if t.startswith(call.arguments["value"])]

    async def ids(call: ToolCall) -> dict[str, Any]:
        return {"values": ["1", "2"], "total": 7, "hasMore": True}

    async with agentlog.Worker(log, agent, prompts={"brief": brief}, resources={"notes://{id}": note},
                               prompt_completions={"brief": topics},
                               resource_completions={"notes://{id}": ids}, bridge=mcp):
        got = await answer(await mcp.handle_rpc(rpc("prompts/get", {"name": "brief", "arguments": {"topic": "disks"}})))
        assert got["result"]["messages"][0]["content"]["text"] == "Brief me on disks.", got
        read = await answer(await mcp.handle_rpc(rpc("resources/read", modern({"uri": "notes://7"}))))
        assert read["result"]["contents"] == [{"uri": "notes://7", "mimeType": "text/plain", "text": "note 7"}], read
        # Contents of the wrong shape fail the read, saying what is wrong (the SDK's check).
        misshapen = await answer(await mcp.handle_rpc(rpc("resources/read", {"uri": "notes://misshapen"})))
        assert misshapen["error"]["code"] == -32603, misshapen
        assert "the resource handler returned invalid contents" in misshapen["error"]["message"], misshapen
        completed = await answer(await mcp.handle_rpc(rpc("completion/complete", {
            "ref": {"type": "ref/prompt", "name": "brief"}, "argument": {"name": "topic", "value": "l"}})))
        assert completed["result"]["completion"] == {"values": ["logs", "latency"], "total": 2, "hasMore": False}
        completed = await answer(await mcp.handle_rpc(rpc("completion/complete", modern({
            "ref": {"type": "ref/resource", "uri": "notes://{id}"}, "argument": {"name": "id", "value": ""}}))))
        assert completed["result"]["completion"] == {"values": ["1", "2"], "total": 7, "hasMore": True}
    # A reload is heard by a listen stream that asked for the tools' list.
    listen = await mcp.handle_rpc(rpc("subscriptions/listen", modern({"notifications": {"toolsListChanged": True}})),
                                  accepts_stream=True)
    assert listen.frames is not None
    frames = aiter(listen.frames)
    ack = json.loads((await anext(frames)).decode().removeprefix("data: "))
    assert ack["params"]["notifications"] == {"toolsListChanged": True}, ack
    changed = await mcp.reload({**definitions, "tools": [{"name": "added", "inputSchema": {"type": "object"}}]})
    assert changed == {"tools": True, "prompts": False, "resources": False}
    heard = json.loads((await asyncio.wait_for(anext(frames), 20)).decode().removeprefix("data: "))
    assert heard["method"] == "notifications/tools/list_changed", heard
    assert [t["name"] for t in mcp.tools] == ["added"]
    with pytest.raises(agentlog.ConfigError):
        await mcp.reload([{"name": "bad name!", "inputSchema": {"type": "object"}}])
