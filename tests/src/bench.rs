//! What the benchmarks share.

use std::future::Future;

use agentlog::AgentTopics;
use agentlog::log::{Log, partition_for_key};
use agentlog_wire::{Record, RecordBody, RecordHeader, TaskState};
use bytes::Bytes;

/// Run a benchmark's `main` on the runtime every benchmark uses: tokio multi-thread with
/// 2 workers (the reference machine has 2 cores). At the end it prints the share of the
/// machine's CPU time the hypervisor took while it ran ([`CpuSteal`]).
#[allow(clippy::expect_used)]
pub fn block_on<F: Future>(bench: F) -> F::Output {
    let steal = CpuSteal::start();
    let output = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the benchmark")
        .block_on(bench);
    if let Some(share) = steal.share() {
        println!(
            "\nCPU steal during this run: {:.1}% of the machine's CPU time (/proc/stat; a VM's vCPU \
             waiting for its host: tail latencies and rates under steal are the host's, not the code's)",
            share * 100.0
        );
    }
    output
}

/// Steal time over a window: the time a virtual machine's vCPUs were ready to run but the
/// host ran something else. On a shared VM it comes and goes (0 to 25% seen on the reference
/// machine), and while it is high a thread can stall for tens of milliseconds, so a bench
/// reports it beside figures that are read as the code's.
#[derive(Debug)]
pub struct CpuSteal {
    start: Option<(u64, u64)>,
}

impl CpuSteal {
    /// Start a window now.
    pub fn start() -> Self {
        Self { start: cpu_ticks() }
    }

    /// The share of the machine's CPU time stolen since [`start`](Self::start) (0 to 1);
    /// `None` where `/proc/stat` cannot be read or no time passed.
    pub fn share(&self) -> Option<f64> {
        let (steal_then, total_then) = self.start?;
        let (steal_now, total_now) = cpu_ticks()?;
        let total = total_now.checked_sub(total_then).filter(|t| *t > 0)?;
        Some(steal_now.saturating_sub(steal_then) as f64 / total as f64)
    }
}

/// (steal, total) ticks of every CPU so far: the first line of `/proc/stat`, whose fields are
/// user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice (guest time is
/// already counted in user and nice, so it is left out of the total).
fn cpu_ticks() -> Option<(u64, u64)> {
    steal_and_total(&std::fs::read_to_string("/proc/stat").ok()?)
}

fn steal_and_total(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let steal = *fields.get(7)?;
    Some((steal, fields.iter().take(8).sum()))
}

/// The median of `values` (the mean of the middle two for an even count; 0 for none): what
/// benches that repeat a case report, since single runs on a shared machine drift.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut sorted: Vec<f64> = values.into_iter().collect();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The CPU time (user and system, every thread) this process has used so far, from
/// `/proc/self/stat`; `None` where that cannot be read. Its unit is Linux's `USER_HZ` tick,
/// 10 ms, so measure windows of seconds.
pub fn process_cpu_time() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which may hold spaces and parentheses); the first is
    // field 3 (state), so utime (14) and stime (15) are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(std::time::Duration::from_millis(
        (ticks(11)? + ticks(12)?) * 10,
    ))
}

/// The number in the environment variable `name`, else `default` (also when it does not parse).
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(default)
}

/// A list of numbers from the environment variable `name` (`1000,1000000`), else `default`.
pub fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name).map_or_else(
        |_| default.to_vec(),
        |v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
    )
}

/// Records of each task [`write_finished_tasks`] writes.
pub const RECORDS_PER_TASK: usize = 4;

/// The id of the `task`-th benchmark task (principal `bench`, messageId `m-<task>`).
pub fn task_id(task: usize) -> String {
    agentlog_wire::ids::task_id("", "bench", &format!("m-{task}"))
}

fn record(task: usize, n: usize, at_ms: u64, body: RecordBody) -> Record {
    Record {
        header: RecordHeader {
            context_id: format!("ctx-{task}"),
            message_id: format!("r-{task}-{n}"),
            source: "bench".into(),
            principal: "bench".into(),
            timestamp_ms: at_ms + (task * 10 + n) as u64,
            content_type: "application/json".into(),
            task_id: task_id(task),
            ..RecordHeader::default()
        },
        body,
    }
}

/// The records of one finished task, timestamped from `at_ms` on (0: long ago, and then
/// kept forever): command, working, one artifact, completed.
pub fn task_records(task: usize, at_ms: u64) -> Vec<Record> {
    let (at_ms, retention_ms) = if at_ms == 0 {
        (1_700_000_000_000, 0)
    } else {
        (at_ms, 7 * 86_400_000)
    };
    vec![
        record(
            task,
            0,
            at_ms,
            RecordBody::Command {
                params: format!(
                    r#"{{"message":{{"messageId":"m-{task}","role":"ROLE_USER","parts":[{{"text":"hello {task}"}}]}}}}"#
                ),
                retention_ms,
            },
        ),
        record(
            task,
            1,
            at_ms,
            RecordBody::StatusUpdate {
                state: TaskState::Working.into(),
                message: String::new(),
            },
        ),
        record(
            task,
            2,
            at_ms,
            RecordBody::ArtifactUpdate {
                append: false,
                last_chunk: true,
                artifact: format!(
                    r#"{{"artifactId":"echo","parts":[{{"text":"echo: hello {task}"}}]}}"#
                ),
            },
        ),
        record(
            task,
            3,
            at_ms,
            RecordBody::Terminal {
                state: TaskState::Completed.into(),
                message: String::new(),
            },
        ),
    ]
}

/// Write `tasks` finished tasks ([`task_records`] from `at_ms`) to the agent's events topic
/// the way a bridge and workers write them: one record per append, in parallel per
/// partition, each task's records interleaved with 63 other tasks'.
pub async fn write_finished_tasks(log: &Log, topics: &AgentTopics, tasks: usize, at_ms: u64) {
    write_tasks_from(log, topics, 0, tasks, at_ms).await;
}

/// [`write_finished_tasks`] of the `count` tasks numbered from `first`.
pub async fn write_tasks_from(
    log: &Log,
    topics: &AgentTopics,
    first: usize,
    count: usize,
    at_ms: u64,
) {
    write_tasks_with(log, topics, first..first + count, move |t| {
        task_records(t, at_ms)
    })
    .await;
}

/// Write the records `records_of` gives each task of `tasks` the way [`write_finished_tasks`]
/// does: one record per append, in parallel per partition, 64 tasks interleaved.
#[allow(clippy::expect_used)]
pub async fn write_tasks_with(
    log: &Log,
    topics: &AgentTopics,
    tasks: std::ops::Range<usize>,
    records_of: impl Fn(usize) -> Vec<Record> + Send + Sync + Copy + 'static,
) {
    let partitions = topics.partitions;
    let mut by_partition: Vec<Vec<usize>> = vec![Vec::new(); partitions as usize];
    for t in tasks {
        by_partition[partition_for_key(task_id(t).as_bytes(), partitions) as usize].push(t);
    }
    let writers = by_partition.into_iter().map(|members| {
        let log = log.clone();
        let topic = topics.events.clone();
        tokio::spawn(async move {
            for group in members.chunks(64) {
                let records: Vec<Vec<Record>> = group.iter().map(|t| records_of(*t)).collect();
                for n in 0..RECORDS_PER_TASK {
                    for task in &records {
                        let r = &task[n];
                        let bytes = Bytes::from(r.encode().expect("encode"));
                        log.append(&topic, r.header.task_id.as_bytes(), vec![bytes])
                            .await
                            .expect("append");
                    }
                }
            }
        })
    });
    for writer in futures::future::join_all(writers).await {
        writer.expect("writer");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_process_cpu_time_grows_with_work() {
        // Spin until the process's CPU time shows 50 ms of work: on a loaded machine the
        // spin gets less CPU per wall second, so the bound is on CPU time, not on wall time
        // (the wall bound only stops a clock that never moves).
        let before = super::process_cpu_time().expect("/proc/self/stat");
        let started = std::time::Instant::now();
        let mut x = 0u64;
        let used = loop {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            let used = super::process_cpu_time().expect("/proc/self/stat") - before;
            if used >= std::time::Duration::from_millis(50)
                || started.elapsed() > std::time::Duration::from_secs(60)
            {
                break used;
            }
        };
        assert!(used >= std::time::Duration::from_millis(50), "{used:?}");
    }

    #[test]
    fn steal_is_the_eighth_field_of_the_cpu_line_and_guest_time_is_not_counted_twice() {
        let stat = "cpu  100 5 30 800 10 0 5 50 20 0\ncpu0 50 2 15 400 5 0 2 25 10 0\n";
        assert_eq!(super::steal_and_total(stat), Some((50, 1000)));
        assert_eq!(super::steal_and_total("intr 1 2 3\n"), None);
        assert_eq!(super::steal_and_total("cpu  1 x 3\n"), None);
        // This machine's own counters give a share between 0 and 1 once time has passed.
        let window = super::CpuSteal::start();
        std::thread::sleep(std::time::Duration::from_millis(50));
        if let Some(share) = window.share() {
            assert!((0.0..=1.0).contains(&share), "{share}");
        }
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(super::median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median([4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(super::median([]), 0.0);
    }
}
