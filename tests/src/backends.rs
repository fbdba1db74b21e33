//! The backends the suites run on: `memory://`, `file://` in a temporary directory, and a
//! real Apache Iggy server ([`IggyServer`]).

use std::path::PathBuf;
use std::sync::Mutex;

use agentlog::log::layers::{FaultLayer, Faults};
use agentlog::log::{Log, open};

use crate::bridge_suite::Backend;
use crate::iggy_server::IggyServer;

/// `memory://`: replicas share the one handle; nothing survives a restart.
#[derive(Debug)]
pub struct Memory;

#[async_trait::async_trait]
impl Backend for Memory {
    fn name(&self) -> &str {
        "memory"
    }
    async fn log(&self) -> Log {
        open("memory://").await.expect("open memory://")
    }
    async fn replica(&self, log: &Log) -> Log {
        log.clone()
    }
    async fn restart(&self, _log: &Log) -> Option<Log> {
        None
    }
}

/// `memory://` under a fault layer whose reads return one record at most (the trait allows
/// it; Iggy's polls are capped), so the view's follower and `read_at` must read on.
#[derive(Debug)]
pub struct ShortReads;

#[async_trait::async_trait]
impl Backend for ShortReads {
    fn name(&self) -> &str {
        "memory, short reads"
    }
    async fn log(&self) -> Log {
        let faults = Faults::new();
        faults.short_reads(1);
        let log = open("memory://").await.expect("open memory://");
        log.layer(FaultLayer::new(faults))
    }
    async fn replica(&self, log: &Log) -> Log {
        log.clone()
    }
    async fn restart(&self, _log: &Log) -> Option<Log> {
        None
    }
}

/// `file://`: one temporary directory per log; a restart closes the log and opens its
/// directory again.
#[derive(Debug)]
pub struct Dir {
    root: tempfile::TempDir,
    current: Mutex<Option<PathBuf>>,
}

impl Dir {
    /// Logs in a fresh temporary directory.
    pub fn new() -> Self {
        Self {
            root: tempfile::tempdir().expect("tempdir"),
            current: Mutex::new(None),
        }
    }

    fn url(path: &std::path::Path) -> String {
        format!("file://{}", path.display())
    }
}

impl Default for Dir {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait::async_trait]
impl Backend for Dir {
    fn name(&self) -> &str {
        "file"
    }
    async fn log(&self) -> Log {
        let path = self
            .root
            .path()
            .join(format!("log-{:08x}", rand::random::<u32>()));
        *self.current.lock().expect("lock") = Some(path.clone());
        open(&Self::url(&path)).await.expect("open file://")
    }
    async fn replica(&self, log: &Log) -> Log {
        // One process holds a directory; replicas in it share the handle.
        log.clone()
    }
    async fn restart(&self, log: &Log) -> Option<Log> {
        let path = self.current.lock().expect("lock").clone()?;
        log.close().await.expect("close");
        Some(open(&Self::url(&path)).await.expect("reopen file://"))
    }
}

/// A real Iggy server: every log and replica is a connection of its own.
#[derive(Debug)]
pub struct Iggy {
    server: IggyServer,
}

impl Iggy {
    /// Logs on `server`.
    pub fn new(server: IggyServer) -> Self {
        Self { server }
    }
}

#[async_trait::async_trait]
impl Backend for Iggy {
    fn name(&self) -> &str {
        "iggy"
    }
    async fn log(&self) -> Log {
        open(&self.server.url()).await.expect("connect to iggy")
    }
    async fn replica(&self, _log: &Log) -> Log {
        open(&self.server.url()).await.expect("second connection")
    }
    async fn restart(&self, log: &Log) -> Option<Log> {
        log.close().await.expect("close");
        Some(open(&self.server.url()).await.expect("reconnect"))
    }
}
