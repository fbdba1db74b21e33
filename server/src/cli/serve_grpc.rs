//! `serve --grpc-listen`: A2A's gRPC binding on a listener of its own beside the HTTP one,
//! listed in the card after the HTTP interfaces, stopped with the HTTP server.

use std::net::SocketAddr;

use agentlog::bridge::Bridge;
use agentlog::grpc::{self, GrpcConfig};
use agentlog::http::Forwarding;
use agentlog::http::auth::EdgeAuth;
use agentlog_wire::a2a::AgentCard;
use clap::Args;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::CliError;

/// The gRPC options of `serve`.
#[derive(Debug, Args)]
pub(super) struct GrpcArgs {
    /// Also serve A2A over gRPC (`lf.a2a.v1.A2AService`, HTTP/2 without TLS) on this address
    /// (port 0 picks a free one); the card lists it as `host:port`, the host that of the
    /// public URL. Off by default.
    #[arg(long, value_name = "ADDR")]
    grpc_listen: Option<SocketAddr>,
}

/// The bound gRPC listener, if asked for.
pub(super) struct GrpcListener {
    listener: TcpListener,
    local: SocketAddr,
}

/// Bind `--grpc-listen`, if given, before anything else starts.
pub(super) async fn bind(args: &GrpcArgs) -> Result<Option<GrpcListener>, CliError> {
    let Some(addr) = args.grpc_listen else {
        return Ok(None);
    };
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| CliError::msg(format!("cannot listen on {addr} (--grpc-listen): {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| CliError::msg(format!("cannot read the gRPC listening address: {e}")))?;
    Ok(Some(GrpcListener { listener, local }))
}

impl GrpcListener {
    /// The card's address of this listener: the public URL's host, the bound port (gRPC's
    /// form, `host:port`, no scheme).
    pub(super) fn address(&self, public_url: &url::Url) -> String {
        grpc::card_interface(public_url, self.local).url
    }

    /// List the interface in `card`, after the HTTP ones.
    pub(super) fn declare(&self, card: &mut AgentCard, public_url: &url::Url) {
        card.supported_interfaces
            .push(grpc::card_interface(public_url, self.local));
    }

    /// Serve `bridge` until `stop` (then the open calls' grace); with `forward` (a member's),
    /// calls about partitions held elsewhere go to their owners as the HTTP router's do.
    pub(super) fn spawn(
        self,
        bridge: Bridge,
        auth: Option<EdgeAuth>,
        forward: Option<Forwarding>,
        stop: CancellationToken,
    ) -> JoinHandle<agentlog::Result<()>> {
        let mut config = GrpcConfig::new();
        config.auth = auth;
        config.forward = forward;
        tokio::spawn(grpc::serve(
            self.listener,
            bridge,
            config,
            stop.cancelled_owned(),
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_card_address_is_the_public_host_and_the_bound_port() {
        let args = GrpcArgs {
            grpc_listen: Some("127.0.0.1:0".parse().unwrap()),
        };
        let bound = bind(&args).await.unwrap().unwrap();
        let port = bound.local.port();
        let public = url::Url::parse("https://agents.example.com/a2a").unwrap();
        assert_eq!(bound.address(&public), format!("agents.example.com:{port}"));
        let mut card = AgentCard::default();
        bound.declare(
            &mut card,
            &url::Url::parse("http://127.0.0.1:8080/").unwrap(),
        );
        let interface = &card.supported_interfaces[0];
        assert_eq!(interface.url, format!("127.0.0.1:{port}"));
        assert_eq!(interface.protocol_binding, "GRPC");
        assert_eq!(interface.protocol_version, "1.0");
        let none = bind(&GrpcArgs { grpc_listen: None }).await.unwrap();
        assert!(none.is_none());
    }
}
