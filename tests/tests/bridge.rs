//! The bridge suite on every backend: `memory://`, `file://` and, when an `iggy-server`
//! binary is found, Apache Iggy; and on `memory://` whose reads return one record at a time.

use std::path::PathBuf;
use std::sync::Mutex;

use agentlog::log::layers::{FaultLayer, Faults};
use agentlog::log::{Log, open};
use agentlog_integration::bridge_suite::{Backend, run_all};
use agentlog_integration::iggy_server::IggyServer;

struct Memory;

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
struct ShortReads;

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

/// One temporary directory per log; a restart closes the log and opens its directory again.
struct Dir {
    root: tempfile::TempDir,
    current: Mutex<Option<PathBuf>>,
}

impl Dir {
    fn url(path: &std::path::Path) -> String {
        format!("file://{}", path.display())
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

struct Iggy {
    server: IggyServer,
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridge_on_memory() {
    run_all(&Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridge_on_memory_with_short_reads() {
    run_all(&ShortReads).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridge_on_file() {
    let root = tempfile::tempdir().expect("tempdir");
    run_all(&Dir {
        root,
        current: Mutex::new(None),
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridge_on_iggy() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    run_all(&Iggy { server }).await;
}
