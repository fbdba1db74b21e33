//! Benchmark: a partition's move time, the time from a bridge starting to hold a partition it
//! did not hold (a successor standing in for an owner that went away, or the target of a
//! planned move) to that partition being ready (`agentlog_view_partition_hold_seconds`):
//! restored from the partition's newest checkpoint and caught up with the records written
//! after it, beside the same hold by a replay of the partition's whole log. Over the embedded
//! log (`file://`), every partition of the topic moved once per round, each into a view
//! holding nothing else.
//!
//! `cargo bench -p agentlog-integration --bench moves`
//! (`MOVE_TASKS=62000` tasks a partition, `MOVE_PARTITIONS=4`, `MOVE_TAIL=1000` tasks a
//! partition written after the checkpoint, `MOVE_ROUNDS=3`.)
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use agentlog::AgentTopics;
use agentlog::view::{TaskView, ViewOptions};
use agentlog_integration::bench::{
    RECORDS_PER_TASK, block_on, env_number, median, write_finished_tasks, write_tasks_from,
};

fn main() {
    block_on(run());
}

async fn run() {
    let per_partition = env_number("MOVE_TASKS", 62_000);
    let partitions = env_number("MOVE_PARTITIONS", 4);
    let tail = env_number("MOVE_TAIL", 1_000);
    let rounds = env_number("MOVE_ROUNDS", 3);
    let p = u32::try_from(partitions).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}?fsync=never&partitions={p}", dir.path().display());
    let topics = AgentTopics::new("agentlog", "bench", p);
    let log = agentlog::log::open(&url).await.unwrap();
    topics.ensure(&log).await.unwrap();
    let tasks = per_partition * partitions;
    let now = agentlog::retention::now_ms();
    write_finished_tasks(&log, &topics, tasks, now).await;
    // The owner: every partition, a checkpoint of each, then more tasks after it.
    let checkpoint = {
        let options = ViewOptions::restore_only(topics.checkpoints.clone());
        let owner = TaskView::start_with(log.clone(), topics.events.clone(), options)
            .await
            .unwrap();
        owner.wait_caught_up().await;
        let written = owner.checkpoint().await.unwrap().unwrap();
        drop(owner);
        written
    };
    write_tasks_from(&log, &topics, tasks, tail * partitions, now).await;
    let (mut restored, mut replayed, mut held) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        for partition in 0..p {
            let (took, count) = move_time(&log, &topics, partition, true).await;
            restored.push(took.as_secs_f64());
            held.push(count);
            let (took, _) = move_time(&log, &topics, partition, false).await;
            replayed.push(took.as_secs_f64());
        }
    }
    let spread = |v: &[f64]| {
        format!(
            "{:.3} s / {:.3} s",
            median(v.iter().copied()),
            v.iter().copied().fold(0.0, f64::max)
        )
    };
    println!(
        "## Move time per partition over file:// ({rounds} rounds x {partitions} partitions)\n"
    );
    println!(
        "| tasks a partition held (p50) | records in the log | after the checkpoint, a partition | checkpoint (all partitions) | from the checkpoint, p50 / max | by replay, p50 / max | replay / checkpoint (p50) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let ratio = median(replayed.iter().copied()) / median(restored.iter().copied());
    println!(
        "| {:.0} | {} | ~{tail} tasks | {:.1} MB, {} tasks | {} | {} | {ratio:.1} |",
        median(held.iter().map(|h| *h as f64)),
        (tasks + tail * partitions) * RECORDS_PER_TASK,
        checkpoint.bytes as f64 / 1e6,
        checkpoint.tasks,
        spread(&restored),
        spread(&replayed),
    );
    log.close().await.unwrap();
}

/// Start a view holding nothing, hold `partition` (from its checkpoint or, with
/// `from_checkpoint` false, by replaying its log) and wait until it is ready: the time from
/// the hold to ready, and the tasks the view then holds.
async fn move_time(
    log: &agentlog::log::Log,
    topics: &AgentTopics,
    partition: u32,
    from_checkpoint: bool,
) -> (Duration, usize) {
    let mut options = ViewOptions::new().holding(Vec::new());
    if from_checkpoint {
        options.checkpoints = Some(topics.checkpoints.clone());
    }
    let view = TaskView::start_with(log.clone(), topics.events.clone(), options)
        .await
        .unwrap();
    let started = Instant::now();
    view.hold_on_demand(partition).await.unwrap();
    view.sync(Some(partition), Duration::from_secs(600))
        .await
        .unwrap();
    // Synced: p has applied what its log held once the hold was done.
    let took = started.elapsed();
    (took, view.task_count())
}
