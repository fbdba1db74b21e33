//! Unit tests of a read-only open: following a live writer, batches shown only once whole,
//! damage behind the writer, topics created after the open.
#![allow(clippy::unwrap_used)]

use super::*;

#[tokio::test]
async fn a_read_only_open_follows_a_live_writer_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let options = never().segment_bytes(1024);
    let writer = EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap();
    writer.ensure_topic(&topic(), 1).await.unwrap();
    let mut written = Vec::new();
    for i in 0..10 {
        written.push(payload(i));
        writer
            .append(&topic(), b"k", vec![payload(i)])
            .await
            .unwrap();
    }
    // No lock is taken: the writer keeps the directory.
    let reader = EmbeddedLog::open_read_only(dir.path().to_path_buf()).unwrap();
    assert_eq!(reader.end_offsets(&topic()).await.unwrap(), vec![10]);
    assert_eq!(read_all(&reader, 0).await.unwrap(), written);

    let log = crate::log::Log::new(reader);
    let mut follower = crate::log::Follower::new(log.clone(), topic(), 0, 10)
        .await
        .unwrap();
    let appending = tokio::spawn(async move {
        for i in 10..200 {
            writer
                .append(&topic(), b"k", vec![payload(i)])
                .await
                .unwrap();
            if i % 50 == 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        writer
    });
    let mut followed = Vec::new();
    while followed.len() < 190 {
        let batch = tokio::time::timeout(Duration::from_secs(10), follower.next_batch())
            .await
            .expect("the read-only log follows the writer's appends")
            .unwrap();
        followed.extend(batch.into_iter().map(|r| (r.offset, r.payload)));
    }
    let writer = appending.await.unwrap();
    assert!(segments(dir.path()).len() > 3, "the writer rolled segments");
    let expected: Vec<(u64, Bytes)> = (10..200).map(|i| (i as u64, payload(i))).collect();
    assert_eq!(followed, expected);
    assert_eq!(log.end_offsets(&topic()).await.unwrap(), vec![200]);

    // Writing through it is refused, clearly.
    for error in [
        log.append(&topic(), b"k", vec![payload(0)])
            .await
            .unwrap_err(),
        log.ensure_topic(&TopicRef::new("s", "new"), 1)
            .await
            .unwrap_err(),
        log.join_group(&topic(), "g").await.err().unwrap(),
    ] {
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(error.message().contains("read-only"), "{error}");
    }
    writer.close().await.unwrap();
    log.close().await.unwrap();
}

#[tokio::test]
async fn a_read_only_open_shows_a_batch_only_once_it_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let written = fill(dir.path(), never(), 3, 1).await;
    // The writer is halfway through its next batch.
    let mut batch = Vec::new();
    segment::encode_batch(&mut batch, 3, &[payload(3), payload(4)]).unwrap();
    let path = segments(dir.path()).pop().unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, &batch[..batch.len() / 2]).unwrap();

    let reader = EmbeddedLog::open_read_only(dir.path().to_path_buf()).unwrap();
    assert_eq!(reader.end_offsets(&topic()).await.unwrap(), vec![3]);
    assert_eq!(read_all(&reader, 0).await.unwrap(), written);
    std::io::Write::write_all(&mut file, &batch[batch.len() / 2..]).unwrap();
    assert_eq!(reader.end_offsets(&topic()).await.unwrap(), vec![5]);
    let tail = reader.read(&topic(), 0, 3, 10).await.unwrap();
    assert_eq!(
        tail.into_iter().map(|r| r.payload).collect::<Vec<_>>(),
        vec![payload(3), payload(4)]
    );
    // Nothing was repaired or written: the files are as the writer left them.
    assert_eq!(
        std::fs::read(&path).unwrap().len() as u64,
        file.metadata().unwrap().len()
    );
}

#[tokio::test]
async fn a_read_only_open_reports_damage_the_writer_has_moved_past() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), never().segment_bytes(256), 20, 1).await;
    let files = segments(dir.path());
    assert!(files.len() > 2);
    // A flipped byte in the last batch of a segment that a later one follows.
    let mut bytes = std::fs::read(&files[0]).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&files[0], bytes).unwrap();
    let error = EmbeddedLog::open_read_only(dir.path().to_path_buf()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Corrupt, "{error}");
}

#[tokio::test]
async fn a_read_only_open_finds_a_topic_created_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let writer = EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap();
    let reader = EmbeddedLog::open_read_only(dir.path().to_path_buf()).unwrap();
    let missing = reader.end_offsets(&topic()).await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::InvalidParams, "{missing}");

    writer.ensure_topic(&topic(), 2).await.unwrap();
    writer
        .append(&topic(), b"k", vec![payload(0), payload(1)])
        .await
        .unwrap();
    assert_eq!(reader.partitions(&topic()).await.unwrap(), 2);
    let ends = reader.end_offsets(&topic()).await.unwrap();
    assert_eq!(ends.iter().sum::<u64>(), 2);
    let partition = ends.iter().position(|e| *e == 2).unwrap() as u32;
    let read = reader.read(&topic(), partition, 0, 10).await.unwrap();
    assert_eq!(
        read.into_iter().map(|r| r.payload).collect::<Vec<_>>(),
        vec![payload(0), payload(1)]
    );
    // A topic whose creation never finished (no metadata) is still missing.
    let unfinished = TopicRef::new("s", "unfinished");
    std::fs::create_dir_all(
        dir.path()
            .join("topics")
            .join("s")
            .join("unfinished")
            .join("0"),
    )
    .unwrap();
    let error = reader.end_offsets(&unfinished).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidParams, "{error}");
    writer.close().await.unwrap();
    reader.close().await.unwrap();
}
