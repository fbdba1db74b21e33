//! `verifyNotification`: a webhook receiver's check of a push notification an agent signed
//! (`agentlog::push::verify`).

use agentlog::push::verify::{Expect, Keys, verify};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;
use serde_json::Value;

use crate::error::to_napi;

/// What a notification must say besides its signature.
#[napi(object)]
pub struct NotificationExpect {
    /// The URL the receiver registered: the JWT's `aud`.
    pub audience: String,
    /// The agent: the JWT's `iss`, when given.
    pub issuer: Option<String>,
    /// The time to judge `iat` and `exp` by, Unix seconds; now by default.
    pub now: Option<i64>,
}

/// A verified notification's claims.
#[napi(object)]
pub struct NotificationClaims {
    /// The agent.
    pub iss: String,
    /// The receiver's URL.
    pub aud: String,
    /// When the JWT was made, Unix seconds.
    pub iat: i64,
    /// Until when it holds, Unix seconds.
    pub exp: i64,
    /// Its unique id: drop a notification whose `jti` was seen before.
    pub jti: String,
    /// The task the notification is about.
    pub task_id: String,
    /// The SHA-256 of the body, lowercase hex.
    pub request_body_sha256: String,
}

/// The claims of a notification's JWT (the `agentlog-notification-signature` header, or the
/// `authorization: Bearer` one) once its signature by one of `jwks`'s keys (the agent's
/// `/.well-known/jwks.json`, as text or parsed), its audience, issuer, times and body hash
/// hold; an `AgentlogError` of kind `unauthenticated` saying why otherwise.
#[napi(
    ts_args_type = "jwt: string, body: Buffer, jwks: string | object, expect: NotificationExpect"
)]
pub fn verify_notification(
    jwt: String,
    body: Buffer,
    jwks: Value,
    expect: NotificationExpect,
) -> napi::Result<NotificationClaims> {
    let jwks = match jwks {
        Value::String(text) => text,
        other => other.to_string(),
    };
    let keys = Keys::from_jwks(&jwks).map_err(to_napi)?;
    let mut checks = Expect::new(expect.audience);
    checks.issuer = expect.issuer;
    checks.now = expect.now.and_then(|n| u64::try_from(n).ok());
    let claims = verify(&jwt, &body, &keys, &checks).map_err(to_napi)?;
    let secs = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    Ok(NotificationClaims {
        iss: claims.iss,
        aud: claims.aud,
        iat: secs(claims.iat),
        exp: secs(claims.exp),
        jti: claims.jti,
        task_id: claims.task_id,
        request_body_sha256: claims.request_body_sha256,
    })
}
