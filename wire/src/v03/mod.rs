//! The A2A 0.3 codec: 0.3 JSON (`serde_json::Value`) to and from the 1.0 model in [`crate::a2a`].
//!
//! 0.3 differs in shape, not in meaning: objects carry a `kind` discriminator (`task`, `message`,
//! `status-update`, `artifact-update`; parts `text`, `file`, `data`), enums are lowercase
//! (`completed`, `user`), files nest under `file` with `name`/`mimeType`/`bytes`|`uri`, a send says
//! `blocking` where 1.0 says `returnImmediately`, the last status update of a stream has
//! `final: true`, and push configs nest under `pushNotificationConfig` with `schemes[]`.
//!
//! Readers are lenient: camelCase and snake_case keys, unknown keys ignored, and 1.0-shaped parts
//! accepted. Writers emit only what 0.3 can carry: a text or data part's `filename`/`mediaType`
//! and a non-object `data` have no 0.3 form and are dropped or passed through as they are.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::a2a::{
    Artifact, AuthenticationInfo, CancelTaskRequest, GetTaskPushNotificationConfigRequest,
    GetTaskRequest, ListTaskPushNotificationConfigsRequest, Message, Part, PartContent, PartRepr,
    Role, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskStatus, TaskStatusUpdateEvent,
    decode_base64, encode_base64, from_json, opt_i32, present, via_repr,
};
use crate::{TaskState, WireError};

// ---------------------------------------------------------------------------------------------
// Reading 0.3

/// `message/send` and `message/stream` params (`MessageSendParams`) as a 1.0 request.
///
/// `configuration.blocking: false` becomes `returnImmediately: true`; an absent `blocking` keeps
/// the 1.0 default (wait). `pushNotificationConfig` becomes `taskPushNotificationConfig`.
pub fn send_params_from_v03(params: &Value) -> Result<SendMessageRequest, WireError> {
    let params: SendParams = from_json("message/send params", params)?;
    let configuration = params.configuration.map(|c| SendMessageConfiguration {
        accepted_output_modes: c.accepted_output_modes,
        task_push_notification_config: c
            .push_notification_config
            .map(PushConfig::into_v1)
            .or(c.task_push_notification_config),
        history_length: c.history_length,
        return_immediately: match c.blocking {
            Some(blocking) => !blocking,
            None => c.return_immediately.unwrap_or(false),
        },
    });
    Ok(SendMessageRequest {
        tenant: None,
        message: params.message.into(),
        configuration,
        metadata: params.metadata,
    })
}

/// `tasks/get` params (`TaskQueryParams {id, historyLength, metadata}`); 1.0 has no metadata here.
pub fn get_task_params_from_v03(params: &Value) -> Result<GetTaskRequest, WireError> {
    let params: TaskQueryParams = from_json("tasks/get params", params)?;
    Ok(GetTaskRequest {
        tenant: None,
        id: params.id,
        history_length: params.history_length,
    })
}

/// `tasks/cancel` and `tasks/resubscribe` params (`TaskIdParams {id, metadata}`).
pub fn task_id_params_from_v03(params: &Value) -> Result<CancelTaskRequest, WireError> {
    let params: TaskIdParams = from_json("task id params", params)?;
    Ok(CancelTaskRequest {
        tenant: None,
        id: params.id,
        metadata: params.metadata,
    })
}

/// `tasks/pushNotificationConfig/set` params (`{taskId, pushNotificationConfig{…}}`) as a
/// flattened 1.0 config.
pub fn push_config_from_v03(params: &Value) -> Result<TaskPushNotificationConfig, WireError> {
    let params: TaskPushConfig = from_json("tasks/pushNotificationConfig/set params", params)?;
    let mut config = params.push_notification_config.into_v1();
    config.task_id = Some(params.task_id);
    Ok(config)
}

/// `tasks/pushNotificationConfig/get` and `…/delete` params (`{id, pushNotificationConfigId}`,
/// `id` being the task). Without a config id, the config id is the task id (0.3's default).
pub fn push_config_id_params_from_v03(
    params: &Value,
) -> Result<GetTaskPushNotificationConfigRequest, WireError> {
    let params: PushConfigIdParams = from_json("push notification config params", params)?;
    Ok(GetTaskPushNotificationConfigRequest {
        tenant: None,
        id: params
            .push_notification_config_id
            .unwrap_or_else(|| params.id.clone()),
        task_id: params.id,
    })
}

/// `tasks/pushNotificationConfig/list` params (`{id}`, the task).
pub fn list_push_configs_params_from_v03(
    params: &Value,
) -> Result<ListTaskPushNotificationConfigsRequest, WireError> {
    let params: TaskIdParams = from_json("tasks/pushNotificationConfig/list params", params)?;
    Ok(ListTaskPushNotificationConfigsRequest {
        tenant: None,
        task_id: params.id,
        page_size: None,
        page_token: None,
    })
}

/// A 0.3 message (`kind: "message"`, role `user`|`agent`, 0.3 parts).
pub fn message_from_v03(value: &Value) -> Result<Message, WireError> {
    from_json::<V03Message>("0.3 message", value).map(Message::from)
}

/// A 0.3 part: `{"kind":"text"|"file"|"data",…}`, or a 1.0-shaped part.
pub fn part_from_v03(value: &Value) -> Result<Part, WireError> {
    from_json::<V03Part>("0.3 part", value).map(|part| part.0)
}

/// A 0.3 task (`kind: "task"`, lowercase states).
pub fn task_from_v03(value: &Value) -> Result<Task, WireError> {
    from_json::<V03Task>("0.3 task", value).map(Task::from)
}

/// A 0.3 `status-update` event and its `final` flag.
pub fn status_update_from_v03(value: &Value) -> Result<(TaskStatusUpdateEvent, bool), WireError> {
    let event: V03StatusUpdate = from_json("0.3 status-update", value)?;
    let final_ = event.final_;
    Ok((
        TaskStatusUpdateEvent {
            task_id: event.task_id,
            context_id: event.context_id,
            status: event.status.into(),
            metadata: event.metadata,
        },
        final_,
    ))
}

/// A 0.3 `artifact-update` event.
pub fn artifact_update_from_v03(value: &Value) -> Result<TaskArtifactUpdateEvent, WireError> {
    let event: V03ArtifactUpdate = from_json("0.3 artifact-update", value)?;
    Ok(TaskArtifactUpdateEvent {
        task_id: event.task_id,
        context_id: event.context_id,
        artifact: event.artifact.into(),
        append: event.append.unwrap_or(false),
        last_chunk: event.last_chunk.unwrap_or(false),
        metadata: event.metadata,
    })
}

/// A 0.3 stream event, by its `kind`, and whether it is `final` (only status updates can be).
pub fn stream_response_from_v03(value: &Value) -> Result<(StreamResponse, bool), WireError> {
    match kind_of(value) {
        Some("task") => task_from_v03(value).map(|task| (StreamResponse::Task(task), false)),
        Some("message") => {
            message_from_v03(value).map(|message| (StreamResponse::Message(message), false))
        }
        Some("status-update") => status_update_from_v03(value)
            .map(|(event, final_)| (StreamResponse::StatusUpdate(event), final_)),
        Some("artifact-update") => artifact_update_from_v03(value)
            .map(|event| (StreamResponse::ArtifactUpdate(event), false)),
        other => Err(unknown_kind(
            "0.3 stream event",
            other,
            "`task`, `message`, `status-update`, `artifact-update`",
        )),
    }
}

/// A 0.3 `message/send` result: a bare task or message, by its `kind`.
pub fn send_response_from_v03(value: &Value) -> Result<SendMessageResponse, WireError> {
    match kind_of(value) {
        Some("task") => task_from_v03(value).map(SendMessageResponse::Task),
        Some("message") => message_from_v03(value).map(SendMessageResponse::Message),
        other => Err(unknown_kind("0.3 send result", other, "`task`, `message`")),
    }
}

/// The `kind` member of a 0.3 object.
fn kind_of(value: &Value) -> Option<&str> {
    value.get("kind").and_then(Value::as_str)
}

/// The error for a missing or unexpected `kind`.
fn unknown_kind(what: &'static str, kind: Option<&str>, expected: &str) -> WireError {
    let reason = match kind {
        Some(kind) => format!("unknown kind {kind:?}, expected one of {expected}"),
        None => format!("missing field `kind` (one of {expected})"),
    };
    WireError::InvalidJson { what, reason }
}

// ---------------------------------------------------------------------------------------------
// Writing 0.3

/// A message in 0.3 JSON (`kind: "message"`, role `user`|`agent`).
pub fn message_to_v03(message: &Message) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!("message"));
    out.insert("messageId".into(), json!(message.message_id));
    put(
        &mut out,
        "contextId",
        message.context_id.as_ref().map(|v| json!(v)),
    );
    put(
        &mut out,
        "taskId",
        message.task_id.as_ref().map(|v| json!(v)),
    );
    out.insert("role".into(), json!(message.role.as_v03_str()));
    out.insert("parts".into(), parts_to_v03(&message.parts));
    put_metadata(&mut out, message.metadata.as_ref());
    put_list(&mut out, "extensions", &message.extensions);
    put_list(&mut out, "referenceTaskIds", &message.reference_task_ids);
    Value::Object(out)
}

/// A part in 0.3 JSON: `{"kind":"text","text"}`, `{"kind":"file","file":{"bytes"|"uri","name","mimeType"}}`
/// or `{"kind":"data","data"}`.
pub fn part_to_v03(part: &Part) -> Value {
    let mut out = Map::new();
    match &part.content {
        PartContent::Text(text) => {
            out.insert("kind".into(), json!("text"));
            out.insert("text".into(), json!(text));
        }
        PartContent::Raw(_) | PartContent::Url(_) => {
            let mut file = Map::new();
            match &part.content {
                PartContent::Raw(bytes) => file.insert("bytes".into(), json!(encode_base64(bytes))),
                PartContent::Url(url) => file.insert("uri".into(), json!(url)),
                PartContent::Text(_) | PartContent::Data(_) => None,
            };
            put(&mut file, "name", part.filename.as_ref().map(|v| json!(v)));
            put(
                &mut file,
                "mimeType",
                part.media_type.as_ref().map(|v| json!(v)),
            );
            out.insert("kind".into(), json!("file"));
            out.insert("file".into(), Value::Object(file));
        }
        PartContent::Data(data) => {
            out.insert("kind".into(), json!("data"));
            out.insert("data".into(), data.clone());
        }
    }
    put_metadata(&mut out, part.metadata.as_ref());
    Value::Object(out)
}

/// A task in 0.3 JSON (`kind: "task"`, lowercase state, 0.3 parts and messages).
pub fn task_to_v03(task: &Task) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!("task"));
    out.insert("id".into(), json!(task.id));
    out.insert("contextId".into(), json!(task.context_id));
    out.insert("status".into(), status_to_v03(&task.status));
    if !task.artifacts.is_empty() {
        out.insert(
            "artifacts".into(),
            task.artifacts.iter().map(artifact_to_v03).collect(),
        );
    }
    if !task.history.is_empty() {
        out.insert(
            "history".into(),
            task.history.iter().map(message_to_v03).collect(),
        );
    }
    put_metadata(&mut out, task.metadata.as_ref());
    Value::Object(out)
}

/// A status update in 0.3 JSON (`kind: "status-update"`) with its `final` flag.
pub fn status_update_to_v03(event: &TaskStatusUpdateEvent, final_: bool) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!("status-update"));
    out.insert("taskId".into(), json!(event.task_id));
    out.insert("contextId".into(), json!(event.context_id));
    out.insert("status".into(), status_to_v03(&event.status));
    out.insert("final".into(), json!(final_));
    put_metadata(&mut out, event.metadata.as_ref());
    Value::Object(out)
}

/// An artifact update in 0.3 JSON (`kind: "artifact-update"`, `append` and `lastChunk` always given).
pub fn artifact_update_to_v03(event: &TaskArtifactUpdateEvent) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!("artifact-update"));
    out.insert("taskId".into(), json!(event.task_id));
    out.insert("contextId".into(), json!(event.context_id));
    out.insert("artifact".into(), artifact_to_v03(&event.artifact));
    out.insert("append".into(), json!(event.append));
    out.insert("lastChunk".into(), json!(event.last_chunk));
    put_metadata(&mut out, event.metadata.as_ref());
    Value::Object(out)
}

/// A stream event as the bare 0.3 object; `final_` is used by status updates only.
pub fn stream_response_to_v03(event: &StreamResponse, final_: bool) -> Value {
    match event {
        StreamResponse::Task(task) => task_to_v03(task),
        StreamResponse::Message(message) => message_to_v03(message),
        StreamResponse::StatusUpdate(update) => status_update_to_v03(update, final_),
        StreamResponse::ArtifactUpdate(update) => artifact_update_to_v03(update),
    }
}

/// A `message/send` result as the bare 0.3 task or message.
pub fn send_response_to_v03(response: &SendMessageResponse) -> Value {
    match response {
        SendMessageResponse::Task(task) => task_to_v03(task),
        SendMessageResponse::Message(message) => message_to_v03(message),
    }
}

/// A push config in 0.3 JSON: `{taskId, pushNotificationConfig{id,url,token,authentication{schemes[],credentials}}}`.
pub fn push_config_to_v03(config: &TaskPushNotificationConfig) -> Value {
    let mut inner = Map::new();
    put(&mut inner, "id", config.id.as_ref().map(|v| json!(v)));
    inner.insert("url".into(), json!(config.url));
    put(&mut inner, "token", config.token.as_ref().map(|v| json!(v)));
    if let Some(auth) = &config.authentication {
        let mut authentication = Map::new();
        authentication.insert("schemes".into(), json!([auth.scheme]));
        put(
            &mut authentication,
            "credentials",
            auth.credentials.as_ref().map(|v| json!(v)),
        );
        inner.insert("authentication".into(), Value::Object(authentication));
    }
    let mut out = Map::new();
    out.insert(
        "taskId".into(),
        json!(config.task_id.as_deref().unwrap_or_default()),
    );
    out.insert("pushNotificationConfig".into(), Value::Object(inner));
    Value::Object(out)
}

/// A task status in 0.3 JSON.
fn status_to_v03(status: &TaskStatus) -> Value {
    let mut out = Map::new();
    out.insert("state".into(), json!(status.state.as_v03_str()));
    put(
        &mut out,
        "message",
        status.message.as_ref().map(message_to_v03),
    );
    put(
        &mut out,
        "timestamp",
        status.timestamp.as_ref().map(|v| json!(v)),
    );
    Value::Object(out)
}

/// An artifact in 0.3 JSON.
fn artifact_to_v03(artifact: &Artifact) -> Value {
    let mut out = Map::new();
    out.insert("artifactId".into(), json!(artifact.artifact_id));
    put(&mut out, "name", artifact.name.as_ref().map(|v| json!(v)));
    put(
        &mut out,
        "description",
        artifact.description.as_ref().map(|v| json!(v)),
    );
    out.insert("parts".into(), parts_to_v03(&artifact.parts));
    put_metadata(&mut out, artifact.metadata.as_ref());
    put_list(&mut out, "extensions", &artifact.extensions);
    Value::Object(out)
}

/// Parts as a 0.3 array.
fn parts_to_v03(parts: &[Part]) -> Value {
    parts.iter().map(part_to_v03).collect()
}

/// Inserts `key` when there is a value.
fn put(out: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        out.insert(key.to_owned(), value);
    }
}

/// Inserts `metadata` when set.
fn put_metadata(out: &mut Map<String, Value>, metadata: Option<&Map<String, Value>>) {
    put(out, "metadata", metadata.map(|m| Value::Object(m.clone())));
}

/// Inserts a list of strings when not empty.
fn put_list(out: &mut Map<String, Value>, key: &str, list: &[String]) {
    if !list.is_empty() {
        out.insert(key.to_owned(), json!(list));
    }
}

// ---------------------------------------------------------------------------------------------
// 0.3 reading shapes

/// `MessageSendParams`.
#[derive(Deserialize)]
struct SendParams {
    message: V03Message,
    #[serde(default)]
    configuration: Option<V03SendConfiguration>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// `MessageSendConfiguration` (1.0 names accepted too).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V03SendConfiguration {
    #[serde(default, alias = "accepted_output_modes")]
    accepted_output_modes: Vec<String>,
    #[serde(default)]
    blocking: Option<bool>,
    #[serde(default, alias = "return_immediately")]
    return_immediately: Option<bool>,
    #[serde(default, deserialize_with = "opt_i32", alias = "history_length")]
    history_length: Option<i32>,
    #[serde(default, alias = "push_notification_config")]
    push_notification_config: Option<PushConfig>,
    #[serde(default, alias = "task_push_notification_config")]
    task_push_notification_config: Option<TaskPushNotificationConfig>,
}

/// `TaskQueryParams`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskQueryParams {
    id: String,
    #[serde(default, deserialize_with = "opt_i32", alias = "history_length")]
    history_length: Option<i32>,
}

/// `TaskIdParams`.
#[derive(Deserialize)]
struct TaskIdParams {
    id: String,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// `TaskPushNotificationConfig` (0.3, nested).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskPushConfig {
    #[serde(alias = "task_id")]
    task_id: String,
    #[serde(alias = "push_notification_config")]
    push_notification_config: PushConfig,
}

/// `GetTaskPushNotificationConfigParams` / `DeleteTaskPushNotificationConfigParams`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PushConfigIdParams {
    id: String,
    #[serde(default, alias = "push_notification_config_id")]
    push_notification_config_id: Option<String>,
}

/// `PushNotificationConfig` (0.3).
#[derive(Deserialize)]
struct PushConfig {
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
    fn into_v1(self) -> TaskPushNotificationConfig {
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
struct V03Message {
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
struct V03Part(Part);

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
struct V03Status {
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
struct V03Artifact {
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
struct V03Task {
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
struct V03StatusUpdate {
    #[serde(alias = "task_id")]
    task_id: String,
    #[serde(default, alias = "context_id")]
    context_id: String,
    status: V03Status,
    #[serde(default, rename = "final")]
    final_: bool,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// `TaskArtifactUpdateEvent` (0.3).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V03ArtifactUpdate {
    #[serde(alias = "task_id")]
    task_id: String,
    #[serde(default, alias = "context_id")]
    context_id: String,
    artifact: V03Artifact,
    #[serde(default)]
    append: Option<bool>,
    #[serde(default, alias = "last_chunk")]
    last_chunk: Option<bool>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// §7: a `message/send` result observed from the a2a-sdk 0.3 compat layer.
    fn observed_task() -> Value {
        json!({"artifacts":[{"artifactId":"a1","name":"echo","parts":[{"kind":"text","text":"echo: hi"}]}],
               "contextId":"c1","history":[{"contextId":"c1","kind":"message","messageId":"m1",
               "parts":[{"kind":"text","text":"hi"}],"role":"user","taskId":"t1"}],
               "id":"t1","kind":"task","status":{"state":"completed","timestamp":"2026-11-30T08:33:02.578676Z"}})
    }

    #[test]
    fn observed_task_parses_and_re_serializes() {
        let task = task_from_v03(&observed_task()).unwrap();
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(task.history[0].role, Role::User);
        assert_eq!(
            serde_json::to_string(&task).unwrap(),
            concat!(
                r#"{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-11-30T08:33:02.578676Z"},"#,
                r#""artifacts":[{"artifactId":"a1","name":"echo","parts":[{"text":"echo: hi"}]}],"#,
                r#""history":[{"messageId":"m1","contextId":"c1","taskId":"t1","role":"ROLE_USER","parts":[{"text":"hi"}]}]}"#
            )
        );
        assert_eq!(task_to_v03(&task), observed_task());
        let response = send_response_from_v03(&observed_task()).unwrap();
        assert_eq!(send_response_to_v03(&response), observed_task());
    }

    #[test]
    fn observed_final_status_update_round_trips() {
        let observed = json!({"contextId":"c","final":true,"kind":"status-update",
                              "status":{"state":"completed","timestamp":"2026-01-01T00:00:00Z"},"taskId":"t"});
        let (event, final_) = status_update_from_v03(&observed).unwrap();
        assert!(final_);
        assert_eq!(
            serde_json::to_string(&StreamResponse::StatusUpdate(event.clone())).unwrap(),
            r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-01T00:00:00Z"}}}"#
        );
        assert_eq!(status_update_to_v03(&event, true), observed);
        let mut not_final = observed.clone();
        not_final["final"] = json!(false);
        assert_eq!(status_update_to_v03(&event, false), not_final);
        let (event, final_) = stream_response_from_v03(&observed).unwrap();
        assert!(final_);
        assert_eq!(stream_response_to_v03(&event, true), observed);
    }

    #[test]
    fn status_update_with_message_round_trips() {
        let v03 = json!({"kind":"status-update","taskId":"t","contextId":"c","final":false,"metadata":{"k":1},
                         "status":{"state":"input-required","message":{"kind":"message","messageId":"s",
                         "role":"agent","parts":[{"kind":"text","text":"which one?"}]}}});
        let (event, final_) = status_update_from_v03(&v03).unwrap();
        assert!(!final_);
        assert_eq!(event.status.state, TaskState::InputRequired);
        assert_eq!(
            event.status.message,
            Some(Message::agent_text("s", "which one?"))
        );
        assert_eq!(status_update_to_v03(&event, false), v03);
    }

    #[test]
    fn artifact_update_round_trips() {
        let v03 = json!({"kind":"artifact-update","taskId":"t","contextId":"c","append":true,"lastChunk":false,
                         "artifact":{"artifactId":"a","parts":[{"kind":"data","data":{"n":1}}]}});
        let event = artifact_update_from_v03(&v03).unwrap();
        assert!(event.append && !event.last_chunk);
        assert_eq!(
            serde_json::to_string(&StreamResponse::ArtifactUpdate(event.clone())).unwrap(),
            r#"{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"data":{"n":1}}]},"append":true}}"#
        );
        assert_eq!(artifact_update_to_v03(&event), v03);
        let (stream, final_) = stream_response_from_v03(&v03).unwrap();
        assert!(!final_);
        assert_eq!(stream_response_to_v03(&stream, true), v03);
        // 0.3 may leave out both flags.
        let mut bare = v03.clone();
        bare.as_object_mut().unwrap().remove("append");
        bare.as_object_mut().unwrap().remove("lastChunk");
        let event = artifact_update_from_v03(&bare).unwrap();
        assert!(!event.append && !event.last_chunk);
    }

    #[test]
    fn every_part_shape_round_trips() {
        let v03 = json!({"kind":"message","messageId":"m","contextId":"c","taskId":"t","role":"agent",
        "metadata":{"a":1},"extensions":["urn:e"],"referenceTaskIds":["r"],
        "parts":[
            {"kind":"text","text":"hi","metadata":{"p":0}},
            {"kind":"file","file":{"bytes":"iVBORw==","name":"a.png","mimeType":"image/png"}},
            {"kind":"file","file":{"uri":"https://x/doc.pdf","mimeType":"application/pdf"}},
            {"kind":"file","file":{"uri":"https://x/y"}},
            {"kind":"data","data":{"k":[1,2]}}
        ]});
        let message = message_from_v03(&v03).unwrap();
        assert_eq!(
            serde_json::to_string(&message).unwrap(),
            concat!(
                r#"{"messageId":"m","contextId":"c","taskId":"t","role":"ROLE_AGENT","parts":["#,
                r#"{"text":"hi","metadata":{"p":0}},{"raw":"iVBORw==","filename":"a.png","mediaType":"image/png"},"#,
                r#"{"url":"https://x/doc.pdf","mediaType":"application/pdf"},{"url":"https://x/y"},{"data":{"k":[1,2]}}],"#,
                r#""metadata":{"a":1},"extensions":["urn:e"],"referenceTaskIds":["r"]}"#
            )
        );
        assert_eq!(message_to_v03(&message), v03);
        for (part, expected) in message.parts.iter().zip(v03["parts"].as_array().unwrap()) {
            assert_eq!(&part_to_v03(part), expected);
            assert_eq!(&part_from_v03(expected).unwrap(), part);
        }
    }

    #[test]
    fn one_point_oh_parts_and_snake_case_are_accepted() {
        let message = message_from_v03(&json!({
            "message_id": "m", "role": "ROLE_USER", "context_id": "c",
            "parts": [{"text": "a"}, {"raw": "-_8", "media_type": "x/y"}, {"file": {"uri": "u", "mime_type": "t/p"}}]
        }))
        .unwrap();
        assert_eq!(message.parts[0], Part::text("a"));
        assert_eq!(message.parts[1].content, PartContent::Raw(vec![0xfb, 0xff]));
        assert_eq!(message.parts[1].media_type.as_deref(), Some("x/y"));
        assert_eq!(
            part_to_v03(&message.parts[2]),
            json!({"kind":"file","file":{"uri":"u","mimeType":"t/p"}})
        );
    }

    #[test]
    fn bad_parts_are_rejected_with_their_path() {
        let message =
            |part: Value| json!({"message": {"messageId": "m", "role": "user", "parts": [part]}});
        let reason = |params: Value| send_params_from_v03(&params).unwrap_err().to_string();
        assert_eq!(
            reason(message(
                json!({"kind": "file", "file": {"bytes": "aGk=", "uri": "u"}})
            )),
            "invalid message/send params: a file needs one of `bytes` or `uri`, found both at `message.parts[0]`"
        );
        assert_eq!(
            reason(message(json!({"kind": "image"}))),
            "invalid message/send params: unknown part kind \"image\", expected `text`, `file` or `data` at `message.parts[0]`"
        );
        assert_eq!(
            reason(message(json!({"kind": "text"}))),
            "invalid message/send params: a text part needs `text` at `message.parts[0]`"
        );
        assert_eq!(
            reason(message(json!({"kind": "text", "text": 5}))),
            "invalid message/send params: invalid type: integer `5`, expected a string at `message.parts[0].text`"
        );
        assert_eq!(
            reason(json!({"configuration": {}})),
            "invalid message/send params: missing field `message`"
        );
    }

    #[test]
    fn blocking_false_is_return_immediately_true() {
        let params = |configuration: Value| {
            json!({"message": {"kind": "message", "messageId": "m", "role": "user",
                               "parts": [{"kind": "text", "text": "hi"}]},
                   "configuration": configuration, "metadata": {"x": 1}})
        };
        let request = send_params_from_v03(&params(json!({"blocking": false}))).unwrap();
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            concat!(
                r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"#,
                r#""configuration":{"returnImmediately":true},"metadata":{"x":1}}"#
            )
        );
        for blocking in [json!({"blocking": true}), json!({})] {
            let request = send_params_from_v03(&params(blocking)).unwrap();
            assert!(!request.configuration.unwrap().return_immediately);
        }
        let request = send_params_from_v03(&params(json!({
            "acceptedOutputModes": ["text/plain"], "historyLength": 3, "blocking": true,
            "pushNotificationConfig": {"id": "p", "url": "https://h/cb", "token": "k",
                                       "authentication": {"schemes": ["Bearer"], "credentials": "s"}}
        })))
        .unwrap();
        assert_eq!(
            serde_json::to_value(request.configuration.unwrap()).unwrap(),
            json!({"acceptedOutputModes": ["text/plain"], "historyLength": 3,
                   "taskPushNotificationConfig": {"id": "p", "url": "https://h/cb", "token": "k",
                                                  "authentication": {"scheme": "Bearer", "credentials": "s"}}})
        );
        let request = send_params_from_v03(
            &json!({"message": {"messageId": "m", "role": "user", "parts": [{"text": "x"}]}}),
        );
        assert_eq!(request.unwrap().configuration, None);
    }

    #[test]
    fn task_params() {
        let get = get_task_params_from_v03(&json!({"id": "t", "historyLength": 2, "metadata": {}}))
            .unwrap();
        assert_eq!(
            serde_json::to_string(&get).unwrap(),
            r#"{"id":"t","historyLength":2}"#
        );
        let cancel = task_id_params_from_v03(&json!({"id": "t", "metadata": {"m": 1}})).unwrap();
        assert_eq!(
            serde_json::to_string(&cancel).unwrap(),
            r#"{"id":"t","metadata":{"m":1}}"#
        );
        let err = task_id_params_from_v03(&json!({"id": 7})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid task id params: invalid type: integer `7`, expected a string at `id`"
        );
        assert_eq!(err.kind(), "invalid_json");
    }

    #[test]
    fn push_configs_round_trip() {
        let v03 = json!({"taskId": "t", "pushNotificationConfig": {"id": "p", "url": "https://h/cb", "token": "k",
                         "authentication": {"schemes": ["Bearer"], "credentials": "s"}}});
        let config = push_config_from_v03(&v03).unwrap();
        assert_eq!(
            serde_json::to_string(&config).unwrap(),
            r#"{"id":"p","taskId":"t","url":"https://h/cb","token":"k","authentication":{"scheme":"Bearer","credentials":"s"}}"#
        );
        assert_eq!(push_config_to_v03(&config), v03);
        let get =
            push_config_id_params_from_v03(&json!({"id": "t", "pushNotificationConfigId": "p"}))
                .unwrap();
        assert_eq!(
            serde_json::to_string(&get).unwrap(),
            r#"{"taskId":"t","id":"p"}"#
        );
        let get = push_config_id_params_from_v03(&json!({"id": "t"})).unwrap();
        assert_eq!(get.id, "t");
        let list = list_push_configs_params_from_v03(&json!({"id": "t"})).unwrap();
        assert_eq!(serde_json::to_string(&list).unwrap(), r#"{"taskId":"t"}"#);
    }

    #[test]
    fn v1_task_survives_a_v03_round_trip() {
        let json = concat!(
            r#"{"id":"t","contextId":"c","status":{"state":"TASK_STATE_AUTH_REQUIRED","#,
            r#""message":{"messageId":"s","role":"ROLE_AGENT","parts":[{"text":"log in"}]},"timestamp":"2026-01-01T00:00:00.000Z"},"#,
            r#""artifacts":[{"artifactId":"a","name":"n","description":"d","parts":[{"raw":"AAE=","filename":"f.bin","mediaType":"application/octet-stream"}],"#,
            r#""metadata":{"k":"v"},"extensions":["urn:e"]}],"#,
            r#""history":[{"messageId":"m","contextId":"c","taskId":"t","role":"ROLE_USER","parts":[{"url":"https://x"}]}],"metadata":{"z":1}}"#
        );
        let task: Task = serde_json::from_str(json).unwrap();
        let v03 = task_to_v03(&task);
        assert_eq!(v03["status"]["state"], json!("auth-required"));
        assert_eq!(v03["history"][0]["kind"], json!("message"));
        let back = task_from_v03(&v03).unwrap();
        assert_eq!(back, task);
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        let (event, _) = stream_response_from_v03(&v03).unwrap();
        assert_eq!(event, StreamResponse::Task(task));
    }

    #[test]
    fn unknown_kinds_are_errors() {
        let err = stream_response_from_v03(&json!({"kind": "nope"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid 0.3 stream event: unknown kind \"nope\", expected one of `task`, `message`, `status-update`, `artifact-update`"
        );
        let err = send_response_from_v03(&json!({"id": "t"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid 0.3 send result: missing field `kind` (one of `task`, `message`)"
        );
        let message = json!({"kind": "message", "messageId": "m", "role": "agent", "parts": [{"kind": "text", "text": "x"}]});
        let response = send_response_from_v03(&message).unwrap();
        assert_eq!(
            response,
            SendMessageResponse::Message(Message::agent_text("m", "x"))
        );
        assert_eq!(send_response_to_v03(&response), message);
    }
}
