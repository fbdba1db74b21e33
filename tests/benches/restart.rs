//! Benchmark: restart to ready over the embedded log, from a checkpoint and by a full replay,
//! side by side in one run. "Ready" is what `/readyz` answers 200 on: the log open and taking
//! appends, and the task view caught up with the log's end as of its start.
//!
//! `cargo bench -p agentlog-integration --bench restart`
//! (`RESTART_RECORDS=1000000,10000000` sets the log lengths, 1,000,000 by default;
//! `RESTART_ROUNDS=<n>` the rounds per case, 3 by default; `RESTART_TAIL=<n>` how many records
//! are written after the checkpoint, 10,000 by default.)
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use agentlog::AgentTopics;
use agentlog::log::Log;
use agentlog::view::{TaskView, ViewOptions};
use agentlog_integration::bench::{
    RECORDS_PER_TASK, block_on, env_list, env_number, median, write_finished_tasks,
    write_tasks_from,
};

fn main() {
    block_on(run());
}

async fn run() {
    let lengths = env_list("RESTART_RECORDS", &[1_000_000]);
    let rounds = env_number("RESTART_ROUNDS", 3);
    let tail = env_number("RESTART_TAIL", 10_000);
    println!("## Restart to ready over file:// (median of {rounds} rounds, min..max)\n");
    println!(
        "| records | tasks | records after the checkpoint | checkpoint | log open | ready from the checkpoint | ready by full replay | replay / checkpoint |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for records in lengths {
        case(records, tail, rounds).await;
    }
}

async fn open(url: &str) -> Log {
    agentlog::log::open(url).await.unwrap()
}

/// Open the log and start a view, until it is ready; the time it took, and the time the
/// log's open alone took.
async fn ready(url: &str, topics: &AgentTopics, from_checkpoint: bool) -> (Duration, Duration) {
    let started = Instant::now();
    let log = open(url).await;
    let opened = started.elapsed();
    let options = if from_checkpoint {
        ViewOptions::restore_only(topics.checkpoints.clone())
    } else {
        ViewOptions::default()
    };
    let view = TaskView::start_with(log.clone(), topics.events.clone(), options)
        .await
        .unwrap();
    view.wait_caught_up().await;
    log.ready().await.unwrap();
    let took = started.elapsed();
    assert_eq!(view.restored_from().is_some(), from_checkpoint);
    drop(view);
    log.close().await.unwrap();
    (took, opened)
}

async fn case(records: usize, tail: usize, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}?fsync=never", dir.path().display());
    let topics = AgentTopics::of("bench");
    let tasks = records / RECORDS_PER_TASK;
    let tail_tasks = tail / RECORDS_PER_TASK;
    let now = agentlog::retention::now_ms();
    let checkpoint = {
        let log = open(&url).await;
        topics.ensure(&log).await.unwrap();
        write_finished_tasks(&log, &topics, tasks - tail_tasks, now).await;
        let view = TaskView::start_with(
            log.clone(),
            topics.events.clone(),
            ViewOptions::restore_only(topics.checkpoints.clone()),
        )
        .await
        .unwrap();
        view.wait_caught_up().await;
        // The view writes to the checkpoint topic when asked, whatever its options say.
        let written = view.checkpoint().await.unwrap();
        drop(view);
        // Then more tasks: what a restart replays after the checkpoint.
        write_tasks_from(&log, &topics, tasks - tail_tasks, tail_tasks, now).await;
        log.close().await.unwrap();
        written
    };
    let bytes = checkpoint.map_or(0, |c| c.bytes);
    let (mut restored, mut replayed, mut opens) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (took, opened) = ready(&url, &topics, true).await;
        restored.push(took.as_secs_f64());
        opens.push(opened.as_secs_f64());
        let (took, opened) = ready(&url, &topics, false).await;
        replayed.push(took.as_secs_f64());
        opens.push(opened.as_secs_f64());
    }
    let spread = |v: &[f64]| {
        format!(
            "{:.3} s ({:.3}..{:.3})",
            median(v.iter().copied()),
            v.iter().copied().fold(f64::MAX, f64::min),
            v.iter().copied().fold(0.0, f64::max)
        )
    };
    let ratios: Vec<f64> = replayed.iter().zip(&restored).map(|(r, c)| r / c).collect();
    println!(
        "| {records} | {tasks} | {tail} | {:.1} MB | {} | {} | {} | {:.1} ({:.1}..{:.1}) |",
        bytes as f64 / 1e6,
        spread(&opens),
        spread(&restored),
        spread(&replayed),
        median(ratios.iter().copied()),
        ratios.iter().copied().fold(f64::MAX, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    );
}
