"""The shapes of the plain data agentlog gives back: A2A 1.0 JSON as TypedDicts (the spec's
field names; a value may hold fields not listed). Inputs take any mapping of the same shape
(``Params``), a TypedDict or a plain dict."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from ._agentlog import TaskContext

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


__all__ = [
    "Artifact",
    "Handler",
    "ListTasksResponse",
    "Message",
    "Params",
    "Part",
    "SendMessageResponse",
    "StreamEvent",
    "StreamResponse",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskStatus",
    "TaskStatusUpdateEvent",
]
