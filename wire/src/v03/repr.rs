//! The 0.3 input shapes: lenient serde types for 0.3 (and 1.0-named) JSON, and their conversion into the 1.0 model.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::TaskState;
use crate::a2a::{
    Artifact, AuthenticationInfo, Message, Part, PartContent, PartRepr, Role, Task,
    TaskPushNotificationConfig, TaskStatus, decode_base64, opt_i32, present, via_repr,
};

/// `MessageSendParams`.
#[derive(Deserialize)]
pub(super) struct SendParams {
    pub(super) message: V03Message,
    #[serde(default)]
    pub(super) configuration: Option<V03SendConfiguration>,
    #[serde(default)]
    pub(super) metadata: Option<Map<String, Value>>,
}

/// `MessageSendConfiguration` (1.0 names accepted too).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct V03SendConfiguration {
    #[serde(default, alias = "accepted_output_modes")]
    pub(super) accepted_output_modes: Vec<String>,
    #[serde(default)]
    pub(super) blocking: Option<bool>,
    #[serde(default, alias = "return_immediately")]
    pub(super) return_immediately: Option<bool>,
    #[serde(default, deserialize_with = "opt_i32", alias = "history_length")]
    pub(super) history_length: Option<i32>,
    #[serde(default, alias = "push_notification_config")]
    pub(super) push_notification_config: Option<PushConfig>,
    #[serde(default, alias = "task_push_notification_config")]
    pub(super) task_push_notification_config: Option<TaskPushNotificationConfig>,
}

/// `TaskQueryParams`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TaskQueryParams {
    pub(super) id: String,
    #[serde(default, deserialize_with = "opt_i32", alias = "history_length")]
    pub(super) history_length: Option<i32>,
}

/// `TaskIdParams`.
#[derive(Deserialize)]
pub(super) struct TaskIdParams {
    pub(super) id: String,
    #[serde(default)]
    pub(super) metadata: Option<Map<String, Value>>,
}

/// `TaskPushNotificationConfig` (0.3, nested).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TaskPushConfig {
    #[serde(alias = "task_id")]
    pub(super) task_id: String,
    #[serde(alias = "push_notification_config")]
    pub(super) push_notification_config: PushConfig,
}

/// `GetTaskPushNotificationConfigParams` / `DeleteTaskPushNotificationConfigParams`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PushConfigIdParams {
    pub(super) id: String,
    #[serde(default, alias = "push_notification_config_id")]
    pub(super) push_notification_config_id: Option<String>,
}

/// `PushNotificationConfig` (0.3).
#[derive(Deserialize)]
pub(super) struct PushConfig {
    #[serde(default)]
    id: Option<String>,
    url: String,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    authentication: Option<PushAuth>,
}

/// `PushNotificationAuthenticationInfo` (0.3): several schemes, one credential.
#[derive(Deserialize)]
struct PushAuth {
    #[serde(default)]
    schemes: Vec<String>,
    #[serde(default)]
    credentials: Option<String>,
}

impl PushConfig {
    /// The flattened 1.0 config (first scheme only; none when no scheme is given).
    pub(super) fn into_v1(self) -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            tenant: None,
            id: self.id,
            task_id: None,
            url: self.url,
            token: self.token,
            authentication: self.authentication.and_then(|auth| {
                let scheme = auth.schemes.into_iter().next()?;
                Some(AuthenticationInfo {
                    scheme,
                    credentials: auth.credentials,
                })
            }),
        }
    }
}

/// `Message` (0.3).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct V03Message {
    /// 0.3's discriminator: `"message"` when sent (another kind is another object).
    #[serde(default, rename = "kind", deserialize_with = "message_kind")]
    _kind: (),
    #[serde(alias = "message_id")]
    message_id: String,
    #[serde(default, alias = "context_id")]
    context_id: Option<String>,
    #[serde(default, alias = "task_id")]
    task_id: Option<String>,
    role: Role,
    #[serde(default)]
    parts: Vec<V03Part>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    extensions: Vec<String>,
    #[serde(default, alias = "reference_task_ids")]
    reference_task_ids: Vec<String>,
}

fn message_kind<'de, D: serde::Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    let kind = String::deserialize(d)?;
    if kind == "message" {
        Ok(())
    } else {
        Err(serde::de::Error::custom(format!(
            "a message's kind is \"message\", not {kind:?}"
        )))
    }
}

impl From<V03Message> for Message {
    fn from(m: V03Message) -> Self {
        Message {
            message_id: m.message_id,
            context_id: m.context_id,
            task_id: m.task_id,
            role: m.role,
            parts: m.parts.into_iter().map(|part| part.0).collect(),
            metadata: m.metadata,
            extensions: m.extensions,
            reference_task_ids: m.reference_task_ids,
        }
    }
}

/// A part read from 0.3 (or 1.0) JSON.
pub(super) struct V03Part(pub(super) Part);

/// Reads a 0.3 or 1.0 part and checks it.
impl<'de> Deserialize<'de> for V03Part {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        via_repr::<D, V03PartRepr, Self>(deserializer, "a part object")
    }
}

/// Every member a 0.3 or 1.0 part may have.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V03PartRepr {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    file: Option<V03File>,
    #[serde(default, deserialize_with = "present")]
    data: Option<Value>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default, alias = "media_type")]
    media_type: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// `FileWithBytes` / `FileWithUri` (0.3).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V03File {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, alias = "mime_type")]
    mime_type: Option<String>,
    #[serde(default)]
    bytes: Option<String>,
    #[serde(default)]
    uri: Option<String>,
}

impl TryFrom<V03PartRepr> for V03Part {
    type Error = String;

    fn try_from(r: V03PartRepr) -> Result<Self, String> {
        let kind = match r.kind.as_deref() {
            Some(kind) => kind,
            None if r.file.is_some() => "file",
            // No `kind`: a 1.0-shaped part.
            None => {
                let repr = PartRepr {
                    text: r.text,
                    raw: r.raw,
                    url: r.url,
                    data: r.data,
                    metadata: r.metadata,
                    filename: r.filename,
                    media_type: r.media_type,
                };
                return Part::try_from(repr).map(V03Part);
            }
        };
        let content = match kind {
            "text" => PartContent::Text(r.text.ok_or("a text part needs `text`")?),
            "data" => PartContent::Data(r.data.ok_or("a data part needs `data`")?),
            "file" => {
                let file = r.file.ok_or("a file part needs `file`")?;
                let content = match (file.bytes, file.uri) {
                    (Some(bytes), None) => PartContent::Raw(
                        decode_base64(&bytes).map_err(|err| format!("`file.bytes`: {err}"))?,
                    ),
                    (None, Some(uri)) => PartContent::Url(uri),
                    (Some(_), Some(_)) => {
                        return Err("a file needs one of `bytes` or `uri`, found both".to_owned());
                    }
                    (None, None) => {
                        return Err("a file needs one of `bytes` or `uri`, found none".to_owned());
                    }
                };
                return Ok(V03Part(Part {
                    content,
                    metadata: r.metadata,
                    filename: file.name.or(r.filename),
                    media_type: file.mime_type.or(r.media_type),
                }));
            }
            other => {
                return Err(format!(
                    "unknown part kind {other:?}, expected `text`, `file` or `data`"
                ));
            }
        };
        Ok(V03Part(Part {
            content,
            metadata: r.metadata,
            filename: r.filename,
            media_type: r.media_type,
        }))
    }
}

/// `TaskStatus` (0.3).
#[derive(Deserialize)]
pub(super) struct V03Status {
    state: TaskState,
    #[serde(default)]
    message: Option<V03Message>,
    #[serde(default)]
    timestamp: Option<String>,
}

impl From<V03Status> for TaskStatus {
    fn from(s: V03Status) -> Self {
        TaskStatus {
            state: s.state,
            message: s.message.map(Message::from),
            timestamp: s.timestamp,
        }
    }
}

/// `Artifact` (0.3).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct V03Artifact {
    #[serde(alias = "artifact_id")]
    artifact_id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parts: Vec<V03Part>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    extensions: Vec<String>,
}

impl From<V03Artifact> for Artifact {
    fn from(a: V03Artifact) -> Self {
        Artifact {
            artifact_id: a.artifact_id,
            name: a.name,
            description: a.description,
            parts: a.parts.into_iter().map(|part| part.0).collect(),
            metadata: a.metadata,
            extensions: a.extensions,
        }
    }
}

/// `Task` (0.3).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct V03Task {
    id: String,
    #[serde(default, alias = "context_id")]
    context_id: String,
    status: V03Status,
    #[serde(default)]
    artifacts: Vec<V03Artifact>,
    #[serde(default)]
    history: Vec<V03Message>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

impl From<V03Task> for Task {
    fn from(t: V03Task) -> Self {
        Task {
            id: t.id,
            context_id: t.context_id,
            status: t.status.into(),
            artifacts: t.artifacts.into_iter().map(Artifact::from).collect(),
            history: t.history.into_iter().map(Message::from).collect(),
            metadata: t.metadata,
        }
    }
}

/// `TaskStatusUpdateEvent` (0.3).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct V03StatusUpdate {
    #[serde(alias = "task_id")]
    pub(super) task_id: String,
    #[serde(default, alias = "context_id")]
    pub(super) context_id: String,
    pub(super) status: V03Status,
    #[serde(default, rename = "final")]
    pub(super) final_: bool,
    #[serde(default)]
    pub(super) metadata: Option<Map<String, Value>>,
}

/// `TaskArtifactUpdateEvent` (0.3).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct V03ArtifactUpdate {
    #[serde(alias = "task_id")]
    pub(super) task_id: String,
    #[serde(default, alias = "context_id")]
    pub(super) context_id: String,
    pub(super) artifact: V03Artifact,
    #[serde(default)]
    pub(super) append: Option<bool>,
    #[serde(default, alias = "last_chunk")]
    pub(super) last_chunk: Option<bool>,
    #[serde(default)]
    pub(super) metadata: Option<Map<String, Value>>,
}
