//! [`AgentCard`]: the self-description an agent serves at `/.well-known/agent-card.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{SecurityRequirement, SecurityScheme, is_false};
use crate::WireError;

/// An agent's card: who it is, where and how to reach it, what it can do.
///
/// Required fields are always serialized; [`AgentCard::validate`] checks they are filled in.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// Human-readable name. Required.
    #[serde(default)]
    pub name: String,
    /// What the agent does. Required.
    #[serde(default)]
    pub description: String,
    /// The agent's own version, e.g. `1.0.0`. Required.
    #[serde(default)]
    pub version: String,
    /// Endpoints, preferred first. Required, at least one.
    #[serde(default, alias = "supported_interfaces")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// The organization behind the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// Documentation URL.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "documentation_url"
    )]
    pub documentation_url: Option<String>,
    /// Icon URL.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "icon_url")]
    pub icon_url: Option<String>,
    /// Optional protocol features. Required.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// Scheme name to scheme.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        alias = "security_schemes"
    )]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Which schemes a request must satisfy (OR of ANDs).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "security_requirements"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Media types accepted for input. Required.
    #[serde(default, alias = "default_input_modes")]
    pub default_input_modes: Vec<String>,
    /// Media types produced as output. Required.
    #[serde(default, alias = "default_output_modes")]
    pub default_output_modes: Vec<String>,
    /// What the agent can do. Required (may be empty).
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
    /// JWS signatures over the card (detached payload).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
}

/// One endpoint of an agent: URL, protocol binding and version.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The endpoint URL. Required.
    #[serde(default)]
    pub url: String,
    /// `JSONRPC`, `GRPC`, `HTTP+JSON` or a custom URI. Required.
    #[serde(default, alias = "protocol_binding")]
    pub protocol_binding: String,
    /// `Major.Minor`, e.g. `1.0`. Required.
    #[serde(default, alias = "protocol_version")]
    pub protocol_version: String,
    /// The tenant to put in every request sent to this interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// The organization behind an agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// Its website.
    #[serde(default)]
    pub url: String,
    /// Its name.
    #[serde(default)]
    pub organization: String,
}

/// Optional protocol features an agent supports.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// Supports `SendStreamingMessage` and `SubscribeToTask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Supports push notification configs.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "push_notifications"
    )]
    pub push_notifications: Option<bool>,
    /// Protocol extensions supported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    /// Serves `GetExtendedAgentCard`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "extended_agent_card"
    )]
    pub extended_agent_card: Option<bool>,
}

/// A protocol extension an agent supports.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    /// The extension's URI.
    #[serde(default)]
    pub uri: String,
    /// How the agent uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Clients must support it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    /// Extension-specific configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

/// One thing an agent can do.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Unique id. Required.
    #[serde(default)]
    pub id: String,
    /// Human-readable name. Required.
    #[serde(default)]
    pub name: String,
    /// What it does. Required.
    #[serde(default)]
    pub description: String,
    /// Keywords (always serialized).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Input media types, overriding the card's defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty", alias = "input_modes")]
    pub input_modes: Vec<String>,
    /// Output media types, overriding the card's defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty", alias = "output_modes")]
    pub output_modes: Vec<String>,
    /// Security needed for this skill (OR of ANDs).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "security_requirements"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// A JWS signature over the card: the flattened JWS serialization without `payload`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCardSignature {
    /// base64url of the protected header JSON (`alg`, `kid`, `typ`). Required.
    #[serde(default)]
    pub protected: String,
    /// base64url of the signature. Required.
    #[serde(default)]
    pub signature: String,
    /// Unprotected header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Map<String, Value>>,
}

impl AgentCard {
    /// Checks the required fields: name, description, version, at least one interface with
    /// url, binding and version, and each skill's id, name and description.
    pub fn validate(&self) -> Result<(), WireError> {
        let fail = |reason: String| {
            Err(WireError::InvalidJson {
                what: "AgentCard",
                reason,
            })
        };
        for (field, value) in [
            ("name", &self.name),
            ("description", &self.description),
            ("version", &self.version),
        ] {
            if value.is_empty() {
                return fail(format!("`{field}` must not be empty"));
            }
        }
        if self.supported_interfaces.is_empty() {
            return fail("`supportedInterfaces` must hold at least one interface".to_owned());
        }
        for (i, interface) in self.supported_interfaces.iter().enumerate() {
            for (field, value) in [
                ("url", &interface.url),
                ("protocolBinding", &interface.protocol_binding),
                ("protocolVersion", &interface.protocol_version),
            ] {
                if value.is_empty() {
                    return fail(format!(
                        "`supportedInterfaces[{i}].{field}` must not be empty"
                    ));
                }
            }
        }
        if self.skills.is_empty() {
            // A REQUIRED array must hold at least one element (spec §5.7).
            return fail("`skills` must hold at least one skill".to_owned());
        }
        for (i, skill) in self.skills.iter().enumerate() {
            for (field, value) in [
                ("id", &skill.id),
                ("name", &skill.name),
                ("description", &skill.description),
            ] {
                if value.is_empty() {
                    return fail(format!("`skills[{i}].{field}` must not be empty"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::a2a::{OAuthFlows, StringList};
    use serde_json::json;

    /// The canonical payload of the §8 signed-card test vector.
    const SIGNED_PAYLOAD: &str = concat!(
        r#"{"capabilities":{"pushNotifications":false,"streaming":false},"defaultInputModes":["text/plain"],"#,
        r#""defaultOutputModes":["text/plain"],"description":"Example","name":"Example Agent","#,
        r#""skills":[{"description":"d","id":"s","name":"S","tags":["t"]}],"#,
        r#""supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"https://agent.example.com/a2a"}],"version":"1.0.0"}"#
    );

    #[test]
    fn spec_8_payload_parses_and_re_serializes() {
        let card: AgentCard = serde_json::from_str(SIGNED_PAYLOAD).unwrap();
        assert_eq!(card.validate(), Ok(()));
        assert_eq!(card.capabilities.streaming, Some(false));
        let expected: Value = serde_json::from_str(SIGNED_PAYLOAD).unwrap();
        assert_eq!(serde_json::to_value(&card).unwrap(), expected);
        assert_eq!(
            serde_json::to_string(&card).unwrap(),
            concat!(
                r#"{"name":"Example Agent","description":"Example","version":"1.0.0","#,
                r#""supportedInterfaces":[{"url":"https://agent.example.com/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"#,
                r#""capabilities":{"streaming":false,"pushNotifications":false},"defaultInputModes":["text/plain"],"#,
                r#""defaultOutputModes":["text/plain"],"skills":[{"id":"s","name":"S","description":"d","tags":["t"]}]}"#
            )
        );
    }

    #[test]
    fn spec_9_security_block_parses_and_re_serializes() {
        let json = json!({
            "name": "a", "description": "b", "version": "1",
            "supportedInterfaces": [{"url": "u", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t"}],
            "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [],
            "skills": [{"id": "s", "name": "S", "description": "d", "tags": []}],
            "securitySchemes": {
                "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT", "description": "…"}},
                "apikey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
                "oauth":  {"oauth2SecurityScheme": {"flows": {"clientCredentials": {"tokenUrl": "https://x/token", "scopes": {"a2a": "invoke"}}},
                                                    "oauth2MetadataUrl": "https://x/.well-known/oauth-authorization-server"}},
                "oidc":   {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://x/.well-known/openid-configuration"}},
                "mtls":   {"mtlsSecurityScheme": {}}
            },
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}]
        });
        let card: AgentCard = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(card.validate(), Ok(()));
        assert!(matches!(
            &card.security_schemes["oauth"],
            SecurityScheme::Oauth2SecurityScheme {
                flows: OAuthFlows::ClientCredentials { .. },
                ..
            }
        ));
        assert_eq!(
            card.security_requirements[0].schemes["bearer"],
            StringList::default()
        );
        assert_eq!(serde_json::to_value(&card).unwrap(), json);
    }

    #[test]
    fn full_card_round_trips() {
        let json = concat!(
            r#"{"name":"n","description":"d","version":"1","supportedInterfaces":[{"url":"u","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"#,
            r#""provider":{"url":"https://p","organization":"P"},"documentationUrl":"https://doc","iconUrl":"https://icon","#,
            r#""capabilities":{"streaming":true,"pushNotifications":false,"extensions":[{"uri":"urn:x","description":"x","required":true,"params":{"a":1}},{"uri":"urn:y"}],"extendedAgentCard":true},"#,
            r#""securitySchemes":{"mtls":{"mtlsSecurityScheme":{}}},"securityRequirements":[{"schemes":{"mtls":{"list":[]}}}],"#,
            r#""defaultInputModes":["text/plain"],"defaultOutputModes":["application/json"],"#,
            r#""skills":[{"id":"s","name":"S","description":"d","tags":[],"examples":["e"],"inputModes":["a"],"outputModes":["b"],"securityRequirements":[{"schemes":{}}]}],"#,
            r#""signatures":[{"protected":"eyJhbGciOiJFZERTQSIsImtpZCI6ImtleS0xIiwidHlwIjoiSk9TRSJ9","signature":"Me0a","header":{"kid":"key-1"}}]}"#
        );
        let card: AgentCard = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&card).unwrap(), json);
    }

    #[test]
    fn snake_case_and_legacy_fields_are_accepted() {
        let card: AgentCard = serde_json::from_value(json!({
            "name": "n", "description": "d", "version": "1", "url": "legacy", "protocolVersion": "0.3",
            "supported_interfaces": [{"url": "u", "protocol_binding": "JSONRPC", "protocol_version": "1.0"}],
            "capabilities": {"push_notifications": true, "extended_agent_card": false, "stateTransitionHistory": true},
            "default_input_modes": ["a"], "default_output_modes": ["b"],
            "skills": [{"id": "s", "name": "S", "description": "d", "input_modes": ["x"]}]
        }))
        .unwrap();
        assert_eq!(card.validate(), Ok(()));
        assert_eq!(
            serde_json::to_string(&card).unwrap(),
            concat!(
                r#"{"name":"n","description":"d","version":"1","supportedInterfaces":[{"url":"u","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"#,
                r#""capabilities":{"pushNotifications":true,"extendedAgentCard":false},"defaultInputModes":["a"],"defaultOutputModes":["b"],"#,
                r#""skills":[{"id":"s","name":"S","description":"d","tags":[],"inputModes":["x"]}]}"#
            )
        );
    }

    #[test]
    fn validate_names_the_missing_field() {
        let reason = |card: &AgentCard| card.validate().unwrap_err().to_string();
        let mut card = AgentCard::default();
        assert_eq!(reason(&card), "invalid AgentCard: `name` must not be empty");
        card.name = "n".into();
        card.description = "d".into();
        card.version = "1".into();
        assert_eq!(
            reason(&card),
            "invalid AgentCard: `supportedInterfaces` must hold at least one interface"
        );
        card.supported_interfaces.push(AgentInterface {
            url: "u".into(),
            protocol_binding: "JSONRPC".into(),
            ..AgentInterface::default()
        });
        assert_eq!(
            reason(&card),
            "invalid AgentCard: `supportedInterfaces[0].protocolVersion` must not be empty"
        );
        card.supported_interfaces[0].protocol_version = "1.0".into();
        assert_eq!(
            reason(&card),
            "invalid AgentCard: `skills` must hold at least one skill"
        );
        card.skills.push(AgentSkill {
            id: "s".into(),
            ..AgentSkill::default()
        });
        assert_eq!(
            reason(&card),
            "invalid AgentCard: `skills[0].name` must not be empty"
        );
    }
}
