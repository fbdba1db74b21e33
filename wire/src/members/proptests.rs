//! Property tests of the membership fold: balance, stickiness and determinism over random
//! histories of joins, heartbeats, leaves, evictions (due or early) and readiness (current or
//! stale).

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
const LEASE: u64 = 1_000;

/// One step of a history: an operation, a member, a time step, a choice among moves.
type Step = (u8, usize, u16, usize);

/// The records of `steps`, each chosen against the fold of those before it (a `ready` names
/// a move that exists, or a stale one; an eviction is due or early).
fn history(partitions: u32, steps: &[Step]) -> Vec<MemberRecord> {
    let mut fold = MemberFold::new(partitions);
    let mut now = 1_000_000u64;
    let mut records = Vec::new();
    for &(op, who, dt, pick) in steps {
        now += u64::from(dt);
        let name = NAMES[who % NAMES.len()];
        let body = match op % 7 {
            0 | 1 => MemberBody::Join {
                url: format!("http://{name}"),
                lease_ms: LEASE,
            },
            2 => MemberBody::Heartbeat,
            3 => MemberBody::Leave,
            6 => MemberBody::Snapshot {
                after: records.len() as u64,
                state: fold.state(),
            },
            4 => {
                let due = fold.lease_end(name).unwrap_or(now);
                let at = if pick % 2 == 0 {
                    due.max(now)
                } else {
                    due.saturating_sub(1)
                };
                let record = MemberRecord::new(at, name, "x", MemberBody::Evict);
                fold.apply(&record);
                records.push(record);
                continue;
            }
            _ => {
                let a = fold.assignment();
                let moves: Vec<(String, u32, u64)> = a
                    .members
                    .iter()
                    .flat_map(|m| {
                        a.incoming(m.slot)
                            .into_iter()
                            .map(|(p, s)| (m.name.clone(), p, s))
                    })
                    .collect();
                let (name, partition, since) = match moves.get(pick % (moves.len() + 1)) {
                    Some(found) => found.clone(),
                    None => (name.to_owned(), (pick as u32) % partitions, pick as u64),
                };
                let record =
                    MemberRecord::new(now, &name, &name, MemberBody::Ready { partition, since });
                fold.apply(&record);
                records.push(record);
                continue;
            }
        };
        let record = MemberRecord::new(now, name, name, body);
        fold.apply(&record);
        records.push(record);
    }
    records
}

fn loads(a: &Assignment) -> Vec<usize> {
    a.members
        .iter()
        .filter(|m| !m.leaving)
        .map(|m| a.targets_of(m.slot).len())
        .collect()
}

fn check_invariants(a: &Assignment) -> Result<(), TestCaseError> {
    let loads = loads(a);
    if let (Some(max), Some(min)) = (loads.iter().max(), loads.iter().min()) {
        prop_assert!(max - min <= 1, "unbalanced: {loads:?}");
        prop_assert_eq!(
            loads.iter().sum::<usize>(),
            a.targets.len(),
            "a partition without target"
        );
    } else {
        prop_assert!(a.targets.iter().all(Option::is_none));
    }
    for p in 0..a.partitions() {
        let target = a.targets[p as usize];
        if let Some(slot) = target {
            prop_assert!(
                a.member(slot).is_some_and(|m| !m.leaving),
                "target {slot} not staying"
            );
        }
        if let Some(m) = a.moves[p as usize] {
            prop_assert!(
                a.member(m.from).is_some(),
                "serving member {} absent",
                m.from
            );
            prop_assert!(Some(m.from) != target, "a move to itself");
        }
        if let Some(owner) = a.owner(p) {
            prop_assert!(a.member(owner).is_some());
        }
    }
    for m in a.members.iter().filter(|m| m.leaving) {
        prop_assert!(
            !a.held_by(m.slot).is_empty(),
            "a leaver serving nothing stays"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn balanced_sticky_and_deterministic(
        partitions in 1u32..40,
        steps in proptest::collection::vec((any::<u8>(), 0usize..6, 0u16..1_500, any::<usize>()), 0..60),
    ) {
        let records = history(partitions, &steps);
        let mut fold = MemberFold::new(partitions);
        for record in &records {
            let before = fold.assignment().clone();
            let present = before.slot_of(&record.member);
            let was_leaving = present.and_then(|s| before.member(s)).is_some_and(|m| m.leaving);
            let applied = fold.apply(record);
            let after = fold.assignment();
            check_invariants(after)?;
            let changed: Vec<u32> = (0..partitions)
                .filter(|p| before.targets[*p as usize] != after.targets[*p as usize])
                .collect();
            match (&record.body, applied) {
                (_, false) => prop_assert_eq!(&before, after, "an ignored record changed the map"),
                (MemberBody::Leave | MemberBody::Evict, true) => {
                    // Only the leaver's partitions move.
                    for p in &changed {
                        prop_assert_eq!(before.targets[*p as usize], present, "partition {} moved", p);
                    }
                }
                (MemberBody::Join { .. }, true) if present.is_none() => {
                    let slot = after.slot_of(&record.member).unwrap();
                    let staying = u32::try_from(loads(after).len()).unwrap();
                    prop_assert!(changed.len() as u32 <= partitions.div_ceil(staying));
                    for p in &changed {
                        prop_assert_eq!(after.targets[*p as usize], Some(slot));
                    }
                }
                (MemberBody::Join { .. }, true) if !was_leaving => {
                    prop_assert_eq!(&before.targets, &after.targets);
                    prop_assert_eq!(&before.moves, &after.moves);
                }
                (MemberBody::Join { .. }, true) => {}
                (MemberBody::Heartbeat | MemberBody::Ready { .. } | MemberBody::Snapshot { .. }, true) => {
                    prop_assert!(changed.is_empty());
                }
            }
        }
        // Every replay, from the records or from their bytes, gives the same map.
        let replayed = MemberFold::of(partitions, &records);
        prop_assert_eq!(&replayed, &fold);
        let decoded: Vec<MemberRecord> = records
            .iter()
            .map(|r| MemberRecord::decode(&r.encode().unwrap()).unwrap())
            .collect();
        prop_assert_eq!(MemberFold::of(partitions, &decoded), fold.clone());
        // A reader starting from any point's state folds to the same map.
        for at in [0, records.len() / 3, records.len() / 2, records.len()] {
            let head = MemberFold::of(partitions, &records[..at]);
            let mut restored = MemberFold::restore(partitions, &head.state()).unwrap();
            for record in &records[at..] {
                restored.apply(record);
            }
            prop_assert_eq!(&restored, &fold);
        }
    }
}
