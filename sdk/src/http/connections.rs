//! [`Bounded`]: a listener that holds at most so many connections at once. Past the bound, a
//! new connection is answered at once with `503` and a retryable JSON-RPC error, then closed:
//! never left waiting in the kernel's backlog, and never served. Answering holds at most
//! [`MAX_REFUSING`] sockets; past that a connection is closed unanswered.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use agentlog_wire::jsonrpc::{ProtocolVersion, error_body};
use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{Error, ErrorKind};

/// [`serve`](super::serve)'s default bound on open connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// How long a refused connection's request is read (and dropped) after the answer, so that
/// closing does not reset the connection before the client has read the answer.
const LINGER: Duration = Duration::from_secs(1);

/// Refusals answered at once, at most: past that (a flood), a connection is closed unanswered,
/// so that refusing holds no more sockets than this.
const MAX_REFUSING: usize = 256;

/// A TCP listener bounded to `max` open connections.
pub(super) struct Bounded {
    listener: TcpListener,
    places: Arc<Semaphore>,
    refusing: Arc<Semaphore>,
    max: usize,
}

impl Bounded {
    pub(super) fn new(listener: TcpListener, max: usize) -> Self {
        Self {
            listener,
            places: Arc::new(Semaphore::new(max)),
            refusing: Arc::new(Semaphore::new(MAX_REFUSING)),
            max,
        }
    }
}

impl Listener for Bounded {
    type Io = Held;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Held, SocketAddr) {
        loop {
            let (mut stream, addr) = Listener::accept(&mut self.listener).await;
            super::tune_accepted(&mut stream);
            match Arc::clone(&self.places).try_acquire_owned() {
                Ok(place) => {
                    return (
                        Held {
                            stream,
                            _place: place,
                        },
                        addr,
                    );
                }
                Err(_) => {
                    tracing::debug!(%addr, max = self.max, "refusing a connection: too many are open");
                    // Unanswered (dropped, so closed) when refusals are a flood already.
                    if let Ok(refusing) = Arc::clone(&self.refusing).try_acquire_owned() {
                        let max = self.max;
                        tokio::spawn(async move {
                            refuse(stream, max).await;
                            drop(refusing);
                        });
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// Answer `503` with a retryable JSON-RPC error, then close.
async fn refuse(mut stream: TcpStream, max: usize) {
    let error = Error::new(
        ErrorKind::Overloaded,
        format!("{max} connections are open already; retry later"),
    );
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
pub struct Held {
    stream: TcpStream,
    _place: OwnedSemaphorePermit,
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
