//! The conformance cases of consumer groups: members sharing a topic's partitions, commits,
//! and redelivery after a member goes.

use std::collections::BTreeSet;
use std::time::Duration;

use agentlog::log::{GroupConsumer, StoredRecord, TopicRef};
use bytes::Bytes;

use super::{SOON, Subject, collect, keys_per_partition, payload, payloads};

/// Two members of one group share the partitions, each record delivered once; one leaving,
/// the other takes its partitions over after its commits.
pub(super) async fn consumer_groups(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 4).await.expect("ensure_topic");
    let keys = keys_per_partition(4);
    let mut a = log.join_group(&topic, "workers").await.expect("join a");
    let mut b = log.join_group(&topic, "workers").await.expect("join b");
    for (i, key) in keys.iter().enumerate() {
        let batch = (0..5).map(|j| payload(key, i * 5 + j)).collect();
        log.append(&topic, key.as_bytes(), batch)
            .await
            .expect("append");
    }
    // Both members poll at once; together they see every record exactly once.
    let (got_a, got_b) = tokio::join!(collect_until_idle(&mut a), collect_until_idle(&mut b));
    let parts_a: BTreeSet<u32> = got_a.iter().map(|r| r.partition).collect();
    let parts_b: BTreeSet<u32> = got_b.iter().map(|r| r.partition).collect();
    assert!(
        !parts_a.is_empty() && !parts_b.is_empty(),
        "work not shared: {parts_a:?} / {parts_b:?}"
    );
    assert!(parts_a.is_disjoint(&parts_b), "{parts_a:?} / {parts_b:?}");
    let mut all: Vec<(u32, u64)> = got_a
        .iter()
        .chain(&got_b)
        .map(|r| (r.partition, r.offset))
        .collect();
    all.sort_unstable();
    let want: Vec<(u32, u64)> = (0..4).flat_map(|p| (0..5).map(move |o| (p, o))).collect();
    assert_eq!(all, want, "every record delivered exactly once");

    // b leaves after committing everything; a takes over b's partitions after b's commits.
    b.leave().await.expect("leave");
    for (i, key) in keys.iter().enumerate() {
        log.append(&topic, key.as_bytes(), vec![payload(key, 100 + i)])
            .await
            .expect("append");
    }
    let got = collect(&mut a, 4, true).await;
    let mut seen: Vec<(u32, u64)> = got.iter().map(|r| (r.partition, r.offset)).collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..4).map(|p| (p, 5)).collect::<Vec<_>>(),
        "a resumes after every commit"
    );
    a.leave().await.expect("leave");
    log.close().await.expect("close");
}

/// Poll and commit until nothing arrives for a while (bounded by `SOON`).
async fn collect_until_idle(member: &mut Box<dyn GroupConsumer>) -> Vec<StoredRecord> {
    let deadline = tokio::time::Instant::now() + SOON;
    let mut got = Vec::new();
    let mut idle = 0;
    while idle < 3 && tokio::time::Instant::now() < deadline {
        match member
            .poll(100, Duration::from_millis(150))
            .await
            .expect("poll")
        {
            Some(delivery) => {
                idle = 0;
                if let Some(last) = delivery.records.last() {
                    member
                        .commit(delivery.partition, last.offset + 1)
                        .await
                        .expect("commit");
                }
                got.extend(delivery.records);
            }
            None => idle += 1,
        }
    }
    got
}

/// A member carries on after what it got; one that goes without committing leaves its
/// records to the next member, from the last commit.
pub(super) async fn group_redelivery(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 1).await.expect("ensure_topic");
    let records: Vec<Bytes> = (0..6).map(|i| payload("r", i)).collect();
    log.append(&topic, b"k", records.clone())
        .await
        .expect("append");

    let mut first = log.join_group(&topic, "g").await.expect("join");
    let got = collect(&mut first, 6, false).await;
    assert_eq!(payloads(&got), records);
    first.commit(0, 2).await.expect("commit");
    // Without a commit, the same member carries on after what it got.
    log.append(&topic, b"k", vec![payload("r", 6)])
        .await
        .expect("append");
    let next = collect(&mut first, 1, false).await;
    assert_eq!(payloads(&next), vec![payload("r", 6)]);
    // Dropped without committing the rest: the next member starts at the commit.
    drop(first);
    let mut second = log.join_group(&topic, "g").await.expect("join again");
    let again = collect(&mut second, 5, false).await;
    assert_eq!(
        again.first().map(|r| r.offset),
        Some(2),
        "redelivered from the commit"
    );
    assert_eq!(
        payloads(&again),
        (2..7).map(|i| payload("r", i)).collect::<Vec<_>>()
    );
    second.leave().await.expect("leave");
    log.close().await.expect("close");
}
