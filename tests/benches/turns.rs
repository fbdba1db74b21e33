//! What a turn costs end to end: blocking `SendMessage` (latency, and throughput with many
//! clients) through a bridge and a worker in one process, and `returnImmediately` throughput
//! of a bridge alone (no worker taking the machine's other core).
//!
//! Only the public API that every release has (`log::open`, `Bridge`, `Worker`, `handler_fn`),
//! so the same file builds against an earlier commit and the two binaries can run side by side
//! (see `benches/README.md`, "Claims"). `TURNS_BENCH_ROUNDS` (default 1) repeats every case;
//! `TURNS_BENCH_FILTER=<text>` runs only the cases whose name holds it (to profile one); each
//! result is one tab-separated line: `case  tasks/s  p50 µs  p99 µs  CPU µs per task` (the
//! whole process's CPU, every thread: steadier than the rate on a shared machine).
//!
//! `cargo bench -p agentlog-integration --bench turns`
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use agentlog::Caller;
use agentlog::bridge::{Bridge, BridgeConfig};
use agentlog::worker::{TaskContext, Worker, WorkerConfig, handler_fn};
use agentlog_integration::bridge_suite::request;
use hdrhistogram::Histogram;

fn main() {
    agentlog_integration::bench::block_on(run());
}

async fn run() {
    let rounds: usize = agentlog_integration::bench::env_number("TURNS_BENCH_ROUNDS", 1);
    for round in 0..rounds {
        for (log, url) in [("memory", None), ("file", Some(()))] {
            let dir = tempfile::tempdir().unwrap();
            let url = match url {
                None => "memory://".to_owned(),
                Some(()) => format!("file://{}", dir.path().display()),
            };
            let agent = format!("b{round}");
            let log_handle = agentlog::log::open(&url).await.unwrap();
            let alone = Bridge::open(log_handle.clone(), BridgeConfig::new(&format!("i{round}")))
                .await
                .unwrap();
            for (case, clients, each) in [
                ("returnImmediately, 1 client", 1, 10_000),
                ("returnImmediately, 64 clients", 64, 500),
            ] {
                sends(&alone, &format!("{log} {case}"), clients, each, true).await;
            }
            let bridge = Bridge::open(log_handle.clone(), BridgeConfig::new(&agent))
                .await
                .unwrap();
            let worker = Worker::start(
                log_handle.clone(),
                WorkerConfig::new(&agent),
                handler_fn(|task: TaskContext| async move {
                    let text = task.text();
                    task.complete(Some(&text)).await?;
                    Ok(())
                }),
            )
            .await
            .unwrap();
            for (case, clients, each) in [
                ("blocking, 1 client", 1, 2_000),
                ("blocking, 32 clients", 32, 200),
            ] {
                sends(&bridge, &format!("{log} {case}"), clients, each, false).await;
            }
            worker.shutdown().await.unwrap();
            log_handle.close().await.unwrap();
        }
    }
}

/// `clients` concurrent clients, each sending `each` messages one after the other, blocking
/// (answered once the worker completed the task) or with `returnImmediately`.
async fn sends(bridge: &Bridge, case: &str, clients: usize, each: usize, immediately: bool) {
    if std::env::var("TURNS_BENCH_FILTER").is_ok_and(|only| !case.contains(&only)) {
        return;
    }
    let started = Instant::now();
    let cpu = agentlog_integration::bench::process_cpu_time();
    let runs = (0..clients).map(|c| {
        let bridge = bridge.clone();
        let case = case.to_owned();
        tokio::spawn(async move {
            let mut hist = Histogram::<u64>::new(3).unwrap();
            for i in 0..each {
                let sent = Instant::now();
                let id = format!("{case}-{c}-{i}");
                bridge
                    .send_message(&Caller::anonymous(), request(&id, "ping", immediately))
                    .await
                    .unwrap();
                hist.record(sent.elapsed().as_micros() as u64).unwrap();
            }
            hist
        })
    });
    let mut hist = Histogram::<u64>::new(3).unwrap();
    for run in futures::future::join_all(runs).await {
        hist.add(run.unwrap()).unwrap();
    }
    report(case, clients * each, started, cpu, &hist);
}

fn report(
    case: &str,
    tasks: usize,
    started: Instant,
    cpu: Option<std::time::Duration>,
    hist: &Histogram<u64>,
) {
    let elapsed = started.elapsed();
    let cpu_per_task = match (cpu, agentlog_integration::bench::process_cpu_time()) {
        (Some(before), Some(after)) => (after - before).as_secs_f64() * 1e6 / tasks as f64,
        _ => f64::NAN,
    };
    println!(
        "{case}\t{:.0}\t{}\t{}\t{cpu_per_task:.1}",
        tasks as f64 / elapsed.as_secs_f64(),
        hist.value_at_quantile(0.5),
        hist.value_at_quantile(0.99)
    );
}
