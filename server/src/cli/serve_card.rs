//! The card `agentlog serve` publishes: the defaults or `--card`'s file, its interfaces at the
//! served endpoint, the demo's skills, and the options that rename or describe it.

use agentlog::bridge::{card_over_defaults, finish_card, skill_schemas_from_json};
use agentlog_wire::a2a::{AgentCard, AgentInterface, AgentSkill};

use super::serve_args::ServeArgs;
use super::serve_auth::{self, CardFileExtras};
use super::{CliError, CliResult};
use crate::agents::{conformance, demo_skills};

/// The default card for `agent` without its derived skill: `card` derives one at the end,
/// from the final name and description, if nothing else gave the card a skill.
pub(super) fn bare_card(agent: &str) -> CliResult<AgentCard> {
    Ok(card_over_defaults(agent, serde_json::Map::new())?)
}

/// The default card for `agent` with the fields of the JSON object in `path` laid over it,
/// the file's other sections (`auth`, `extendedCard`), and its skills' input schemas.
pub(super) fn card_file(path: &std::path::Path, agent: &str) -> Result<CardFile, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::msg(format!("cannot read --card {}: {e}", path.display())))?;
    let bad = |why: String| CliError::msg(format!("bad --card {}: {why}", path.display()));
    let overlay: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let serde_json::Value::Object(mut overlay) = overlay else {
        return Err(bad("not a JSON object".to_owned()));
    };
    let extras = serve_auth::take_extras(&mut overlay, path)?;
    let schemas = skill_schemas_from_json(&serde_json::Value::Object(overlay.clone()))
        .map_err(|e| bad(e.message().to_owned()))?;
    let card = card_over_defaults(agent, overlay).map_err(|e| bad(e.message().to_owned()))?;
    Ok((card, extras, schemas))
}

/// A card file's card, its other sections and its skills' input schemas.
pub(super) type CardFile = (
    AgentCard,
    CardFileExtras,
    std::collections::BTreeMap<String, serde_json::Value>,
);

/// The card: `base` (the defaults or --card), its interfaces at `endpoint`, the demo's skill
/// with `--demo`, and --name/--description, finished ([`finish_card`]: no signatures,
/// streaming on, a card left without skills gets the one derived from its name and
/// description).
pub(super) fn card(args: &ServeArgs, base: AgentCard, endpoint: &str) -> AgentCard {
    let agent = &args.log.agent;
    let mut card = base;
    if let Some(name) = &args.name {
        card.name = name.clone();
    }
    let interface = |version: &str| AgentInterface {
        url: endpoint.to_owned(),
        protocol_binding: "JSONRPC".to_owned(),
        protocol_version: version.to_owned(),
        tenant: None,
    };
    card.supported_interfaces = vec![interface("1.0")];
    if args.with_v03_interface {
        card.supported_interfaces.push(interface("0.3"));
    }
    if args.demo && args.card.is_none() {
        card.description = format!(
            "The agentlog demo agent {agent:?}: echoes messages, and shows every task lifecycle"
        );
    }
    if args.demo && !card.skills.iter().any(|s| s.id == "echo") {
        card.skills.push(demo_skill());
    }
    if args.demo && !card.skills.iter().any(|s| s.id == demo_skills::SHOUT) {
        card.skills.push(demo_skills::shout_skill());
    }
    if args.conformance {
        conformance::declare(&mut card, agent, args.card.is_none());
    }
    if let Some(description) = &args.description {
        card.description = description.clone();
    }
    finish_card(&mut card);
    card
}

/// The skill [`DemoHandler`](crate::agents::DemoHandler) offers.
fn demo_skill() -> AgentSkill {
    let text = vec!["text/plain".to_owned()];
    AgentSkill {
        id: "echo".to_owned(),
        name: "Echo and task lifecycles".to_owned(),
        description: "Echoes the message back as the artifact `echo`, streamed in three \
                      chunks. `sleep N` works N seconds reporting progress (cancel it to see \
                      a canceled task); `input` asks for a follow-up message and echoes it; \
                      `fail` fails the task; `reply TEXT` answers with a message, no task."
            .to_owned(),
        tags: vec!["demo".to_owned(), "echo".to_owned(), "streaming".to_owned()],
        examples: ["hello", "sleep 3", "input", "fail", "reply hi"]
            .map(str::to_owned)
            .to_vec(),
        input_modes: text.clone(),
        output_modes: text,
        ..AgentSkill::default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> ServeArgs {
        let mut argv = vec!["agentlog", "serve"];
        argv.extend_from_slice(extra);
        match super::super::Cli::try_parse_from(argv).unwrap().command {
            super::super::Command::Serve(args) => args,
            other => panic!("not serve: {other:?}"),
        }
    }

    #[test]
    fn the_card_lists_one_jsonrpc_1_0_interface_and_the_demo_skill() {
        let card = card(
            &args(&["--demo"]),
            bare_card("demo").unwrap(),
            "http://127.0.0.1:8080/",
        );
        card.validate().unwrap();
        assert_eq!(card.supported_interfaces.len(), 1);
        let interface = &card.supported_interfaces[0];
        assert_eq!(interface.url, "http://127.0.0.1:8080/");
        assert_eq!(interface.protocol_binding, "JSONRPC");
        assert_eq!(interface.protocol_version, "1.0");
        assert_eq!(card.capabilities.streaming, Some(true));
        assert_eq!(card.skills[0].id, "echo");
        assert_eq!(
            card.skills[0].examples,
            ["hello", "sleep 3", "input", "fail", "reply hi"]
        );
    }

    #[test]
    fn options_shape_the_card() {
        let card = card(
            &args(&[
                "--agent",
                "x",
                "--name",
                "X",
                "--description",
                "does x",
                "--with-v03-interface",
            ]),
            bare_card("x").unwrap(),
            "http://h/",
        );
        assert_eq!(
            (card.name.as_str(), card.description.as_str()),
            ("X", "does x")
        );
        assert_eq!(card.supported_interfaces[1].protocol_version, "0.3");
        // No --demo and no --card: one skill, from the final name and description.
        card.validate().unwrap();
        assert_eq!(card.skills.len(), 1);
        let skill = &card.skills[0];
        assert_eq!(
            (
                skill.id.as_str(),
                skill.name.as_str(),
                skill.description.as_str()
            ),
            ("x", "X", "does x")
        );
    }

    #[test]
    fn a_card_file_fills_the_card_and_the_server_keeps_its_interfaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("card.json");
        std::fs::write(
            &path,
            r#"{"name":"Translator","version":"2.1.0",
               "provider":{"organization":"Acme","url":"https://acme.example"},
               "supportedInterfaces":[{"url":"http://elsewhere/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
               "skills":[{"id":"fr","name":"French","description":"To French","tags":["translate"],
                          "examples":["bonjour"],"inputModes":["text/plain"],"outputModes":["text/plain"]}],
               "defaultOutputModes":["text/plain","application/json"],
               "signatures":[{"protected":"eyJhbGciOiJFZERTQSIsImtpZCI6ImtleS0xIiwidHlwIjoiSk9TRSJ9","signature":"AA"}]}"#,
        )
        .unwrap();
        let (base, _, _) = card_file(&path, "t").unwrap();
        let card = card(&args(&["--agent", "t", "--card", "x"]), base, "http://h/");
        card.validate().unwrap();
        assert_eq!(card.name, "Translator");
        assert_eq!(card.version, "2.1.0");
        assert_eq!(
            card.provider.as_ref().map(|p| p.organization.as_str()),
            Some("Acme")
        );
        assert_eq!(card.skills[0].id, "fr");
        assert_eq!(card.default_output_modes.len(), 2);
        assert_eq!(card.supported_interfaces[0].url, "http://h/");
        assert_eq!(card.capabilities.streaming, Some(true));
        assert!(
            card.signatures.is_empty(),
            "the file's signatures are dropped"
        );
        std::fs::write(&path, "[1]").unwrap();
        assert!(card_file(&path, "t").is_err());
        std::fs::write(&path, r#"{"skills":"none"}"#).unwrap();
        assert!(card_file(&path, "t").is_err());
    }
}
