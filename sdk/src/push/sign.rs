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
use crate::security::SigningKey;

/// How long a notification's JWT is valid after it is made.
pub const JWT_LIFETIME: Duration = Duration::from_secs(300);

/// Signs notifications. Cheap to clone.
#[derive(Debug, Clone)]
pub struct NotificationSigner {
    key: SigningKey,
    issuer: String,
}

impl NotificationSigner {
    /// A signer with `key`, writing `issuer` in `iss`.
    pub fn new(key: SigningKey, issuer: impl Into<String>) -> Self {
        Self {
            key,
            issuer: issuer.into(),
        }
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

    /// The public key as a JWKS (`{"keys": [...]}`): what `/.well-known/jwks.json` serves.
    pub fn jwks(&self) -> Value {
        json!({"keys": [self.key.verifying_key().to_jwk()]})
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
