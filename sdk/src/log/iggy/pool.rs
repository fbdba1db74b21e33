//! Several signed-in connections to the server; each call takes the least busy one.
//!
//! The `iggy` client answers one request per connection at a time: it holds the connection
//! from writing a request until the whole answer is read. On one connection a handle's reads
//! and end-offset probes would wait behind its persisted appends, and every caller behind
//! every other; a few connections let them overlap (the server serves its connections
//! concurrently).

use std::sync::atomic::{AtomicUsize, Ordering};

use iggy::prelude::{Client, IggyClient};

use super::errors::map_err;
use super::options::IggyOptions;
use crate::error::Result;

/// Signed-in connections, used least busy first.
pub(super) struct Pool {
    first: Connection,
    others: Vec<Connection>,
}

struct Connection {
    client: IggyClient,
    /// Calls on this connection now (taken or waiting for it).
    busy: AtomicUsize,
}

/// A connection taken for a call; given back when dropped.
pub(super) struct Lease<'a> {
    connection: &'a Connection,
}

impl std::ops::Deref for Lease<'_> {
    type Target = IggyClient;

    fn deref(&self) -> &IggyClient {
        &self.connection.client
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.connection.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Pool {
    /// `count` connections (at least one), signed in together.
    pub(super) async fn connect(options: &IggyOptions, count: usize) -> Result<Pool> {
        let opened = futures::future::join_all((0..count.max(1)).map(|_| options.connect())).await;
        let mut connections = opened.into_iter().map(|client| {
            Ok(Connection {
                client: client?,
                busy: AtomicUsize::new(0),
            })
        });
        let first = connections
            .next()
            .unwrap_or_else(|| Err(crate::log::closed_error()))?;
        let others = connections.collect::<Result<Vec<_>>>()?;
        Ok(Pool { first, others })
    }

    fn all(&self) -> impl Iterator<Item = &Connection> {
        std::iter::once(&self.first).chain(&self.others)
    }

    /// The least busy connection (the first of equals).
    pub(super) fn get(&self) -> Lease<'_> {
        let connection = self
            .all()
            .min_by_key(|c| c.busy.load(Ordering::Relaxed))
            .unwrap_or(&self.first);
        connection.busy.fetch_add(1, Ordering::Relaxed);
        Lease { connection }
    }

    /// Close every connection; the first failure is returned.
    pub(super) async fn shutdown(&self) -> Result<()> {
        let mut first = Ok(());
        for connection in self.all() {
            if let Err(e) = connection.client.shutdown().await
                && first.is_ok()
            {
                first = Err(map_err(e, "closing a connection"));
            }
        }
        first
    }
}
