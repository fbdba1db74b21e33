//! Tasks, messages, parts, artifacts, their events and the two answers that carry them.

use agentlog_wire::TaskState;
use agentlog_wire::a2a::{
    Artifact, Message, Part, PartContent, Role, SendMessageResponse, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent,
};

use super::{
    from_timestamp, from_value, invalid, metadata_from, metadata_to, optional, required, text,
    to_timestamp, to_value,
};
use crate::error::{Error, Result};
use crate::grpc::proto as pb;

pub(super) fn role_to(role: Role) -> i32 {
    match role {
        Role::Unspecified => pb::Role::Unspecified,
        Role::User => pb::Role::User,
        Role::Agent => pb::Role::Agent,
    }
    .into()
}

pub(super) fn role_from(what: &str, role: i32) -> Result<Role> {
    match pb::Role::try_from(role) {
        Ok(pb::Role::Unspecified) => Ok(Role::Unspecified),
        Ok(pb::Role::User) => Ok(Role::User),
        Ok(pb::Role::Agent) => Ok(Role::Agent),
        Err(_) => Err(invalid(what, format_args!("unknown role {role}"))),
    }
}

/// The proto's `TaskState` numbers are the wire's pinned codes.
pub(super) fn state_to(state: TaskState) -> i32 {
    i32::from(state.code())
}

pub(super) fn state_from(what: &str, state: i32) -> Result<TaskState> {
    u8::try_from(state)
        .ok()
        .and_then(TaskState::from_code)
        .ok_or_else(|| invalid(what, format_args!("unknown task state {state}")))
}

impl From<Part> for pb::Part {
    fn from(part: Part) -> Self {
        let content = match part.content {
            PartContent::Text(t) => pb::part::Content::Text(t),
            PartContent::Raw(bytes) => pb::part::Content::Raw(bytes),
            PartContent::Url(url) => pb::part::Content::Url(url),
            PartContent::Data(data) => pb::part::Content::Data(to_value(data)),
        };
        pb::Part {
            metadata: metadata_to(part.metadata),
            filename: text(part.filename),
            media_type: text(part.media_type),
            content: Some(content),
        }
    }
}

impl TryFrom<pb::Part> for Part {
    type Error = Error;

    fn try_from(part: pb::Part) -> Result<Self> {
        let content = match required("Part.content", part.content)? {
            pb::part::Content::Text(t) => PartContent::Text(t),
            pb::part::Content::Raw(bytes) => PartContent::Raw(bytes),
            pb::part::Content::Url(url) => PartContent::Url(url),
            pb::part::Content::Data(data) => PartContent::Data(from_value("Part.data", data)?),
        };
        Ok(Part {
            content,
            metadata: metadata_from("Part.metadata", part.metadata)?,
            filename: optional(part.filename),
            media_type: optional(part.media_type),
        })
    }
}

impl From<Message> for pb::Message {
    fn from(m: Message) -> Self {
        pb::Message {
            message_id: m.message_id,
            context_id: text(m.context_id),
            task_id: text(m.task_id),
            role: role_to(m.role),
            parts: m.parts.into_iter().map(Into::into).collect(),
            metadata: metadata_to(m.metadata),
            extensions: m.extensions,
            reference_task_ids: m.reference_task_ids,
        }
    }
}

impl TryFrom<pb::Message> for Message {
    type Error = Error;

    fn try_from(m: pb::Message) -> Result<Self> {
        Ok(Message {
            message_id: m.message_id,
            context_id: optional(m.context_id),
            task_id: optional(m.task_id),
            role: role_from("Message.role", m.role)?,
            parts: m
                .parts
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_>>()?,
            metadata: metadata_from("Message.metadata", m.metadata)?,
            extensions: m.extensions,
            reference_task_ids: m.reference_task_ids,
        })
    }
}

impl From<TaskStatus> for pb::TaskStatus {
    fn from(s: TaskStatus) -> Self {
        pb::TaskStatus {
            state: state_to(s.state),
            message: s.message.map(Into::into),
            timestamp: s.timestamp.as_deref().and_then(to_timestamp),
        }
    }
}

impl TryFrom<pb::TaskStatus> for TaskStatus {
    type Error = Error;

    fn try_from(s: pb::TaskStatus) -> Result<Self> {
        Ok(TaskStatus {
            state: state_from("TaskStatus.state", s.state)?,
            message: s.message.map(TryInto::try_into).transpose()?,
            timestamp: s
                .timestamp
                .map(|t| from_timestamp("TaskStatus.timestamp", t))
                .transpose()?,
        })
    }
}

impl From<Artifact> for pb::Artifact {
    fn from(a: Artifact) -> Self {
        pb::Artifact {
            artifact_id: a.artifact_id,
            name: text(a.name),
            description: text(a.description),
            parts: a.parts.into_iter().map(Into::into).collect(),
            metadata: metadata_to(a.metadata),
            extensions: a.extensions,
        }
    }
}

impl TryFrom<pb::Artifact> for Artifact {
    type Error = Error;

    fn try_from(a: pb::Artifact) -> Result<Self> {
        Ok(Artifact {
            artifact_id: a.artifact_id,
            name: optional(a.name),
            description: optional(a.description),
            parts: a
                .parts
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_>>()?,
            metadata: metadata_from("Artifact.metadata", a.metadata)?,
            extensions: a.extensions,
        })
    }
}

impl From<Task> for pb::Task {
    fn from(t: Task) -> Self {
        pb::Task {
            id: t.id,
            context_id: t.context_id,
            status: Some(t.status.into()),
            artifacts: t.artifacts.into_iter().map(Into::into).collect(),
            history: t.history.into_iter().map(Into::into).collect(),
            metadata: metadata_to(t.metadata),
        }
    }
}

impl TryFrom<pb::Task> for Task {
    type Error = Error;

    fn try_from(t: pb::Task) -> Result<Self> {
        Ok(Task {
            id: t.id,
            context_id: t.context_id,
            status: required("Task.status", t.status)?.try_into()?,
            artifacts: t
                .artifacts
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_>>()?,
            history: t
                .history
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_>>()?,
            metadata: metadata_from("Task.metadata", t.metadata)?,
        })
    }
}

impl From<TaskStatusUpdateEvent> for pb::TaskStatusUpdateEvent {
    fn from(e: TaskStatusUpdateEvent) -> Self {
        pb::TaskStatusUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            status: Some(e.status.into()),
            metadata: metadata_to(e.metadata),
        }
    }
}

impl TryFrom<pb::TaskStatusUpdateEvent> for TaskStatusUpdateEvent {
    type Error = Error;

    fn try_from(e: pb::TaskStatusUpdateEvent) -> Result<Self> {
        Ok(TaskStatusUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            status: required("TaskStatusUpdateEvent.status", e.status)?.try_into()?,
            metadata: metadata_from("TaskStatusUpdateEvent.metadata", e.metadata)?,
        })
    }
}

impl From<TaskArtifactUpdateEvent> for pb::TaskArtifactUpdateEvent {
    fn from(e: TaskArtifactUpdateEvent) -> Self {
        pb::TaskArtifactUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            artifact: Some(e.artifact.into()),
            append: e.append,
            last_chunk: e.last_chunk,
            metadata: metadata_to(e.metadata),
        }
    }
}

impl TryFrom<pb::TaskArtifactUpdateEvent> for TaskArtifactUpdateEvent {
    type Error = Error;

    fn try_from(e: pb::TaskArtifactUpdateEvent) -> Result<Self> {
        Ok(TaskArtifactUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            artifact: required("TaskArtifactUpdateEvent.artifact", e.artifact)?.try_into()?,
            append: e.append,
            last_chunk: e.last_chunk,
            metadata: metadata_from("TaskArtifactUpdateEvent.metadata", e.metadata)?,
        })
    }
}

impl From<StreamResponse> for pb::StreamResponse {
    fn from(r: StreamResponse) -> Self {
        use pb::stream_response::Payload;
        let payload = match r {
            StreamResponse::Task(t) => Payload::Task(t.into()),
            StreamResponse::Message(m) => Payload::Message(m.into()),
            StreamResponse::StatusUpdate(e) => Payload::StatusUpdate(e.into()),
            StreamResponse::ArtifactUpdate(e) => Payload::ArtifactUpdate(e.into()),
        };
        pb::StreamResponse {
            payload: Some(payload),
        }
    }
}

impl TryFrom<pb::StreamResponse> for StreamResponse {
    type Error = Error;

    fn try_from(r: pb::StreamResponse) -> Result<Self> {
        use pb::stream_response::Payload;
        Ok(match required("StreamResponse.payload", r.payload)? {
            Payload::Task(t) => StreamResponse::Task(t.try_into()?),
            Payload::Message(m) => StreamResponse::Message(m.try_into()?),
            Payload::StatusUpdate(e) => StreamResponse::StatusUpdate(e.try_into()?),
            Payload::ArtifactUpdate(e) => StreamResponse::ArtifactUpdate(e.try_into()?),
        })
    }
}

impl From<SendMessageResponse> for pb::SendMessageResponse {
    fn from(r: SendMessageResponse) -> Self {
        use pb::send_message_response::Payload;
        let payload = match r {
            SendMessageResponse::Task(t) => Payload::Task(t.into()),
            SendMessageResponse::Message(m) => Payload::Message(m.into()),
        };
        pb::SendMessageResponse {
            payload: Some(payload),
        }
    }
}

impl TryFrom<pb::SendMessageResponse> for SendMessageResponse {
    type Error = Error;

    fn try_from(r: pb::SendMessageResponse) -> Result<Self> {
        use pb::send_message_response::Payload;
        Ok(match required("SendMessageResponse.payload", r.payload)? {
            Payload::Task(t) => SendMessageResponse::Task(t.try_into()?),
            Payload::Message(m) => SendMessageResponse::Message(m.try_into()?),
        })
    }
}
