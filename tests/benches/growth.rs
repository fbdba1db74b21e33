//! Benchmark: the view growing from 0 to 1,000,000 tasks (latency of the requests served
//! meanwhile), and the disk a log keeps after 1,000,000 short tasks with a one-minute retention.
//!
//! `cargo bench -p agentlog-integration --bench growth`
//! (`GROWTH_BENCH=latency|disk` runs one part; `GROWTH_TASKS=<n>` sets the task count,
//! 1,000,000 by default; `GROWTH_CHECKPOINT_S=<s>` the checkpoint interval, 10 by default, 0
//! for none; `GROWTH_CLIENT=task|main` where the client loop runs, `task` by default.)
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentlog::bridge::{Bridge, BridgeConfig};
use agentlog::view::CompactTopics;
use agentlog::{AgentTopics, Caller};
use agentlog_integration::bench::{block_on, task_id, write_tasks_from, write_tasks_with};
use agentlog_wire::a2a::{GetTaskRequest, ListTasksRequest};
use hdrhistogram::Histogram;

fn main() {
    block_on(run());
}

fn tasks() -> usize {
    agentlog_integration::bench::env_number("GROWTH_TASKS", 1_000_000)
}

fn wants(part: &str) -> bool {
    std::env::var("GROWTH_BENCH").map_or(true, |only| only == part)
}

async fn run() {
    if wants("latency") {
        latency().await;
    }
    if wants("disk") {
        disk().await;
    }
}

/// One writer appends tasks (as bridges and workers would, paced) while one client reads tasks
/// already written (GetTask) and lists (ListTasks), each request waiting for the view to
/// catch up with the log's end first (read-your-writes); a checkpoint every 10 s.
async fn latency() {
    let total = tasks();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}?fsync=never", dir.path().display());
    let log = agentlog::log::open(&url).await.unwrap();
    let topics = AgentTopics::of("bench");
    let mut config = BridgeConfig::new("bench");
    // `GROWTH_CHECKPOINT_S=0` writes no checkpoint, to tell their pauses from the rest.
    let every: u64 = agentlog_integration::bench::env_number("GROWTH_CHECKPOINT_S", 10);
    config.checkpoint_every = (every > 0).then(|| Duration::from_secs(every));
    let bridge = Bridge::open(log.clone(), config).await.unwrap();
    let written = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let now = agentlog::retention::now_ms();
    let writer = {
        let (log, topics, written, done) =
            (log.clone(), topics.clone(), written.clone(), done.clone());
        tokio::spawn(async move {
            // `GROWTH_RATE=<tasks/s>` paces the writer (20,000 by default; 0 = as fast as it
            // can: the view then lags behind it, and every read waits for it to catch up).
            let rate: u64 = agentlog_integration::bench::env_number("GROWTH_RATE", 20_000);
            let step = 1_000;
            let began = Instant::now();
            for first in (0..total).step_by(step) {
                write_tasks_from(&log, &topics, first, step.min(total - first), now).await;
                written.store(first + step, Ordering::Release);
                if rate > 0 {
                    let due = Duration::from_secs_f64((first + step) as f64 / rate as f64);
                    if let Some(ahead) = due.checked_sub(began.elapsed()) {
                        tokio::time::sleep(ahead).await;
                    }
                }
            }
            done.store(true, Ordering::Release);
        })
    };
    let client = {
        let (bridge, written, done) = (bridge.clone(), written.clone(), done.clone());
        async move { client(&bridge, &written, &done, total).await }
    };
    // The client runs as a task on the runtime's two threads, as a server's request handlers
    // do. `GROWTH_CLIENT=main` runs it on the thread that started the runtime instead: a third
    // busy thread on two cores, whose tail is mostly the kernel's run queue (a 6 ms ListTasks
    // with 0.05 ms of CPU, read from /proc/thread-self/schedstat).
    let on_main = std::env::var("GROWTH_CLIENT").as_deref() == Ok("main");
    let (get, list, grew) = if on_main {
        client.await
    } else {
        tokio::spawn(client).await.unwrap()
    };
    writer.await.unwrap();
    let client = if on_main {
        "main thread"
    } else {
        "runtime task"
    };
    report(total, every, client, grew, &get, &list);
    log.close().await.unwrap();
}

async fn client(
    bridge: &Bridge,
    written: &AtomicUsize,
    done: &AtomicBool,
    total: usize,
) -> (Histogram<u64>, Histogram<u64>, Duration) {
    let caller = Caller::principal("bench");
    let mut get = Histogram::<u64>::new(3).unwrap();
    let mut list = Histogram::<u64>::new(3).unwrap();
    let mut seed = 0x9e37_79b9_u64;
    let started = Instant::now();
    while !done.load(Ordering::Acquire) {
        let known = written.load(Ordering::Acquire).min(total);
        if known == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        }
        for _ in 0..20 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let request = GetTaskRequest {
                tenant: None,
                id: task_id((seed % known as u64) as usize),
                history_length: None,
            };
            let at = Instant::now();
            bridge.get_task(&caller, request).await.unwrap();
            get.record(at.elapsed().as_nanos() as u64).unwrap();
        }
        let at = Instant::now();
        bridge
            .list_tasks(&caller, ListTasksRequest::default())
            .await
            .unwrap();
        list.record(at.elapsed().as_nanos() as u64).unwrap();
    }
    (get, list, started.elapsed())
}

fn report(
    total: usize,
    every: u64,
    client: &str,
    grew: Duration,
    get: &Histogram<u64>,
    list: &Histogram<u64>,
) {
    let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1e6;
    println!(
        "## Requests while the view grows from 0 to {total} tasks ({:.0} s, {} records/s; file://; a checkpoint every {every} s, 0 = none; client on a {client})\n",
        grew.as_secs_f64(),
        (total * 4) as f64 / grew.as_secs_f64()
    );
    println!("| request | count | p50 ms | p99 ms | p99.99 ms | max ms |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (name, h) in [("GetTask", get), ("ListTasks", list)] {
        println!(
            "| {name} | {} | {:.3} | {:.3} | {:.3} | {:.3} |",
            h.len(),
            ms(h, 0.5),
            ms(h, 0.99),
            ms(h, 0.9999),
            h.max() as f64 / 1e6
        );
    }
    println!();
}

/// 1,000,000 finished tasks with a one-minute retention, then the retention passes: how
/// many segments are left once the bridge has checkpointed and compacted.
async fn disk() {
    let total = tasks();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}?fsync=never&retention=1m", dir.path().display());
    let log = agentlog::log::open(&url).await.unwrap();
    let topics = AgentTopics::of("bench");
    let mut config = BridgeConfig::new("bench");
    config.checkpoint_every = None;
    let bridge = Bridge::open(log.clone(), config).await.unwrap();
    let now = agentlog::retention::now_ms();
    write_short_tasks(&log, &topics, total, now).await;
    let segments = |topic: agentlog::log::TopicRef| {
        let log = log.clone();
        async move {
            let mut per = Vec::new();
            for partition in 0..AgentTopics::of("bench").partitions {
                let sealed = log.segments(&topic, partition).await.unwrap();
                per.push((
                    sealed.len() + 1,
                    sealed.iter().map(|s| s.bytes).sum::<u64>(),
                ));
            }
            per
        }
    };
    bridge
        .view()
        .sync(None, Duration::from_secs(600))
        .await
        .unwrap();
    let before = segments(topics.events.clone()).await;
    let disk_before = dir_bytes(dir.path());
    // Past the retention of the last task (every record is timestamped `now`).
    let last_expiry = now + 60_000;
    let wait = last_expiry.saturating_sub(agentlog::retention::now_ms());
    tokio::time::sleep(Duration::from_millis(wait + 1_000)).await;
    let view = bridge.view();
    view.expire_now();
    view.checkpoint().await.unwrap();
    view.checkpoint().await.unwrap();
    let started = Instant::now();
    let compacted = view
        .compact(Some(&CompactTopics {
            commands: topics.commands.clone(),
            commands_retention_ms: 60_000,
        }))
        .await
        .unwrap();
    let took = started.elapsed();
    let after = segments(topics.events.clone()).await;
    println!(
        "## Disk after {total} short tasks with a one-minute retention (file://, 64 MiB segments)\n"
    );
    println!(
        "| | segments per partition (with the active one) | events bytes | directory bytes | tasks in the view |"
    );
    println!("| --- | --- | --- | --- | --- |");
    let show = |per: &[(usize, u64)]| {
        per.iter()
            .map(|(n, _)| n.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let bytes = |per: &[(usize, u64)]| per.iter().map(|(_, b)| *b).sum::<u64>();
    println!(
        "| written | {} | {:.1} MB (sealed) | {:.1} MB | {} |",
        show(&before),
        bytes(&before) as f64 / 1e6,
        disk_before as f64 / 1e6,
        total
    );
    println!(
        "| retention passed, compacted ({} segments in {:.2} s) | {} | {:.1} MB (sealed) | {:.1} MB | {} |\n",
        compacted.segments,
        took.as_secs_f64(),
        show(&after),
        bytes(&after) as f64 / 1e6,
        dir_bytes(dir.path()) as f64 / 1e6,
        view.task_count()
    );
    log.close().await.unwrap();
}

/// `count` finished tasks with a one-minute retention, written now.
async fn write_short_tasks(log: &agentlog::log::Log, topics: &AgentTopics, count: usize, now: u64) {
    use agentlog_wire::RecordBody;
    write_tasks_with(log, topics, 0..count, move |t| {
        let mut records = agentlog_integration::bench::task_records(t, now);
        for record in &mut records {
            if let RecordBody::Command { retention_ms, .. } = &mut record.body {
                *retention_ms = 60_000;
            }
            // Every task expires a minute from now.
            record.header.timestamp_ms = now;
        }
        records
    })
    .await;
}

fn dir_bytes(path: &std::path::Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            total += if meta.is_dir() {
                dir_bytes(&entry.path())
            } else {
                meta.len()
            };
        }
    }
    total
}
