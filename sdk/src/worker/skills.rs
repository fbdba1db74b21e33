//! Skills: one agent, many handlers ([`Skills`], a [`Handler`] running the handler of each
//! task's skill).
//!
//! A task's skill is the one its first message names (`crate::skill`: metadata
//! `agentlog.skill`, or `skillId`); the bridge has checked it is on the card, and its input
//! against the skill's schema, before writing anything. Every turn of the task (follow-ups
//! too) runs that skill's handler. A message naming no skill, or a skill with no handler
//! here, goes to the default handler. MCP tool calls on the agent's topics go to its
//! [`Tools`], and a skill named like one of those tools is answered by that tool's handler:
//! one definition, one handler, over MCP and A2A.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::a2a::{Artifact, Message, Part, PartContent};
use agentlog_wire::mcp::call::call_of;
use agentlog_wire::mcp::{CallToolParams, CallToolResult, ContentBlock};
use base64::Engine as _;
use serde_json::{Map, Value};

use super::tools::{ToolCall, ToolHandler, Tools};
use super::{Handler, HandlerError, TaskContext};

/// A [`Handler`] routing each task to the handler of its skill, else to a default handler.
#[derive(Clone, Default)]
pub struct Skills {
    skills: BTreeMap<String, Arc<dyn Handler>>,
    default: Option<Arc<dyn Handler>>,
    tools: Option<Tools>,
}

impl std::fmt::Debug for Skills {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Skills")
            .field("skills", &self.skills.keys().collect::<Vec<_>>())
            .field("default", &self.default.is_some())
            .field("tools", &self.tools)
            .finish()
    }
}

impl Skills {
    /// No handlers yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Run `handler` for the tasks of skill `id` (replacing any earlier handler of it).
    pub fn skill(mut self, id: impl Into<String>, handler: impl Handler) -> Self {
        self.skills.insert(id.into(), Arc::new(handler));
        self
    }

    /// Run `handler` for the tasks naming no skill, or a skill with no handler here.
    /// Without one such a task fails, saying which skills this worker serves.
    pub fn default_handler(mut self, handler: impl Handler) -> Self {
        self.default = Some(Arc::new(handler));
        self
    }

    /// Answer the MCP tool calls on this agent's topics with `tools` (tools whose `agent` is
    /// this one), and a task of a skill named like one of them with that tool's handler: the
    /// arguments are the message's data part, the result the artifact named after the tool
    /// (its content blocks as parts, `structuredContent` as a data part), `isError` a failed
    /// task. An A2A task's ask waits for its owner without a deadline.
    pub fn tools(mut self, tools: Tools) -> Self {
        self.tools = Some(tools);
        self
    }

    /// The skills with a handler here (their own, or a tool's), by id.
    pub fn ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.skills.keys().map(String::as_str).collect();
        if let Some(tools) = &self.tools {
            ids.extend(
                tools
                    .names()
                    .filter(|name| !self.skills.contains_key(*name)),
            );
        }
        ids.sort_unstable();
        ids
    }
}

#[async_trait::async_trait]
impl Handler for Skills {
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError> {
        let first = task.history().first().unwrap_or(task.message());
        if call_of(first).is_some() {
            // An MCP call; with no tools here, `Tools` answers it as an unknown tool.
            return match &self.tools {
                Some(tools) => tools.handle(task).await,
                None => Tools::new().handle(task).await,
            };
        }
        let skill = task.skill().map(str::to_owned);
        if let Some(id) = &skill {
            if let Some(handler) = self.skills.get(id) {
                return handler.handle(task).await;
            }
            if let Some(handler) = self.tools.as_ref().and_then(|t| t.handler(id)) {
                return tool_skill(id, handler, task).await;
            }
        }
        if let Some(handler) = &self.default {
            return handler.handle(task).await;
        }
        let served = self.ids().join(", ");
        let text = match skill {
            Some(id) => {
                format!("this worker has no handler for skill {id:?} (it serves: {served})")
            }
            None => format!(
                "this agent takes messages for its skills: name one in the message's metadata \"{}\" (it serves: {served})",
                crate::skill::SKILL_METADATA_KEY
            ),
        };
        task.fail(&text).await?;
        Ok(())
    }
}

/// Answer an A2A task of skill `name` with tool `name`'s handler.
async fn tool_skill(
    name: &str,
    handler: Arc<dyn ToolHandler>,
    task: TaskContext,
) -> Result<(), HandlerError> {
    let first = task.history().first().unwrap_or(task.message());
    let arguments = data_object(first).unwrap_or_default();
    // A later turn answers an ask: its data part is the responses, by key.
    let resumed = task.message().message_id != first.message_id;
    let input_responses = resumed.then(|| data_object(task.message())).flatten();
    let params = CallToolParams {
        name: name.to_owned(),
        arguments: Some(arguments),
        meta: None,
        task: None,
        input_responses: None,
        request_state: None,
    };
    // An A2A task is the owner's to cancel: its asks record no deadline.
    let call = ToolCall::new(params, input_responses, task.clone(), Duration::ZERO);
    match handler.call(call).await {
        Ok(result) if result.is_error == Some(true) => {
            task.fail(&texts(&result.content)).await?;
        }
        Ok(result) => {
            let artifact = Artifact {
                artifact_id: name.to_owned(),
                name: Some(name.to_owned()),
                description: None,
                parts: parts_of(result),
                metadata: None,
                extensions: Vec::new(),
            };
            task.artifact(artifact, false, true).await?;
            task.complete(None).await?;
        }
        Err(e) => task.fail(&format!("the tool failed: {e}")).await?,
    }
    Ok(())
}

/// The message's first data part, when it is a JSON object.
fn data_object(message: &Message) -> Option<Map<String, Value>> {
    message.parts.iter().find_map(|part| match &part.content {
        PartContent::Data(Value::Object(object)) => Some(object.clone()),
        _ => None,
    })
}

/// A tool failure's text blocks, for the failed task's message.
fn texts(content: &[ContentBlock]) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if texts.is_empty() {
        "the tool reported an error".to_owned()
    } else {
        texts.join("\n")
    }
}

/// A tool's result as artifact parts: text as text, images and audio as bytes of their
/// media type, a resource link as a URL, an embedded resource as its text or bytes, and the
/// structured content as a data part. An artifact needs a part: an empty result is one
/// empty text.
fn parts_of(result: CallToolResult) -> Vec<Part> {
    let mut parts: Vec<Part> = result.content.into_iter().map(part_of).collect();
    if let Some(structured) = result.structured_content {
        parts.push(Part {
            media_type: Some("application/json".to_owned()),
            ..Part::data(structured)
        });
    }
    if parts.is_empty() {
        parts.push(Part::text(""));
    }
    parts
}

fn part_of(block: ContentBlock) -> Part {
    let typed = |content: PartContent, media_type: Option<String>| Part {
        content,
        metadata: None,
        filename: None,
        media_type,
    };
    let bytes = |data: &str, media_type: String| match base64_bytes(data) {
        Some(bytes) => typed(PartContent::Raw(bytes), Some(media_type)),
        None => typed(PartContent::Text(data.to_owned()), Some(media_type)),
    };
    match block {
        ContentBlock::Text { text, .. } => Part::text(text),
        ContentBlock::Image {
            data, mime_type, ..
        }
        | ContentBlock::Audio {
            data, mime_type, ..
        } => bytes(&data, mime_type),
        ContentBlock::ResourceLink {
            uri,
            name,
            mime_type,
            ..
        } => Part {
            filename: Some(name),
            ..typed(PartContent::Url(uri), mime_type)
        },
        ContentBlock::Resource { resource, .. } => {
            let media_type = resource
                .get("mimeType")
                .and_then(Value::as_str)
                .map(str::to_owned);
            match (resource.get("text"), resource.get("blob")) {
                (Some(Value::String(text)), _) => {
                    typed(PartContent::Text(text.clone()), media_type)
                }
                (_, Some(Value::String(blob))) => match base64_bytes(blob) {
                    Some(bytes) => typed(PartContent::Raw(bytes), media_type),
                    None => typed(PartContent::Data(resource), Some("application/json".into())),
                },
                _ => typed(PartContent::Data(resource), Some("application/json".into())),
            }
        }
    }
}

fn base64_bytes(data: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_tool_result_becomes_artifact_parts() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "HI"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "docs://a", "name": "a", "mimeType": "text/plain"},
                {"type": "resource", "resource": {"uri": "docs://b", "mimeType": "text/plain", "text": "b"}}
            ],
            "structuredContent": {"upper": "HI"}
        }))
        .unwrap();
        let parts = parts_of(result);
        assert_eq!(parts[0], Part::text("HI"));
        assert_eq!(parts[1].content, PartContent::Raw(b"hi".to_vec()));
        assert_eq!(parts[1].media_type.as_deref(), Some("image/png"));
        assert_eq!(parts[2].content, PartContent::Url("docs://a".into()));
        assert_eq!(parts[3].content, PartContent::Text("b".into()));
        assert_eq!(parts[4].content, PartContent::Data(json!({"upper": "HI"})));
        assert_eq!(parts_of(CallToolResult::default()), [Part::text("")]);
        let failure = CallToolResult::error("bad input");
        assert_eq!(texts(&failure.content), "bad input");
    }
}
