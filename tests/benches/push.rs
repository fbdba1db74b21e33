//! Push notifications end to end: notifications per second to a local receiver and the lag
//! from an update's making to its arrival (p50, p99), at 1 and 100 configs per task, agentlog's
//! sender beside a2a-python's (a2a-sdk 1.3.0's `BasePushNotificationSender`,
//! `push_python/sender.py`) under the same load, in one run, to the same receiver.
//!
//! - agentlog: a bridge and a sender (`Pusher`, defaults but `allow_private`), on mimalloc as
//!   in the `agentlog` command, on a `file://` log (`PUSH_BENCH_LOG=memory` for `memory://`);
//!   TASKS tasks, each with CONFIGS configs registered first, then a worker whose handler
//!   writes UPDATES artifact updates per task as fast as the log takes them, each carrying the
//!   time it was made. Every update is a record the sender reads from the log, then one POST
//!   per config.
//! - a2a-python: the same tasks, configs and updates held in its in-memory store, each task's
//!   updates awaited one after another (as its server sends them), all tasks at once.
//!
//! Throughput: the artifact notifications over the time from the first update's making to the
//! last arrival. Needs Python >= 3.10 and PyPI on the first run (the bench makes
//! `tests/benches/push_python/.venv` itself, a2a-sdk pinned by the interop constraints).
//!
//!     cargo bench -p agentlog-integration --bench push
//!     PUSH_BENCH_ROUNDS=3 PUSH_BENCH_LOG=memory cargo bench -p agentlog-integration --bench push
//!     PUSH_BENCH_CASES=2,3 PUSH_BENCH_PER_ENDPOINT=8 cargo bench ... --bench push  # some cases; a limit
//!     PUSH_BENCH_PEER=off cargo bench ... --bench push  # agentlog alone (profiling its CPU)
//!
//! CPU a notification: this process's CPU time (every thread: the worker writing the
//! updates, the log, the view, the sender and the receiver) from the worker's start to the
//! last arrival, over the notifications of that span; a figure the machine's other load
//! barely moves, unlike the rates and lags. The a2a-python sender runs in its own process:
//! its column is the receiver's share only, left blank.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agentlog::push::{Pusher, PusherConfig};
use agentlog::security::Destinations;
use agentlog::worker::{TaskContext, Worker, WorkerConfig, handler_fn};
use agentlog::{Bridge, BridgeConfig, Caller};
use agentlog_integration::push_receiver::{Got, Receiver};
use agentlog_wire::a2a::{Artifact, Part, SendMessageRequest};
use hdrhistogram::Histogram;
use serde_json::json;

/// One load: configs per task, tasks, updates per task, and the pause after each update of a
/// task (0: as fast as the sender takes them, for the throughput; else a paced load below
/// both senders' capacity, for the lag).
#[derive(Debug, Clone, Copy)]
struct Case {
    configs: usize,
    tasks: usize,
    updates: usize,
    interval_ms: u64,
}

const CASES: [Case; 4] = [
    // Throughput: 20,000 notifications, all at once.
    Case {
        configs: 1,
        tasks: 200,
        updates: 100,
        interval_ms: 0,
    },
    Case {
        configs: 100,
        tasks: 2,
        updates: 100,
        interval_ms: 0,
    },
    // Lag: 1,000 and 2,000 notifications a second for 2 s.
    Case {
        configs: 1,
        tasks: 100,
        updates: 20,
        interval_ms: 100,
    },
    Case {
        configs: 100,
        tasks: 2,
        updates: 20,
        interval_ms: 100,
    },
];

#[derive(Debug, Clone, Copy)]
struct Row {
    notifications: usize,
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// Per update: the lag of its first notification to arrive, and how long its last came
    /// after its first (the fan-out to its configs), p50 and p99.
    first_ms: (f64, f64),
    spread_ms: (f64, f64),
    /// This process's CPU microseconds a notification (agentlog's runs only).
    cpu_us: Option<f64>,
}

fn micros(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The artifact notifications among `got`, their throughput and lag.
fn measure(got: &[Got]) -> Row {
    let mut lags = Histogram::<u64>::new(3).expect("histogram");
    let mut first_made = u64::MAX;
    let mut last_arrival = 0;
    let mut notifications = 0;
    let mut updates: std::collections::HashMap<(String, u64), (u64, u64)> = Default::default();
    for got in got {
        let body = got.json();
        let Some(made) = body
            .pointer("/artifactUpdate/artifact/parts/0/text")
            .and_then(|t| t.as_str())
            .and_then(|t| t.parse::<u64>().ok())
        else {
            continue;
        };
        let arrived = micros(got.wall);
        notifications += 1;
        first_made = first_made.min(made);
        last_arrival = last_arrival.max(arrived);
        lags.record(arrived.saturating_sub(made)).expect("record");
        let task = body
            .pointer("/artifactUpdate/taskId")
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_owned();
        let span = updates.entry((task, made)).or_insert((arrived, arrived));
        span.0 = span.0.min(arrived);
        span.1 = span.1.max(arrived);
    }
    let mut first = Histogram::<u64>::new(3).expect("histogram");
    let mut spread = Histogram::<u64>::new(3).expect("histogram");
    for ((_, made), (earliest, latest)) in &updates {
        first
            .record(earliest.saturating_sub(*made))
            .expect("record");
        spread.record(latest - earliest).expect("record");
    }
    let ms = |h: &Histogram<u64>, q| h.value_at_quantile(q) as f64 / 1000.0;
    let secs = (last_arrival.saturating_sub(first_made)) as f64 / 1e6;
    Row {
        notifications,
        per_second: notifications as f64 / secs.max(1e-9),
        p50_ms: lags.value_at_quantile(0.5) as f64 / 1000.0,
        p99_ms: lags.value_at_quantile(0.99) as f64 / 1000.0,
        first_ms: (ms(&first, 0.5), ms(&first, 0.99)),
        spread_ms: (ms(&spread, 0.5), ms(&spread, 0.99)),
        cpu_us: None,
    }
}

async fn wait_for(receiver: &Receiver, count: usize) {
    let got = receiver.wait_until(count, Duration::from_secs(300)).await;
    assert!(got >= count, "only {got} of {count} notifications");
}

async fn agentlog(case: Case, memory: bool, per_endpoint: Option<usize>) -> Row {
    let Case {
        configs,
        tasks,
        updates,
        interval_ms,
    } = case;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = if memory {
        "memory://".to_owned()
    } else {
        format!("file://{}", dir.path().display())
    };
    let log = agentlog::log::open(&url).await.expect("log");
    let open = Destinations::new().allow_private(true);
    let bridge = Bridge::open(log.clone(), BridgeConfig::new("bench").push(open.clone()))
        .await
        .expect("bridge");
    let mut config = PusherConfig::new("bench").destinations(open);
    if let Some(limit) = per_endpoint {
        config.per_endpoint = limit;
    }
    let pusher = Pusher::start_with_view(log.clone(), config, bridge.view().clone())
        .await
        .expect("pusher");
    let receiver = Receiver::start(200).await;
    let caller = Caller::anonymous();
    for t in 0..tasks {
        let request: SendMessageRequest = serde_json::from_value(json!({
            "message": {"messageId": format!("b-{t}"), "role": "ROLE_USER", "parts": [{"text": "go"}]},
            "configuration": {"returnImmediately": true,
                "taskPushNotificationConfig": {"id": "c0", "url": receiver.url("/agentlog/0")}}}))
        .expect("request");
        let answer = bridge.send_message(&caller, request).await.expect("send");
        let agentlog_wire::a2a::SendMessageResponse::Task(task) = answer else {
            panic!("no task");
        };
        for c in 1..configs {
            let config = serde_json::from_value(json!({
                "taskId": task.id, "id": format!("c{c}"), "url": receiver.url(&format!("/agentlog/{c}"))}))
            .expect("config");
            bridge
                .create_push_config(&caller, config)
                .await
                .expect("config");
        }
    }
    // Every config's first notification (the task as registered) before the updates start.
    wait_for(&receiver, tasks * configs).await;
    let cpu_before = agentlog_integration::bench::process_cpu_time();
    let worker = Worker::start(
        log.clone(),
        WorkerConfig::new("bench").view(bridge.view().clone()),
        handler_fn(move |task: TaskContext| async move {
            for u in 0..updates {
                let artifact = Artifact {
                    artifact_id: format!("a{u}"),
                    name: None,
                    description: None,
                    parts: vec![Part::text(micros(SystemTime::now()).to_string())],
                    metadata: None,
                    extensions: Vec::new(),
                };
                task.artifact(artifact, false, false).await?;
                if interval_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(interval_ms)).await;
                }
            }
            task.complete(None).await?;
            Ok(())
        }),
    )
    .await
    .expect("worker");
    // Snapshot, working, the updates, the end: per config of every task.
    wait_for(&receiver, tasks * configs * (updates + 3)).await;
    let cpu = agentlog_integration::bench::process_cpu_time()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    let mut row = measure(&receiver.got());
    // Working, the updates and the end: what came after the worker started.
    let told = tasks * configs * (updates + 2);
    row.cpu_us = cpu.map(|cpu| cpu.as_secs_f64() * 1e6 / told as f64);
    worker.shutdown().await.expect("worker");
    pusher.stop().await;
    log.close().await.expect("close");
    row
}

/// The venv of `push_python/` with a2a-sdk, made on first use.
fn python() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = root.join("benches/push_python/.venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        let interop = root.join("interop/python");
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 -m venv");
        assert!(made.success(), "cannot make {}", venv.display());
        let installed = Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "-q",
                "--disable-pip-version-check",
                "a2a-sdk==1.3.0",
                "-c",
            ])
            .arg(interop.join("constraints.txt"))
            .status()
            .expect("pip");
        assert!(installed.success(), "pip could not install a2a-sdk");
    }
    python
}

async fn a2a_python(case: Case) -> Row {
    let Case {
        configs,
        tasks,
        updates,
        interval_ms,
    } = case;
    let receiver = Receiver::start(200).await;
    let base = receiver.url("");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/push_python/sender.py");
    let status = tokio::process::Command::new(python())
        .arg(script)
        .args([
            base,
            tasks.to_string(),
            updates.to_string(),
            configs.to_string(),
            interval_ms.to_string(),
        ])
        // It logs every notification it fails to send with a traceback: counted below instead.
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .expect("run the a2a-python sender");
    assert!(status.success(), "the a2a-python sender failed");
    // Best effort: what it failed to send is logged and dropped, so count what came.
    receiver
        .wait_for(tasks * configs * updates, Duration::from_secs(10))
        .await;
    measure(&receiver.got())
}

fn median(rows: &[Row], field: fn(&Row) -> f64) -> (f64, f64, f64) {
    let mut values: Vec<f64> = rows.iter().map(field).collect();
    values.sort_by(f64::total_cmp);
    (
        values[values.len() / 2],
        values[0],
        values[values.len() - 1],
    )
}

// The allocator of the programs that run the sender (`agentlog serve`, `agentlog pusher`).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    agentlog_integration::bench::block_on(run());
}

async fn run() {
    let rounds: usize = agentlog_integration::bench::env_number("PUSH_BENCH_ROUNDS", 3);
    let memory = std::env::var("PUSH_BENCH_LOG").is_ok_and(|l| l == "memory");
    let cases = agentlog_integration::bench::env_list("PUSH_BENCH_CASES", &[0, 1, 2, 3]);
    let per_endpoint = std::env::var("PUSH_BENCH_PER_ENDPOINT")
        .ok()
        .and_then(|n| n.trim().parse().ok());
    let peer = std::env::var("PUSH_BENCH_PEER").map_or(true, |p| p != "off");
    println!(
        "push bench: {} log, {rounds} rounds, medians (min-max)",
        if memory { "memory://" } else { "file://" }
    );
    println!(
        "| configs | tasks x updates | sender | notifications/s | lag p50 ms | lag p99 ms | CPU µs a notification | lost (worst round) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for case in cases.iter().filter_map(|c| CASES.get(*c).copied()) {
        let Case {
            configs,
            tasks,
            updates,
            interval_ms,
        } = case;
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for round in 0..rounds {
            let started = Instant::now();
            // Alternate which goes first, so neither always runs on a warmer machine.
            if !peer {
                ours.push(agentlog(case, memory, per_endpoint).await);
            } else if round % 2 == 0 {
                ours.push(agentlog(case, memory, per_endpoint).await);
                theirs.push(a2a_python(case).await);
            } else {
                theirs.push(a2a_python(case).await);
                ours.push(agentlog(case, memory, per_endpoint).await);
            }
            eprintln!("{case:?}, round {round}: {:?}", started.elapsed());
        }
        let load = if interval_ms == 0 {
            format!("{tasks} x {updates}, at once")
        } else {
            format!("{tasks} x {updates}, one per {interval_ms} ms a task")
        };
        for (name, rows) in [("agentlog", &ours), ("a2a-python", &theirs)] {
            if rows.is_empty() {
                continue;
            }
            let rate = median(rows, |r| r.per_second);
            let p50 = median(rows, |r| r.p50_ms);
            let p99 = median(rows, |r| r.p99_ms);
            let lost = rows
                .iter()
                .map(|r| tasks * configs * updates - r.notifications.min(tasks * configs * updates))
                .max()
                .unwrap_or(0);
            let cpu = if rows.iter().all(|r| r.cpu_us.is_some()) {
                let cpu = median(rows, |r| r.cpu_us.unwrap_or_default());
                format!("{:.0} ({:.0}-{:.0})", cpu.0, cpu.1, cpu.2)
            } else {
                String::new()
            };
            println!(
                "| {configs} | {load} | {name} | {:.0} ({:.0}-{:.0}) | {:.1} ({:.1}-{:.1}) | {:.1} ({:.1}-{:.1}) | {cpu} | {lost} |",
                rate.0, rate.1, rate.2, p50.0, p50.1, p50.2, p99.0, p99.1, p99.2
            );
            if configs > 1 && interval_ms > 0 {
                // Where the lag goes: an update's first notification, then its fan-out.
                let first = median(rows, |r| r.first_ms.1);
                let spread = median(rows, |r| r.spread_ms.1);
                eprintln!(
                    "{name}, {configs} configs paced: first arrival p99 {:.1} ms (p50 {:.1}), fan-out p99 {:.1} ms (p50 {:.1})",
                    first.0,
                    median(rows, |r| r.first_ms.0).0,
                    spread.0,
                    median(rows, |r| r.spread_ms.0).0
                );
            }
        }
        if interval_ms == 0 && !theirs.is_empty() {
            let ratio = median(&ours, |r| r.per_second).0 / median(&theirs, |r| r.per_second).0;
            println!("| {configs} | | agentlog / a2a-python | {ratio:.1}x | | | | |");
        }
    }
}
