//! Writing 0.3: the 1.0 model as 0.3 JSON objects.

use serde_json::{Map, Value, json};

use crate::a2a::{
    Artifact, Message, Part, PartContent, SendMessageResponse, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskStatus, TaskStatusUpdateEvent,
    encode_base64,
};

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
