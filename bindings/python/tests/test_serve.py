"""serve from Python with a Python handler: the official a2a-sdk client drives it (card,
blocking send, stream, cancel, input-required) over each binding the card lists (JSON-RPC,
HTTP+JSON, and gRPC on the `grpc_listen` port), a handler that blocks the loop holds up
nothing else, and the process tests: Ctrl-C during serve, a script that exits without
cleanup (20 runs), and the example scripts."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]  # grpcio ships no type stubs
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, create_client
from a2a.client.transports.grpc import GrpcTransport
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.client.transports.rest import RestTransport
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError

import agentlog
from agentlog import TaskContext

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
CALL = ClientCallContext(timeout=20)
# When the blocking handler held the loop: [start, end].
BLOCKED: list[float] = []


async def handler(task: TaskContext) -> None:
    text = task.text
    if text == "sleep":
        await task.working("sleeping")
        await task.wait_cancelled()
    elif text == "input" and len(task.history) == 1:
        await task.input_required("what now?")
    elif text == "trace":
        await task.complete(json.dumps([task.trace_context, task.span_context]))
    elif text == "block":
        BLOCKED.append(time.monotonic())
        time.sleep(1.0)  # blocks the event loop on purpose
        BLOCKED.append(time.monotonic())
        await task.complete("unblocked")
    else:
        await task.artifact({"artifactId": "echo", "parts": [{"text": "echo: "}]})
        await task.artifact({"artifactId": "echo", "parts": [{"text": text}]}, append=True, last_chunk=True)
        await task.complete(f"done: {text}")


@pytest.fixture
async def server() -> AsyncIterator[agentlog.Server]:
    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "pyagent", card={"description": "a Python agent"})
    async with agentlog.Worker(log, "pyagent", handler, bridge=bridge):
        async with await agentlog.serve(bridge, "127.0.0.1:0", grpc_listen="127.0.0.1:0") as served:
            yield served


BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
TRANSPORTS: dict[str, type] = {"JSONRPC": JsonRpcTransport, "HTTP+JSON": RestTransport, "GRPC": GrpcTransport}


async def client_over(server: agentlog.Server, binding: str, streaming: bool) -> Any:
    """The official client restricted to one of the card's bindings (gRPC: a plaintext channel
    to the card's `host:port`), checked to speak it."""
    config = ClientConfig(
        streaming=streaming, supported_protocol_bindings=[binding], grpc_channel_factory=grpc.aio.insecure_channel
    )
    client = await create_client(server.url, config)
    # The transport is private: the one way to see which binding the client speaks.
    transport = getattr(client, "_transport", None)
    assert isinstance(transport, TRANSPORTS[binding]), transport
    return client


def user(text: str, **ids: str) -> Message:
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)], **ids)


async def send(client: Any, message: Message, **config: Any) -> Task:
    request = SendMessageRequest(message=message, configuration=SendMessageConfiguration(**config))
    events = [e async for e in client.send_message(request, context=CALL)]
    assert len(events) == 1 and events[0].HasField("task"), events
    task: Task = events[0].task
    return task


async def test_the_card_lists_the_bound_url_and_the_grpc_address(server: agentlog.Server) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        card = await A2ACardResolver(http, server.url).get_agent_card()
    assert card.name == "pyagent" and card.description == "a Python agent"
    listed = [(i.protocol_binding, i.url) for i in card.supported_interfaces]
    assert listed == [("JSONRPC", server.url), ("HTTP+JSON", server.url), ("GRPC", server.grpc_url)], listed
    assert server.grpc_url is not None and server.grpc_url.startswith("127.0.0.1:")
    assert card.capabilities.streaming and card.skills


async def test_without_grpc_listen_there_is_no_grpc_interface() -> None:
    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "plain")
    async with await agentlog.serve(bridge, "127.0.0.1:0") as served:
        assert served.grpc_url is None
        async with httpx.AsyncClient(timeout=20) as http:
            card = await A2ACardResolver(http, served.url).get_agent_card()
    assert [i.protocol_binding for i in card.supported_interfaces] == ["JSONRPC", "HTTP+JSON"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_official_client_sends_blocking_and_gets(server: agentlog.Server, binding: str) -> None:
    async with await client_over(server, binding, streaming=False) as client:
        task = await send(client, user("hello"))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert "".join(p.text for a in task.artifacts for p in a.parts) == "echo: hello"
        assert task.status.message.parts[0].text == "done: hello"
        again = await client.get_task(GetTaskRequest(id=task.id), context=CALL)
        assert again.status.state == TaskState.TASK_STATE_COMPLETED


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_official_client_streams(server: agentlog.Server, binding: str) -> None:
    async with await client_over(server, binding, streaming=True) as client:
        request = SendMessageRequest(message=user("stream"))
        events = [e async for e in client.send_message(request, context=CALL)]
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and "artifact_update" in kinds and kinds[-1] == "status_update", kinds
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_official_client_cancels_and_the_handler_sees_it(server: agentlog.Server, binding: str) -> None:
    async with await client_over(server, binding, streaming=False) as client:
        task = await send(client, user("sleep"), return_immediately=True)
        canceled = await client.cancel_task(CancelTaskRequest(id=task.id), context=CALL)
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=task.id), context=CALL)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_official_client_answers_input_required(server: agentlog.Server, binding: str) -> None:
    async with await client_over(server, binding, streaming=False) as client:
        task = await send(client, user("input"))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert task.status.message.parts[0].text == "what now?"
        done = await send(client, user("the answer", task_id=task.id, context_id=task.context_id))
        assert done.id == task.id and done.status.state == TaskState.TASK_STATE_COMPLETED
        assert done.status.message.parts[0].text == "done: the answer"


def post(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=20) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
        return answer


async def test_the_handler_reads_the_callers_trace_context_and_its_turns_span(server: agentlog.Server) -> None:
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    for headers, expected in [
        ({"traceparent": parent, "tracestate": "a=1"}, {"traceparent": parent, "tracestate": "a=1"}),
        ({"traceparent": parent}, {"traceparent": parent}),
        ({}, None),
    ]:
        params = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "trace"}]}}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}).encode()
        request = urllib.request.Request(server.url, body, {"Content-Type": "application/json", **headers})
        reply = await asyncio.to_thread(urllib.request.urlopen, request, timeout=20)
        task = json.loads(reply.read())["result"]["task"]
        seen, span = json.loads(task["status"]["message"]["parts"][0]["text"])
        assert seen == expected
        if expected is None:
            assert span is None
            continue
        # The turn's own span: the same trace, a span id of its own, the caller's state.
        _, trace_id, span_id, _ = span["traceparent"].split("-")
        assert trace_id == parent.split("-")[1] and span_id != parent.split("-")[2]
        assert span.get("tracestate") == expected.get("tracestate")


async def test_a_handler_blocking_the_loop_holds_up_nothing_else(server: agentlog.Server) -> None:
    # A finished task to read while the loop is blocked.
    done = await post_async(server.url, "first")
    task_id = done["result"]["task"]["id"]
    seen: dict[str, float] = {}

    def reader() -> None:
        # From another thread: the server runs on the runtime, not on the blocked loop.
        time.sleep(0.3)
        start = time.monotonic()
        with urllib.request.urlopen(server.url + "healthz", timeout=20) as reply:
            assert reply.status == 200
        got = post(server.url, "GetTask", {"id": task_id})
        assert got["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
        seen["start"], seen["end"] = start, time.monotonic()

    BLOCKED.clear()
    thread = threading.Thread(target=reader)
    thread.start()
    blocked = post_async(server.url, "block")
    other = post_async(server.url, "meanwhile")
    results = await asyncio.wait_for(asyncio.gather(blocked, other), 30)
    await asyncio.to_thread(thread.join, 20)
    # Both reads were answered while the loop was blocked.
    assert BLOCKED[0] < seen["start"] and seen["end"] < BLOCKED[1], (BLOCKED, seen)
    states = [r["result"]["task"]["status"]["state"] for r in results]
    assert states == ["TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED"], results


async def post_async(url: str, text: str) -> dict[str, Any]:
    params = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}}
    return await asyncio.to_thread(post, url, "SendMessage", params)


async def test_serve_refuses_a_public_address_without_allow_anonymous() -> None:
    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "pub")
    with pytest.raises(agentlog.ConfigError, match="allow_anonymous"):
        await agentlog.serve(bridge, "0.0.0.0:0")
    with pytest.raises(agentlog.ConfigError, match="listen address"):
        await agentlog.serve(bridge, "nowhere")
    with pytest.raises(agentlog.ConfigError, match="allow_anonymous"):
        await agentlog.serve(bridge, "127.0.0.1:0", grpc_listen="0.0.0.0:0")
    with pytest.raises(agentlog.ConfigError, match="grpc_listen address"):
        await agentlog.serve(bridge, "127.0.0.1:0", grpc_listen="nowhere")


def default_sigint() -> None:
    """In the child before exec: Ctrl-C as a terminal delivers it, whatever the test runner's own
    SIGINT is (a background job of a non-interactive shell has it ignored, and a child inherits that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_serve_and_the_script_exits_0() -> None:
    agent = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "echo_agent.py"), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        assert agent.stdout is not None
        banner = agent.stdout.readline()
        assert banner.startswith('serving agent "echo" at http://127.0.0.1:'), banner
        url = banner.split(" at ")[1].split(" ")[0]
        answer = post(url, "SendMessage", {"message": {"messageId": "c-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
        assert answer["result"]["task"]["artifacts"][0]["parts"][0]["text"] == "echo: hi"
        started = time.monotonic()
        agent.send_signal(signal.SIGINT)
        out, _ = agent.communicate(timeout=20)
        assert agent.returncode == 0, out
        assert out.strip().endswith("stopped"), out
        assert time.monotonic() - started < 10
    finally:
        agent.kill()


EXITS_WITHOUT_CLEANUP = """
import asyncio, agentlog

async def handle(task):
    await task.complete("ok")

async def main():
    log = await agentlog.open_log("memory://")
    bridge = await agentlog.Bridge.open(log, "exit")
    worker = agentlog.Worker(log, "exit", handle, bridge=bridge)
    await worker.start()
    server = await agentlog.serve(bridge, "127.0.0.1:0")
    answer = await bridge.send_message({"message": {"messageId": "e-1", "role": "ROLE_USER", "parts": [{"text": "x"}]}})
    assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    await bridge.get_task({"id": answer["task"]["id"]})
    # no shutdown, no close: the interpreter exits with all of it running

asyncio.run(main())
"""


def test_a_script_that_exits_without_cleanup_exits_0_every_time() -> None:
    for run in range(20):
        done = subprocess.run(
            [sys.executable, "-c", EXITS_WITHOUT_CLEANUP], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"run {run}: exit {done.returncode}\n{done.stderr}"


@pytest.mark.parametrize("log", ["memory://", "file"])
def test_the_publisher_example_runs(log: str, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'log'}" if log == "file" else log
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "publish.py"), url, "one", "two"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [l.split()[0] for l in lines] == ["published"] * 2 + ["answered"] * 2, lines
    assert all(l.endswith("TASK_STATE_SUBMITTED") for l in lines[:2])
    assert [l.split()[-2:] for l in lines[2:]] == [["TASK_STATE_COMPLETED", "ONE"], ["TASK_STATE_COMPLETED", "TWO"]]
