//! Who may reach a route that reads or changes tasks (A2A JSON-RPC, MCP): the host the request
//! names and, from a browser, the origin of the page that sends it.
//!
//! A web page can have its own name resolve to 127.0.0.1 (DNS rebinding) and then call a
//! local server as if it were its own origin; the request still names the page's host. So a
//! request is served only when its host is one of the allowed hosts (loopback and the
//! server's public name by default), and a browser's request (one with `Origin`) only when
//! its origin is allowed; an allowed origin gets CORS answers (a preflight, and
//! `Access-Control-Allow-Origin` on the response), so allowing an origin is how CORS is
//! configured. The agent card, `/healthz`, `/readyz` and `/metrics` are public and not
//! guarded. With edge auth the checks stay: they cost a deployment nothing that names its
//! public URL (which its card needs anyway), and they keep a token-less browser out before
//! any body is read.
//!
//! The host is read as RFC 9112 §3.2 says: an absolute-form target's authority is the host
//! (its `Host` header is ignored); a request with more than one `Host` header, or an HTTP/1.1
//! request with none, or a malformed one, is a `400`.

use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_HEADERS,
    ACCESS_CONTROL_REQUEST_METHOD, HOST, ORIGIN, VARY,
};
use axum::http::request::Parts;
use axum::http::uri::Authority;
use axum::http::{HeaderValue, Method, StatusCode, Version};
use axum::response::{IntoResponse, Response};

use super::errors::rpc_refusal;
use agentlog_wire::ErrorCode;

/// The loopback host names, allowed by default.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Response headers a browser's script may read.
const EXPOSED: HeaderValue = HeaderValue::from_static(
    "A2A-Extensions, A2A-Version, WWW-Authenticate, Retry-After, MCP-Protocol-Version",
);

/// The hosts and origins a guarded route answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// Host names (without port) served; `*` serves any (behind a proxy that checks it).
    pub hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`, or `scheme://host` for any port) a browser may call
    /// from; `*` allows any.
    pub origins: Vec<String>,
}

impl Default for Allowed {
    /// Loopback: the hosts `localhost`, `127.0.0.1`, `::1`; http and https origins on them.
    fn default() -> Self {
        Self {
            hosts: LOOPBACK.iter().map(|h| (*h).to_owned()).collect(),
            origins: ["localhost", "127.0.0.1", "[::1]"]
                .iter()
                .flat_map(|h| [format!("http://{h}"), format!("https://{h}")])
                .collect(),
        }
    }
}

impl Allowed {
    /// The defaults, plus the host and origin of `base`, the URL clients name the server by
    /// (`serve --public-url`, or the bound address).
    pub fn for_base_url(base: &url::Url) -> Self {
        let mut allowed = Self::default();
        if let Some(host) = base.host_str() {
            let host = bare(host);
            if !allowed.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
                allowed.hosts.push(host.to_owned());
            }
        }
        let origin = base.origin().ascii_serialization();
        if origin != "null" && !allowed.origins.iter().any(|o| origin_matches(o, &origin)) {
            allowed.origins.push(origin);
        }
        allowed
    }

    /// Admit a request, or the response refusing it. `Ok` carries the origin to answer with
    /// CORS headers ([`Allowed::cors`]), when the request came from an allowed browser page.
    #[allow(clippy::result_large_err)] // the error is the response to send
    pub(super) fn admit(&self, parts: &Parts) -> Result<Option<HeaderValue>, Response> {
        let host = request_host(parts).map_err(|why| {
            rpc_refusal(
                StatusCode::BAD_REQUEST,
                ErrorCode::InvalidRequest,
                format!("Bad Request: {why}"),
            )
        })?;
        let host_ok = self.hosts.iter().any(|h| h == "*")
            || host.is_some_and(|host| {
                self.hosts
                    .iter()
                    .any(|h| bare(h).eq_ignore_ascii_case(host))
            });
        if !host_ok {
            return Err(forbidden(
                "Forbidden: the Host header is not allowed (see --allowed-hosts)",
            ));
        }
        let Some(origin) = parts.headers.get(ORIGIN) else {
            return Ok(None);
        };
        let allowed = origin
            .to_str()
            .is_ok_and(|origin| self.origins.iter().any(|a| origin_matches(a, origin)));
        if allowed {
            Ok(Some(origin.clone()))
        } else {
            Err(forbidden(
                "Forbidden: the Origin is not allowed (see --allowed-origins)",
            ))
        }
    }
}

/// The answer to a CORS preflight (`OPTIONS` with `Origin` and
/// `Access-Control-Request-Method`) from an admitted origin, else `None`.
pub(super) fn preflight(parts: &Parts, origin: Option<&HeaderValue>) -> Option<Response> {
    let origin = origin?;
    if parts.method != Method::OPTIONS || !parts.headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD)
    {
        return None;
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST"),
    );
    // The origin is trusted: whatever headers its requests carry (`Mcp-Param-*` cannot be
    // listed ahead) may be sent.
    if let Some(asked) = parts.headers.get(ACCESS_CONTROL_REQUEST_HEADERS) {
        headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
    }
    headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    headers.insert(VARY, HeaderValue::from_static("Origin"));
    Some(response)
}

/// The CORS headers of an answer to a request from the admitted `origin`.
pub(super) fn cors(response: &mut Response, origin: Option<HeaderValue>) {
    if let Some(origin) = origin {
        let headers = response.headers_mut();
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSED);
        headers.append(VARY, HeaderValue::from_static("Origin"));
    }
}

fn forbidden(message: &str) -> Response {
    rpc_refusal(
        StatusCode::FORBIDDEN,
        ErrorCode::InvalidRequest,
        message.to_owned(),
    )
}

/// The host name a request names (RFC 9112 §3.2, §3.2.2), without port or IPv6 brackets;
/// `None` for an HTTP/1.0 request without one. `Err` says why the request is malformed.
fn request_host(parts: &Parts) -> Result<Option<&str>, &'static str> {
    let mut hosts = parts.headers.get_all(HOST).iter();
    let header = hosts.next();
    if hosts.next().is_some() {
        return Err("more than one Host header");
    }
    if let Some(authority) = parts.uri.authority() {
        return Ok(Some(bare(authority.host())));
    }
    let Some(header) = header else {
        return match parts.version {
            Version::HTTP_09 | Version::HTTP_10 => Ok(None),
            _ => Err("a Host header is required"),
        };
    };
    let malformed = "a malformed Host header";
    let text = header.to_str().map_err(|_| malformed)?;
    let authority: Authority = text.parse().map_err(|_| malformed)?;
    // An authority may carry userinfo; a Host header may not.
    if text.contains('@') || authority.host().is_empty() {
        return Err(malformed);
    }
    let host = match text.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => {
            if !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(malformed);
            }
            host
        }
        _ => text,
    };
    Ok(Some(bare(host)))
}

/// A host name without IPv6 brackets.
fn bare(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// Whether `origin` is allowed by `allowed`: `*`, the same origin (any case), or
/// `scheme://host` naming any port.
fn origin_matches(allowed: &str, origin: &str) -> bool {
    allowed == "*"
        || allowed.eq_ignore_ascii_case(origin)
        || origin
            .rsplit_once(':')
            .filter(|(base, port)| {
                !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && base.contains("://")
            })
            .is_some_and(|(base, _)| allowed.eq_ignore_ascii_case(base))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use axum::http::Request;

    use super::*;

    fn parts(uri: &str, version: Version, headers: &[(&str, &str)]) -> Parts {
        let mut request = Request::post(uri).version(version);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    fn admit(allowed: &Allowed, uri: &str, headers: &[(&str, &str)]) -> Result<bool, StatusCode> {
        allowed
            .admit(&parts(uri, Version::HTTP_11, headers))
            .map(|cors| cors.is_some())
            .map_err(|refusal| refusal.status())
    }

    #[test]
    fn loopback_hosts_are_served_by_default_and_others_refused() {
        let allowed = Allowed::default();
        for host in [
            "localhost:8080",
            "127.0.0.1",
            "[::1]:3000",
            "LOCALHOST",
            "[::1]",
        ] {
            assert_eq!(admit(&allowed, "/", &[("host", host)]), Ok(false), "{host}");
        }
        for host in [
            "evil.example.com",
            "evil.example.com:80",
            "127.0.0.2",
            "localhost.evil",
        ] {
            assert_eq!(
                admit(&allowed, "/", &[("host", host)]),
                Err(StatusCode::FORBIDDEN),
                "{host}"
            );
        }
        let any = Allowed {
            hosts: vec!["*".into()],
            ..Allowed::default()
        };
        assert_eq!(admit(&any, "/", &[("host", "evil.example")]), Ok(false));
    }

    #[test]
    fn the_host_is_read_as_rfc_9112_says() {
        let allowed = Allowed::default();
        // Two Host headers, whatever the first says.
        let two = [("host", "127.0.0.1"), ("host", "evil.example")];
        assert_eq!(admit(&allowed, "/", &two), Err(StatusCode::BAD_REQUEST));
        // None on HTTP/1.1; HTTP/1.0 may leave it out (and then names no allowed host).
        assert_eq!(admit(&allowed, "/", &[]), Err(StatusCode::BAD_REQUEST));
        let old = allowed.admit(&parts("/", Version::HTTP_10, &[]));
        assert_eq!(old.unwrap_err().status(), StatusCode::FORBIDDEN);
        // Malformed.
        for host in ["a b", "user@127.0.0.1", "127.0.0.1:x", ""] {
            assert_eq!(
                admit(&allowed, "/", &[("host", host)]),
                Err(StatusCode::BAD_REQUEST),
                "{host:?}"
            );
        }
        // An absolute-form target's authority is the host; its Host header is ignored.
        let absolute = "http://evil.example/mcp";
        assert_eq!(
            admit(&allowed, absolute, &[("host", "127.0.0.1")]),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            admit(&allowed, "http://127.0.0.1:9/", &[("host", "evil.example")]),
            Ok(false)
        );
    }

    #[test]
    fn browsers_are_served_from_allowed_origins_only() {
        let allowed = Allowed::default();
        let host = ("host", "127.0.0.1:8080");
        for origin in [
            "http://localhost:5173",
            "https://127.0.0.1",
            "http://[::1]:1",
        ] {
            assert_eq!(
                admit(&allowed, "/", &[host, ("origin", origin)]),
                Ok(true),
                "{origin}"
            );
        }
        for origin in [
            "http://evil.example",
            "http://localhost.evil.com",
            "null",
            "http://localhost:",
        ] {
            assert_eq!(
                admit(&allowed, "/", &[host, ("origin", origin)]),
                Err(StatusCode::FORBIDDEN),
                "{origin}"
            );
        }
    }

    #[test]
    fn the_base_url_adds_its_host_and_origin() {
        let base = url::Url::parse("https://agents.example.com/a/").unwrap();
        let allowed = Allowed::for_base_url(&base);
        let host = ("host", "agents.example.com");
        assert_eq!(admit(&allowed, "/", &[host]), Ok(false));
        let page = ("origin", "https://agents.example.com");
        assert_eq!(admit(&allowed, "/", &[host, page]), Ok(true));
        let v6 = Allowed::for_base_url(&url::Url::parse("http://[fd00::2]:8080/").unwrap());
        assert_eq!(admit(&v6, "/", &[("host", "[fd00::2]:8080")]), Ok(false));
        let local = url::Url::parse("http://127.0.0.1:9/").unwrap();
        assert_eq!(
            Allowed::for_base_url(&local).hosts,
            Allowed::default().hosts
        );
    }

    #[test]
    fn a_preflight_from_an_allowed_origin_is_answered() {
        let request = parts(
            "/",
            Version::HTTP_11,
            &[
                ("host", "127.0.0.1"),
                ("origin", "http://localhost:5173"),
                ("access-control-request-method", "POST"),
                (
                    "access-control-request-headers",
                    "content-type, a2a-version",
                ),
            ],
        );
        let mut request = request;
        request.method = Method::OPTIONS;
        let origin = Allowed::default().admit(&request).unwrap();
        let response = preflight(&request, origin.as_ref()).unwrap();
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
        let header = |name| response.headers().get(name).unwrap().to_str().unwrap();
        assert_eq!(header(ACCESS_CONTROL_ALLOW_ORIGIN), "http://localhost:5173");
        assert_eq!(
            header(ACCESS_CONTROL_ALLOW_HEADERS),
            "content-type, a2a-version"
        );
        assert_eq!(header(ACCESS_CONTROL_ALLOW_METHODS), "POST");
    }
}
