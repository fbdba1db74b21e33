//! Property tests of the record encoding: [`Record::decode`] reads whatever a log holds,
//! including bytes another writer (or a damaged disk) put there.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;
use crate::WireError;

/// Bounded so the properties run in the ordinary test pass; no regression files are written
/// into the repository.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Short text, ASCII and not: field lengths and UTF-8 are what the decoder checks.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![".{0,12}", "[a-z0-9-]{1,8}"]
}

fn header() -> impl Strategy<Value = RecordHeader> {
    (
        (
            "[a-z0-9-]{1,8}|.{1,12}",
            text(),
            text(),
            text(),
            text(),
            text(),
            text(),
        ),
        (any::<u8>(), any::<u32>(), any::<u64>(), any::<u64>()),
        (
            text(),
            proptest::collection::vec(text(), 0..4),
            prop_oneof![
                Just(Vec::new()),
                proptest::collection::vec(any::<u8>(), SIGNATURE_LEN)
            ],
        ),
    )
        .prop_map(
            |(
                (task_id, context_id, message_id, source, principal, tenant, content_type),
                (hops, attempt, deadline_ms, timestamp_ms),
                (key_id, bridge_hops, signature),
            )| RecordHeader {
                task_id,
                context_id,
                message_id,
                source,
                principal,
                tenant,
                hops,
                attempt,
                deadline_ms,
                timestamp_ms,
                content_type,
                key_id,
                bridge_hops,
                signature,
            },
        )
}

fn body() -> impl Strategy<Value = RecordBody> {
    let json = || ".{0,24}";
    prop_oneof![
        (json(), any::<u64>()).prop_map(|(params, retention_ms)| RecordBody::Command {
            params,
            retention_ms
        }),
        json().prop_map(|params| RecordBody::Continue { params }),
        json().prop_map(|metadata| RecordBody::CancelRequest { metadata }),
        (any::<u8>(), json()).prop_map(|(state, message)| RecordBody::StatusUpdate {
            state: StateCode(state),
            message
        }),
        (any::<bool>(), any::<bool>(), json()).prop_map(|(append, last_chunk, artifact)| {
            RecordBody::ArtifactUpdate {
                append,
                last_chunk,
                artifact,
            }
        }),
        (any::<u8>(), json()).prop_map(|(state, message)| RecordBody::Terminal {
            state: StateCode(state),
            message
        }),
        (text(), any::<u64>()).prop_map(|(turn, lease_until_ms)| RecordBody::Claim {
            turn,
            lease_until_ms
        }),
        json().prop_map(|message| RecordBody::Reply { message }),
        json().prop_map(|config| RecordBody::PushConfig { config }),
        text().prop_map(|config_id| RecordBody::PushConfigDeleted { config_id }),
        (text(), any::<u64>(), any::<u32>(), json()).prop_map(
            |(config_id, update, attempts, reason)| RecordBody::PushDeadLetter {
                config_id,
                update,
                attempts,
                reason
            }
        ),
        (text(), any::<u64>())
            .prop_map(|(config_id, next)| RecordBody::PushProgress { config_id, next }),
    ]
}

fn record() -> impl Strategy<Value = Record> {
    (header(), body()).prop_map(|(header, body)| Record { header, body })
}

/// A record's encoding and a position inside it.
fn encoding_and_index() -> impl Strategy<Value = (Vec<u8>, usize)> {
    record().prop_flat_map(|record| {
        let bytes = record.encode().unwrap();
        let len = bytes.len();
        (Just(bytes), 0..len)
    })
}

/// Decode `bytes`; when they decode and are of the current format, they must be exactly the
/// re-encoding of what they decoded to (the encoding has one spelling per record).
fn decode_checked(bytes: &[u8]) -> Result<Option<Record>, TestCaseError> {
    let Ok(record) = Record::decode(bytes) else {
        return Ok(None);
    };
    if bytes.first() == Some(&RECORD_FORMAT_VERSION) {
        prop_assert_eq!(record.encode().unwrap(), bytes);
    } else {
        // An older format re-encodes as the current one, to the same record.
        prop_assert_eq!(
            Record::decode(&record.encode().unwrap()).unwrap(),
            record.clone()
        );
    }
    Ok(Some(record))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_record_round_trips(record in record()) {
        let bytes = record.encode().unwrap();
        prop_assert_eq!(bytes.first(), Some(&RECORD_FORMAT_VERSION));
        prop_assert_eq!(Record::decode(&bytes).unwrap(), record.clone());
        let mut appended = vec![0xee];
        record.encode_into(&mut appended).unwrap();
        prop_assert_eq!(&appended[1..], &bytes[..]);
        let payload = record.signing_payload().unwrap();
        prop_assert!(payload.starts_with(SIGNING_DOMAIN));
        prop_assert_eq!(payload.len() - SIGNING_DOMAIN.len(), bytes.len() - record.header.signature.len());
    }

    #[test]
    fn any_bytes_decode_or_are_refused(
        bytes in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..96),
            // A known version and kind up front, so the decoder gets past its first checks.
            (1u8..=4, 1u8..=8, proptest::collection::vec(any::<u8>(), 0..96))
                .prop_map(|(version, kind, rest)| [vec![version, kind], rest].concat()),
        ],
    ) {
        decode_checked(&bytes)?;
    }

    #[test]
    fn every_cut_of_an_encoding_is_a_truncation((bytes, cut) in encoding_and_index()) {
        let got = Record::decode(&bytes[..cut]);
        prop_assert!(matches!(got, Err(WireError::Truncated { .. })), "{got:?}");
    }

    #[test]
    fn a_changed_byte_decodes_to_what_it_spells_or_is_refused(
        (bytes, at) in encoding_and_index(),
        to in any::<u8>(),
    ) {
        let mut changed = bytes.clone();
        changed[at] = to;
        decode_checked(&changed)?;
    }

    #[test]
    fn an_inserted_or_removed_byte_never_panics(
        (bytes, at) in encoding_and_index(),
        byte in any::<u8>(),
    ) {
        let mut longer = bytes.clone();
        longer.insert(at, byte);
        decode_checked(&longer)?;
        let mut shorter = bytes;
        shorter.remove(at);
        decode_checked(&shorter)?;
    }
}
