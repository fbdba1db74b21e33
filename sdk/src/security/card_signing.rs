//! Signed agent cards (A2A §8.4): sign a card with ed25519 keys, check a card's signatures
//! against trusted public keys.
//!
//! Each key adds one signature: a JWS with a detached payload, protected header
//! `{"alg":"EdDSA","kid":<the key's id>,"typ":"JOSE"}`, over the card's canonical payload
//! ([`agentlog_wire::a2a::card_payload`]: the 1.0 fields without `signatures`, empties
//! removed, RFC 8785). Signing with two keys at once is how keys rotate: clients that trust
//! either key accept the card. A card verifies when at least one of its signatures is by a
//! trusted key (same `kid`) and checks out; the official Python and JS SDKs verify the same
//! signatures. The rules are in `skills/security/cards.md`.

use agentlog_wire::a2a::{
    AgentCard, AgentCardSignature, ProtectedHeader, base64url_decode, card_payload, signing_input,
};

use super::keys::{SigningKey, VerifyingKey};
use crate::error::{Error, ErrorKind, Result};

/// The JWS algorithm of agentlog's card signatures: Ed25519 (RFC 8037).
pub const CARD_SIGNATURE_ALG: &str = "EdDSA";

/// `card` signed by each of `keys`, in order: its `signatures` are exactly one per key.
/// Signatures the card held are dropped (they were over the card as it came, and whoever
/// serves it, `agentlog serve` rewriting its interfaces for one, changes that).
pub fn sign_card(card: &AgentCard, keys: &[SigningKey]) -> Result<AgentCard> {
    let payload = payload(card)?;
    let mut signed = card.clone();
    signed.signatures = keys
        .iter()
        .map(|key| signature_over(&payload, key))
        .collect::<Result<_>>()?;
    Ok(signed)
}

/// One signature of `card` by `key` (protected header `alg` EdDSA, `kid` the key's id, `typ`
/// JOSE); Ed25519 is deterministic, so the same card and key always give the same one.
pub fn card_signature(card: &AgentCard, key: &SigningKey) -> Result<AgentCardSignature> {
    signature_over(&payload(card)?, key)
}

fn signature_over(payload: &str, key: &SigningKey) -> Result<AgentCardSignature> {
    let protected = ProtectedHeader::new(CARD_SIGNATURE_ALG, key.kid())
        .encode()
        .map_err(|e| Error::new(ErrorKind::Internal, format!("encoding a JWS header: {e}")))?;
    let signature = key.sign(signing_input(&protected, payload).as_bytes());
    Ok(AgentCardSignature {
        protected,
        signature: agentlog_wire::a2a::base64url(&signature),
        header: None,
    })
}

fn payload(card: &AgentCard) -> Result<String> {
    card_payload(card).map_err(|e| {
        Error::new(
            ErrorKind::InvalidParams,
            format!("the card has no canonical form to sign: {e}"),
        )
    })
}

/// What checking one signature found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureCheck {
    /// By a trusted key, over this card: the card is authentic.
    Verified,
    /// By a key not among the trusted ones (its `kid` names none of them).
    UnknownKey,
    /// By a trusted key, but not over this card: changed after signing, or signed wrongly.
    BadSignature,
    /// An algorithm other than EdDSA (the keys here are ed25519 only).
    UnsupportedAlgorithm,
    /// Not a readable JWS: the reason.
    Malformed(String),
}

/// One signature of a card and what checking it found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedSignature {
    /// The key id its protected header names (`None` when the header is unreadable).
    pub kid: Option<String>,
    /// The algorithm its protected header names (`None` when the header is unreadable).
    pub alg: Option<String>,
    /// The finding.
    pub check: SignatureCheck,
}

/// Check each of `card`'s signatures against `trusted` (found by `kid`), in order. Fails
/// only when the card has no canonical form (nesting deeper than 128).
pub fn check_card_signatures(
    card: &AgentCard,
    trusted: &[VerifyingKey],
) -> Result<Vec<CheckedSignature>> {
    let payload = payload(card)?;
    Ok(card
        .signatures
        .iter()
        .map(|signature| check_one(signature, &payload, trusted))
        .collect())
}

fn check_one(
    signature: &AgentCardSignature,
    payload: &str,
    trusted: &[VerifyingKey],
) -> CheckedSignature {
    let header = match ProtectedHeader::decode(&signature.protected) {
        Ok(header) => header,
        Err(e) => {
            return CheckedSignature {
                kid: None,
                alg: None,
                check: SignatureCheck::Malformed(e.to_string()),
            };
        }
    };
    let check = if header.alg != CARD_SIGNATURE_ALG {
        SignatureCheck::UnsupportedAlgorithm
    } else {
        match trusted.iter().find(|key| key.kid() == header.kid) {
            None => SignatureCheck::UnknownKey,
            Some(key) => match base64url_decode(&signature.signature) {
                Err(e) => SignatureCheck::Malformed(format!("the signature is not base64url: {e}")),
                Ok(bytes) => {
                    let input = signing_input(&signature.protected, payload);
                    if key.verify(input.as_bytes(), &bytes) {
                        SignatureCheck::Verified
                    } else {
                        SignatureCheck::BadSignature
                    }
                }
            },
        }
    };
    CheckedSignature {
        kid: Some(header.kid),
        alg: Some(header.alg),
        check,
    }
}

/// Verify `card`: at least one of its signatures must be by a key of `trusted` and check
/// out. Returns the key id that verified (the first, in the card's order).
///
/// Errors are [`ErrorKind::Unauthenticated`] and say why: the card has no signatures; none is
/// by a trusted key (naming the card's key ids and the trusted ones); or a trusted key's
/// signature does not match the card (changed after signing). An empty `trusted` is
/// [`ErrorKind::Config`].
pub fn verify_card(card: &AgentCard, trusted: &[VerifyingKey]) -> Result<String> {
    if trusted.is_empty() {
        return Err(Error::new(
            ErrorKind::Config,
            "no public key to verify the card against",
        ));
    }
    if card.signatures.is_empty() {
        return Err(Error::new(
            ErrorKind::Unauthenticated,
            "the card has no signatures",
        ));
    }
    let checked = check_card_signatures(card, trusted)?;
    if let Some(kid) = checked
        .iter()
        .find(|c| c.check == SignatureCheck::Verified)
        .and_then(|c| c.kid.clone())
    {
        return Ok(kid);
    }
    Err(Error::new(
        ErrorKind::Unauthenticated,
        refusal(&checked, trusted),
    ))
}

/// Why no signature verified, most telling first: a trusted key's signature that does not
/// match says the card was changed; otherwise which keys signed and which are trusted.
fn refusal(checked: &[CheckedSignature], trusted: &[VerifyingKey]) -> String {
    let kids = |wanted: &dyn Fn(&SignatureCheck) -> bool| -> Vec<String> {
        checked
            .iter()
            .filter(|c| wanted(&c.check))
            .filter_map(|c| c.kid.clone())
            .collect()
    };
    let bad = kids(&|c| *c == SignatureCheck::BadSignature);
    if !bad.is_empty() {
        return format!(
            "the signature by trusted key {} does not match the card: the card was changed \
             after it was signed",
            bad.join(", ")
        );
    }
    let signed_by = kids(&|_| true);
    let trusted: Vec<&str> = trusted.iter().map(VerifyingKey::kid).collect();
    let mut line = if signed_by.is_empty() {
        "no signature of the card is readable".to_owned()
    } else {
        format!(
            "no signature is by a trusted key: the card is signed by key {}; trusted: {}",
            signed_by.join(", "),
            trusted.join(", ")
        )
    };
    for (i, c) in checked.iter().enumerate() {
        match &c.check {
            SignatureCheck::Malformed(why) => line.push_str(&format!(" (signature {i}: {why})")),
            SignatureCheck::UnsupportedAlgorithm => line.push_str(&format!(
                " (signature {i}: algorithm {} is not {CARD_SIGNATURE_ALG})",
                c.alg.as_deref().unwrap_or("?")
            )),
            _ => {}
        }
    }
    line
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// `fixtures/card_signatures.json`, shared with the other languages' tests.
    fn fixture_cases() -> Vec<Value> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/card_signatures.json");
        let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        file["cases"].as_array().unwrap().clone()
    }

    fn hex32(text: &str) -> [u8; 32] {
        let bytes: Vec<u8> = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect();
        bytes.try_into().unwrap()
    }

    /// The reference vector's key (seed 00 01 .. 1f) under the kid the vector uses.
    fn vector_key() -> SigningKey {
        let mut seed = [0u8; 32];
        for (i, b) in seed.iter_mut().enumerate() {
            *b = u8::try_from(i).unwrap();
        }
        SigningKey::from_seed(seed).with_kid("key-1")
    }

    fn card(value: &Value) -> AgentCard {
        serde_json::from_value(value.clone()).unwrap()
    }

    #[test]
    fn every_signed_fixture_verifies_or_fails_as_it_says() {
        let mut seen = 0;
        for case in fixture_cases() {
            let input = &case["input"];
            let Some(valid) = case["expected"]["valid"].as_bool() else {
                continue;
            };
            let description = case["description"].as_str().unwrap();
            let public = VerifyingKey::from_bytes(&hex32(input["publicKeyHex"].as_str().unwrap()))
                .unwrap()
                .with_kid(input["kid"].as_str().unwrap());
            let signed = card(&input["card"]);
            let result = verify_card(&signed, std::slice::from_ref(&public));
            assert_eq!(result.is_ok(), valid, "{description}: {result:?}");
            if let Err(e) = result {
                assert_eq!(e.kind(), ErrorKind::Unauthenticated, "{description}");
            }
            // The seed re-signs the card: Ed25519 is deterministic, so a valid vector's
            // signature comes out byte for byte.
            let key = SigningKey::from_seed(hex32(input["seedHex"].as_str().unwrap()))
                .with_kid(input["kid"].as_str().unwrap());
            assert_eq!(key.verifying_key(), public, "{description}");
            if valid {
                assert_eq!(
                    card_signature(&signed, &key).unwrap(),
                    signed.signatures[0],
                    "{description}"
                );
            }
            seen += 1;
        }
        assert!(seen >= 2, "the vector and its tampered copy");
    }

    #[test]
    fn the_reference_vector_signs_to_the_reference_signature() {
        let case = fixture_cases()
            .into_iter()
            .find(|c| c["expected"]["valid"] == true)
            .unwrap();
        let mut unsigned = card(&case["input"]["card"]);
        let reference = unsigned.signatures.clone();
        unsigned.signatures.clear();
        let signed = sign_card(&unsigned, &[vector_key()]).unwrap();
        assert_eq!(signed.signatures, reference);
        assert_eq!(
            signed.signatures[0].signature,
            "Me0aguksVyblqtDMxl8PVfKNyWzNcTX19ynA5YM663o8lqpgOYT3rygQ0Ib5TdSVw-4UTDMAf4OwPXU2VqXfCg"
        );
        assert_eq!(
            verify_card(&signed, &[vector_key().verifying_key()]).unwrap(),
            "key-1"
        );
    }

    fn demo_card() -> AgentCard {
        crate::bridge::default_card("demo")
    }

    #[test]
    fn a_tampered_card_fails_and_says_it_was_changed() {
        let key = SigningKey::generate().unwrap();
        let mut signed = sign_card(&demo_card(), std::slice::from_ref(&key)).unwrap();
        assert_eq!(
            verify_card(&signed, &[key.verifying_key()]).unwrap(),
            key.kid()
        );
        signed.description.push_str(" (tampered)");
        let err = verify_card(&signed, &[key.verifying_key()]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unauthenticated);
        let checked = check_card_signatures(&signed, &[key.verifying_key()]).unwrap();
        assert_eq!(checked[0].check, SignatureCheck::BadSignature);
        assert_eq!(checked[0].kid.as_deref(), Some(key.kid()));
        // A changed signature, too.
        signed.description = demo_card().description;
        let mut bytes = base64url_decode(&signed.signatures[0].signature).unwrap();
        bytes[0] ^= 1;
        signed.signatures[0].signature = agentlog_wire::a2a::base64url(&bytes);
        let checked = check_card_signatures(&signed, &[key.verifying_key()]).unwrap();
        assert_eq!(checked[0].check, SignatureCheck::BadSignature);
    }

    #[test]
    fn rotation_two_keys_sign_and_either_verifies() {
        let old = SigningKey::generate().unwrap();
        let new = SigningKey::generate().unwrap();
        let signed = sign_card(&demo_card(), &[old.clone(), new.clone()]).unwrap();
        assert_eq!(signed.signatures.len(), 2);
        assert_eq!(
            verify_card(&signed, &[old.verifying_key()]).unwrap(),
            old.kid()
        );
        assert_eq!(
            verify_card(&signed, &[new.verifying_key()]).unwrap(),
            new.kid()
        );
        // Both trusted: the first signature in the card's order is the one named.
        assert_eq!(
            verify_card(&signed, &[new.verifying_key(), old.verifying_key()]).unwrap(),
            old.kid()
        );
        // Signing again replaces the signatures: the old key dropped, one left.
        let rotated = sign_card(&signed, std::slice::from_ref(&new)).unwrap();
        assert_eq!(rotated.signatures.len(), 1);
        let checked = check_card_signatures(&rotated, &[old.verifying_key()]).unwrap();
        assert_eq!(checked[0].check, SignatureCheck::UnknownKey);
    }

    #[test]
    fn each_refusal_says_why() {
        let key = SigningKey::generate().unwrap();
        let stranger = SigningKey::generate().unwrap();
        let trusted = [key.verifying_key()];

        let err = verify_card(&demo_card(), &trusted).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unauthenticated);
        assert!(err.message().contains("no signatures"), "{err}");

        let by_stranger = sign_card(&demo_card(), std::slice::from_ref(&stranger)).unwrap();
        let err = verify_card(&by_stranger, &trusted).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unauthenticated);
        assert!(
            err.message().contains(stranger.kid()) && err.message().contains(key.kid()),
            "{err}"
        );

        let err = verify_card(&by_stranger, &[]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);

        // A header naming another algorithm, and one that is not a JWS header at all.
        let mut odd = sign_card(&demo_card(), std::slice::from_ref(&key)).unwrap();
        let mut header = ProtectedHeader::decode(&odd.signatures[0].protected).unwrap();
        header.alg = "ES256".to_owned();
        odd.signatures[0].protected = header.encode().unwrap();
        odd.signatures.push(AgentCardSignature {
            protected: "%%".to_owned(),
            signature: "AA".to_owned(),
            header: None,
        });
        let checked = check_card_signatures(&odd, &trusted).unwrap();
        assert_eq!(checked[0].check, SignatureCheck::UnsupportedAlgorithm);
        assert!(matches!(checked[1].check, SignatureCheck::Malformed(_)));
        assert_eq!(checked[1].kid, None);
        let err = verify_card(&odd, &trusted).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unauthenticated);
        assert!(err.message().contains("ES256"), "{err}");
    }

    #[test]
    fn the_kid_is_the_thumbprint_so_a_loaded_public_key_finds_its_signature() {
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("card.key");
        let public = SigningKey::generate()
            .unwrap()
            .write_pair(&private)
            .unwrap();
        let signed = sign_card(&demo_card(), &[SigningKey::load(&private).unwrap()]).unwrap();
        let kid = verify_card(&signed, &[VerifyingKey::load(&public).unwrap()]).unwrap();
        assert_eq!(kid, SigningKey::load(&private).unwrap().kid());
    }
}
