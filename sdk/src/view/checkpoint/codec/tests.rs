//! Unit tests of the checkpoint codec: what it writes reads back, and damage is refused
//! (random inputs: `proptests.rs`).
#![allow(clippy::unwrap_used)]

use super::*;
use agentlog_wire::TaskState;

fn sample() -> Vec<u8> {
    let mut out = Vec::new();
    let positions = [
        Position {
            next: 3,
            anchor: (10, 0xdead_beef),
        },
        Position::default(),
    ];
    encode_header(&mut out, 42, "agentlog", "echo.events", &positions);
    let owners = [Caller::anonymous()];
    let machine = MachineSnapshot {
        state: Some(TaskState::Working),
        status_timestamp_ms: 7,
        status_has_message: true,
        last_message_id: Some("m-1".into()),
        seen: Some((vec!["m-1".into()], vec!["c-1".into(), "s-1".into()])),
        attempts: 1,
        claim: Some(Claim {
            attempt: 1,
            turn_attempt: 1,
            holder: "w".into(),
            lease_until_ms: 99,
        }),
        pending: vec!["m-2".into()],
        retention_ms: 60_000,
        shown: true,
        answered: false,
        push_configs: true,
    };
    let records = [0u64, 1 | 1 << 63, 2];
    let places = [Place::from_raw(0), Place::from_raw(4096), Place::UNKNOWN];
    let (t1, t2, ctx) = (Key::new("t-1"), Key::new("t-2"), Key::new("ctx"));
    encode_tasks(
        &mut out,
        &owners,
        2,
        [
            (&t1, 0, &ctx, machine, records.to_vec(), places),
            (
                &t2,
                0,
                &ctx,
                MachineSnapshot::default(),
                Vec::new(),
                [Place::UNKNOWN; PLACED],
            ),
        ]
        .into_iter(),
    );
    seal(&mut out);
    out
}

#[test]
fn a_checkpoint_round_trips() {
    let bytes = sample();
    let checkpoint = decode(&bytes).unwrap();
    assert_eq!(checkpoint.created_ms, 42);
    assert_eq!(checkpoint.topic, "echo.events");
    assert_eq!(checkpoint.positions[0].next, 3);
    assert_eq!(checkpoint.tasks.len(), 2);
    let tasks: Vec<TaskRecord<'_>> = checkpoint.tasks.iter().map(Result::unwrap).collect();
    assert_eq!(tasks.len(), 2);
    assert_eq!((tasks[0].id, tasks[0].context_id), ("t-1", "ctx"));
    assert_eq!(tasks[0].machine.pending, vec!["m-2".to_owned()]);
    assert_eq!(tasks[0].records.as_slice(), [0, 1 | 1 << 63, 2]);
    assert_eq!(
        tasks[0].places,
        [Place::from_raw(0), Place::from_raw(4096), Place::UNKNOWN]
    );
    assert_eq!(tasks[1].places, [Place::UNKNOWN; PLACED]);
    assert_eq!(tasks[1].machine, MachineSnapshot::default());
}

#[test]
fn a_bad_task_under_a_good_checksum_is_an_error_item() {
    let mut out = Vec::new();
    encode_header(
        &mut out,
        42,
        "agentlog",
        "echo.events",
        &[Position::default()],
    );
    let (id, ctx) = (Key::new("t-1"), Key::new("ctx"));
    // Owner 3 of 1.
    let task = (
        &id,
        3,
        &ctx,
        MachineSnapshot::default(),
        Vec::new(),
        [Place::UNKNOWN; PLACED],
    );
    encode_tasks(&mut out, &[Caller::anonymous()], 1, [task].into_iter());
    seal(&mut out);
    let checkpoint = decode(&out).unwrap();
    let tasks: Vec<_> = checkpoint.tasks.iter().collect();
    assert_eq!(tasks, [Err(CodecError::Malformed("owner"))]);
}

#[test]
fn every_damage_is_refused() {
    let bytes = sample();
    for at in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x10;
        assert!(decode(&damaged).is_err(), "a flipped bit at {at} decoded");
    }
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len]).is_err(), "cut to {len} decoded");
    }
    assert_eq!(decode(b"not a checkpoint"), Err(CodecError::Magic));
}
