//! The log conformance suite on the embedded backend: `memory://` and `file://` (tempdir),
//! bare and under every layer (nothing armed: a layer must not change what the log does).

use agentlog::log::layers::{
    FaultLayer, Faults, LogMetrics, LogOp, MetricsLayer, RetryLayer, TracingLayer,
};
use agentlog::log::{Log, open};
use agentlog_integration::conformance::{Subject, run_all};

struct Memory;

#[async_trait::async_trait]
impl Subject for Memory {
    fn name(&self) -> &str {
        "memory"
    }
    async fn open(&self) -> Log {
        open("memory://").await.expect("open memory://")
    }
    fn can_reopen(&self) -> bool {
        false
    }
}

/// A temporary directory; `query` adds URL options (`?segment_bytes=4096`: segments small
/// enough for the suite to roll and delete some).
struct Dir {
    dir: tempfile::TempDir,
    query: &'static str,
}

impl Dir {
    fn new(query: &'static str) -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
            query,
        }
    }
}

#[async_trait::async_trait]
impl Subject for Dir {
    fn name(&self) -> &str {
        if self.query.is_empty() {
            "file"
        } else {
            "file, small segments"
        }
    }
    async fn open(&self) -> Log {
        let url = format!("file://{}{}", self.dir.path().display(), self.query);
        // The directory's lock belongs to the open file, and a child another test of this
        // process forks holds a copy of it until its exec: a reopen right after a close may
        // find it held for that moment.
        let mut tries = 0;
        loop {
            match open(&url).await {
                Err(error) if error.kind() == agentlog::ErrorKind::Config && tries < 100 => {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                opened => return opened.expect("open file://"),
            }
        }
    }
    fn can_reopen(&self) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_memory_conforms() {
    run_all(&Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_file_conforms() {
    run_all(&Dir::new("")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_file_with_small_segments_conforms() {
    run_all(&Dir::new("?segment_bytes=4096")).await;
}

/// A subject under the whole stack of layers, innermost first: faults, tracing, metrics,
/// retries.
struct Layered<S> {
    under: S,
    metrics: LogMetrics,
}

impl<S> Layered<S> {
    fn new(under: S) -> Self {
        Self {
            under,
            metrics: LogMetrics::new(),
        }
    }
}

#[async_trait::async_trait]
impl<S: Subject> Subject for Layered<S> {
    fn name(&self) -> &str {
        self.under.name()
    }
    async fn open(&self) -> Log {
        self.under
            .open()
            .await
            .layer(FaultLayer::new(Faults::new()))
            .layer(TracingLayer::new())
            .layer(MetricsLayer::new(self.metrics.clone()))
            .layer(RetryLayer::new())
    }
    fn can_reopen(&self) -> bool {
        self.under.can_reopen()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_memory_under_every_layer_conforms() {
    let layered = Layered::new(Memory);
    run_all(&layered).await;
    // The suite went through the stack.
    assert!(layered.metrics.successes(LogOp::AppendAll) > 0);
    assert!(layered.metrics.successes(LogOp::Poll) > 0);
    // Addressing a partition went through every layer, not around it.
    assert!(layered.metrics.successes(LogOp::AppendTo) > 0);
    assert!(layered.metrics.successes(LogOp::EndOffset) > 0);
    assert!(
        layered
            .metrics
            .errors(LogOp::AppendTo, agentlog::ErrorKind::InvalidParams)
            > 0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_file_under_every_layer_conforms() {
    let layered = Layered::new(Dir::new("?segment_bytes=4096"));
    run_all(&layered).await;
    assert!(layered.metrics.successes(LogOp::ReadAt) > 0);
    // The deletions went through every layer too.
    assert!(layered.metrics.successes(LogOp::Segments) > 0);
    assert!(layered.metrics.successes(LogOp::DeleteSegments) > 0);
}
