//! Child process of the SIGKILL takeover test (`tests/tests/turns.rs`): a worker that the
//! parent kills mid-turn.
//!
//! `turn_child <log url> <agent> <lease ms>` runs a worker whose handler streams
//! [`CHILD_CHUNKS`](agentlog_integration::streamer::CHILD_CHUNKS) chunks slowly, prints
//! `READY` once it has joined the worker group, and runs until killed.

use std::io::Write;
use std::time::Duration;

use agentlog::worker::{Worker, WorkerConfig};
use agentlog_integration::streamer::{CHILD_CHUNKS, Streamer};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let usage = "usage: turn_child <log url> <agent> <lease ms>";
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or(usage)?;
    let agent = args.next().ok_or(usage)?;
    let lease: u64 = args.next().ok_or(usage)?.parse()?;
    let log = agentlog::log::open(&url).await?;
    let mut config = WorkerConfig::new(&agent);
    config.lease = Duration::from_millis(lease);
    let _worker = Worker::start(
        log,
        config,
        Streamer::new(CHILD_CHUNKS, Duration::from_millis(200)),
    )
    .await?;
    println!("READY");
    std::io::stdout().flush()?;
    std::future::pending::<()>().await;
    Ok(())
}
