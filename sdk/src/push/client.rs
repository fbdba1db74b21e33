//! The HTTP client notifications go out through, guarded against request forgery: every
//! address a webhook's name resolves to is checked ([`Destinations`]) by the resolver the
//! connection is made from, so the connection goes to a checked address and no second lookup
//! (a rebinding name) is made; a literal address is checked before the request. No redirect
//! is followed, no proxy is used, the connection and the whole request are timed out, and at
//! most a bounded part of the response is read.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::HeaderMap;
use url::Url;

use crate::error::{Error, ErrorKind, Result};
use crate::security::Destinations;
use crate::security::destinations::host_of;

/// What one POST came to.
#[derive(Debug)]
pub(super) enum Sent {
    /// A 2xx answer.
    Delivered,
    /// Worth another attempt: no answer, a timeout, a 5xx, 408, 425 or 429.
    Failed(String),
    /// Not worth another: the destination is refused, or the receiver turned the
    /// notification down (a 4xx other than those above).
    Refused(String),
}

/// A guarded HTTP client. Cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct Client {
    http: reqwest::Client,
    destinations: Arc<Destinations>,
    max_response_bytes: usize,
}

impl Client {
    pub(super) fn new(
        destinations: Destinations,
        connect_timeout: Duration,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<Self> {
        let destinations = Arc::new(destinations);
        let http = reqwest::Client::builder()
            .dns_resolver(Arc::new(Guarded(destinations.clone())))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(connect_timeout)
            .timeout(timeout)
            .pool_idle_timeout(Duration::from_secs(30))
            .user_agent(concat!("agentlog/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                Error::new(ErrorKind::Internal, "cannot build the push HTTP client").with_source(e)
            })?;
        Ok(Self {
            http,
            destinations,
            max_response_bytes,
        })
    }

    /// `url` parsed, if `Destinations` lets it be sent to as far as its text tells (a literal
    /// address never reaches the resolver, so it is checked here, before any connection);
    /// else why not. Checked once per notification, not per attempt: the rules do not change.
    pub(super) fn check(&self, url: &str) -> std::result::Result<Checked, String> {
        match self.destinations.check_url(url) {
            Ok(url) => Ok(Checked {
                endpoint: endpoint_of(&url),
                url,
            }),
            Err(refused) => Err(refused.message().to_owned()),
        }
    }

    /// POST `body` to `url` with `headers` (which set `Content-Type`; `Content-Length` is
    /// set here).
    pub(super) async fn post(&self, url: &Checked, headers: HeaderMap, body: Bytes) -> Sent {
        let mut request = reqwest::Request::new(reqwest::Method::POST, url.url.clone());
        *request.headers_mut() = headers;
        *request.body_mut() = Some(body.into());
        let mut response = match self.http.execute(request).await {
            Ok(response) => response,
            Err(error) => return failure(&error),
        };
        let status = response.status();
        // Read a bounded part of the answer (so the connection can be reused), drop the rest.
        let mut read = 0;
        while read < self.max_response_bytes {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                Ok(None) | Err(_) => break,
            }
        }
        if status.is_success() {
            return Sent::Delivered;
        }
        let reason = format!("HTTP {status}");
        match status.as_u16() {
            408 | 425 | 429 => Sent::Failed(reason),
            400..=499 => Sent::Refused(reason),
            _ => Sent::Failed(reason),
        }
    }
}

/// A failed send as the sender records it: refused when the resolver refused the
/// destination, otherwise worth retrying.
fn failure(error: &reqwest::Error) -> Sent {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<RefusedAddress>() {
            return Sent::Refused(refused.0.clone());
        }
        source = cause.source();
    }
    let what = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "no answer"
    };
    Sent::Failed(format!("{what}: {}", chain(error)))
}

/// An error and its causes on one line (reqwest's own message names only the URL).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        text.push_str(": ");
        text.push_str(&error.to_string());
        cause = error.source();
    }
    text
}

/// The resolver of the client: the system's, keeping only the addresses `Destinations`
/// allows; none allowed is a refusal.
struct Guarded(Arc<Destinations>);

/// Why a name was not resolved: every address it has is refused.
#[derive(Debug)]
struct RefusedAddress(String);

impl std::fmt::Display for RefusedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RefusedAddress {}

impl Resolve for Guarded {
    fn resolve(&self, name: Name) -> Resolving {
        let destinations = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refusal = None;
            let allowed: Vec<SocketAddr> = found
                .into_iter()
                .filter(|addr| match destinations.check_address(&host, addr.ip()) {
                    Ok(()) => true,
                    Err(e) => {
                        refusal.get_or_insert_with(|| e.message().to_owned());
                        false
                    }
                })
                .collect();
            if allowed.is_empty() {
                let reason = refusal.unwrap_or_else(|| format!("{host} has no address"));
                return Err(Box::new(RefusedAddress(reason)) as _);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// A webhook URL the destination rules allow as written, and its endpoint.
#[derive(Debug)]
pub(super) struct Checked {
    url: Url,
    /// Scheme, host and port: what requests are grouped by (per-endpoint limits, circuits).
    pub(super) endpoint: String,
}

/// The endpoint of a webhook URL: scheme, host and port.
fn endpoint_of(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        host_of(url),
        url.port_or_known_default().unwrap_or(0)
    )
}
