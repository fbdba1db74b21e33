//! The media types an agent takes: a message part of a type the agent does not take is
//! refused with -32005 ContentTypeNotSupported before anything is written (A2A §3.1.1).
//!
//! The agent takes its card's `defaultInputModes` and every skill's `inputModes`; a mode may
//! be `type/*` or `*/*`. Only parts that name a (non-empty) `mediaType` are checked (a text part without
//! one is text, a data part JSON, as the client meant them), and a card that declares no mode
//! at all takes everything.

use agentlog_wire::a2a::{AgentCard, Message};

use crate::error::{Error, ErrorKind, Result};

/// Refuse `message` if one of its parts has a media type `card` does not take.
pub(super) fn check_input_modes(card: &AgentCard, message: &Message) -> Result<()> {
    let modes = || {
        card.default_input_modes.iter().chain(
            card.skills
                .iter()
                .flat_map(|skill| skill.input_modes.iter()),
        )
    };
    if modes().next().is_none() {
        return Ok(());
    }
    for (i, part) in message.parts.iter().enumerate() {
        // An empty one is none (ProtoJSON writers may send the default).
        let Some(media_type) = part.media_type.as_deref().filter(|m| !m.trim().is_empty()) else {
            continue;
        };
        if !modes().any(|mode| takes(mode, media_type)) {
            let mut taken: Vec<&str> = modes().map(String::as_str).collect();
            taken.sort_unstable();
            taken.dedup();
            return Err(Error::new(
                ErrorKind::ContentTypeNotSupported,
                format!(
                    "message part {i} is {media_type}, which this agent does not take (it takes {})",
                    taken.join(", ")
                ),
            )
            .with_detail("field", format!("message.parts[{i}].mediaType"))
            .with_detail("mediaType", media_type));
        }
    }
    Ok(())
}

/// Whether input mode `mode` covers `media_type`: the same essence (parameters and case
/// aside), or a `type/*` or `*/*` wildcard.
pub(super) fn takes(mode: &str, media_type: &str) -> bool {
    let essence = |text: &str| {
        text.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    };
    let (mode, media_type) = (essence(mode), essence(media_type));
    if mode == "*/*" || mode == media_type {
        return true;
    }
    match (mode.split_once('/'), media_type.split_once('/')) {
        (Some((kind, "*")), Some((other, _))) => kind == other,
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agentlog_wire::a2a::{Part, PartContent};

    use super::*;

    fn message(parts: Vec<Part>) -> Message {
        agentlog_wire::a2a::from_json(
            "Message",
            &serde_json::json!({"messageId": "m", "role": "ROLE_USER", "parts": parts}),
        )
        .unwrap()
    }

    fn raw(media_type: &str) -> Part {
        Part {
            content: PartContent::Raw(b"tck".to_vec()),
            media_type: Some(media_type.to_owned()),
            ..Part::text("")
        }
    }

    #[test]
    fn modes_match_by_essence_and_wildcards() {
        assert!(takes("text/plain", "text/plain"));
        assert!(takes("text/plain", "Text/Plain; charset=utf-8"));
        assert!(takes("image/*", "image/png"));
        assert!(takes("*/*", "application/x-anything"));
        assert!(!takes("text/plain", "text/html"));
        assert!(!takes("image/*", "text/plain"));
        assert!(!takes("text", "text/plain"));
    }

    #[test]
    fn a_part_of_a_type_the_card_does_not_take_is_refused() {
        let mut card = crate::bridge::default_card("t");
        card.default_input_modes = vec!["text/plain".to_owned()];
        let unsupported = message(vec![
            Part::text("hi"),
            raw("application/x-unsupported-tck-type"),
        ]);
        let error = check_input_modes(&card, &unsupported).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::ContentTypeNotSupported);
        assert!(error.message().contains("part 1"), "{error}");
        assert!(
            check_input_modes(&card, &message(vec![Part::text("hi"), raw("text/plain")])).is_ok()
        );
        // A skill's input modes count too; a card with no modes takes everything.
        card.skills[0].input_modes = vec!["application/*".to_owned()];
        assert!(check_input_modes(&card, &unsupported).is_ok());
        card.default_input_modes.clear();
        card.skills[0].input_modes.clear();
        assert!(check_input_modes(&card, &message(vec![raw("video/mp4")])).is_ok());
    }
}
