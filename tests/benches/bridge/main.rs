//! Benchmark of the A2A bridge on the embedded log: GetTask against log length (with the
//! memory floor beside it, `bridge/floor.rs`), the blocking round trip through a worker,
//! returnImmediately throughput, and the view's memory per task.
//! Prints a table; see `benches/README.md`.
//!
//! `cargo bench -p agentlog-integration --bench bridge`
//! (`BRIDGE_BENCH=get|round-trip|throughput|signing` runs one part; `BRIDGE_GET_REQUESTS=<n>`
//! sets the GetTask requests per case and round, 2,000 by default, e.g. more to profile.
//! `signing` compares signed records and a trust on against off in the same run: the
//! blocking round trip, returnImmediately throughput, and a view's replay.)
#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentlog::bridge::{Bridge, BridgeConfig};
use agentlog::log::Log;
use agentlog::log::embedded::{EmbeddedLog, EmbeddedOptions, FsyncPolicy};
use agentlog::view::TaskView;
use agentlog::worker::{Worker, WorkerConfig, handler_fn};
use agentlog::{AgentTopics, Caller};
use agentlog_integration::bench::{RECORDS_PER_TASK, task_id, write_finished_tasks};
use agentlog_integration::bridge_suite::request;
use agentlog_wire::TaskState;
use agentlog_wire::a2a::GetTaskRequest;
use hdrhistogram::Histogram;
use mimalloc::MiMalloc;

/// Counts live heap bytes, to measure what the view keeps per task, over mimalloc: the
/// allocator the `agentlog` binary and both bindings ship with, so the latencies are theirs.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { MiMalloc.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { MiMalloc.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    agentlog_integration::bench::block_on(run());
}

/// `BRIDGE_BENCH=get|round-trip|throughput|signing` runs one part; unset runs all.
fn wants(part: &str) -> bool {
    std::env::var("BRIDGE_BENCH").map_or(true, |only| only == part)
}

async fn run() {
    if wants("get") {
        get_task_part().await;
    }
    if wants("round-trip") {
        round_trip_part().await;
    }
    if wants("throughput") {
        throughput_part().await;
    }
    if wants("signing") {
        signing::part().await;
    }
}

async fn get_task_part() {
    println!("## GetTask against log length (file://, fsync Never for the setup)\n");
    let small = filled_log(1_000).await;
    let large = filled_log(1_000_000).await;
    println!(
        "| records in log | tasks | view catch-up | view bytes/task | log bytes/record (reopened) | release 2 of 4 partitions: tasks left, bytes freed | all 4 released: view bytes left |"
    );
    println!("|---|---|---|---|---|---|---|");
    for log in [&small, &large] {
        println!(
            "| {} | {} | {:.2} s | {} | {} | {}, {} ({:.0}%) | {} |",
            log.records,
            log.tasks,
            log.catch_up.as_secs_f64(),
            log.view_bytes_per_task,
            log.log_bytes_per_record,
            log.release.tasks_left,
            log.release.freed_half,
            100.0 * log.release.freed_half as f64
                / (log.view_bytes_per_task * log.tasks).max(1) as f64,
            log.release.left_after_all,
        );
    }
    // Two access patterns: the same 250 tasks in every log (spread evenly over it, so only
    // the log's length differs), and every task of the log uniformly (the working set grows
    // with the log too, so CPU caches start to miss).
    let mut cases = Vec::new();
    for log in [&small, &large] {
        let bridge = open_bridge(log).await;
        let spread: Vec<String> = (0..250).map(|i| task_id(i * log.tasks / 250)).collect();
        let all: Vec<String> = (0..log.tasks).map(task_id).collect();
        for (pattern, ids) in [("250 tasks", spread), ("all tasks", all)] {
            cases.push(GetCase {
                records: log.records,
                pattern,
                bridge: bridge.clone(),
                ids,
                next: 0,
                latency_ns: Histogram::<u64>::new(3).unwrap(),
            });
        }
    }
    // The memory floor over the same two logs' files (floor.rs), in the same rounds: two
    // dependent loads (one line, then the file), and five (today's chain, modelled).
    let floor_cases = [(&small, 1), (&large, 1), (&small, 4), (&large, 4)];
    let mut floors =
        floor_cases.map(|(log, hops)| floor::Floor::new(log.dir.path(), log.tasks, hops));
    // Rounds alternate the cases, so a slow spell of this shared machine hits them alike.
    let rounds = 10;
    let per_round: usize = agentlog_integration::bench::env_number("BRIDGE_GET_REQUESTS", 2_000);
    // Steady state, as in a bridge that has served for a while: a warm-up pass reads every
    // task of the pattern once (the log's pages are mapped, the caches as warm as they get).
    for case in &mut cases {
        let pass = case.ids.len();
        case.run(pass, false).await;
    }
    for floor in &mut floors {
        floor.warm();
    }
    for _ in 0..rounds {
        for case in &mut cases {
            case.run(per_round, true).await;
        }
        for floor in &mut floors {
            floor.run(per_round, true);
        }
    }
    println!(
        "\n{rounds} rounds of {per_round} GetTask requests per case, cases alternating, after a \
         warm-up pass over every task of the pattern:\n"
    );
    println!("| records in log | tasks read | GetTask p50 µs | p99 µs |");
    println!("|---|---|---|---|");
    for case in &cases {
        println!(
            "| {} | {} | {:.1} | {:.1} |",
            case.records,
            case.pattern,
            case.latency_ns.value_at_quantile(0.5) as f64 / 1000.0,
            case.latency_ns.value_at_quantile(0.99) as f64 / 1000.0
        );
    }
    let p50 = |i: usize| cases[i].latency_ns.value_at_quantile(0.5) as f64;
    println!(
        "\nGetTask p50 ratio 1M/1k: {:.2} reading the same 250 tasks, {:.2} reading every task (target ≤ 1.2)\n",
        p50(2) / p50(0),
        p50(3) / p50(1)
    );
    let floor_p50 = |i: usize| floors[i].latency_ns.value_at_quantile(0.5) as f64;
    println!(
        "The memory floor (one 64-byte line per task in memory, then one byte of the log's \
         mapped files where that line points; every task, same rounds):\n"
    );
    println!("| records in log | dependent loads | mapped MB | floor p50 ns | p99 ns |");
    println!("|---|---|---|---|---|");
    for ((log, hops), floor) in floor_cases.iter().zip(&floors) {
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.0} |",
            log.records,
            hops + 1,
            floor.mapped_bytes() as f64 / 1e6,
            floor.latency_ns.value_at_quantile(0.5) as f64,
            floor.latency_ns.value_at_quantile(0.99) as f64
        );
    }
    let extra = floor_p50(1) - floor_p50(0);
    let allowance = 0.2 * p50(1);
    println!(
        "\nEvery task: the floor's extra at 1M over 1k is {extra:.0} ns; a ratio of 1.2 allows \
         {allowance:.0} ns over GetTask's {:.0} ns at 1k ({}); five dependent loads: {:.0} ns \
         extra, GetTask {:.0} ns extra\n",
        p50(1),
        if extra > allowance {
            "the floor alone is over it"
        } else {
            "the floor leaves room"
        },
        floor_p50(3) - floor_p50(2),
        p50(3) - p50(1)
    );
}

/// Heap bytes freed by releasing half the view's partitions, and left once all are.
struct Released {
    tasks_left: usize,
    freed_half: usize,
    left_after_all: usize,
}

/// An events topic filled the way bridges and workers write it, closed again.
struct FilledLog {
    dir: tempfile::TempDir,
    records: usize,
    tasks: usize,
    catch_up: Duration,
    view_bytes_per_task: usize,
    /// What releasing partitions frees.
    release: Released,
    /// Heap bytes per record of the embedded log opened over it (its batch index, mostly).
    log_bytes_per_record: usize,
}

/// One access pattern over one log.
struct GetCase {
    records: usize,
    pattern: &'static str,
    bridge: Bridge,
    ids: Vec<String>,
    next: usize,
    latency_ns: Histogram<u64>,
}

impl GetCase {
    async fn run(&mut self, requests: usize, record: bool) {
        let caller = Caller::principal("bench");
        for _ in 0..requests {
            // A stride co-prime with the task counts visits every task in a scattered order.
            self.next = (self.next + 7919) % self.ids.len();
            let id = self.ids[self.next].clone();
            let started = Instant::now();
            let task = self
                .bridge
                .get_task(
                    &caller,
                    GetTaskRequest {
                        tenant: None,
                        id,
                        history_length: None,
                    },
                )
                .await
                .unwrap();
            if record {
                self.latency_ns
                    .record(started.elapsed().as_nanos() as u64)
                    .unwrap();
            }
            assert_eq!(task.status.state, TaskState::Completed);
        }
    }
}

async fn round_trip_part() {
    println!("## Blocking SendMessage round trip (bridge → worker → bridge), one client\n");
    println!("| log | samples | p50 µs | p99 µs | p99.9 µs |");
    println!("|---|---|---|---|---|");
    round_trip_case("memory://", Log::new(EmbeddedLog::in_memory())).await;
    let dir = tempfile::tempdir().unwrap();
    round_trip_case(
        "file:// (default: fsync every 100 ms)",
        file_log(&dir, None),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    round_trip_case(
        "file:// (fsync always)",
        file_log(&dir, Some(FsyncPolicy::Always)),
    )
    .await;
}

async fn throughput_part() {
    println!("\n## SendMessage with returnImmediately, in process\n");
    println!("| log | concurrent senders | tasks/s |");
    println!("|---|---|---|");
    for senders in [1, 64] {
        throughput_case("memory://", Log::new(EmbeddedLog::in_memory()), senders).await;
        let dir = tempfile::tempdir().unwrap();
        throughput_case(
            "file:// (default: fsync every 100 ms)",
            file_log(&dir, None),
            senders,
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        throughput_case(
            "file:// (fsync always)",
            file_log(&dir, Some(FsyncPolicy::Always)),
            senders,
        )
        .await;
    }
}

fn file_log(dir: &tempfile::TempDir, fsync: Option<FsyncPolicy>) -> Log {
    let mut options = EmbeddedOptions::default();
    if let Some(fsync) = fsync {
        options = options.fsync(fsync);
    }
    Log::new(EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap())
}

/// Fill an events topic with `records` records the way a bridge and workers write them (one
/// record per append, tasks interleaved), and measure a view's catch-up over it.
async fn filled_log(records: usize) -> FilledLog {
    let dir = tempfile::tempdir().unwrap();
    let log = file_log(&dir, Some(FsyncPolicy::Never));
    let topics = AgentTopics::of("bench");
    topics.ensure(&log).await.unwrap();
    let tasks = records / RECORDS_PER_TASK;
    write_finished_tasks(&log, &topics, tasks, 0).await;
    let before = LIVE.load(Ordering::Relaxed);
    let started = Instant::now();
    let view = TaskView::start(log.clone(), topics.events.clone())
        .await
        .unwrap();
    view.sync(None, Duration::from_secs(600)).await.unwrap();
    view.wait_caught_up().await;
    // The list index and the expiry order, built once the replay is done: counted too.
    view.expire_now();
    let catch_up = started.elapsed();
    let view_bytes = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    assert_eq!(view.task_count(), tasks);
    // Releasing partitions frees their tasks at once.
    let holding = LIVE.load(Ordering::Relaxed);
    for partition in [0, 1] {
        view.release(partition).await.unwrap();
    }
    let release_half = LIVE.load(Ordering::Relaxed);
    let tasks_left = view.task_count();
    for partition in [2, 3] {
        view.release(partition).await.unwrap();
    }
    let release = Released {
        tasks_left,
        freed_half: holding.saturating_sub(release_half),
        left_after_all: LIVE.load(Ordering::Relaxed).saturating_sub(before),
    };
    drop(view);
    log.close().await.unwrap();
    drop(log);
    let before = LIVE.load(Ordering::Relaxed);
    let reopened = EmbeddedLog::open(dir.path().to_path_buf(), EmbeddedOptions::default()).unwrap();
    let log_bytes = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    drop(reopened);
    FilledLog {
        dir,
        records,
        tasks,
        catch_up,
        view_bytes_per_task: view_bytes / tasks.max(1),
        release,
        log_bytes_per_record: log_bytes / records.max(1),
    }
}

/// A bridge over a filled log, reopened with the default options, its view caught up.
async fn open_bridge(filled: &FilledLog) -> Bridge {
    let log = Log::new(
        EmbeddedLog::open(filled.dir.path().to_path_buf(), EmbeddedOptions::default()).unwrap(),
    );
    let mut config = BridgeConfig::new("bench");
    // No checkpoint written in the middle of a measurement.
    config.checkpoint_every = None;
    let bridge = Bridge::open(log, config).await.unwrap();
    bridge
        .view()
        .sync(None, Duration::from_secs(600))
        .await
        .unwrap();
    bridge
}

async fn round_trip_case(label: &str, log: Log) {
    let hist = round_trip(log, BridgeConfig::new("rt"), WorkerConfig::new("rt"), 3_000).await;
    println!(
        "| {label} | {} | {} | {} | {} |",
        hist.len(),
        hist.value_at_quantile(0.5),
        hist.value_at_quantile(0.99),
        hist.value_at_quantile(0.999)
    );
}

/// `samples` blocking round trips (after 200 to warm up) through a bridge and a worker of
/// these configurations, in µs.
async fn round_trip(
    log: Log,
    config: BridgeConfig,
    worker_config: WorkerConfig,
    samples: usize,
) -> Histogram<u64> {
    let bridge = Bridge::open(log.clone(), config).await.unwrap();
    let worker = Worker::start(
        log.clone(),
        worker_config,
        handler_fn(|task: agentlog::worker::TaskContext| async move {
            let text = task.text();
            task.complete(Some(&text)).await?;
            Ok(())
        }),
    )
    .await
    .unwrap();
    let caller = Caller::anonymous();
    let mut hist = Histogram::<u64>::new(3).unwrap();
    for i in 0..samples + 200 {
        let started = Instant::now();
        let response = bridge
            .send_message(&caller, request(&format!("rt-{i}"), "ping", false))
            .await
            .unwrap();
        if i >= 200 {
            hist.record(started.elapsed().as_micros() as u64).unwrap();
        }
        let agentlog_wire::a2a::SendMessageResponse::Task(task) = response else {
            panic!()
        };
        assert_eq!(task.status.state, TaskState::Completed);
    }
    worker.shutdown().await.unwrap();
    hist
}

async fn throughput_case(label: &str, log: Log, senders: usize) {
    let rate = throughput(log, BridgeConfig::new("tp"), senders).await;
    println!("| {label} | {senders} | {rate:.0} |");
}

/// returnImmediately sends per second from `senders` concurrent senders.
async fn throughput(log: Log, config: BridgeConfig, senders: usize) -> f64 {
    let bridge = Bridge::open(log.clone(), config).await.unwrap();
    let caller = Caller::anonymous();
    let per_sender = if senders == 1 { 20_000 } else { 2_000 };
    let started = Instant::now();
    let runs = (0..senders).map(|s| {
        let bridge = bridge.clone();
        let caller = caller.clone();
        tokio::spawn(async move {
            for i in 0..per_sender {
                bridge
                    .send_message(&caller, request(&format!("tp-{s}-{i}"), "x", true))
                    .await
                    .unwrap();
            }
        })
    });
    for run in futures::future::join_all(runs).await {
        run.unwrap();
    }
    let total = senders * per_sender;
    total as f64 / started.elapsed().as_secs_f64()
}

mod floor;
mod signing;
