//! The conformance case of addressing a partition by number: `append_to` and `end_offset`.

use agentlog::ErrorKind;
use agentlog::log::{Follower, TopicRef};
use bytes::Bytes;

use super::{SOON, Subject, collect, keys_per_partition, payloads};

/// `append_to` lands on the partition named, in order with keyed appends to it; `end_offset`
/// of each partition is `end_offsets`' entry; a partition the topic lacks is refused by both
/// (`InvalidParams`, nothing appended); an empty batch appends nothing and answers the end;
/// a follower of the partition is woken by `append_to`, and a consumer group is handed its
/// records; a reopened log keeps it all.
pub(super) async fn partition_addressing(subject: &dyn Subject, stream: String) {
    let name = subject.name().to_owned();
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 3).await.expect("ensure_topic");
    for p in 0..3 {
        assert_eq!(log.end_offset(&topic, p).await.expect("end_offset"), 0);
    }
    let record = |tag: &str| Bytes::from(tag.to_owned());

    let first = log
        .append_to(&topic, 2, vec![record("a"), record("b")])
        .await
        .expect("append_to");
    assert_eq!(
        (first.partition, first.first_offset, first.count),
        (2, 0, 2)
    );
    let key = &keys_per_partition(3)[2];
    let keyed = log
        .append(&topic, key.as_bytes(), vec![record("c")])
        .await
        .expect("append");
    assert_eq!((keyed.partition, keyed.first_offset), (2, 2), "{name}");
    let after = log
        .append_to(&topic, 2, vec![record("d")])
        .await
        .expect("append_to");
    assert_eq!((after.partition, after.first_offset), (2, 3), "{name}");
    let other = log
        .append_to(&topic, 0, vec![record("e")])
        .await
        .expect("append_to");
    assert_eq!((other.partition, other.first_offset), (0, 0), "{name}");

    let ends = log.end_offsets(&topic).await.expect("end_offsets");
    assert_eq!(ends, vec![1, 0, 4], "{name}");
    for (p, end) in (0u32..).zip(&ends) {
        assert_eq!(log.end_offset(&topic, p).await.expect("end_offset"), *end);
    }
    let read = log.read(&topic, 2, 0, 10).await.expect("read");
    assert_eq!(
        payloads(&read),
        ["a", "b", "c", "d"].map(record).to_vec(),
        "{name}"
    );

    // Nothing is appended anywhere for a partition the topic lacks.
    let refused = log
        .append_to(&topic, 3, vec![record("x")])
        .await
        .expect_err("append_to a partition the topic lacks");
    assert_eq!(
        refused.kind(),
        ErrorKind::InvalidParams,
        "{name}: {refused}"
    );
    let missing = log
        .end_offset(&topic, 3)
        .await
        .expect_err("end_offset of a partition the topic lacks");
    assert_eq!(
        missing.kind(),
        ErrorKind::InvalidParams,
        "{name}: {missing}"
    );
    assert!(
        log.end_offset(&TopicRef::new(topic.stream.clone(), "absent"), 0)
            .await
            .is_err(),
        "{name}: end_offset of a topic that does not exist"
    );
    let empty = log
        .append_to(&topic, 2, Vec::new())
        .await
        .expect("an empty append_to");
    assert_eq!((empty.first_offset, empty.count), (4, 0), "{name}");
    assert_eq!(
        log.end_offsets(&topic).await.expect("end_offsets"),
        ends,
        "{name}"
    );

    // A follower of partition 1 wakes for an append_to it.
    let mut follower = Follower::new(log.clone(), topic.clone(), 1, 0)
        .await
        .expect("follower");
    let appender = {
        let (log, topic) = (log.clone(), topic.clone());
        tokio::spawn(async move {
            log.append_to(&topic, 1, vec![Bytes::from_static(b"f")])
                .await
                .expect("append_to from another task")
        })
    };
    let woken = tokio::time::timeout(SOON, follower.next_batch())
        .await
        .expect("the follower was not woken by append_to")
        .expect("next_batch");
    assert_eq!(payloads(&woken), vec![record("f")], "{name}");
    assert_eq!(appender.await.expect("appender").partition, 1);

    // A consumer group hands out what append_to wrote like any other record.
    let mut member = log.join_group(&topic, "g").await.expect("join_group");
    let mut got: Vec<(u32, Bytes)> = collect(&mut member, 6, true)
        .await
        .into_iter()
        .map(|r| (r.partition, r.payload))
        .collect();
    got.sort_unstable();
    let want: Vec<(u32, Bytes)> = [(0, "e"), (1, "f"), (2, "a"), (2, "b"), (2, "c"), (2, "d")]
        .map(|(p, tag)| (p, record(tag)))
        .to_vec();
    assert_eq!(got, want, "{name}");
    member.leave().await.expect("leave");
    log.close().await.expect("close");

    if subject.can_reopen() {
        let log = subject.open().await;
        for (p, end) in [(0, 1), (1, 1), (2, 4)] {
            assert_eq!(
                log.end_offset(&topic, p)
                    .await
                    .expect("end_offset after reopen"),
                end,
                "{name}"
            );
        }
        log.close().await.expect("close");
    }
}
