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
use reqwest::header::{HeaderMap, HeaderValue};

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

    /// POST `body` to `url` with `headers` (`Content-Type` and `Content-Length` are set here).
    pub(super) async fn post(&self, url: &str, headers: HeaderMap, body: Bytes) -> Sent {
        // A literal address never reaches the resolver: check it here, before any connection.
        if let Err(refused) = self.destinations.check_url(url) {
            return Sent::Refused(refused.message().to_owned());
        }
        let request = self
            .http
            .post(url)
            .headers(headers)
            .header(
                reqwest::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )
            .body(body);
        let mut response = match request.send().await {
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

/// The host of a webhook URL, for grouping requests by endpoint: scheme, host and port.
pub(super) fn endpoint_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) => format!(
            "{}://{}:{}",
            parsed.scheme(),
            host_of(&parsed),
            parsed.port_or_known_default().unwrap_or(0)
        ),
        Err(_) => url.to_owned(),
    }
}
