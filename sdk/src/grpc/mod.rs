//! A2A's gRPC binding (spec §10): `lf.a2a.v1.A2AService` served with tonic over a
//! [`Bridge`](crate::Bridge), all eleven RPCs, on a listener of its own (HTTP/2, plaintext;
//! TLS is for a proxy in front, as for the HTTP router).
//!
//! Each RPC is the bridge's typed call ([`crate::bridge::Call`]): the proto request becomes
//! the wire types ([`convert`], the one place the two meet), [`Bridge::handle`](crate::Bridge::handle)
//! answers, and the [`Answer`](crate::bridge::Answer) goes back to proto; nothing is encoded
//! as JSON on the way, and no binding decides anything the bridge does not. So gRPC, JSON-RPC
//! and HTTP+JSON answer every question alike.
//!
//! - Metadata: `a2a-version` must be `1.0` (a missing one means 0.3, A2A §3.2.6, which this
//!   service is not: refused as an unsupported version); `a2a-extensions` (comma-separated,
//!   any number of entries) activates the extensions the card declares, echoed in an
//!   `a2a-extensions` trailer as the Go SDK does; `authorization` goes through the same
//!   [`EdgeAuth`](crate::http::auth::EdgeAuth) as HTTP ([`GrpcConfig::auth`]):
//!   `UNAUTHENTICATED` without good credentials, `PERMISSION_DENIED` without the method's
//!   scope, each with the message and ErrorInfo metadata HTTP gives (RFC 6750's `error`
//!   code: `invalid_token`, `invalid_request`, `insufficient_scope`).
//! - Errors: the status code of the error table's gRPC column (spec 1.0.1's), the message a
//!   JSON-RPC client reads, and in `grpc-status-details-bin` a `google.rpc.Status` with an
//!   `ErrorInfo{reason, domain: "a2a-protocol.org", metadata}` (plus a `BadRequest` field
//!   violation when the error names a field).
//! - Streams (`SendStreamingMessage`, `SubscribeToTask`, whose first event is the task): the
//!   bridge's task streams, as SSE gets them; one ends after the task's terminal or interrupted
//!   event, or with an error's status. A client that cancels ends its stream and nothing else.
//! - Requests larger than [`GrpcConfig::body_limit_bytes`] (1 MiB, the HTTP router's body
//!   limit) are refused `RESOURCE_EXHAUSTED` before they are decoded.
//! - Bridges sharing the agent's partitions (`GrpcConfig::forward`): a call about a partition
//!   this bridge does not hold is answered by its owner (else its successor), reached over the
//!   members' HTTP URLs as the JSON-RPC request it stands for, with the caller's metadata; the
//!   answer is converted as a local one (`http::forward`'s typed calls). `ListTasks` merges
//!   every owner's page.
//! - Shutdown: no new connections, [`SHUTDOWN_GRACE`] for open calls, then they are dropped.

mod convert;
pub mod proto;
mod service;
mod status;
mod trailer;

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use agentlog_wire::a2a::AgentInterface;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use service::{A2aGrpc, EventStream};
pub use status::{ERROR_DOMAIN, status};
pub use trailer::{EXTENSIONS, TrailerBody, Trailers};

use crate::bridge::Bridge;
// Edge auth's types, the same as `http::auth`'s: here too for a build without `http`.
pub use crate::edge::{Authenticator, EdgeAuth, Identity, MethodScopes, Refusal, bearer_token};
use crate::error::{Error, ErrorKind, Result};

/// How long open calls may go on once shutdown is asked, as the HTTP router's.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How the gRPC binding serves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GrpcConfig {
    /// Edge authentication (the HTTP router's); `None`: every caller is anonymous.
    pub auth: Option<EdgeAuth>,
    /// The largest request message taken, in bytes. Default 1 MiB.
    pub body_limit_bytes: usize,
    /// Forwarding between bridges sharing the agent's partitions (the HTTP router's, with
    /// its `rpc_path`): a call about a partition this bridge does not hold goes to the
    /// partition's owner, and `ListTasks` asks every owner. `None`: every call is served here.
    #[cfg(feature = "http")]
    pub forward: Option<crate::http::Forwarding>,
}

setters!(GrpcConfig {
    body_limit_bytes: usize,
} optional {
    auth: EdgeAuth,
});

impl GrpcConfig {
    /// Anonymous callers, a 1 MiB limit.
    pub fn new() -> Self {
        Self {
            auth: None,
            body_limit_bytes: 1024 * 1024,
            #[cfg(feature = "http")]
            forward: None,
        }
    }

    /// Sets the `forward` field (to `Some`).
    #[cfg(feature = "http")]
    #[must_use]
    pub fn forward(mut self, forward: crate::http::Forwarding) -> Self {
        self.forward = Some(forward);
        self
    }
}

impl Default for GrpcConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// The card's entry for a gRPC listener bound at `local` and reached through the host of
/// `public_url` (the HTTP server's public URL): `host:port` without a scheme, as the proto
/// asks and the official clients dial it, `protocolBinding` `GRPC`, version `1.0`.
/// `agentlog serve --grpc-listen` and the bindings' `serve` list it after the HTTP ones.
pub fn card_interface(public_url: &url::Url, local: SocketAddr) -> AgentInterface {
    let host = match public_url.host() {
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        Some(host) => host.to_string(),
        None => match local.ip() {
            IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        },
    };
    AgentInterface {
        url: format!("{host}:{}", local.port()),
        protocol_binding: "GRPC".to_owned(),
        protocol_version: "1.0".to_owned(),
        tenant: None,
    }
}

/// The tonic service of `bridge`, to add to a server of one's own (which should wrap it in
/// [`Trailers`] to echo activated extensions).
pub fn service(
    bridge: Bridge,
    config: GrpcConfig,
) -> proto::a2a_service_server::A2aServiceServer<A2aGrpc> {
    #[cfg(feature = "http")]
    let service = A2aGrpc::new(bridge, config.auth).forward(config.forward);
    #[cfg(not(feature = "http"))]
    let service = A2aGrpc::new(bridge, config.auth);
    proto::a2a_service_server::A2aServiceServer::new(service)
        .max_decoding_message_size(config.body_limit_bytes)
}

/// Serve `bridge` over gRPC on `listener` until `shutdown` resolves, then give open calls
/// [`SHUTDOWN_GRACE`].
pub async fn serve(
    listener: TcpListener,
    bridge: Bridge,
    config: GrpcConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    let incoming = futures::stream::unfold(listener, |listener| async move {
        loop {
            match listener.accept().await {
                Ok((socket, _)) => {
                    // Small frames both ways: Nagle would hold each answer back.
                    let _ = socket.set_nodelay(true);
                    return Some((Ok::<_, std::io::Error>(socket), listener));
                }
                // Out of descriptors or a reset before accept: go on accepting.
                Err(error) => {
                    tracing::warn!(%error, "gRPC: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    let stopping = CancellationToken::new();
    let signal = {
        let stopping = stopping.clone();
        async move {
            shutdown.await;
            stopping.cancel();
        }
    };
    let server = tonic::transport::Server::builder().serve_with_incoming_shutdown(
        Trailers(service(bridge, config)),
        incoming,
        signal,
    );
    tokio::select! {
        served = server => served.map_err(|e| {
            Error::new(ErrorKind::Unavailable, "the gRPC server failed").with_source(e)
        }),
        () = async {
            stopping.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::card_interface;

    #[test]
    fn the_card_interface_is_the_public_host_and_the_bound_port() {
        let local = "127.0.0.1:50051".parse().unwrap();
        let public = url::Url::parse("https://agents.example.com/a2a/").unwrap();
        let interface = card_interface(&public, local);
        assert_eq!(interface.url, "agents.example.com:50051");
        assert_eq!(interface.protocol_binding, "GRPC");
        assert_eq!(interface.protocol_version, "1.0");
        assert_eq!(interface.tenant, None);
        let public = url::Url::parse("http://[::1]:8080/").unwrap();
        assert_eq!(card_interface(&public, local).url, "[::1]:50051");
        let public = url::Url::parse("http://127.0.0.1:8080/").unwrap();
        assert_eq!(card_interface(&public, local).url, "127.0.0.1:50051");
    }
}
