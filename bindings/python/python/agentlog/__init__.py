"""agentlog from Python: publish A2A tasks onto a durable log, run asyncio workers that answer
them, serve A2A over HTTP, and serve MCP tools from the log (``McpBridge``, ``Worker(log,
agent, tools={...})``, ``serve(..., mcp=...)``), over the agentlog Rust core.

Everything is asyncio-native: ``await agentlog.open_log(url)``, ``await Bridge.open(log,
agent)``, ``async with Worker(log, agent, handler)``, ``await agentlog.serve(bridge)``. Values
are plain data (dicts and lists in the A2A 1.0 JSON shape). Every error is an
``agentlog.Error`` with ``kind``, ``code`` (JSON-RPC) and ``retryable``, of a subclass per
kind (``TaskNotFoundError``, ``InvalidParamsError``, ...). ``agentlog.wire`` has the contract
functions the shared fixtures exercise.
"""

import atexit

from . import types, wire
from ._agentlog import (
    Bridge,
    Caller,
    ConfigError,
    ContentTypeNotSupportedError,
    CorruptError,
    DeadlineExceededError,
    Error,
    EventStream,
    ExtendedAgentCardNotConfiguredError,
    ExtensionSupportRequiredError,
    HeaderMismatchError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    Log,
    LoopDetectedError,
    McpBridge,
    McpReply,
    MethodNotFoundError,
    OverloadedError,
    ParseError,
    PermissionDeniedError,
    PushNotificationNotSupportedError,
    RpcFrames,
    Server,
    TaskContext,
    TaskNotCancelableError,
    TaskNotFoundError,
    ToolFailedError,
    ToolCall,
    UnauthenticatedError,
    UnavailableError,
    UnsupportedOperationError,
    VersionNotSupportedError,
    WireError,
    Worker,
    __version__,
    _at_exit,
    open_log,
    serve,
    verify_notification,
)

# At interpreter exit, before finalisation: stop servers and workers still running and let
# the runtime's threads finish what they hold (bindings notes 3.5: without it a script that
# just returns from asyncio.run could crash at exit).
atexit.register(_at_exit)

__all__ = [
    "Bridge",
    "Caller",
    "ConfigError",
    "ContentTypeNotSupportedError",
    "CorruptError",
    "DeadlineExceededError",
    "Error",
    "EventStream",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "HeaderMismatchError",
    "InternalError",
    "InvalidParamsError",
    "InvalidRequestError",
    "Log",
    "LoopDetectedError",
    "McpBridge",
    "McpReply",
    "MethodNotFoundError",
    "OverloadedError",
    "ParseError",
    "PermissionDeniedError",
    "PushNotificationNotSupportedError",
    "RpcFrames",
    "Server",
    "TaskContext",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "ToolFailedError",
    "ToolCall",
    "UnauthenticatedError",
    "UnavailableError",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
    "WireError",
    "Worker",
    "__version__",
    "open_log",
    "serve",
    "types",
    "verify_notification",
    "wire",
]
