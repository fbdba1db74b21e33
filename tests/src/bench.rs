//! What the benchmarks share.

use std::future::Future;

/// Run a benchmark's `main` on the runtime every benchmark uses: tokio multi-thread with
/// 2 workers (the reference machine has 2 cores).
#[allow(clippy::expect_used)]
pub fn block_on<F: Future>(bench: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the benchmark")
        .block_on(bench)
}
