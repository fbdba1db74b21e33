//! The log backend on a real Apache Iggy server: the shared conformance suite plus what only
//! Iggy needs (restarts, SIGKILL durability, key routing). Every test starts its own server
//! and passes with a SKIPPED line when there is no `iggy-server` binary.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agentlog::error::ErrorKind;
use agentlog::log::iggy::{IggyLog, IggyOptions};
use agentlog::log::{Follower, GroupConsumer, Log, TopicRef, partition_for_key};
use agentlog_integration::conformance::{Subject, run_all};
use agentlog_integration::iggy_server::IggyServer;
use bytes::Bytes;
use iggy::prelude::{
    Client, Identifier, IggyClient, IggyDuration, IggyExpiry, IggyMessage, MessageClient,
    Partitioning, TopicClient, TopicCreateOptions,
};

async fn open(server: &IggyServer) -> Log {
    agentlog::log::open(&server.url()).await.unwrap()
}

fn payload(tag: &str, i: usize) -> Bytes {
    Bytes::from(format!("{tag}-{i}"))
}

/// A server, two handles on it (a writer, a reader) and `name`'s topic of `partitions`;
/// `None` (SKIPPED said) without an `iggy-server`.
async fn two_handles(name: &str, partitions: u32) -> Option<(IggyServer, Log, Log, TopicRef)> {
    let server = IggyServer::start().await?;
    let writer = open(&server).await;
    let reader = open(&server).await;
    let topic = TopicRef::new(name, "t");
    writer.ensure_topic(&topic, partitions).await.unwrap();
    Some((server, writer, reader, topic))
}

/// Whether `member` gets nothing within `wait`.
async fn nothing_within(member: &mut Box<dyn GroupConsumer>, wait: Duration) -> bool {
    member.poll(100, wait).await.unwrap().is_none()
}

/// Where each record of `delivery` was: (partition, offset).
fn placed(delivery: &agentlog::log::Delivery) -> Vec<(u32, u64)> {
    let partition = delivery.partition;
    delivery
        .records
        .iter()
        .map(|r| (partition, r.offset))
        .collect()
}

async fn read_all(log: &Log, topic: &TopicRef, partition: u32) -> Vec<Bytes> {
    let mut out = Vec::new();
    loop {
        let batch = log
            .read(topic, partition, out.len() as u64, 1000)
            .await
            .unwrap();
        if batch.is_empty() {
            return out;
        }
        out.extend(batch.into_iter().map(|r| r.payload));
    }
}

/// The shared suite, on one server (each case uses its own streams).
struct IggySubject {
    server: IggyServer,
}

#[async_trait::async_trait]
impl Subject for IggySubject {
    fn name(&self) -> &str {
        "iggy"
    }

    async fn open(&self) -> Log {
        open(&self.server).await
    }

    fn can_reopen(&self) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    run_all(&IggySubject { server }).await;
}

/// Our key routing is Iggy's: `partition_for_key` agrees with where the raw client's
/// `Partitioning::messages_key` puts a key, and with what `append` reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_partitioning_agrees_with_partition_for_key() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    let log = open(&server).await;
    let topic = TopicRef::new("keys", "routed");
    log.ensure_topic(&topic, 5).await.unwrap();
    log.ensure_topic(&topic, 9).await.unwrap(); // idempotent, count unchanged
    assert_eq!(log.partitions(&topic).await.unwrap(), 5);

    let raw = IggyClient::from_connection_string(&format!("iggy://iggy:iggy@{}", server.address()))
        .unwrap();
    raw.connect().await.unwrap();
    let (stream_id, topic_id) = (
        Identifier::named("keys").unwrap(),
        Identifier::named("routed").unwrap(),
    );

    let mut expected_ends = [0u64; 5];
    for i in 0..40 {
        let key = format!("task-{i}");
        let want = partition_for_key(key.as_bytes(), 5);
        let ours = log
            .append(&topic, key.as_bytes(), vec![payload("ours", i)])
            .await
            .unwrap();
        assert_eq!(ours.partition, want, "append routed {key} elsewhere");
        assert_eq!(ours.first_offset, expected_ends[want as usize]);
        expected_ends[want as usize] += 1;

        let mut messages = vec![
            IggyMessage::builder()
                .payload(payload("raw", i))
                .build()
                .unwrap(),
        ];
        let sent = raw
            .send_messages(
                &stream_id,
                &topic_id,
                &Partitioning::messages_key(key.as_bytes()).unwrap(),
                &mut messages,
            )
            .await
            .unwrap();
        assert_eq!(
            sent.confirmations[0].partition_id, want,
            "iggy routed {key} elsewhere"
        );
        assert_eq!(
            sent.confirmations[0].base_offset,
            expected_ends[want as usize]
        );
        expected_ends[want as usize] += 1;
    }
    assert_eq!(
        log.end_offsets(&topic).await.unwrap(),
        expected_ends.to_vec()
    );

    // Keys Iggy's own key routing refuses (empty, > 255 bytes) still route by the same hash.
    for key in [&b""[..], &[7u8; 300][..]] {
        let appended = log
            .append(&topic, key, vec![payload("odd", 0)])
            .await
            .unwrap();
        assert_eq!(appended.partition, partition_for_key(key, 5));
    }
    log.close().await.unwrap();
}

/// Offsets come from the send confirmation and end offsets tell an empty partition from one
/// holding a single record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_and_end_offsets() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    let log = open(&server).await;
    let topic = TopicRef::new("offsets", "t");
    log.ensure_topic(&topic, 1).await.unwrap();
    assert_eq!(log.end_offsets(&topic).await.unwrap(), vec![0]);
    let first = log
        .append(&topic, b"k", vec![payload("a", 0)])
        .await
        .unwrap();
    assert_eq!((first.first_offset, first.count), (0, 1));
    assert_eq!(log.end_offsets(&topic).await.unwrap(), vec![1]);
    let batch = (0..10).map(|i| payload("b", i)).collect();
    let second = log.append(&topic, b"k", batch).await.unwrap();
    assert_eq!((second.first_offset, second.count), (1, 10));
    assert_eq!(log.end_offsets(&topic).await.unwrap(), vec![11]);
    let records = log.read(&topic, 0, 5, 3).await.unwrap();
    let offsets: Vec<u64> = records.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![5, 6, 7]);
    assert_eq!(records[0].payload, payload("b", 4));
    assert!(log.read(&topic, 0, 11, 10).await.unwrap().is_empty());
    let missing = log.read(&topic, 3, 0, 10).await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::InvalidParams);
    let unknown = log
        .partitions(&TopicRef::new("offsets", "nope"))
        .await
        .unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::InvalidParams);
}

/// A watcher on another handle is served by the poller; one on the appending handle is
/// bumped by the append itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_end_sees_appends_from_any_handle() {
    let Some((_server, writer, reader, topic)) = two_handles("watch", 2).await else {
        return;
    };
    let partition = partition_for_key(b"key", 2);
    let mut local = writer.watch_end(&topic, partition).await.unwrap();
    let mut remote = reader.watch_end(&topic, partition).await.unwrap();
    assert_eq!(*remote.borrow_and_update(), 0);
    for round in 1..=20u64 {
        writer
            .append(&topic, b"key", vec![payload("w", 0)])
            .await
            .unwrap();
        // The local bump is synchronous with the append.
        assert_eq!(*local.borrow_and_update(), round);
        tokio::time::timeout(Duration::from_secs(2), remote.wait_for(|end| *end >= round))
            .await
            .expect("the poller did not see the append")
            .unwrap();
    }
}

/// SIGTERM and start again: the same handle reconnects; appends, reads, a follower and a
/// group member (after ghost recovery) all carry on, the member from its last commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_everything_resumes() {
    let Some(mut server) = IggyServer::start().await else {
        return;
    };
    let log = open(&server).await;
    let topic = TopicRef::new("restart", "t");
    log.ensure_topic(&topic, 1).await.unwrap();
    for i in 0..10 {
        log.append(&topic, b"k", vec![payload("before", i)])
            .await
            .unwrap();
    }

    let mut follower = Follower::new(log.clone(), topic.clone(), 0, 0)
        .await
        .unwrap();
    let mut seen = 0;
    while seen < 10 {
        seen += follower.next_batch().await.unwrap().len();
    }

    let mut member = log.join_group(&topic, "workers").await.unwrap();
    let delivery = member
        .poll(100, Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(delivery.records.len(), 10);
    // Polling again without committing continues after what was returned.
    assert!(nothing_within(&mut member, Duration::from_millis(50)).await);
    member.commit(0, 6).await.unwrap(); // 0..6 done, 6..10 not

    server.restart().await;

    let appended = log
        .append(&topic, b"k", vec![payload("after", 0)])
        .await
        .unwrap();
    assert_eq!(appended.first_offset, 10);
    assert_eq!(read_all(&log, &topic, 0).await.len(), 11);
    let batch = tokio::time::timeout(Duration::from_secs(5), follower.next_batch())
        .await
        .expect("the follower did not see the append after the restart")
        .unwrap();
    assert_eq!(batch[0].offset, 10);

    // The member's old session is a ghost on the restarted server; it recovers and, being a
    // new member, restarts from its commit: offsets 6..=10.
    let delivery = member
        .poll(100, Duration::from_secs(10))
        .await
        .unwrap()
        .expect("the member got nothing after the restart");
    let offsets: Vec<u64> = delivery.records.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![6, 7, 8, 9, 10]);
    member.commit(0, 11).await.unwrap();
    member.leave().await.unwrap();

    // A later member resumes from the restored commit.
    let mut next = log.join_group(&topic, "workers").await.unwrap();
    assert!(nothing_within(&mut next, Duration::from_millis(300)).await);
    next.leave().await.unwrap();
}

/// SIGKILL: with `messages_required_to_save = 1` every acknowledged append is on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_keeps_every_acknowledged_append() {
    let Some(mut server) = IggyServer::start().await else {
        return;
    };
    let log = open(&server).await;
    let topic = TopicRef::new("crash", "t");
    log.ensure_topic(&topic, 3).await.unwrap();
    let mut acknowledged = vec![Vec::new(); 3];
    for i in 0..60 {
        let key = format!("key-{}", i % 7);
        let batch: Vec<Bytes> = (0..(i % 4) + 1)
            .map(|j| payload(&key, i * 10 + j))
            .collect();
        let appended = log
            .append(&topic, key.as_bytes(), batch.clone())
            .await
            .unwrap();
        let acked = &mut acknowledged[appended.partition as usize];
        assert_eq!(appended.first_offset, acked.len() as u64);
        acked.extend(batch);
    }
    server.kill9_restart().await;

    let fresh = open(&server).await;
    let ends: Vec<u64> = acknowledged.iter().map(|a| a.len() as u64).collect();
    assert_eq!(fresh.end_offsets(&topic).await.unwrap(), ends);
    for (partition, acked) in acknowledged.iter().enumerate() {
        assert_eq!(&read_all(&fresh, &topic, partition as u32).await, acked);
    }
    // The old handle reconnects too.
    assert_eq!(log.end_offsets(&topic).await.unwrap(), ends);
}

/// `commit(p, n)` means "everything before n is done": a new member starts at exactly n, and
/// committing 0 stores nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commit_boundary() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    let log = open(&server).await;
    let topic = TopicRef::new("groups", "boundary");
    log.ensure_topic(&topic, 1).await.unwrap();
    let batch = (0..10).map(|i| payload("r", i)).collect();
    log.append(&topic, b"k", batch).await.unwrap();

    let mut first = log.join_group(&topic, "g").await.unwrap();
    let got = first
        .poll(4, Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        got.records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    first.commit(0, 0).await.unwrap();
    first.leave().await.unwrap();

    let mut second = log.join_group(&topic, "g").await.unwrap();
    let got = second
        .poll(4, Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.records[0].offset, 0, "commit(0) must not skip offset 0");
    second.commit(0, 3).await.unwrap();
    second.leave().await.unwrap();

    let mut third = log.join_group(&topic, "g").await.unwrap();
    let got = third
        .poll(100, Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.records.first().map(|r| r.offset), Some(3));
    assert_eq!(got.records.last().map(|r| r.offset), Some(9));
    third.leave().await.unwrap();
}

/// Bad credentials are a configuration error, not something to retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_credentials_are_config_errors() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    let options = IggyOptions::new(server.address(), "iggy".into(), "wrong".into());
    let err = IggyLog::connect(options).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
}

/// `retention=` in the URL sets the message expiry of the topics the log creates (twice the
/// retention; never for 0; twice the default without one), and a reopen with another one
/// updates an existing topic's, leaving its other settings as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_sets_and_updates_the_topics_message_expiry() {
    let Some(server) = IggyServer::start().await else {
        return;
    };
    let raw = IggyClient::from_connection_string(&format!("iggy://iggy:iggy@{}", server.address()))
        .unwrap();
    raw.connect().await.unwrap();
    let (stream_id, topic_id) = (
        Identifier::named("expiry").unwrap(),
        Identifier::named("t").unwrap(),
    );
    let topic = TopicRef::new("expiry", "t");
    let hours =
        |h: u64| IggyExpiry::ExpireDuration(IggyDuration::new(Duration::from_secs(h * 3600)));
    let opened = |query: &str| {
        let url = format!("{}{query}", server.url());
        async move { agentlog::log::open(&url).await.unwrap() }
    };
    let cases = [
        ("?retention=1h", Some(Duration::from_secs(3600)), hours(2)),
        (
            "?retention=12h",
            Some(Duration::from_secs(12 * 3600)),
            hours(24),
        ),
        (
            "?retention=0",
            Some(Duration::ZERO),
            IggyExpiry::NeverExpire,
        ),
        ("", None, hours(2 * 7 * 24)),
    ];
    for (i, (query, retention, expiry)) in cases.into_iter().enumerate() {
        let log = opened(query).await;
        assert_eq!(log.retention(), retention, "{query}");
        log.ensure_topic(&topic, 3).await.unwrap();
        if i == 0 {
            log.append(&topic, b"k", vec![payload("kept", 0)])
                .await
                .unwrap();
        }
        let details = raw.get_topic(&stream_id, &topic_id).await.unwrap().unwrap();
        assert_eq!(details.message_expiry, expiry, "{query}");
        // Created once, updated after: every other setting is the one it was created with.
        assert_eq!(details.partitions_count, 3);
        let settings = TopicCreateOptions::from_resource_options(&details.options);
        assert_eq!(settings.messages_required_to_save, Some(1), "{query}");
        assert_eq!(
            log.end_offsets(&topic).await.unwrap().iter().sum::<u64>(),
            1
        );
        // The server expires segments itself: none to list or delete.
        assert!(log.segments(&topic, 0).await.unwrap().is_empty());
        assert_eq!(log.delete_segments(&topic, 0, &[0]).await.unwrap(), 0);
        log.close().await.unwrap();
    }
}

/// On a topic of many partitions each partition's end is its own (empty, one record,
/// several), written by another handle or this one, the records read whole after it,
/// and a call never answers less than what was acknowledged before it started, however many
/// callers share a probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitions_end_offset_of_a_wide_topic_reads_the_writes_of_any_handle() {
    let Some((_server, writer, reader, topic)) = two_handles("wide", 40).await else {
        return;
    };
    for p in [0, 5, 7, 39] {
        assert_eq!(
            reader.end_offset(&topic, p).await.unwrap(),
            0,
            "partition {p}"
        );
    }
    writer
        .append_to(&topic, 5, vec![payload("five", 0)])
        .await
        .unwrap();
    let three = (0..3).map(|i| payload("seven", i)).collect();
    writer.append_to(&topic, 7, three).await.unwrap();
    assert_eq!(reader.end_offset(&topic, 5).await.unwrap(), 1);
    assert_eq!(reader.end_offset(&topic, 7).await.unwrap(), 3);
    assert_eq!(reader.end_offset(&topic, 0).await.unwrap(), 0);
    let ends = reader.end_offsets(&topic).await.unwrap();
    assert_eq!((ends[0], ends[5], ends[7], ends.len()), (0, 1, 3, 40));
    // The records themselves, read after the ends were learnt.
    assert_eq!(
        read_all(&reader, &topic, 7).await,
        (0..3).map(|i| payload("seven", i)).collect::<Vec<_>>()
    );
    writer
        .append_to(&topic, 7, vec![payload("seven", 3), payload("seven", 4)])
        .await
        .unwrap();
    assert_eq!(reader.end_offset(&topic, 7).await.unwrap(), 5);
    reader
        .append_to(&topic, 7, vec![payload("seven", 5)])
        .await
        .unwrap();
    assert_eq!(reader.end_offset(&topic, 7).await.unwrap(), 6);
    assert_eq!(read_all(&reader, &topic, 7).await.len(), 6);
    let missing = reader.end_offset(&topic, 40).await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::InvalidParams);

    // Read-your-writes under shared probes: appends acknowledged one at a time, readers
    // asking all along; none may see less than was acknowledged when it asked.
    let acknowledged = Arc::new(AtomicU64::new(6));
    let appends = {
        let (writer, topic, acknowledged) = (writer.clone(), topic.clone(), acknowledged.clone());
        tokio::spawn(async move {
            for i in 0..200 {
                let appended = writer
                    .append_to(&topic, 7, vec![payload("more", i)])
                    .await
                    .unwrap();
                acknowledged.store(appended.first_offset + 1, Ordering::SeqCst);
            }
        })
    };
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let (reader, topic, acknowledged) =
                (reader.clone(), topic.clone(), acknowledged.clone());
            tokio::spawn(async move {
                while acknowledged.load(Ordering::SeqCst) < 206 {
                    let before = acknowledged.load(Ordering::SeqCst);
                    let end = reader.end_offset(&topic, 7).await.unwrap();
                    assert!(end >= before, "end {end} after {before} were acknowledged");
                }
            })
        })
        .collect();
    appends.await.unwrap();
    for reader in readers {
        reader.await.unwrap();
    }
    assert_eq!(reader.end_offset(&topic, 7).await.unwrap(), 206);
    assert_eq!(read_all(&reader, &topic, 7).await.len(), 206);
}

/// A group member of a wide topic that has caught up skips the partitions with nothing new,
/// and still picks up what another handle appends to any of them, past its cursor and with
/// nothing delivered twice; a member joining after it gets what it left uncommitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_member_of_a_wide_topic_picks_up_what_another_handle_appends() {
    let Some((_server, writer, reader, topic)) = two_handles("wide-group", 40).await else {
        return;
    };
    for p in [3, 30] {
        writer
            .append_to(&topic, p, vec![payload("first", p as usize)])
            .await
            .unwrap();
    }
    let mut member = reader.join_group(&topic, "g").await.unwrap();
    let mut got = Vec::new();
    while got.len() < 2 {
        let delivery = member
            .poll(10, Duration::from_secs(5))
            .await
            .unwrap()
            .expect("the records written before the member joined");
        got.extend(placed(&delivery));
    }
    got.sort_unstable();
    assert_eq!(got, vec![(3, 0), (30, 0)]);
    member.commit(3, 1).await.unwrap();
    assert!(nothing_within(&mut member, Duration::from_millis(300)).await);
    for (round, p) in [0u32, 30, 39, 3].into_iter().enumerate() {
        writer
            .append_to(&topic, p, vec![payload("later", round)])
            .await
            .unwrap();
        let delivery = member
            .poll(10, Duration::from_secs(5))
            .await
            .unwrap()
            .expect("an append by another handle");
        let want = if p == 30 || p == 3 { 1 } else { 0 };
        assert_eq!(placed(&delivery), vec![(p, want)], "round {round}");
        assert_eq!(delivery.records[0].payload, payload("later", round));
    }
    assert!(nothing_within(&mut member, Duration::from_millis(300)).await);
    member.leave().await.unwrap();
    let mut next = reader.join_group(&topic, "g").await.unwrap();
    let mut again = Vec::new();
    while let Some(delivery) = next.poll(10, Duration::from_millis(500)).await.unwrap() {
        again.extend(placed(&delivery));
    }
    again.sort_unstable();
    assert_eq!(again, vec![(0, 0), (3, 1), (30, 0), (30, 1), (39, 0)]);
}
