//! Regenerates `fixtures/signed_records.json`: signed-record vectors from fixed-seed keys.
//!
//! Run `cargo run -p agentlog --example regen_signed_records` after an intentional change to
//! the record format or the signing payload, review the diff, and commit it with the change.
//! The wire runner (`wire/tests/fixtures.rs`) checks each vector's encoding and signing
//! payload; the sdk runner (`agentlog::security::records` tests) checks each verdict.
//! ed25519 signatures are deterministic, so the file is the same on every run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use agentlog::security::{RecordSigner, SigningKey};
use agentlog_wire::{Record, RecordBody, RecordHeader, TaskState};
use serde_json::{Value, json};

const BRIDGE_SEED: [u8; 32] = [0x11; 32];
const WORKER_SEED: [u8; 32] = [0x22; 32];
const RETIRED_SEED: [u8; 32] = [0x33; 32];
const STRANGER_SEED: [u8; 32] = [0x44; 32];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn header(message_id: &str, source: &str, path: &[&str]) -> RecordHeader {
    RecordHeader {
        task_id: "task-1".into(),
        context_id: "ctx-1".into(),
        message_id: message_id.into(),
        source: source.into(),
        principal: "alice".into(),
        tenant: String::new(),
        hops: u8::try_from(path.len()).unwrap(),
        attempt: 0,
        deadline_ms: 0,
        timestamp_ms: 1_700_000_000_000,
        content_type: "application/json".into(),
        key_id: String::new(),
        bridge_hops: path.iter().map(|s| (*s).to_owned()).collect(),
        signature: Vec::new(),
    }
}

fn command() -> Record {
    Record {
        header: header("m-1", "bridge-1", &["agent-a", "agent-b"]),
        body: RecordBody::Command {
            params: r#"{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"agentlog.hops":["agent-a"]}}}"#.into(),
            retention_ms: 604_800_000,
        },
    }
}

fn terminal() -> Record {
    Record {
        header: RecordHeader {
            attempt: 1,
            ..header("t-1", "worker-1", &[])
        },
        body: RecordBody::status(TaskState::Completed, String::new()),
    }
}

fn signed(seed: [u8; 32], mut record: Record) -> Record {
    RecordSigner::new(SigningKey::from_seed(seed))
        .sign(&mut record)
        .unwrap();
    record
}

fn case(description: &str, record: &Record, verdict: &str) -> Value {
    let bytes = record.encode().unwrap();
    json!({
        "description": description,
        "input": {"hex": hex(&bytes)},
        "expected": {
            "record": record,
            "signingPayloadHex": hex(&record.signing_payload().unwrap()),
            "verdict": verdict,
        },
    })
}

fn key_json(seed: [u8; 32]) -> Value {
    let key = SigningKey::from_seed(seed);
    json!({"seedHex": hex(&seed), "kid": key.kid(), "jwk": key.verifying_key().to_jwk()})
}

fn main() {
    let bridge = SigningKey::from_seed(BRIDGE_SEED);
    let stranger = SigningKey::from_seed(STRANGER_SEED);
    let mut cases = Vec::new();
    cases.push(case(
        "valid: a command signed by the bridge key, with a bridge path of two",
        &signed(BRIDGE_SEED, command()),
        "valid",
    ));
    cases.push(case(
        "valid: a terminal signed by the worker key",
        &signed(WORKER_SEED, terminal()),
        "valid",
    ));
    let mut tampered = signed(BRIDGE_SEED, command());
    tampered.header.principal = "mallory".into();
    cases.push(case(
        "tampered header: the principal changed after signing",
        &tampered,
        "bad_signature",
    ));
    let mut tampered = signed(BRIDGE_SEED, command());
    tampered.header.bridge_hops.remove(0);
    tampered.header.hops = 1;
    cases.push(case(
        "tampered header: the bridge path cut after signing",
        &tampered,
        "bad_signature",
    ));
    let mut tampered = signed(BRIDGE_SEED, command());
    if let RecordBody::Command { params, .. } = &mut tampered.body {
        *params = params.replace("hi", "rm -rf /");
    }
    cases.push(case(
        "tampered body: the params changed after signing",
        &tampered,
        "bad_signature",
    ));
    let mut wrong = signed(STRANGER_SEED, command());
    wrong.header.key_id = bridge.kid().to_owned();
    // The stranger signed a payload naming its own key id: sign again naming the bridge's.
    wrong.header.signature.clear();
    wrong.header.signature = stranger.sign(&wrong.signing_payload().unwrap()).to_vec();
    cases.push(case(
        "wrong key: signed by another key under the bridge key's id",
        &wrong,
        "bad_signature",
    ));
    cases.push(case(
        "unknown key id: signed by a key the trust does not list",
        &signed(STRANGER_SEED, command()),
        "unknown_key",
    ));
    cases.push(case(
        "a valid signature on a kind the key may not write: a terminal signed by the bridge key",
        &signed(BRIDGE_SEED, terminal()),
        "kind_not_allowed",
    ));
    cases.push(case(
        "a valid signature by a retired key",
        &signed(RETIRED_SEED, terminal()),
        "retired_key",
    ));
    cases.push(case("an unsigned terminal", &terminal(), "unsigned"));
    let file = json!({
        "description": "Signed records: format-4 records signed by keys from fixed seeds, their signing payloads, and the verdict of a verifier with `trust` (a trust file, inline JWKs): valid, or the rejection reason.",
        "keys": {
            "bridge": key_json(BRIDGE_SEED),
            "worker": key_json(WORKER_SEED),
            "retired": key_json(RETIRED_SEED),
            "stranger": key_json(STRANGER_SEED),
        },
        "trust": {"keys": [
            {"role": "bridge", "jwk": bridge.verifying_key().to_jwk()},
            {"role": "worker", "jwk": SigningKey::from_seed(WORKER_SEED).verifying_key().to_jwk()},
            {"role": "worker", "jwk": SigningKey::from_seed(RETIRED_SEED).verifying_key().to_jwk(), "retired": true},
        ]},
        "cases": cases,
    });
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/signed_records.json");
    std::fs::write(&path, serde_json::to_string_pretty(&file).unwrap() + "\n").unwrap();
    println!("wrote signed_records.json: {} cases", cases.len());
}
