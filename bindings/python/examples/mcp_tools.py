"""MCP tools in Python: an McpBridge, a worker of Python tool handlers and the HTTP server
serving /mcp beside an A2A agent, on one log.

    python examples/mcp_tools.py [--listen 127.0.0.1:8080] [--log file:///tmp/tools-log]

Prints ``serving MCP tools at http://.../mcp`` once ready; any MCP client can call them (the
official ``mcp`` client, curl). ``greet {name}`` answers ``Hello, <name>!`` (reporting
progress first), ``add {a, b}`` answers the sum as structured content, and ``divide {a, b}``
reports dividing by zero as a tool error. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import asyncio

import agentlog
from agentlog import ToolCall
from agentlog.types import CallToolResult, Tool

AGENT = "mcp.examples"
NUMBERS = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}
TOOLS: list[Tool] = [
    {
        "name": "greet",
        "description": "Says hello",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        "agent": AGENT,
    },
    {"name": "add", "description": "a + b", "inputSchema": NUMBERS, "agent": AGENT},
    {"name": "divide", "description": "a / b", "inputSchema": NUMBERS, "agent": AGENT},
]


async def greet(call: ToolCall) -> CallToolResult:
    await call.task.report(1, 2, "looking them up")
    await call.task.report(2, 2)
    return {"content": [{"type": "text", "text": f"Hello, {call.arguments['name']}!"}]}


async def add(call: ToolCall) -> CallToolResult:
    total = call.arguments["a"] + call.arguments["b"]
    return {"content": [{"type": "text", "text": str(total)}], "structuredContent": {"sum": total}}


async def divide(call: ToolCall) -> CallToolResult:
    if call.arguments["b"] == 0:
        # A tool failure the model reads (raising would be a protocol error instead).
        return {"content": [{"type": "text", "text": "cannot divide by zero"}], "isError": True}
    return {"content": [{"type": "text", "text": str(call.arguments["a"] / call.arguments["b"])}]}


async def main(listen: str, log_url: str) -> None:
    log = await agentlog.open_log(log_url)
    bridge = await agentlog.Bridge.open(log, "tools-host")
    mcp = await agentlog.McpBridge.open(log, TOOLS, name="python-tools")
    handlers = {"greet": greet, "add": add, "divide": divide}
    async with agentlog.Worker(log, AGENT, tools=handlers, bridge=mcp):
        async with await agentlog.serve(bridge, listen, mcp=mcp) as server:
            print(f"serving MCP tools at {server.mcp_url} (log: {log_url})", flush=True)
            await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:8080", help="IP:PORT (port 0: a free one)")
    parser.add_argument("--log", default="memory://", help="the log URL (file://, memory://, iggy://)")
    args = parser.parse_args()
    try:
        asyncio.run(main(args.listen, args.log))
    except KeyboardInterrupt:
        print("stopped", flush=True)
