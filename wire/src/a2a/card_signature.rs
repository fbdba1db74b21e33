//! What a signed agent card's signatures cover (A2A §8.4), without the cryptography: the
//! canonical payload of a card, its JWS protected header and the signing input.
//!
//! A card signature is a JWS (RFC 7515) in flattened form with a detached payload:
//! `{"protected": b64url(header), "signature": b64url(sig), "header"?: {...}}`
//! ([`AgentCardSignature`](super::AgentCardSignature)). The payload is built exactly as both official SDKs build it
//! (a2a-sdk `_canonicalize_agent_card`, @a2a-js/sdk `canonicalizeAgentCard`), or their
//! verifiers disagree with ours:
//!
//! 1. the card's A2A 1.0 fields only, by ProtoJSON presence rules (reading a card through
//!    [`AgentCard`] drops everything else, the legacy 0.3 top-level keys of a dual-version
//!    card included: they are not signed);
//! 2. without `signatures`;
//! 3. with empty strings, arrays and objects and nulls removed, recursively (`false` and `0`
//!    stay) — [`remove_empty`];
//! 4. in RFC 8785 canonical form ([`crate::jcs`]).
//!
//! Step 3 is the SDKs' reading of the spec's "defaults removed"; the spec's own example keeps
//! REQUIRED empties (`"skills":[]`). The two agree whenever no required field is empty, which
//! [`AgentCard::validate`] ensures.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::AgentCard;
use crate::WireError;
use crate::jcs::{self, MAX_DEPTH};

/// The `typ` of a card signature's protected header (spec §8.4.2: SHOULD be `JOSE`).
pub const CARD_SIGNATURE_TYP: &str = "JOSE";

/// The canonical payload of `card`, the text its signatures sign (steps 1–4 above); its
/// `signatures` are ignored.
pub fn card_payload(card: &AgentCard) -> Result<String, WireError> {
    let value = serde_json::to_value(card).map_err(|error| WireError::InvalidJson {
        what: "AgentCard",
        reason: error.to_string(),
    })?;
    let Value::Object(mut fields) = value else {
        return Err(WireError::InvalidJson {
            what: "AgentCard",
            reason: "a card serializes to a JSON object".to_owned(),
        });
    };
    fields.remove("signatures");
    match remove_empty(Value::Object(fields))? {
        Some(cleaned) => jcs::canonicalize(&cleaned),
        // Every member was empty (the JS SDK's answer; Python's would be `null`).
        None => Ok("{}".to_owned()),
    }
}

/// `value` with every empty string, empty array, empty object and null removed, recursively
/// (a container left empty by the removal goes too); `None` when nothing is left. `false`
/// and `0` are values, not emptiness, and stay. Nesting deeper than [`MAX_DEPTH`] is refused.
pub fn remove_empty(value: Value) -> Result<Option<Value>, WireError> {
    clean(value, 1)
}

fn clean(value: Value, depth: usize) -> Result<Option<Value>, WireError> {
    let container = matches!(value, Value::Array(_) | Value::Object(_));
    if container && depth > MAX_DEPTH {
        return Err(WireError::InvalidJson {
            what: "canonical JSON",
            reason: format!("nesting exceeds the maximum depth of {MAX_DEPTH}"),
        });
    }
    Ok(match value {
        Value::Null => None,
        Value::String(text) if text.is_empty() => None,
        Value::Array(items) => {
            let mut kept = Vec::with_capacity(items.len());
            for item in items {
                if let Some(item) = clean(item, depth + 1)? {
                    kept.push(item);
                }
            }
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(members) => {
            let mut kept = Map::new();
            for (name, member) in members {
                if let Some(member) = clean(member, depth + 1)? {
                    kept.insert(name, member);
                }
            }
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other),
    })
}

/// A card signature's JWS protected header: `alg`, `kid` and `typ` are required (spec
/// §8.4.2; the JS SDK's verifier skips a signature without any of them), `jku` optional.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedHeader {
    /// The JWS algorithm, e.g. `EdDSA`.
    pub alg: String,
    /// The signing key's id.
    pub kid: String,
    /// The JWS type, [`CARD_SIGNATURE_TYP`] when we sign.
    pub typ: String,
    /// A URL of the JWKS that holds the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jku: Option<String>,
}

impl ProtectedHeader {
    /// The header for a signature by key `kid` with algorithm `alg`, of type `JOSE`.
    pub fn new(alg: impl Into<String>, kid: impl Into<String>) -> Self {
        Self {
            alg: alg.into(),
            kid: kid.into(),
            typ: CARD_SIGNATURE_TYP.to_owned(),
            jku: None,
        }
    }

    /// The `protected` value: base64url of the header's JSON, members sorted and without
    /// whitespace (the bytes PyJWT writes, so a key signs a card the same way in either).
    pub fn encode(&self) -> Result<String, WireError> {
        let value = serde_json::to_value(self).map_err(|error| WireError::InvalidJson {
            what: "protected header",
            reason: error.to_string(),
        })?;
        Ok(base64url(jcs::canonicalize(&value)?.as_bytes()))
    }

    /// Read a signature's `protected` value. Refused: text that is not base64url (unpadded),
    /// bytes that are not a JSON object, a missing or non-string `alg`, `kid` or `typ`, and a
    /// `crit` member (no JWS extension is understood here, so RFC 7515 §4.1.11 says reject).
    pub fn decode(protected: &str) -> Result<Self, WireError> {
        let bad = |reason: String| WireError::InvalidField {
            field: "protected",
            reason,
        };
        let bytes = base64url_decode(protected).map_err(|_| {
            bad("not base64url (RFC 7515: URL-safe alphabet, no padding)".to_owned())
        })?;
        let value: Value =
            serde_json::from_slice(&bytes).map_err(|error| bad(format!("not JSON: {error}")))?;
        let Value::Object(members) = &value else {
            return Err(bad("not a JSON object".to_owned()));
        };
        for required in ["alg", "kid", "typ"] {
            match members.get(required) {
                Some(Value::String(text)) if !text.is_empty() => {}
                Some(_) => return Err(bad(format!("`{required}` is not a non-empty string"))),
                None => return Err(bad(format!("no `{required}`"))),
            }
        }
        if members.contains_key("crit") {
            return Err(bad(
                "`crit` names extensions this verifier does not know".to_owned()
            ));
        }
        serde_json::from_value(value).map_err(|error| bad(error.to_string()))
    }
}

/// The JWS signing input of a card signature: `protected "." b64url(payload)`, the bytes the
/// key signs.
pub fn signing_input(protected: &str, payload: &str) -> String {
    format!("{protected}.{}", base64url(payload.as_bytes()))
}

/// Unpadded base64url (RFC 4648 §5), JWS's encoding.
pub fn base64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The bytes of unpadded base64url text.
pub fn base64url_decode(text: &str) -> Result<Vec<u8>, WireError> {
    URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|error| WireError::InvalidField {
            field: "base64url",
            reason: error.to_string(),
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The card of the reference's Ed25519 test vector (a2a-protocol.md §8).
    fn vector_card() -> Value {
        json!({
            "name": "Example Agent", "description": "Example", "version": "1.0.0",
            "supportedInterfaces": [{"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": false, "pushNotifications": false},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}]
        })
    }

    const VECTOR_PAYLOAD: &str = concat!(
        r#"{"capabilities":{"pushNotifications":false,"streaming":false},"defaultInputModes":["text/plain"],"#,
        r#""defaultOutputModes":["text/plain"],"description":"Example","name":"Example Agent","#,
        r#""skills":[{"description":"d","id":"s","name":"S","tags":["t"]}],"#,
        r#""supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"https://agent.example.com/a2a"}],"version":"1.0.0"}"#
    );

    fn payload_of(value: Value) -> String {
        let card: AgentCard = serde_json::from_value(value).unwrap();
        card_payload(&card).unwrap()
    }

    #[test]
    fn the_reference_card_gives_the_reference_payload() {
        assert_eq!(payload_of(vector_card()), VECTOR_PAYLOAD);
    }

    #[test]
    fn signatures_and_legacy_0_3_keys_are_not_signed() {
        let mut card = vector_card();
        let fields = card.as_object_mut().unwrap();
        fields.insert(
            "signatures".into(),
            json!([{"protected": "eyJ9", "signature": "AA"}]),
        );
        for (name, value) in [
            ("url", json!("https://agent.example.com/a2a")),
            ("preferredTransport", json!("JSONRPC")),
            ("protocolVersion", json!("0.3")),
            (
                "additionalInterfaces",
                json!([{"url": "https://agent.example.com/a2a", "transport": "JSONRPC"}]),
            ),
            ("supportsAuthenticatedExtendedCard", json!(false)),
            ("security", json!([{"bearer": []}])),
        ] {
            fields.insert(name.into(), value);
        }
        assert_eq!(payload_of(card), VECTOR_PAYLOAD);
    }

    #[test]
    fn empties_go_and_false_and_zero_stay() {
        let mut card = vector_card();
        let fields = card.as_object_mut().unwrap();
        fields.insert("iconUrl".into(), json!(""));
        fields.insert(
            "securityRequirements".into(),
            json!([{"schemes": {"jwt": {"list": []}}}]),
        );
        fields.insert(
            "capabilities".into(),
            json!({"streaming": false, "pushNotifications": false, "extensions": [
                {"uri": "urn:x", "description": "", "params": {"zero": 0, "off": false, "none": null, "empty": {"a": [], "b": ""}}}
            ]}),
        );
        fields.insert(
            "skills".into(),
            json!([{"id": "s", "name": "S", "description": "d", "tags": ["t"], "examples": [], "inputModes": [""]}]),
        );
        assert_eq!(
            payload_of(card),
            VECTOR_PAYLOAD.replace(
                r#""capabilities":{"pushNotifications":false,"streaming":false}"#,
                r#""capabilities":{"extensions":[{"params":{"off":false,"zero":0},"uri":"urn:x"}],"pushNotifications":false,"streaming":false}"#
            )
        );
    }

    #[test]
    fn remove_empty_keeps_values_and_drops_emptiness() {
        assert_eq!(
            remove_empty(json!({"a": [null, "", {}, []]})).unwrap(),
            None
        );
        assert_eq!(
            remove_empty(json!([0, false, "x", [""], {"k": null}])).unwrap(),
            Some(json!([0, false, "x"]))
        );
        let mut deep = json!({});
        for _ in 0..=MAX_DEPTH {
            deep = json!({ "x": deep, "y": 1 });
        }
        assert_eq!(remove_empty(deep).unwrap_err().kind(), "invalid_json");
    }

    #[test]
    fn the_reference_protected_header_round_trips() {
        let header = ProtectedHeader::new("EdDSA", "key-1");
        let protected = header.encode().unwrap();
        assert_eq!(
            protected,
            "eyJhbGciOiJFZERTQSIsImtpZCI6ImtleS0xIiwidHlwIjoiSk9TRSJ9"
        );
        assert_eq!(ProtectedHeader::decode(&protected).unwrap(), header);
        let with_jku = ProtectedHeader {
            jku: Some("https://a.example/jwks.json".into()),
            ..header
        };
        let text =
            String::from_utf8(base64url_decode(&with_jku.encode().unwrap()).unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"alg":"EdDSA","jku":"https://a.example/jwks.json","kid":"key-1","typ":"JOSE"}"#
        );
    }

    #[test]
    fn malformed_protected_headers_are_refused_with_the_reason() {
        let encode = |text: &str| base64url(text.as_bytes());
        for (protected, reason) in [
            ("eyJhbGciOiJFZERTQSJ9=".to_owned(), "not base64url"),
            ("@@@".to_owned(), "not base64url"),
            (encode("not json"), "not JSON"),
            (encode("[1]"), "not a JSON object"),
            (encode(r#"{"alg":"EdDSA","typ":"JOSE"}"#), "no `kid`"),
            (encode(r#"{"kid":"k","typ":"JOSE"}"#), "no `alg`"),
            (encode(r#"{"alg":"EdDSA","kid":"k"}"#), "no `typ`"),
            (
                encode(r#"{"alg":"EdDSA","kid":7,"typ":"JOSE"}"#),
                "`kid` is not",
            ),
            (
                encode(r#"{"alg":"EdDSA","kid":"k","typ":"JOSE","crit":["b64"],"b64":false}"#),
                "`crit`",
            ),
        ] {
            let err = ProtectedHeader::decode(&protected).unwrap_err();
            assert_eq!(err.kind(), "invalid_field", "{protected}");
            assert!(err.to_string().contains(reason), "{protected}: {err}");
        }
    }

    #[test]
    fn the_signing_input_is_protected_dot_payload() {
        assert_eq!(signing_input("eyJ9", "{}"), "eyJ9.e30");
        let protected = ProtectedHeader::new("EdDSA", "key-1").encode().unwrap();
        assert_eq!(
            signing_input(&protected, VECTOR_PAYLOAD),
            format!(
                "eyJhbGciOiJFZERTQSIsImtpZCI6ImtleS0xIiwidHlwIjoiSk9TRSJ9.{}",
                base64url(VECTOR_PAYLOAD.as_bytes())
            )
        );
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
        assert_eq!(base64url_decode("-_8").unwrap(), [0xfb, 0xff]);
    }
}
