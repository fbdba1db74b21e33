//! For receivers: check a notification agentlog signed. A webhook server takes the JWT from
//! the `Agentlog-Notification-Signature` header (or `Authorization: Bearer` when the config
//! set no credentials), the raw body, the URL it registered, and the agent's keys (its
//! `/.well-known/jwks.json`), and gets the claims back once the signature, the audience, the
//! times and the body's hash hold. Seen `jti`s are the receiver's to remember (for `exp`).
//!
//! ```no_run
//! # fn run(jwks_json: &str, jwt: &str, body: &[u8]) -> agentlog::Result<()> {
//! use agentlog::push::verify::{Keys, Expect, verify};
//! let keys = Keys::from_jwks(jwks_json)?;
//! let claims = verify(jwt, body, &keys, &Expect::new("https://me.example/hook"))?;
//! println!("task {} (jti {})", claims.task_id, claims.jti);
//! # Ok(()) }
//! ```

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;

use super::sign::body_sha256;
use crate::error::{Error, ErrorKind, Result};
use crate::security::VerifyingKey;

/// An agent's notification keys.
#[derive(Debug, Clone, Default)]
pub struct Keys(Vec<VerifyingKey>);

impl Keys {
    /// The Ed25519 keys of a JWKS document (`{"keys": [...]}`); other keys are skipped.
    pub fn from_jwks(jwks: &str) -> Result<Self> {
        #[derive(Deserialize)]
        struct Set {
            keys: Vec<serde_json::Value>,
        }
        let set: Set =
            serde_json::from_str(jwks).map_err(|e| refused(format!("not a JWKS document: {e}")))?;
        let keys = set
            .keys
            .iter()
            .filter_map(|jwk| VerifyingKey::parse(&jwk.to_string()).ok())
            .collect();
        Ok(Self(keys))
    }

    /// These keys.
    pub fn new(keys: Vec<VerifyingKey>) -> Self {
        Self(keys)
    }

    fn find(&self, kid: &str) -> Option<&VerifyingKey> {
        self.0.iter().find(|k| k.kid() == kid)
    }
}

/// What a notification must say besides its signature.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Expect {
    /// The URL the receiver registered: the JWT's `aud`.
    pub audience: String,
    /// The agent: the JWT's `iss`, when given.
    pub issuer: Option<String>,
    /// How far clocks may disagree. Default 60 s.
    pub leeway: Duration,
    /// The time to judge `iat` and `exp` by, Unix seconds; `None`: now.
    pub now: Option<u64>,
}

setters!(Expect {
    audience: String,
    leeway: Duration,
} optional {
    issuer: String,
    now: u64,
});

impl Expect {
    /// A notification to `audience` (the URL the receiver registered).
    pub fn new(audience: impl Into<String>) -> Self {
        Self {
            audience: audience.into(),
            issuer: None,
            leeway: Duration::from_secs(60),
            now: None,
        }
    }
}

/// A verified notification's claims.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Claims {
    /// The agent.
    pub iss: String,
    /// The receiver's URL.
    pub aud: String,
    /// When the JWT was made, Unix seconds.
    pub iat: u64,
    /// Until when it holds, Unix seconds.
    pub exp: u64,
    /// Its unique id: a receiver drops a notification whose `jti` it has seen (a replay).
    pub jti: String,
    /// The task the notification is about.
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// The SHA-256 of the body, lowercase hex.
    pub request_body_sha256: String,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: String,
}

/// Check `jwt` for `body` against `keys` and `expect`: the claims if it holds; otherwise
/// an [`ErrorKind::Unauthenticated`] error saying why.
pub fn verify(jwt: &str, body: &[u8], keys: &Keys, expect: &Expect) -> Result<Claims> {
    let jwt = jwt.strip_prefix("Bearer ").unwrap_or(jwt).trim();
    let mut parts = jwt.split('.');
    let (Some(header), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(refused("not a compact JWT".into()));
    };
    let header: Header = decode(header, "header")?;
    if header.alg != "EdDSA" {
        return Err(refused(format!("algorithm {} (only EdDSA)", header.alg)));
    }
    let key = keys
        .find(&header.kid)
        .ok_or_else(|| refused(format!("unknown key id {}", header.kid)))?;
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| refused("the signature is not base64url".into()))?;
    let input = &jwt[..jwt.len() - jwt.rsplit('.').next().map_or(0, str::len) - 1];
    if !key.verify(input.as_bytes(), &signature) {
        return Err(refused("the signature does not verify".into()));
    }
    let claims: Claims = decode(claims, "claims")?;
    if claims.aud != expect.audience {
        return Err(refused(format!(
            "for {}, not {}",
            claims.aud, expect.audience
        )));
    }
    if let Some(issuer) = &expect.issuer
        && claims.iss != *issuer
    {
        return Err(refused(format!("issued by {}, not {issuer}", claims.iss)));
    }
    let now = expect
        .now
        .unwrap_or_else(|| crate::retention::now_ms() / 1000);
    let leeway = expect.leeway.as_secs();
    if claims.exp.saturating_add(leeway) < now {
        return Err(refused("expired".into()));
    }
    if claims.iat > now.saturating_add(leeway) {
        return Err(refused("issued in the future".into()));
    }
    if claims.request_body_sha256 != body_sha256(body) {
        return Err(refused("the body is not the one signed".into()));
    }
    Ok(claims)
}

fn decode<T: serde::de::DeserializeOwned>(part: &str, what: &str) -> Result<T> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| refused(format!("the {what} is not base64url")))?;
    serde_json::from_slice(&bytes).map_err(|e| refused(format!("the {what} does not parse: {e}")))
}

fn refused(why: String) -> Error {
    Error::new(
        ErrorKind::Unauthenticated,
        format!("the notification's signature is refused: {why}"),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::push::sign::NotificationSigner;
    use crate::security::SigningKey;

    const URL: &str = "https://receiver.example/hook";

    fn signer() -> NotificationSigner {
        NotificationSigner::new(SigningKey::from_seed([7; 32]), "agent-a")
    }

    #[test]
    fn a_signed_notification_verifies_and_every_tampering_is_refused() {
        let signer = signer();
        let keys = Keys::from_jwks(&signer.jwks().to_string()).unwrap();
        let body = br#"{"statusUpdate":{"taskId":"t"}}"#;
        let jwt = signer.sign(URL, "t", body).unwrap();
        let claims = verify(
            &jwt,
            body,
            &keys,
            &Expect::new(URL).issuer("agent-a".into()),
        )
        .unwrap();
        assert_eq!((claims.task_id.as_str(), claims.aud.as_str()), ("t", URL));
        assert!(claims.exp - claims.iat == super::super::sign::JWT_LIFETIME.as_secs());
        assert!(verify(&format!("Bearer {jwt}"), body, &keys, &Expect::new(URL)).is_ok());
        let refusals = [
            verify(&jwt, b"{}", &keys, &Expect::new(URL)),
            verify(
                &jwt,
                body,
                &keys,
                &Expect::new("https://other.example/hook"),
            ),
            verify(
                &jwt,
                body,
                &keys,
                &Expect::new(URL).issuer("agent-b".into()),
            ),
            verify(&jwt, body, &keys, &Expect::new(URL).now(claims.exp + 61)),
            verify(&jwt, body, &keys, &Expect::new(URL).now(claims.iat - 61)),
            verify(&jwt, body, &Keys::default(), &Expect::new(URL)),
            verify(&format!("{jwt}x"), body, &keys, &Expect::new(URL)),
            verify("a.b", body, &keys, &Expect::new(URL)),
        ];
        for (n, refusal) in refusals.into_iter().enumerate() {
            assert_eq!(
                refusal.unwrap_err().kind(),
                ErrorKind::Unauthenticated,
                "case {n}"
            );
        }
        // Another key under the same id does not verify.
        let forged = NotificationSigner::new(
            SigningKey::from_seed([8; 32]).with_kid(keys.0[0].kid().to_owned()),
            "agent-a",
        )
        .sign(URL, "t", body)
        .unwrap();
        assert!(verify(&forged, body, &keys, &Expect::new(URL)).is_err());
    }
}
