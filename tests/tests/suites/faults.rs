//! The fault suite on every backend: `memory://`, `file://` and, when an `iggy-server` binary
//! is found, Apache Iggy.

use agentlog_integration::backends::{Dir, Iggy, Memory};
use agentlog_integration::fault_suite::run_all;
use agentlog_integration::iggy_server::IggyServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_on_memory() {
    run_all(&Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_on_file() {
    run_all(&Dir::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_on_iggy() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    run_all(&Iggy::new(server)).await;
}
