//! Unit tests of the record encoding.

#![allow(clippy::unwrap_used)]

use super::codec::FIXED_HEADER_LEN;
use super::*;
use crate::WireError;
use strum::IntoEnumIterator;

fn header() -> RecordHeader {
    RecordHeader {
        task_id: "t-1".into(),
        context_id: "c-1".into(),
        message_id: "m-1".into(),
        source: "bridge-a".into(),
        principal: "alice".into(),
        tenant: "acme".into(),
        hops: 1,
        attempt: 3,
        deadline_ms: 0,
        timestamp_ms: 1_700_000_000_000,
        content_type: "application/json".into(),
        key_id: "kid-bridge-a".into(),
        bridge_hops: vec!["a".into(), "bridge-a".into()],
        signature: vec![0xab; SIGNATURE_LEN],
    }
}

/// A header as formats 1 to 3 have it: no key id, path or signature.
fn old_header() -> RecordHeader {
    RecordHeader {
        key_id: String::new(),
        bridge_hops: Vec::new(),
        signature: Vec::new(),
        ..header()
    }
}

fn every_body() -> Vec<RecordBody> {
    vec![
        RecordBody::Command {
            params: r#"{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#
                .into(),
            retention_ms: 604_800_000,
        },
        RecordBody::Continue {
            params: r#"{ "message" : {"messageId":"m-2"} }"#.into(),
        },
        RecordBody::CancelRequest {
            metadata: String::new(),
        },
        RecordBody::StatusUpdate {
            state: StateCode(2),
            message: String::new(),
        },
        RecordBody::ArtifactUpdate {
            append: true,
            last_chunk: false,
            artifact: r#"{"artifactId":"a","parts":[{"text":"x"}]}"#.into(),
        },
        RecordBody::Terminal {
            state: StateCode(3),
            message: String::new(),
        },
        RecordBody::Claim {
            turn: "m-1".into(),
            lease_until_ms: 1_700_000_010_000,
        },
        RecordBody::Reply {
            message: r#"{"messageId":"r-1","role":"ROLE_AGENT","parts":[{"text":"hi"}]}"#.into(),
        },
        RecordBody::PushConfig {
            config: r#"{"id":"p-1","taskId":"t-1","url":"https://h/cb","token":"k"}"#.into(),
        },
        RecordBody::PushConfigDeleted {
            config_id: "p-1".into(),
        },
        RecordBody::PushDeadLetter {
            config_id: "p-1".into(),
            update: 1234,
            attempts: 8,
            reason: "HTTP 500".into(),
        },
        RecordBody::PushProgress {
            config_id: "p-1".into(),
            next: 1234,
        },
    ]
}

/// Replies and the push kinds came with format 4: in an older format the kind is unknown.
/// True when it was one.
fn reply_is_unknown_in(old: &[u8], record: &Record) -> bool {
    let kind = record.body.kind();
    if kind.code() < RecordKind::Reply.code() {
        return false;
    }
    assert_eq!(
        Record::decode(old),
        Err(WireError::UnknownKind(kind.code()))
    );
    true
}

#[test]
fn a_status_body_is_terminal_exactly_for_terminal_states() {
    use strum::IntoEnumIterator;
    for state in TaskState::iter() {
        let body = RecordBody::status(state, String::new());
        let expected = if state.is_terminal() {
            RecordKind::Terminal
        } else {
            RecordKind::StatusUpdate
        };
        assert_eq!(body.kind(), expected, "{state:?}");
    }
}

#[test]
fn pins_every_kind_code() {
    let pinned = [
        (RecordKind::Command, 1),
        (RecordKind::Continue, 2),
        (RecordKind::CancelRequest, 3),
        (RecordKind::StatusUpdate, 4),
        (RecordKind::ArtifactUpdate, 5),
        (RecordKind::Terminal, 6),
        (RecordKind::Claim, 7),
        (RecordKind::Reply, 8),
        (RecordKind::PushConfig, 9),
        (RecordKind::PushConfigDeleted, 10),
        (RecordKind::PushDeadLetter, 11),
        (RecordKind::PushProgress, 12),
    ];
    assert_eq!(pinned.len(), RecordKind::iter().count());
    for (kind, code) in pinned {
        assert_eq!(kind.code(), code);
        assert_eq!(RecordKind::from_code(code), Some(kind));
    }
    for code in (0..=u8::MAX).filter(|c| !(1..=12).contains(c)) {
        assert_eq!(RecordKind::from_code(code), None);
    }
}

#[test]
fn every_kind_round_trips_byte_identical() {
    for body in every_body() {
        let record = Record {
            header: header(),
            body,
        };
        let bytes = record.encode().unwrap();
        let decoded = Record::decode(&bytes).unwrap();
        assert_eq!(decoded, record);
        assert_eq!(decoded.encode().unwrap(), bytes);
    }
}

#[test]
fn every_truncation_is_rejected() {
    for body in every_body() {
        let bytes = Record {
            header: header(),
            body,
        }
        .encode()
        .unwrap();
        for len in 0..bytes.len() {
            let err = Record::decode(&bytes[..len]).unwrap_err();
            assert!(
                matches!(err, WireError::Truncated { .. }),
                "len {len}: {err}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            Record::decode(&longer),
            Err(WireError::TrailingBytes { count: 1 })
        );
    }
}

#[test]
fn unknown_version_kind_and_flags_are_rejected() {
    let bytes = Record {
        header: header(),
        body: every_body().remove(4),
    }
    .encode()
    .unwrap();
    let mut v5 = bytes.clone();
    v5[0] = 5;
    assert_eq!(Record::decode(&v5), Err(WireError::UnknownVersion(5)));
    assert_eq!(RECORD_FORMAT_VERSION, 4);
    let mut kind = bytes.clone();
    kind[1] = 0;
    assert_eq!(Record::decode(&kind), Err(WireError::UnknownKind(0)));
    let flags_at = bytes.len()
        - 1
        - SIGNATURE_LEN
        - 4
        - r#"{"artifactId":"a","parts":[{"text":"x"}]}"#.len()
        - 1;
    let mut flags = bytes.clone();
    flags[flags_at] = 0b100;
    assert_eq!(Record::decode(&flags).unwrap_err().kind(), "invalid_field");
}

#[test]
fn unknown_state_codes_survive_a_round_trip() {
    let record = Record {
        header: header(),
        body: RecordBody::StatusUpdate {
            state: StateCode(200),
            message: String::new(),
        },
    };
    let bytes = record.encode().unwrap();
    assert_eq!(Record::decode(&bytes).unwrap().encode().unwrap(), bytes);
}

/// Where a record's key id starts: after the fixed fields and the seven header strings.
fn key_id_at(h: &RecordHeader) -> usize {
    FIXED_HEADER_LEN
        + [
            &h.task_id,
            &h.context_id,
            &h.message_id,
            &h.source,
            &h.principal,
            &h.tenant,
            &h.content_type,
        ]
        .iter()
        .map(|s| 2 + s.len())
        .sum::<usize>()
}

/// The same record (unsigned, no path) in format version 3: no key id, path or signature.
fn v3_bytes(record: &Record) -> Vec<u8> {
    assert!(record.header.key_id.is_empty() && record.header.bridge_hops.is_empty());
    let mut bytes = record.encode().unwrap();
    bytes[0] = FORMAT_V3;
    let at = key_id_at(&record.header);
    assert_eq!(&bytes[at..at + 3], &[0, 0, 0]);
    bytes.drain(at..at + 3);
    assert_eq!(bytes.pop(), Some(0));
    bytes
}

#[test]
fn format_3_records_read_as_unsigned_with_no_path() {
    for body in every_body() {
        let record = Record {
            header: old_header(),
            body,
        };
        let v3 = v3_bytes(&record);
        if reply_is_unknown_in(&v3, &record) {
            continue;
        }
        assert_eq!(Record::decode(&v3).unwrap(), record);
        assert_eq!(
            Record::decode(&v3).unwrap().encode().unwrap(),
            record.encode().unwrap()
        );
        for len in 0..v3.len() {
            assert!(Record::decode(&v3[..len]).is_err(), "len {len}");
        }
    }
}

/// The same record in format version 2: no retention in a command.
fn v2_bytes(record: &Record) -> Vec<u8> {
    let mut bytes = v3_bytes(record);
    bytes[0] = FORMAT_V2;
    if let RecordBody::Command { params, .. } = &record.body {
        let at = bytes.len() - params.len() - 4 - 8;
        bytes.drain(at..at + 8);
    }
    bytes
}

#[test]
fn format_2_commands_read_as_kept_forever() {
    for body in every_body() {
        let mut record = Record {
            header: old_header(),
            body,
        };
        let v2 = v2_bytes(&record);
        if reply_is_unknown_in(&v2, &record) {
            continue;
        }
        if let RecordBody::Command { retention_ms, .. } = &mut record.body {
            *retention_ms = 0;
        }
        assert_eq!(Record::decode(&v2).unwrap(), record);
        for len in 0..v2.len() {
            assert!(Record::decode(&v2[..len]).is_err(), "len {len}");
        }
    }
}

/// The same record in format version 1: no attempt field (and no retention).
fn v1_bytes(record: &Record) -> Vec<u8> {
    let v2 = v2_bytes(record);
    let mut v1 = Vec::with_capacity(v2.len() - 4);
    v1.push(FORMAT_V1);
    v1.extend_from_slice(&v2[1..FIXED_HEADER_LEN - 4]);
    v1.extend_from_slice(&v2[FIXED_HEADER_LEN..]);
    v1
}

#[test]
fn format_1_records_read_as_attempt_0_and_claims_did_not_exist_then() {
    for body in every_body() {
        let mut record = Record {
            header: old_header(),
            body,
        };
        record.header.attempt = 0;
        let v1 = v1_bytes(&record);
        if let RecordBody::Command { retention_ms, .. } = &mut record.body {
            *retention_ms = 0;
        }
        if record.body.kind() == RecordKind::Claim {
            assert_eq!(Record::decode(&v1), Err(WireError::UnknownKind(7)));
            continue;
        }
        if reply_is_unknown_in(&v1, &record) {
            continue;
        }
        assert_eq!(Record::decode(&v1).unwrap(), record);
        for len in 0..v1.len() {
            assert!(Record::decode(&v1[..len]).is_err(), "len {len}");
        }
    }
}

#[test]
fn signing_payload_covers_everything_but_the_signature() {
    let record = Record {
        header: header(),
        body: every_body().remove(0),
    };
    let signed = record.signing_payload().unwrap();
    assert!(signed.starts_with(SIGNING_DOMAIN));
    // The encoding without the signature: its length byte 0, its bytes gone.
    let mut unsigned = record.clone();
    unsigned.header.signature.clear();
    let mut expected = SIGNING_DOMAIN.to_vec();
    expected.extend_from_slice(&unsigned.encode().unwrap());
    assert_eq!(signed, expected);
    // Another signature: the same payload.
    let mut other = record.clone();
    other.header.signature = vec![0x11; SIGNATURE_LEN];
    assert_eq!(other.signing_payload().unwrap(), signed);
    // Any other field changed: another payload.
    let changes: Vec<fn(&mut Record)> = vec![
        |r| r.header.hops += 1,
        |r| r.header.attempt += 1,
        |r| r.header.principal = "mallory".into(),
        |r| r.header.key_id = "kid-other".into(),
        |r| r.header.bridge_hops.push("c".into()),
        |r| r.header.bridge_hops[0] = "x".into(),
        |r| r.header.timestamp_ms += 1,
        |r| r.header.deadline_ms += 1,
        |r| r.header.source.push('x'),
        |r| {
            if let RecordBody::Command { retention_ms, .. } = &mut r.body {
                *retention_ms += 1;
            }
        },
        |r| {
            if let RecordBody::Command { params, .. } = &mut r.body {
                params.push(' ');
            }
        },
    ];
    for (i, change) in changes.into_iter().enumerate() {
        let mut changed = record.clone();
        change(&mut changed);
        assert_ne!(changed.signing_payload().unwrap(), signed, "change {i}");
    }
}

#[test]
fn key_id_path_and_signature_are_encoded_where_the_table_says() {
    let record = Record {
        header: header(),
        body: RecordBody::CancelRequest {
            metadata: String::new(),
        },
    };
    let bytes = record.encode().unwrap();
    let at = key_id_at(&record.header);
    let mut expected = Vec::new();
    expected.extend_from_slice(&12u16.to_le_bytes());
    expected.extend_from_slice(b"kid-bridge-a");
    expected.push(2);
    expected.extend_from_slice(&1u16.to_le_bytes());
    expected.extend_from_slice(b"a");
    expected.extend_from_slice(&8u16.to_le_bytes());
    expected.extend_from_slice(b"bridge-a");
    expected.extend_from_slice(&0u32.to_le_bytes()); // the empty metadata
    expected.push(64);
    expected.extend_from_slice(&[0xab; SIGNATURE_LEN]);
    assert_eq!(&bytes[at..], &expected[..]);
    assert!(record.is_signed());
    let mut unsigned = record.clone();
    unsigned.header.signature.clear();
    assert!(!unsigned.is_signed());
    assert_eq!(
        Record::decode(&unsigned.encode().unwrap()).unwrap(),
        unsigned
    );
}

#[test]
fn a_signature_is_empty_or_64_bytes() {
    let mut record = Record {
        header: header(),
        body: every_body().remove(2),
    };
    record.header.signature = vec![1; 63];
    assert_eq!(record.encode().unwrap_err().kind(), "invalid_field");
    record.header.signature = vec![1; SIGNATURE_LEN];
    let mut bytes = record.encode().unwrap();
    let len_at = bytes.len() - 1 - SIGNATURE_LEN;
    bytes[len_at] = 32;
    bytes.truncate(len_at + 1 + 32);
    assert_eq!(Record::decode(&bytes).unwrap_err().kind(), "invalid_field");
}

#[test]
fn a_path_holds_at_most_255_bridges() {
    let mut record = Record {
        header: header(),
        body: every_body().remove(2),
    };
    record.header.bridge_hops = (0..MAX_BRIDGE_PATH).map(|i| i.to_string()).collect();
    let bytes = record.encode().unwrap();
    assert_eq!(Record::decode(&bytes).unwrap(), record);
    record.header.bridge_hops.push("one too many".into());
    assert_eq!(record.encode().unwrap_err().kind(), "field_too_long");
}

#[test]
fn json_form_leaves_out_an_empty_key_id_path_and_signature() {
    let record = Record {
        header: old_header(),
        body: every_body().remove(2),
    };
    let json = serde_json::to_value(&record).unwrap();
    for field in ["keyId", "bridgeHops", "signature"] {
        assert!(json.get(field).is_none(), "{field}");
    }
    let signed = Record {
        header: header(),
        body: every_body().remove(2),
    };
    let json = serde_json::to_value(&signed).unwrap();
    assert_eq!(json["keyId"], "kid-bridge-a");
    assert_eq!(json["bridgeHops"], serde_json::json!(["a", "bridge-a"]));
    assert_eq!(json["signature"].as_str().unwrap().len(), 88);
    assert_eq!(serde_json::from_value::<Record>(json).unwrap(), signed);
}

#[test]
fn empty_task_id_is_rejected_both_ways() {
    let mut record = Record {
        header: header(),
        body: every_body().remove(3),
    };
    record.header.task_id.clear();
    assert_eq!(record.encode().unwrap_err().kind(), "invalid_field");
}

#[test]
fn peek_reads_the_kind_and_task_id_that_decode_reads() {
    for body in every_body() {
        let record = Record {
            header: header(),
            body,
        };
        let bytes = record.encode().unwrap();
        assert_eq!(
            Record::peek(&bytes),
            Some((record.body.kind(), "t-1")),
            "{:?}",
            record.body.kind()
        );
        // A cut record: its kind and task id while they are whole, then nothing.
        let whole = FIXED_HEADER_LEN + 2 + "t-1".len();
        for len in 0..bytes.len() {
            assert_eq!(
                Record::peek(&bytes[..len]).is_some(),
                len >= whole,
                "len {len}"
            );
        }
        let mut old = Record {
            header: old_header(),
            body: record.body.clone(),
        };
        old.header.attempt = 0;
        let v1 = v1_bytes(&old);
        let decoded = Record::decode(&v1).ok();
        assert_eq!(
            Record::peek(&v1),
            decoded
                .as_ref()
                .map(|r| (r.body.kind(), r.header.task_id.as_str()))
        );
    }
    let mut unknown = Record {
        header: header(),
        body: every_body().remove(0),
    }
    .encode()
    .unwrap();
    unknown[0] = 99;
    assert_eq!(Record::peek(&unknown), None);
}
