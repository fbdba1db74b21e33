//! `tools/call`: its params, its result, and how both travel in A2A records.
//!
//! # On the log
//!
//! A tool call is an A2A task on the tool's topics, so the view, the fold and the workers
//! serve it unchanged:
//!
//! - the **command**'s params are a `SendMessageRequest` ([`command_params`]) whose message
//!   has one data part of media type [`CALL_MEDIA_TYPE`] holding the `tools/call` params
//!   **byte-exact** as the client sent them (the text is spliced in, never re-encoded), and
//!   the call's bridge path in its metadata (`agentlog.hops`, the hop guard);
//! - a **progress** report is a `working` status whose message has a data part of media type
//!   [`PROGRESS_MEDIA_TYPE`] (`{progress, total?, message?}`);
//! - a **log message** is a `working` status whose message has a data part of media type
//!   [`LOG_MEDIA_TYPE`] (`{level, logger?, data}`: [`LogMessage`](super::LogMessage));
//! - the **result** is a `completed` terminal whose message has a data part of media type
//!   [`RESULT_MEDIA_TYPE`] holding the `CallToolResult` (also when `isError` is true: a
//!   tool failure is a result);
//! - a **protocol failure** is a `failed` terminal whose message has a data part of media
//!   type [`ERROR_MEDIA_TYPE`] holding a JSON-RPC error object `{code, message, data?}`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::a2a::{Message, Part, PartContent};

/// Media type of the data part carrying a `tools/call`'s params in a command.
pub const CALL_MEDIA_TYPE: &str = "application/vnd.agentlog.mcp-call+json";
/// Media type of the data part carrying a `CallToolResult` in a completed status.
pub const RESULT_MEDIA_TYPE: &str = "application/vnd.agentlog.mcp-result+json";
/// Media type of the data part carrying a JSON-RPC error object in a failed status.
pub const ERROR_MEDIA_TYPE: &str = "application/vnd.agentlog.jsonrpc-error+json";
/// Media type of the data part carrying a `tasks/update`'s `{inputResponses}` in a follow-up.
pub const INPUT_RESPONSES_MEDIA_TYPE: &str = "application/vnd.agentlog.mcp-input-responses+json";
/// Media type of the data part carrying a tool's `{inputRequests}` in an input-required status.
pub const INPUT_REQUESTS_MEDIA_TYPE: &str = "application/vnd.agentlog.mcp-input-requests+json";
/// Media type of the data part carrying a progress report in a working status.
pub const PROGRESS_MEDIA_TYPE: &str = "application/vnd.agentlog.progress+json";
/// Media type of the data part carrying a log message (`notifications/message`'s params) in a
/// working status.
pub const LOG_MEDIA_TYPE: &str = "application/vnd.agentlog.mcp-log+json";
/// Media type of the data part carrying one change of a legacy session's resource
/// subscriptions (`{"subscribe": uri}` or `{"unsubscribe": uri}`; the session's first message
/// `{"session": id}`) in a message of the session's task.
pub const SUBSCRIPTIONS_MEDIA_TYPE: &str = "application/vnd.agentlog.mcp-subscriptions+json";

/// The call name under which a worker answers `prompts/get` of prompt `name`: a
/// worker-answered prompt rides on the log as a call of this name (never a tool's: tool names
/// hold no `/`), its `GetPromptResult` as the result's `structuredContent`.
pub fn prompt_call_name(name: &str) -> String {
    format!("prompts/get:{name}")
}

/// The call name under which a worker answers `resources/read` of a match of resource
/// template `uri_template` (its `ReadResourceResult` as the result's `structuredContent`).
pub fn resource_call_name(uri_template: &str) -> String {
    format!("resources/read:{uri_template}")
}

/// The call name under which a worker answers `completion/complete` of prompt `name`'s
/// arguments (the result's `structuredContent` is `{completion}`).
pub fn prompt_completion_call_name(name: &str) -> String {
    format!("completion/complete:ref/prompt:{name}")
}

/// The call name under which a worker answers `completion/complete` of resource template
/// `uri_template`'s variables.
pub fn resource_completion_call_name(uri_template: &str) -> String {
    format!("completion/complete:ref/resource:{uri_template}")
}

/// `tools/call` params (the members the bridge reads; the raw text is what is recorded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolParams {
    /// The tool.
    pub name: String,
    /// The arguments, checked against the tool's `inputSchema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Request metadata: `progressToken`, the modern era's version and capabilities, the
    /// hop path under [`super::META_HOPS`].
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Legacy era: run the call as a task (`{ttl?}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
    /// Modern era (MRTR): the client's answers to an `input_required` result's
    /// `inputRequests`, by key.
    #[serde(
        default,
        rename = "inputResponses",
        skip_serializing_if = "Option::is_none"
    )]
    pub input_responses: Option<Map<String, Value>>,
    /// Modern era (MRTR): the `requestState` of the `input_required` result this call retries.
    #[serde(
        default,
        rename = "requestState",
        skip_serializing_if = "Option::is_none"
    )]
    pub request_state: Option<String>,
}

impl CallToolParams {
    /// The progress token the client asked progress under, if any (a string or a number).
    pub fn progress_token(&self) -> Option<&Value> {
        self.meta
            .as_ref()
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_number())
    }
}

/// A tool's answer: content blocks, optional structured content, and whether the tool failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// What the tool returned (required, may be empty).
    pub content: Vec<ContentBlock>,
    /// The result as JSON, matching the tool's `outputSchema` when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool failed (a tool failure, for the model to read; not a protocol error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result metadata.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentBlock::text(text)],
            ..Self::default()
        }
    }

    /// A tool failure: one text block, `isError: true`.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            is_error: Some(true),
            ..Self::text(text)
        }
    }

    /// A structured result: `value` as `structuredContent`, and its JSON text as a text
    /// block (the spec's advice for clients that read only content).
    pub fn structured(value: Value) -> Self {
        Self {
            content: vec![ContentBlock::text(value.to_string())],
            structured_content: Some(value),
            ..Self::default()
        }
    }
}

/// A content block, by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// `{audience, priority, lastModified}`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Metadata.
        #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
    /// An image, base64.
    Image {
        /// Base64 bytes.
        data: String,
        /// e.g. `image/png`.
        mime_type: String,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Metadata.
        #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
    /// Audio, base64.
    Audio {
        /// Base64 bytes.
        data: String,
        /// e.g. `audio/wav`.
        mime_type: String,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Metadata.
        #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
    /// A link to a resource.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// What it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its media type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Metadata.
        #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
    /// An embedded resource: `{uri, mimeType?, text | blob}`.
    Resource {
        /// The resource contents.
        resource: Value,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Metadata.
        #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// The `SendMessageRequest` JSON of a command recording a tool call: `raw_params` (the
/// `tools/call` params as received, already checked to be a JSON object) is spliced in
/// verbatim as the data part, so the record holds the client's bytes. `metadata` is the
/// message's metadata object (the hop path, the era); `context_id`, when given, the message's
/// context (the task's: a legacy sync call's, so `notifications/cancelled` can find it).
/// With `as_task` the request asks for the task at once (`returnImmediately`): an MCP task.
pub fn command_params(
    message_id: &str,
    context_id: Option<&str>,
    raw_params: &str,
    metadata: &Map<String, Value>,
    as_task: bool,
) -> String {
    // Strings and the metadata go through serde (escaping); only the raw params are spliced.
    // Written into one buffer: a call's bridge writes this text once per call.
    let mut out = Vec::with_capacity(raw_params.len() + 256);
    out.extend_from_slice(br#"{"message":{"messageId":"#);
    push_json(&mut out, message_id);
    if let Some(context) = context_id {
        out.extend_from_slice(br#","contextId":"#);
        push_json(&mut out, context);
    }
    out.extend_from_slice(br#","role":"ROLE_USER","parts":[{"data":"#);
    out.extend_from_slice(raw_params.as_bytes());
    out.extend_from_slice(br#","mediaType":""#);
    out.extend_from_slice(CALL_MEDIA_TYPE.as_bytes());
    out.extend_from_slice(br#""}],"metadata":"#);
    push_json(&mut out, metadata);
    out.push(b'}');
    if as_task {
        out.extend_from_slice(br#","configuration":{"returnImmediately":true}"#);
    }
    out.push(b'}');
    // Only UTF-8 went in (the raw params are a `str`, serde writes UTF-8).
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Append `value`'s JSON to `out`; a string or a JSON object's map cannot fail to encode.
fn push_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// The data of the first part of `message` with media type `media_type`.
pub fn data_part<'a>(message: &'a Message, media_type: &str) -> Option<&'a Value> {
    message.parts.iter().find_map(|part| match &part.content {
        PartContent::Data(data) if part.media_type.as_deref() == Some(media_type) => Some(data),
        _ => None,
    })
}

/// A data part of `media_type` holding `data`.
pub fn typed_part(data: Value, media_type: &str) -> Part {
    Part {
        media_type: Some(media_type.to_owned()),
        ..Part::data(data)
    }
}

/// The tool call a command's message carries, if it carries one.
pub fn call_of(message: &Message) -> Option<Result<CallToolParams, String>> {
    data_part(message, CALL_MEDIA_TYPE)
        .map(|data| CallToolParams::deserialize(data).map_err(|e| e.to_string()))
}

/// The result a completed status message carries: its [`RESULT_MEDIA_TYPE`] part, or, for a
/// message written by a plain A2A handler, its text parts as text blocks.
pub fn result_of(message: Option<&Message>) -> Result<CallToolResult, String> {
    let Some(message) = message else {
        return Ok(CallToolResult::default());
    };
    if let Some(data) = data_part(message, RESULT_MEDIA_TYPE) {
        return CallToolResult::deserialize(data).map_err(|e| e.to_string());
    }
    let content = message
        .parts
        .iter()
        .filter_map(|part| match &part.content {
            PartContent::Text(text) => Some(ContentBlock::text(text.clone())),
            PartContent::Data(data) => Some(ContentBlock::text(data.to_string())),
            _ => None,
        })
        .collect();
    Ok(CallToolResult {
        content,
        ..CallToolResult::default()
    })
}

/// A progress report: `{progress, total?, message?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// How far: strictly increasing within a call.
    pub progress: f64,
    /// Out of how much, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A human-readable note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The progress report a working status message carries, if any.
pub fn progress_of(message: &Message) -> Option<Progress> {
    data_part(message, PROGRESS_MEDIA_TYPE).and_then(|d| Progress::deserialize(d).ok())
}

/// The log message a working status message carries, if any.
pub fn log_of(message: &Message) -> Option<super::LogMessage> {
    data_part(message, LOG_MEDIA_TYPE).and_then(|d| super::LogMessage::deserialize(d).ok())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::a2a::SendMessageRequest;
    use serde_json::json;

    #[test]
    fn a_command_holds_the_call_byte_exact() {
        let raw = r#"{ "name":"add" ,"arguments":{"b":2,"a":1.50}}"#;
        let mut metadata = Map::new();
        metadata.insert("agentlog.hops".into(), json!(["x"]));
        let text = command_params("m\"1", None, raw, &metadata, false);
        assert_eq!(
            text,
            format!(
                r#"{{"message":{{"messageId":"m\"1","role":"ROLE_USER","parts":[{{"data":{raw},"mediaType":"{CALL_MEDIA_TYPE}"}}],"metadata":{{"agentlog.hops":["x"]}}}}}}"#
            )
        );
        assert_eq!(
            command_params("m", Some("c\"1"), raw, &metadata, true),
            format!(
                r#"{{"message":{{"messageId":"m","contextId":"c\"1","role":"ROLE_USER","parts":[{{"data":{raw},"mediaType":"{CALL_MEDIA_TYPE}"}}],"metadata":{{"agentlog.hops":["x"]}}}},"configuration":{{"returnImmediately":true}}}}"#
            )
        );
        let request: SendMessageRequest = serde_json::from_str(&text).unwrap();
        assert!(request.configuration.is_none());
        assert_eq!(request.message.context_id, None);
        let task: SendMessageRequest =
            serde_json::from_str(&command_params("m", Some("c\"1"), raw, &metadata, true)).unwrap();
        assert!(task.configuration.unwrap().return_immediately);
        assert_eq!(task.message.context_id.as_deref(), Some("c\"1"));
        assert_eq!(request.message.message_id, "m\"1");
        assert_eq!(
            request.message.metadata.unwrap()["agentlog.hops"],
            json!(["x"])
        );
        let mut message = Message::user_text("m", "x");
        assert!(call_of(&message).is_none());
        let call: SendMessageRequest = serde_json::from_str(&text).unwrap();
        message.parts = call.message.parts;
        let call = call_of(&message).unwrap().unwrap();
        assert_eq!(call.name, "add");
        assert_eq!(call.arguments.unwrap()["a"], json!(1.5));
    }

    #[test]
    fn results_and_content_blocks_have_the_spec_shape() {
        let result = CallToolResult {
            content: vec![
                ContentBlock::text("hi"),
                ContentBlock::Image {
                    data: "aGk=".into(),
                    mime_type: "image/png".into(),
                    annotations: None,
                    meta: None,
                },
            ],
            is_error: Some(true),
            ..CallToolResult::default()
        };
        let json = json!({
            "content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "aGk=", "mimeType": "image/png"}],
            "isError": true
        });
        assert_eq!(serde_json::to_value(&result).unwrap(), json);
        assert_eq!(
            serde_json::from_value::<CallToolResult>(json).unwrap(),
            result
        );
        assert!(serde_json::from_value::<ContentBlock>(json!({"type": "video"})).is_err());
        let structured = CallToolResult::structured(json!({"sum": 3}));
        assert_eq!(structured.content, vec![ContentBlock::text(r#"{"sum":3}"#)]);
    }

    #[test]
    fn results_and_progress_are_read_back_from_status_messages() {
        let mut message = Message::agent_text("s", "plain");
        assert_eq!(
            result_of(Some(&message)).unwrap(),
            CallToolResult::text("plain")
        );
        message.parts = vec![typed_part(
            serde_json::to_value(CallToolResult::error("no")).unwrap(),
            RESULT_MEDIA_TYPE,
        )];
        assert_eq!(
            result_of(Some(&message)).unwrap(),
            CallToolResult::error("no")
        );
        assert_eq!(result_of(None).unwrap(), CallToolResult::default());
        message.parts = vec![typed_part(
            json!({"progress": 50, "total": 100}),
            PROGRESS_MEDIA_TYPE,
        )];
        let progress = progress_of(&message).unwrap();
        assert_eq!((progress.progress, progress.total), (50.0, Some(100.0)));
        assert!(log_of(&message).is_none());
        message.parts = vec![typed_part(
            json!({"level": "warning", "logger": "db", "data": {"slow": true}}),
            LOG_MEDIA_TYPE,
        )];
        let log = log_of(&message).unwrap();
        assert_eq!(log.level, super::super::LoggingLevel::Warning);
        assert_eq!(
            (log.logger.as_deref(), log.data),
            (Some("db"), json!({"slow": true}))
        );
        assert!(progress_of(&message).is_none());
    }
}
