//! `serve(bridge, {listen, grpcListen})`: the SDK's HTTP router on a port, and its gRPC
//! binding on another, from Node.

use std::net::SocketAddr;

use agentlog::ErrorKind;
use agentlog::grpc::{self, GrpcConfig};
use agentlog::http::mcp;
use agentlog::http::{
    Allowed, DEFAULT_MAX_CONNECTIONS, HttpConfig, base_url, router, serve_bounded,
};
use napi::Env;
use napi::bindgen_prelude::PromiseRaw;
use napi_derive::napi;
use tokio_util::sync::CancellationToken;

use crate::bridge::Bridge;
use crate::error::to_napi;
use crate::mcp::McpBridge;

/// How `serve` listens.
#[napi(object)]
#[derive(Debug)]
pub struct ServeOptions {
    /// `IP:PORT` to listen on; port 0 picks a free one (`server.url` has it). Default
    /// `127.0.0.1:8080`.
    pub listen: Option<String>,
    /// The URL clients reach the server at (behind a proxy), written in the card. Default:
    /// the bound address.
    pub public_url: Option<String>,
    /// Serve beyond loopback although every caller is anonymous (no authentication).
    pub allow_anonymous: Option<bool>,
    /// The most connections held open at once (then `503`). Default 10 000.
    pub max_connections: Option<u32>,
    /// `IP:PORT` to serve A2A's gRPC binding on too (port 0 picks a free one:
    /// `server.grpcUrl` has it), listed last in the card as `host:port` with the public URL's
    /// host, as `agentlog serve --grpc-listen` does. Default: no gRPC.
    pub grpc_listen: Option<String>,
}

/// A running server (from `serve`): HTTP, and gRPC when asked for.
#[napi]
#[derive(Debug)]
pub struct Server {
    url: String,
    mcp_url: Option<String>,
    grpc_url: Option<String>,
    stop: CancellationToken,
    stopped: CancellationToken,
}

fn config_error(message: String) -> napi::Error {
    to_napi(agentlog::Error::new(ErrorKind::Config, message))
}

/// `listen` (the option `what`) as an address, served only on loopback unless
/// `allow_anonymous`.
fn address_of(listen: &str, what: &str, allow_anonymous: bool) -> napi::Result<SocketAddr> {
    let address: SocketAddr = listen.parse().map_err(|e| {
        config_error(format!(
            "bad {what} address {listen:?} (expected IP:PORT): {e}"
        ))
    })?;
    if !address.ip().is_loopback() && !allow_anonymous {
        return Err(config_error(format!(
            "refusing to serve {address} without authentication: every caller would be anonymous and see every task; pass allowAnonymous: true to do it anyway"
        )));
    }
    Ok(address)
}

/// Bind `address` (the option `what`): the listener and its local address.
async fn bind(
    address: SocketAddr,
    what: &str,
) -> napi::Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| config_error(format!("cannot listen on {address} ({what}): {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| config_error(format!("cannot read the listening address: {e}")))?;
    Ok((listener, local))
}

/// Serve `bridge` over HTTP: A2A JSON-RPC and HTTP+JSON, the agent card (its interfaces at
/// the bound URL, or `publicUrl`), /healthz, /readyz, /metrics, and with `mcp` (index.js
/// takes it from `options.mcp`) the MCP route `/mcp` beside them, as `agentlog serve --tools`
/// merges it (Host and Origin: loopback or the URL's host); with `grpcListen`, A2A's gRPC
/// binding on that address too, listed last in the card. Every caller is anonymous, so only
/// loopback addresses are served unless `allowAnonymous`. Resolves once the server answers
/// and the bridge has replayed the log. The server does not keep the process alive: await
/// `server.closed` for that.
#[napi(
    js_name = "_serve",
    ts_args_type = "bridge: Bridge, options?: ServeOptions | null, mcp?: McpBridge | null",
    ts_return_type = "Promise<Server>"
)]
pub fn serve<'env>(
    env: &'env Env,
    bridge: &Bridge,
    options: Option<ServeOptions>,
    mcp: Option<&McpBridge>,
) -> napi::Result<PromiseRaw<'env, Server>> {
    let options = options.unwrap_or(ServeOptions {
        listen: None,
        public_url: None,
        allow_anonymous: None,
        max_connections: None,
        grpc_listen: None,
    });
    let allow_anonymous = options.allow_anonymous.unwrap_or(false);
    let listen = options
        .listen
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let address = address_of(&listen, "listen", allow_anonymous)?;
    let grpc_address = options
        .grpc_listen
        .map(|g| address_of(&g, "grpcListen", allow_anonymous))
        .transpose()?;
    let max_connections = options
        .max_connections
        .map_or(DEFAULT_MAX_CONNECTIONS, |n| n as usize);
    let public_url = options.public_url;
    let bridge = bridge.inner.clone();
    let mcp = mcp.map(|m| m.inner.clone());
    env.spawn_future(async move {
        // Both bound before anything serves: a taken port rejects the call.
        let (listener, local) = bind(address, "listen").await?;
        let grpc_bound = match grpc_address {
            Some(address) => Some(bind(address, "grpcListen").await?),
            None => None,
        };
        let base = base_url(public_url.as_deref(), local).map_err(to_napi)?;
        let url = base.to_string();
        let grpc_interface = grpc_bound
            .as_ref()
            .map(|(_, local)| grpc::card_interface(&base, *local));
        let grpc_url = grpc_interface.as_ref().map(|i| i.url.clone());
        let http = HttpConfig::new()
            .interface_url(url.clone())
            .extra_interfaces(grpc_interface.into_iter().collect())
            .allowed(Allowed::for_base_url(&base));
        let stop = CancellationToken::new();
        let stopped = CancellationToken::new();
        let view = bridge.view().clone();
        let grpc_server = grpc_bound.map(|(listener, _)| {
            grpc::serve(
                listener,
                bridge.clone(),
                GrpcConfig::new(),
                stop.clone().cancelled_owned(),
            )
        });
        let mut app = router(bridge, http);
        let mut mcp_url = None;
        if let Some(mcp) = mcp {
            let (with_mcp, url) = mcp::mount(app, mcp, &base).map_err(to_napi)?;
            (app, mcp_url) = (with_mcp, Some(url));
        }
        let server = serve_bounded(
            listener,
            app,
            max_connections,
            stop.clone().cancelled_owned(),
        );
        let done = stopped.clone();
        tokio::spawn(async move {
            let grpc = async {
                if let Some(server) = grpc_server
                    && let Err(e) = server.await
                {
                    eprintln!("agentlog: the gRPC server stopped: {}", e.report());
                }
            };
            let http = async {
                if let Err(e) = server.await {
                    eprintln!("agentlog: the HTTP server stopped: {e}");
                }
            };
            tokio::join!(http, grpc);
            done.cancel();
        });
        view.wait_caught_up().await;
        Ok(Server {
            url,
            mcp_url,
            grpc_url,
            stop,
            stopped,
        })
    })
}

#[napi]
impl Server {
    /// The base URL it serves at (`http://127.0.0.1:PORT/`); the card is at
    /// `<url>.well-known/agent-card.json`.
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The MCP route's URL (`<url>mcp`) when serving an `McpBridge`, else `null`.
    #[napi(getter)]
    pub fn mcp_url(&self) -> Option<String> {
        self.mcp_url.clone()
    }

    /// The gRPC binding's address (`host:port`, as the card lists it) when serving it
    /// (`grpcListen`), else `null`.
    #[napi(getter)]
    pub fn grpc_url(&self) -> Option<String> {
        self.grpc_url.clone()
    }

    /// Stop accepting (HTTP and gRPC), let open requests finish (streams: up to 10 s), and
    /// resolve once the server has stopped.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.stop.cancel();
        self.stopped.cancelled().await;
        Ok(())
    }

    /// Resolves once the server has stopped. Pending, it keeps the process alive: a server
    /// process awaits it.
    #[napi(js_name = "_waitClosed")]
    pub async fn wait_closed(&self) {
        self.stopped.cancelled().await;
    }
}
