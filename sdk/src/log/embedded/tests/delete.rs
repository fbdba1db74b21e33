//! Unit tests of deleting segments: reads over holes, reopening with holes, the read-only
//! follower, the index's memory, and readers racing deletions.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use rand::{Rng, SeedableRng};

use super::*;

fn topic() -> TopicRef {
    TopicRef::new("s", "t")
}

/// The record appended at `offset` in these tests: every test appends `payload(i)` at `i`.
fn payload(offset: u64) -> Bytes {
    Bytes::from(format!(
        "record-{offset:06}-{}",
        "x".repeat((offset % 40) as usize)
    ))
}

/// Small segments (a few dozen records each) and no syncing.
fn small(segment_bytes: u64) -> EmbeddedOptions {
    EmbeddedOptions::default()
        .fsync(FsyncPolicy::Never)
        .segment_bytes(segment_bytes)
}

/// A log in `dir` holding `count` records on partition 0, appended in batches of 1 to 3.
async fn filled(dir: &Path, options: EmbeddedOptions, count: u64) -> EmbeddedLog {
    let log = EmbeddedLog::open(dir.to_path_buf(), options).unwrap();
    log.ensure_topic(&topic(), 1).await.unwrap();
    append_up_to(&log, count).await;
    log
}

/// Append `payload(i)` for every offset from the end up to `count`, in batches of 1 to 3.
async fn append_up_to(log: &EmbeddedLog, count: u64) {
    let mut next = log.end_offsets(&topic()).await.unwrap()[0];
    while next < count {
        let n = (next % 3 + 1).min(count - next);
        let batch = (next..next + n).map(payload).collect();
        let appended = log.append(&topic(), b"k", batch).await.unwrap();
        assert_eq!(appended.first_offset, next);
        next += n;
    }
}

/// The offsets that must still be there after deleting `deleted` from `0..end`.
fn kept(end: u64, deleted: &[SegmentInfo]) -> Vec<u64> {
    (0..end)
        .filter(|o| !deleted.iter().any(|s| (s.base..s.end).contains(o)))
        .collect()
}

/// Check every read of partition 0 against `kept` (ascending): `read` from each offset gives
/// the records from the first kept one at or after it, `read_at` of everything gives `kept`.
async fn assert_reads(log: &EmbeddedLog, end: u64, kept: &[u64]) {
    assert_eq!(log.end_offsets(&topic()).await.unwrap(), vec![end]);
    for from in 0..end + 2 {
        let read = log.read(&topic(), 0, from, 5).await.unwrap();
        let want: Vec<u64> = kept
            .iter()
            .copied()
            .filter(|o| *o >= from)
            .take(5)
            .collect();
        let got: Vec<u64> = read.iter().map(|r| r.offset).collect();
        assert_eq!(got, want, "read from {from}");
        for record in read {
            assert_eq!(record.payload, payload(record.offset));
        }
    }
    let all: Vec<u64> = (0..end + 2).collect();
    let read = log.read_at(&topic(), 0, &all, &[]).await.unwrap();
    assert_eq!(read.iter().map(|r| r.offset).collect::<Vec<_>>(), kept);
    assert!(read.iter().all(|r| r.payload == payload(r.offset)));
    let whole = log.read(&topic(), 0, 0, usize::MAX).await.unwrap();
    assert_eq!(whole.iter().map(|r| r.offset).collect::<Vec<_>>(), kept);
}

#[tokio::test]
async fn a_deleted_middle_segment_is_a_hole_reads_step_over() {
    // With the tail cache on (sealed segments partly cached) and off (read from files).
    for cache in [usize::MAX, 0] {
        let dir = tempfile::tempdir().unwrap();
        let options = small(512).cache_bytes_per_partition(cache);
        let log = filled(dir.path(), options, 200).await;
        let sealed = log.segments(&topic(), 0).await.unwrap();
        assert!(sealed.len() >= 5, "{sealed:?}");
        assert_eq!(sealed[0].base, 0);
        for pair in sealed.windows(2) {
            assert_eq!(
                pair[0].end, pair[1].base,
                "sealed segments follow each other"
            );
        }
        assert!(sealed.iter().all(|s| s.bytes > 0 && s.last_write_ms > 0));

        let middle = sealed[2].clone();
        assert_eq!(
            log.delete_segments(&topic(), 0, &[middle.base])
                .await
                .unwrap(),
            1
        );
        assert!(!super::segments(dir.path()).iter().any(|p| {
            p.file_name().and_then(|n| n.to_str()) == Some(&segment::file_name(middle.base))
        }));
        let after = log.segments(&topic(), 0).await.unwrap();
        assert_eq!(after.len(), sealed.len() - 1);
        assert!(!after.contains(&middle));
        assert_reads(&log, 200, &kept(200, &[middle])).await;
        // Appends carry on at the end.
        append_up_to(&log, 210).await;
        log.close().await.unwrap();
    }
}

#[tokio::test]
async fn deleting_the_first_segments_leaves_a_partition_starting_later() {
    let dir = tempfile::tempdir().unwrap();
    let log = filled(dir.path(), small(512), 150).await;
    let sealed = log.segments(&topic(), 0).await.unwrap();
    let first: Vec<SegmentInfo> = sealed[..3].to_vec();
    let bases: Vec<u64> = first.iter().map(|s| s.base).collect();
    assert_eq!(log.delete_segments(&topic(), 0, &bases).await.unwrap(), 3);
    // Deleted once: asking again deletes nothing.
    assert_eq!(log.delete_segments(&topic(), 0, &bases).await.unwrap(), 0);
    assert_eq!(
        log.segments(&topic(), 0).await.unwrap()[0].base,
        first[2].end
    );
    assert_reads(&log, 150, &kept(150, &first)).await;
    let read = log.read(&topic(), 0, 0, 1).await.unwrap();
    assert_eq!(read[0].offset, first[2].end);
    log.close().await.unwrap();
}

#[tokio::test]
async fn a_directory_with_holes_reopens_durably_and_after_a_torn_tail() {
    for fsync in [FsyncPolicy::Always, FsyncPolicy::Never] {
        let dir = tempfile::tempdir().unwrap();
        let options = small(512).fsync(fsync);
        let log = filled(dir.path(), options.clone(), 200).await;
        let sealed = log.segments(&topic(), 0).await.unwrap();
        let deleted = vec![sealed[0].clone(), sealed[1].clone(), sealed[3].clone()];
        let bases: Vec<u64> = deleted.iter().map(|s| s.base).collect();
        assert_eq!(log.delete_segments(&topic(), 0, &bases).await.unwrap(), 3);
        log.close().await.unwrap();

        // Reopened as it was left: the first segment starts after 0, a gap in the middle.
        let log = EmbeddedLog::open(dir.path().to_path_buf(), options.clone()).unwrap();
        assert_reads(&log, 200, &kept(200, &deleted)).await;
        let reopened = log.segments(&topic(), 0).await.unwrap();
        assert_eq!(reopened.len(), sealed.len() - 3, "{fsync:?}");
        log.close().await.unwrap();

        // A crash mid-write leaves half a batch at the end of the last segment.
        let last = super::segments(dir.path()).pop().unwrap();
        let mut torn = Vec::new();
        segment::encode_batch(&mut torn, 200, &[payload(200), payload(201)]).unwrap();
        let mut bytes = std::fs::read(&last).unwrap();
        bytes.extend_from_slice(&torn[..torn.len() / 2]);
        std::fs::write(&last, bytes).unwrap();
        let log = EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap();
        assert_reads(&log, 200, &kept(200, &deleted)).await;
        append_up_to(&log, 220).await;
        let mut want = kept(200, &deleted);
        want.extend(200..220);
        assert_reads(&log, 220, &want).await;
        log.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_batch_out_of_sequence_inside_a_segment_is_still_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let log = filled(dir.path(), small(512), 100).await;
    let sealed = log.segments(&topic(), 0).await.unwrap();
    log.delete_segments(&topic(), 0, &[sealed[1].base])
        .await
        .unwrap();
    log.close().await.unwrap();
    // A batch claiming an offset its segment does not continue with.
    let last = super::segments(dir.path()).pop().unwrap();
    let mut bytes = std::fs::read(&last).unwrap();
    let mut stray = Vec::new();
    segment::encode_batch(&mut stray, 5000, &[payload(5000)]).unwrap();
    bytes.extend_from_slice(&stray);
    bytes.extend_from_slice(&stray);
    std::fs::write(&last, bytes).unwrap();
    let err = EmbeddedLog::open(dir.path().to_path_buf(), small(512)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
}

#[tokio::test]
async fn the_active_segment_and_unknown_bases_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let log = filled(dir.path(), small(512), 100).await;
    let sealed = log.segments(&topic(), 0).await.unwrap();
    let active = segment::parse_file_name(
        super::segments(dir.path())
            .last()
            .and_then(|p| p.file_name()?.to_str().map(str::to_owned))
            .as_deref()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        sealed.last().unwrap().end,
        active,
        "the active one is not listed"
    );
    let inside = sealed[0].base + 1;
    let deleted = log
        .delete_segments(&topic(), 0, &[active, 100, 7_777, inside, sealed[1].base])
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert_reads(&log, 100, &kept(100, &sealed[1..2])).await;
    // Memory mode keeps everything and lists nothing.
    let memory = EmbeddedLog::in_memory();
    memory.ensure_topic(&topic(), 1).await.unwrap();
    append_up_to(&memory, 50).await;
    assert!(memory.segments(&topic(), 0).await.unwrap().is_empty());
    assert_eq!(memory.delete_segments(&topic(), 0, &[0]).await.unwrap(), 0);
    assert_reads(&memory, 50, &(0..50).collect::<Vec<_>>()).await;
    // A partition that does not exist is still an error.
    let missing = log.delete_segments(&topic(), 3, &[0]).await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::InvalidParams);
    log.close().await.unwrap();
}

#[tokio::test]
async fn the_segment_holding_the_newest_record_stays_when_a_torn_tail_emptied_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let log = filled(dir.path(), small(512), 100).await;
    log.close().await.unwrap();
    // A segment the writer created and crashed before writing to: empty once reopened.
    let mut torn = Vec::new();
    segment::encode_batch(&mut torn, 100, &[payload(100)]).unwrap();
    let empty = dir
        .path()
        .join("topics/s/t/0")
        .join(segment::file_name(100));
    std::fs::write(&empty, &torn[..10]).unwrap();
    let log = EmbeddedLog::open(dir.path().to_path_buf(), small(512)).unwrap();
    let sealed = log.segments(&topic(), 0).await.unwrap();
    let bases: Vec<u64> = sealed.iter().map(|s| s.base).collect();
    assert_eq!(
        log.delete_segments(&topic(), 0, &bases).await.unwrap(),
        bases.len()
    );
    // The newest record is still there, so a read from anywhere before the end finds it.
    let read = log.read(&topic(), 0, 0, 10).await.unwrap();
    assert_eq!(read.last().map(|r| r.offset), Some(99));
    assert_eq!(log.end_offsets(&topic()).await.unwrap(), vec![100]);
    log.close().await.unwrap();
    // The read-only open copes with an empty newest file too (it is not a next segment).
    let reader = EmbeddedLog::open_read_only(dir.path().to_path_buf()).unwrap();
    assert_eq!(reader.end_offsets(&topic()).await.unwrap(), vec![100]);
}

#[tokio::test]
async fn a_read_only_follower_sees_deletions_and_steps_over_holes() {
    let dir = tempfile::tempdir().unwrap();
    let writer = filled(dir.path(), small(512), 60).await;
    let reader = EmbeddedLog::open_read_only(dir.path().to_path_buf()).unwrap();
    assert_reads(&reader, 60, &(0..60).collect::<Vec<_>>()).await;
    let seen = reader.segments(&topic(), 0).await.unwrap();
    assert_eq!(seen, writer.segments(&topic(), 0).await.unwrap());

    // The writer deletes a segment the reader has indexed...
    let mut deleted = vec![seen[1].clone()];
    writer
        .delete_segments(&topic(), 0, &[seen[1].base])
        .await
        .unwrap();
    // ...and appends on, deleting segments the reader has never seen.
    append_up_to(&writer, 300).await;
    let unseen: Vec<SegmentInfo> = writer
        .segments(&topic(), 0)
        .await
        .unwrap()
        .into_iter()
        .filter(|s| s.base >= 60)
        .take(3)
        .collect();
    assert_eq!(unseen.len(), 3);
    let bases: Vec<u64> = unseen.iter().map(|s| s.base).collect();
    writer.delete_segments(&topic(), 0, &bases).await.unwrap();
    deleted.extend(unseen);

    let want = kept(300, &deleted);
    assert_reads(&reader, 300, &want).await;
    assert_eq!(
        reader.segments(&topic(), 0).await.unwrap(),
        writer.segments(&topic(), 0).await.unwrap()
    );
    let refused = reader.delete_segments(&topic(), 0, &[0]).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Config);

    // A follower opened after the deletions starts where the first segment does.
    let late = EmbeddedLog::open_read_only(dir.path().to_path_buf()).unwrap();
    writer.delete_segments(&topic(), 0, &[0]).await.unwrap();
    deleted.push(seen[0].clone());
    assert_reads(&late, 300, &kept(300, &deleted)).await;
    writer.close().await.unwrap();
}

#[tokio::test]
async fn the_index_gives_its_memory_back() {
    let dir = tempfile::tempdir().unwrap();
    let log = filled(dir.path(), small(4096), 20_000).await;
    let partition = log.inner.partition(&topic(), 0).unwrap();
    let (batches, capacity) = partition.index_size().unwrap();
    assert!(batches > 9_000, "{batches}");
    let sealed = log.segments(&topic(), 0).await.unwrap();
    let bases: Vec<u64> = sealed.iter().map(|s| s.base).collect();
    assert_eq!(
        log.delete_segments(&topic(), 0, &bases).await.unwrap(),
        sealed.len()
    );
    let (left, room) = partition.index_size().unwrap();
    assert!(left < 100, "{left} batches left");
    assert!(room < capacity / 10, "capacity {capacity} -> {room}");
    // The dropped holes do not come back as memory either: the slots list is short.
    assert!(partition.slot_count().unwrap() <= 3);
    log.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readers_racing_deletions_get_records_or_skip_them_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    // No tail cache: reads go through the segments' maps, or `pread`.
    let options = small(2048).cache_bytes_per_partition(0);
    let log = Arc::new(filled(dir.path(), options, 3_000).await);
    let done = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for seed in 0..3u64 {
        let (log, done) = (Arc::clone(&log), Arc::clone(&done));
        readers.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut rounds = 0u64;
            while !done.load(Ordering::Acquire) || rounds < 100 {
                rounds += 1;
                let end = log.end_offsets(&topic()).await.unwrap()[0];
                let from = rng.random_range(0..end);
                let read = log.read(&topic(), 0, from, 64).await.unwrap();
                let mut last = None;
                for record in &read {
                    assert!(record.offset >= from);
                    assert!(last.is_none_or(|l| record.offset > l));
                    assert_eq!(record.payload, payload(record.offset), "read from {from}");
                    last = Some(record.offset);
                }
                // The same records again at the places the read gave: they or nothing.
                let offsets: Vec<u64> = read.iter().map(|r| r.offset).collect();
                let places: Vec<Place> = read.iter().map(|r| r.place).collect();
                let again = log.read_at(&topic(), 0, &offsets, &places).await.unwrap();
                for record in &again {
                    assert_eq!(record.payload, payload(record.offset), "read at places");
                }
                let asked: BTreeSet<u64> = (0..32).map(|_| rng.random_range(0..end)).collect();
                let asked: Vec<u64> = asked.into_iter().collect();
                let read = log.read_at(&topic(), 0, &asked, &[]).await.unwrap();
                let mut rest = asked.iter();
                for record in &read {
                    assert!(rest.any(|o| *o == record.offset), "read_at out of order");
                    assert_eq!(record.payload, payload(record.offset), "read_at");
                }
                tokio::task::yield_now().await;
            }
            rounds
        }));
    }
    let appender = {
        let log = Arc::clone(&log);
        tokio::spawn(async move { append_up_to(&log, 6_000).await })
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(99);
    let mut deleted = 0;
    while deleted < 40 {
        let sealed = log.segments(&topic(), 0).await.unwrap();
        if sealed.is_empty() {
            tokio::task::yield_now().await;
            continue;
        }
        // Middles and fronts, one or two at a time.
        let pick = sealed[rng.random_range(0..sealed.len())].base;
        let also = sealed[0].base;
        deleted += log
            .delete_segments(&topic(), 0, &[pick, also])
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    appender.await.unwrap();
    done.store(true, Ordering::Release);
    for reader in readers {
        assert!(reader.await.unwrap() >= 100);
    }
    assert_eq!(log.end_offsets(&topic()).await.unwrap(), vec![6_000]);
}
