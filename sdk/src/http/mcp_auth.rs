//! The MCP route as an OAuth 2.1 resource server (MCP authorization; RFC 9728, RFC 6750):
//! with [`McpAuth`] configured, every request needs a bearer token the route's
//! [`EdgeAuth`] accepts, and the route serves its protected resource metadata.
//!
//! | request | answer |
//! | --- | --- |
//! | no token | `401`, `WWW-Authenticate: Bearer resource_metadata="<metadata URL>", scope="<needed>"` |
//! | a bad or expired token (its audience, issuer, signature, expiry) | `401`, the same with `error="invalid_token"` |
//! | a malformed `Authorization`, or a token in the query string | `400`, `error="invalid_request"` |
//! | a good token without the method's scope | `403`, `error="insufficient_scope", scope="<needed>"` |
//! | the keys cannot be fetched now | `503`, `Retry-After: 1` |
//! | `GET /.well-known/oauth-protected-resource[<path>]` | the metadata: `resource`, `authorization_servers`, `scopes_supported`, `bearer_methods_supported` |
//!
//! Scopes per method ([`MethodScopes`]): `tools/call` and `tasks/update` need `send`,
//! `tasks/get`, `tasks/result`, `tasks/list`, `resources/list` and `resources/read` need
//! `read` (they show the caller's tasks), `tasks/cancel` needs `cancel`; discovery
//! (`server/discover`, `initialize`, `ping`, `tools/list`, the templates, prompts and
//! completions, all from configuration) and notifications need a good token only. The
//! audience is checked by the authenticator (`--jwt-audience`: name the route's URL there for
//! clients that ask for tokens for it, RFC 8707). The caller's identity, never the token, is
//! what reaches the bridge and the records.

use agentlog_wire::{ErrorCode, RpcError};
use axum::Router;
use axum::http::header::{RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::get;
use serde_json::json;

use super::auth::{EdgeAuth, MethodScopes, Refusal, challenge, quoted, token_in_query};
use super::errors::{json, rpc_error_refusal};
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};

/// Edge auth on the MCP route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpAuth {
    /// Who may call, and the scopes each kind of method needs.
    pub edge: EdgeAuth,
    /// The route's canonical URL (`https://host/mcp`): the `resource` of its metadata, and
    /// where the metadata URL is derived from (RFC 9728 §3.1).
    pub resource: url::Url,
}

impl McpAuth {
    /// `edge` for the route at `resource`. A resource URL with a query or fragment is a
    /// config error (RFC 9728 §2).
    pub fn new(edge: EdgeAuth, resource: url::Url) -> Result<Self> {
        if resource.query().is_some() || resource.fragment().is_some() {
            return Err(Error::new(
                ErrorKind::Config,
                format!("the MCP resource URL {resource} must have no query or fragment"),
            ));
        }
        Ok(Self { edge, resource })
    }

    /// The well-known path of the metadata: `/.well-known/oauth-protected-resource`
    /// followed by the resource's path (none for a resource at `/`).
    pub fn metadata_path(&self) -> String {
        let path = self.resource.path().trim_end_matches('/');
        format!("/.well-known/oauth-protected-resource{path}")
    }

    /// The metadata's URL, named in every challenge.
    pub fn metadata_url(&self) -> String {
        let mut url = self.resource.clone();
        url.set_path(&self.metadata_path());
        url.to_string()
    }

    /// The protected resource metadata (RFC 9728 §2).
    fn metadata(&self) -> serde_json::Value {
        json!({
            "resource": self.resource.as_str(),
            "authorization_servers": self.edge.authenticator.authorization_servers(),
            "scopes_supported": self.edge.scopes.all(),
            "bearer_methods_supported": ["header"],
        })
    }

    /// The metadata routes: the resource's well-known path and, for clients that look
    /// at the root first, `/.well-known/oauth-protected-resource` itself.
    pub(super) fn metadata_router(&self) -> Router {
        let metadata = bytes::Bytes::from(self.metadata().to_string());
        let serve = move || {
            let metadata = metadata.clone();
            async move { json(StatusCode::OK, metadata.to_vec()) }
        };
        let mut router = Router::new().route(&self.metadata_path(), get(serve.clone()));
        if self.metadata_path() != "/.well-known/oauth-protected-resource" {
            router = router.route("/.well-known/oauth-protected-resource", get(serve));
        }
        router
    }

    /// The caller of a request, or the response refusing it. `body` is read for its
    /// method only, to know the scope it needs.
    #[allow(clippy::result_large_err)] // the error is the response to send
    pub(super) async fn admit(&self, parts: &Parts, body: &[u8]) -> Result<Caller, Response> {
        let scope = needed_scope(&self.edge.scopes, body);
        if token_in_query(parts.uri.query()) {
            return Err(self.refuse(
                &Refusal::Malformed(
                    "a token in the query string is refused: send it as `Authorization: Bearer <token>`"
                        .to_owned(),
                ),
                scope,
            ));
        }
        let identity = self
            .edge
            .authenticator
            .authenticate(&parts.headers)
            .await
            .map_err(|refusal| self.refuse(&refusal, scope))?;
        match scope {
            Some(scope) if !identity.has_scope(scope) => Err(self.insufficient_scope(scope)),
            _ => Ok(identity.caller),
        }
    }

    /// 401 (400 for malformed credentials, 503 when they cannot be checked now).
    fn refuse(&self, refusal: &Refusal, scope: Option<&str>) -> Response {
        let (status, error) = match refusal {
            Refusal::Missing => (StatusCode::UNAUTHORIZED, None),
            Refusal::Malformed(_) => (StatusCode::BAD_REQUEST, Some("invalid_request")),
            Refusal::Invalid(_) => (StatusCode::UNAUTHORIZED, Some("invalid_token")),
            Refusal::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, None),
        };
        let mut rpc = RpcError::with_message(ErrorCode::InvalidRequest, refusal.description());
        if let Some(error) = error {
            rpc = rpc.with_meta("error", error);
        }
        let mut response = rpc_error_refusal(status, &rpc);
        if matches!(refusal, Refusal::Unavailable(_)) {
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            return response;
        }
        // The scope a token needs here: the method's, else every scope the route knows
        // (what a client asks its authorization server for).
        let wanted = scope.map_or_else(|| self.edge.scopes.all().join(" "), str::to_owned);
        let mut value = challenge(&self.edge, Some(refusal), None);
        value.push_str(&format!(
            ", resource_metadata={}",
            quoted(&self.metadata_url())
        ));
        if !wanted.is_empty() {
            value.push_str(&format!(", scope={}", quoted(&wanted)));
        }
        self.with_challenge(response, &value)
    }

    /// 403: the token is good but lacks `scope`.
    fn insufficient_scope(&self, scope: &str) -> Response {
        let rpc = RpcError::with_message(
            ErrorCode::InvalidRequest,
            format!("this method needs the scope {scope:?}, which the token does not grant"),
        )
        .with_meta("error", "insufficient_scope")
        .with_meta("scope", scope);
        let response = rpc_error_refusal(StatusCode::FORBIDDEN, &rpc);
        let mut value = challenge(&self.edge, None, Some(scope));
        value.push_str(&format!(
            ", resource_metadata={}",
            quoted(&self.metadata_url())
        ));
        self.with_challenge(response, &value)
    }

    fn with_challenge(&self, mut response: Response, value: &str) -> Response {
        if let Ok(value) = HeaderValue::from_str(value) {
            response.headers_mut().insert(WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// The scope the request's method needs: `None` for discovery, notifications, and a body
/// that does not parse (the bridge answers that one, to an authenticated caller).
fn needed_scope<'a>(scopes: &'a MethodScopes, body: &[u8]) -> Option<&'a str> {
    #[derive(serde::Deserialize)]
    struct Method<'b> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'b, str>>,
    }
    let method = serde_json::from_slice::<Method<'_>>(body).ok()?.method?;
    let scope = match &*method {
        "tools/call" | "tasks/update" => &scopes.send,
        // A resource read or listing shows the caller's tasks.
        "tasks/get"
        | "tasks/result"
        | "tasks/list"
        | "resources/list"
        | "resources/read"
        | "resources/subscribe"
        | "resources/unsubscribe" => &scopes.read,
        "tasks/cancel" => &scopes.cancel,
        _ => return None,
    };
    (!scope.is_empty()).then_some(scope.as_str())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn each_method_needs_its_scope_and_discovery_none() {
        let scopes = MethodScopes::default();
        let body = |method: &str| json!({"jsonrpc": "2.0", "id": 1, "method": method}).to_string();
        for (method, scope) in [
            ("tools/call", Some("tasks:send")),
            ("tasks/update", Some("tasks:send")),
            ("tasks/get", Some("tasks:read")),
            ("tasks/result", Some("tasks:read")),
            ("tasks/list", Some("tasks:read")),
            ("resources/list", Some("tasks:read")),
            ("resources/read", Some("tasks:read")),
            ("prompts/get", None),
            ("completion/complete", None),
            ("tasks/cancel", Some("tasks:cancel")),
            ("tools/list", None),
            ("initialize", None),
            ("server/discover", None),
            ("notifications/initialized", None),
        ] {
            assert_eq!(
                needed_scope(&scopes, body(method).as_bytes()),
                scope,
                "{method}"
            );
        }
        assert_eq!(needed_scope(&scopes, b"not json"), None);
        let none = MethodScopes {
            send: String::new(),
            ..MethodScopes::default()
        };
        assert_eq!(needed_scope(&none, body("tools/call").as_bytes()), None);
    }
}
