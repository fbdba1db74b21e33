//! Task update events and the `oneof` responses of SendMessage and the streams.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::oneof::exactly_one;
use super::{Artifact, Message, Task, TaskStatus, is_false, via_repr};

/// A task's status changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task. Required.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The task's context (always serialized).
    #[serde(default, alias = "context_id")]
    pub context_id: String,
    /// The new status. Required.
    pub status: TaskStatus,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A task produced (a chunk of) an artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task. Required.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The task's context (always serialized).
    #[serde(default, alias = "context_id")]
    pub context_id: String,
    /// The artifact or chunk. Required.
    pub artifact: Artifact,
    /// Append these parts to the artifact with the same id sent before (else replace it).
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    /// This is the last chunk of the artifact.
    #[serde(default, skip_serializing_if = "is_false", alias = "last_chunk")]
    pub last_chunk: bool,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// One event of `SendStreamingMessage` or `SubscribeToTask`: `{"task":…}`, `{"message":…}`,
/// `{"statusUpdate":…}` or `{"artifactUpdate":…}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// A task snapshot (always the first event of a task stream).
    Task(Task),
    /// A message (the only event of a message stream).
    Message(Message),
    /// A status change.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact (chunk).
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// The reading shape of [`StreamResponse`]: every member optional, unknown keys ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StreamResponseRepr {
    #[serde(default)]
    task: Option<Task>,
    #[serde(default)]
    message: Option<Message>,
    #[serde(default, alias = "status_update")]
    status_update: Option<TaskStatusUpdateEvent>,
    #[serde(default, alias = "artifact_update")]
    artifact_update: Option<TaskArtifactUpdateEvent>,
}

/// Reads by member name; exactly one member, unknown keys ignored.
impl<'de> Deserialize<'de> for StreamResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        via_repr::<D, StreamResponseRepr, Self>(deserializer, "a StreamResponse object")
    }
}

impl TryFrom<StreamResponseRepr> for StreamResponse {
    type Error = String;

    fn try_from(repr: StreamResponseRepr) -> Result<Self, String> {
        exactly_one(
            "a StreamResponse",
            &[
                ("task", repr.task.is_some()),
                ("message", repr.message.is_some()),
                ("statusUpdate", repr.status_update.is_some()),
                ("artifactUpdate", repr.artifact_update.is_some()),
            ],
        )?;
        Ok(
            match (
                repr.task,
                repr.message,
                repr.status_update,
                repr.artifact_update,
            ) {
                (Some(task), ..) => StreamResponse::Task(task),
                (_, Some(message), ..) => StreamResponse::Message(message),
                (_, _, Some(update), _) => StreamResponse::StatusUpdate(update),
                (_, _, _, Some(update)) => StreamResponse::ArtifactUpdate(update),
                (None, None, None, None) => {
                    return Err("a StreamResponse needs a member".to_owned());
                }
            },
        )
    }
}

/// The result of `SendMessage`: `{"task":…}` or `{"message":…}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// The task the message created or continued.
    Task(Task),
    /// A direct reply, no task.
    Message(Message),
}

/// The reading shape of [`SendMessageResponse`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SendMessageResponseRepr {
    #[serde(default)]
    task: Option<Task>,
    #[serde(default)]
    message: Option<Message>,
}

/// Reads by member name; exactly one member, unknown keys ignored.
impl<'de> Deserialize<'de> for SendMessageResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        via_repr::<D, SendMessageResponseRepr, Self>(deserializer, "a SendMessageResponse object")
    }
}

impl TryFrom<SendMessageResponseRepr> for SendMessageResponse {
    type Error = String;

    fn try_from(repr: SendMessageResponseRepr) -> Result<Self, String> {
        exactly_one(
            "a SendMessageResponse",
            &[
                ("task", repr.task.is_some()),
                ("message", repr.message.is_some()),
            ],
        )?;
        match (repr.task, repr.message) {
            (Some(task), _) => Ok(SendMessageResponse::Task(task)),
            (_, Some(message)) => Ok(SendMessageResponse::Message(message)),
            (None, None) => Err("a SendMessageResponse needs a member".to_owned()),
        }
    }
}

impl From<SendMessageResponse> for StreamResponse {
    fn from(response: SendMessageResponse) -> Self {
        match response {
            SendMessageResponse::Task(task) => StreamResponse::Task(task),
            SendMessageResponse::Message(message) => StreamResponse::Message(message),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::TaskState;
    use serde_json::json;

    const STATUS: &str = r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-01T00:00:00Z"}}}"#;
    const ARTIFACT: &str = r#"{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]},"append":true,"lastChunk":true}}"#;

    #[test]
    fn spec_4_1_results_parse_and_re_serialize() {
        // §4.1: the `result` of the captured SendMessage response and of the four SSE frames.
        let send = json!({"task":{"id":"00b6","contextId":"54bf",
            "status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-11-30T08:33:02.578676Z"},
            "artifacts":[{"artifactId":"4ad0","name":"echo","parts":[{"text":"echo: hi"}]}],
            "history":[{"messageId":"m2","contextId":"54bf","taskId":"00b6","role":"ROLE_USER","parts":[{"text":"hi"}]}]}});
        let response: SendMessageResponse = serde_json::from_value(send.clone()).unwrap();
        assert!(
            matches!(&response, SendMessageResponse::Task(task) if task.status.state == TaskState::Completed)
        );
        assert_eq!(serde_json::to_value(&response).unwrap(), send);
        for frame in [
            json!({"task": {"id": "8450", "contextId": "f187", "status": {"state": "TASK_STATE_SUBMITTED"},
                            "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "slow please"}]}]}}),
            json!({"statusUpdate": {"taskId": "8450", "contextId": "f187", "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-11-30T08:33:02Z"}}}),
            json!({"artifactUpdate": {"taskId": "8450", "contextId": "f187", "artifact": {"artifactId": "1696", "name": "echo", "parts": [{"text": "echo: slow please"}]}}}),
            json!({"statusUpdate": {"taskId": "8450", "contextId": "f187", "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-30T08:33:03Z"}}}),
        ] {
            let event: StreamResponse = serde_json::from_value(frame.clone()).unwrap();
            assert_eq!(serde_json::to_value(&event).unwrap(), frame);
        }
    }

    #[test]
    fn every_stream_member_round_trips() {
        for json in [
            r#"{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}"#,
            r#"{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}"#,
            STATUS,
            ARTIFACT,
            r#"{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}"#,
        ] {
            let event: StreamResponse = serde_json::from_str(json).unwrap();
            assert_eq!(serde_json::to_string(&event).unwrap(), json);
        }
        let StreamResponse::StatusUpdate(update) = serde_json::from_str(STATUS).unwrap() else {
            panic!("not a status update");
        };
        assert_eq!(update.status.state, TaskState::Working);
    }

    #[test]
    fn snake_case_members_and_unknown_siblings() {
        let event: StreamResponse = serde_json::from_value(json!({
            "status_update": {"task_id": "t", "context_id": "c", "status": {"state": "working"}},
            "kind": "ignored"
        }))
        .unwrap();
        assert!(matches!(event, StreamResponse::StatusUpdate(_)));
        let event: StreamResponse = serde_json::from_value(json!({
            "artifact_update": {"task_id": "t", "context_id": "c", "last_chunk": true,
                                "artifact": {"artifact_id": "a", "parts": [{"text": "x"}]}}
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]},"lastChunk":true}}"#
        );
    }

    #[test]
    fn zero_or_two_members_are_rejected() {
        let err = serde_json::from_value::<StreamResponse>(json!({})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a StreamResponse needs exactly one of `task`, `message`, `statusUpdate`, `artifactUpdate`, found none"
        );
        let message = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]});
        let task = json!({"id": "t", "status": {"state": "TASK_STATE_WORKING"}});
        let err = serde_json::from_value::<SendMessageResponse>(
            json!({"task": task, "message": message}),
        );
        assert_eq!(
            err.unwrap_err().to_string(),
            "a SendMessageResponse needs exactly one of `task`, `message`, found `task` and `message`"
        );
    }

    #[test]
    fn send_response_round_trips_and_converts() {
        let json = r#"{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}"#;
        let response: SendMessageResponse = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&response).unwrap(), json);
        let event = StreamResponse::from(response);
        assert_eq!(serde_json::to_string(&event).unwrap(), json);
    }
}
