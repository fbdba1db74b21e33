//! Consumer groups of the embedded log: sharing and rebalancing partitions, adopting a
//! leaver's, and an offsets file torn by a machine crash.
#![allow(clippy::unwrap_used)]

use super::*;

#[tokio::test]
async fn groups_split_partitions_rebalance_on_drop_and_resume_from_commits() {
    let dir = tempfile::tempdir().unwrap();
    let log = EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap();
    log.ensure_topic(&topic(), 2).await.unwrap();
    let mut a = log.join_group(&topic(), "g").await.unwrap();
    let mut b = log.join_group(&topic(), "g").await.unwrap();
    // One record on each partition.
    let keys = keys_per_partition(2);
    for key in &keys {
        log.append(&topic(), key.as_bytes(), vec![Bytes::from(key.clone())])
            .await
            .unwrap();
    }
    let wait = Duration::from_secs(5);
    let da = a.poll(10, wait).await.unwrap().unwrap();
    let db = b.poll(10, wait).await.unwrap().unwrap();
    assert_ne!(da.partition, db.partition);
    assert!(
        a.poll(10, Duration::from_millis(20))
            .await
            .unwrap()
            .is_none()
    );
    a.commit(da.partition, 1).await.unwrap();
    // b drops without committing: a takes its partition from the committed offset 0.
    drop(b);
    let again = a.poll(10, wait).await.unwrap().unwrap();
    assert_eq!(again.partition, db.partition);
    assert_eq!(again.records, db.records);
    drop(a);
    log.close().await.unwrap();

    // Reopened, a new member resumes after the commit.
    let log = EmbeddedLog::open(dir.path().to_path_buf(), never()).unwrap();
    let mut c = log.join_group(&topic(), "g").await.unwrap();
    let dc = c.poll(10, wait).await.unwrap().unwrap();
    assert_eq!(dc.partition, db.partition);
    assert!(
        c.poll(10, Duration::from_millis(20))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_member_waiting_in_poll_adopts_the_partitions_a_leaver_hands_it() {
    let log = Arc::new(EmbeddedLog::in_memory());
    log.ensure_topic(&topic(), 2).await.unwrap();
    let mut a = log.join_group(&topic(), "g").await.unwrap();
    let b = log.join_group(&topic(), "g").await.unwrap();
    // `a` waits on its own empty partition; the leave wakes it (a group change), and the
    // record on the leaver's partition must reach it: waiting must not lose the change.
    let waiting = tokio::spawn(async move {
        let delivery = a.poll(10, Duration::from_secs(30)).await;
        (a, delivery)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let b_partition = b.owned_partitions();
    assert_eq!(b_partition.len(), 0, "b has not polled yet");
    drop(b);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let keys = keys_per_partition(2);
    for key in &keys {
        log.append(&topic(), key.as_bytes(), vec![Bytes::from(key.clone())])
            .await
            .unwrap();
    }
    let (mut a, first) = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap();
    let mut partitions = vec![first.unwrap().unwrap().partition];
    partitions.push(
        a.poll(10, Duration::from_secs(10))
            .await
            .unwrap()
            .unwrap()
            .partition,
    );
    partitions.sort_unstable();
    assert_eq!(partitions, [0, 1]);
    assert_eq!(a.owned_partitions(), [0, 1]);
}

#[tokio::test]
async fn a_torn_offsets_file_redelivers_instead_of_refusing_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let log = EmbeddedLog::open(dir.path().to_path_buf(), EmbeddedOptions::default()).unwrap();
    log.ensure_topic(&topic(), 1).await.unwrap();
    log.append(&topic(), b"k", vec![payload(0), payload(1)])
        .await
        .unwrap();
    let mut member = log.join_group(&topic(), "g").await.unwrap();
    let wait = Duration::from_secs(5);
    let delivery = member.poll(10, wait).await.unwrap().unwrap();
    member.commit(delivery.partition, 2).await.unwrap();
    drop(member);
    log.close().await.unwrap();

    let offsets = files_named(dir.path(), ".json")
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("groups"))
        .collect::<Vec<_>>();
    assert_eq!(offsets.len(), 1, "{offsets:?}");
    // What a machine crash can leave of an unsynced rename: an empty file.
    std::fs::write(&offsets[0], b"").unwrap();

    let log = EmbeddedLog::open(dir.path().to_path_buf(), EmbeddedOptions::default()).unwrap();
    let mut member = log.join_group(&topic(), "g").await.unwrap();
    let again = member.poll(10, wait).await.unwrap().unwrap();
    assert_eq!(again.records.len(), 2, "everything is delivered again");
    assert_eq!(again.records[0].offset, 0);
}

fn keys_per_partition(partitions: u32) -> Vec<String> {
    (0..partitions)
        .map(|p| {
            (0..)
                .map(|i| format!("key-{i}"))
                .find(|k| partition_for_key(k.as_bytes(), partitions) == p)
                .unwrap()
        })
        .collect()
}

/// Every file below `dir` whose name ends with `suffix`.
fn files_named(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_named(&path, suffix));
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
    out
}
