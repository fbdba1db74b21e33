//! The agent's skills, checked before anything is written: a message naming a skill
//! ([`crate::skill::skill_of`]) must name one of the card's, its parts must be of the skill's
//! input modes, and with a schema ([`BridgeConfig::skill_schemas`](super::BridgeConfig)) its
//! one data part must match it. The card is the one list of skills; a schema is keyed by
//! the id of a skill on it.

use std::collections::BTreeMap;
use std::path::Path;

use agentlog_wire::a2a::{AgentCard, AgentSkill, Message, PartContent};
use serde_json::Value;

use super::schema::{Schema, describe};
use crate::error::{Error, ErrorKind, Result};

/// The compiled input schemas of a card's skills, by skill id.
#[derive(Debug, Clone, Default)]
pub(super) struct SkillSchemas(BTreeMap<String, Schema>);

impl SkillSchemas {
    /// Compile `schemas` for `card`: each must be keyed by a skill the card lists, and
    /// compile; the card's skill ids must be unique (a message names one).
    pub(super) fn compile(card: &AgentCard, schemas: &BTreeMap<String, Value>) -> Result<Self> {
        let mut ids = std::collections::BTreeSet::new();
        for skill in &card.skills {
            if !ids.insert(skill.id.as_str()) {
                return Err(config(format!(
                    "the card lists skill {:?} twice: a message names a skill by its id",
                    skill.id
                )));
            }
        }
        let mut compiled = BTreeMap::new();
        for (id, schema) in schemas {
            if !ids.contains(id.as_str()) {
                return Err(config(format!(
                    "an input schema is given for skill {id:?}, which the card does not list (its skills: {})",
                    listed(card)
                )));
            }
            let schema = Schema::compile(schema).map_err(|why| {
                config(format!(
                    "skill {id:?}: its inputSchema does not compile: {why}"
                ))
            })?;
            compiled.insert(id.clone(), schema);
        }
        Ok(Self(compiled))
    }

    /// Refuse `message` if the skill it names is not on `card`, if one of its parts is not of
    /// the skill's input modes, or if its data part does not match the skill's schema.
    /// A message naming no skill passes.
    pub(super) fn check(&self, card: &AgentCard, message: &Message) -> Result<()> {
        let Some((key, id)) = crate::skill::skill_of(message)? else {
            return Ok(());
        };
        let Some(skill) = card.skills.iter().find(|s| s.id == id) else {
            // A skill id this agent does not have is a mistake the caller should hear of, not
            // a message for whatever handles the rest.
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!(
                    "this agent has no skill {id:?} (its skills: {})",
                    listed(card)
                ),
            )
            .with_detail("field", format!("message.metadata.{key}"))
            .with_detail("skill", id));
        };
        check_modes(skill, message)?;
        match self.0.get(id) {
            Some(schema) => check_data(id, schema, message),
            None => Ok(()),
        }
    }
}

/// A skill that declares input modes takes parts of those only (they override the card's
/// defaults for it: A2A's `AgentSkill.inputModes`). Parts without a media type pass, as the
/// card-wide check lets them.
fn check_modes(skill: &AgentSkill, message: &Message) -> Result<()> {
    if skill.input_modes.is_empty() {
        return Ok(());
    }
    for (i, part) in message.parts.iter().enumerate() {
        let Some(media_type) = part.media_type.as_deref().filter(|m| !m.trim().is_empty()) else {
            continue;
        };
        if !skill
            .input_modes
            .iter()
            .any(|mode| super::media::takes(mode, media_type))
        {
            return Err(Error::new(
                ErrorKind::ContentTypeNotSupported,
                format!(
                    "message part {i} is {media_type}, which skill {:?} does not take (it takes {})",
                    skill.id,
                    skill.input_modes.join(", ")
                ),
            )
            .with_detail("field", format!("message.parts[{i}].mediaType"))
            .with_detail("mediaType", media_type));
        }
    }
    Ok(())
}

/// A skill with a schema takes its input as one data part, which must match the schema.
fn check_data(id: &str, schema: &Schema, message: &Message) -> Result<()> {
    let data: Vec<(usize, &Value)> = message
        .parts
        .iter()
        .enumerate()
        .filter_map(|(i, part)| match &part.content {
            PartContent::Data(value) => Some((i, value)),
            _ => None,
        })
        .collect();
    let [(i, value)] = data.as_slice() else {
        return Err(Error::new(
            ErrorKind::InvalidParams,
            format!(
                "skill {id:?} takes its input as one data part (JSON) matching its input schema; the message has {}",
                data.len()
            ),
        )
        .with_detail("field", "message.parts")
        .with_detail("skill", id));
    };
    let problems = schema.problems(value);
    let Some(first) = problems.first() else {
        return Ok(());
    };
    Err(Error::new(
        ErrorKind::InvalidParams,
        format!(
            "message.parts[{i}].data does not match the input schema of skill {id:?}: {}",
            describe(&problems)
        ),
    )
    .with_detail("field", format!("message.parts[{i}].data{}", first.pointer))
    .with_detail("skill", id))
}

/// The input schemas given in card JSON (`serve --card`, the bindings' `card`): each
/// skill's `inputSchema`, by its id. The card itself leaves the member out (A2A's
/// `AgentSkill` has none); a schema that is not an object or a boolean, or one on a skill
/// without an id, is a config error.
pub fn skill_schemas_from_json(fields: &Value) -> Result<BTreeMap<String, Value>> {
    let mut schemas = BTreeMap::new();
    let Some(skills) = fields.get("skills").and_then(Value::as_array) else {
        return Ok(schemas);
    };
    for skill in skills {
        let Some(schema) = skill.get("inputSchema") else {
            continue;
        };
        let Some(id) = skill.get("id").and_then(Value::as_str) else {
            return Err(config("a skill with an inputSchema needs an id".to_owned()));
        };
        if !(schema.is_object() || schema.is_boolean()) {
            return Err(config(format!(
                "skill {id:?}: inputSchema must be a JSON Schema (an object)"
            )));
        }
        schemas.insert(id.to_owned(), schema.clone());
    }
    Ok(schemas)
}

/// [`skill_schemas_from_json`] of the card JSON file at `path` (the file
/// [`card_from_file`](super::card_from_file) reads).
pub fn skill_schemas_from_file(path: &Path) -> Result<BTreeMap<String, Value>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        config(format!(
            "cannot read the agent card file {}: {e}",
            path.display()
        ))
    })?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| config(format!("{} is not JSON: {e}", path.display())))?;
    skill_schemas_from_json(&value)
}

fn listed(card: &AgentCard) -> String {
    let ids: Vec<&str> = card.skills.iter().map(|s| s.id.as_str()).collect();
    if ids.is_empty() {
        "none".to_owned()
    } else {
        ids.join(", ")
    }
}

fn config(why: String) -> Error {
    Error::new(ErrorKind::Config, why)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agentlog_wire::a2a::{Part, Role};
    use serde_json::json;

    use super::*;

    fn card() -> AgentCard {
        super::super::card_from_json(
            "t",
            &json!({"skills": [
                {"id": "upper", "name": "Upper", "description": "d", "tags": [],
                 "inputModes": ["application/json"]},
                {"id": "free", "name": "Free", "description": "d", "tags": []}]}),
        )
        .unwrap()
    }

    fn schemas() -> BTreeMap<String, Value> {
        skill_schemas_from_json(&json!({"skills": [
            {"id": "upper", "inputSchema": {"type": "object",
             "properties": {"text": {"type": "string"}}, "required": ["text"]}},
            {"id": "free"}]}))
        .unwrap()
    }

    fn message(skill: Option<&str>, parts: Vec<Part>) -> Message {
        let mut message = Message::new_text(Role::User, "m-1", "x");
        message.parts = parts;
        if let Some(skill) = skill {
            message.metadata = json!({"agentlog.skill": skill}).as_object().cloned();
        }
        message
    }

    fn field(error: &Error) -> String {
        let (_, field) = error.details().iter().find(|(k, _)| *k == "field").unwrap();
        field.clone()
    }

    #[test]
    fn a_named_skill_must_be_the_cards_and_its_data_must_match() {
        let skills = SkillSchemas::compile(&card(), &schemas()).unwrap();
        let card = card();
        let ok = message(Some("upper"), vec![Part::data(json!({"text": "hi"}))]);
        skills.check(&card, &ok).unwrap();
        skills
            .check(&card, &message(None, vec![Part::text("anything")]))
            .unwrap();
        skills
            .check(&card, &message(Some("free"), vec![Part::text("x")]))
            .unwrap();

        let unknown = skills
            .check(&card, &message(Some("lower"), vec![Part::text("x")]))
            .unwrap_err();
        assert_eq!(unknown.kind(), ErrorKind::InvalidParams);
        assert_eq!(field(&unknown), "message.metadata.agentlog.skill");
        assert!(unknown.message().contains("upper, free"), "{unknown}");

        let bad = skills
            .check(
                &card,
                &message(
                    Some("upper"),
                    vec![Part::text("note"), Part::data(json!({"text": 5}))],
                ),
            )
            .unwrap_err();
        assert_eq!(bad.kind(), ErrorKind::InvalidParams);
        assert_eq!(field(&bad), "message.parts[1].data/text");
        let none = skills
            .check(&card, &message(Some("upper"), vec![Part::text("x")]))
            .unwrap_err();
        assert_eq!(field(&none), "message.parts");

        let mut typed = Part::text("<b>x</b>");
        typed.media_type = Some("text/html".into());
        let modes = skills
            .check(
                &card,
                &message(Some("upper"), vec![typed, Part::data(json!({"text": "x"}))]),
            )
            .unwrap_err();
        assert_eq!(modes.kind(), ErrorKind::ContentTypeNotSupported);
    }

    #[test]
    fn schemas_must_name_a_listed_skill_and_compile() {
        let card = card();
        let stray = BTreeMap::from([("nope".to_owned(), json!({}))]);
        let error = SkillSchemas::compile(&card, &stray).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config);
        let broken = BTreeMap::from([("upper".to_owned(), json!({"type": 3}))]);
        assert!(SkillSchemas::compile(&card, &broken).is_err());
        let mut twice = card.clone();
        twice.skills.push(twice.skills[0].clone());
        assert!(SkillSchemas::compile(&twice, &BTreeMap::new()).is_err());
        assert!(skill_schemas_from_json(&json!({"skills": [{"inputSchema": {}}]})).is_err());
        assert!(
            skill_schemas_from_json(&json!({"skills": [{"id": "a", "inputSchema": 1}]})).is_err()
        );
        assert!(skill_schemas_from_json(&json!({})).unwrap().is_empty());
    }
}
