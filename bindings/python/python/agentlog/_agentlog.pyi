# Stubs of the native module (bindings/python/src). Checked against the built module by
# stubtest and used by `mypy --strict` over the package, the tests and the examples
# (bindings/python/run-tests.sh), so they cannot drift from it.
#
# Values are plain data in the A2A 1.0 JSON shape, described by the TypedDicts of
# agentlog.types; inputs take any mapping of that shape (`Params`).

import os
from collections.abc import Awaitable, Mapping, Sequence
from types import ModuleType, TracebackType
from typing import Any, ClassVar, Literal, final

__version__: str

from .types import (
    CallToolResult,
    Handler,
    ListTasksResponse,
    Message,
    NotificationClaims,
    Params,
    SendMessageResponse,
    StreamEvent,
    Task,
    CompletionHandler,
    PromptHandler,
    ResourceHandler,
    Tool,
    ToolHandler,
)

class Error(Exception):
    kind: ClassVar[str]
    code: ClassVar[int]
    retryable: ClassVar[bool]
    details: dict[str, str]

class ParseError(Error): ...
class InvalidRequestError(Error): ...
class MethodNotFoundError(Error): ...
class InvalidParamsError(Error): ...
class TaskNotFoundError(Error): ...
class TaskNotCancelableError(Error): ...
class PushNotificationNotSupportedError(Error): ...
class UnsupportedOperationError(Error): ...
class ContentTypeNotSupportedError(Error): ...
class VersionNotSupportedError(Error): ...
class ExtendedAgentCardNotConfiguredError(Error): ...
class ExtensionSupportRequiredError(Error): ...
class UnauthenticatedError(Error): ...
class PermissionDeniedError(Error): ...
class LoopDetectedError(Error): ...
class HeaderMismatchError(Error): ...
class DeadlineExceededError(Error): ...
class UnavailableError(Error): ...
class OverloadedError(Error): ...
class CorruptError(Error): ...
class ConfigError(Error): ...
class InternalError(Error): ...
class ToolFailedError(Error): ...

class WireError(Error):
    # The wire crate's kind (`truncated`, `invalid_json`, ...), set on each instance.
    kind: str  # type: ignore[misc]

@final
class Caller:
    def __new__(cls, principal: str = ..., tenant: str = ...) -> Caller: ...
    @property
    def principal(self) -> str: ...
    @property
    def tenant(self) -> str: ...

@final
class Log:
    def close(self) -> Awaitable[None]: ...

def open_log(url: str) -> Awaitable[Log]: ...

def verify_notification(
    jwt: str,
    body: bytes,
    jwks: str | Mapping[str, Any],
    audience: str,
    issuer: str | None = None,
    now: int | None = None,
) -> NotificationClaims: ...

@final
class EventStream:
    def __aiter__(self) -> EventStream: ...
    def __anext__(self) -> Awaitable[StreamEvent]: ...
    def aclose(self) -> Awaitable[None]: ...

@final
class RpcFrames:
    def __aiter__(self) -> RpcFrames: ...
    def __anext__(self) -> Awaitable[bytes]: ...
    def aclose(self) -> Awaitable[None]: ...

@final
class Bridge:
    @staticmethod
    def open(
        log: Log,
        agent: str,
        *,
        card: Params | str | os.PathLike[str] | None = None,
        blocking_timeout: float | None = None,
        retention: float | None = None,
    ) -> Awaitable[Bridge]: ...
    @property
    def agent_card(self) -> dict[str, Any]: ...
    @property
    def agent(self) -> str: ...
    def send_message(
        self, request: Params, *, caller: Caller | None = None
    ) -> Awaitable[SendMessageResponse]: ...
    def get_task(self, request: Params, *, caller: Caller | None = None) -> Awaitable[Task]: ...
    def cancel_task(self, request: Params, *, caller: Caller | None = None) -> Awaitable[Task]: ...
    def list_tasks(
        self, request: Params | None = None, *, caller: Caller | None = None
    ) -> Awaitable[ListTasksResponse]: ...
    def send_streaming_message(
        self, request: Params, *, caller: Caller | None = None, resume_after: int | None = None
    ) -> EventStream: ...
    def subscribe_to_task(
        self, request: Params, *, caller: Caller | None = None, resume_after: int | None = None
    ) -> EventStream: ...
    def handle_rpc(
        self,
        body: bytes | str,
        *,
        caller: Caller | None = None,
        version: str | None = None,
        extensions: Sequence[str] = ...,
        resume_after: int | None = None,
        trace: Mapping[str, str] | None = None,
    ) -> Awaitable[bytes | RpcFrames]: ...
    def _bench_get_task(self, request: Params, calls: int) -> Awaitable[float]: ...

@final
class TaskContext:
    @property
    def task_id(self) -> str: ...
    @property
    def context_id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def message(self) -> Message: ...
    @property
    def history(self) -> list[Message]: ...
    @property
    def skill(self) -> str | None: ...
    @property
    def extensions(self) -> list[str]: ...
    @property
    def caller(self) -> Caller: ...
    @property
    def attempt(self) -> int: ...
    @property
    def is_retry(self) -> bool: ...
    @property
    def idempotency_key(self) -> str: ...
    @property
    def hops(self) -> list[str]: ...
    @property
    def trace_context(self) -> dict[str, str] | None: ...
    @property
    def span_context(self) -> dict[str, str] | None: ...
    @property
    def cancelled(self) -> bool: ...
    def wait_cancelled(self) -> Awaitable[None]: ...
    def working(self, text: str | None = None) -> Awaitable[None]: ...
    def report(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> Awaitable[None]: ...
    def log(
        self,
        # MCP's levels (RFC 5424's), least severe first.
        level: Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"],
        data: Any,
        logger: str | None = None,
    ) -> Awaitable[None]: ...
    def artifact(
        self, artifact: Params, *, append: bool = False, last_chunk: bool = False
    ) -> Awaitable[None]: ...
    def input_required(self, text: str) -> Awaitable[None]: ...
    def auth_required(self, text: str) -> Awaitable[None]: ...
    def complete(self, text: str | None = None) -> Awaitable[None]: ...
    def fail(self, text: str) -> Awaitable[None]: ...
    def reject(self, text: str) -> Awaitable[None]: ...
    def reply(self, parts: Sequence[Params]) -> Awaitable[None]: ...
    def reply_text(self, text: str) -> Awaitable[None]: ...
    def follow_up(self) -> Awaitable[Message | None]: ...
    def wait_follow_up(self) -> Awaitable[Message | None]: ...

@final
class Worker:
    def __new__(
        cls,
        log: Log,
        agent: str,
        handler: Handler | None = None,
        *,
        tools: Mapping[str, ToolHandler] | None = None,
        skills: Mapping[str, Handler] | None = None,
        concurrency: int = 64,
        bridge: Bridge | McpBridge | None = None,
        shutdown_timeout: float = 10.0,
        input_timeout: float | Mapping[str, float] | None = None,
        prompts: Mapping[str, PromptHandler] | None = None,
        resources: Mapping[str, ResourceHandler] | None = None,
        prompt_completions: Mapping[str, CompletionHandler] | None = None,
        resource_completions: Mapping[str, CompletionHandler] | None = None,
    ) -> Worker: ...
    def start(self) -> Awaitable[None]: ...
    def shutdown(self) -> Awaitable[None]: ...
    @property
    def running(self) -> bool: ...
    def __aenter__(self) -> Awaitable[Worker]: ...
    def __aexit__(
        self,
        *_exc: type[BaseException] | BaseException | TracebackType | None,
    ) -> Awaitable[None]: ...

@final
class McpReply:
    @property
    def status(self) -> int: ...
    @property
    def content_type(self) -> str | None: ...
    @property
    def body(self) -> bytes | None: ...
    @property
    def frames(self) -> RpcFrames | None: ...

@final
class McpBridge:
    @staticmethod
    def open(
        log: Log,
        tools: Sequence[Params] | Params,
        *,
        name: str | None = None,
        version: str | None = None,
        instructions: str | None = None,
    ) -> Awaitable[McpBridge]: ...
    def reload(self, definitions: Sequence[Params] | Params) -> Awaitable[dict[str, bool]]: ...
    @property
    def tools(self) -> list[Tool]: ...
    @property
    def agents(self) -> list[str]: ...
    def handle_rpc(
        self,
        body: bytes | str,
        *,
        headers: Mapping[str, str] | None = None,
        caller: Caller | None = None,
        accepts_stream: bool = False,
    ) -> Awaitable[McpReply]: ...

@final
class ToolCall:
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> dict[str, Any]: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def input_responses(self) -> dict[str, Any] | None: ...
    @property
    def task(self) -> TaskContext: ...
    def ask(self, text: str, input_requests: Params) -> Awaitable[None]: ...

@final
class Server:
    @property
    def url(self) -> str: ...
    @property
    def mcp_url(self) -> str | None: ...
    @property
    def grpc_url(self) -> str | None: ...
    def close(self) -> Awaitable[None]: ...
    def serve_forever(self) -> Awaitable[None]: ...
    def __aenter__(self) -> Awaitable[Server]: ...
    def __aexit__(
        self,
        *_exc: type[BaseException] | BaseException | TracebackType | None,
    ) -> Awaitable[None]: ...

def serve(
    bridge: Bridge,
    listen: str = ...,
    *,
    public_url: str | None = None,
    allow_anonymous: bool = False,
    max_connections: int = ...,
    mcp: McpBridge | None = None,
    grpc_listen: str | None = None,
) -> Awaitable[Server]: ...
def _at_exit() -> None: ...

wire: ModuleType

__all__ = [
    "__version__",
    "Error",
    "ParseError",
    "InvalidRequestError",
    "MethodNotFoundError",
    "InvalidParamsError",
    "TaskNotFoundError",
    "TaskNotCancelableError",
    "PushNotificationNotSupportedError",
    "UnsupportedOperationError",
    "ContentTypeNotSupportedError",
    "VersionNotSupportedError",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "UnauthenticatedError",
    "PermissionDeniedError",
    "LoopDetectedError",
    "HeaderMismatchError",
    "DeadlineExceededError",
    "UnavailableError",
    "OverloadedError",
    "CorruptError",
    "ConfigError",
    "InternalError",
    "ToolFailedError",
    "WireError",
    "Caller",
    "Log",
    "open_log",
    "verify_notification",
    "Bridge",
    "EventStream",
    "RpcFrames",
    "Worker",
    "TaskContext",
    "McpBridge",
    "McpReply",
    "ToolCall",
    "Server",
    "serve",
    "_at_exit",
    "wire",
]
