"""The shapes of the plain data agentlog gives back: A2A 1.0 JSON as TypedDicts (the spec's
field names; a value may hold fields not listed). Inputs take any mapping of the same shape
(``Params``), a TypedDict or a plain dict."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from ._agentlog import TaskContext, ToolCall

Params = Mapping[str, object]
"""A verb's request, an artifact, a card: a mapping in the A2A 1.0 JSON shape."""

Handler = Callable[["TaskContext"], Coroutine[Any, Any, None]]
"""A worker's handler: an ``async def`` taking a TaskContext."""


class Part(TypedDict, total=False):
    text: str
    raw: str
    url: str
    data: Any
    mediaType: str
    filename: str
    metadata: dict[str, Any]

class Message(TypedDict, total=False):
    messageId: str
    role: Literal["ROLE_USER", "ROLE_AGENT"]
    parts: list[Part]
    contextId: str
    taskId: str
    metadata: dict[str, Any]
    extensions: list[str]
    referenceTaskIds: list[str]

class TaskStatus(TypedDict, total=False):
    state: str
    message: Message
    timestamp: str

class Artifact(TypedDict, total=False):
    artifactId: str
    name: str
    description: str
    parts: list[Part]
    metadata: dict[str, Any]
    extensions: list[str]

class Task(TypedDict, total=False):
    id: str
    contextId: str
    status: TaskStatus
    artifacts: list[Artifact]
    history: list[Message]
    metadata: dict[str, Any]

class SendMessageResponse(TypedDict, total=False):
    task: Task
    message: Message

class ListTasksResponse(TypedDict, total=False):
    tasks: list[Task]
    nextPageToken: str
    pageSize: int
    totalSize: int

class TaskStatusUpdateEvent(TypedDict, total=False):
    taskId: str
    contextId: str
    status: TaskStatus
    metadata: dict[str, Any]

class TaskArtifactUpdateEvent(TypedDict, total=False):
    taskId: str
    contextId: str
    artifact: Artifact
    append: bool
    lastChunk: bool
    metadata: dict[str, Any]

class StreamResponse(TypedDict, total=False):
    task: Task
    message: Message
    statusUpdate: TaskStatusUpdateEvent
    artifactUpdate: TaskArtifactUpdateEvent

class StreamEvent(TypedDict):
    position: int
    last: bool
    event: StreamResponse


# ---- MCP -------------------------------------------------------------------------------


class ToolAnnotations(TypedDict, total=False):
    title: str
    readOnlyHint: bool
    destructiveHint: bool
    idempotentHint: bool
    openWorldHint: bool

class Tool(TypedDict, total=False):
    """A tool definition, as ``McpBridge.open`` and ``agentlog serve --tools FILE`` take it:
    the MCP ``Tool`` fields, plus where its calls go (``agent``, default ``mcp.<name>``),
    ``taskSupport`` (``forbidden``, ``optional``, ``required``), ``inputBeforeTask`` (with
    the Tasks extension declared, the first round runs as a sync call: a tool that asks
    answers ``input_required``, and the retry answering it becomes the task) and
    ``requiredCapabilities``. ``name`` and ``inputSchema`` are required."""

    name: str
    title: str
    description: str
    inputSchema: dict[str, Any]
    outputSchema: dict[str, Any]
    annotations: ToolAnnotations
    agent: str
    taskSupport: Literal["forbidden", "optional", "required"]
    inputBeforeTask: bool
    requiredCapabilities: dict[str, Any]

class ContentBlock(TypedDict, total=False):
    """One block of a tool's answer: ``{"type": "text", "text": ...}``, ``image``/``audio``
    (``data`` base64, ``mimeType``), ``resource_link``, ``resource``."""

    type: Literal["text", "image", "audio", "resource_link", "resource"]
    text: str
    data: str
    mimeType: str
    uri: str
    name: str
    resource: dict[str, Any]
    annotations: dict[str, Any]

class CallToolResult(TypedDict, total=False):
    """A tool's answer: ``content`` (required, may be empty), ``structuredContent``
    (matching the tool's ``outputSchema``), ``isError`` (a tool failure the model reads;
    raising in the handler is a protocol error instead)."""

    content: list[ContentBlock]
    structuredContent: Any
    isError: bool

ToolHandler = Callable[["ToolCall"], Coroutine[Any, Any, "CallToolResult | Params"]]
"""A tool's handler: an ``async def`` taking a ToolCall and returning a CallToolResult."""

PromptHandler = Callable[["ToolCall"], Coroutine[Any, Any, Params]]
"""A prompt's handler: an ``async def`` taking a ToolCall (``arguments``: the prompt's) and
returning a GetPromptResult dict (``{"description"?, "messages": [...]}``)."""

ResourceHandler = Callable[["ToolCall"], Coroutine[Any, Any, "Sequence[Params]"]]
"""A resource template's handler: an ``async def`` taking a ToolCall (``arguments``: ``uri``
and each template variable's value) and returning the contents (``[{"uri", "mimeType"?,
"text" | "blob"}]``)."""

CompletionHandler = Callable[["ToolCall"], Coroutine[Any, Any, "Sequence[str] | Params"]]
"""A completer: an ``async def`` taking a ToolCall (``arguments``: ``argument``, ``value``,
``context``) and returning the values, or ``{"values", "total"?, "hasMore"?}``."""

class NotificationClaims(TypedDict):
    """The claims of a push notification's JWT, verified (``agentlog.verify_notification``):
    the agent (``iss``), the receiver's URL (``aud``), when it was made and until when it holds
    (``iat``, ``exp``, Unix seconds), its unique id (``jti``: drop one seen before), the task,
    and the SHA-256 of the body (hex)."""

    iss: str
    aud: str
    iat: int
    exp: int
    jti: str
    taskId: str
    request_body_sha256: str


__all__ = [
    "Artifact",
    "CallToolResult",
    "ContentBlock",
    "Handler",
    "ListTasksResponse",
    "Message",
    "NotificationClaims",
    "Params",
    "Part",
    "SendMessageResponse",
    "StreamEvent",
    "StreamResponse",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskStatus",
    "TaskStatusUpdateEvent",
    "Tool",
    "ToolAnnotations",
    "ToolHandler",
    "PromptHandler",
    "ResourceHandler",
    "CompletionHandler",
]
