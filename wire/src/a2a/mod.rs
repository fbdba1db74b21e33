//! The A2A 1.0 data model as serde types (ProtoJSON of `lf.a2a.v1`).
//!
//! JSON out is camelCase with enums as SCREAMING names; JSON in accepts camelCase and snake_case
//! field names and ignores unknown fields. Optional fields are omitted when unset and repeated
//! fields when empty, except where the spec requires the field (noted on the field).
//! Proto `oneof`s (`Part` content, [`StreamResponse`], [`SecurityScheme`], ...) are read by
//! member name and must hold exactly one known member.
//!
//! The 0.3 shapes (`kind` discriminators, lowercase enums) live in [`crate::v03`].

mod card;
mod card_signature;
mod events;
mod json;
mod message;
mod objects;
mod oneof;
mod part;
mod push;
mod requests;
mod security;
mod serde_util;
mod task;

pub use card::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface,
    AgentProvider, AgentSkill,
};
pub use card_signature::{
    CARD_SIGNATURE_TYP, ProtectedHeader, base64url, base64url_decode, card_payload, remove_empty,
    signing_input,
};
pub use events::{
    SendMessageResponse, StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent,
};
pub use json::{from_json, from_slice, json_type};
pub use message::{Message, Role};
pub use part::{Part, PartContent};
pub use push::{
    AuthenticationInfo, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};
pub use requests::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    SendMessageConfiguration, SendMessageRequest, SubscribeToTaskRequest,
};
pub use security::{OAuthFlows, SecurityRequirement, SecurityScheme, StringList};
pub use task::{Artifact, Task, TaskStatus};

pub(crate) use part::{PartRepr, decode_base64, encode_base64};
pub(crate) use serde_util::{is_false, opt_i32, present, via_repr};
