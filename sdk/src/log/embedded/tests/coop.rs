//! Appends and reads give their thread back: a task looping over them lets other tasks of a
//! single-threaded runtime run during the loop, not only after it.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

fn topic() -> TopicRef {
    TopicRef::new("s", "t")
}

/// Spawn a task that only raises a flag, then run 1,000 appends and 1,000 reads without any
/// other await: whether the flag was up before the loop ended.
async fn other_task_ran_during_the_loop(log: &EmbeddedLog) -> bool {
    log.ensure_topic(&topic(), 1).await.unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let other = tokio::spawn(async move { flag.store(true, Ordering::Release) });
    let mut seen = false;
    for i in 0..1_000u64 {
        let payload = Bytes::from(format!("record-{i}"));
        log.append(&topic(), b"k", vec![payload]).await.unwrap();
        log.read(&topic(), 0, i, 1).await.unwrap();
        seen |= ran.load(Ordering::Acquire);
    }
    other.await.unwrap();
    seen
}

#[tokio::test(flavor = "current_thread")]
async fn memory_appends_and_reads_yield() {
    let log = EmbeddedLog::in_memory();
    assert!(other_task_ran_during_the_loop(&log).await);
}

#[tokio::test(flavor = "current_thread")]
async fn direct_file_appends_and_reads_yield() {
    let dir = tempfile::tempdir().unwrap();
    let options = EmbeddedOptions::default().fsync(FsyncPolicy::Never);
    let log = EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap();
    assert!(other_task_ran_during_the_loop(&log).await);
    log.close().await.unwrap();
}
