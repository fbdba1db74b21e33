//! The follow-up carrying a client's input responses to a task that asked (a `tasks/update`'s,
//! an MRTR retry's, a relayed request's answer), and how it is sent. A leaf: the files that
//! write input responses share it.

use agentlog_wire::a2a::{Message, SendMessageConfiguration, SendMessageRequest};
use serde_json::{Map, Value, json};

/// A send of `message` that answers once it is on the log, without waiting for the task.
pub(super) fn at_once(message: Message) -> SendMessageRequest {
    SendMessageRequest {
        tenant: None,
        message,
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        }),
        metadata: None,
    }
}

/// The follow-up message carrying `responses` to task `task_id` (a `tasks/update`'s, or an
/// MRTR retry's).
pub(super) fn input_message(task_id: &str, responses: Map<String, Value>) -> Message {
    use agentlog_wire::a2a::Role;
    use agentlog_wire::mcp::call::{INPUT_RESPONSES_MEDIA_TYPE, typed_part};
    Message {
        task_id: Some(task_id.to_owned()),
        parts: vec![typed_part(
            json!({"inputResponses": responses}),
            INPUT_RESPONSES_MEDIA_TYPE,
        )],
        ..Message::new_text(Role::User, uuid::Uuid::new_v4().to_string(), "")
    }
}
