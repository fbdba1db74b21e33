//! Unit tests of reading records at their places: a place read gives what the index gives,
//! and a wrong, stale or foreign place costs a lookup, never a wrong record.
#![allow(clippy::unwrap_used)]

use rand::{Rng, SeedableRng};

use super::*;

/// A log of several segments (read back from files) and a tail still in the cache, with
/// every record's place as `read` gave it.
async fn placed_log(dir: &std::path::Path) -> (EmbeddedLog, Vec<StoredRecord>) {
    let options = never().segment_bytes(1024).cache_bytes_per_partition(512);
    let log = EmbeddedLog::open(dir.to_path_buf(), options).unwrap();
    log.ensure_topic(&topic(), 1).await.unwrap();
    let mut appended = Vec::new();
    for b in 0..80 {
        let per = b % 4 + 1;
        let records: Vec<Bytes> = (0..per).map(|i| payload(b * 4 + i)).collect();
        appended.push((log.append(&topic(), b"k", records).await.unwrap(), per));
    }
    let all = log.read(&topic(), 0, 0, usize::MAX).await.unwrap();
    // An append's place is the place a read gives each record of its batch.
    for (batch, per) in appended {
        for record in &all[batch.first_offset as usize..][..per] {
            assert_eq!(record.place, batch.place, "offset {}", record.offset);
        }
    }
    assert!(all.iter().all(|r| r.place != Place::UNKNOWN));
    (log, all)
}

/// What `read_at` gives with no places: the index's answer.
async fn indexed(log: &EmbeddedLog, offsets: &[u64]) -> Vec<(u64, Bytes)> {
    let read = log.read_at(&topic(), 0, offsets, &[]).await.unwrap();
    read.into_iter().map(|r| (r.offset, r.payload)).collect()
}

async fn placed(log: &EmbeddedLog, offsets: &[u64], places: &[Place]) -> Vec<(u64, Bytes)> {
    let read = log.read_at(&topic(), 0, offsets, places).await.unwrap();
    read.into_iter().map(|r| (r.offset, r.payload)).collect()
}

#[tokio::test]
async fn records_read_at_their_places_equal_the_index_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (log, all) = placed_log(dir.path()).await;
    let partition = log.inner.partition(&topic(), 0).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    for _ in 0..200 {
        let mut offsets: Vec<u64> = (0..rng.random_range(1..6))
            .map(|_| rng.random_range(0..all.len() as u64))
            .collect();
        offsets.sort_unstable();
        offsets.dedup();
        let places: Vec<Place> = offsets.iter().map(|o| all[*o as usize].place).collect();
        // Read at the places, not looked up: the placed path answers itself.
        let read = partition
            .read_placed(&offsets, &places)
            .unwrap()
            .unwrap_or_else(|| panic!("offsets {offsets:?} at {places:?} of {}", all.len()));
        let got: Vec<(u64, Bytes)> = read.into_iter().map(|r| (r.offset, r.payload)).collect();
        assert_eq!(got, indexed(&log, &offsets).await);
        for (offset, payload) in got {
            assert_eq!(payload, all[offset as usize].payload);
        }
    }
}

#[tokio::test]
async fn wrong_places_are_looked_up_never_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let (log, all) = placed_log(dir.path()).await;
    let partition = log.inner.partition(&topic(), 0).unwrap();
    let end = all.len() as u64;
    let place_of = |o: u64| all[o as usize].place;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    // Another batch's place (in the same segment or not), a place inside a batch, the right
    // position in another segment, unknown, or random.
    let mut wrong = |o: u64| match rng.random_range(0..5) {
        0 => place_of((o + rng.random_range(5..end)) % end),
        1 => Place::from_raw(place_of(o).raw() + rng.random_range(1..40)),
        2 => {
            let (tag, pos) = place_of(o).in_segment_parts().unwrap();
            Place::in_segment(tag + rng.random_range(1..4), pos)
        }
        3 => Place::UNKNOWN,
        _ => Place::from_raw(rng.random()),
    };
    for round in 0..300 {
        let mut offsets: Vec<u64> = (0..3).map(|n| (round * 7 + n * 13) % end).collect();
        offsets.sort_unstable();
        offsets.dedup();
        let mut places: Vec<Place> = offsets.iter().map(|o| place_of(*o)).collect();
        let bad = round as usize % places.len();
        places[bad] = wrong(offsets[bad]);
        if places[bad] == place_of(offsets[bad]) {
            continue;
        }
        assert!(
            partition.read_placed(&offsets, &places).unwrap().is_none(),
            "offsets {offsets:?} at {places:?}"
        );
        assert_eq!(
            placed(&log, &offsets, &places).await,
            indexed(&log, &offsets).await
        );
    }
    // Offsets past the end are left out, as by the index.
    let past = [3, end, end + 7];
    let places = [place_of(3), place_of(3), place_of(3)];
    assert_eq!(
        placed(&log, &past, &places).await,
        indexed(&log, &past).await
    );
    // A count of places that does not match the offsets' is as good as none.
    assert_eq!(
        placed(&log, &[1, 2], &[place_of(1)]).await,
        indexed(&log, &[1, 2]).await
    );
}

#[tokio::test]
async fn places_outlive_a_reopen_and_deleted_segments_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let (log, before) = placed_log(dir.path()).await;
    log.close().await.unwrap();
    drop(log);
    let options = never().segment_bytes(1024).cache_bytes_per_partition(512);
    let log = EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap();
    let after = log.read(&topic(), 0, 0, usize::MAX).await.unwrap();
    assert_eq!(after, before, "the same records at the same places");
    let sealed = log.segments(&topic(), 0).await.unwrap();
    let gone = &sealed[1];
    log.delete_segments(&topic(), 0, &[gone.base])
        .await
        .unwrap();
    let offsets: Vec<u64> = (0..before.len() as u64).step_by(3).collect();
    let places: Vec<Place> = offsets.iter().map(|o| before[*o as usize].place).collect();
    let read = placed(&log, &offsets, &places).await;
    let kept: Vec<u64> = offsets
        .iter()
        .copied()
        .filter(|o| !(gone.base..gone.end).contains(o))
        .collect();
    assert_eq!(read.iter().map(|(o, _)| *o).collect::<Vec<_>>(), kept);
    assert!(read.iter().all(|(o, p)| *p == before[*o as usize].payload));
}

#[tokio::test]
async fn the_memory_log_has_no_places_and_reads_by_offset() {
    let log = EmbeddedLog::in_memory();
    log.ensure_topic(&topic(), 1).await.unwrap();
    let appended = log.append(&topic(), b"k", vec![payload(0)]).await.unwrap();
    assert_eq!(appended.place, Place::UNKNOWN);
    let read = log
        .read_at(&topic(), 0, &[0], &[Place::from_raw(0)])
        .await
        .unwrap();
    assert_eq!(read[0].payload, payload(0));
}

#[tokio::test]
async fn mapped_segments_publish_where_they_lie_until_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (log, all) = placed_log(dir.path()).await;
    assert!(log.prefetcher(&topic()).is_some());
    let partition = log.inner.partition(&topic(), 0).unwrap();
    let sealed = log.segments(&topic(), 0).await.unwrap();
    // The read in `placed_log` mapped every sealed segment (their batches left the cache).
    let ids = 0..sealed.len();
    assert!(ids.clone().all(|id| partition.mapped.address(id) != 0));
    // Prefetching any place, the records' or nonsense, changes nothing a read gives.
    let prefetcher = log.prefetcher(&topic()).unwrap();
    for record in &all {
        prefetcher.prefetch(0, record.place);
        prefetcher.prefetch(0, Place::from_raw(record.place.raw() ^ 0x0400_0000));
    }
    assert_eq!(log.read(&topic(), 0, 0, usize::MAX).await.unwrap(), all);
    // A deleted segment's map goes once nothing reads it, and its address with it.
    log.delete_segments(&topic(), 0, &[sealed[0].base])
        .await
        .unwrap();
    assert_eq!(partition.mapped.address(0), 0);
    assert!(ids.skip(1).all(|id| partition.mapped.address(id) != 0));
    let memory = EmbeddedLog::in_memory();
    memory.ensure_topic(&topic(), 1).await.unwrap();
    assert!(memory.prefetcher(&topic()).is_none(), "no places in memory");
}
