//! Child process of the crash test (`tests/tests/log_crash.rs`).
//!
//! `crash_child <dir> <round>` opens the embedded log in `<dir>` with `FsyncPolicy::Always`
//! and appends batches from several tasks until killed. After each acknowledged batch it
//! prints `ACK <partition> <first_offset> <count> <batch_id>` and flushes, so everything the
//! parent reads was acknowledged. Contents are a pure function of (batch id, index):
//! [`agentlog_integration::crash::record`].

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use agentlog::log::TopicRef;
use agentlog::log::embedded::{EmbeddedLog, EmbeddedOptions, FsyncPolicy};
use agentlog::log::raw::LogBackend;
use agentlog_integration::crash::{TASKS, batch_id, batch_len, record};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: crash_child <dir> <round>")?);
    let round: u64 = args
        .next()
        .ok_or("usage: crash_child <dir> <round>")?
        .parse()?;
    let options = EmbeddedOptions::default().fsync(FsyncPolicy::Always);
    let log = Arc::new(EmbeddedLog::open(dir, options)?);
    let topic = TopicRef::new("crash", "t");
    log.ensure_topic(&topic, 4).await?;
    println!("READY");
    std::io::stdout().flush()?;

    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let (log, topic) = (Arc::clone(&log), topic.clone());
        tasks.push(tokio::spawn(async move {
            for n in 0.. {
                let id = batch_id(round, task, n);
                let records = (0..batch_len(id)).map(|i| record(id, i)).collect();
                let key = format!("key-{}", id % 13);
                let appended = log.append(&topic, key.as_bytes(), records).await?;
                let mut out = std::io::stdout().lock();
                writeln!(
                    out,
                    "ACK {} {} {} {id}",
                    appended.partition, appended.first_offset, appended.count
                )?;
                out.flush()?;
            }
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}
