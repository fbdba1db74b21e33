#![allow(clippy::unwrap_used)]

use agentlog_wire::{Record, RecordBody, RecordHeader, RecordKind, TaskState};

use super::*;

fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed([seed; 32])
}

fn record(body: RecordBody) -> Record {
    Record {
        header: RecordHeader {
            task_id: "t-1".into(),
            context_id: "c-1".into(),
            message_id: "m-1".into(),
            source: "bridge-1".into(),
            timestamp_ms: 1_700_000_000_000,
            content_type: "application/json".into(),
            bridge_hops: vec!["a".into()],
            hops: 1,
            ..RecordHeader::default()
        },
        body,
    }
}

fn command() -> Record {
    record(RecordBody::Command {
        params: r#"{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#
            .into(),
        retention_ms: 0,
    })
}

fn terminal() -> Record {
    record(RecordBody::status(TaskState::Completed, String::new()))
}

fn trust() -> Trust {
    Trust::new()
        .with_role(key(1).verifying_key(), Role::Bridge)
        .with_role(key(2).verifying_key(), Role::Worker)
}

fn signed(seed: u8, mut record: Record) -> Record {
    RecordSigner::new(key(seed)).sign(&mut record).unwrap();
    record
}

#[test]
fn a_signed_record_of_an_allowed_kind_passes_and_survives_encoding() {
    let trust = trust();
    let command = signed(1, command());
    assert_eq!(command.header.key_id, key(1).kid());
    assert_eq!(trust.check(&command), Ok(()));
    let decoded = Record::decode(&command.encode().unwrap()).unwrap();
    assert_eq!(trust.check(&decoded), Ok(()));
    assert_eq!(trust.check(&signed(2, terminal())), Ok(()));
    let bytes = RecordSigner::new(key(2)).encode(&terminal()).unwrap();
    assert_eq!(trust.check(&Record::decode(&bytes).unwrap()), Ok(()));
}

#[test]
fn every_rejection_reason() {
    let trust = trust()
        .with_role(key(3).verifying_key(), Role::Worker)
        .retire(key(3).kid());
    assert_eq!(trust.check(&command()), Err(Rejection::Unsigned));
    let mut no_signature = signed(1, command());
    no_signature.header.signature.clear();
    assert_eq!(trust.check(&no_signature), Err(Rejection::Unsigned));
    assert_eq!(
        trust.check(&signed(9, command())),
        Err(Rejection::UnknownKey)
    );
    assert_eq!(
        trust.check(&signed(3, terminal())),
        Err(Rejection::RetiredKey)
    );
    // A bridge's key on a terminal, a worker's on a command: valid signatures, wrong kinds.
    assert_eq!(
        trust.check(&signed(1, terminal())),
        Err(Rejection::KindNotAllowed)
    );
    assert_eq!(
        trust.check(&signed(2, command())),
        Err(Rejection::KindNotAllowed)
    );
    let mut tampered = signed(1, command());
    tampered.header.principal = "mallory".into();
    assert_eq!(trust.check(&tampered), Err(Rejection::BadSignature));
    let mut tampered = signed(1, command());
    tampered.header.bridge_hops.clear();
    assert_eq!(trust.check(&tampered), Err(Rejection::BadSignature));
    let mut tampered = signed(1, command());
    if let RecordBody::Command { params, .. } = &mut tampered.body {
        params.push(' ');
    }
    assert_eq!(trust.check(&tampered), Err(Rejection::BadSignature));
    // Another key's signature under the trusted key's id.
    let mut wrong = signed(9, command());
    wrong.header.key_id = key(1).kid().to_owned();
    assert_eq!(trust.check(&wrong), Err(Rejection::BadSignature));
}

#[test]
fn a_verifier_counts_rejections_by_reason() {
    let verifier = RecordVerifier::new(trust());
    assert!(verifier.admit(&signed(1, command()), &"agent.events", 0, 1));
    assert!(!verifier.admit(&command(), &"agent.events", 0, 2));
    assert!(!verifier.admit(&signed(1, terminal()), &"agent.events", 0, 3));
    assert!(!verifier.admit(&signed(1, terminal()), &"agent.events", 0, 4));
    let counts = verifier.clone().rejected();
    assert_eq!(counts[0], (Rejection::Unsigned, 1));
    assert_eq!(counts[3], (Rejection::KindNotAllowed, 2));
    assert_eq!(verifier.rejected_total(), 3);
    // check() counts nothing.
    assert!(verifier.check(&command()).is_err());
    assert_eq!(verifier.rejected_total(), 3);
}

#[test]
fn pins_the_reason_names_and_kind_names() {
    let names: Vec<_> = Rejection::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        names,
        [
            "unsigned",
            "unknown_key",
            "retired_key",
            "kind_not_allowed",
            "bad_signature"
        ]
    );
    for kind in KINDS {
        assert_eq!(kind_named(kind_name(kind)), Some(kind));
    }
    assert_eq!(kind_name(RecordKind::CancelRequest), "cancel_request");
    let all: Vec<_> = Role::Bridge
        .kinds()
        .iter()
        .chain(Role::Worker.kinds())
        .copied()
        .collect();
    assert_eq!(all.len(), KINDS.len());
}

#[test]
fn a_trust_file_names_keys_by_file_text_or_jwk() {
    let dir = tempfile::tempdir().unwrap();
    let bridge_pub = key(1).write_pair(&dir.path().join("bridge.pem")).unwrap();
    let worker_pem = key(2).verifying_key().to_pem().unwrap();
    let old_jwk = key(3).verifying_key().to_jwk();
    let text = serde_json::json!({"keys": [
        {"role": "bridge", "publicKeyFile": bridge_pub.file_name().unwrap().to_str().unwrap()},
        {"role": "worker", "publicKey": worker_pem},
        {"kinds": ["terminal", "status_update"], "jwk": old_jwk, "retired": true},
        {"kid": "custom", "kinds": ["claim"], "jwk": key(4).verifying_key().to_jwk()},
    ]})
    .to_string();
    let path = dir.path().join("trust.json");
    std::fs::write(&path, text).unwrap();
    let trust = Trust::load(&path).unwrap();
    assert_eq!(trust.len(), 4);
    assert_eq!(trust.check(&signed(1, command())), Ok(()));
    assert_eq!(trust.check(&signed(2, terminal())), Ok(()));
    assert_eq!(
        trust.check(&signed(3, terminal())),
        Err(Rejection::RetiredKey)
    );
    let claim = record(RecordBody::Claim {
        turn: "m-1".into(),
        lease_until_ms: 1,
    });
    let mut custom = claim.clone();
    RecordSigner::new(key(4).with_kid("custom"))
        .sign(&mut custom)
        .unwrap();
    assert_eq!(trust.check(&custom), Ok(()));
    // Under its thumbprint the key is unknown: the file named it "custom".
    assert_eq!(trust.check(&signed(4, claim)), Err(Rejection::UnknownKey));
}

#[test]
fn a_bad_trust_file_is_a_config_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let pem = key(1).verifying_key().to_pem().unwrap();
    let json = |v: serde_json::Value| v.to_string();
    let cases = [
        "not json".to_owned(),
        r#"{"keys": [{"role": "bridge"}]}"#.to_owned(),
        json(serde_json::json!({"keys": [{"role": "bridge", "publicKey": pem, "jwk": {}}]})),
        json(serde_json::json!({"keys": [{"role": "admin", "publicKey": pem}]})),
        json(serde_json::json!({"keys": [{"kinds": ["terminals"], "publicKey": pem}]})),
        json(serde_json::json!({"keys": [{"role": "bridge", "kinds": [], "publicKey": pem}]})),
        json(
            serde_json::json!({"keys": [{"role": "bridge", "publicKey": pem}, {"role": "worker", "publicKey": pem}]}),
        ),
        r#"{"keys": [{"role": "bridge", "publicKeyFile": "missing.pub"}]}"#.to_owned(),
        r#"{"keys": [], "extra": 1}"#.to_owned(),
        json(serde_json::json!({"keys": [{"role": "bridge", "publicKey": "not a key"}]})),
    ];
    for text in cases {
        let path = dir.path().join("trust.json");
        std::fs::write(&path, &text).unwrap();
        let error = Trust::load(&path).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config, "{text}");
        assert!(
            error.message().contains("trust.json"),
            "{}",
            error.message()
        );
    }
    let missing = Trust::load(&dir.path().join("nope.json")).unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::Config);
    assert!(
        Trust::parse(r#"{"keys": []}"#, dir.path())
            .unwrap()
            .is_empty()
    );
}

/// The signed-record vectors every binding checks: each verdict holds.
#[test]
fn every_signed_record_fixture_gets_its_verdict() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/signed_records.json");
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let trust = Trust::parse(&file["trust"].to_string(), std::path::Path::new(".")).unwrap();
    for name in ["bridge", "worker", "retired", "stranger"] {
        let key = &file["keys"][name];
        let seed: Vec<u8> = (0..32)
            .map(|i| {
                u8::from_str_radix(&key["seedHex"].as_str().unwrap()[2 * i..2 * i + 2], 16).unwrap()
            })
            .collect();
        let signing = SigningKey::from_seed(seed.try_into().unwrap());
        assert_eq!(signing.kid(), key["kid"], "{name}");
    }
    let cases = file["cases"].as_array().unwrap();
    assert!(cases.len() >= 6);
    let mut verdicts = std::collections::HashSet::new();
    for case in cases {
        let description = case["description"].as_str().unwrap();
        let text = case["input"]["hex"].as_str().unwrap();
        let bytes: Vec<u8> = (0..text.len() / 2)
            .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let record = Record::decode(&bytes).unwrap();
        let verdict = match trust.check(&record) {
            Ok(()) => "valid",
            Err(reason) => reason.as_str(),
        };
        assert_eq!(verdict, case["expected"]["verdict"], "{description}");
        verdicts.insert(verdict);
    }
    // Every reason and the valid case are covered.
    assert_eq!(verdicts.len(), Rejection::ALL.len() + 1);
}

#[test]
fn admitted_bytes_and_own_records_skip_the_signature_check_with_the_same_verdict() {
    let verifier = RecordVerifier::new(trust());
    let bridge = RecordSigner::new(key(1));
    let bytes = bridge.encode(&command()).unwrap();
    let record = Record::decode(&bytes).unwrap();
    assert!(verifier.admit_encoded(&bytes, &record, &"t", 0, 0));
    assert!(verifier.admitted().set.contains(&digest(&bytes)));
    // A tampered copy is other bytes: checked, and turned away.
    let mut tampered = record.clone();
    tampered.header.principal = "mallory".into();
    let tampered_bytes = tampered.encode().unwrap();
    assert!(!verifier.admit_encoded(&tampered_bytes, &tampered, &"t", 0, 1));
    assert_eq!(verifier.rejected()[4], (Rejection::BadSignature, 1));
    assert!(!verifier.admitted().set.contains(&digest(&tampered_bytes)));
    // Rejected bytes are not remembered: counted again.
    assert!(!verifier.admit_encoded(&tampered_bytes, &tampered, &"t", 0, 2));
    assert_eq!(verifier.rejected_total(), 2);
    // Own records: remembered only where the trust allows the signer's key the kind.
    let terminal_bytes = bridge.encode(&terminal()).unwrap();
    verifier.remember_own(&terminal_bytes, RecordKind::Terminal, &bridge);
    assert!(!verifier.admitted().set.contains(&digest(&terminal_bytes)));
    let worker = RecordSigner::new(key(2));
    let own = worker.encode(&terminal()).unwrap();
    verifier.remember_own(&own, RecordKind::Terminal, &worker);
    assert!(verifier.admitted().set.contains(&digest(&own)));
    let stranger = RecordSigner::new(key(9));
    let theirs = stranger.encode(&terminal()).unwrap();
    verifier.remember_own(&theirs, RecordKind::Terminal, &stranger);
    assert!(!verifier.admitted().set.contains(&digest(&theirs)));
    // A key id the trust maps to another key: not remembered.
    let impostor = RecordSigner::new(key(9).with_kid(key(2).kid()));
    let forged = impostor.encode(&terminal()).unwrap();
    verifier.remember_own(&forged, RecordKind::Terminal, &impostor);
    assert!(!verifier.admitted().set.contains(&digest(&forged)));
}

#[test]
fn the_memory_of_admitted_bytes_is_bounded() {
    let mut admitted = Admitted::default();
    for i in 0..ADMITTED_MEMORY + 10 {
        admitted.insert(digest(&i.to_le_bytes()));
    }
    assert_eq!(admitted.set.len(), ADMITTED_MEMORY);
    assert_eq!(admitted.order.len(), ADMITTED_MEMORY);
    assert!(!admitted.set.contains(&digest(&0usize.to_le_bytes())));
}
