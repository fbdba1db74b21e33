//! [`Bounded`]: a listener that holds at most so many connections at once, and at most so
//! many from one IP address. Past a bound, a new connection is answered at once with `503`
//! and a retryable JSON-RPC error, then closed: never left waiting in the kernel's backlog,
//! and never served. Answering holds at most [`MAX_REFUSING`] sockets; past that a
//! connection is closed unanswered.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use agentlog_wire::jsonrpc::{ProtocolVersion, error_body};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{Error, ErrorKind};

/// How long a refused connection's request is read (and dropped) after the answer, so that
/// closing does not reset the connection before the client has read the answer.
const LINGER: Duration = Duration::from_secs(1);

/// Refusals answered at once, at most: past that (a flood), a connection is closed unanswered,
/// so that refusing holds no more sockets than this.
const MAX_REFUSING: usize = 256;

/// A TCP listener bounded to `max` open connections, `per_peer` from one address.
pub(super) struct Bounded {
    listener: TcpListener,
    places: Arc<Semaphore>,
    peers: Arc<Peers>,
    refusing: Arc<Semaphore>,
    max: usize,
}

/// Open connections per peer address (an address with none has no entry).
#[derive(Debug)]
struct Peers {
    open: Mutex<HashMap<IpAddr, usize>>,
    max: usize,
}

impl Peers {
    /// A place for one more connection from `ip`, unless it has `max` open already.
    fn take(self: &Arc<Self>, ip: IpAddr) -> Option<PeerPlace> {
        let mut open = self.open.lock();
        let count = open.entry(ip).or_insert(0);
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(PeerPlace {
            peers: Arc::clone(self),
            ip,
        })
    }
}

/// One connection's count in [`Peers`], given back on drop.
#[derive(Debug)]
struct PeerPlace {
    peers: Arc<Peers>,
    ip: IpAddr,
}

impl Drop for PeerPlace {
    fn drop(&mut self) {
        let mut open = self.peers.open.lock();
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

impl Bounded {
    pub(super) fn new(listener: TcpListener, max: usize, per_peer: usize) -> Self {
        Self {
            listener,
            places: Arc::new(Semaphore::new(max)),
            peers: Arc::new(Peers {
                open: Mutex::new(HashMap::new()),
                max: per_peer,
            }),
            refusing: Arc::new(Semaphore::new(MAX_REFUSING)),
            max,
        }
    }

    /// The next connection within the bounds; those past them are refused on the way.
    pub(super) async fn accept(&mut self) -> (Held, SocketAddr) {
        loop {
            let (mut stream, addr) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!("cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            tune_accepted(&mut stream);
            let why = match Arc::clone(&self.places).try_acquire_owned() {
                Ok(place) => match self.peers.take(addr.ip()) {
                    Some(peer) => {
                        let held = Held {
                            stream,
                            _place: place,
                            _peer: peer,
                        };
                        return (held, addr);
                    }
                    None => format!(
                        "{} connections from your address are open already; retry later",
                        self.peers.max
                    ),
                },
                Err(_) => format!("{} connections are open already; retry later", self.max),
            };
            tracing::debug!(%addr, "refusing a connection: {why}");
            // Unanswered (dropped, so closed) when refusals are a flood already.
            if let Ok(refusing) = Arc::clone(&self.refusing).try_acquire_owned() {
                tokio::spawn(async move {
                    refuse(stream, why).await;
                    drop(refusing);
                });
            }
        }
    }
}

/// What [`serve`](super::serve) does to every accepted socket: replies are small and written
/// whole, so Nagle's algorithm would only delay them.
pub(super) fn tune_accepted(tcp: &mut tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY on an accepted socket: {e}");
    }
}

/// Answer `503` with a retryable JSON-RPC error, then close.
async fn refuse(mut stream: TcpStream, why: String) {
    let error = Error::new(ErrorKind::Overloaded, why);
    let body = match super::errors::null_id() {
        Some(null) => error_body(&null, &error.to_rpc(), ProtocolVersion::V1_0),
        None => Vec::new(),
    };
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    if stream.write_all(head.as_bytes()).await.is_err() || stream.write_all(&body).await.is_err() {
        return;
    }
    let _ = stream.shutdown().await;
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(LINGER, async {
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// An accepted connection and its place, given back when the connection is dropped.
pub(super) struct Held {
    stream: TcpStream,
    _place: OwnedSemaphorePermit,
    _peer: PeerPlace,
}

impl AsyncRead for Held {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Held {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
