//! Benchmark of the embedded log: append throughput per fsync policy and batch size, and
//! follow latency (append → follower woken). Prints a table; see `benches/README.md`.
//!
//! `cargo bench -p agentlog-integration --bench log_embedded`
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use agentlog::log::embedded::{EmbeddedLog, EmbeddedOptions, FsyncPolicy};
use agentlog::log::{Follower, Log, TopicRef, partition_for_key};
use bytes::Bytes;
use hdrhistogram::Histogram;

const RECORD_BYTES: usize = 100;
/// Wall time each throughput case runs for (after a short warm-up).
const CASE_TIME: Duration = Duration::from_millis(1200);
const FOLLOW_SAMPLES: usize = 3000;

#[derive(Clone, Copy)]
enum Backend {
    Memory,
    File(FsyncPolicy),
}

impl Backend {
    fn label(self) -> String {
        match self {
            Backend::Memory => "memory://".into(),
            Backend::File(FsyncPolicy::Always) => "file, Always".into(),
            Backend::File(FsyncPolicy::Interval(d)) => {
                format!("file, Interval({}ms)", d.as_millis())
            }
            Backend::File(FsyncPolicy::Never) => "file, Never".into(),
        }
    }

    fn open(self, dir: &tempfile::TempDir) -> Log {
        match self {
            Backend::Memory => Log::new(EmbeddedLog::in_memory()),
            Backend::File(fsync) => Log::new(
                EmbeddedLog::open(
                    dir.path().to_path_buf(),
                    EmbeddedOptions::default().fsync(fsync),
                )
                .unwrap(),
            ),
        }
    }
}

fn main() {
    agentlog_integration::bench::block_on(run());
}

async fn run() {
    let backends = [
        Backend::Memory,
        Backend::File(FsyncPolicy::Never),
        Backend::File(FsyncPolicy::Interval(Duration::from_millis(100))),
        Backend::File(FsyncPolicy::Always),
    ];
    println!("append throughput ({RECORD_BYTES}-byte records, each case ~{CASE_TIME:?})");
    println!(
        "| {:<22} | {:>5} | {:>9} | {:>12} | {:>8} | {:>10} |",
        "backend", "batch", "appenders", "records/s", "MB/s", "batches/s"
    );
    println!(
        "|{:-<24}|{:->7}|{:->11}|{:->14}|{:->10}|{:->12}|",
        "", "", "", "", "", ""
    );
    for backend in backends {
        for batch in [1usize, 100, 1000] {
            for appenders in [1usize, 4] {
                let (records, elapsed) = throughput(backend, batch, appenders).await;
                let rate = records as f64 / elapsed.as_secs_f64();
                println!(
                    "| {:<22} | {:>5} | {:>9} | {:>12.0} | {:>8.1} | {:>10.0} |",
                    backend.label(),
                    batch,
                    appenders,
                    rate,
                    rate * RECORD_BYTES as f64 / 1e6,
                    rate / batch as f64
                );
            }
        }
    }
    println!();
    println!(
        "follow latency (append of 1 record → follower woken with it), {FOLLOW_SAMPLES} samples"
    );
    println!(
        "| {:<22} | {:>9} | {:>9} | {:>9} | {:>9} |",
        "backend", "p50 µs", "p99 µs", "p99.9 µs", "max µs"
    );
    println!(
        "|{:-<24}|{:->11}|{:->11}|{:->11}|{:->11}|",
        "", "", "", "", ""
    );
    for backend in backends {
        let h = follow_latency(backend).await;
        println!(
            "| {:<22} | {:>9} | {:>9} | {:>9} | {:>9} |",
            backend.label(),
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.99),
            h.value_at_quantile(0.999),
            h.max()
        );
    }
}

/// `appenders` tasks append `batch`-record batches to their own partition for `CASE_TIME`.
async fn throughput(backend: Backend, batch: usize, appenders: usize) -> (u64, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let log = backend.open(&dir);
    let topic = TopicRef::new("bench", "t");
    log.ensure_topic(&topic, 4).await.unwrap();
    let record = Bytes::from(vec![b'x'; RECORD_BYTES]);
    let keys = keys_per_partition(4);
    // Warm-up: page in the code paths and the first segment.
    for _ in 0..10 {
        log.append(&topic, keys[0].as_bytes(), vec![record.clone(); batch])
            .await
            .unwrap();
    }
    let started = Instant::now();
    let deadline = started + CASE_TIME;
    let mut tasks = Vec::new();
    for a in 0..appenders {
        let (log, topic, record) = (log.clone(), topic.clone(), record.clone());
        let key = keys[a % keys.len()].clone();
        tasks.push(tokio::spawn(async move {
            let mut records = 0u64;
            while Instant::now() < deadline {
                // Building the batch is part of the cost a caller pays.
                let payloads = vec![record.clone(); batch];
                log.append(&topic, key.as_bytes(), payloads).await.unwrap();
                records += batch as u64;
            }
            records
        }));
    }
    let mut records = 0;
    for task in tasks {
        records += task.await.unwrap();
    }
    let elapsed = started.elapsed();
    log.close().await.unwrap();
    (records, elapsed)
}

/// One appender, one follower; each append waits for the follower to report the record.
async fn follow_latency(backend: Backend) -> Histogram<u64> {
    let dir = tempfile::tempdir().unwrap();
    let log = backend.open(&dir);
    let topic = TopicRef::new("bench", "follow");
    log.ensure_topic(&topic, 1).await.unwrap();
    let mut follower = Follower::new(log.clone(), topic.clone(), 0, 0)
        .await
        .unwrap();
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let follow = tokio::spawn(async move {
        for _ in 0..FOLLOW_SAMPLES {
            let got = follower.next_batch().await.unwrap();
            let now = Instant::now();
            for _ in got {
                seen_tx.send(now).unwrap();
            }
        }
    });
    let mut h = Histogram::<u64>::new(3).unwrap();
    let record = Bytes::from(vec![b'x'; RECORD_BYTES]);
    for _ in 0..FOLLOW_SAMPLES {
        let sent = Instant::now();
        log.append(&topic, b"k", vec![record.clone()])
            .await
            .unwrap();
        let seen = seen_rx.recv().await.unwrap();
        h.record(seen.duration_since(sent).as_micros() as u64)
            .unwrap();
    }
    follow.await.unwrap();
    log.close().await.unwrap();
    h
}

fn keys_per_partition(partitions: u32) -> Vec<String> {
    (0..partitions)
        .map(|p| {
            (0u64..)
                .map(|i| format!("key-{i}"))
                .find(|k| partition_for_key(k.as_bytes(), partitions) == p)
                .unwrap()
        })
        .collect()
}
