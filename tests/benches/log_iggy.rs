//! The Iggy backend against a real server that the bench starts itself:
//! - append throughput at batch sizes 1, 100 and 1000 (100-byte records), through our
//!   `IggyLog` and through the raw `iggy` client doing the same work in the same run (same
//!   topic settings, same key routing, one request in flight), with the ratio ours/raw;
//! - follow latency (append -> a `Follower` returns the record) through `watch_end` + `read`,
//!   on the appending handle (local bump) and on another handle (end-offset poller).
//!
//! Run with `cargo bench -p agentlog-integration --bench log_iggy`; prints SKIPPED without an
//! `iggy-server` binary (see `agentlog_integration::iggy_server`).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use agentlog::log::{Follower, Log, TopicRef};
use agentlog_integration::bench::median;
use agentlog_integration::iggy_server::IggyServer;
use bytes::Bytes;
use hdrhistogram::Histogram;
use iggy::prelude::{
    Client, Identifier, IggyClient, IggyClientBuilder, IggyMessage, MessageClient, Partitioning,
    StreamClient, TopicClient, TopicCreateOptions,
};

/// Size of every record.
const RECORD: usize = 100;
/// Keys the appends rotate over (routed by `XxHash32 % partitions` on both sides).
const KEYS: usize = 16;
/// Partitions of every bench topic.
const PARTITIONS: u32 = 4;
/// How long one measured run appends.
const RUN: Duration = Duration::from_secs(2);
/// Runs per side and batch size, alternating ours/raw; the median is reported.
const ROUNDS: usize = 5;
/// Follow-latency samples per path, and the pause between appends.
const SAMPLES: usize = 2000;
const PACE: Duration = Duration::from_millis(1);

fn main() {
    agentlog_integration::bench::block_on(run());
}

async fn run() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    let started = Instant::now();
    let keys: Vec<String> = (0..KEYS).map(|i| format!("task-{i}")).collect();
    let record = Bytes::from(vec![b'x'; RECORD]);

    println!(
        "append throughput, {RECORD}-byte records, {PARTITIONS} partitions, {KEYS} keys, median of {ROUNDS} x {RUN:?}"
    );
    println!(
        "{:>6} {:>14} {:>14} {:>10}",
        "batch", "ours rec/s", "raw rec/s", "ours/raw"
    );
    let log = agentlog::log::open(&server.url()).await.unwrap();
    let raw = raw_client(&server).await;
    for batch in [1usize, 100, 1000] {
        let ours_topic = TopicRef::new("bench", format!("ours-{batch}"));
        log.ensure_topic(&ours_topic, PARTITIONS).await.unwrap();
        let raw_topic = format!("raw-{batch}");
        create_raw_topic(&raw, &raw_topic).await;
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            ours.push(ours_throughput(&log, &ours_topic, &keys, &record, batch).await);
            theirs.push(raw_throughput(&raw, &raw_topic, &keys, &record, batch).await);
        }
        let (ours, theirs) = (median(ours), median(theirs));
        println!(
            "{batch:>6} {ours:>14.0} {theirs:>14.0} {:>10.3}",
            ours / theirs
        );
    }

    println!(
        "\nfollow latency (append -> Follower::next_batch returns it), {SAMPLES} records, one every {PACE:?}"
    );
    let same = follow_latency(&log, &log, "same-handle").await;
    let other = agentlog::log::open(&server.url()).await.unwrap();
    let remote = follow_latency(&log, &other, "other-handle").await;
    for (name, h) in [
        ("same handle (local bump)", same),
        ("other handle (poller)", remote),
    ] {
        println!(
            "{name:<26} p50 {:>6} us  p99 {:>6} us  max {:>6} us",
            h.value_at_quantile(0.50),
            h.value_at_quantile(0.99),
            h.max()
        );
    }
    println!("\ntotal bench time {:.1?}", started.elapsed());
}

async fn raw_client(server: &IggyServer) -> IggyClient {
    let client = IggyClientBuilder::new()
        .with_tcp()
        .with_server_address(server.address())
        .with_no_delay()
        .with_auto_sign_in(iggy::prelude::AutoLogin::Enabled(
            iggy::prelude::Credentials::UsernamePassword("iggy".into(), "iggy".to_owned().into()),
        ))
        .build()
        .unwrap();
    client.connect().await.unwrap();
    client
}

/// The raw client's topic, with the settings `ensure_topic` uses.
async fn create_raw_topic(raw: &IggyClient, topic: &str) {
    let stream = Identifier::named("bench-raw").unwrap();
    if raw.get_stream(&stream).await.unwrap().is_none() {
        raw.create_stream("bench-raw").await.unwrap();
    }
    let options = TopicCreateOptions {
        partitions_count: Some(PARTITIONS),
        messages_required_to_save: Some(1),
        enforce_fsync: Some(false),
        ..TopicCreateOptions::default()
    };
    raw.create_topic(&stream, topic, &options).await.unwrap();
}

async fn ours_throughput(
    log: &Log,
    topic: &TopicRef,
    keys: &[String],
    record: &Bytes,
    batch: usize,
) -> f64 {
    let started = Instant::now();
    let mut records = 0usize;
    let mut i = 0;
    while started.elapsed() < RUN {
        let key = keys[i % keys.len()].as_bytes();
        let payloads = vec![record.clone(); batch];
        log.append(topic, key, payloads).await.unwrap();
        records += batch;
        i += 1;
    }
    records as f64 / started.elapsed().as_secs_f64()
}

async fn raw_throughput(
    raw: &IggyClient,
    topic: &str,
    keys: &[String],
    record: &Bytes,
    batch: usize,
) -> f64 {
    let stream_id = Identifier::named("bench-raw").unwrap();
    let topic_id = Identifier::named(topic).unwrap();
    let started = Instant::now();
    let mut records = 0usize;
    let mut i = 0;
    while started.elapsed() < RUN {
        let key = keys[i % keys.len()].as_bytes();
        let mut messages: Vec<IggyMessage> = (0..batch)
            .map(|_| {
                IggyMessage::builder()
                    .payload(record.clone())
                    .build()
                    .unwrap()
            })
            .collect();
        raw.send_messages(
            &stream_id,
            &topic_id,
            &Partitioning::messages_key(key).unwrap(),
            &mut messages,
        )
        .await
        .unwrap();
        records += batch;
        i += 1;
    }
    records as f64 / started.elapsed().as_secs_f64()
}

/// Append `SAMPLES` records (each carrying its send time) through `writer`; a `Follower` on
/// `reader` measures when each one comes out.
async fn follow_latency(writer: &Log, reader: &Log, name: &str) -> Histogram<u64> {
    let topic = TopicRef::new("bench-follow", name);
    writer.ensure_topic(&topic, 1).await.unwrap();
    let base = Instant::now();
    let mut follower = Follower::new(reader.clone(), topic.clone(), 0, 0)
        .await
        .unwrap();
    let collector = tokio::spawn(async move {
        let mut histogram = Histogram::<u64>::new(3).unwrap();
        let mut seen = 0;
        while seen < SAMPLES {
            for record in follower.next_batch().await.unwrap() {
                let sent = u64::from_le_bytes(record.payload[..8].try_into().unwrap());
                let now = base.elapsed().as_micros() as u64;
                histogram.record(now.saturating_sub(sent)).unwrap();
                seen += 1;
            }
        }
        histogram
    });
    for _ in 0..SAMPLES {
        let mut payload = vec![0u8; RECORD];
        let sent = base.elapsed().as_micros() as u64;
        payload[..8].copy_from_slice(&sent.to_le_bytes());
        writer
            .append(&topic, b"k", vec![Bytes::from(payload)])
            .await
            .unwrap();
        tokio::time::sleep(PACE).await;
    }
    collector.await.unwrap()
}
