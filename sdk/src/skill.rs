//! Which skill a message asks for: one agent, many skills.
//!
//! A client names the skill in the message's metadata, under [`SKILL_METADATA_KEY`]
//! (`agentlog.skill`), or under [`SKILL_ID_KEY`] (`skillId`, as lc_a2a and other A2A agents
//! route); the first wins when both are there. The bridge checks a named skill against the
//! card (and the skill's input schema) before anything is written
//! ([`BridgeConfig::skill_schemas`](crate::BridgeConfig)); the worker runs the skill's handler
//! ([`Skills`](crate::worker::Skills)). A task keeps the skill its first message named.
//! The rules: `skills/a2a-bridge/skills.md`.

use agentlog_wire::a2a::Message;
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};

/// The message-metadata key naming the skill a message is for: a string, a skill id of the
/// agent's card.
pub const SKILL_METADATA_KEY: &str = "agentlog.skill";

/// The other key accepted for the same (lc_a2a's routing key), read when
/// [`SKILL_METADATA_KEY`] is absent.
pub const SKILL_ID_KEY: &str = "skillId";

/// The skill `message` names, with the metadata key it was found under; `None` when it names
/// none. A value that is not a non-empty string is invalid params naming the field.
pub fn skill_of(message: &Message) -> Result<Option<(&'static str, &str)>> {
    let Some(metadata) = message.metadata.as_ref() else {
        return Ok(None);
    };
    for key in [SKILL_METADATA_KEY, SKILL_ID_KEY] {
        match metadata.get(key) {
            None | Some(Value::Null) => continue,
            Some(Value::String(id)) if !id.is_empty() => return Ok(Some((key, id.as_str()))),
            Some(_) => {
                return Err(Error::new(
                    ErrorKind::InvalidParams,
                    format!("message.metadata[\"{key}\"] must be a skill id (a non-empty string)"),
                )
                .with_detail("field", format!("message.metadata.{key}")));
            }
        }
    }
    Ok(None)
}

/// The skill of a task whose history starts with `first`: the id its first message named,
/// or `None` (also for a malformed one, which no bridge lets through).
pub fn task_skill(first: &Message) -> Option<&str> {
    skill_of(first).ok().flatten().map(|(_, id)| id)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agentlog_wire::a2a::Role;
    use serde_json::json;

    use super::*;

    fn with_metadata(metadata: Value) -> Message {
        let mut message = Message::new_text(Role::User, "m-1", "hi");
        message.metadata = metadata.as_object().cloned();
        message
    }

    #[test]
    fn a_message_names_its_skill_under_either_key() {
        assert_eq!(skill_of(&with_metadata(json!({}))).unwrap(), None);
        assert_eq!(
            skill_of(&Message::new_text(Role::User, "m", "x")).unwrap(),
            None
        );
        let ours = with_metadata(json!({"agentlog.skill": "fr", "skillId": "de"}));
        assert_eq!(
            skill_of(&ours).unwrap(),
            Some((SKILL_METADATA_KEY, "fr")),
            "agentlog.skill wins"
        );
        let theirs = with_metadata(json!({"skillId": "de"}));
        assert_eq!(skill_of(&theirs).unwrap(), Some((SKILL_ID_KEY, "de")));
        assert_eq!(task_skill(&theirs), Some("de"));
        for bad in [json!({"agentlog.skill": 1}), json!({"skillId": ""})] {
            let error = skill_of(&with_metadata(bad)).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidParams);
            assert!(error.details()[0].1.starts_with("message.metadata."));
        }
        assert_eq!(task_skill(&with_metadata(json!({"skillId": 3}))), None);
    }
}
