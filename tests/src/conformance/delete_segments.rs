//! The conformance case of deleting segments: what `segments` lists, what
//! `delete_segments` of it leaves, and that every read afterwards is clean.

use agentlog::log::{Log, SegmentInfo, TopicRef};
use bytes::Bytes;

use super::Subject;

/// `delete_segments` of (every other one of) the bases `segments` listed: end offsets do not
/// move, no listed segment is the active one, and every read after it is clean: `read` from
/// any offset returns the records from the first one left at or after it, `read_at` leaves
/// out exactly the deleted offsets, every payload is the one appended. On a backend that
/// lists no segments (Iggy, memory) nothing is deleted and nothing changes; a file backend
/// with small segments (`segment_bytes=`) deletes for real. Done again after a reopen.
pub(super) async fn delete_segments(subject: &dyn Subject, stream: String) {
    let log = subject.open().await;
    let topic = TopicRef::new(stream, "t");
    log.ensure_topic(&topic, 1).await.expect("ensure_topic");
    let record = |i: u64| Bytes::from(format!("seg-{i:05}-{}", "y".repeat((i % 64) as usize)));
    let mut end = 0u64;
    while end < 600 {
        let n = end % 4 + 1;
        let batch = (end..end + n).map(record).collect();
        log.append(&topic, b"k", batch).await.expect("append");
        end += n;
    }
    let sealed = log.segments(&topic, 0).await.expect("segments");
    for pair in sealed.windows(2) {
        assert!(
            pair[0].end <= pair[1].base,
            "{}: {sealed:?}",
            subject.name()
        );
    }
    assert!(
        sealed.iter().all(|s| s.base < s.end && s.end < end),
        "{}: sealed segments end before the end (the active one is not listed): {sealed:?}",
        subject.name()
    );
    let doomed: Vec<SegmentInfo> = sealed.iter().step_by(2).cloned().collect();
    let mut bases: Vec<u64> = doomed.iter().map(|s| s.base).collect();
    // Bases of no sealed segment are ignored: the end, and offsets past it.
    bases.extend([end, end + 10, u64::MAX]);
    let deleted = log
        .delete_segments(&topic, 0, &bases)
        .await
        .expect("delete_segments");
    assert_eq!(deleted, doomed.len(), "{}", subject.name());
    assert_eq!(
        log.delete_segments(&topic, 0, &bases)
            .await
            .expect("delete again"),
        0
    );
    let left = log.segments(&topic, 0).await.expect("segments after");
    assert!(left.iter().all(|s| !doomed.contains(s)), "{left:?}");
    let kept: Vec<u64> = (0..end)
        .filter(|o| !doomed.iter().any(|s| (s.base..s.end).contains(o)))
        .collect();
    assert_clean_reads(&log, &topic, end, &kept, &record, subject.name()).await;
    log.close().await.expect("close");
    if subject.can_reopen() {
        let log = subject.open().await;
        assert_clean_reads(&log, &topic, end, &kept, &record, subject.name()).await;
        log.close().await.expect("close");
    }
}

/// Every read of partition 0 of `topic` agrees with `kept` (ascending offsets) below `end`.
async fn assert_clean_reads(
    log: &Log,
    topic: &TopicRef,
    end: u64,
    kept: &[u64],
    record: &impl Fn(u64) -> Bytes,
    name: &str,
) {
    assert_eq!(
        log.end_offsets(topic).await.expect("end_offsets"),
        vec![end],
        "{name}: deleting segments moved the end"
    );
    for from in (0..end + 3).step_by(7) {
        let read = log.read(topic, 0, from, 10).await.expect("read");
        let want: Vec<u64> = kept
            .iter()
            .copied()
            .filter(|o| *o >= from)
            .take(10)
            .collect();
        let got: Vec<u64> = read.iter().map(|r| r.offset).collect();
        // A backend may return fewer than asked, never other records.
        assert!(
            !got.is_empty() || want.is_empty(),
            "{name}: read from {from} returned nothing before the end"
        );
        assert_eq!(got, want[..got.len()], "{name}: read from {from}");
        assert!(read.iter().all(|r| r.payload == record(r.offset)), "{name}");
    }
    let all: Vec<u64> = (0..end + 3).collect();
    let read = log.read_at(topic, 0, &all).await.expect("read_at");
    assert_eq!(
        read.iter().map(|r| r.offset).collect::<Vec<_>>(),
        kept,
        "{name}: read_at"
    );
    assert!(read.iter().all(|r| r.payload == record(r.offset)), "{name}");
}
