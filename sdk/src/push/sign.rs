//! Signed notifications: every POST carries a short-lived EdDSA JWT, signed with the agent's
//! key, binding the receiver's URL (`aud`), the task (`taskId`) and the body (its SHA-256 in
//! `request_body_sha256`), with `iss`, `iat`, `exp` and a unique `jti`. The spec's example
//! scheme for authenticating notifications, with the body bound as a2a-samples do; a
//! receiver checks it with the keys the agent serves at `/.well-known/jwks.json`
//! ([`super::verify`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorKind, Result};
use crate::security::{SigningKey, VerifyingKey};

/// How long a notification's JWT is valid after it is made.
pub const JWT_LIFETIME: Duration = Duration::from_secs(300);

/// Signs notifications. Cheap to clone.
#[derive(Clone)]
pub struct NotificationSigner {
    key: SigningKey,
    /// The same key as aws-lc holds it, its secret expanded once: every notification is
    /// signed (ed25519 gives the same signature whichever library makes it), and aws-lc's
    /// assembly takes about half the time of the pure Rust implementation. `None` if aws-lc
    /// refused the seed (it takes any 32 bytes): then `key` signs.
    pair: Option<Arc<Ed25519KeyPair>>,
    /// The JWT's first part, the same for every notification (`alg`, `typ`, `kid`).
    header: Arc<str>,
    issuer: String,
    /// Published beside the signing key (a rotation's previous or next key).
    also: Vec<VerifyingKey>,
}

impl fmt::Debug for NotificationSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NotificationSigner")
            .field("key", &self.key)
            .field("issuer", &self.issuer)
            .field("also", &self.also)
            .finish_non_exhaustive()
    }
}

/// A notification's claims, in the order they are written.
#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: &'a str,
    #[serde(rename = "taskId")]
    task_id: &'a str,
    request_body_sha256: &'a str,
}

impl NotificationSigner {
    /// A signer with `key`, writing `issuer` in `iss`.
    pub fn new(key: SigningKey, issuer: impl Into<String>) -> Self {
        let pair = Ed25519KeyPair::from_seed_unchecked(&key.seed())
            .ok()
            .filter(|pair| pair.public_key().as_ref() == key.verifying_key().as_bytes())
            .map(Arc::new);
        let header = json!({"alg": "EdDSA", "typ": "JWT", "kid": key.kid()});
        Self {
            header: Arc::from(part(&header)),
            key,
            pair,
            issuer: issuer.into(),
            also: Vec::new(),
        }
    }
    /// Publish `keys` too in [`jwks`](Self::jwks), after the signing key: during a rotation,
    /// senders still signing with the old key (or already with the new one) verify against
    /// this sender's JWKS. A key already listed is listed once.
    pub fn publishing(mut self, keys: impl IntoIterator<Item = VerifyingKey>) -> Self {
        for key in keys {
            let listed =
                key.kid() == self.key.kid() || self.also.iter().any(|k| k.kid() == key.kid());
            if !listed {
                self.also.push(key);
            }
        }
        self
    }

    /// The JWT for a notification of `task_id` with `body`, to `url`.
    pub fn sign(&self, url: &str, task_id: &str, body: &[u8]) -> Result<String> {
        let now = crate::retention::now_ms() / 1000;
        let mut jti = uuid::Uuid::encode_buffer();
        let mut digest = [0u8; 64];
        let claims = Claims {
            iss: &self.issuer,
            aud: url,
            iat: now,
            exp: now + JWT_LIFETIME.as_secs(),
            jti: uuid::Uuid::new_v4().hyphenated().encode_lower(&mut jti),
            task_id,
            request_body_sha256: hex(&Sha256::digest(body), &mut digest),
        };
        let claims = serde_json::to_vec(&claims).map_err(|e| {
            Error::new(ErrorKind::Internal, "cannot encode a notification's claims").with_source(e)
        })?;
        // Header, claims and signature, each in base64url, joined by dots.
        let mut jwt = String::with_capacity(self.header.len() + claims.len() * 4 / 3 + 96);
        jwt.push_str(&self.header);
        jwt.push('.');
        URL_SAFE_NO_PAD.encode_string(&claims, &mut jwt);
        let fast = self.pair.as_ref().map(|pair| pair.sign(jwt.as_bytes()));
        let slow;
        let signature: &[u8] = match &fast {
            Some(signature) => signature.as_ref(),
            None => {
                slow = self.key.sign(jwt.as_bytes());
                &slow
            }
        };
        jwt.push('.');
        URL_SAFE_NO_PAD.encode_string(signature, &mut jwt);
        Ok(jwt)
    }

    /// The public keys as a JWKS (`{"keys": [...]}`), the signing key first: what
    /// `/.well-known/jwks.json` serves.
    pub fn jwks(&self) -> Value {
        let keys: Vec<Value> = std::iter::once(self.key.verifying_key())
            .chain(self.also.iter().cloned())
            .map(|key| key.to_jwk())
            .collect();
        json!({"keys": keys})
    }

    /// The `iss` of the JWTs.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }
}

/// The SHA-256 of a body, lowercase hex (the `request_body_sha256` claim).
pub fn body_sha256(body: &[u8]) -> String {
    let mut digest = [0u8; 64];
    hex(&Sha256::digest(body), &mut digest).to_owned()
}

/// `bytes` in lowercase hex, written in `out` (twice their length).
fn hex<'a>(bytes: &[u8], out: &'a mut [u8]) -> &'a str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (byte, pair) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 15)];
    }
    let written = &out[..(bytes.len() * 2).min(out.len())];
    // Hex digits are ASCII.
    std::str::from_utf8(written).unwrap_or_default()
}

fn part(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(value.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::push::verify::{Expect, Keys, verify};

    #[test]
    fn a_jwt_is_signed_as_the_key_itself_signs_and_binds_the_body() {
        let key = SigningKey::from_seed([9; 32]);
        let signer = NotificationSigner::new(key.clone(), "agent");
        assert!(signer.pair.is_some(), "aws-lc takes the seed");
        let body = br#"{"statusUpdate":{}}"#;
        let jwt = signer.sign("https://r.example/hook", "t-9", body).unwrap();
        let (input, signature) = jwt.rsplit_once('.').unwrap();
        assert_eq!(
            URL_SAFE_NO_PAD.decode(signature).unwrap(),
            key.sign(input.as_bytes()),
            "the same signature as the key's own"
        );
        let claims: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(input.split_once('.').unwrap().1)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["request_body_sha256"], body_sha256(body));
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            300
        );
        assert_eq!(claims["jti"].as_str().unwrap().len(), 36);
        // The hex of the digest, as any other library writes it.
        assert_eq!(
            body_sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let keys = Keys::from_jwks(&signer.jwks().to_string()).unwrap();
        let claims = verify(&jwt, body, &keys, &Expect::new("https://r.example/hook")).unwrap();
        assert_eq!(claims.task_id, "t-9");
    }

    #[test]
    fn the_jwks_lists_the_signing_key_then_the_published_ones_once() {
        let (old, new) = (
            SigningKey::generate().unwrap(),
            SigningKey::generate().unwrap(),
        );
        let signer = NotificationSigner::new(new.clone(), "agent").publishing([
            old.verifying_key(),
            new.verifying_key(),
            old.verifying_key(),
        ]);
        let jwks = signer.jwks();
        let kids: Vec<&str> = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert_eq!(kids, [new.kid(), old.kid()]);
        // A sender still on the old key verifies against this JWKS; one on a third does not.
        let keys = Keys::from_jwks(&jwks.to_string()).unwrap();
        let expect = Expect::new("https://r.example/hook");
        let body = br#"{"task":{}}"#;
        let jwt = NotificationSigner::new(old, "agent")
            .sign("https://r.example/hook", "t-1", body)
            .unwrap();
        assert_eq!(verify(&jwt, body, &keys, &expect).unwrap().task_id, "t-1");
        let stranger = NotificationSigner::new(SigningKey::generate().unwrap(), "agent")
            .sign("https://r.example/hook", "t-1", body)
            .unwrap();
        assert!(verify(&stranger, body, &keys, &expect).is_err());
    }
}
