//! Agent cards: the defaults for an agent, and a card built from A2A 1.0 `AgentCard` JSON laid
//! over them. The one place that builds a card from user input, so `agentlog serve --card`
//! and both language bindings (`bindings/python`, `bindings/node`) make the same card from
//! the same JSON.

use std::path::Path;

use agentlog_wire::a2a::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill};
use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, Result};

/// A minimal valid card for `agent`, with one skill derived from its name and description
/// ([`default_skill`]); a server replaces `supportedInterfaces` with its URL.
pub fn default_card(agent: &str) -> AgentCard {
    let mut card = AgentCard {
        name: agent.to_owned(),
        description: format!("The {agent} agent, served by agentlog"),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        supported_interfaces: vec![AgentInterface {
            url: "http://127.0.0.1:8080/".to_owned(),
            protocol_binding: "JSONRPC".to_owned(),
            protocol_version: "1.0".to_owned(),
            tenant: None,
        }],
        provider: None,
        documentation_url: None,
        icon_url: None,
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: Vec::new(),
            extended_agent_card: Some(false),
        },
        security_schemes: Default::default(),
        security_requirements: Vec::new(),
        default_input_modes: vec!["text/plain".to_owned()],
        default_output_modes: vec!["text/plain".to_owned()],
        skills: Vec::new(),
        signatures: Vec::new(),
    };
    card.skills.push(default_skill(&card));
    card
}

/// The skill a card without skills describes its agent with: the card's name and
/// description, the agent's one capability. A2A requires at least one skill in every card
/// (the official conformance kit checks it), and a card that says nothing more about what
/// the agent does can say only that.
pub fn default_skill(card: &AgentCard) -> AgentSkill {
    let id = card
        .name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>();
    AgentSkill {
        id: if id.trim_matches('-').is_empty() {
            "agent".to_owned()
        } else {
            id
        },
        name: card.name.clone(),
        description: card.description.clone(),
        tags: vec![card.name.clone()],
        ..AgentSkill::default()
    }
}

/// The card for `agent` with `fields` (any subset of an A2A 1.0 `AgentCard` JSON object:
/// name, description, version, provider, skills, defaultInputModes, ...) laid over the
/// defaults of [`default_card`], field by field; a field left out keeps its default. The
/// derived skill is not added here (see [`finish_card`]), so that a caller changing the name
/// or description afterwards derives it from the final ones. Nothing is validated yet.
pub fn card_over_defaults(agent: &str, fields: Map<String, Value>) -> Result<AgentCard> {
    let mut bare = default_card(agent);
    bare.skills.clear();
    let mut merged = serde_json::to_value(bare).map_err(|e| bad_card(e.to_string()))?;
    if let Some(object) = merged.as_object_mut() {
        object.extend(fields);
    }
    agentlog_wire::a2a::from_json("AgentCard", &merged).map_err(|e| bad_card(e.to_string()))
}

/// What every served card has, whatever it was built from: no signatures (any it came with
/// covered another card, since a server sets its own interfaces; the router signs what it
/// serves), streaming on (every agentlog bridge streams), and at least one skill (A2A
/// requires one: a card without gets [`default_skill`]).
pub fn finish_card(card: &mut AgentCard) {
    card.signatures.clear();
    card.capabilities.streaming = Some(true);
    if card.skills.is_empty() {
        card.skills.push(default_skill(card));
    }
}

/// The card a host hands to [`BridgeConfig::card`](super::BridgeConfig): `fields` (a JSON
/// object in the A2A 1.0 `AgentCard` shape, any subset) over the defaults for `agent`
/// ([`card_over_defaults`]), finished ([`finish_card`]) and validated. `supportedInterfaces`
/// defaults to `http://127.0.0.1:8080/`; a server built with
/// [`HttpConfig::interface_url`](crate::http::HttpConfig) serves its own URL there instead.
///
/// Refused with [`ErrorKind::Config`]: a value that is not an object, a field of the wrong
/// shape (the message names it), a card left invalid (an empty name, ...), and the `auth` and
/// `extendedCard` sections of `agentlog serve --card` files, which configure that command,
/// not the card, and would otherwise be ignored without a word.
pub fn card_from_json(agent: &str, fields: &Value) -> Result<AgentCard> {
    let Value::Object(fields) = fields else {
        return Err(bad_card(format!(
            "expected a JSON object, got {}",
            agentlog_wire::a2a::json_type(fields)
        )));
    };
    for section in ["auth", "extendedCard"] {
        if fields.contains_key(section) {
            return Err(bad_card(format!(
                "`{section}` configures `agentlog serve --card`, not the card: leave it out"
            )));
        }
    }
    let mut card = card_over_defaults(agent, fields.clone())?;
    finish_card(&mut card);
    card.validate().map_err(|e| bad_card(e.to_string()))?;
    Ok(card)
}

/// [`card_from_json`] over the JSON object in the file at `path`; errors name the file.
pub fn card_from_file(agent: &str, path: &Path) -> Result<AgentCard> {
    let in_file = |e: Error| {
        Error::new(
            ErrorKind::Config,
            format!("{} (in {})", e.message(), path.display()),
        )
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("cannot read the agent card file {}: {e}", path.display()),
        )
        .with_source(e)
    })?;
    let value: Value = serde_json::from_str(&text).map_err(|e| in_file(bad_card(e.to_string())))?;
    card_from_json(agent, &value).map_err(in_file)
}

fn bad_card(why: String) -> Error {
    Error::new(ErrorKind::Config, format!("bad agent card: {why}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_lie_over_the_defaults_and_the_card_is_finished() {
        let card = card_from_json(
            "t",
            &json!({"name": "Translator", "version": "2.1.0",
                    "provider": {"organization": "Acme", "url": "https://acme.example"},
                    "capabilities": {"streaming": false},
                    "signatures": [{"protected": "eyJhbGciOiJFZERTQSJ9", "signature": "AA"}]}),
        )
        .unwrap();
        assert_eq!(
            (card.name.as_str(), card.version.as_str()),
            ("Translator", "2.1.0")
        );
        assert_eq!(
            card.description, "The t agent, served by agentlog",
            "a default kept"
        );
        assert_eq!(card.default_input_modes, ["text/plain"]);
        assert_eq!(
            card.capabilities.streaming,
            Some(true),
            "every bridge streams"
        );
        assert!(card.signatures.is_empty(), "signatures are dropped");
        assert_eq!(
            card.skills.len(),
            1,
            "the derived skill, from the final name"
        );
        assert_eq!(
            (card.skills[0].id.as_str(), card.skills[0].name.as_str()),
            ("translator", "Translator")
        );
        assert_eq!(card.supported_interfaces[0].url, "http://127.0.0.1:8080/");
    }

    #[test]
    fn skills_given_are_kept_and_nothing_is_derived() {
        let card = card_from_json(
            "t",
            &json!({"skills": [{"id": "fr", "name": "French", "description": "To French", "tags": ["x"]}]}),
        )
        .unwrap();
        assert_eq!(card.skills.len(), 1);
        assert_eq!(card.skills[0].id, "fr");
        assert_eq!(card_from_json("t", &json!({})).unwrap(), default_card("t"));
    }

    #[test]
    fn bad_cards_are_refused_with_the_reason() {
        let reason = |value: Value| {
            let error = card_from_json("t", &value).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Config);
            error.message().to_owned()
        };
        assert_eq!(
            reason(json!([1])),
            "bad agent card: expected a JSON object, got an array"
        );
        assert!(
            reason(json!({"skills": "none"})).contains("skills"),
            "names the field"
        );
        assert!(reason(json!({"name": ""})).contains("`name` must not be empty"));
        assert!(reason(json!({"auth": {}})).contains("`auth` configures `agentlog serve --card`"));
        assert!(reason(json!({"extendedCard": {}})).contains("extendedCard"));
    }

    #[test]
    fn a_card_file_is_read_and_its_errors_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("card.json");
        std::fs::write(&path, r#"{"name": "From file"}"#).unwrap();
        assert_eq!(card_from_file("t", &path).unwrap().name, "From file");
        std::fs::write(&path, "{not json").unwrap();
        let error = card_from_file("t", &path).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(error.message().contains("card.json"), "{error}");
        let missing = card_from_file("t", &dir.path().join("none.json")).unwrap_err();
        assert!(
            missing
                .message()
                .starts_with("cannot read the agent card file"),
            "{missing}"
        );
    }
}
