//! Tests of the fault layer, and of the default `read_at` over its short reads.
#![allow(clippy::unwrap_used)]

use bytes::Bytes;
use tokio::sync::watch;

use super::*;
use crate::log::embedded::{EmbeddedLog, EmbeddedOptions, FsyncPolicy};
use crate::log::{GroupConsumer, Log, SegmentInfo, open};

fn topic() -> TopicRef {
    TopicRef::new("s", "t")
}

fn payload(i: u64) -> Bytes {
    Bytes::from(format!("r-{i}"))
}

async fn faulted(log: Log) -> (Log, Faults) {
    let faults = Faults::new();
    let log = log.layer(FaultLayer::new(faults.clone()));
    log.ensure_topic(&topic(), 1).await.unwrap();
    (log, faults)
}

async fn memory() -> (Log, Faults) {
    faulted(open("memory://").await.unwrap()).await
}

fn offsets(records: &[StoredRecord]) -> Vec<u64> {
    records.iter().map(|r| r.offset).collect()
}

async fn ends(log: &Log, topic: &TopicRef) -> Vec<u64> {
    log.end_offsets(topic).await.unwrap()
}

#[tokio::test]
async fn the_nth_append_fails_with_the_kind_asked_for() {
    let (log, faults) = memory().await;
    faults.fail_append(2);
    faults.fail_append_with(3, ErrorKind::Timeout);
    log.append(&topic(), b"k", vec![payload(0)]).await.unwrap();
    let second = log.append(&topic(), b"k", vec![payload(1)]).await;
    assert_eq!(second.unwrap_err().kind(), ErrorKind::Unavailable);
    let third = log.append(&topic(), b"k", vec![payload(2)]).await;
    assert_eq!(third.unwrap_err().kind(), ErrorKind::Timeout);
    log.append(&topic(), b"k", vec![payload(3)]).await.unwrap();
    // The failed appends stored nothing.
    assert_eq!(ends(&log, &topic()).await, [2]);
    assert_eq!(faults.counts().append, 2);
    // append_all is not an append.
    faults.fail_append(1);
    let batch = AppendBatch {
        topic: &topic(),
        key: b"k",
        payloads: vec![payload(4)],
        applied_by: None,
    };
    log.append_all(vec![batch]).await.unwrap();
    assert!(log.append(&topic(), b"k", vec![payload(5)]).await.is_err());
}

fn three_batches<'a>(topics: &'a [TopicRef; 3]) -> Vec<AppendBatch<'a>> {
    topics
        .iter()
        .enumerate()
        .map(|(i, topic)| AppendBatch {
            topic,
            key: b"k",
            payloads: vec![payload(i as u64)],
            applied_by: None,
        })
        .collect()
}

async fn three_topics(log: &Log) -> [TopicRef; 3] {
    let topics = ["a", "b", "c"].map(|name| TopicRef::new("s", name));
    for topic in &topics {
        log.ensure_topic(topic, 1).await.unwrap();
    }
    topics
}

async fn all_ends(log: &Log, topics: &[TopicRef]) -> Vec<u64> {
    let mut out = Vec::new();
    for topic in topics {
        out.extend(ends(log, topic).await);
    }
    out
}

#[tokio::test]
async fn a_failed_batch_stops_append_all_there() {
    let (log, faults) = memory().await;
    let topics = three_topics(&log).await;
    // Armed for batch 3: an append_all of three batches has none, and leaves it armed.
    faults.fail_batch(3);
    log.append_all(three_batches(&topics)).await.unwrap();
    assert_eq!(faults.counts().batch, 0);
    faults.fail_batch_with(1, ErrorKind::Timeout);
    let err = log.append_all(three_batches(&topics)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    // Batch 0 went in, batches 1 and 2 did not.
    assert_eq!(all_ends(&log, &topics).await, [2, 1, 1]);
    faults.fail_batch(0);
    let err = log.append_all(three_batches(&topics)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(all_ends(&log, &topics).await, [2, 1, 1]);
    assert_eq!(faults.counts().batch, 2);
    log.append_all(three_batches(&topics)).await.unwrap();
    assert_eq!(all_ends(&log, &topics).await, [3, 2, 2]);
}

#[tokio::test]
async fn a_crash_between_two_appends_keeps_the_first_and_fails_everything_until_healed() {
    let (log, faults) = memory().await;
    let topics = three_topics(&log).await;
    log.append(&topic(), b"k", vec![payload(0)]).await.unwrap();
    let mut member = log.join_group(&topic(), "g").await.unwrap();
    faults.crash_between_appends();
    // One batch has no "between": it goes through and the crash stays armed.
    log.append_all(three_batches(&topics)[..1].to_vec())
        .await
        .unwrap();
    assert!(!faults.is_crashed());
    let err = log.append_all(three_batches(&topics)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(faults.is_crashed());
    let refused = [
        log.read(&topic(), 0, 0, 10).await.unwrap_err(),
        log.append(&topic(), b"k", vec![payload(1)])
            .await
            .unwrap_err(),
        log.end_offsets(&topic()).await.unwrap_err(),
        member.poll(10, Duration::from_secs(5)).await.unwrap_err(),
        member.commit(0, 1).await.unwrap_err(),
    ];
    for err in &refused {
        assert_eq!(err.kind(), ErrorKind::Unavailable);
    }
    let counts = faults.counts();
    assert_eq!((counts.crash, counts.refused_crashed), (1, 5));
    faults.heal();
    assert!(!faults.is_crashed());
    // Only batch 0 of the crashed call landed.
    assert_eq!(all_ends(&log, &topics).await, [2, 0, 0]);
    assert_eq!(ends(&log, &topic()).await, [1]);
    assert!(
        member
            .poll(10, Duration::from_secs(5))
            .await
            .unwrap()
            .is_some()
    );
    // Healing disarmed the crash: the next append_all is whole.
    log.append_all(three_batches(&topics)).await.unwrap();
    assert_eq!(faults.counts().crash, 1);
}

#[tokio::test]
async fn a_crash_on_a_file_log_leaves_batch_0_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let options = EmbeddedOptions::default().fsync(FsyncPolicy::Never);
    let file = EmbeddedLog::open(dir.path().to_path_buf(), options.clone()).unwrap();
    let (log, faults) = faulted(Log::new(file)).await;
    let topics = three_topics(&log).await;
    faults.crash_between_appends();
    assert!(log.append_all(three_batches(&topics)).await.is_err());
    // The process "died": heal only to close the log and free its directory.
    faults.heal();
    log.close().await.unwrap();
    let reopened = Log::new(EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap());
    assert_eq!(all_ends(&reopened, &topics).await, [1, 0, 0]);
    reopened.close().await.unwrap();
}

#[tokio::test]
async fn a_dropped_connection_fails_the_next_calls_of_any_kind() {
    let (log, faults) = memory().await;
    let mut member = log.join_group(&topic(), "g").await.unwrap();
    faults.drop_connection(3);
    assert_eq!(
        log.partitions(&topic()).await.unwrap_err().kind(),
        ErrorKind::Unavailable
    );
    let polled = member.poll(1, Duration::from_millis(1)).await;
    assert_eq!(polled.unwrap_err().kind(), ErrorKind::Unavailable);
    assert_eq!(
        log.watch_end(&topic(), 0).await.unwrap_err().kind(),
        ErrorKind::Unavailable
    );
    assert_eq!(log.partitions(&topic()).await.unwrap(), 1);
    assert_eq!(faults.counts().dropped, 3);
}

#[tokio::test]
async fn polls_and_commits_fail_once_per_arming() {
    let (log, faults) = memory().await;
    log.append(&topic(), b"k", vec![payload(0)]).await.unwrap();
    let mut member = log.join_group(&topic(), "g").await.unwrap();
    faults.fail_poll_with(ErrorKind::Timeout);
    faults.fail_commit();
    let err = member.poll(10, Duration::from_secs(5)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let delivery = member.poll(10, Duration::from_secs(5)).await.unwrap();
    assert_eq!(delivery.map(|d| d.records.len()), Some(1));
    let err = member.commit(0, 1).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    // The failed commit committed nothing: the next member gets the record again.
    drop(member);
    let mut member = log.join_group(&topic(), "g").await.unwrap();
    let again = member.poll(10, Duration::from_secs(5)).await.unwrap();
    assert_eq!(again.map(|d| d.records.len()), Some(1));
    member.commit(0, 1).await.unwrap();
    drop(member);
    let mut member = log.join_group(&topic(), "g").await.unwrap();
    let after = member.poll(10, Duration::from_millis(20)).await.unwrap();
    assert!(after.is_none());
    let counts = faults.counts();
    assert_eq!((counts.poll, counts.commit), (1, 1));
}

#[tokio::test]
async fn a_delayed_call_waits_and_the_others_do_not() {
    let (log, faults) = memory().await;
    faults.delay(LogOp::Append, Duration::from_secs(600));
    // Reads are not delayed (the upper bound only guards against a hang).
    let t = topic();
    let read = tokio::time::timeout(Duration::from_secs(10), log.read(&t, 0, 0, 1));
    assert!(read.await.unwrap().unwrap().is_empty());
    let delayed = {
        let log = log.clone();
        tokio::spawn(async move { log.append(&topic(), b"k", vec![payload(0)]).await })
    };
    // The append sleeps its 600 s: it has not finished after several turns of the runtime.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!delayed.is_finished());
    delayed.abort();
    assert_eq!(ends(&log, &topic()).await, [0]);
    let counts = faults.counts();
    assert_eq!(counts.delays, 1);
    faults.clear_delays();
    faults.delay_all(Duration::from_millis(1));
    log.end_offsets(&topic()).await.unwrap();
    assert_eq!(faults.counts().delays, 2);
}

/// The records of the conformance suite's `read_at` case: 0..5 alone, 5..10 in one batch,
/// 10 and 11 alone.
async fn twelve_records() -> (Log, Faults) {
    let (log, faults) = memory().await;
    for i in 0..5 {
        log.append(&topic(), b"k", vec![payload(i)]).await.unwrap();
    }
    log.append(&topic(), b"k", (5..10).map(payload).collect())
        .await
        .unwrap();
    for i in 10..12 {
        log.append(&topic(), b"k", vec![payload(i)]).await.unwrap();
    }
    (log, faults)
}

#[tokio::test]
async fn reads_come_back_short_and_read_at_reads_on() {
    let (log, faults) = twelve_records().await;
    faults.short_reads(3);
    assert_eq!(
        offsets(&log.read(&topic(), 0, 2, 10).await.unwrap()),
        [2, 3, 4]
    );
    assert_eq!(offsets(&log.read(&topic(), 0, 2, 2).await.unwrap()), [2, 3]);
    assert_eq!(faults.counts().short_reads, 1);
    let cases: [(&[u64], &[u64]); 8] = [
        (&[], &[]),
        (&[0, 2, 4], &[0, 2, 4]),
        (&[3, 4, 5, 6], &[3, 4, 5, 6]),
        (&[6, 8], &[6, 8]),
        (&[9, 10, 11], &[9, 10, 11]),
        (&[1, 11, 12, 40], &[1, 11]),
        // Runs longer than a read: 0..=11 is four reads of three, 4..=11 three reads.
        (
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        ),
        (
            &[1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
            &[1, 4, 5, 6, 7, 8, 9, 10, 11],
        ),
    ];
    for cap in [1, 2, 3, 5] {
        faults.short_reads(cap);
        for (asked, found) in cases {
            let read = log.read_at(&topic(), 0, asked).await.unwrap();
            assert_eq!(offsets(&read), found, "cap {cap}: read_at {asked:?}");
            let expected: Vec<_> = found.iter().map(|o| payload(*o)).collect();
            let got: Vec<_> = read.into_iter().map(|r| r.payload).collect();
            assert_eq!(got, expected, "cap {cap}: read_at {asked:?}");
        }
    }
    assert!(faults.counts().short_reads > 10);
    // The default saw short reads; the unfaulted log agrees with it.
    faults.full_reads();
    let all: Vec<u64> = (0..12).collect();
    assert_eq!(log.read_at(&topic(), 0, &all).await.unwrap().len(), 12);
}

/// A backend whose `read` returns one record at most and which keeps the trait's `read_at`.
#[derive(Debug)]
struct OneAtATime(EmbeddedLog);

#[async_trait]
impl LogBackend for OneAtATime {
    async fn ensure_topic(&self, topic: &TopicRef, partitions: u32) -> Result<()> {
        self.0.ensure_topic(topic, partitions).await
    }
    async fn partitions(&self, topic: &TopicRef) -> Result<u32> {
        self.0.partitions(topic).await
    }
    async fn append(&self, topic: &TopicRef, key: &[u8], payloads: Vec<Bytes>) -> Result<Appended> {
        self.0.append(topic, key, payloads).await
    }
    async fn append_to(
        &self,
        topic: &TopicRef,
        partition: u32,
        payloads: Vec<Bytes>,
    ) -> Result<Appended> {
        self.0.append_to(topic, partition, payloads).await
    }
    async fn read(
        &self,
        topic: &TopicRef,
        partition: u32,
        from: u64,
        max: usize,
    ) -> Result<Vec<StoredRecord>> {
        self.0.read(topic, partition, from, max.min(1)).await
    }
    fn prefetcher(&self, topic: &TopicRef) -> Option<crate::log::raw::Prefetcher> {
        self.0.prefetcher(topic)
    }
    async fn end_offsets(&self, topic: &TopicRef) -> Result<Vec<u64>> {
        self.0.end_offsets(topic).await
    }
    async fn watch_end(&self, topic: &TopicRef, partition: u32) -> Result<watch::Receiver<u64>> {
        self.0.watch_end(topic, partition).await
    }
    async fn segments(&self, topic: &TopicRef, partition: u32) -> Result<Vec<SegmentInfo>> {
        self.0.segments(topic, partition).await
    }
    async fn delete_segments(
        &self,
        topic: &TopicRef,
        partition: u32,
        bases: &[u64],
    ) -> Result<usize> {
        self.0.delete_segments(topic, partition, bases).await
    }
    async fn join_group(&self, topic: &TopicRef, group: &str) -> Result<Box<dyn GroupConsumer>> {
        self.0.join_group(topic, group).await
    }
    async fn ready(&self) -> Result<()> {
        self.0.ready().await
    }

    async fn close(&self) -> Result<()> {
        self.0.close().await
    }
}

#[tokio::test]
async fn the_traits_default_read_at_reads_on_after_a_short_read() {
    let log = Log::new(OneAtATime(EmbeddedLog::in_memory()));
    log.ensure_topic(&topic(), 1).await.unwrap();
    log.append(&topic(), b"k", (0..6).map(payload).collect())
        .await
        .unwrap();
    let read = log
        .read_at(&topic(), 0, &[0, 1, 2, 4, 5, 6, 7])
        .await
        .unwrap();
    assert_eq!(offsets(&read), [0, 1, 2, 4, 5]);
}

#[tokio::test]
async fn read_at_goes_to_the_backends_own_unless_reads_are_short() {
    // Metrics under the faults count what reaches the backend.
    let metrics = crate::log::layers::LogMetrics::new();
    let (log, faults) = faulted(
        Log::new(EmbeddedLog::in_memory())
            .layer(crate::log::layers::MetricsLayer::new(metrics.clone())),
    )
    .await;
    log.append(&topic(), b"k", (0..12).map(payload).collect())
        .await
        .unwrap();
    let read = log.read_at(&topic(), 0, &[0, 5, 6, 11]).await.unwrap();
    assert_eq!(offsets(&read), [0, 5, 6, 11]);
    assert_eq!(
        (metrics.calls(LogOp::ReadAt), metrics.calls(LogOp::Read)),
        (1, 0)
    );
    faults.short_reads(1);
    let read = log.read_at(&topic(), 0, &[0, 5, 6, 11]).await.unwrap();
    assert_eq!(offsets(&read), [0, 5, 6, 11]);
    assert_eq!(
        (metrics.calls(LogOp::ReadAt), metrics.calls(LogOp::Read)),
        (1, 4)
    );
    assert_eq!(faults.counts().short_reads, 1);
}
