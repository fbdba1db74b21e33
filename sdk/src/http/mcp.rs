//! The MCP route (default `POST /mcp`): Streamable HTTP over an [`McpBridge`].
//!
//! [`router`] gives a router with the route alone, for [`Router::merge`] beside the A2A
//! [`router`](super::router) in one process (`agentlog serve --tools`). What it checks before
//! the bridge sees a request, in order:
//!
//! | check | refusal |
//! | --- | --- |
//! | `Host` is one of [`McpHttpConfig::allowed_hosts`] (port aside; loopback by default: DNS rebinding) | `403` |
//! | `Origin`, when sent, is one of [`McpHttpConfig::allowed_origins`] (loopback by default) | `403` |
//! | the method is POST (GET and DELETE: no standalone stream, no sessions) | `405`, `Allow: POST` |
//! | `Content-Type` is `application/json` | `415` |
//! | `Accept` takes `application/json` (or `*/*`; none sent counts as taking it) | `406` |
//! | the body is at most [`McpHttpConfig::body_limit_bytes`] | `413` |
//!
//! Each refusal carries a JSON-RPC error body (`id: null`, -32600). With
//! [`McpHttpConfig::auth`] the route is then an OAuth 2.1 resource server
//! ([`mcp_auth`](super::mcp_auth): a bearer token and the method's scope, `401`/`403` with
//! `resource_metadata`, the metadata at its well-known path); without it every caller is
//! anonymous. The bridge then answers:
//! JSON with the status of `McpReply::Json`, `202` with no body for a notification, or
//! `text/event-stream` (`X-Accel-Buffering: no`, a keep-alive comment every 15 s) of
//! `data:` frames, one JSON-RPC message each, for a call with a progress token from a client
//! that accepts a stream. `Mcp-Session-Id` and `Last-Event-ID` are ignored: no sessions, no
//! resumption. `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` headers
//! are handed to the bridge (a `=?base64?…?=` value decoded first), which checks them against
//! the body.

use std::convert::Infallible;

use agentlog_wire::ErrorCode;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT, CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response, sse::Event};
use axum::routing::any;
use futures::StreamExt;

use super::errors::{json, method_not_allowed, rpc_refusal};
pub use super::mcp_auth::McpAuth;
use super::rpc::{read_body, sse, utf8};
use crate::agent::Caller;
use crate::mcp::{McpBridge, McpHeaders, McpReply, McpRequest};

/// How the MCP route behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpHttpConfig {
    /// The route. Default `/mcp`; must start with `/` and hold no `{`, `}` or `*` (it is an
    /// axum path).
    pub path: String,
    /// Host names (without port) the route answers; `*` answers any (behind a proxy that
    /// checks it). Default: `localhost`, `127.0.0.1`, `::1`.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`, or `scheme://host` for any port) a browser may call
    /// from; `*` allows any. Default: http and https on `localhost`, `127.0.0.1`, `[::1]`.
    pub allowed_origins: Vec<String>,
    /// The largest body accepted. Default 1 MiB.
    pub body_limit_bytes: usize,
    /// Edge auth: every request needs a bearer token (module docs). Default `None`: every
    /// caller is anonymous, so serve beyond loopback only with it.
    pub auth: Option<McpAuth>,
}

impl Default for McpHttpConfig {
    fn default() -> Self {
        let hosts = ["localhost", "127.0.0.1", "[::1]"];
        Self {
            path: "/mcp".to_owned(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: hosts
                .iter()
                .flat_map(|h| [format!("http://{h}"), format!("https://{h}")])
                .collect(),
            body_limit_bytes: 1024 * 1024,
            auth: None,
        }
    }
}

impl McpHttpConfig {
    /// The defaults, also answering the host of `base`, the URL clients name the server by
    /// (`serve --public-url`, or the bound address): what `agentlog serve` and the bindings'
    /// `serve` use.
    pub fn for_base_url(base: &url::Url) -> Self {
        let mut config = Self::default();
        if let Some(host) = base.host_str() {
            // `host_str` gives an IPv6 host in brackets; the Host check compares bare names.
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if !config
                .allowed_hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host))
            {
                config.allowed_hosts.push(host.to_owned());
            }
        }
        config
    }

    /// Where this route answers on a server clients reach at `base`.
    pub fn url(&self, base: &url::Url) -> String {
        base.join(self.path.trim_start_matches('/'))
            .map_or_else(|_| self.path.clone(), |u| u.to_string())
    }
}

/// `app` with the MCP route of `mcp` merged in, configured for a server clients reach at
/// `base` ([`McpHttpConfig::for_base_url`]), and the route's URL: what the bindings' `serve`
/// mounts.
pub fn mount(app: Router, mcp: McpBridge, base: &url::Url) -> crate::Result<(Router, String)> {
    let config = McpHttpConfig::for_base_url(base);
    let url = config.url(base);
    Ok((app.merge(router(mcp, config)?), url))
}

#[derive(Debug, Clone)]
struct McpState {
    mcp: McpBridge,
    config: std::sync::Arc<McpHttpConfig>,
}

/// The router serving `mcp` on [`McpHttpConfig::path`] (any method; see the module docs).
/// A path that is not a plain absolute path is a config error.
pub fn router(mcp: McpBridge, config: McpHttpConfig) -> crate::Result<Router> {
    if !config.path.starts_with('/') || config.path.contains(['{', '}', '*']) {
        return Err(crate::Error::new(
            crate::ErrorKind::Config,
            format!(
                "the MCP path must be a plain absolute path, not {:?}",
                config.path
            ),
        ));
    }
    let path = config.path.clone();
    let metadata = config.auth.as_ref().map(McpAuth::metadata_router);
    let state = McpState {
        mcp,
        config: std::sync::Arc::new(config),
    };
    let router = Router::new().route(&path, any(handle)).with_state(state);
    Ok(match metadata {
        Some(metadata) => router.merge(metadata),
        None => router,
    })
}

async fn handle(State(state): State<McpState>, request: Request) -> Response {
    let config = &state.config;
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    if !host_allowed(headers, &config.allowed_hosts) {
        return refusal(
            StatusCode::FORBIDDEN,
            "Forbidden: the Host header is not allowed",
        );
    }
    if !origin_allowed(headers, &config.allowed_origins) {
        return refusal(
            StatusCode::FORBIDDEN,
            "Forbidden: the Origin is not allowed",
        );
    }
    if parts.method != Method::POST {
        return method_not_allowed(parts.method.as_str(), parts.uri.path(), "POST");
    }
    if !is_json(headers) {
        return rpc_refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::InvalidRequest,
            "Unsupported Media Type: Content-Type must be application/json".into(),
        );
    }
    let (takes_json, takes_stream) = accepts(headers);
    if !takes_json {
        return rpc_refusal(
            StatusCode::NOT_ACCEPTABLE,
            ErrorCode::InvalidRequest,
            "Not Acceptable: Accept must include application/json".into(),
        );
    }
    let bytes = match read_body(headers, body, config.body_limit_bytes).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let caller = match &config.auth {
        Some(auth) => match auth.admit(&parts, &bytes).await {
            Ok(caller) => caller,
            Err(refusal) => return refusal,
        },
        None => Caller::anonymous(),
    };
    let request = McpRequest {
        body: &bytes,
        caller,
        headers: Some(mcp_headers(headers)),
        accepts_stream: takes_stream,
    };
    match state.mcp.handle(request).await {
        McpReply::Json { status, body } => json(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            body,
        ),
        McpReply::Accepted => StatusCode::ACCEPTED.into_response(),
        McpReply::Stream(messages) => {
            sse(messages.map(|m| Ok::<_, Infallible>(Event::default().data(utf8(m)))))
        }
    }
}

fn refusal(status: StatusCode, message: &str) -> Response {
    rpc_refusal(status, ErrorCode::InvalidRequest, message.to_owned())
}

/// The MCP headers of a request (`McpHeaders::from_pairs`: a `=?base64?…?=` value decoded).
fn mcp_headers(headers: &HeaderMap) -> McpHeaders {
    // An `Mcp-Param-*` value with bytes beyond visible ASCII must still be seen, so that it
    // fails the check (the spec: reject such a header) instead of counting as not sent; its
    // lossy text holds a non-ASCII character, which `McpHeaders` refuses.
    let lossy: Vec<(&str, String)> = headers
        .iter()
        .filter(|(name, value)| name.as_str().starts_with("mcp-param-") && value.to_str().is_err())
        .map(|(name, value)| {
            (
                name.as_str(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    McpHeaders::from_pairs(
        headers
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
            .chain(lossy.iter().map(|(name, value)| (*name, value.as_str()))),
    )
}

fn host_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    if allowed.iter().any(|h| h == "*") {
        return true;
    }
    let Some(host) = headers.get(HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        // [::1]:8080
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    allowed.iter().any(|h| h.eq_ignore_ascii_case(name))
}

fn origin_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    let Some(origin) = headers.get(ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    allowed.iter().any(|a| {
        a == "*"
            || a.eq_ignore_ascii_case(origin)
            || origin
                .rsplit_once(':')
                .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
                .is_some_and(|(base, _)| a.eq_ignore_ascii_case(base))
    })
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// Whether `Accept` takes JSON, and an event stream (no header: JSON only).
fn accepts(headers: &HeaderMap) -> (bool, bool) {
    let Some(accept) = headers.get(ACCEPT).and_then(|v| v.to_str().ok()) else {
        return (true, false);
    };
    let types: Vec<String> = accept
        .split(',')
        .map(|t| {
            t.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    let any = types.iter().any(|t| t == "*/*");
    let json = any
        || types
            .iter()
            .any(|t| t == "application/json" || t == "application/*");
    let stream = any
        || types
            .iter()
            .any(|t| t == "text/event-stream" || t == "text/*");
    (json, stream)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn hosts_and_origins_are_loopback_by_default() {
        let config = McpHttpConfig::default();
        for host in ["localhost:8080", "127.0.0.1", "[::1]:3000", "LOCALHOST"] {
            assert!(
                host_allowed(&headers(&[("host", host)]), &config.allowed_hosts),
                "{host}"
            );
        }
        for host in ["evil.example.com", "evil.example.com:80", "127.0.0.2"] {
            assert!(
                !host_allowed(&headers(&[("host", host)]), &config.allowed_hosts),
                "{host}"
            );
        }
        assert!(!host_allowed(&HeaderMap::new(), &config.allowed_hosts));
        assert!(host_allowed(&HeaderMap::new(), &["*".into()]));
        assert!(origin_allowed(&HeaderMap::new(), &config.allowed_origins));
        for origin in [
            "http://localhost:5173",
            "https://127.0.0.1",
            "http://[::1]:1",
        ] {
            assert!(
                origin_allowed(&headers(&[("origin", origin)]), &config.allowed_origins),
                "{origin}"
            );
        }
        for origin in [
            "http://evil.example.com",
            "http://localhost.evil.com",
            "null",
        ] {
            assert!(
                !origin_allowed(&headers(&[("origin", origin)]), &config.allowed_origins),
                "{origin}"
            );
        }
    }

    #[test]
    fn mcp_headers_are_read_and_base64_values_decoded() {
        let map = headers(&[
            ("mcp-name", "=?base64?w6ljaG8=?="),
            ("mcp-method", "tools/call"),
        ]);
        let read = mcp_headers(&map);
        assert_eq!(read.name.as_deref(), Some("écho"));
        assert_eq!(read.method.as_deref(), Some("tools/call"));
        assert_eq!(read.protocol_version, None);
        // Any case, trimmed; an undecodable value counts as not sent.
        let read = McpHeaders::from_pairs([
            ("MCP-Protocol-Version", " 2026-07-28 "),
            ("Mcp-Name", "=?base64?//8=?="),
            ("content-type", "application/json"),
        ]);
        assert_eq!(read.protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!((read.name, read.method), (None, None));
        assert_eq!(
            accepts(&headers(&[(
                "accept",
                "application/json, text/event-stream"
            )])),
            (true, true)
        );
        assert_eq!(
            accepts(&headers(&[("accept", "text/event-stream")])),
            (false, true)
        );
        assert_eq!(accepts(&headers(&[("accept", "*/*")])), (true, true));
        assert_eq!(accepts(&HeaderMap::new()), (true, false));
    }

    #[test]
    fn the_base_url_host_is_answered_besides_loopback() {
        let url = |u: &str| url::Url::parse(u).unwrap();
        let config = McpHttpConfig::for_base_url(&url("https://agents.example.com/a/"));
        assert!(host_allowed(
            &headers(&[("host", "agents.example.com:443")]),
            &config.allowed_hosts
        ));
        assert!(host_allowed(
            &headers(&[("host", "localhost")]),
            &config.allowed_hosts
        ));
        assert!(!host_allowed(
            &headers(&[("host", "evil.example.com")]),
            &config.allowed_hosts
        ));
        let v6 = McpHttpConfig::for_base_url(&url("http://[fd00::2]:8080/"));
        assert!(host_allowed(
            &headers(&[("host", "[fd00::2]:8080")]),
            &v6.allowed_hosts
        ));
        assert_eq!(
            McpHttpConfig::for_base_url(&url("http://127.0.0.1:9/")),
            McpHttpConfig::default()
        );
    }
}
