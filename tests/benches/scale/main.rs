//! Benchmark: bridges sharing an agent's P = 16 partitions (`serve --member`), N ∈ {1, 2, 4}
//! of them in one process over one `memory://` log, each bridge on a thread of its own
//! (`scale/member.rs`), so that each bridge's CPU is its thread's CPU time and its memory the
//! heap its thread holds: what the machine's other load does to wall time does not enter.
//!
//! - `apply`: tasks appended to the log (4 records each, as bridges and workers append them)
//!   while the members follow (`live`: N threads and the writer at once on the machine's
//!   cores), then N fresh members replaying the same log one after the other (`replay`): per
//!   bridge, its CPU time, its tasks against its share of the partitions, its heap above its
//!   start and what releasing its partitions frees (its tasks' heap).
//! - `hold`: restart to ready of one partition: a member holding nothing holds p, restored from
//!   p's checkpoint (1% of the tasks written after it), until p is ready; wall time (the
//!   view's own `ready_after`) and the thread's CPU, at several tasks per partition.
//! - `list` (`scale/fanout.rs`): `ListTasks` through the members (round robin) and one
//!   forwarded share alone, latencies; then at N = 4 one member is stopped and each of its
//!   partitions is asked for through another member: the time until it answers.
//!
//! The figures also go to a JSON file (`SCALE_JSON`, `<tmp>/agentlog-scale.json` by default)
//! that `tests/benches/scale_model.py --calibration` reads.
//!
//! `cargo bench -p agentlog-integration --bench scale`
//! (`SCALE_BENCH=apply|hold|list` runs one part; `SCALE_TASKS=<n>` tasks of the apply part,
//! 200,000; `SCALE_ROUNDS=<n>` rounds, 3; `SCALE_HOLD_TASKS=1000,8000,62000` tasks in the held
//! partition; `SCALE_LIST_TASKS=<n>` (20,000) and `SCALE_LIST_REQUESTS=<n>` (2,000) of `list`.)
#![allow(clippy::unwrap_used)]

mod fanout;
mod member;

use std::time::Duration;

use agentlog::AgentTopics;
use agentlog::bridge::BridgeConfig;
use agentlog::log::{Log, partition_for_key};
use agentlog_integration::bench::{
    RECORDS_PER_TASK, block_on, env_list, env_number, median, task_id, task_records,
    write_tasks_from,
};
use bytes::Bytes;
use member::{Member, PerThread};
use serde_json::{Value, json};

#[global_allocator]
static ALLOC: PerThread = PerThread;

pub const P: u32 = 16;
pub const AGENT: &str = "scale";
const SYNC: Duration = Duration::from_secs(600);

fn main() {
    block_on(run());
}

fn wants(part: &str) -> bool {
    std::env::var("SCALE_BENCH").map_or(true, |only| only == part)
}

async fn run() {
    let mut out = json!({"partitions": P, "records_per_task": RECORDS_PER_TASK});
    if wants("apply") {
        out["apply"] = apply().await;
    }
    if wants("hold") {
        out["hold"] = hold().await;
    }
    if wants("list") {
        out["list"] = fanout::list().await;
    }
    let path = std::env::var("SCALE_JSON").unwrap_or_else(|_| {
        std::env::temp_dir()
            .join("agentlog-scale.json")
            .display()
            .to_string()
    });
    std::fs::write(&path, serde_json::to_vec_pretty(&out).unwrap()).unwrap();
    println!("\nThe figures as JSON: {path}");
}

pub async fn memory_log() -> Log {
    agentlog::log::open(&format!("memory://?partitions={P}"))
        .await
        .unwrap()
}

pub fn topics() -> AgentTopics {
    let mut topics = AgentTopics::of(AGENT);
    topics.partitions = P;
    topics
}

/// Member `i` of `n`'s bridge: it holds the partitions it owns (p mod n = i) and writes no
/// checkpoint on its own (a bench's checkpoints are written when it asks).
pub fn config(i: u32, n: u32) -> BridgeConfig {
    let mut config = BridgeConfig::new(AGENT);
    config.holding = Some((0..P).filter(|p| p % n == i).collect());
    config.checkpoint_every = None;
    config
}

/// The process's resident set (VmRSS), bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .map_or(0, |kb| kb.trim().parse::<u64>().unwrap() * 1024)
}

/// Per partition, how many of the tasks `0..tasks` it has.
fn tasks_per_partition(tasks: usize) -> Vec<usize> {
    let mut counts = vec![0; P as usize];
    for t in 0..tasks {
        counts[partition_for_key(task_id(t).as_bytes(), P) as usize] += 1;
    }
    counts
}

/// One member's figures in one run.
struct Share {
    cpu_ns: u64,
    wait_ns: u64,
    heap: i64,
    freed: i64,
    tasks: usize,
}

async fn apply() -> Value {
    let tasks = env_number("SCALE_TASKS", 200_000usize);
    let rounds = env_number("SCALE_ROUNDS", 3usize);
    let per_partition = tasks_per_partition(tasks);
    let records = (tasks * RECORDS_PER_TASK) as f64;
    println!(
        "## Apply per bridge: {tasks} tasks ({records} records) over P = {P}, N bridges (median of {rounds} rounds; per bridge: its thread's CPU and heap)\n"
    );
    println!(
        "| N | mode | CPU ms per bridge (min..max) | × N=1 | ns per record applied | wait for a core ms | tasks per bridge against all × share (worst) | heap MB per bridge: all above its start / its tasks' (freed by release) | its tasks' bytes a task | × N=1 | process RSS above baseline MB |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut out = Vec::new();
    let mut first: [Option<(f64, f64)>; 2] = [None, None];
    for n in [1u32, 2, 4] {
        for (m, mode) in ["live", "replay"].into_iter().enumerate() {
            let mut runs: Vec<Vec<Share>> = Vec::new();
            let mut rss_above = Vec::new();
            for _ in 0..rounds {
                let (shares, above) = apply_run(n, tasks, mode == "live").await;
                runs.push(shares);
                rss_above.push(above as f64);
            }
            // Per member, the median over rounds; then the spread over members.
            let per_member = |f: &dyn Fn(&Share) -> f64| -> Vec<f64> {
                (0..n as usize)
                    .map(|i| median(runs.iter().map(|r| f(&r[i]))))
                    .collect()
            };
            let cpu = per_member(&|s| s.cpu_ns as f64);
            let wait = per_member(&|s| s.wait_ns as f64);
            let heap = per_member(&|s| s.heap as f64);
            let freed = per_member(&|s| s.freed as f64);
            let held: Vec<usize> = runs[0].iter().map(|s| s.tasks).collect();
            let mut worst: f64 = 0.0;
            let mut exact = true;
            for (i, got) in held.iter().enumerate() {
                let owned = (0..P).filter(|p| p % n == i as u32);
                let expected: usize = owned.map(|p| per_partition[p as usize]).sum();
                exact &= *got == expected;
                let share = tasks as f64 / n as f64;
                let off = (*got as f64 - share) / share;
                if off.abs() > worst.abs() {
                    worst = off;
                }
            }
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let (cpu_mean, heap_mean, freed_mean) = (mean(&cpu), mean(&heap), mean(&freed));
            let (cpu_1, freed_1) = *first[m].get_or_insert((cpu_mean, freed_mean));
            let per_record = cpu_mean / (records / n as f64);
            let bytes_a_task = freed_mean / (tasks as f64 / n as f64);
            println!(
                "| {n} | {mode} | {:.0} ({:.0}..{:.0}) | {:.3} (1/N = {:.3}) | {:.0} | {:.0} | {} ({:+.2}%{}) | {:.1} / {:.1} | {:.0} | {:.3} | {:.1} |",
                cpu_mean / 1e6,
                cpu.iter().copied().fold(f64::MAX, f64::min) / 1e6,
                cpu.iter().copied().fold(0.0, f64::max) / 1e6,
                cpu_mean / cpu_1,
                1.0 / n as f64,
                per_record,
                mean(&wait) / 1e6,
                held.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(" / "),
                worst * 100.0,
                if exact {
                    ", each exactly its partitions'"
                } else {
                    ", NOT its partitions'"
                },
                heap_mean / 1e6,
                freed_mean / 1e6,
                bytes_a_task,
                freed_mean / freed_1,
                median(rss_above.iter().copied()) / 1e6,
            );
            out.push(json!({
                "n": n, "mode": mode, "tasks": tasks, "records": records,
                "cpu_ns": cpu, "wait_ns": wait, "heap_bytes": heap, "freed_bytes": freed, "tasks_held": held,
                "ns_per_record": per_record, "bytes_per_task": bytes_a_task,
                "worst_share_deviation": worst, "exact": exact,
                "rss_above_bytes": median(rss_above.iter().copied()),
            }));
        }
    }
    Value::Array(out)
}

/// One run: `live`, the members start first and follow the appends; else the log is written
/// first, the members start holding nothing, then hold their partitions one member after the
/// other (no checkpoint: each replays its partitions). Each member's figures, and the process's RSS above what it was
/// before the members started.
async fn apply_run(n: u32, tasks: usize, live: bool) -> (Vec<Share>, u64) {
    let log = memory_log().await;
    let topics = topics();
    topics.ensure(&log).await.unwrap();
    let now = agentlog::retention::now_ms();
    if !live {
        write_tasks_from(&log, &topics, 0, tasks, now).await;
    }
    let rss_before = rss();
    let mut members = Vec::new();
    let mut before = Vec::new();
    for i in 0..n {
        let mut config = config(i, n);
        let owned = config.holding.clone().unwrap();
        if !live {
            config.holding = Some(Vec::new());
        }
        let member = Member::start(log.clone(), config, None).await;
        before.push((member.sched(), member.heap().await));
        members.push((member, owned));
    }
    if live {
        write_tasks_from(&log, &topics, 0, tasks, now).await;
    } else {
        // One member after the other: each replays alone, as it would on a machine of its
        // own (N threads replaying at once on two cores evict each other's caches).
        for (member, owned) in &members {
            let view = member.bridge.view().clone();
            let held = owned.clone();
            member
                .run(async move {
                    for p in held {
                        view.hold(p).await.unwrap();
                    }
                })
                .await;
            let view = member.bridge.view();
            member::until(|| owned.iter().all(|p| view.partition_ready(*p))).await;
        }
    }
    for (member, _) in &members {
        member.bridge.view().sync(None, SYNC).await.unwrap();
    }
    let rss_above = rss().saturating_sub(rss_before);
    let mut shares = Vec::new();
    for ((member, owned), (sched, heap)) in members.iter().zip(before) {
        let used = member.sched() - sched;
        let tasks = member.bridge.view().task_count();
        let holding = member.heap().await - heap;
        // What the view's tasks hold: the heap its partitions' release frees.
        let view = member.bridge.view().clone();
        let owned = owned.clone();
        let freed = member
            .run(async move {
                let before = member::thread_heap();
                for p in owned {
                    view.release(p).await.unwrap();
                }
                before - member::thread_heap()
            })
            .await;
        shares.push(Share {
            cpu_ns: used.cpu_ns,
            wait_ns: used.wait_ns,
            heap: holding,
            freed,
            tasks,
        });
    }
    for (member, _) in members {
        member.stop().await;
    }
    (shares, rss_above)
}

/// Write the tasks numbered `numbers` as [`write_tasks_from`] does, one partition's worth.
async fn write_numbered(log: &Log, topics: &AgentTopics, numbers: &[usize], now: u64) {
    for group in numbers.chunks(64) {
        let records: Vec<_> = group.iter().map(|t| task_records(*t, now)).collect();
        for n in 0..RECORDS_PER_TASK {
            for task in &records {
                let r = &task[n];
                let bytes = Bytes::from(r.encode().unwrap());
                log.append(&topics.events, r.header.task_id.as_bytes(), vec![bytes])
                    .await
                    .unwrap();
            }
        }
    }
}

async fn hold() -> Value {
    let counts = env_list("SCALE_HOLD_TASKS", &[1_000, 8_000, 62_000]);
    let rounds = env_number("SCALE_ROUNDS", 3usize);
    println!(
        "\n## Restart to ready of one partition: hold(p) from p's checkpoint (+1% of its tasks after it) to ready (median of {rounds} rounds, min..max)\n"
    );
    println!(
        "| tasks in p | checkpoint MB | ready after (wall) ms | CPU ms (the member's thread) | CPU µs a task | heap bytes a task |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut out = Vec::new();
    for tasks in counts {
        let tail = tasks / 100;
        let numbers: Vec<usize> = (0..)
            .filter(|t| partition_for_key(task_id(*t).as_bytes(), P) == 0)
            .take(tasks + tail)
            .collect();
        let log = memory_log().await;
        let topics = topics();
        topics.ensure(&log).await.unwrap();
        let now = agentlog::retention::now_ms();
        write_numbered(&log, &topics, &numbers[..tasks], now).await;
        let writer = Member::start(log.clone(), config(0, P), None).await;
        writer.bridge.view().sync(None, SYNC).await.unwrap();
        let view = writer.bridge.view().clone();
        let written = writer
            .run(async move { view.checkpoint().await.unwrap() })
            .await
            .unwrap();
        writer.stop().await;
        write_numbered(&log, &topics, &numbers[tasks..], now).await;
        let (mut walls, mut cpus, mut heaps) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let mut config = config(0, 1);
            config.holding = Some(Vec::new());
            let member = Member::start(log.clone(), config, None).await;
            let (sched, heap) = (member.sched(), member.heap().await);
            let view = member.bridge.view().clone();
            let held = view.clone();
            member.run(async move { held.hold(0).await.unwrap() }).await;
            member::until(|| view.partition_ready(0)).await;
            let used = member.sched() - sched;
            let status = view.partition_status();
            assert_eq!(status[0].tasks, tasks + tail);
            walls.push(status[0].ready_after.unwrap().as_secs_f64());
            cpus.push(used.cpu_ns as f64 / 1e9);
            heaps.push((member.heap().await - heap) as f64);
            drop(view);
            member.stop().await;
        }
        let spread = |v: &[f64], scale: f64| {
            format!(
                "{:.1} ({:.1}..{:.1})",
                median(v.iter().copied()) * scale,
                v.iter().copied().fold(f64::MAX, f64::min) * scale,
                v.iter().copied().fold(0.0, f64::max) * scale
            )
        };
        let all = (tasks + tail) as f64;
        println!(
            "| {tasks} | {:.2} | {} | {} | {:.2} | {:.0} |",
            written.bytes as f64 / 1e6,
            spread(&walls, 1e3),
            spread(&cpus, 1e3),
            median(cpus.iter().copied()) * 1e6 / all,
            median(heaps.iter().copied()) / all,
        );
        out.push(json!({
            "tasks": tasks, "tail_tasks": tail, "checkpoint_bytes": written.bytes,
            "ready_s": walls, "cpu_s": cpus, "heap_bytes": heaps,
        }));
    }
    Value::Array(out)
}
