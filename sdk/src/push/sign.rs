//! Signed notifications: every POST carries a short-lived EdDSA JWT, signed with the agent's
//! key, binding the receiver's URL (`aud`), the task (`taskId`) and the body (its SHA-256 in
//! `request_body_sha256`), with `iss`, `iat`, `exp` and a unique `jti`. The spec's example
//! scheme for authenticating notifications, with the body bound as a2a-samples do; a
//! receiver checks it with the keys the agent serves at `/.well-known/jwks.json`
//! ([`super::verify`]).

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::security::{SigningKey, VerifyingKey};

/// How long a notification's JWT is valid after it is made.
pub const JWT_LIFETIME: Duration = Duration::from_secs(300);

/// Signs notifications. Cheap to clone.
#[derive(Debug, Clone)]
pub struct NotificationSigner {
    key: SigningKey,
    issuer: String,
    /// Published beside the signing key (a rotation's previous or next key).
    also: Vec<VerifyingKey>,
}

impl NotificationSigner {
    /// A signer with `key`, writing `issuer` in `iss`.
    pub fn new(key: SigningKey, issuer: impl Into<String>) -> Self {
        Self {
            key,
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
        let header = json!({"alg": "EdDSA", "typ": "JWT", "kid": self.key.kid()});
        let claims = json!({
            "iss": self.issuer,
            "aud": url,
            "iat": now,
            "exp": now + JWT_LIFETIME.as_secs(),
            "jti": uuid::Uuid::new_v4().to_string(),
            "taskId": task_id,
            "request_body_sha256": body_sha256(body),
        });
        let input = format!("{}.{}", part(&header), part(&claims));
        let signature = self.key.sign(input.as_bytes());
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
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
    Sha256::digest(body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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
