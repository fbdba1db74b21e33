//! The push sender on every backend (`agentlog_integration::push_suite`): `memory://`,
//! `file://` and, when an `iggy-server` binary is found, Apache Iggy.

use agentlog_integration::backends::{Dir, Iggy, Memory};
use agentlog_integration::iggy_server::IggyServer;
use agentlog_integration::push_suite::run_all;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_on_memory() {
    run_all(&Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_on_file() {
    run_all(&Dir::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_on_iggy() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    run_all(&Iggy::new(server)).await;
}
