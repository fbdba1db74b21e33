//! The hop guard: agents calling agents never loop.
//!
//! Every bridge stamps its id ([`BridgeConfig::id`](crate::BridgeConfig)) at the end of the
//! bridge path (`bridge_hops`) of every record it writes. A handler that calls another agent
//! carries its task's path in the message's metadata under [`HOPS_METADATA_KEY`] (a JSON
//! array of bridge ids: [`TaskContext::stamp`](crate::worker::TaskContext::stamp), or
//! `agentlog send` with [`HOPS_ENV`] set, as `agentlog worker --exec` sets it). The bridge
//! that receives the call continues that path with its own id, or refuses the call with
//! [`ErrorKind::LoopDetected`] (nothing written) when its id is on the path already or the
//! path would pass the most hops allowed ([`DEFAULT_MAX_HOPS`] unless configured). The rules
//! are in `skills/security/hops.md`.

use agentlog_wire::a2a::Message;
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};

/// The message-metadata key that carries the bridge path of the task making a call: a JSON
/// array of bridge ids, oldest first.
pub const HOPS_METADATA_KEY: &str = "agentlog.hops";

/// The environment variable `agentlog worker --exec` gives its command (the path of the task
/// it runs, as a JSON array) and `agentlog send` reads (to stamp the message it sends).
pub const HOPS_ENV: &str = "AGENTLOG_HOPS";

/// The most bridges a call may go through unless configured (`BridgeConfig::max_hops`).
pub const DEFAULT_MAX_HOPS: u8 = 8;

/// The bridge path a message carries in its metadata; empty when it carries none. A value
/// under [`HOPS_METADATA_KEY`] that is not an array of strings is invalid params.
pub fn path_of(message: &Message) -> Result<Vec<String>> {
    let Some(value) = message
        .metadata
        .as_ref()
        .and_then(|m| m.get(HOPS_METADATA_KEY))
    else {
        return Ok(Vec::new());
    };
    parse_path(value).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidParams,
            format!("message.metadata[\"{HOPS_METADATA_KEY}\"] must be an array of bridge ids"),
        )
        .with_detail("field", format!("message.metadata.{HOPS_METADATA_KEY}"))
    })
}

/// A path from its JSON form (an array of strings).
pub fn parse_path(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|id| id.as_str().map(str::to_owned))
        .collect()
}

/// Put `path` into `message`'s metadata under [`HOPS_METADATA_KEY`] (replacing what was
/// there); an empty path removes the key.
pub fn stamp(message: &mut Message, path: &[String]) {
    if path.is_empty() {
        if let Some(metadata) = message.metadata.as_mut() {
            metadata.remove(HOPS_METADATA_KEY);
        }
        return;
    }
    message
        .metadata
        .get_or_insert_with(Default::default)
        .insert(
            HOPS_METADATA_KEY.to_owned(),
            Value::Array(path.iter().cloned().map(Value::String).collect()),
        );
}

/// The path `path` continued by bridge `own`, or the refusal: `own` is on it already (a
/// loop), or it would hold more than `max_hops` bridges.
pub fn extend(mut path: Vec<String>, own: &str, max_hops: u8) -> Result<Vec<String>> {
    if path.iter().any(|id| id == own) {
        path.push(own.to_owned());
        let shown = render(&path);
        return Err(Error::new(
            ErrorKind::LoopDetected,
            format!("call loop refused: {shown} (bridge {own} is already on the path)"),
        )
        .with_detail("path", shown));
    }
    path.push(own.to_owned());
    if path.len() > usize::from(max_hops) {
        let shown = render(&path);
        return Err(Error::new(
            ErrorKind::LoopDetected,
            format!(
                "call refused: {shown} goes through {} bridges, at most {max_hops} allowed",
                path.len()
            ),
        )
        .with_detail("path", shown));
    }
    Ok(path)
}

/// A path for people: `a → b → a`.
pub fn render(path: &[String]) -> String {
    path.join(" → ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agentlog_wire::a2a::Role;
    use serde_json::json;

    use super::*;

    fn path(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_path_is_continued_or_refused_naming_the_loop() {
        assert_eq!(extend(Vec::new(), "a", 8).unwrap(), path(&["a"]));
        assert_eq!(extend(path(&["a"]), "b", 8).unwrap(), path(&["a", "b"]));
        let looped = extend(path(&["a", "b"]), "a", 8).unwrap_err();
        assert_eq!(looped.kind(), ErrorKind::LoopDetected);
        assert!(looped.details().contains(&("path", "a → b → a".to_owned())));
        let long: Vec<String> = (0..8).map(|i| i.to_string()).collect();
        let too_long = extend(long.clone(), "x", 8).unwrap_err();
        assert_eq!(too_long.kind(), ErrorKind::LoopDetected);
        assert_eq!(extend(long[..7].to_vec(), "x", 8).unwrap().len(), 8);
        assert_eq!(
            extend(Vec::new(), "a", 0).unwrap_err().kind(),
            ErrorKind::LoopDetected
        );
    }

    #[test]
    fn a_message_carries_its_path_in_metadata() {
        let mut message = Message::new_text(Role::User, "m-1", "hi");
        assert_eq!(path_of(&message).unwrap(), Vec::<String>::new());
        stamp(&mut message, &path(&["a", "b"]));
        assert_eq!(
            serde_json::to_value(&message).unwrap()["metadata"],
            json!({"agentlog.hops": ["a", "b"]})
        );
        assert_eq!(path_of(&message).unwrap(), path(&["a", "b"]));
        stamp(&mut message, &[]);
        assert_eq!(path_of(&message).unwrap(), Vec::<String>::new());
        for bad in [json!("a"), json!([1]), json!({"a": 1}), json!(["a", null])] {
            message
                .metadata
                .get_or_insert_with(Default::default)
                .insert(HOPS_METADATA_KEY.into(), bad);
            assert_eq!(
                path_of(&message).unwrap_err().kind(),
                ErrorKind::InvalidParams
            );
        }
    }
}
