//! Edge authentication: who is calling, checked on every JSON-RPC request before the bridge
//! sees it.
//!
//! An [`Authenticator`] turns a request's headers into an [`Identity`] (the caller and the
//! scopes its credentials grant) or a [`Refusal`]. Two ship: [`JwtAuthenticator`] (bearer
//! JWTs: issuers, audience, an algorithm allow-list, keys from PEM or JWK files or a JWKS URL,
//! clock leeway, a tenant claim) and [`ApiKeys`] (the example of a host's own scheme). A Rust
//! host plugs in its own by implementing the trait and setting [`EdgeAuth`] on
//! [`HttpConfig::auth`](super::HttpConfig::auth).
//!
//! # What the router does with it
//!
//! - Credentials come from headers only. A token in the query string (`?access_token=`) is
//!   refused, whatever else the request holds: URLs end up in logs.
//! - No credentials, or bad ones: `401` with `WWW-Authenticate: Bearer realm="agentlog"` (plus
//!   `error="invalid_token"` and a description when a token was given but is bad) and a
//!   JSON-RPC error body (-31401) that echoes the request's id.
//! - Valid credentials without the method's scope: `403` with `WWW-Authenticate: Bearer
//!   error="insufficient_scope", scope="<needed>"` (so a client can step up) and -31403.
//! - The identity's [`Caller`] is the owner of what the request creates and the only one who
//!   sees it: another principal or tenant gets task-not-found, exactly as for a task that does
//!   not exist (the view checks the owner; see the a2a-bridge skill).
//! - The public agent card, `/healthz`, `/readyz` and `/metrics` need no credentials;
//!   `GetExtendedAgentCard` is a JSON-RPC method like the others and does.
//!
//! The scopes each method needs are [`MethodScopes`]: by default `tasks:send` for sending,
//! `tasks:read` for reading (GetTask, ListTasks, SubscribeToTask, the extended card, reading
//! push configs) and `tasks:cancel` for canceling; an empty scope needs none.

mod api_key;
pub(crate) mod gate;
mod jwt;
mod key_set;
#[cfg(test)]
mod tests;

pub use api_key::ApiKeys;
pub use jwt::{DEFAULT_ALGORITHMS, JwtAuthenticator, JwtConfig};

// The plug-in trait and what it works with are the transports' shared leaf (`crate::edge`):
// the gRPC binding authenticates through the same ones.
pub use crate::edge::{
    Authenticator, EdgeAuth, Identity, MAX_TOKEN_BYTES, MethodScopes, Refusal, bearer_token,
};

/// Whether a request's query string carries a token (`access_token`, RFC 6750 §2.3), which
/// the router refuses.
pub(super) fn token_in_query(query: Option<&str>) -> bool {
    query.is_some_and(|query| {
        url::form_urlencoded::parse(query.as_bytes()).any(|(key, _)| key == "access_token")
    })
}

/// The `WWW-Authenticate` value for `refusal` (401) or for a missing `scope` (403).
pub(super) fn challenge(auth: &EdgeAuth, refusal: Option<&Refusal>, scope: Option<&str>) -> String {
    let scheme = auth.authenticator.challenge_scheme();
    let realm = quoted(&auth.realm);
    let mut value = format!("{scheme} realm={realm}");
    match (refusal, scope) {
        (_, Some(scope)) => {
            value.push_str(&format!(
                ", error=\"insufficient_scope\", scope={}",
                quoted(scope)
            ));
        }
        (Some(Refusal::Missing | Refusal::Unavailable(_)) | None, None) => {}
        (Some(refusal @ Refusal::Malformed(_)), None) => {
            value.push_str(&format!(
                ", error=\"invalid_request\", error_description={}",
                quoted(refusal.description())
            ));
        }
        (Some(refusal @ Refusal::Invalid(_)), None) => {
            value.push_str(&format!(
                ", error=\"invalid_token\", error_description={}",
                quoted(refusal.description())
            ));
        }
    }
    value
}

/// An RFC 9110 quoted-string of `text`, keeping to visible ASCII.
pub(super) fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('?'),
        }
    }
    out.push('"');
    out
}
