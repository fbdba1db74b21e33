//! Resources: what `resources/list`, `resources/templates/list` and `resources/read` serve,
//! and how an A2A task reads as a resource.
//!
//! Every task is addressable: `agentlog://tasks/{taskId}` ([`TASK_URI_TEMPLATE`]) reads its
//! outputs and `agentlog://tasks/{taskId}/artifacts/{artifactId}` ([`ARTIFACT_URI_TEMPLATE`])
//! one artifact, the task id being `<agent>:<A2A task id>` (an MCP task's id). A task's outputs
//! ([`task_contents`]) are its artifacts' parts; a tool call's task, which records its answer
//! in its status instead, reads as the `CallToolResult`'s content blocks; a task with neither
//! reads as its status ([`status_document`]), so a read never answers empty contents.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::call::{ContentBlock, RESULT_MEDIA_TYPE, data_part, result_of};
use super::task::McpTaskStatus;
use super::uri_template::UriTemplate;
use crate::a2a::{Part, PartContent, Task};

/// The template of a task's resource.
pub const TASK_URI_TEMPLATE: &str = "agentlog://tasks/{taskId}";
/// The template of one artifact of a task.
pub const ARTIFACT_URI_TEMPLATE: &str = "agentlog://tasks/{taskId}/artifacts/{artifactId}";
/// What every task resource's URI starts with.
pub const TASKS_URI_PREFIX: &str = "agentlog://tasks/";
/// The media type of a task's status read as a resource.
pub const STATUS_MEDIA_TYPE: &str = "application/json";

/// A resource as `resources/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// `{audience, priority, lastModified}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Its size in bytes (before any encoding), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
    /// Free-form metadata.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A resource template as `resources/templates/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// An RFC 6570 URI template (level 1: `{name}` variables; [`UriTemplate`]).
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The media type of every resource it names, if they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Icons, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
    /// Free-form metadata.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// One item of a `resources/read` result: text, or bytes as base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub enum ResourceContents {
    /// Text.
    Text {
        /// The URI of what this is (a resource, or a part of one).
        uri: String,
        /// Its media type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// Bytes.
    Blob {
        /// The URI of what this is.
        uri: String,
        /// Its media type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The bytes, standard base64.
        blob: String,
    },
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: &str, mime_type: Option<&str>, text: impl Into<String>) -> Self {
        ResourceContents::Text {
            uri: uri.to_owned(),
            mime_type: mime_type.map(str::to_owned),
            text: text.into(),
        }
    }

    /// Bytes, encoded as base64.
    pub fn blob(uri: &str, mime_type: Option<&str>, bytes: &[u8]) -> Self {
        ResourceContents::Blob {
            uri: uri.to_owned(),
            mime_type: mime_type.map(str::to_owned),
            blob: STANDARD.encode(bytes),
        }
    }
}

/// Which task resource a URI names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskResource {
    /// A task's outputs: `agentlog://tasks/{taskId}`.
    Task(String),
    /// One artifact: `agentlog://tasks/{taskId}/artifacts/{artifactId}`.
    Artifact(String, String),
}

impl TaskResource {
    /// The task resource `uri` names, if it names one (its values percent-decoded).
    pub fn of(uri: &str) -> Option<TaskResource> {
        if !uri.starts_with(TASKS_URI_PREFIX) {
            return None;
        }
        let template = |text| UriTemplate::parse(text).ok();
        if let Some(mut values) = template(TASK_URI_TEMPLATE).and_then(|t| t.matches(uri)) {
            return values.pop().map(|(_, id)| TaskResource::Task(id));
        }
        let mut values = template(ARTIFACT_URI_TEMPLATE)?.matches(uri)?.into_iter();
        let (_, task) = values.next()?;
        let (_, artifact) = values.next()?;
        Some(TaskResource::Artifact(task, artifact))
    }
}

/// The URI of task `task_id`'s resource (`<agent>:<A2A id>`, percent-encoded as RFC 6570
/// expands it).
pub fn task_uri(task_id: &str) -> String {
    format!("{TASKS_URI_PREFIX}{}", super::uri_template::encode(task_id))
}

/// The URI of artifact `artifact_id` of task `task_id`.
pub fn artifact_uri(task_id: &str, artifact_id: &str) -> String {
    format!(
        "{}/artifacts/{}",
        task_uri(task_id),
        super::uri_template::encode(artifact_id)
    )
}

/// How task `task_id` shows in `resources/list`: its URI, its id as the name, the agent and
/// its MCP status as the title, its status message as the description, and its last status
/// time as `annotations.lastModified`.
pub fn task_listing(task_id: &str, task: &Task) -> Resource {
    let agent = task_id.rsplit_once(':').map_or(task_id, |(agent, _)| agent);
    let status = McpTaskStatus::of(task.status.state);
    Resource {
        uri: task_uri(task_id),
        name: task_id.to_owned(),
        title: Some(format!("{agent} task ({})", status.as_str())),
        description: task
            .status
            .message
            .as_ref()
            .map(|m| text_of(&m.parts))
            .filter(|t| !t.is_empty()),
        mime_type: None,
        annotations: task
            .status
            .timestamp
            .as_ref()
            .map(|at| json!({"lastModified": at})),
        size: None,
        icons: None,
        meta: None,
    }
}

/// What reading task `task_id` gives: every artifact's parts, each under its artifact's URI;
/// without artifacts, a tool call's result (its content blocks, under the task's URI); without
/// either, its status ([`status_document`]).
pub fn task_contents(task_id: &str, task: &Task) -> Vec<ResourceContents> {
    let mut contents: Vec<ResourceContents> = task
        .artifacts
        .iter()
        .flat_map(|a| artifact_parts(&artifact_uri(task_id, &a.artifact_id), &a.parts))
        .collect();
    if contents.is_empty() {
        let uri = task_uri(task_id);
        let message = task.status.message.as_ref();
        if message.is_some_and(|m| data_part(m, RESULT_MEDIA_TYPE).is_some())
            && let Ok(result) = result_of(message)
        {
            contents = result
                .content
                .iter()
                .map(|block| block_contents(&uri, block))
                .collect();
        }
        if contents.is_empty() {
            contents.push(status_document(task_id, task));
        }
    }
    contents
}

/// What reading artifact `artifact_id` of task `task_id` gives: its parts; `None` when the
/// task has no such artifact.
pub fn artifact_contents(
    task_id: &str,
    task: &Task,
    artifact_id: &str,
) -> Option<Vec<ResourceContents>> {
    let artifact = task
        .artifacts
        .iter()
        .find(|a| a.artifact_id == artifact_id)?;
    Some(artifact_parts(
        &artifact_uri(task_id, artifact_id),
        &artifact.parts,
    ))
}

/// A task's status as JSON: `{taskId, status, statusMessage?, lastUpdatedAt?}` (MCP's task
/// statuses).
pub fn status_document(task_id: &str, task: &Task) -> ResourceContents {
    let mut document = Map::new();
    document.insert("taskId".into(), json!(task_id));
    document.insert(
        "status".into(),
        json!(McpTaskStatus::of(task.status.state).as_str()),
    );
    if let Some(message) = &task.status.message {
        let text = text_of(&message.parts);
        if !text.is_empty() {
            document.insert("statusMessage".into(), json!(text));
        }
    }
    if let Some(at) = &task.status.timestamp {
        document.insert("lastUpdatedAt".into(), json!(at));
    }
    ResourceContents::text(
        &task_uri(task_id),
        Some(STATUS_MEDIA_TYPE),
        Value::Object(document).to_string(),
    )
}

fn artifact_parts(uri: &str, parts: &[Part]) -> Vec<ResourceContents> {
    if parts.is_empty() {
        return vec![ResourceContents::text(uri, Some("text/plain"), "")];
    }
    parts.iter().map(|part| part_contents(uri, part)).collect()
}

/// An A2A part as resource contents under `uri`: text as text (`text/plain` unless the part
/// names its media type), bytes as a blob (`application/octet-stream`), data as its JSON text
/// (`application/json`), a URL as a `text/uri-list`.
pub fn part_contents(uri: &str, part: &Part) -> ResourceContents {
    let media = |default: &'static str| Some(part.media_type.as_deref().unwrap_or(default));
    match &part.content {
        PartContent::Text(text) => ResourceContents::text(uri, media("text/plain"), text.clone()),
        PartContent::Raw(bytes) => {
            ResourceContents::blob(uri, media("application/octet-stream"), bytes)
        }
        PartContent::Data(data) => {
            ResourceContents::text(uri, media("application/json"), data.to_string())
        }
        PartContent::Url(url) => ResourceContents::text(uri, Some("text/uri-list"), url.clone()),
    }
}

/// A tool result's content block as resource contents under `uri`: text as `text/plain`, an
/// image or audio as its blob, an embedded resource as itself (its own URI), a link as a
/// `text/uri-list`.
pub fn block_contents(uri: &str, block: &ContentBlock) -> ResourceContents {
    match block {
        ContentBlock::Text { text, .. } => ResourceContents::text(uri, Some("text/plain"), text),
        ContentBlock::Image {
            data, mime_type, ..
        }
        | ContentBlock::Audio {
            data, mime_type, ..
        } => ResourceContents::Blob {
            uri: uri.to_owned(),
            mime_type: Some(mime_type.clone()),
            blob: data.clone(),
        },
        ContentBlock::Resource { resource, .. } => ResourceContents::deserialize(resource)
            .unwrap_or_else(|_| {
                ResourceContents::text(uri, Some("application/json"), resource.to_string())
            }),
        ContentBlock::ResourceLink { uri: link, .. } => {
            ResourceContents::text(uri, Some("text/uri-list"), link)
        }
    }
}

fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| p.as_text())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
