//! The bridge suite on every backend: `memory://`, `file://` and, when an `iggy-server`
//! binary is found, Apache Iggy; and on `memory://` whose reads return one record at a time.

use agentlog_integration::backends::{Dir, Iggy, Memory, ShortReads};
use agentlog_integration::bridge_suite::run_all;
use agentlog_integration::iggy_server::IggyServer;

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
    run_all(&Dir::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridge_on_iggy() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    run_all(&Iggy::new(server)).await;
}
