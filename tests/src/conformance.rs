//! The log conformance suite: what every [`LogBackend`](agentlog::log::raw::LogBackend) must do,
//! run against any backend through a [`Subject`].
//!
//! Each case uses its own stream (a per-run random suffix), so cases can share one broker
//! and reruns against a persistent broker never see old data. Waits are bounded by
//! generous upper limits only; nothing asserts on speed.

use std::collections::BTreeMap;
use std::time::Duration;

use agentlog::log::raw::Place;
use agentlog::log::{
    AppendBatch, Applier, Follower, GroupConsumer, Log, StoredRecord, TopicRef, partition_for_key,
};
use bytes::Bytes;

mod delete_segments;
mod groups;
mod partitions;

/// Upper bound for anything that should happen "soon" (wake-ups, deliveries).
const SOON: Duration = Duration::from_secs(5);

/// A backend under test.
#[async_trait::async_trait]
pub trait Subject: Send + Sync {
    /// A short name for messages.
    fn name(&self) -> &str;
    /// Open a log over the subject's storage; after `close()` of the previous handle, a new
    /// `open()` must see everything acknowledged before. Subjects that cannot reopen (memory)
    /// return a fresh log and say so in [`Subject::can_reopen`].
    async fn open(&self) -> Log;
    /// Whether a log opened after `close()` sees the previous handle's data.
    fn can_reopen(&self) -> bool;
}

/// Run every case against `subject`, one after the other, each on its own streams.
pub async fn run_all(subject: &dyn Subject) {
    let run = format!("{:08x}", rand::random::<u32>());
    let cases: [(&str, CaseFn); 15] = [
        ("ordering_and_offsets", |s, t| {
            Box::pin(ordering_and_offsets(s, t))
        }),
        ("batch_append", |s, t| Box::pin(batch_append(s, t))),
        ("append_all", |s, t| Box::pin(append_all(s, t))),
        ("keyed_partitioning", |s, t| {
            Box::pin(keyed_partitioning(s, t))
        }),
        ("read_past_end", |s, t| Box::pin(read_past_end(s, t))),
        ("read_at", |s, t| Box::pin(read_at(s, t))),
        ("follow_wakeup", |s, t| Box::pin(follow_wakeup(s, t))),
        ("applier_watches", |s, t| Box::pin(applier_watches(s, t))),
        ("consumer_groups", |s, t| {
            Box::pin(groups::consumer_groups(s, t))
        }),
        ("group_redelivery", |s, t| {
            Box::pin(groups::group_redelivery(s, t))
        }),
        ("close_and_reopen", |s, t| Box::pin(close_and_reopen(s, t))),
        ("large_records", |s, t| Box::pin(large_records(s, t))),
        ("many_topics", |s, t| Box::pin(many_topics(s, t))),
        ("delete_segments", |s, t| {
            Box::pin(delete_segments::delete_segments(s, t))
        }),
        ("partition_addressing", |s, t| {
            Box::pin(partitions::partition_addressing(s, t))
        }),
    ];
    for (name, case) in cases {
        let started = std::time::Instant::now();
        let stream = format!("conf-{run}-{name}");
        case(subject, stream).await;
        eprintln!("[{}] {name}: ok in {:?}", subject.name(), started.elapsed());
    }
}

type CaseFn = for<'a> fn(&'a dyn Subject, String) -> futures::future::BoxFuture<'a, ()>;

fn payload(tag: &str, i: usize) -> Bytes {
    Bytes::from(format!("{tag}-{i}"))
}

/// A key that `partition_for_key` sends to each partition, in partition order.
pub fn keys_per_partition(partitions: u32) -> Vec<String> {
    (0..partitions)
        .map(|p| {
            (0u64..)
                .map(|i| format!("key-{i}"))
                .find(|k| partition_for_key(k.as_bytes(), partitions) == p)
                .unwrap_or_default()
        })
        .collect()
}

fn payloads(records: &[StoredRecord]) -> Vec<Bytes> {
    records.iter().map(|r| r.payload.clone()).collect()
}

async fn ordering_and_offsets(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 1).await.expect("ensure_topic");
    // A second ensure_topic with another count leaves the topic as it is.
    log.ensure_topic(&topic, 3)
        .await
        .expect("ensure_topic again");
    assert_eq!(log.partitions(&topic).await.expect("partitions"), 1);
    for i in 0..10 {
        let appended = log
            .append(&topic, b"k", vec![payload("r", i)])
            .await
            .expect("append");
        assert_eq!(
            (appended.partition, appended.first_offset, appended.count),
            (0, i as u64, 1)
        );
    }
    assert_eq!(
        log.end_offsets(&topic).await.expect("end_offsets"),
        vec![10]
    );
    let all = log.read(&topic, 0, 0, 100).await.expect("read");
    assert_eq!(
        all.iter().map(|r| r.offset).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    assert_eq!(
        payloads(&all),
        (0..10).map(|i| payload("r", i)).collect::<Vec<_>>()
    );
    assert!(all.iter().all(|r| r.partition == 0));
    let middle = log.read(&topic, 0, 4, 3).await.expect("read middle");
    assert_eq!(
        middle.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![4, 5, 6]
    );
    assert_eq!(
        payloads(&middle),
        (4..7).map(|i| payload("r", i)).collect::<Vec<_>>()
    );
    log.close().await.expect("close");
}

async fn batch_append(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 2).await.expect("ensure_topic");
    let first: Vec<Bytes> = (0..100).map(|i| payload("a", i)).collect();
    let second: Vec<Bytes> = (0..50).map(|i| payload("b", i)).collect();
    let a = log
        .append(&topic, b"same", first.clone())
        .await
        .expect("append a");
    let b = log
        .append(&topic, b"same", second.clone())
        .await
        .expect("append b");
    assert_eq!(a.partition, b.partition);
    assert_eq!((a.first_offset, a.count), (0, 100));
    assert_eq!((b.first_offset, b.count), (100, 50));
    let mut read = Vec::new();
    while read.len() < 150 {
        let more = log
            .read(&topic, a.partition, read.len() as u64, 64)
            .await
            .expect("read");
        assert!(
            !more.is_empty() && more.len() <= 64,
            "read returned {}",
            more.len()
        );
        read.extend(more);
    }
    assert_eq!(
        read.iter().map(|r| r.offset).collect::<Vec<_>>(),
        (0..150).collect::<Vec<_>>()
    );
    assert_eq!(
        payloads(&read),
        first.into_iter().chain(second).collect::<Vec<_>>()
    );
    log.close().await.expect("close");
}

/// `append_all` across two topics (and twice into one partition): each batch lands where
/// its key says, in order, with contiguous offsets after what was there before.
async fn append_all(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let events = TopicRef::new(stream.clone(), "events");
    let commands = TopicRef::new(stream, "commands");
    log.ensure_topic(&events, 4).await.expect("ensure_topic");
    log.ensure_topic(&commands, 2).await.expect("ensure_topic");
    log.append(&events, b"task", vec![payload("before", 0)])
        .await
        .expect("append before");
    let e = partition_for_key(b"task", 4);
    let c = partition_for_key(b"task", 2);
    let batch = |topic, tag: &str, n: usize| AppendBatch {
        topic,
        key: b"task",
        payloads: (0..n).map(|i| payload(tag, i)).collect(),
        applied_by: None,
    };
    let appended = log
        .append_all(vec![
            batch(&events, "e1", 3),
            batch(&commands, "c1", 2),
            batch(&events, "e2", 1),
        ])
        .await
        .expect("append_all");
    let got: Vec<_> = appended
        .iter()
        .map(|a| (a.partition, a.first_offset, a.count))
        .collect();
    assert_eq!(got, vec![(e, 1, 3), (c, 0, 2), (e, 4, 1)]);
    assert!(
        log.append_all(Vec::new())
            .await
            .expect("empty append_all")
            .is_empty()
    );
    let ends = log.end_offsets(&events).await.expect("end_offsets");
    assert_eq!(ends[e as usize], 5);
    let read = log.read(&events, e, 0, 10).await.expect("read events");
    assert_eq!(
        read.iter().map(|r| r.offset).collect::<Vec<_>>(),
        (0..5).collect::<Vec<_>>()
    );
    let expected: Vec<Bytes> = std::iter::once(payload("before", 0))
        .chain((0..3).map(|i| payload("e1", i)))
        .chain(std::iter::once(payload("e2", 0)))
        .collect();
    assert_eq!(payloads(&read), expected);
    let read = log.read(&commands, c, 0, 10).await.expect("read commands");
    assert_eq!(
        payloads(&read),
        (0..2).map(|i| payload("c1", i)).collect::<Vec<_>>()
    );
    // Acknowledged means every batch landed, whatever order they became visible in.
    for i in 0..50 {
        log.append_all(vec![batch(&events, "race", 1), batch(&commands, "race", 1)])
            .await
            .unwrap_or_else(|e| panic!("append_all {i}: {e}"));
    }
    assert_eq!(
        log.end_offsets(&events).await.expect("ends")[e as usize],
        55
    );
    assert_eq!(
        log.end_offsets(&commands).await.expect("ends")[c as usize],
        52
    );
    log.close().await.expect("close");
}

async fn keyed_partitioning(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 4).await.expect("ensure_topic");
    let mut expected: BTreeMap<u32, Vec<Bytes>> = BTreeMap::new();
    for round in 0..2 {
        for k in 0..20 {
            let key = format!("task-{k}");
            let record = Bytes::from(format!("{key}/{round}"));
            let appended = log
                .append(&topic, key.as_bytes(), vec![record.clone()])
                .await
                .expect("append");
            assert_eq!(
                appended.partition,
                partition_for_key(key.as_bytes(), 4),
                "{key}"
            );
            expected.entry(appended.partition).or_default().push(record);
        }
    }
    let ends = log.end_offsets(&topic).await.expect("end_offsets");
    for partition in 0..4 {
        let want = expected.remove(&partition).unwrap_or_default();
        assert_eq!(ends[partition as usize], want.len() as u64);
        let got = log.read(&topic, partition, 0, 1000).await.expect("read");
        assert_eq!(payloads(&got), want, "partition {partition}");
    }
    log.close().await.expect("close");
}

async fn read_past_end(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 2).await.expect("ensure_topic");
    let key = &keys_per_partition(2)[0];
    assert!(
        log.read(&topic, 0, 0, 10)
            .await
            .expect("read empty")
            .is_empty()
    );
    assert!(
        log.read(&topic, 1, 5, 10)
            .await
            .expect("read empty past end")
            .is_empty()
    );
    log.append(
        &topic,
        key.as_bytes(),
        vec![payload("r", 0), payload("r", 1)],
    )
    .await
    .expect("append");
    assert!(
        log.read(&topic, 0, 2, 10)
            .await
            .expect("read at end")
            .is_empty()
    );
    assert!(
        log.read(&topic, 0, 1000, 10)
            .await
            .expect("read far past end")
            .is_empty()
    );
    assert_eq!(
        log.read(&topic, 0, 1, 10).await.expect("read last").len(),
        1
    );
    log.close().await.expect("close");
}

/// `read_at`: scattered offsets, runs, offsets inside one multi-record batch, and offsets
/// past the end (left out); the same with the places `read` gave, and with wrong places.
async fn read_at(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 1).await.expect("ensure_topic");
    for i in 0..5 {
        log.append(&topic, b"k", vec![payload("r", i)])
            .await
            .expect("append");
    }
    let batch = (5..10).map(|i| payload("r", i)).collect();
    log.append(&topic, b"k", batch).await.expect("append batch");
    for i in 10..12 {
        log.append(&topic, b"k", vec![payload("r", i)])
            .await
            .expect("append");
    }
    let cases: [(&[u64], &[u64]); 7] = [
        (&[], &[]),
        (&[0, 2, 4], &[0, 2, 4]),
        (&[3, 4, 5, 6], &[3, 4, 5, 6]),
        (&[6, 8], &[6, 8]),
        (&[9, 10, 11], &[9, 10, 11]),
        (&[1, 11, 12, 40], &[1, 11]),
        (
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        ),
    ];
    let all = log.read(&topic, 0, 0, 100).await.expect("read");
    let place = |offset: u64| all.get(offset as usize).map_or(Place::UNKNOWN, |r| r.place);
    for ((asked, found), places) in cases.iter().flat_map(|case| {
        let given = case.0.iter().map(|o| place(*o)).collect();
        let wrong = case.0.iter().map(|o| place(11 - o.min(&11))).collect();
        [(case, Vec::new()), (case, given), (case, wrong)]
    }) {
        // The backend's own form, with places: what a backend implements.
        let read = log
            .as_arc()
            .read_at(&topic, 0, asked, &places)
            .await
            .expect("read_at");
        assert_eq!(
            read.iter().map(|r| r.offset).collect::<Vec<_>>(),
            *found,
            "{}: read_at {asked:?} at {places:?}",
            subject.name()
        );
        assert_eq!(
            payloads(&read),
            found
                .iter()
                .map(|o| payload("r", *o as usize))
                .collect::<Vec<_>>()
        );
        assert!(read.iter().all(|r| r.partition == 0));
    }
    log.close().await.expect("close");
}

async fn follow_wakeup(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 1).await.expect("ensure_topic");
    log.append(&topic, b"k", vec![payload("r", 0)])
        .await
        .expect("append");
    let mut follower = Follower::new(log.clone(), topic.clone(), 0, 0)
        .await
        .expect("follower");
    let first = follower.next_batch().await.expect("existing records");
    assert_eq!(payloads(&first), vec![payload("r", 0)]);

    let mut end = log.watch_end(&topic, 0).await.expect("watch_end");
    let appender = {
        let (log, topic) = (log.clone(), topic.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            log.append(&topic, b"k", vec![payload("r", 1), payload("r", 2)])
                .await
                .expect("append from another task")
        })
    };
    let woken = tokio::time::timeout(SOON, follower.next_batch())
        .await
        .expect("the follower was not woken by an append")
        .expect("next_batch");
    assert_eq!(woken[0].offset, 1);
    assert_eq!(woken[0].payload, payload("r", 1));
    appender.await.expect("appender task");
    tokio::time::timeout(SOON, end.wait_for(|e| *e >= 3))
        .await
        .expect("watch_end did not move")
        .expect("watch_end closed");
    log.close().await.expect("close");
}

/// An append made for an applier is an append like any other (it lands, reads back, moves
/// the plain watch), and the applier's own watch moves for every other append. Whether its
/// own appends move that watch is the backend's choice (the embedded log's do not: its unit
/// tests; Iggy's do).
async fn applier_watches(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 1).await.expect("ensure_topic");
    let applier = Applier::new();
    let mut plain = log.watch_end(&topic, 0).await.expect("watch_end");
    let mut own = log
        .watch_end_for(&topic, 0, applier)
        .await
        .expect("watch_end_for");
    let appended = log
        .append_for(&topic, b"k", vec![payload("a", 0)], applier)
        .await
        .expect("append_for");
    assert_eq!((appended.partition, appended.first_offset), (0, 0));
    tokio::time::timeout(SOON, plain.wait_for(|e| *e >= 1))
        .await
        .expect("an applier's append did not move the plain watch")
        .expect("watch_end closed");
    let read = log.read(&topic, 0, 0, 10).await.expect("read");
    assert_eq!(payloads(&read), vec![payload("a", 0)]);
    log.append(&topic, b"k", vec![payload("a", 1)])
        .await
        .expect("append");
    tokio::time::timeout(SOON, own.wait_for(|e| *e >= 2))
        .await
        .expect("another append did not move the applier's watch")
        .expect("watch_end_for closed");
    log.close().await.expect("close");
}

/// Poll `member` until `want` records arrived or `SOON` passed.
async fn collect(
    member: &mut Box<dyn GroupConsumer>,
    want: usize,
    commit: bool,
) -> Vec<StoredRecord> {
    let deadline = tokio::time::Instant::now() + SOON;
    let mut got = Vec::new();
    while got.len() < want && tokio::time::Instant::now() < deadline {
        if let Some(delivery) = member
            .poll(100, Duration::from_millis(200))
            .await
            .expect("poll")
        {
            let next = delivery.records.last().map(|r| r.offset + 1);
            if let (true, Some(next)) = (commit, next) {
                member
                    .commit(delivery.partition, next)
                    .await
                    .expect("commit");
            }
            got.extend(delivery.records);
        }
    }
    got
}

async fn close_and_reopen(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 3).await.expect("ensure_topic");
    let keys = keys_per_partition(3);
    for key in &keys {
        let batch = (0..4).map(|i| payload(key, i)).collect();
        log.append(&topic, key.as_bytes(), batch)
            .await
            .expect("append");
    }
    let mut member = log.join_group(&topic, "g").await.expect("join");
    member.commit(1, 3).await.expect("commit");
    member.leave().await.expect("leave");
    log.ready().await.expect("an open log takes appends");
    log.close().await.expect("close");
    let after = log.append(&topic, b"k", vec![payload("late", 0)]).await;
    assert!(after.is_err(), "append after close must fail");
    let ready = log.ready().await.expect_err("a closed log is not ready");
    assert!(!ready.is_retryable(), "{ready}");
    if !subject.can_reopen() {
        return;
    }
    let log = subject.open().await;
    assert_eq!(log.partitions(&topic).await.expect("partitions"), 3);
    assert_eq!(
        log.end_offsets(&topic).await.expect("end_offsets"),
        vec![4, 4, 4]
    );
    for (p, key) in keys.iter().enumerate() {
        let got = log.read(&topic, p as u32, 0, 10).await.expect("read");
        assert_eq!(
            payloads(&got),
            (0..4).map(|i| payload(key, i)).collect::<Vec<_>>()
        );
    }
    let mut member = log
        .join_group(&topic, "g")
        .await
        .expect("join after reopen");
    let got = collect(&mut member, 9, false).await;
    let mut seen: Vec<(u32, u64)> = got.iter().map(|r| (r.partition, r.offset)).collect();
    seen.sort_unstable();
    let want: Vec<(u32, u64)> = [(0, 0..4), (1, 3..4), (2, 0..4)]
        .into_iter()
        .flat_map(|(p, range)| range.map(move |o| (p, o)))
        .collect();
    assert_eq!(seen, want, "a member after reopen resumes from the commits");
    member.leave().await.expect("leave");
    log.close().await.expect("close");
}

async fn large_records(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 1).await.expect("ensure_topic");
    let big = |seed: u8| {
        Bytes::from(
            (0..1024 * 1024)
                .map(|i| (i as u8).wrapping_mul(31) ^ seed)
                .collect::<Vec<u8>>(),
        )
    };
    log.append(&topic, b"k", vec![big(1)])
        .await
        .expect("append one");
    log.append(&topic, b"k", vec![big(2), big(3)])
        .await
        .expect("append two");
    let mut got = Vec::new();
    while got.len() < 3 {
        let more = log
            .read(&topic, 0, got.len() as u64, 3)
            .await
            .expect("read");
        assert!(!more.is_empty(), "large records missing");
        got.extend(more);
    }
    assert!(
        payloads(&got) == vec![big(1), big(2), big(3)],
        "large records differ"
    );
    log.close().await.expect("close");
}

async fn many_topics(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topics: Vec<TopicRef> = (0..50)
        .map(|i| TopicRef::new(stream.clone(), format!("topic-{i}")))
        .collect();
    for topic in &topics {
        log.ensure_topic(topic, 2).await.expect("ensure_topic");
    }
    for (i, topic) in topics.iter().enumerate() {
        log.append(topic, b"k", vec![payload(&topic.topic, i)])
            .await
            .expect("append");
    }
    for (i, topic) in topics.iter().enumerate() {
        assert_eq!(log.partitions(topic).await.expect("partitions"), 2);
        let partition = partition_for_key(b"k", 2);
        let got = log.read(topic, partition, 0, 10).await.expect("read");
        assert_eq!(payloads(&got), vec![payload(&topic.topic, i)], "{topic}");
    }
    log.close().await.expect("close");
}
