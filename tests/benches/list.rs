//! Benchmark: ListTasks against the number of an owner's tasks (1,000 and 1,000,000), and
//! GetTask beside a ListTasks loop, over the embedded log, cases alternating in one run.
//!
//! `cargo bench -p agentlog-integration --bench list`
//! (`LIST_TASKS=1000,1000000` sets the task counts; `LIST_REQUESTS=<n>` the requests per case
//! and round, 500 by default.)
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agentlog::bridge::{Bridge, BridgeConfig};
use agentlog::{AgentTopics, Caller};
use agentlog_integration::bench::{block_on, env_list, env_number, task_id, write_finished_tasks};
use agentlog_wire::TaskState;
use agentlog_wire::a2a::{GetTaskRequest, ListTasksRequest};
use hdrhistogram::Histogram;

fn main() {
    block_on(run());
}

struct Owner {
    tasks: usize,
    bridge: Bridge,
    _dir: tempfile::TempDir,
    start_ms: u64,
}

async fn filled(tasks: usize) -> Owner {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}?fsync=never", dir.path().display());
    let log = agentlog::log::open(&url).await.unwrap();
    let topics = AgentTopics::of("bench");
    topics.ensure(&log).await.unwrap();
    let start_ms = agentlog::retention::now_ms();
    write_finished_tasks(&log, &topics, tasks, start_ms).await;
    let mut config = BridgeConfig::new("bench");
    config.checkpoint_every = None;
    let bridge = Bridge::open(log, config).await.unwrap();
    bridge.view().wait_caught_up().await;
    Owner {
        tasks,
        bridge,
        _dir: dir,
        start_ms,
    }
}

fn caller() -> Caller {
    Caller::principal("bench")
}

/// The ListTasks requests measured: every filter the spec has, one at a time.
fn requests(owner: &Owner) -> Vec<(&'static str, ListTasksRequest)> {
    // The newest hundred tasks: status times run 10 ms per task from the start.
    let recent = owner.start_ms + (owner.tasks.saturating_sub(100) * 10) as u64;
    vec![
        ("no filter", ListTasksRequest::default()),
        (
            "status",
            ListTasksRequest {
                status: Some(TaskState::Completed),
                ..Default::default()
            },
        ),
        (
            "contextId",
            ListTasksRequest {
                context_id: Some(format!("ctx-{}", owner.tasks / 2)),
                ..Default::default()
            },
        ),
        (
            "statusTimestampAfter (newest 100)",
            ListTasksRequest {
                status_timestamp_after: Some(agentlog_wire::timestamp::format_millis(recent)),
                ..Default::default()
            },
        ),
    ]
}

async fn list_round(
    owner: &Owner,
    request: &ListTasksRequest,
    n: usize,
    hist: &mut Histogram<u64>,
) {
    for _ in 0..n {
        let started = Instant::now();
        let page = owner
            .bridge
            .list_tasks(&caller(), request.clone())
            .await
            .unwrap();
        hist.record(started.elapsed().as_nanos() as u64).unwrap();
        assert!(!page.tasks.is_empty());
    }
}

async fn get_round(owner: &Owner, n: usize, seed: &mut u64, hist: &mut Histogram<u64>) {
    for _ in 0..n {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let id = task_id((*seed % owner.tasks as u64) as usize);
        let request = GetTaskRequest {
            tenant: None,
            id,
            history_length: None,
        };
        let started = Instant::now();
        owner.bridge.get_task(&caller(), request).await.unwrap();
        hist.record(started.elapsed().as_nanos() as u64).unwrap();
    }
}

fn us(hist: &Histogram<u64>, q: f64) -> f64 {
    hist.value_at_quantile(q) as f64 / 1000.0
}

async fn run() {
    let counts = env_list("LIST_TASKS", &[1_000, 1_000_000]);
    let per_round = env_number("LIST_REQUESTS", 500);
    let rounds = 5;
    let mut owners = Vec::new();
    for tasks in counts {
        let started = Instant::now();
        owners.push(Arc::new(filled(tasks).await));
        eprintln!("filled {tasks} tasks in {:?}", started.elapsed());
    }
    println!("## ListTasks against an owner's task count (file://; page size 50)\n");
    let names: Vec<&str> = requests(&owners[0]).iter().map(|(n, _)| *n).collect();
    let mut hists: Vec<Vec<Histogram<u64>>> = owners
        .iter()
        .map(|_| names.iter().map(|_| Histogram::new(3).unwrap()).collect())
        .collect();
    for _ in 0..rounds {
        for (o, owner) in owners.iter().enumerate() {
            for (r, (_, request)) in requests(owner).iter().enumerate() {
                list_round(owner, request, per_round, &mut hists[o][r]).await;
            }
        }
    }
    println!("{rounds} rounds of {per_round} requests per case, cases alternating:\n");
    println!(
        "| filter | tasks | p50 µs | p99 µs | p99 / p99 at {} |",
        owners[0].tasks
    );
    println!("| --- | --- | --- | --- | --- |");
    for (r, name) in names.iter().enumerate() {
        for (o, owner) in owners.iter().enumerate() {
            println!(
                "| {name} | {} | {:.1} | {:.1} | {:.2} |",
                owner.tasks,
                us(&hists[o][r], 0.5),
                us(&hists[o][r], 0.99),
                us(&hists[o][r], 0.99) / us(&hists[0][r], 0.99)
            );
        }
    }

    // GetTask on the largest owner, alone and beside a ListTasks loop.
    let Some(owner) = owners.last().cloned() else {
        return;
    };
    let (mut alone, mut beside) = (Histogram::new(3).unwrap(), Histogram::new(3).unwrap());
    let mut ratios = Vec::new();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let rounds = rounds * 2;
    for _ in 0..rounds {
        let mut round_alone = Histogram::new(3).unwrap();
        get_round(&owner, per_round * 4, &mut seed, &mut round_alone).await;
        let stop = Arc::new(AtomicBool::new(false));
        let looping = {
            let (owner, stop) = (owner.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    owner
                        .bridge
                        .list_tasks(&caller(), ListTasksRequest::default())
                        .await
                        .unwrap();
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut round_beside = Histogram::new(3).unwrap();
        get_round(&owner, per_round * 4, &mut seed, &mut round_beside).await;
        stop.store(true, Ordering::Relaxed);
        looping.await.unwrap();
        ratios.push(us(&round_beside, 0.99) / us(&round_alone, 0.99));
        alone.add(&round_alone).unwrap();
        beside.add(&round_beside).unwrap();
    }
    println!(
        "\n## GetTask at {} tasks, alone and beside a ListTasks loop ({rounds} rounds of {} each, alternating)\n",
        owner.tasks,
        per_round * 4
    );
    println!("| GetTask | p50 µs | p99 µs |");
    println!("| --- | --- | --- |");
    println!(
        "| alone | {:.1} | {:.1} |",
        us(&alone, 0.5),
        us(&alone, 0.99)
    );
    println!(
        "| beside a ListTasks loop | {:.1} | {:.1} |",
        us(&beside, 0.5),
        us(&beside, 0.99)
    );
    ratios.sort_by(f64::total_cmp);
    println!(
        "\np99 beside / alone, per round: median {:.2} ({:.2}..{:.2}); over all rounds {:.2} (target ≤ 2)",
        agentlog_integration::bench::median(ratios.iter().copied()),
        ratios[0],
        ratios[ratios.len() - 1],
        us(&beside, 0.99) / us(&alone, 0.99)
    );
}
