//! Crash test of the embedded log: a child appends with `FsyncPolicy::Always` and is killed
//! with SIGKILL at a random moment; the reopened directory must hold every acknowledged
//! record, byte for byte, at the offset it was acknowledged at, and nothing that was never
//! attempted. Rounds share one directory, so each round also recovers the previous crash.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::time::{Duration, Instant};

use agentlog::log::TopicRef;
use agentlog::log::embedded::{EmbeddedLog, EmbeddedOptions, FsyncPolicy};
use agentlog::log::raw::LogBackend;
use agentlog_integration::crash::{TASKS, batch_len, parse, record, split_id};
use rand::Rng;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

const ROUNDS: u64 = 24;

/// An acknowledged batch: where it landed.
#[derive(Debug, Clone, Copy)]
struct Ack {
    partition: u32,
    first_offset: u64,
    count: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_appends_survive_sigkill() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let mut acked: BTreeMap<u64, Ack> = BTreeMap::new();
    let mut rng = rand::rng();
    for round in 0..ROUNDS {
        let mut child = Command::new(env!("CARGO_BIN_EXE_crash_child"))
            .arg(dir.path())
            .arg(round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).await.unwrap();
        assert_eq!(
            first.trim(),
            "READY",
            "child failed to start in round {round}"
        );
        tokio::time::sleep(Duration::from_millis(rng.random_range(5..150))).await;
        child.start_kill().unwrap();
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest).await.unwrap();
        child.wait().await.unwrap();

        let text = String::from_utf8_lossy(&rest);
        // The last line may be cut by the kill: only whole lines count.
        let whole = text.rfind('\n').map_or("", |end| &text[..end]);
        let mut this_round = 0;
        for line in whole.lines().filter(|l| !l.is_empty()) {
            let fields: Vec<&str> = line.split(' ').collect();
            assert_eq!(fields.len(), 5, "bad line {line:?}");
            let ack = Ack {
                partition: fields[1].parse().unwrap(),
                first_offset: fields[2].parse().unwrap(),
                count: fields[3].parse().unwrap(),
            };
            acked.insert(fields[4].parse().unwrap(), ack);
            this_round += 1;
        }
        verify(dir.path(), round, &acked).await;
        eprintln!(
            "round {round}: {this_round} batches acknowledged, {} in total",
            acked.len()
        );
    }
    assert!(
        acked.len() > 100,
        "too few acknowledged batches to mean anything"
    );
    eprintln!("crash test done in {:?}", started.elapsed());
}

/// Reopen the directory and check it against everything acknowledged so far.
async fn verify(dir: &std::path::Path, round: u64, acked: &BTreeMap<u64, Ack>) {
    let options = EmbeddedOptions::default().fsync(FsyncPolicy::Always);
    let log = EmbeddedLog::open(dir.to_path_buf(), options).unwrap();
    let topic = TopicRef::new("crash", "t");
    let partitions = log.partitions(&topic).await.unwrap();

    // Latest acknowledged n per (round, task): at most one batch after it was in flight.
    let mut last_acked: HashMap<(u64, u64), u64> = HashMap::new();
    for id in acked.keys() {
        let (r, task, n) = split_id(*id);
        let slot = last_acked.entry((r, task)).or_insert(n);
        *slot = (*slot).max(n);
    }

    let mut stored: HashMap<(u32, u64), bytes::Bytes> = HashMap::new();
    for partition in 0..partitions {
        let records = log.read(&topic, partition, 0, usize::MAX).await.unwrap();
        let mut expect_next: Option<(u64, usize)> = None;
        for (offset, r) in records.iter().enumerate() {
            assert_eq!(r.offset, offset as u64);
            let (id, i) = parse(&r.payload)
                .unwrap_or_else(|| panic!("unknown record at {partition}/{offset}"));
            assert_eq!(
                r.payload,
                record(id, i),
                "record {partition}/{offset} differs from what was written"
            );
            let (r_round, task, n) = split_id(id);
            assert!(
                r_round <= round && task < TASKS,
                "batch {id} was never attempted"
            );
            let limit = last_acked.get(&(r_round, task)).map_or(0, |n| n + 1);
            assert!(
                n <= limit,
                "batch {id} was never attempted (last acknowledged {limit})"
            );
            // Batches are whole and contiguous.
            match expect_next {
                Some((next_id, next_i)) if next_i < batch_len(next_id) => {
                    assert_eq!(
                        (id, i),
                        (next_id, next_i),
                        "batch {next_id} is cut at {partition}/{offset}"
                    );
                }
                _ => assert_eq!(
                    i, 0,
                    "batch {id} starts in the middle at {partition}/{offset}"
                ),
            }
            expect_next = Some((id, i + 1));
            stored.insert((partition, r.offset), r.payload.clone());
        }
        if let Some((id, i)) = expect_next {
            assert_eq!(
                i,
                batch_len(id),
                "the last batch of partition {partition} is cut"
            );
        }
    }
    for (id, ack) in acked {
        assert_eq!(ack.count, batch_len(*id));
        for i in 0..ack.count {
            let at = (ack.partition, ack.first_offset + i as u64);
            let got = stored
                .get(&at)
                .unwrap_or_else(|| panic!("acknowledged record {id}:{i} lost at {at:?}"));
            assert_eq!(
                *got,
                record(*id, i),
                "acknowledged record {id}:{i} changed at {at:?}"
            );
        }
    }
    log.close().await.unwrap();
}
