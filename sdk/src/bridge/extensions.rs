//! A2A extensions (A2A §4.6): which a request activates, and the refusal of a send that leaves
//! out one the agent's card marks `required` (-32008 ExtensionSupportRequired, §3.3.4).
//!
//! A client activates an extension by naming its URI in the `A2A-Extensions` header (0.3:
//! `X-A2A-Extensions`) or in the message's `extensions`. The header's URIs that the card
//! declares are added to the message's `extensions` before it is written ([`activate`]), so
//! the record carries them and every worker's handler sees them
//! ([`TaskContext::extensions`](crate::worker::TaskContext::extensions)); URIs the card does
//! not declare are ignored, as the spec says. The requirement is checked where the agent runs:
//! `SendMessage` and `SendStreamingMessage`, before anything is written.

use std::sync::Arc;

use agentlog_wire::a2a::{AgentCard, Message};

use crate::error::{Error, ErrorKind, Result};

/// Which sends must activate the card's required extensions
/// ([`BridgeConfig::extension_scope`](super::BridgeConfig)).
#[derive(Clone, Default)]
pub enum ExtensionScope {
    /// Every send (what A2A §3.3.4 asks of an agent that requires an extension).
    #[default]
    EverySend,
    /// Only the messages the predicate picks; the others need none. For an agent whose
    /// callers it knows to activate nothing on some sends: `serve --conformance` requires
    /// the conformance kit's extension only of the kit's probe messages, since the kit
    /// activates none in its other tests.
    Matching(Arc<dyn Fn(&Message) -> bool + Send + Sync>),
}

impl ExtensionScope {
    fn applies_to(&self, message: &Message) -> bool {
        match self {
            ExtensionScope::EverySend => true,
            ExtensionScope::Matching(picks) => picks(message),
        }
    }
}

impl std::fmt::Debug for ExtensionScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ExtensionScope::EverySend => "EverySend",
            ExtensionScope::Matching(_) => "Matching(..)",
        })
    }
}

/// The URIs of an `A2A-Extensions` header value: comma-separated, blanks trimmed, empty
/// entries dropped.
pub fn parse_header(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|uri| !uri.is_empty())
}

/// Of the `requested` URIs, those `card` declares, in the card's order, each once: what a
/// response echoes in its `A2A-Extensions` header.
pub fn activated<'a>(card: &'a AgentCard, requested: &[impl AsRef<str>]) -> Vec<&'a str> {
    card.capabilities
        .extensions
        .iter()
        .map(|extension| extension.uri.as_str())
        .filter(|uri| requested.iter().any(|r| r.as_ref() == *uri))
        .collect()
}

/// Add to `message.extensions` the `requested` URIs `card` declares that it does not name
/// yet; whether it changed.
pub(super) fn activate(card: &AgentCard, message: &mut Message, requested: &[String]) -> bool {
    let mut changed = false;
    for uri in activated(card, requested) {
        if !message.extensions.iter().any(|named| named == uri) {
            message.extensions.push(uri.to_owned());
            changed = true;
        }
    }
    changed
}

/// Refuse `message` if it does not activate every extension `card` marks required (when
/// `scope` applies to it).
pub(super) fn check_required(
    card: &AgentCard,
    scope: &ExtensionScope,
    message: &Message,
) -> Result<()> {
    if !scope.applies_to(message) {
        return Ok(());
    }
    let missing: Vec<&str> = card
        .capabilities
        .extensions
        .iter()
        .filter(|extension| extension.required)
        .map(|extension| extension.uri.as_str())
        .filter(|uri| !message.extensions.iter().any(|named| named == uri))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::ExtensionSupportRequired,
        format!(
            "this agent requires the extension{} {}: activate {} with the A2A-Extensions header",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "it" } else { "them" },
        ),
    )
    .with_detail("extensions", missing.join(",")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agentlog_wire::a2a::AgentExtension;

    fn card() -> AgentCard {
        let mut card: AgentCard = serde_json::from_value(serde_json::json!({
            "name": "a", "description": "d", "version": "1",
            "supportedInterfaces": [], "capabilities": {}, "defaultInputModes": [],
            "defaultOutputModes": [], "skills": []
        }))
        .unwrap();
        for (uri, required) in [("urn:opt", false), ("urn:req", true)] {
            card.capabilities.extensions.push(AgentExtension {
                uri: uri.into(),
                description: None,
                required,
                params: None,
            });
        }
        card
    }

    #[test]
    fn the_header_lists_uris() {
        let uris: Vec<_> = parse_header(" urn:a, ,urn:b ,").collect();
        assert_eq!(uris, ["urn:a", "urn:b"]);
    }

    #[test]
    fn only_declared_extensions_are_activated() {
        let card = card();
        let requested = vec!["urn:unknown".to_owned(), "urn:req".to_owned()];
        assert_eq!(activated(&card, &requested), ["urn:req"]);
        let mut message = Message::user_text("m", "hi");
        assert!(activate(&card, &mut message, &requested));
        assert_eq!(message.extensions, ["urn:req"]);
        assert!(!activate(&card, &mut message, &requested), "already named");
    }

    #[test]
    fn a_missing_required_extension_is_refused_with_32008() {
        let card = card();
        let mut message = Message::user_text("m", "hi");
        let every = ExtensionScope::default();
        let error = check_required(&card, &every, &message).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::ExtensionSupportRequired);
        assert!(error.to_string().contains("urn:req"), "{error}");
        // A scope that leaves the message out asks nothing of it.
        let probes =
            ExtensionScope::Matching(Arc::new(|m: &Message| m.message_id.starts_with("probe")));
        check_required(&card, &probes, &message).unwrap();
        let probe = Message::user_text("probe-1", "hi");
        assert!(check_required(&card, &probes, &probe).is_err());
        message.extensions.push("urn:req".into());
        check_required(&card, &every, &message).unwrap();
    }
}
