//! Unit tests of the embedded log: recovery, corruption, locking, policies; a read-only open in
//! `read_only.rs`, deleting segments in `delete.rs`, groups in `groups.rs`, reads at places in
//! `place.rs`, appends and reads giving their thread back in `coop.rs`, appliers' watches in
//! `appliers.rs`, the order of acknowledgements and wake-ups in `wake_order.rs`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::{Rng, SeedableRng};

use super::*;
use crate::log::partition_for_key;

mod appliers;
mod coop;
mod delete;
mod groups;
mod place;
mod read_only;
mod wake_order;

pub(super) fn topic() -> TopicRef {
    TopicRef::new("s", "t")
}

pub(super) fn payload(i: usize) -> Bytes {
    Bytes::from(format!("record-{i:05}-{}", "x".repeat(i % 50)))
}

pub(super) fn never() -> EmbeddedOptions {
    EmbeddedOptions::default().fsync(FsyncPolicy::Never)
}

/// Append `batches` batches of `per` records to partition 0 of a 1-partition topic.
pub(super) async fn fill(
    dir: &Path,
    options: EmbeddedOptions,
    batches: usize,
    per: usize,
) -> Vec<Bytes> {
    let log = EmbeddedLog::open(dir.to_path_buf(), options).unwrap();
    log.ensure_topic(&topic(), 1).await.unwrap();
    let mut all = Vec::new();
    for b in 0..batches {
        let records: Vec<Bytes> = (0..per).map(|i| payload(b * per + i)).collect();
        all.extend(records.iter().cloned());
        let appended = log.append(&topic(), b"k", records).await.unwrap();
        assert_eq!(appended.first_offset, (b * per) as u64);
    }
    log.close().await.unwrap();
    all
}

pub(super) async fn read_all(log: &EmbeddedLog, partition: u32) -> Result<Vec<Bytes>> {
    let records = log.read(&topic(), partition, 0, usize::MAX).await?;
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.offset, i as u64);
    }
    Ok(records.into_iter().map(|r| r.payload).collect())
}

/// The segment files of partition 0 of topic s/t, in order.
pub(super) fn segments(dir: &Path) -> Vec<PathBuf> {
    let part = dir.join("topics/s/t/0");
    let mut files: Vec<PathBuf> = std::fs::read_dir(part)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn memory_log_appends_reads_and_watches() {
    let log = EmbeddedLog::in_memory();
    log.ensure_topic(&topic(), 3).await.unwrap();
    let mut end = log
        .watch_end(&topic(), partition_for_key(b"k", 3))
        .await
        .unwrap();
    let appended = log
        .append(&topic(), b"k", vec![payload(0), payload(1)])
        .await
        .unwrap();
    assert_eq!(appended.partition, partition_for_key(b"k", 3));
    assert_eq!((appended.first_offset, appended.count), (0, 2));
    end.changed().await.unwrap();
    assert_eq!(*end.borrow(), 2);
    let read = log.read(&topic(), appended.partition, 1, 10).await.unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].payload, payload(1));
    assert!(
        log.read(&topic(), appended.partition, 2, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn reopen_keeps_topics_records_and_partition_counts() {
    let dir = tempfile::tempdir().unwrap();
    let written = fill(dir.path(), never(), 10, 7).await;
    let log = EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap();
    log.ensure_topic(&topic(), 5).await.unwrap();
    assert_eq!(log.partitions(&topic()).await.unwrap(), 1);
    assert_eq!(read_all(&log, 0).await.unwrap(), written);
    let appended = log
        .append(&topic(), b"k", vec![payload(999)])
        .await
        .unwrap();
    assert_eq!(appended.first_offset, 70);
}

#[tokio::test]
async fn torn_tails_are_cut_at_the_last_whole_batch() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let template = tempfile::tempdir().unwrap();
    let written = fill(template.path(), never(), 20, 3).await;
    let original = std::fs::read(&segments(template.path())[0]).unwrap();
    for _ in 0..40 {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(template.path(), dir.path());
        let cut = rng.random_range(0..original.len());
        let segment = &segments(dir.path())[0];
        std::fs::write(segment, &original[..cut]).unwrap();

        let log = EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap();
        let kept = read_all(&log, 0).await.unwrap();
        assert!(
            kept.len() % 3 == 0,
            "only whole batches survive (cut at {cut})"
        );
        assert_eq!(kept[..], written[..kept.len()], "cut at {cut}");
        // The log goes on from the cut, and the file was truncated so it stays readable.
        let appended = log
            .append(&topic(), b"k", vec![payload(1000)])
            .await
            .unwrap();
        assert_eq!(appended.first_offset, kept.len() as u64);
        log.close().await.unwrap();
        let log = EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap();
        let again = read_all(&log, 0).await.unwrap();
        assert_eq!(again.len(), kept.len() + 1);
        assert_eq!(again[kept.len()], payload(1000));
    }
}

#[tokio::test]
async fn mid_segment_bit_flips_refuse_open_with_corrupt() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let template = tempfile::tempdir().unwrap();
    fill(template.path(), never(), 10, 2).await;
    let original = std::fs::read(&segments(template.path())[0]).unwrap();
    let last_batch =
        segment::HEADER_LEN + 2 * (4 + payload(18).len()) + payload(19).len() - payload(18).len();
    for _ in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(template.path(), dir.path());
        let mut bytes = original.clone();
        let at = rng.random_range(0..original.len() - last_batch);
        bytes[at] ^= 1 << rng.random_range(0..8);
        std::fs::write(&segments(dir.path())[0], &bytes).unwrap();

        let err = EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
        assert!(
            err.message().contains("00000000000000000000.seg at byte"),
            "{err}"
        );

        // The opt-in repair keeps the batches before the damage.
        let log =
            EmbeddedLog::open(dir.path().to_path_buf(), never().truncate_corrupt(true)).unwrap();
        let kept = read_all(&log, 0).await.unwrap();
        assert!(kept.len() < 20);
    }
}

#[tokio::test]
async fn damage_after_open_is_reported_by_read_never_returned() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), never(), 4, 2).await;
    // No tail cache: every read goes to the file.
    let log = EmbeddedLog::open(
        dir.path().to_path_buf(),
        never().cache_bytes_per_partition(0),
    )
    .unwrap();
    assert_eq!(read_all(&log, 0).await.unwrap().len(), 8);
    let segment = &segments(dir.path())[0];
    let mut bytes = std::fs::read(segment).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(segment, &bytes).unwrap();
    let err = read_all(&log, 0).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(err.message().contains(".seg at byte"), "{err}");
    // Batches before the damage still read fine.
    assert_eq!(log.read(&topic(), 0, 0, 2).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_second_open_of_the_same_dir_fails_until_close_or_drop() {
    let dir = tempfile::tempdir().unwrap();
    let first = EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap();
    let err = EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.message().contains("in use by another process"), "{err}");
    first.close().await.unwrap();
    let second = EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap();
    drop(second);
    EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fsync_policy_keeps_concurrent_appends() {
    for policy in [
        FsyncPolicy::Always,
        FsyncPolicy::Interval(Duration::from_millis(5)),
        FsyncPolicy::Never,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let options = EmbeddedOptions::default().fsync(policy);
        let log = Arc::new(EmbeddedLog::open(dir.path().to_path_buf(), options.clone()).unwrap());
        log.ensure_topic(&topic(), 4).await.unwrap();
        let mut tasks = Vec::new();
        for t in 0..8 {
            let log = Arc::clone(&log);
            tasks.push(tokio::spawn(async move {
                for i in 0..20 {
                    let key = format!("key-{t}");
                    let batch = vec![payload(t * 100 + i), payload(t * 100 + i + 50)];
                    log.append(&topic(), key.as_bytes(), batch).await.unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        if let FsyncPolicy::Interval(_) = policy {
            // Let the background sync run at least once with nothing else queued.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        log.close().await.unwrap();
        let log = EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap();
        let ends = log.end_offsets(&topic()).await.unwrap();
        assert_eq!(ends.iter().sum::<u64>(), 8 * 20 * 2, "{policy:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_all_lands_in_order_under_every_policy_and_survives_reopen() {
    let other = TopicRef::new("s", "other");
    for policy in [
        FsyncPolicy::Always,
        FsyncPolicy::Interval(Duration::from_millis(5)),
        FsyncPolicy::Never,
    ] {
        let dir = tempfile::tempdir().unwrap();
        // Small segments, so that rolls happen inside `append_all` rounds too.
        let options = EmbeddedOptions::default().fsync(policy).segment_bytes(256);
        let log = EmbeddedLog::open(dir.path().to_path_buf(), options.clone()).unwrap();
        log.ensure_topic(&topic(), 1).await.unwrap();
        log.ensure_topic(&other, 1).await.unwrap();
        for round in 0..20usize {
            let appended = log
                .append_all(vec![
                    AppendBatch {
                        topic: &topic(),
                        key: b"k",
                        payloads: vec![payload(2 * round), payload(2 * round + 1)],
                        applied_by: None,
                    },
                    AppendBatch {
                        topic: &other,
                        key: b"k",
                        payloads: Vec::new(),
                        applied_by: None,
                    },
                    AppendBatch {
                        topic: &other,
                        key: b"k",
                        payloads: vec![payload(round)],
                        applied_by: None,
                    },
                ])
                .await
                .unwrap();
            let got: Vec<_> = appended.iter().map(|a| (a.first_offset, a.count)).collect();
            let r = round as u64;
            assert_eq!(got, vec![(2 * r, 2), (r, 0), (r, 1)], "{policy:?}");
        }
        log.close().await.unwrap();
        let log = EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap();
        assert_eq!(
            read_all(&log, 0).await.unwrap(),
            (0..40).map(payload).collect::<Vec<_>>()
        );
        let other_read = log.read(&other, 0, 0, 100).await.unwrap();
        assert_eq!(other_read.len(), 20, "{policy:?}");
        log.close().await.unwrap();
    }
}

#[tokio::test]
async fn appends_after_close_fail_on_every_policy() {
    for policy in [FsyncPolicy::Always, FsyncPolicy::default()] {
        let dir = tempfile::tempdir().unwrap();
        let options = EmbeddedOptions::default().fsync(policy);
        let log = EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap();
        log.ensure_topic(&topic(), 1).await.unwrap();
        log.append(&topic(), b"k", vec![payload(0)]).await.unwrap();
        log.close().await.unwrap();
        let err = log
            .append(&topic(), b"k", vec![payload(1)])
            .await
            .unwrap_err();
        // Not retryable: a closed handle never opens again.
        assert_eq!(err.kind(), ErrorKind::Internal, "{policy:?}");
        assert!(!err.is_retryable());
    }
}

#[tokio::test]
async fn segments_roll_and_old_ones_are_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let options = never().segment_bytes(1024).cache_bytes_per_partition(512);
    let written = fill(dir.path(), options.clone(), 50, 4).await;
    assert!(segments(dir.path()).len() > 5);
    let log = EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap();
    assert_eq!(read_all(&log, 0).await.unwrap(), written);
    let middle = log.read(&topic(), 0, 101, 3).await.unwrap();
    assert_eq!(
        middle.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![101, 102, 103]
    );
}

#[tokio::test]
async fn read_at_finds_records_in_evicted_and_cached_batches_of_any_size() {
    let dir = tempfile::tempdir().unwrap();
    let options = never().segment_bytes(1024).cache_bytes_per_partition(512);
    // 50 batches of 4 over several segments, read back from files after the reopen...
    let mut written = fill(dir.path(), options.clone(), 50, 4).await;
    let log = EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap();
    // ...then single-record batches, the newest of them still in the tail cache.
    for i in 0..40 {
        let record = payload(1000 + i);
        written.push(record.clone());
        log.append(&topic(), b"k", vec![record]).await.unwrap();
    }
    let end = written.len() as u64;
    let cases: [&[u64]; 7] = [
        &[],
        &[0, 3, 4, 7],
        &[5, 6],
        &[1, 2, 3, 4, 5, 6, 7, 8, 9],
        &[101, 150, 199, 200, 201, 230],
        &[0, end - 1],
        &[2, 236, end - 2, end - 1],
    ];
    for offsets in cases {
        let read = log.read_at(&topic(), 0, offsets, &[]).await.unwrap();
        assert_eq!(read.iter().map(|r| r.offset).collect::<Vec<_>>(), offsets);
        let expected: Vec<Bytes> = offsets
            .iter()
            .map(|o| written[*o as usize].clone())
            .collect();
        assert_eq!(
            read.into_iter().map(|r| r.payload).collect::<Vec<_>>(),
            expected
        );
    }
    // Offsets past the end are left out.
    let read = log
        .read_at(&topic(), 0, &[3, end, end + 7], &[])
        .await
        .unwrap();
    assert_eq!(read.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![3]);
}

#[tokio::test]
async fn evicted_batches_of_the_growing_active_segment_read_back() {
    // No tail cache: every read goes through the segment's map, which is created at the
    // first read and must cover what the active segment is appended later.
    let dir = tempfile::tempdir().unwrap();
    let log = EmbeddedLog::open(
        dir.path().to_path_buf(),
        never().cache_bytes_per_partition(0),
    )
    .unwrap();
    log.ensure_topic(&topic(), 1).await.unwrap();
    let mut written = Vec::new();
    for round in 0..5 {
        let records: Vec<Bytes> = (0..20).map(|i| payload(round * 20 + i)).collect();
        written.extend(records.iter().cloned());
        log.append(&topic(), b"k", records).await.unwrap();
        assert_eq!(read_all(&log, 0).await.unwrap(), written, "round {round}");
    }
    assert_eq!(segments(dir.path()).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mapped_reads_race_appends_to_the_same_segment() {
    // A reader on another thread keeps reading everything published (no tail cache, so
    // through the map) while appends extend the mapped active segment and roll new ones.
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(
        EmbeddedLog::open(
            dir.path().to_path_buf(),
            never()
                .segment_bytes(16 * 1024)
                .cache_bytes_per_partition(0),
        )
        .unwrap(),
    );
    log.ensure_topic(&topic(), 1).await.unwrap();
    let total = 2_000;
    let reader = {
        let log = log.clone();
        tokio::spawn(async move {
            let mut seen = 0;
            while seen < total {
                let records = log.read(&topic(), 0, seen as u64, 64).await.unwrap();
                for r in records {
                    assert_eq!(r.payload, payload(seen), "offset {seen}");
                    seen += 1;
                }
                tokio::task::yield_now().await;
            }
        })
    };
    for i in 0..total {
        log.append(&topic(), b"k", vec![payload(i)]).await.unwrap();
    }
    reader.await.unwrap();
    assert!(segments(dir.path()).len() > 3);
}

#[tokio::test]
async fn batches_larger_than_a_segment_read_back() {
    // Each batch overshoots the 64-byte segment size, so it lies past the segment's map
    // and is read with `pread`; the small ones after a roll fit their maps.
    let dir = tempfile::tempdir().unwrap();
    let options = never().segment_bytes(64).cache_bytes_per_partition(0);
    let mut written = fill(dir.path(), options.clone(), 3, 10).await;
    let log = EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap();
    let small = vec![Bytes::from_static(b"s")];
    written.extend(small.iter().cloned());
    log.append(&topic(), b"k", small).await.unwrap();
    assert_eq!(read_all(&log, 0).await.unwrap(), written);
    assert_eq!(segments(dir.path()).len(), 4);
}

#[tokio::test]
async fn close_fails_later_calls_and_wakes_waiters() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap());
    log.ensure_topic(&topic(), 1).await.unwrap();
    let mut end = log.watch_end(&topic(), 0).await.unwrap();
    let mut member = log.join_group(&topic(), "g").await.unwrap();
    let waiter = tokio::spawn(async move { member.poll(1, Duration::from_secs(30)).await });
    tokio::task::yield_now().await;
    log.close().await.unwrap();
    assert!(end.changed().await.is_err());
    let polled = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(polled.unwrap_err().kind(), ErrorKind::Internal);
    let err = log
        .append(&topic(), b"k", vec![payload(0)])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Internal);
    assert!(!err.is_retryable());
    for err in [
        log.read(&topic(), 0, 0, 1).await.unwrap_err(),
        log.end_offsets(&topic()).await.unwrap_err(),
        log.watch_end(&topic(), 0).await.unwrap_err(),
        log.join_group(&topic(), "g").await.unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::Internal);
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != "LOCK" {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
