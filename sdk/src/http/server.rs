//! Serving a router on a TCP listener: connection bounds, slow clients, graceful shutdown.
//!
//! hyper serves each connection (HTTP/1.1, keep-alive) with a timer, so that a request head
//! must arrive whole within [`ServeConfig::header_timeout`] (a client that sends half a head
//! and waits holds no place for longer); the body's own deadline is the router's
//! (`HttpConfig::body_timeout`). The listener ([`Bounded`]) holds at most
//! [`ServeConfig::max_connections`] at once, and at most
//! [`ServeConfig::max_connections_per_peer`] from one address, so one address can never take
//! every place.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use super::connections::Bounded;

/// How long [`serve`] lets open connections (long SSE streams, mostly) finish after the
/// shutdown signal before it closes them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// [`serve`]'s default bound on open connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// [`ServeConfig::header_timeout`]'s default.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How [`serve_with`] holds connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeConfig {
    /// The most connections open at once; past it a new one is answered `503` (a retryable
    /// JSON-RPC error) and closed. Default [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// The most connections open at once from one IP address; past it that address's new
    /// connection is refused as above. Default `None`: three quarters of
    /// `max_connections` (at least one), so other addresses always keep a quarter. Behind a
    /// proxy every client has the proxy's address: set it to `max_connections` there.
    pub max_connections_per_peer: Option<usize>,
    /// How long a request's head (request line and headers) may take to arrive, counted
    /// from the first moment the connection waits for one (an idle keep-alive connection
    /// is closed after it too). Default [`DEFAULT_HEADER_TIMEOUT`].
    pub header_timeout: Duration,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl ServeConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: None,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
        }
    }

    /// Sets [`ServeConfig::max_connections`].
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// Sets [`ServeConfig::max_connections_per_peer`].
    pub fn max_connections_per_peer(mut self, max: usize) -> Self {
        self.max_connections_per_peer = Some(max);
        self
    }

    /// Sets [`ServeConfig::header_timeout`].
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// The per-address bound in force.
    fn per_peer(&self) -> usize {
        self.max_connections_per_peer
            .unwrap_or(self.max_connections - self.max_connections / 4)
            .clamp(1, self.max_connections.max(1))
    }
}

/// Serve `router` on `listener` until `shutdown` completes, then stop accepting, let open
/// requests finish for up to [`SHUTDOWN_GRACE`], and return. The defaults of
/// [`ServeConfig`] apply.
///
/// Every accepted socket gets `TCP_NODELAY`: replies are small and written whole, so
/// Nagle's algorithm would only add latency (up to the peer's delayed-ACK timer) to
/// pipelined or streamed replies.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, router, ServeConfig::new(), shutdown).await
}

/// [`serve`] holding at most `max_connections` connections at once: past that, a new one is
/// answered `503` with a retryable JSON-RPC error (`kind: overloaded`) and closed.
pub async fn serve_bounded(
    listener: TcpListener,
    router: Router,
    max_connections: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let config = ServeConfig::new().max_connections(max_connections);
    serve_with(listener, router, config, shutdown).await
}

/// [`serve`] with `config`'s bounds and timeouts.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut listener = Bounded::new(listener, config.max_connections, config.per_peer());
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        .keep_alive(true);
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let (io, peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(io), service));
        connections.spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        });
        // Reap the finished ones, so the set holds only open connections.
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {
            tracing::info!("connections still open {SHUTDOWN_GRACE:?} after shutdown; closing them");
        }
    }
    // Dropping the set aborts what is left.
    drop(connections);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_per_peer_bound_leaves_other_addresses_a_quarter() {
        let per_peer = |max| ServeConfig::new().max_connections(max).per_peer();
        assert_eq!(per_peer(10_000), 7_500);
        assert_eq!(per_peer(20), 15);
        assert_eq!(per_peer(1), 1);
        assert_eq!(per_peer(0), 1);
        let set = ServeConfig::new()
            .max_connections(20)
            .max_connections_per_peer(50);
        assert_eq!(set.per_peer(), 20);
    }
}
