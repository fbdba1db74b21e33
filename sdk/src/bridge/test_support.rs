//! What the bridge's unit tests share.
#![allow(clippy::unwrap_used)]

use agentlog_wire::a2a::{Message, SendMessageConfiguration, SendMessageRequest};

use crate::log::{Log, TopicRef};

/// A `SendMessage` of "hi" under `message_id`.
pub(super) fn send_request(message_id: &str, return_immediately: bool) -> SendMessageRequest {
    SendMessageRequest {
        tenant: None,
        message: Message::user_text(message_id.to_owned(), "hi"),
        configuration: Some(SendMessageConfiguration {
            return_immediately,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

/// How many records `topic` holds, over its partitions.
pub(super) async fn records_on(log: &Log, topic: &TopicRef) -> u64 {
    log.end_offsets(topic).await.unwrap().iter().sum()
}
