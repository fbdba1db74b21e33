//! Property tests of the checkpoint codec: a checkpoint is read back from the log (or a
//! damaged disk), so [`decode`] must refuse anything it did not write.

#![allow(clippy::unwrap_used)]

use agentlog_wire::TaskState;
use agentlog_wire::fold::{Claim, MachineSnapshot};
use proptest::prelude::*;

use super::super::key::Key;
use super::super::tasks::applied::Places;
use super::codec::{CodecError, Position, TaskRecord, decode, encode_header, encode_tasks, seal};
use crate::agent::Caller;
use crate::log::raw::Place;

/// Bounded so the properties run in the ordinary test pass; no regression files are written
/// into the repository.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A task as generated: its ids as text, the rest as the codec takes it.
#[derive(Debug, Clone)]
struct Task {
    id: String,
    owner: u32,
    context_id: String,
    machine: MachineSnapshot,
    records: Vec<u64>,
    places: Places,
}

/// A checkpoint as generated, before encoding.
#[derive(Debug, Clone)]
struct Generated {
    created_ms: u64,
    stream: String,
    topic: String,
    positions: Vec<Position>,
    owners: Vec<Caller>,
    tasks: Vec<Task>,
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![".{0,8}", "[a-z0-9.-]{0,12}"]
}

/// Ids as the view keys them: UUIDs (stored as their bytes; upper case kept as text), short
/// ones (inline) and long ones (boxed).
fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}",
        ".{0,22}",
        ".{23,40}",
    ]
}

fn ids() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(text(), 0..3)
}

fn machine() -> impl Strategy<Value = MachineSnapshot> {
    let states: Vec<TaskState> = (0..=u8::MAX).filter_map(TaskState::from_code).collect();
    let claim = (any::<u32>(), any::<u32>(), text(), any::<u64>()).prop_map(
        |(attempt, turn_attempt, holder, lease_until_ms)| Claim {
            attempt,
            turn_attempt,
            holder: holder.into(),
            lease_until_ms,
        },
    );
    (
        (
            proptest::option::of(proptest::sample::select(states)),
            any::<u64>(),
            any::<bool>(),
            proptest::option::of(text()),
            proptest::option::of((ids(), ids())),
        ),
        (
            any::<u32>(),
            proptest::option::of(claim),
            ids(),
            any::<u64>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (state, status_timestamp_ms, status_has_message, last_message_id, seen),
                (attempts, claim, pending, retention_ms, shown, answered, push_configs),
            )| MachineSnapshot {
                state,
                status_timestamp_ms,
                status_has_message,
                last_message_id,
                seen,
                attempts,
                claim,
                pending,
                retention_ms,
                shown,
                answered,
                push_configs,
            },
        )
}

fn generated() -> impl Strategy<Value = Generated> {
    let position =
        (any::<u64>(), any::<u32>(), any::<u32>()).prop_map(|(next, len, crc)| Position {
            next,
            anchor: (len, crc),
        });
    let owner = (text(), text()).prop_map(|(principal, tenant)| Caller { principal, tenant });
    (
        any::<u64>(),
        text(),
        text(),
        proptest::collection::vec(position, 0..4),
        proptest::collection::vec(owner, 1..4),
    )
        .prop_flat_map(|(created_ms, stream, topic, positions, owners)| {
            let task = (
                id(),
                0..owners.len() as u32,
                id(),
                machine(),
                proptest::collection::vec(any::<u64>(), 0..5),
                proptest::array::uniform3(any::<u32>().prop_map(Place::from_raw)),
            )
                .prop_map(|(id, owner, context_id, machine, records, places)| Task {
                    id,
                    owner,
                    context_id,
                    machine,
                    records,
                    places,
                });
            (
                Just((created_ms, stream, topic, positions, owners)),
                proptest::collection::vec(task, 0..4),
            )
        })
        .prop_map(
            |((created_ms, stream, topic, positions, owners), tasks)| Generated {
                created_ms,
                stream,
                topic,
                positions,
                owners,
                tasks,
            },
        )
}

fn encode(checkpoint: &Generated) -> Vec<u8> {
    let mut out = Vec::new();
    encode_header(
        &mut out,
        checkpoint.created_ms,
        &checkpoint.stream,
        &checkpoint.topic,
        &checkpoint.positions,
    );
    let keys: Vec<(Key, Key)> = checkpoint
        .tasks
        .iter()
        .map(|t| (Key::new(&t.id), Key::new(&t.context_id)))
        .collect();
    let tasks = checkpoint
        .tasks
        .iter()
        .zip(&keys)
        .map(|(t, (id, context))| {
            (
                id,
                t.owner,
                context,
                t.machine.clone(),
                t.records.clone(),
                t.places,
            )
        });
    encode_tasks(&mut out, &checkpoint.owners, checkpoint.tasks.len(), tasks);
    seal(&mut out);
    out
}

/// Re-encode a decoded checkpoint whose tasks all decoded.
fn reencode(
    created_ms: u64,
    stream: &str,
    topic: &str,
    positions: &[Position],
    owners: &[Caller],
    tasks: &[TaskRecord<'_>],
) -> Vec<u8> {
    encode(&Generated {
        created_ms,
        stream: stream.to_owned(),
        topic: topic.to_owned(),
        positions: positions.to_vec(),
        owners: owners.to_vec(),
        tasks: tasks
            .iter()
            .map(|t| Task {
                id: t.id.to_owned(),
                owner: t.owner,
                context_id: t.context_id.to_owned(),
                machine: t.machine.clone(),
                records: t.records.to_vec(),
                places: t.places,
            })
            .collect(),
    })
}

/// Decode `bytes` and every task, stopping at the first task that does not decode; when all
/// do, the bytes must be exactly what the decoded checkpoint encodes to.
fn decode_checked(bytes: &[u8]) -> Result<(), TestCaseError> {
    let Ok(checkpoint) = decode(bytes) else {
        return Ok(());
    };
    let mut tasks = Vec::new();
    // Each task takes bytes, so at most as many tasks as bytes decode before an error.
    for task in checkpoint.tasks.iter().take(bytes.len() + 1) {
        match task {
            Ok(task) => tasks.push(task),
            Err(_) => return Ok(()),
        }
    }
    let again = reencode(
        checkpoint.created_ms,
        &checkpoint.stream,
        &checkpoint.topic,
        &checkpoint.positions,
        &checkpoint.owners,
        &tasks,
    );
    prop_assert_eq!(again, bytes);
    Ok(())
}

/// A checkpoint's encoding and a position inside it.
fn encoding_and_index() -> impl Strategy<Value = (Vec<u8>, usize)> {
    generated().prop_flat_map(|checkpoint| {
        let bytes = encode(&checkpoint);
        let len = bytes.len();
        (Just(bytes), 0..len)
    })
}

/// The magic and version: a change there is refused as not a checkpoint of this version,
/// before the checksum is read.
const PREFIX: usize = b"agentlog/view-checkpoint\0".len() + 1;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_checkpoint_round_trips(checkpoint in generated()) {
        let bytes = encode(&checkpoint);
        let decoded = decode(&bytes).unwrap();
        prop_assert_eq!(decoded.created_ms, checkpoint.created_ms);
        prop_assert_eq!(&decoded.stream, &checkpoint.stream);
        prop_assert_eq!(&decoded.topic, &checkpoint.topic);
        prop_assert_eq!(&decoded.positions, &checkpoint.positions);
        prop_assert_eq!(&decoded.owners, &checkpoint.owners);
        prop_assert_eq!(decoded.tasks.len(), checkpoint.tasks.len());
        let tasks: Vec<TaskRecord<'_>> = decoded.tasks.iter().map(Result::unwrap).collect();
        prop_assert_eq!(tasks.len(), checkpoint.tasks.len());
        for (got, want) in tasks.iter().zip(&checkpoint.tasks) {
            prop_assert_eq!(got.id, want.id.as_str());
            prop_assert_eq!(got.owner, want.owner);
            prop_assert_eq!(got.context_id, want.context_id.as_str());
            prop_assert_eq!(&got.machine, &want.machine);
            prop_assert_eq!(got.records.as_slice(), want.records.as_slice());
            prop_assert_eq!(got.places, want.places);
        }
        decode_checked(&bytes)?;
    }

    #[test]
    fn any_bytes_are_refused(
        bytes in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..96),
            // The magic and version, so the checksum is what refuses them.
            proptest::collection::vec(any::<u8>(), 0..96)
                .prop_map(|rest| [&b"agentlog/view-checkpoint\0\x05"[..], &rest].concat()),
        ],
    ) {
        prop_assert!(decode(&bytes).is_err());
    }

    #[test]
    fn a_changed_byte_is_refused((bytes, at) in encoding_and_index(), flip in 1u8..=255) {
        let mut changed = bytes;
        changed[at] ^= flip;
        let got = decode(&changed);
        // crc32c detects every burst of errors shorter than itself: no changed byte gets past it.
        if at < PREFIX {
            prop_assert!(matches!(got, Err(CodecError::Magic | CodecError::Version(_))), "{got:?}");
        } else {
            prop_assert_eq!(got, Err(CodecError::Checksum));
        }
    }

    #[test]
    fn a_cut_encoding_is_refused((bytes, cut) in encoding_and_index()) {
        let got = decode(&bytes[..cut]);
        if cut < PREFIX {
            prop_assert_eq!(got, Err(CodecError::Magic));
        } else {
            prop_assert_eq!(got, Err(CodecError::Checksum));
        }
    }

    #[test]
    fn a_changed_byte_under_a_good_checksum_decodes_to_what_it_spells_or_is_refused(
        (bytes, at) in encoding_and_index(),
        to in any::<u8>(),
        cut in any::<bool>(),
    ) {
        // Past the checksum: what a writer's bug would store. The decoder must still never
        // panic, and what it accepts must be exactly what it would write.
        let mut changed = bytes[..bytes.len() - 4].to_vec();
        if let Some(byte) = changed.get_mut(at) {
            *byte = to;
        }
        if cut {
            changed.truncate(at);
        }
        seal(&mut changed);
        decode_checked(&changed)?;
    }
}
