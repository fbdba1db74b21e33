//! The MCP route (default `POST /mcp`): Streamable HTTP over an [`McpBridge`].
//!
//! [`router`] gives a router with the route alone, for [`Router::merge`] beside the A2A
//! [`router`](super::router) in one process (`agentlog serve --tools`). What it checks before
//! the bridge sees a request, in order:
//!
//! | check | refusal |
//! | --- | --- |
//! | one well-formed `Host` (an absolute-form target's authority instead) | `400` |
//! | the host is one of [`McpHttpConfig::allowed`]'s hosts (port aside; loopback by default: DNS rebinding) | `403` |
//! | `Origin`, when sent, is one of its origins (loopback by default); a CORS preflight from one is answered `204` | `403` |
//! | the method is POST; GET and DELETE only with `Mcp-Session-Id` (below) | `405`, `Allow: POST` |
//! | `Content-Type` is `application/json` | `415` |
//! | `Accept` takes `application/json` (or `*/*`; none sent counts as taking it) | `406` |
//! | `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` hold visible ASCII only | `400` |
//! | the body is at most [`McpHttpConfig::body_limit_bytes`], and arrives within [`McpHttpConfig::body_timeout`] | `413`, `408` |
//!
//! Each refusal carries a JSON-RPC error body (`id: null`, -32600), and is sent once the
//! request's body is read (or with `Connection: close`), so the connection stays usable. With
//! [`McpHttpConfig::auth`] the route is then an OAuth 2.1 resource server
//! ([`mcp_auth`](super::mcp_auth): a bearer token and the method's scope, `401`/`403` with
//! `resource_metadata`, the metadata at its well-known path); without it every caller is
//! anonymous. The bridge then answers:
//! JSON with the status of `McpReply::Json`, `202` with no body for a notification, or
//! `text/event-stream` (`X-Accel-Buffering: no`, a keep-alive comment every 15 s) of
//! `data:` frames, one JSON-RPC message each, for a call with a progress token from a client
//! that accepts a stream. Sessions serve the legacy era's resource subscriptions only
//! (`crate::mcp`'s `sessions` module): a legacy `initialize` answered 200 carries a minted
//! `Mcp-Session-Id`; `GET` with one (and `Accept: text/event-stream`, else `406`) is the
//! session's stream of `notifications/resources/updated`, `DELETE` with one ends the session
//! (`200`; then any request naming it is `404`). Any replica serves each. Other requests never
//! need the header, and `Last-Event-ID` is ignored: no resumption. `MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` headers are handed to the bridge (a `=?base64?…?=` value decoded first), which checks them against
//! the body.
//!
//! With [`McpHttpConfig::forward`] (bridges sharing the agents' partitions), the tool agents'
//! views hold this member's share of the map ([`McpBridge::follow_owners`]), a request about a
//! task whose partition this bridge does not hold goes to the partition's owner once the
//! caller is known, and the owner's answer is the reply; `tasks/list` and `resources/list`
//! merge every owner's page (`http::forward`'s MCP module docs).

use std::convert::Infallible;

use agentlog_wire::ErrorCode;
use axum::Router;
use axum::extract::{Request, State};
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response, sse::Event};
use axum::routing::any;
use futures::StreamExt;

use super::body::{read_body_within, refuse_unread};
use super::errors::{json, method_not_allowed, rpc_refusal};
use super::guard::{self, Allowed};
pub use super::mcp_auth::McpAuth;
use super::rpc::{sse, utf8};
use crate::agent::Caller;
use crate::mcp::{ListShare, McpBridge, McpHeaders, McpReply, McpRequest};
use crate::telemetry::{Kind, Parent, Span};

/// How the MCP route behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpHttpConfig {
    /// The route. Default `/mcp`; must start with `/` and hold no `{`, `}` or `*` (it is an
    /// axum path).
    pub path: String,
    /// The hosts the route answers and the browser origins it serves (with CORS), against DNS
    /// rebinding ([`Allowed`]). Default: loopback only.
    pub allowed: Allowed,
    /// The largest body accepted. Default 1 MiB.
    pub body_limit_bytes: usize,
    /// How long a request's body may take to arrive once its head has; a slower one gets
    /// `408`. Default 10 s.
    pub body_timeout: Duration,
    /// Edge auth: every request needs a bearer token (module docs). Default `None`: every
    /// caller is anonymous, so serve beyond loopback only with it.
    pub auth: Option<McpAuth>,
    /// Forwarding between bridges sharing the agents' partitions (the A2A router's): a
    /// request about a task whose partition this bridge does not hold goes to its owner
    /// (`http::forward`'s MCP module docs). Default `None`: every request is served here.
    pub forward: Option<super::Forwarding>,
}

impl McpHttpConfig {
    /// The defaults (each field says its own).
    pub fn new() -> Self {
        Self::default()
    }
}

setters!(McpHttpConfig {
    path: String,
    allowed: Allowed,
    body_limit_bytes: usize,
    body_timeout: Duration,
} optional {
    auth: McpAuth,
    forward: super::Forwarding,
});

impl Default for McpHttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".to_owned(),
            allowed: Allowed::default(),
            body_limit_bytes: 1024 * 1024,
            body_timeout: Duration::from_secs(10),
            auth: None,
            forward: None,
        }
    }
}

impl McpHttpConfig {
    /// The defaults, also answering the host and origin of `base`, the URL clients name the
    /// server by (`serve --public-url`, or the bound address): what `agentlog serve` and the
    /// bindings' `serve` use.
    pub fn for_base_url(base: &url::Url) -> Self {
        Self {
            allowed: Allowed::for_base_url(base),
            ..Self::default()
        }
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
    forward: Option<std::sync::Arc<super::forward::Forwarder>>,
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
    let forward = config
        .forward
        .clone()
        .map(|f| std::sync::Arc::new(super::forward::Forwarder::new(f)));
    // The tool agents' views hold this member's share, as the map has it now and later.
    if let Some(forward) = &config.forward {
        mcp.follow_owners(forward.owners.clone());
    }
    let state = McpState {
        mcp,
        config: std::sync::Arc::new(config),
        forward,
    };
    let router = Router::new().route(&path, any(handle)).with_state(state);
    Ok(match metadata {
        Some(metadata) => router.merge(metadata),
        None => router,
    })
}

async fn handle(State(state): State<McpState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let origin = match state.config.allowed.admit(&parts) {
        Ok(origin) => origin,
        Err(refusal) => return refuse(&state.config, &parts, body, refusal).await,
    };
    if let Some(preflight) = guard::preflight(&parts, origin.as_ref()) {
        return refuse(&state.config, &parts, body, preflight).await;
    }
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut response = match (&parts.method, session) {
        (&Method::GET | &Method::DELETE, Some(session)) => {
            session_request(&state, &parts, body, &session).await
        }
        _ => match checked(&parts) {
            Ok(takes_stream) => answer(&state, parts, body, takes_stream).await,
            Err(refusal) => refuse(&state.config, &parts, body, refusal).await,
        },
    };
    guard::cors(&mut response, origin);
    response
}

/// The transport's checks before the body is read (module docs): whether the client takes
/// a stream, or the refusal.
#[allow(clippy::result_large_err)] // the error is the response to send
fn checked(parts: &Parts) -> Result<bool, Response> {
    let headers = &parts.headers;
    if parts.method != Method::POST {
        return Err(method_not_allowed(
            parts.method.as_str(),
            parts.uri.path(),
            "POST",
        ));
    }
    if !is_json(headers) {
        return Err(rpc_refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::InvalidRequest,
            "Unsupported Media Type: Content-Type must be application/json".into(),
        ));
    }
    let (takes_json, takes_stream) = accepts(headers);
    if !takes_json {
        return Err(rpc_refusal(
            StatusCode::NOT_ACCEPTABLE,
            ErrorCode::InvalidRequest,
            "Not Acceptable: Accept must include application/json".into(),
        ));
    }
    if let Some(name) = malformed_mcp_header(headers) {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            &format!("Bad Request: the {name} header must be visible ASCII"),
        ));
    }
    Ok(takes_stream)
}

/// `refusal`, once the unread body is out of the connection's way.
async fn refuse(config: &McpHttpConfig, parts: &Parts, body: Body, refusal: Response) -> Response {
    let (limit, timeout) = (config.body_limit_bytes, config.body_timeout);
    refuse_unread(&parts.headers, body, refusal, limit, timeout).await
}

/// A checked request: its body read, its caller known, the bridge's answer.
async fn answer(state: &McpState, parts: Parts, body: Body, takes_stream: bool) -> Response {
    let config = &state.config;
    let headers = &parts.headers;
    let read = read_body_within(headers, body, config.body_limit_bytes, config.body_timeout);
    let bytes = match read.await {
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
    let mut share = None;
    if let Some(forwarder) = &state.forward {
        use super::forward::Route;
        match forwarder.route_mcp(&state.mcp, &parts, &bytes).await {
            Route::Piped(response) | Route::Refused(response) => return response,
            Route::Here => {}
            Route::Share(partitions) => share = Some(ListShare::member(partitions)),
            Route::FanOut(plan) => {
                let path = parts.uri.path();
                match plan.fetch(forwarder, headers, path, &bytes).await {
                    Ok(pages) => {
                        let mut partitions = plan.local().to_vec();
                        partitions.extend(&pages.stand_in);
                        share = Some(ListShare {
                            partitions,
                            covered: plan.partitions(),
                            pages: Some(pages.into_bodies()),
                        });
                    }
                    Err(refusal) => return refusal,
                }
            }
        }
    }
    let request = McpRequest {
        body: &bytes,
        caller,
        headers: Some(mcp_headers(headers)),
        accepts_stream: takes_stream,
    };
    if let Some(session) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok())
        && state.mcp.session_ended(&request.caller, session)
    {
        return refusal(
            StatusCode::NOT_FOUND,
            "Not Found: the session was ended; initialize again",
        );
    }
    let session = state.mcp.new_session(&bytes);
    // Under a server span of its own while spans are made: the records the call writes carry
    // it. Its parent is the headers' context, else the body's `params._meta` one (which,
    // without spans, `McpBridge::handle` reads itself).
    let (span, carried) = mcp_span(&bytes, super::trace_of(headers));
    let trace = span.trace_context(carried.as_ref()).or(carried);
    let handled = crate::bridge::trace::traced(trace, state.mcp.handle_in(request, share));
    let reply = span.in_scope(handled).await;
    if let McpReply::Json { status, .. } = &reply {
        span.set("http.response.status_code", *status);
    }
    match reply {
        McpReply::Json { status, body } => {
            let mut response = json(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                body,
            );
            if let Some(session) = session.filter(|_| status == 200)
                && let Ok(value) = HeaderValue::from_str(&session)
            {
                response.headers_mut().insert(SESSION_HEADER, value);
            }
            response
        }
        McpReply::Accepted => StatusCode::ACCEPTED.into_response(),
        McpReply::Stream(messages) => {
            // A listen for the caller's list changes hears other members' too.
            let messages = match &state.forward {
                Some(forwarder) => forwarder.with_list_changes_elsewhere(&parts, &bytes, messages),
                None => messages,
            };
            sse(messages.map(|m| Ok::<_, Infallible>(Event::default().data(utf8(m)))))
        }
    }
}

/// The span of an MCP request (`rpc.method` its JSON-RPC method, read only while spans are
/// made), under the context it came with: `carried` (its headers'), else its `params._meta`
/// one. The span and that parent.
fn mcp_span(
    body: &[u8],
    carried: Option<agentlog_wire::trace::TraceContext>,
) -> (Span, Option<agentlog_wire::trace::TraceContext>) {
    use std::borrow::Cow;
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
        #[serde(borrow)]
        params: Option<&'a serde_json::value::RawValue>,
    }
    if !crate::telemetry::enabled() {
        return (Span::none(), carried);
    }
    let head = serde_json::from_slice::<Head<'_>>(body).ok();
    let carried = carried.or_else(|| {
        let params = serde_json::from_str(head.as_ref()?.params?.get()).ok()?;
        crate::mcp::trace_in_meta(Some(&params))
    });
    let span = Span::start(
        "MCP request",
        Kind::Server,
        Parent::Remote(carried.as_ref()),
    );
    if span.is_some() {
        span.set("rpc.system", "mcp");
        if let Some(method) = head.as_ref().and_then(|h| h.method.as_deref()) {
            span.set("rpc.method", method);
        }
    }
    (span, carried)
}

/// A session stream's `notifications/resources/list_changed`.
const SESSION_LIST_CHANGED: &[u8] =
    br#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{}}"#;

/// The legacy session header.
const SESSION_HEADER: &str = "mcp-session-id";

/// `GET` (the session's stream) or `DELETE` (its end) with `Mcp-Session-Id`, once the caller
/// is known: a subscription's read scope is needed for either.
async fn session_request(state: &McpState, parts: &Parts, body: Body, session: &str) -> Response {
    let config = &state.config;
    if parts.method == Method::GET && !accepts(&parts.headers).1 {
        let refusal = rpc_refusal(
            StatusCode::NOT_ACCEPTABLE,
            ErrorCode::InvalidRequest,
            "Not Acceptable: a session's stream needs Accept: text/event-stream".into(),
        );
        return refuse(config, parts, body, refusal).await;
    }
    // No body is read: what one would carry is refused unread, as every refusal here.
    let caller = match &config.auth {
        Some(auth) => match auth
            .admit(parts, br#"{"method":"resources/subscribe"}"#)
            .await
        {
            Ok(caller) => caller,
            Err(refusal) => return refuse(config, parts, body, refusal).await,
        },
        None => Caller::anonymous(),
    };
    drop(body);
    let answer = if parts.method == Method::GET {
        match state.mcp.session_stream(&caller, session).await {
            Ok(messages) => {
                let messages: crate::mcp::McpStream = match &state.forward {
                    // The session's `resources/list_changed` come from other members too.
                    Some(forwarder) => {
                        let elsewhere = forwarder
                            .list_changes_elsewhere(parts, parts.uri.path())
                            .map(|()| SESSION_LIST_CHANGED.to_vec());
                        super::forward::until_ends(messages, elsewhere)
                    }
                    None => messages,
                };
                Ok(sse(messages.map(|m| {
                    Ok::<_, Infallible>(Event::default().data(utf8(m)))
                })))
            }
            Err(error) => Err(error),
        }
    } else {
        state
            .mcp
            .end_session(&caller, session)
            .await
            .map(|()| StatusCode::OK.into_response())
    };
    answer.unwrap_or_else(|error| {
        use crate::ErrorKind as K;
        let status = match error.kind() {
            K::InvalidRequest => StatusCode::BAD_REQUEST,
            K::TaskNotFound => StatusCode::NOT_FOUND,
            K::Overloaded | K::Unavailable | K::Timeout => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": error.to_mcp()});
        json(status, serde_json::to_vec(&body).unwrap_or_default())
    })
}

fn refusal(status: StatusCode, message: &str) -> Response {
    rpc_refusal(status, ErrorCode::InvalidRequest, message.to_owned())
}

/// The MCP headers of a request (`McpHeaders::from_pairs`: a `=?base64?…?=` value decoded).
fn mcp_headers(headers: &HeaderMap) -> McpHeaders {
    // An MCP header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Param-*`, ...) with bytes
    // beyond visible ASCII must still be seen, so that it fails its check (the spec: reject
    // such a header) instead of counting as not sent; its lossy text holds a non-ASCII
    // character, which `McpHeaders` and the version check refuse.
    let lossy: Vec<(&str, String)> = headers
        .iter()
        .filter(|(name, value)| name.as_str().starts_with("mcp-") && value.to_str().is_err())
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

/// The first of the MCP headers whose value is not visible ASCII (RFC 9110 field text the
/// spec allows there): such a value is refused, never taken for an absent header.
fn malformed_mcp_header(headers: &HeaderMap) -> Option<&'static str> {
    const CHECKED: [&str; 3] = ["MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"];
    CHECKED.into_iter().find(|name| {
        headers.get_all(*name).iter().any(|value| {
            !value
                .as_bytes()
                .iter()
                .all(|b| *b == b'\t' || (0x20..=0x7e).contains(b))
        })
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
}
