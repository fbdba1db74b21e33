"""The official MCP Python SDK's server with the demo's `greet` tool, for mcp_vs_python_sdk.py.

The same tool as `agentlog serve --demo` serves (sdk/src/worker/demo_tools.rs): name `greet`,
description "Greets by name", input schema `{"type": "object", "properties": {"name": {"type":
"string"}}}`, result one text block `Hello, <name>!` (`world` when no name is given).

It is the SDK's low-level `Server` (explicit `tools/list` and `tools/call` handlers), so the
tool definition and the result are exactly agentlog's (`MCPServer`'s `@tool` derives its own
schema from the signature: titles, a default). It is also the SDK's thinnest layer, and it does
not validate arguments against the schema (agentlog does), so the comparison does not flatter
agentlog. The app is the SDK's
Streamable HTTP app in the configuration its README recommends for scalable deployments:
`stateless_http=True` and `json_response=True` (no SSE). `get_tool_input_schema` is given so a
2026-07-28 `tools/call` with arguments does not run the `tools/list` handler to find the schema
for the `Mcp-Param-*` header check (its documented shortcut). The default DNS-rebinding
protection for a loopback host stays on (127.0.0.1:* is allowed), as a local server has it.

Run by mcp_vs_python_sdk.py as `python -m uvicorn server:app --app-dir <this dir> ...`.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

GREET_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}}
GREET = types.Tool(name="greet", description="Greets by name", input_schema=GREET_SCHEMA)


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[GREET])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != "greet":
        # What agentlog answers for an unknown tool too: a -32602 protocol error.
        from mcp.shared.exceptions import MCPError

        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    name = (params.arguments or {}).get("name")
    if not isinstance(name, str):
        name = "world"
    return types.CallToolResult(content=[types.TextContent(text=f"Hello, {name}!")])


server = Server(
    "python-sdk-bench",
    version="1",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    get_tool_input_schema=lambda tool: GREET_SCHEMA if tool == "greet" else None,
)
app = server.streamable_http_app(stateless_http=True, json_response=True)
