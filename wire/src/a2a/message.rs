//! [`Message`] and its sender [`Role`].

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::Part;
use crate::WireError;

/// Who sent a message. JSON: `ROLE_USER`; reads also 0.3 `user` and the proto numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Role {
    /// No role given (`ROLE_UNSPECIFIED`, 0); not valid in a message.
    #[default]
    Unspecified,
    /// The client (`ROLE_USER`, 1).
    User,
    /// The agent (`ROLE_AGENT`, 2).
    Agent,
}

impl Role {
    /// The 1.0 ProtoJSON name, e.g. `ROLE_USER`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Unspecified => "ROLE_UNSPECIFIED",
            Role::User => "ROLE_USER",
            Role::Agent => "ROLE_AGENT",
        }
    }

    /// The 0.3 name: `user` or `agent` (`unspecified`, which 0.3 does not define, for no role).
    pub const fn as_v03_str(self) -> &'static str {
        match self {
            Role::Unspecified => "unspecified",
            Role::User => "user",
            Role::Agent => "agent",
        }
    }

    /// The role for a proto enum number.
    pub const fn from_number(number: u64) -> Option<Self> {
        match number {
            0 => Some(Role::Unspecified),
            1 => Some(Role::User),
            2 => Some(Role::Agent),
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses the 1.0 or the 0.3 name.
impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ROLE_UNSPECIFIED" | "unspecified" => Ok(Role::Unspecified),
            "ROLE_USER" | "user" => Ok(Role::User),
            "ROLE_AGENT" | "agent" => Ok(Role::Agent),
            _ => Err(format!("unknown role {s:?}")),
        }
    }
}

/// Serialized as the 1.0 name.
impl Serialize for Role {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Accepts the 1.0 name, the 0.3 name or the proto number.
impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RoleVisitor)
    }
}

/// Visitor behind `Role`'s `Deserialize`.
struct RoleVisitor;

impl Visitor<'_> for RoleVisitor {
    type Value = Role;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a role name such as \"ROLE_USER\"")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Role, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Role, E> {
        Role::from_number(v).ok_or_else(|| E::custom(format!("unknown role {v}")))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Role, E> {
        u64::try_from(v)
            .ok()
            .and_then(Role::from_number)
            .ok_or_else(|| E::custom(format!("unknown role {v}")))
    }
}

/// One turn of communication between client and agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Unique id, chosen by the sender. Required, non-empty.
    #[serde(alias = "message_id")]
    pub message_id: String,
    /// The conversation the message belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "context_id")]
    pub context_id: Option<String>,
    /// The task the message belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "task_id")]
    pub task_id: Option<String>,
    /// The sender. Required.
    pub role: Role,
    /// The content. Required, at least one (always serialized; checked by [`Message::validate`]).
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// URIs of the extensions that contributed to the message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Ids of other tasks this message refers to.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "reference_task_ids"
    )]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message with `role` and one text part, nothing else set.
    pub fn new_text(role: Role, message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            message_id: message_id.into(),
            context_id: None,
            task_id: None,
            role,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// A user message with one text part.
    pub fn user_text(message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new_text(Role::User, message_id, text)
    }

    /// An agent message with one text part.
    pub fn agent_text(message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new_text(Role::Agent, message_id, text)
    }

    /// The spec's rules serde cannot check: non-empty `messageId`, a role, at least one part.
    pub fn validate(&self) -> Result<(), WireError> {
        let fail = |reason: &str| {
            Err(WireError::InvalidJson {
                what: "Message",
                reason: reason.to_owned(),
            })
        };
        if self.message_id.is_empty() {
            return fail("`messageId` must not be empty");
        }
        if self.role == Role::Unspecified {
            return fail("`role` must be ROLE_USER or ROLE_AGENT");
        }
        if self.parts.is_empty() {
            return fail("`parts` must hold at least one part");
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn role_json_names_and_inputs() {
        for (role, v1, v03, n) in [
            (Role::Unspecified, "ROLE_UNSPECIFIED", "unspecified", 0),
            (Role::User, "ROLE_USER", "user", 1),
            (Role::Agent, "ROLE_AGENT", "agent", 2),
        ] {
            assert_eq!(serde_json::to_value(role).unwrap(), json!(v1));
            assert_eq!(role.as_v03_str(), v03);
            for input in [json!(v1), json!(v03), json!(n)] {
                assert_eq!(serde_json::from_value::<Role>(input).unwrap(), role);
            }
        }
        for bad in [json!("USER"), json!(3), json!(-1), json!(true)] {
            assert!(serde_json::from_value::<Role>(bad).is_err());
        }
    }

    #[test]
    fn minimal_message_round_trips() {
        let json = r#"{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}"#;
        let message: Message = serde_json::from_str(json).unwrap();
        assert_eq!(message, Message::user_text("m1", "hi"));
        assert_eq!(serde_json::to_string(&message).unwrap(), json);
    }

    #[test]
    fn full_message_round_trips() {
        let json = concat!(
            r#"{"messageId":"m2","contextId":"c","taskId":"t","role":"ROLE_AGENT","parts":[{"text":"a"},{"data":{"k":1}}],"#,
            r#""metadata":{"x":1},"extensions":["urn:e"],"referenceTaskIds":["t0"]}"#
        );
        let message: Message = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&message).unwrap(), json);
    }

    #[test]
    fn snake_case_and_unknown_fields() {
        let message: Message = serde_json::from_value(json!({
            "message_id": "m", "context_id": "c", "task_id": "t", "role": "agent", "kind": "message",
            "parts": [{"text": "x"}], "reference_task_ids": ["r"], "future": {"a": 1}
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&message).unwrap(),
            r#"{"messageId":"m","contextId":"c","taskId":"t","role":"ROLE_AGENT","parts":[{"text":"x"}],"referenceTaskIds":["r"]}"#
        );
    }

    #[test]
    fn validate_checks_the_required_values() {
        assert_eq!(Message::agent_text("m", "x").validate(), Ok(()));
        let mut message = Message::user_text("", "x");
        assert_eq!(
            message.validate().unwrap_err().to_string(),
            "invalid Message: `messageId` must not be empty"
        );
        message.message_id = "m".into();
        message.parts.clear();
        assert_eq!(
            message.validate().unwrap_err().to_string(),
            "invalid Message: `parts` must hold at least one part"
        );
        message.parts.push(Part::text("x"));
        message.role = Role::Unspecified;
        assert!(message.validate().is_err());
    }
}
