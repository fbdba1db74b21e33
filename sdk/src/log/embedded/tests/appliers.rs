//! Appends made for an applier do not move its watch, on every path (memory, direct, the
//! writer thread's group commit), while every other watch moves; a drain mixing appliers
//! moves it too.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::log::Applier;

/// A log of every kind: in memory, and on disk under each fsync policy (`Always` goes through
/// the writer thread; the others append from the calling task).
fn logs(dir: &Path) -> Vec<(&'static str, EmbeddedLog)> {
    let open = |name: &str, policy| {
        let options = EmbeddedOptions::default().fsync(policy);
        EmbeddedLog::open(dir.join(name), options).unwrap()
    };
    vec![
        ("memory", EmbeddedLog::in_memory()),
        ("never", open("never", FsyncPolicy::Never)),
        (
            "interval",
            open(
                "interval",
                FsyncPolicy::Interval(Duration::from_millis(100)),
            ),
        ),
        ("always", open("always", FsyncPolicy::Always)),
    ]
}

#[tokio::test]
async fn an_appliers_own_appends_do_not_move_its_watch() {
    let dir = tempfile::tempdir().unwrap();
    for (name, log) in logs(dir.path()) {
        log.ensure_topic(&topic(), 1).await.unwrap();
        let (mine, other) = (Applier::new(), Applier::new());
        let mut plain = log.watch_end(&topic(), 0).await.unwrap();
        let mut own = log.watch_end_for(&topic(), 0, mine).await.unwrap();
        let mut others = log.watch_end_for(&topic(), 0, other).await.unwrap();

        log.append_for(&topic(), b"k", vec![payload(0)], mine)
            .await
            .unwrap();
        let batch = AppendBatch {
            topic: &topic(),
            key: b"k",
            payloads: vec![payload(1)],
            applied_by: Some(mine),
        };
        log.append_all(vec![batch]).await.unwrap();
        // Under `Always` the writer thread wakes watchers after it acknowledged the appends:
        // wait for the others, woken in the same announcement as this applier would be.
        reaches(&mut plain, 2, name).await;
        reaches(&mut others, 2, name).await;
        assert!(
            !own.has_changed().unwrap(),
            "{name}: woken by its own appends"
        );
        assert_eq!(*own.borrow(), 0, "{name}");

        // Anyone else's append moves it past everything before.
        log.append(&topic(), b"k", vec![payload(2)]).await.unwrap();
        reaches(&mut own, 3, name).await;
        log.append_for(&topic(), b"k", vec![payload(3)], other)
            .await
            .unwrap();
        reaches(&mut own, 4, name).await;
        reaches(&mut plain, 4, name).await;
        assert_eq!(*others.borrow(), 3, "{name}");
        log.close().await.unwrap();
        assert!(
            own.changed().await.is_err(),
            "{name}: closing ends the watch"
        );
    }
}

#[tokio::test]
async fn a_drain_mixing_appliers_moves_both_watches() {
    let dir = tempfile::tempdir().unwrap();
    let options = EmbeddedOptions::default().fsync(FsyncPolicy::Always);
    let log = EmbeddedLog::open(dir.path().to_path_buf(), options).unwrap();
    log.ensure_topic(&topic(), 1).await.unwrap();
    let (mine, other) = (Applier::new(), Applier::new());
    let mut own = log.watch_end_for(&topic(), 0, mine).await.unwrap();
    // One request, so one drain: two batches to the partition made for different appliers.
    let topic = topic();
    let batch = |i, by| AppendBatch {
        topic: &topic,
        key: b"k",
        payloads: vec![payload(i)],
        applied_by: Some(by),
    };
    log.append_all(vec![batch(0, mine), batch(1, other)])
        .await
        .unwrap();
    // The other applier's record is not applied by this one: its watch moves.
    reaches(&mut own, 2, "always").await;
    log.close().await.unwrap();
}

/// Wait (a bounded time) until `watch` shows `end`.
async fn reaches(watch: &mut tokio::sync::watch::Receiver<u64>, end: u64, name: &str) {
    tokio::time::timeout(Duration::from_secs(10), watch.wait_for(|e| *e >= end))
        .await
        .unwrap_or_else(|_| panic!("{name}: the watch never reached {end}"))
        .unwrap();
}
