//! `members.json`: membership records (`wire::members`): encodings, bytes the decoder must
//! refuse, and histories in log order with the assignment every bridge folds them into.

use agentlog_wire::members::{MemberBody, MemberFold, MemberRecord};
use serde_json::{Value, json};

use crate::{err, ok};

const T0: u64 = 1_800_000_000_000;
const LEASE: u64 = 10_000;

fn join(at: u64, name: &str) -> MemberRecord {
    let url = format!("http://{name}.internal:8080");
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

fn ready(at: u64, name: &str, partition: u32, since: u64) -> MemberRecord {
    of(at, name, MemberBody::Ready { partition, since })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn members() -> Vec<Value> {
    let mut cases = Vec::new();
    let mut signed = of(T0, "b-1", MemberBody::Heartbeat);
    signed.key_id = "kid-bridge".into();
    signed.signature = (0..64).collect();
    let encodings = [
        ("a join: the member's URL and lease", join(T0, "b-0")),
        ("a heartbeat", of(T0 + 3_000, "b-0", MemberBody::Heartbeat)),
        ("a leave", of(T0 + 4_000, "b-0", MemberBody::Leave)),
        (
            "an eviction of b-2 noticed by b-0",
            MemberRecord::new(T0 + 20_000, "b-2", "b-0", MemberBody::Evict),
        ),
        (
            "a ready: partition 7 of the move begun at position 3",
            ready(T0, "b-1", 7, 3),
        ),
        (
            "a signed heartbeat (key id and a 64-byte signature)",
            signed,
        ),
        (
            "a snapshot: the fold of the records up to offset 1, as JSON",
            of(
                T0,
                "a",
                MemberBody::Snapshot {
                    after: 1,
                    state: MemberFold::of(2, &[join(T0, "a"), join(T0, "b")]).state(),
                },
            ),
        ),
    ];
    for (description, record) in encodings {
        let bytes = record.encode().unwrap();
        cases.push(ok(
            description,
            json!({"record": record}),
            json!({"hex": hex(&bytes), "signingPayloadHex": hex(&record.signing_payload().unwrap())}),
        ));
    }
    let bytes = join(T0, "b-0").encode().unwrap();
    let mut bad: Vec<(&str, Vec<u8>, &str)> = vec![
        ("no bytes", Vec::new(), "truncated"),
        ("cut short", bytes[..bytes.len() - 1].to_vec(), "truncated"),
        (
            "a byte after the record",
            [&bytes[..], &[0]].concat(),
            "trailing_bytes",
        ),
    ];
    let mut version = bytes.clone();
    version[0] = 2;
    bad.push(("format version 2", version, "unknown_version"));
    let mut kind = bytes.clone();
    kind[1] = 7;
    bad.push(("kind 7", kind, "unknown_kind"));
    let mut utf8 = bytes.clone();
    utf8[12] = 0xff;
    bad.push(("a member name that is not UTF-8", utf8, "invalid_utf8"));
    let mut signature = bytes.clone();
    *signature.last_mut().unwrap() = 32;
    bad.push(("a signature length of 32", signature, "invalid_field"));
    let empty = [
        &[1u8, 2][..],
        &T0.to_le_bytes(),
        &[0, 0, 1, 0, b'a', 0, 0, 0],
    ]
    .concat();
    bad.push(("an empty member", empty, "invalid_field"));
    let lease = bytes.len() - 9;
    let mut zero = bytes.clone();
    zero[lease..lease + 8].copy_from_slice(&[0; 8]);
    bad.push(("a join with a lease of 0", zero, "invalid_field"));
    for (description, bytes, kind) in bad {
        cases.push(err(
            description,
            json!({"hex": hex(&bytes)}),
            json!({"kind": kind}),
        ));
    }
    let histories: Vec<(&str, u32, Vec<MemberRecord>)> = vec![
        (
            "the first member holds every partition at once (nobody to warm up from)",
            8,
            vec![join(T0, "a")],
        ),
        (
            "a second member takes half, each partition moving: the first serves it until the second is ready",
            8,
            vec![join(T0, "a"), join(T0 + 1, "b")],
        ),
        (
            "a ready switches its partition; a stale one (another move) and one from another member do nothing",
            8,
            vec![
                join(T0, "a"),
                join(T0 + 1, "b"),
                ready(T0 + 2, "b", 4, 0),
                ready(T0 + 2, "a", 4, 1),
                ready(T0 + 2, "b", 4, 1),
            ],
        ),
        (
            "a third member of three takes only from those above their share; 7 partitions: shares 3, 2, 2",
            7,
            vec![
                join(T0, "a"),
                join(T0, "b"),
                ready(T0, "b", 4, 1),
                ready(T0, "b", 5, 1),
                ready(T0, "b", 6, 1),
                join(T0, "c"),
            ],
        ),
        (
            "a leave: the leaver's partitions move to the others, it serves them until each is ready, then it is gone",
            6,
            vec![
                join(T0, "a"),
                join(T0, "b"),
                ready(T0, "b", 3, 1),
                ready(T0, "b", 4, 1),
                ready(T0, "b", 5, 1),
                of(T0 + 1, "b", MemberBody::Leave),
                ready(T0 + 2, "a", 3, 5),
                ready(T0 + 2, "a", 4, 5),
            ],
        ),
        (
            "the leaver is gone once its last partition is ready elsewhere; its slot is free again",
            6,
            vec![
                join(T0, "a"),
                join(T0, "b"),
                ready(T0, "b", 3, 1),
                ready(T0, "b", 4, 1),
                ready(T0, "b", 5, 1),
                of(T0 + 1, "b", MemberBody::Leave),
                ready(T0 + 2, "a", 3, 5),
                ready(T0 + 2, "a", 4, 5),
                ready(T0 + 2, "a", 5, 5),
                join(T0 + 3, "c"),
            ],
        ),
        (
            "an eviction within the lease (renewed by a heartbeat) is ignored; at its end it applies, at once, and a duplicate is ignored",
            4,
            vec![
                join(T0, "a"),
                join(T0, "b"),
                ready(T0, "b", 2, 1),
                ready(T0, "b", 3, 1),
                of(T0 + 5_000, "b", MemberBody::Heartbeat),
                MemberRecord::new(T0 + LEASE, "b", "a", MemberBody::Evict),
                MemberRecord::new(T0 + 5_000 + LEASE, "b", "a", MemberBody::Evict),
                MemberRecord::new(T0 + 5_001 + LEASE, "b", "a", MemberBody::Evict),
            ],
        ),
        (
            "an evicted member's heartbeat does nothing; its join is a fresh join, warmed up from the member serving now",
            4,
            vec![
                join(T0, "a"),
                join(T0, "b"),
                MemberRecord::new(T0 + LEASE, "a", "b", MemberBody::Evict),
                of(T0 + LEASE + 1, "a", MemberBody::Heartbeat),
                join(T0 + LEASE + 2, "a"),
            ],
        ),
        (
            "a join of a present member renews its URL and keeps its partitions; a join of a leaving member cancels its leave",
            4,
            vec![
                join(T0, "a"),
                join(T0, "b"),
                of(
                    T0 + 1,
                    "b",
                    MemberBody::Join {
                        url: "http://b.elsewhere:9090".into(),
                        lease_ms: 30_000,
                    },
                ),
                of(T0 + 2, "a", MemberBody::Leave),
                join(T0 + 3, "a"),
            ],
        ),
        (
            "a snapshot changes nothing and is not counted (a reader may start from its state)",
            4,
            vec![
                join(T0, "a"),
                of(
                    T0 + 1,
                    "a",
                    MemberBody::Snapshot {
                        after: 0,
                        state: MemberFold::of(4, &[join(T0, "a")]).state(),
                    },
                ),
                join(T0 + 2, "b"),
            ],
        ),
        (
            "the last member leaving leaves nobody",
            4,
            vec![join(T0, "a"), of(T0 + 1, "a", MemberBody::Leave)],
        ),
        (
            "records about a member never seen change nothing",
            2,
            vec![
                of(T0, "x", MemberBody::Heartbeat),
                of(T0, "x", MemberBody::Leave),
                ready(T0, "x", 0, 0),
                MemberRecord::new(T0, "x", "a", MemberBody::Evict),
            ],
        ),
    ];
    for (description, partitions, records) in histories {
        let fold = MemberFold::of(partitions, &records);
        cases.push(ok(
            description,
            json!({"partitions": partitions, "records": records}),
            json!({"assignment": fold.assignment(), "stats": fold.stats()}),
        ));
    }
    cases
}
