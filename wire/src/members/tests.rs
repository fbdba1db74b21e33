//! Unit tests of the membership records and their fold.

#![allow(clippy::unwrap_used)]

use strum::IntoEnumIterator;

use super::*;
use crate::WireError;

const T0: u64 = 1_800_000_000_000;
const LEASE: u64 = 10_000;

fn join(at: u64, name: &str) -> MemberRecord {
    let url = format!("http://{name}:8080");
    MemberRecord::new(
        at,
        name,
        name,
        MemberBody::Join {
            url,
            lease_ms: LEASE,
        },
    )
}

fn of(at: u64, name: &str, body: MemberBody) -> MemberRecord {
    MemberRecord::new(at, name, name, body)
}

fn every_body() -> Vec<MemberBody> {
    vec![
        MemberBody::Join {
            url: "http://b0:8080".into(),
            lease_ms: LEASE,
        },
        MemberBody::Heartbeat,
        MemberBody::Leave,
        MemberBody::Evict,
        MemberBody::Ready {
            partition: 7,
            since: 42,
        },
        MemberBody::Snapshot {
            after: 99,
            state: MemberFold::new(2).state(),
        },
    ]
}

#[test]
fn kind_codes_are_pinned() {
    let pinned: Vec<(MemberKind, u8, &str)> = MemberKind::iter()
        .map(|k| (k, k.code(), k.name()))
        .collect();
    assert_eq!(
        pinned,
        [
            (MemberKind::Join, 1, "join"),
            (MemberKind::Heartbeat, 2, "heartbeat"),
            (MemberKind::Leave, 3, "leave"),
            (MemberKind::Evict, 4, "evict"),
            (MemberKind::Ready, 5, "ready"),
            (MemberKind::Snapshot, 6, "snapshot"),
        ]
    );
    for (kind, code, _) in pinned {
        assert_eq!(MemberKind::from_code(code), Some(kind));
    }
    assert_eq!(MemberKind::from_code(0), None);
    assert_eq!(MemberKind::from_code(7), None);
}

#[test]
fn every_kind_round_trips_signed_or_not() {
    for body in every_body() {
        let mut record = MemberRecord::new(T0, "b0", "b1", body);
        for signed in [false, true] {
            if signed {
                record.key_id = "kid".into();
                record.signature = vec![7; 64];
            }
            let bytes = record.encode().unwrap();
            assert_eq!(MemberRecord::decode(&bytes).unwrap(), record);
            assert_eq!(record.is_signed(), signed);
            // The payload is the encoding without the signature, behind the domain.
            let payload = record.signing_payload().unwrap();
            assert!(payload.starts_with(MEMBER_SIGNING_DOMAIN));
            let unsigned = MemberRecord {
                signature: Vec::new(),
                ..record.clone()
            };
            assert_eq!(
                &payload[MEMBER_SIGNING_DOMAIN.len()..],
                unsigned.encode().unwrap()
            );
        }
    }
}

#[test]
fn bad_bytes_are_refused_by_kind() {
    let bytes = join(T0, "b0").encode().unwrap();
    let kind = |bytes: &[u8]| MemberRecord::decode(bytes).unwrap_err().kind();
    assert_eq!(kind(&bytes[..bytes.len() - 1]), "truncated");
    assert_eq!(kind(&[]), "truncated");
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(kind(&longer), "trailing_bytes");
    let mut version = bytes.clone();
    version[0] = 2;
    assert_eq!(kind(&version), "unknown_version");
    let mut unknown = bytes.clone();
    unknown[1] = 9;
    assert_eq!(kind(&unknown), "unknown_kind");
    let mut utf8 = bytes.clone();
    utf8[12] = 0xff; // the member's first byte
    assert_eq!(kind(&utf8), "invalid_utf8");
    let mut signature = bytes.clone();
    *signature.last_mut().unwrap() = 3;
    assert_eq!(kind(&signature), "invalid_field");
    let empty = MemberRecord::new(T0, "", "b0", MemberBody::Heartbeat);
    assert!(matches!(
        empty.encode(),
        Err(WireError::InvalidField {
            field: "member",
            ..
        })
    ));
    let no_lease = MemberRecord::new(
        T0,
        "b0",
        "b0",
        MemberBody::Join {
            url: "http://b0".into(),
            lease_ms: 0,
        },
    );
    assert!(no_lease.encode().is_err());
}

#[test]
fn a_join_takes_its_share_warmed_up_and_ready_switches_the_map() {
    let mut fold = MemberFold::of(8, &[join(T0, "a")]);
    let a = fold.assignment().clone();
    assert_eq!(a.targets_of(0), (0..8).collect::<Vec<_>>());
    assert!(
        a.moves.iter().all(Option::is_none),
        "nobody to warm up from"
    );
    assert_eq!(a.successor(3), None);

    fold.apply(&join(T0 + 1, "b"));
    let a = fold.assignment().clone();
    assert_eq!(a.targets_of(0).len(), 4);
    let incoming = a.incoming(1);
    assert_eq!(incoming.len(), 4);
    for (p, since) in &incoming {
        assert_eq!(*since, 1);
        // The old holder serves it until the new one is ready; the new one stands in.
        assert_eq!(a.owner(*p), Some(0));
        assert_eq!(a.successor(*p), Some(1));
        assert_eq!(a.held_by(0).len(), 8);
    }
    let (p, since) = incoming[0];
    // A stale answer (another move) or an answer from another member changes nothing.
    assert!(!fold.apply(&of(
        T0 + 2,
        "b",
        MemberBody::Ready {
            partition: p,
            since: 0
        }
    )));
    assert!(!fold.apply(&of(
        T0 + 2,
        "a",
        MemberBody::Ready {
            partition: p,
            since
        }
    )));
    assert!(fold.apply(&of(
        T0 + 2,
        "b",
        MemberBody::Ready {
            partition: p,
            since
        }
    )));
    let a = fold.assignment();
    assert_eq!(a.owner(p), Some(1));
    assert_eq!(a.successor(p), Some(0));
    assert_eq!(a.held_by(0).len(), 7);
    assert_eq!(
        fold.stats(),
        MemberStats {
            applied: 3,
            ignored: 2
        }
    );
}

#[test]
fn a_leave_hands_over_warmed_up_then_the_leaver_is_gone() {
    let mut fold = MemberFold::of(6, &[join(T0, "a"), join(T0, "b"), join(T0, "c")]);
    let a = fold.assignment().clone();
    for (slot, name) in [(1, "b"), (2, "c")] {
        for (p, since) in a.incoming(slot) {
            assert!(fold.apply(&of(
                T0,
                name,
                MemberBody::Ready {
                    partition: p,
                    since
                }
            )));
        }
    }
    let before = fold.assignment().clone();
    assert!(before.moves.iter().all(Option::is_none));
    let leaving = before.targets_of(1);
    assert!(fold.apply(&of(T0 + 1, "b", MemberBody::Leave)));
    assert!(
        !fold.apply(&of(T0 + 1, "b", MemberBody::Leave)),
        "a second leave"
    );
    let a = fold.assignment().clone();
    assert!(a.member(1).unwrap().leaving);
    for p in 0..6 {
        if leaving.contains(&p) {
            assert_eq!(a.owner(p), Some(1), "the leaver serves until ready");
            assert_ne!(a.targets[p as usize], Some(1));
        } else {
            assert_eq!(a.targets[p as usize], before.targets[p as usize]);
        }
    }
    for (slot, name) in [(0, "a"), (2, "c")] {
        for (p, since) in a.incoming(slot) {
            fold.apply(&of(
                T0 + 2,
                name,
                MemberBody::Ready {
                    partition: p,
                    since,
                },
            ));
        }
    }
    let a = fold.assignment();
    assert_eq!(a.member(1), None, "gone once it serves nothing");
    assert_eq!(a.slot_of("b"), None);
    assert_eq!((a.targets_of(0).len(), a.targets_of(2).len()), (3, 3));
}

#[test]
fn an_eviction_applies_only_after_the_lease_and_moves_at_once() {
    let mut fold = MemberFold::of(4, &[join(T0, "a"), join(T0, "b")]);
    // b's partitions are still moving from a: a serves them.
    fold.apply(&of(T0 + 5_000, "a", MemberBody::Heartbeat));
    assert_eq!(fold.lease_end("a"), Some(T0 + 5_000 + LEASE));
    let early = MemberRecord::new(T0 + LEASE, "a", "b", MemberBody::Evict);
    assert!(!fold.apply(&early), "a renewed its lease");
    let due = MemberRecord::new(T0 + 5_000 + LEASE, "a", "b", MemberBody::Evict);
    assert!(fold.apply(&due));
    assert!(!fold.apply(&due), "a duplicate is harmless");
    let a = fold.assignment();
    assert_eq!(a.slot_of("a"), None);
    assert_eq!(a.targets_of(1), vec![0, 1, 2, 3]);
    assert!(
        a.moves.iter().all(Option::is_none),
        "no warm-up from a member not there"
    );
    // A heartbeat of the evicted member changes nothing; its join is a fresh join into slot 0.
    assert!(!fold.apply(&of(T0 + 16_000, "a", MemberBody::Heartbeat)));
    fold.apply(&join(T0 + 16_001, "a"));
    let a = fold.assignment();
    assert_eq!(a.slot_of("a"), Some(0));
    assert_eq!(a.incoming(0).len(), 2);
}

#[test]
fn a_join_of_a_present_member_keeps_its_partitions_and_cancels_its_leave() {
    let mut fold = MemberFold::of(4, &[join(T0, "a"), join(T0, "b")]);
    let before = fold.assignment().clone();
    let renewed = MemberRecord::new(
        T0 + 1,
        "b",
        "b",
        MemberBody::Join {
            url: "http://b-new:8080".into(),
            lease_ms: LEASE,
        },
    );
    assert!(fold.apply(&renewed));
    assert_eq!(fold.assignment().targets, before.targets);
    assert_eq!(fold.assignment().moves, before.moves);
    assert_eq!(
        fold.assignment().member(1).unwrap().url,
        "http://b-new:8080"
    );
    fold.apply(&of(T0 + 2, "a", MemberBody::Leave));
    fold.apply(&join(T0 + 3, "a"));
    let a = fold.assignment();
    assert!(!a.member(0).unwrap().leaving);
    assert_eq!(a.targets_of(0).len(), 2);
    // Back to serving what it never stopped serving: no move of those.
    for p in a.targets_of(0) {
        assert_eq!(a.moves[p as usize], None);
    }
}

#[test]
fn the_last_member_leaving_leaves_nobody() {
    let mut fold = MemberFold::of(4, &[join(T0, "a")]);
    fold.apply(&of(T0 + 1, "a", MemberBody::Leave));
    assert_eq!(fold.assignment(), &Assignment::empty(4));
    assert_eq!(fold.assignment().owner(0), None);
}

#[test]
fn a_snapshot_changes_nothing_and_restores_the_fold() {
    let mut fold = MemberFold::of(4, &[join(T0, "a"), join(T0 + 1, "b")]);
    let before = fold.clone();
    let snapshot = of(
        T0 + 2,
        "a",
        MemberBody::Snapshot {
            after: 1,
            state: fold.state(),
        },
    );
    assert!(!fold.apply(&snapshot));
    assert_eq!(fold, before, "not even counted");
    assert_eq!(MemberFold::restore(4, &fold.state()).unwrap(), fold);
    assert_eq!(
        MemberFold::restore(8, &fold.state()).unwrap_err().kind(),
        "invalid_field"
    );
    assert_eq!(
        MemberFold::restore(4, "{").unwrap_err().kind(),
        "invalid_json"
    );
    let mut ghost: serde_json::Value = serde_json::from_str(&fold.state()).unwrap();
    ghost["assignment"]["targets"][0] = 7.into();
    assert_eq!(
        MemberFold::restore(4, &ghost.to_string())
            .unwrap_err()
            .kind(),
        "invalid_field"
    );
}
