//! Several members in one process over one `memory://` log: joins, a warmed-up leave, the
//! eviction of a silent member, rejoins. Waits are on the published assignment, never on
//! time (a generous bound only turns a hang into a failure).

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::members::{MemberBody, MemberRecord};
use bytes::Bytes;

use super::*;
use crate::log::layers::{FaultLayer, Faults, LogOp};
use crate::log::{self, Log};
use crate::security::{RecordSigner, RecordVerifier, Role, SigningKey, Trust};

const P: u32 = 8;
const AGENT: &str = "echo";

fn config(name: &str) -> MembershipConfig {
    MembershipConfig::new(AGENT, name, format!("http://{name}:8080"))
        // Long against a heartbeat, so a loaded machine's pauses evict nobody alive.
        .lease(Duration::from_secs(2))
        .heartbeat(Duration::from_millis(100))
}

/// Wait until `member`'s view satisfies `what`.
async fn until(watch: &MemberWatch, what: impl Fn(&MemberView) -> bool) -> Arc<MemberView> {
    let mut watch = watch.clone();
    let seen = tokio::time::timeout(Duration::from_secs(20), watch.wait_for(|v| what(v)))
        .await
        .expect("the assignment never got there")
        .unwrap();
    Arc::clone(&seen)
}

/// Say every partition moved to `member` is ready as soon as it is (what a bridge does once
/// its view caught the partition up).
fn catch_up(member: &Membership) -> tokio::task::JoinHandle<()> {
    let (reporter, mut watch) = (member.reporter(), member.watch());
    tokio::spawn(async move {
        loop {
            let incoming = watch.borrow_and_update().incoming();
            for (p, since) in incoming {
                let _ = reporter.ready(p, since).await;
            }
            if watch.changed().await.is_err() {
                return;
            }
        }
    })
}

fn settled(members: usize) -> impl Fn(&MemberView) -> bool {
    move |v: &MemberView| {
        v.assignment.members.len() == members && v.assignment.moves.iter().all(Option::is_none)
    }
}

fn shares(view: &MemberView) -> Vec<(String, usize)> {
    let a = &view.assignment;
    a.members
        .iter()
        .map(|m| (m.name.clone(), a.targets_of(m.slot).len()))
        .collect()
}

#[tokio::test]
async fn members_join_balanced_warm_up_and_leave_without_moving_the_others() {
    let log = log::open("memory://").await.unwrap();
    let a = Membership::join(log.clone(), config("a"), P).await.unwrap();
    assert_eq!(a.view().held(), (0..P).collect::<Vec<_>>());
    let _a_up = catch_up(&a);
    let b = Membership::join(log.clone(), config("b"), P).await.unwrap();
    // b's share moves warmed up: a serves it until b says it is ready.
    let moving = b.view().incoming();
    assert_eq!(moving.len(), 4);
    for (p, _) in &moving {
        assert_eq!(b.view().assignment.owner(*p), Some(0));
    }
    // The forwarder's map says so: their successor is b, where they move.
    let map = b.view().owner_map().unwrap();
    for p in 0..P {
        let incoming = moving.iter().any(|(q, _)| *q == p);
        assert_eq!(map.is_moving(p), incoming, "partition {p}");
        if incoming {
            assert_eq!(map.successor(p).unwrap().index, 1);
        }
    }
    let _b_up = catch_up(&b);
    let c = Membership::join(log.clone(), config("c"), P).await.unwrap();
    let _c_up = catch_up(&c);
    let seen = until(&a.watch(), settled(3)).await;
    for member in [&b, &c] {
        until(&member.watch(), |v| v.assignment == seen.assignment).await;
    }
    let mut counts: Vec<usize> = shares(&seen).iter().map(|(_, n)| *n).collect();
    counts.sort_unstable();
    assert_eq!(counts, [2, 3, 3]);
    // The forwarder's map: slots as member indexes, who serves each partition, who stands in.
    let owners = crate::security::owners::Owners::new(seen.owner_map().unwrap());
    let feeding = tokio::spawn(feed_owners(b.watch(), owners.clone()));
    let map = owners.current();
    assert_eq!(
        map.urls().collect::<Vec<_>>(),
        ["http://a:8080", "http://b:8080", "http://c:8080"]
    );
    for p in 0..P {
        let owner = seen.assignment.targets[p as usize].unwrap();
        assert_eq!(map.owner(p).unwrap().index, owner);
        assert_ne!(map.successor(p).unwrap().index, owner);
        assert!(!map.is_moving(p));
    }

    // b leaves: only its partitions move, warmed up, and it is gone once they are ready.
    let before = seen.assignment.clone();
    let b_had = before.targets_of(1);
    assert!(b.leave(Duration::from_secs(20)).await.unwrap());
    let after = until(&a.watch(), settled(2)).await;
    assert_eq!(after.assignment.slot_of("b"), None);
    for p in 0..P {
        if !b_had.contains(&p) {
            assert_eq!(
                after.assignment.targets[p as usize],
                before.targets[p as usize]
            );
        }
    }
    let mut counts: Vec<usize> = shares(&after).iter().map(|(_, n)| *n).collect();
    counts.sort_unstable();
    assert_eq!(counts, [4, 4]);
    until(&c.watch(), |v| v.assignment == after.assignment).await;
    // b stopped: its feed ended with the last map it saw.
    feeding.await.unwrap();
}

#[tokio::test]
async fn a_silent_member_is_evicted_and_its_partitions_served_at_once() {
    let log = log::open("memory://").await.unwrap();
    let a = Membership::join(log.clone(), config("a"), P).await.unwrap();
    let _a_up = catch_up(&a);
    let b = Membership::join(log.clone(), config("b"), P).await.unwrap();
    let _b_up = catch_up(&b);
    until(&a.watch(), settled(2)).await;
    // b stops as a crash would: no leave. a evicts it after its lease and owns everything.
    b.stop().await;
    let stopped_at = read_all(&log).await.len();
    let alone = until(&a.watch(), |v| v.assignment.members.len() == 1).await;
    assert_eq!(alone.held(), (0..P).collect::<Vec<_>>());
    assert!(alone.assignment.moves.iter().all(Option::is_none));
    // One eviction applied; any other written for the same lease was ignored.
    let records = read_all(&log).await;
    let evictions: Vec<_> = records[stopped_at..]
        .iter()
        .filter(|r| r.body == MemberBody::Evict)
        .collect();
    assert_eq!(evictions.len(), 1, "one missed lease, one eviction");
    assert_eq!((&*evictions[0].member, &*evictions[0].source), ("b", "a"));

    // b restarts under its name: a fresh join, warmed up from a.
    let b = Membership::join(log.clone(), config("b"), P).await.unwrap();
    assert_eq!(b.view().incoming().len(), 4);
    let _b_up = catch_up(&b);
    until(&a.watch(), settled(2)).await;
}

#[tokio::test]
async fn an_evicted_member_that_is_alive_joins_again() {
    let log = log::open("memory://").await.unwrap();
    let a = Membership::join(log.clone(), config("a"), P).await.unwrap();
    let _a_up = catch_up(&a);
    let b = Membership::join(log.clone(), config("b"), P).await.unwrap();
    let _b_up = catch_up(&b);
    until(&b.watch(), settled(2)).await;
    // An eviction written as if b had paused past its lease (a clock ahead by a minute).
    let late = MemberRecord::new(now() + 60_000, "b", "a", MemberBody::Evict);
    append(&log, &late).await;
    // b sees itself gone and joins again; the map settles with both.
    until_log(&log, |records| {
        let evicted = records.iter().position(|r| r == &late);
        evicted.is_some_and(|at| {
            records[at..]
                .iter()
                .any(|r| r.member == "b" && matches!(r.body, MemberBody::Join { .. }))
        })
    })
    .await;
    until(&a.watch(), settled(2)).await;
    let view = until(&b.watch(), settled(2)).await;
    assert!(view.me.is_some());
}

#[tokio::test]
async fn a_log_out_of_reach_for_longer_than_the_lease_evicts_nobody() {
    let log = log::open("memory://").await.unwrap();
    let (faults_a, faults_b) = (Faults::new(), Faults::new());
    let handle = |faults: &Faults| log.clone().layer(FaultLayer::new(faults.clone()));
    let a = Membership::join(handle(&faults_a), config("a"), P)
        .await
        .unwrap();
    let _a_up = catch_up(&a);
    let b = Membership::join(handle(&faults_b), config("b"), P)
        .await
        .unwrap();
    let _b_up = catch_up(&b);
    until(&a.watch(), settled(2)).await;
    // Every write of both stalls past the lease (the log out of reach), then the log is back.
    let before = read_all(&log).await.len();
    for faults in [&faults_a, &faults_b] {
        faults.delay(LogOp::AppendTo, Duration::from_millis(2_500));
    }
    until_log(&log, |records| records.len() >= before + 2).await;
    for faults in [&faults_a, &faults_b] {
        faults.clear_delays();
    }
    // Both write again for more than a lease: each sees the other's heartbeats, nobody is
    // evicted.
    let back = read_all(&log).await.len();
    until_log(&log, |records| {
        let after = &records[back..];
        ["a", "b"].iter().all(|name| {
            after
                .iter()
                .filter(|r| r.member == *name && r.body == MemberBody::Heartbeat)
                .count()
                >= 30
        })
    })
    .await;
    let records = read_all(&log).await;
    assert!(
        records.iter().all(|r| r.body != MemberBody::Evict),
        "an eviction after an outage: {:?}",
        records
            .iter()
            .filter(|r| r.body == MemberBody::Evict)
            .collect::<Vec<_>>()
    );
    assert_eq!(a.view().assignment.members.len(), 2);
}

#[tokio::test]
async fn a_joining_member_starts_from_the_newest_snapshot() {
    let log = log::open("memory://").await.unwrap();
    let often = |name: &str| config(name).snapshot_every(5);
    let a = Membership::join(log.clone(), often("a"), P).await.unwrap();
    let _a_up = catch_up(&a);
    let b = Membership::join(log.clone(), often("b"), P).await.unwrap();
    let _b_up = catch_up(&b);
    until(&a.watch(), settled(2)).await;
    // a (the lowest slot) writes one every 5 records; wait for a few.
    until_log(&log, |records| {
        let snapshots = records
            .iter()
            .filter(|r| matches!(r.body, MemberBody::Snapshot { .. }));
        snapshots.count() >= 3
    })
    .await;
    let c = Membership::join(log.clone(), often("c"), P).await.unwrap();
    assert!(c.replayed_from() > 0, "c folded from the start");
    let _c_up = catch_up(&c);
    let seen = until(&a.watch(), settled(3)).await;
    until(&c.watch(), |v| v.assignment == seen.assignment).await;
    // The same map as a fold of every record from the start.
    let records = read_all(&log).await;
    let whole = agentlog_wire::members::MemberFold::of(P, &records);
    let joined = records.iter().rposition(|r| r.member == "c").unwrap();
    let upto = agentlog_wire::members::MemberFold::of(P, &records[..=joined]);
    assert_eq!(upto.assignment().slot_of("c"), Some(2));
    assert_eq!(whole.assignment().members.len(), 3);
}

#[tokio::test]
async fn a_restart_within_the_lease_keeps_the_partitions() {
    let log = log::open("memory://").await.unwrap();
    let slow = |name: &str| config(name).lease(Duration::from_secs(60));
    let a = Membership::join(log.clone(), slow("a"), P).await.unwrap();
    let _a_up = catch_up(&a);
    let b = Membership::join(log.clone(), slow("b"), P).await.unwrap();
    let _b_up = catch_up(&b);
    let before = until(&a.watch(), settled(2)).await;
    b.stop().await;
    let b = Membership::join(log.clone(), slow("b"), P).await.unwrap();
    assert_eq!(b.view().assignment, before.assignment);
    assert_eq!(b.view().me, Some(1));
}

#[tokio::test]
async fn under_a_trust_only_trusted_bridges_count() {
    let log = log::open("memory://").await.unwrap();
    let bridge = RecordSigner::new(SigningKey::generate().unwrap());
    let worker = RecordSigner::new(SigningKey::generate().unwrap());
    let trust = Trust::new()
        .with_role(bridge.verifying_key(), Role::Bridge)
        .with_role(worker.verifying_key(), Role::Worker);
    let verifier = RecordVerifier::new(trust);
    let signed = |name: &str, signer: &RecordSigner| {
        config(name)
            .signer(signer.clone())
            .verifier(verifier.clone())
    };
    let _a = Membership::join(log.clone(), signed("a", &bridge), P)
        .await
        .unwrap();
    // A worker's key, and no key at all, are not members: their joins are not folded.
    append(
        &log,
        &MemberRecord::new(
            now(),
            "mallory",
            "mallory",
            MemberBody::Join {
                url: "http://evil".into(),
                lease_ms: 60_000,
            },
        ),
    )
    .await;
    let refused = Membership::join(log.clone(), signed("w", &worker), P).await;
    assert_eq!(refused.unwrap_err().kind(), crate::ErrorKind::Config);
    let b = Membership::join(log.clone(), signed("b", &bridge), P)
        .await
        .unwrap();
    let view = b.view();
    let names: Vec<&str> = view
        .assignment
        .members
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert!(verifier.rejected_total() >= 2);
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

async fn append(log: &Log, record: &MemberRecord) {
    let topic = members_topic(DEFAULT_STREAM, AGENT);
    let bytes = Bytes::from(record.encode().unwrap());
    log.append_to(&topic, 0, vec![bytes]).await.unwrap();
}

/// Wait until the members topic's records satisfy `what`.
async fn until_log(log: &Log, what: impl Fn(&[MemberRecord]) -> bool) {
    let topic = members_topic(DEFAULT_STREAM, AGENT);
    let mut end = log.watch_end(&topic, 0).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), async {
        while !what(&read_all(log).await) {
            end.changed().await.unwrap();
        }
    })
    .await
    .expect("the records never got there");
}

async fn read_all(log: &Log) -> Vec<MemberRecord> {
    let topic = members_topic(DEFAULT_STREAM, AGENT);
    let end = log.end_offset(&topic, 0).await.unwrap();
    let stored = log.read(&topic, 0, 0, end as usize).await.unwrap();
    stored
        .iter()
        .map(|s| MemberRecord::decode(&s.payload).unwrap())
        .collect()
}
