"""A Python program exports its spans over OTLP when the standard variables say so, through the
SDK's own export (started at import, flushed by the exit hook): the request span of a served
bridge and the turn of a Python handler, its child, as a receiver here decodes them with the
OpenTelemetry protobuf definitions. A handler's calls to bridges in its process carry its turn
on (the context of the asyncio task running it); a request's own context (`handle_rpc`'s `trace`,
`McpBridge.handle_rpc`'s headers) wins over it."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import subprocess
import sys
import textwrap
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any, cast

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

import agentlog
from agentlog import TaskContext, ToolCall
from agentlog.types import CallToolResult

from conftest import agent_name, message

# The program under test: a bridge served over HTTP with a Python worker, called once with a
# traceparent, then a normal exit (the exit hook sends the spans the batch has kept).
PROGRAM = textwrap.dedent(
    """
    import asyncio, json, sys, urllib.request
    import agentlog

    async def handle(task):
        await task.complete("traced" if task.span_context else "untraced")

    async def main():
        log = await agentlog.open_log("memory://")
        bridge = await agentlog.Bridge.open(log, "telemetry")
        async with agentlog.Worker(log, "telemetry", handle, bridge=bridge):
            async with await agentlog.serve(bridge, "127.0.0.1:0") as server:
                body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
                    "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}})
                request = urllib.request.Request(server.url, body.encode(), {
                    "Content-Type": "application/json", "A2A-Version": "1.0",
                    "traceparent": sys.argv[1]})
                reply = await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=30).read())
                print(json.loads(reply)["result"]["task"]["status"]["state"])

    asyncio.run(main())
    """
)


class Receiver:
    """An OTLP/HTTP trace receiver on a loopback port: every span it is sent, decoded."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict[str, Any], Span]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                ok = self.path == "/v1/traces" and self.headers.get("Content-Type") == "application/x-protobuf"
                if ok:
                    request = ExportTraceServiceRequest.FromString(body)
                    for resource_spans in request.resource_spans:
                        resource = values(resource_spans.resource.attributes)
                        for scope_spans in resource_spans.scope_spans:
                            receiver.spans.extend((resource, span) for span in scope_spans.spans)
                answer = ExportTraceServiceResponse().SerializeToString() if ok else b""
                self.send_response(200 if ok else 415)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


def values(pairs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pair: KeyValue
    for pair in pairs:
        which = pair.value.WhichOneof("value")
        out[pair.key] = getattr(pair.value, which) if which else None
    return out


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.server.shutdown()
    found.server.server_close()


def run(env: dict[str, str], traceparent: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run([sys.executable, "-c", PROGRAM, traceparent], env={**base, **env},
                          capture_output=True, text=True, timeout=120)


def test_a_python_workers_turn_is_exported_as_the_request_spans_child(receiver: Receiver) -> None:
    trace_id, parent_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    # A batch delay longer than the program runs: what arrives was sent by the exit hook.
    done = run({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "python-worker",
                "OTEL_BSP_SCHEDULE_DELAY": "600000"}, f"00-{trace_id}-{parent_id}-01")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "TASK_STATE_COMPLETED", done.stdout
    spans = [(resource, span) for resource, span in receiver.spans if span.trace_id.hex() == trace_id]
    assert spans and all(resource["service.name"] == "python-worker" and resource["agentlog.command"] == "python"
                         for resource, _ in spans), spans
    [request] = [s for _, s in spans if s.name == "SendMessage"]
    assert request.parent_span_id.hex() == parent_id and request.kind == Span.SPAN_KIND_SERVER
    [turn] = [s for _, s in spans if s.name == "turn"]
    assert turn.parent_span_id.hex() == request.span_id.hex() and turn.kind == Span.SPAN_KIND_CONSUMER
    assert values(turn.attributes)["agentlog.outcome"] == "done"
    ids = {s.span_id.hex() for _, s in spans}
    assert all(s.parent_span_id.hex() in ids | {parent_id} for _, s in spans), spans


def test_without_the_variables_nothing_is_exported_and_a_bad_protocol_only_warns(receiver: Receiver) -> None:
    traceparent = f"00-{uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-01"
    quiet = run({}, traceparent)
    assert quiet.returncode == 0 and quiet.stdout.strip() == "TASK_STATE_COMPLETED", quiet.stderr
    grpc = run({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, traceparent)
    assert grpc.returncode == 0 and grpc.stdout.strip() == "TASK_STATE_COMPLETED", grpc.stderr
    assert "RuntimeWarning: agentlog: not exporting traces" in grpc.stderr, grpc.stderr
    assert "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported" in grpc.stderr, grpc.stderr
    assert receiver.spans == []


async def test_a_handlers_calls_in_this_process_carry_its_turn_on() -> None:
    """A handler calling other agents through a Bridge or an McpBridge of this process (a typed
    verb, handle_rpc, a stream, from a task it starts): each command carries the handler's turn,
    as the callee's turn reads it back from the log; a turn that came untraced carries none."""
    log = await agentlog.open_log("memory://")
    caller, callee, tool_agent = agent_name(), agent_name(), agent_name()
    caller_bridge = await agentlog.Bridge.open(log, caller)
    callee_bridge = await agentlog.Bridge.open(log, callee)
    mcp = await agentlog.McpBridge.open(log, [{"name": "seen", "inputSchema": {"type": "object"}, "agent": tool_agent}])
    turns: list[dict[str, str] | None] = []
    seen: list[dict[str, str] | None] = []

    async def answer(task: TaskContext) -> None:
        seen.append(task.trace_context)
        await task.complete("answered")

    async def tool(call: ToolCall) -> CallToolResult:
        seen.append(call.task.trace_context)
        return {"content": [{"type": "text", "text": "seen"}]}

    async def calling(task: TaskContext) -> None:
        turns.append(task.span_context)
        await callee_bridge.send_message(message("typed"))
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("rpc")})
        await callee_bridge.handle_rpc(body, version="1.0")
        _ = [e async for e in callee_bridge.send_streaming_message(message("streamed"))]

        async def later() -> None:
            await asyncio.sleep(0)
            await callee_bridge.send_message(message("from a task it started"))

        await asyncio.create_task(later())
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "seen", "arguments": {}}}
        reply = await mcp.handle_rpc(json.dumps(call))
        assert reply.status == 200, reply.body
        await task.complete("called")

    parent = f"00-{uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-01"
    async with (
        agentlog.Worker(log, caller, calling, bridge=caller_bridge),
        agentlog.Worker(log, callee, answer, bridge=callee_bridge),
        agentlog.Worker(log, tool_agent, tools={"seen": tool}, bridge=mcp),
        await agentlog.serve(caller_bridge, "127.0.0.1:0") as server,
    ):
        for headers in [{"traceparent": parent, "tracestate": "a=1"}, {}]:
            params = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "call"}]}}
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}).encode()
            request = urllib.request.Request(
                server.url, body, {"Content-Type": "application/json", "A2A-Version": "1.0", **headers})
            reply = await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=30).read())
            assert json.loads(reply)["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", reply
        # Outside any handler, nothing is carried.
        await callee_bridge.send_message(message("outside"))
    traced, untraced = turns
    assert traced is not None and untraced is None
    assert traced["traceparent"].split("-")[1] == parent.split("-")[1] and traced.get("tracestate") == "a=1"
    # Five calls in the traced turn, five in the untraced one, then the one from outside.
    assert seen == [traced] * 5 + [None] * 5 + [None], seen
    await log.close()


async def test_handle_rpc_reads_the_callers_trace_context() -> None:
    """`Bridge.handle_rpc(trace=...)` and `McpBridge.handle_rpc(headers=...)` take the caller's
    `traceparent`/`tracestate`, as the HTTP router takes a request's headers: the callee's turn
    reads it from its command. A bad one is ignored. In a handler, the caller's own wins over
    the turn's, which applies when the caller gave none (or a bad one); an MCP header wins over
    `params._meta`."""
    log = await agentlog.open_log("memory://")
    caller, callee, tool_agent = agent_name(), agent_name(), agent_name()
    caller_bridge = await agentlog.Bridge.open(log, caller)
    callee_bridge = await agentlog.Bridge.open(log, callee)
    mcp = await agentlog.McpBridge.open(log, [{"name": "seen", "inputSchema": {"type": "object"}, "agent": tool_agent}])
    seen: list[dict[str, str] | None] = []
    turns: list[dict[str, str] | None] = []

    def parent() -> str:
        return f"00-{uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-01"

    bad = "00-nope-01"
    own, own_mcp, meta = parent(), parent(), parent()

    async def answer(task: TaskContext) -> None:
        seen.append(task.trace_context)
        await task.complete("answered")

    async def tool(call: ToolCall) -> CallToolResult:
        seen.append(call.task.trace_context)
        return {"content": [{"type": "text", "text": "seen"}]}

    async def a2a(trace: dict[str, str] | None) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("rpc")})
        reply = await callee_bridge.handle_rpc(body, version="1.0", trace=trace)
        assert isinstance(reply, bytes), reply
        assert json.loads(reply)["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", reply

    async def tools_call(headers: dict[str, str], meta_parent: str | None = None) -> None:
        params: dict[str, Any] = {"name": "seen", "arguments": {}}
        if meta_parent:
            params["_meta"] = {"traceparent": meta_parent}
        reply = await mcp.handle_rpc(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}),
                                     headers=headers)
        assert reply.status == 200, reply.body

    async def calling(task: TaskContext) -> None:
        turns.append(task.span_context)
        await a2a({"traceparent": own})
        await a2a({"traceparent": bad})
        await tools_call({"traceparent": own_mcp})
        await tools_call({"traceparent": bad}, meta)
        await task.complete("called")

    async with (
        agentlog.Worker(log, caller, calling, bridge=caller_bridge),
        agentlog.Worker(log, callee, answer, bridge=callee_bridge),
        agentlog.Worker(log, tool_agent, tools={"seen": tool}, bridge=mcp),
    ):
        # From outside any handler: the request's own, or none.
        await a2a({"Content-Type": "application/json", "TraceParent": own, "tracestate": "a=1"})
        await a2a({"traceparent": bad, "tracestate": "a=1"})
        await a2a(None)
        await tools_call({"Traceparent": own_mcp, "Tracestate": "m=1"}, meta)
        await tools_call({"traceparent": bad})
        await tools_call({"traceparent": bad}, meta)
        # From a handler whose turn is traced (the caller's parent, as a header would be).
        turn_parent = parent()
        await caller_bridge.send_message(message("call"))  # an untraced turn first: none carried
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("traced call")})
        reply = await caller_bridge.handle_rpc(body, version="1.0", trace={"traceparent": turn_parent})
        assert isinstance(reply, bytes), reply
        assert json.loads(reply)["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", reply
        # A value that is not text is refused clearly, before anything is sent.
        with pytest.raises(TypeError, match="trace must be a mapping of str to str"):
            await callee_bridge.handle_rpc(body, trace=cast(Any, {"traceparent": 1}))
    untraced, traced = turns
    assert untraced is None and traced is not None
    assert traced["traceparent"].split("-")[1] == turn_parent.split("-")[1]
    outside = [{"traceparent": own, "tracestate": "a=1"}, None, None, {"traceparent": own_mcp, "tracestate": "m=1"},
               None, {"traceparent": meta}]
    # The untraced turn: its own, none, its own, _meta's; the traced one: its own, the turn's
    # (the bad one ignored), its own, the turn's (before _meta's, as a Rust handler's call).
    inside = [{"traceparent": own}, None, {"traceparent": own_mcp}, {"traceparent": meta},
              {"traceparent": own}, traced, {"traceparent": own_mcp}, traced]
    assert seen == outside + inside, seen
    await log.close()
