//! Regenerates the computed parts of `fixtures/*.json` from the hand-written inputs below.
//!
//! Run `cargo run -p agentlog-wire --example regen_fixtures` after an intentional contract
//! change, review the diff, and commit it with the change. `wire/tests/fixtures.rs` checks
//! every vector on each test run, so an unintended change fails there.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod claims;
mod expiry;
mod folds;

use std::path::PathBuf;

use agentlog_wire::fold::fold;
use agentlog_wire::jsonrpc::{ProtocolVersion, error_body, parse_request};
use agentlog_wire::{ErrorCode, Record, RecordBody, RecordHeader, RpcError, StateCode, TaskState};
use folds::{hi_command, rec, status};
use serde_json::{Value, json};
use strum::IntoEnumIterator;

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    write(
        &dir,
        "task_states.json",
        "Task state codes, names in both spellings, terminal/interrupted flags, and the legal-transition table.",
        task_states(),
    );
    write(
        &dir,
        "records.json",
        "Record encodings: a record (JSON form) and its bytes (hex), and malformed bytes with the error kind the decoder must report.",
        records(),
    );
    write(
        &dir,
        "jsonrpc.json",
        "JSON-RPC envelopes: request bodies and how they parse, A2A-Version values, and the rendering of every error code in 1.0 and 0.3.",
        jsonrpc(),
    );
    write(
        &dir,
        "fold.json",
        "Fold scenarios: a task's records in log order, the Task they fold to, and what was ignored.",
        folds::folds()
            .into_iter()
            .chain(claims::claims())
            .chain(expiry::expiry())
            .collect(),
    );
    write(
        &dir,
        "v03.json",
        "The 0.3 codec: 0.3 params to the 1.0 model, 1.0 results to 0.3 shapes, and 0.3 input it must reject.",
        v03_cases(),
    );
    write(
        &dir,
        "ids.json",
        "Deterministic ids: task and context ids from (tenant, principal, messageId), worker record ids from (task, turn, attempt, sequence).",
        ids(),
    );
}

fn write(dir: &std::path::Path, name: &str, description: &str, cases: Vec<Value>) {
    let file = json!({"description": description, "cases": cases});
    let text = serde_json::to_string_pretty(&file).unwrap() + "\n";
    std::fs::write(dir.join(name), text).unwrap();
    println!("wrote {name}: {} cases", cases.len());
}

pub(crate) fn ok(description: impl Into<String>, input: Value, expected: Value) -> Value {
    json!({"description": description.into(), "input": input, "expected": expected})
}

fn err(description: impl Into<String>, input: Value, error: Value) -> Value {
    json!({"description": description.into(), "input": input, "error": error})
}

fn task_states() -> Vec<Value> {
    let mut cases = Vec::new();
    for state in TaskState::iter() {
        cases.push(ok(
            format!("code {} is {}", state.code(), state.as_v03_str()),
            json!({"code": state.code()}),
            json!({"v1": state.as_str(), "v03": state.as_v03_str(), "terminal": state.is_terminal(), "interrupted": state.is_interrupted()}),
        ));
    }
    for state in TaskState::iter() {
        for name in [state.as_str(), state.as_v03_str()] {
            cases.push(ok(
                format!("name {name} parses"),
                json!({"name": name}),
                json!({"code": state.code()}),
            ));
        }
    }
    for code in [9u8, 10, 42, 128, 255] {
        cases.push(err(
            format!("code {code} is unknown"),
            json!({"code": code}),
            json!({"kind": "unknown_state_code"}),
        ));
    }
    for name in [
        "",
        "COMPLETED",
        "Completed",
        "task_state_completed",
        "TASK_STATE_DONE",
        "input_required",
        "INPUT-REQUIRED",
        "cancelled",
    ] {
        cases.push(err(
            format!("name {name:?} is unknown"),
            json!({"name": name}),
            json!({"kind": "unknown_state_name"}),
        ));
    }
    for from in TaskState::iter() {
        for to in TaskState::iter() {
            let legal = from.can_transition_to(to);
            cases.push(ok(
                format!(
                    "{} -> {} is {}",
                    from.as_v03_str(),
                    to.as_v03_str(),
                    if legal { "legal" } else { "illegal" }
                ),
                json!({"from": from.as_str(), "to": to.as_str()}),
                json!({"legal": legal}),
            ));
        }
    }
    cases
}

pub(crate) fn header(task: &str, message_id: &str, ms: u64) -> RecordHeader {
    RecordHeader {
        task_id: task.into(),
        context_id: "ctx-1".into(),
        message_id: message_id.into(),
        source: "bridge-1".into(),
        principal: "alice".into(),
        tenant: String::new(),
        hops: 0,
        attempt: 0,
        deadline_ms: 0,
        timestamp_ms: ms,
        content_type: "application/json".into(),
        key_id: String::new(),
        bridge_hops: Vec::new(),
        signature: Vec::new(),
    }
}

pub(crate) const SEND_HI: &str =
    r#"{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;

fn sample_records() -> Vec<(&'static str, Record)> {
    let mut deadline = header("task-1", "m-1", 1_700_000_000_000);
    deadline.deadline_ms = 1_700_000_060_000;
    deadline.hops = 2;
    deadline.tenant = "acme".into();
    vec![
        ("a command carries its params byte-identical and its retention", Record { header: header("task-1", "m-1", 1_700_000_000_000), body: RecordBody::Command { params: SEND_HI.into(), retention_ms: 604_800_000 } }),
        ("a command with deadline, hops and tenant, kept forever (retention 0)", Record { header: deadline, body: RecordBody::Command { params: SEND_HI.into(), retention_ms: 0 } }),
        ("a command whose params keep their whitespace", Record { header: header("task-1", "m-1", 1), body: RecordBody::Command { params: "{ \"message\" : { \"messageId\" : \"m-1\" , \"role\":\"ROLE_USER\", \"parts\":[{\"text\":\"héllo ✓\"}] } }".into(), retention_ms: 60_000 } }),
        ("a continue", Record { header: header("task-1", "m-2", 1_700_000_000_500), body: RecordBody::Continue { params: r#"{"message":{"messageId":"m-2","taskId":"task-1","role":"ROLE_USER","parts":[{"text":"more"}]}}"#.into() } }),
        ("a cancel request without metadata", Record { header: header("task-1", "cancel-1", 1_700_000_001_000), body: RecordBody::CancelRequest { metadata: String::new() } }),
        ("a cancel request with metadata", Record { header: header("task-1", "cancel-2", 1_700_000_001_000), body: RecordBody::CancelRequest { metadata: r#"{"reason":"user"}"#.into() } }),
        ("a working status update", Record { header: header("task-1", "s-1", 1_700_000_000_100), body: RecordBody::StatusUpdate { state: TaskState::Working.into(), message: String::new() } }),
        ("an input-required status with a message", Record { header: header("task-1", "s-2", 1_700_000_000_200), body: RecordBody::StatusUpdate { state: TaskState::InputRequired.into(), message: r#"{"messageId":"s-2","role":"ROLE_AGENT","parts":[{"text":"which city?"}]}"#.into() } }),
        ("a status update with an unknown state code keeps it", Record { header: header("task-1", "s-3", 1_700_000_000_300), body: RecordBody::StatusUpdate { state: StateCode(77), message: String::new() } }),
        ("an artifact chunk to append", Record { header: header("task-1", "a-1", 1_700_000_000_400), body: RecordBody::ArtifactUpdate { append: true, last_chunk: false, artifact: r#"{"artifactId":"out","parts":[{"text":"echo: "}]}"#.into() } }),
        ("a last artifact chunk", Record { header: header("task-1", "a-2", 1_700_000_000_410), body: RecordBody::ArtifactUpdate { append: true, last_chunk: true, artifact: r#"{"artifactId":"out","parts":[{"text":"hi"}]}"#.into() } }),
        ("a replacing artifact", Record { header: header("task-1", "a-3", 1_700_000_000_420), body: RecordBody::ArtifactUpdate { append: false, last_chunk: false, artifact: r#"{"artifactId":"out","name":"echo","parts":[{"text":"echo: hi"}]}"#.into() } }),
        ("a completed terminal", Record { header: header("task-1", "t-1", 1_700_000_000_900), body: RecordBody::Terminal { state: TaskState::Completed.into(), message: String::new() } }),
        ("a failed terminal with a message", Record { header: header("task-1", "t-2", 1_700_000_000_900), body: RecordBody::Terminal { state: TaskState::Failed.into(), message: r#"{"messageId":"t-2","role":"ROLE_AGENT","parts":[{"text":"handler panicked"}]}"#.into() } }),
        ("a record with every header empty but the task id", Record { header: RecordHeader { task_id: "t".into(), ..RecordHeader::default() }, body: RecordBody::CancelRequest { metadata: String::new() } }),
        ("a worker's claim of a turn, attempt 1", Record { header: worker_header("c-1", 1, 1_700_000_000_050), body: RecordBody::Claim { turn: "m-1".into(), lease_until_ms: 1_700_000_010_050 } }),
        ("a claim's renewal, attempt 300", Record { header: worker_header("c-2", 300, 1_700_000_003_050), body: RecordBody::Claim { turn: "m-1".into(), lease_until_ms: 1_700_000_013_050 } }),
        ("an artifact written under attempt 2", Record { header: worker_header("a-9", 2, 1_700_000_000_060), body: RecordBody::ArtifactUpdate { append: false, last_chunk: true, artifact: r#"{"artifactId":"out","parts":[{"text":"done"}]}"#.into() } }),
        ("format 4: a command with a key id, a bridge path of two and a signature (carried as it is; fixtures/signed_records.json has real ones)", Record { header: pathed_header(), body: RecordBody::Command { params: SEND_HI.into(), retention_ms: 604_800_000 } }),
        ("format 4: a worker's terminal with a key id and no signature (decodes; a verifier calls it unsigned)", Record { header: RecordHeader { key_id: "kid-worker".into(), ..worker_header("t-9", 1, 1_700_000_000_070) }, body: RecordBody::Terminal { state: TaskState::Completed.into(), message: String::new() } }),
        ("format 4: a command with a bridge path of one, unsigned", Record { header: RecordHeader { hops: 1, bridge_hops: vec!["agent-a".into()], ..header("task-1", "m-1", 1_700_000_000_000) }, body: RecordBody::Command { params: SEND_HI.into(), retention_ms: 0 } }),
    ]
}

/// A header with every format-4 field set: key id, a path of two bridges, a signature.
fn pathed_header() -> RecordHeader {
    RecordHeader {
        hops: 2,
        key_id: "kid-bridge".into(),
        bridge_hops: vec!["agent-a".into(), "agent-b".into()],
        signature: (0u8..64).collect(),
        ..header("task-1", "m-1", 1_700_000_000_000)
    }
}

/// Whether a sample record can be written in formats 1 to 3 (no format-4 field set).
fn old_format(record: &Record) -> bool {
    let h = &record.header;
    h.key_id.is_empty() && h.bridge_hops.is_empty() && h.signature.is_empty()
}

/// Where a record's key id starts in format 4: after the fixed fields and seven strings.
fn key_id_at(h: &RecordHeader) -> usize {
    23 + [
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

/// A header written by worker `worker-1` under `attempt`.
fn worker_header(message_id: &str, attempt: u32, ms: u64) -> RecordHeader {
    RecordHeader {
        source: "worker-1".into(),
        attempt,
        ..header("task-1", message_id, ms)
    }
}

/// A record's bytes in format version 3 (before signatures and paths): no key id, no path,
/// no signature length.
fn v3_bytes(record: &Record) -> Vec<u8> {
    assert!(old_format(record));
    let mut bytes = record.encode().unwrap();
    bytes[0] = 3;
    let at = key_id_at(&record.header);
    bytes.drain(at..at + 3);
    bytes.pop();
    bytes
}

/// A record's bytes in format version 2 (before retention): no retention in a command.
fn v2_bytes(record: &Record) -> Vec<u8> {
    let mut bytes = v3_bytes(record);
    bytes[0] = 2;
    if let RecordBody::Command { params, .. } = &record.body {
        // The retention sits right before the params' length and text.
        let at = bytes.len() - params.len() - 4 - 8;
        bytes.drain(at..at + 8);
    }
    bytes
}

/// A record's bytes in format version 1 (before claims): no attempt field.
fn v1_bytes(record: &Record) -> Vec<u8> {
    let v2 = v2_bytes(record);
    let mut v1 = vec![1];
    v1.extend_from_slice(&v2[1..19]);
    v1.extend_from_slice(&v2[23..]);
    v1
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn records() -> Vec<Value> {
    let mut cases = Vec::new();
    for (description, record) in sample_records() {
        let bytes = record.encode().unwrap();
        cases.push(ok(
            description,
            json!({"record": record}),
            json!({"hex": hex(&bytes)}),
        ));
    }
    for (description, record) in sample_records().into_iter().filter(|(_, r)| old_format(r)) {
        cases.push(ok(
            format!("format 3 (before signatures and bridge paths): {description}, read unsigned with no path"),
            json!({"hex": hex(&v3_bytes(&record))}),
            json!({"record": record}),
        ));
    }
    for (description, mut record) in sample_records().into_iter().filter(|(_, r)| old_format(r)) {
        if let RecordBody::Command { retention_ms, .. } = &mut record.body {
            *retention_ms = 0;
        }
        cases.push(ok(
            format!("format 2 (before retention): {description}, a command read as kept forever"),
            json!({"hex": hex(&v2_bytes(&record))}),
            json!({"record": record}),
        ));
    }
    for (description, mut record) in sample_records().into_iter().filter(|(_, r)| old_format(r)) {
        if record.body.kind() == agentlog_wire::RecordKind::Claim {
            continue;
        }
        if let RecordBody::Command { retention_ms, .. } = &mut record.body {
            *retention_ms = 0;
        }
        record.header.attempt = 0;
        cases.push(ok(
            format!("format 1 (before claims): {description}, read as attempt 0"),
            json!({"hex": hex(&v1_bytes(&record))}),
            json!({"record": record}),
        ));
    }
    let base = sample_records().remove(0).1.encode().unwrap();
    let decode_err = |description: &str, bytes: Vec<u8>| {
        let kind = Record::decode(&bytes).unwrap_err().kind();
        err(
            description,
            json!({"hex": hex(&bytes)}),
            json!({"kind": kind}),
        )
    };
    cases.push(decode_err("empty input", Vec::new()));
    for cut in [
        1,
        2,
        10,
        18,
        19,
        20,
        22,
        23,
        25,
        base.len() - 5,
        base.len() - 1,
    ] {
        cases.push(decode_err(
            &format!("truncated to {cut} bytes"),
            base[..cut].to_vec(),
        ));
    }
    for version in [0u8, 5, 255] {
        let mut b = base.clone();
        b[0] = version;
        cases.push(decode_err(&format!("format version {version}"), b));
    }
    for kind in [0u8, 8, 200] {
        let mut b = base.clone();
        b[1] = kind;
        cases.push(decode_err(&format!("kind code {kind}"), b));
    }
    let claim = sample_records()
        .into_iter()
        .find(|(_, r)| r.body.kind() == agentlog_wire::RecordKind::Claim)
        .unwrap()
        .1;
    let mut v1_claim = v1_bytes(&claim);
    v1_claim[1] = 7;
    cases.push(decode_err(
        "a claim in format 1 (claims came with format 2)",
        v1_claim,
    ));
    let claim_bytes = claim.encode().unwrap();
    cases.push(decode_err(
        "a command cut inside its retention",
        base[..base.len() - 1 - SEND_HI.len() - 4 - 3].to_vec(),
    ));
    cases.push(decode_err(
        "a claim cut inside its lease",
        claim_bytes[..claim_bytes.len() - 3].to_vec(),
    ));
    let mut trailing = base.clone();
    trailing.push(0);
    cases.push(decode_err("one trailing byte", trailing));
    let mut two = base.clone();
    two.extend_from_slice(&base);
    cases.push(decode_err("two records back to back", two));
    let mut utf8 = base.clone();
    utf8[25] = 0xff; // first byte of the task id
    cases.push(decode_err("task id is not UTF-8", utf8));
    let empty_task = {
        let mut b = Vec::from(&base[..23]);
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&base[23 + 2 + 6..]);
        b
    };
    cases.push(decode_err("empty task id", empty_task));
    let artifact = sample_records().remove(9).1.encode().unwrap();
    let flags_at =
        artifact.len() - 1 - 4 - r#"{"artifactId":"out","parts":[{"text":"echo: "}]}"#.len() - 1;
    let mut flags = artifact.clone();
    flags[flags_at] = 0x04;
    cases.push(decode_err("artifact flags with an unknown bit", flags));
    let mut long = base.clone();
    let params_len_at = base.len() - 1 - SEND_HI.len() - 4;
    long[params_len_at..params_len_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    cases.push(decode_err("params length past the end", long));
    cases.push(decode_err(
        "format 4 cut before the signature length",
        base[..base.len() - 1].to_vec(),
    ));
    let signed = Record {
        header: pathed_header(),
        body: RecordBody::CancelRequest {
            metadata: String::new(),
        },
    }
    .encode()
    .unwrap();
    cases.push(decode_err(
        "format 4 cut inside the signature",
        signed[..signed.len() - 10].to_vec(),
    ));
    let mut short_sig = signed.clone();
    let sig_len_at = signed.len() - 1 - 64;
    short_sig[sig_len_at] = 32;
    short_sig.truncate(sig_len_at + 1 + 32);
    cases.push(decode_err("a signature of 32 bytes (one is 64)", short_sig));
    let mut sig_63 = signed.clone();
    sig_63[sig_len_at] = 63;
    sig_63.pop();
    cases.push(decode_err("a signature of 63 bytes", sig_63));
    let path_at = key_id_at(&pathed_header()) + 2 + "kid-bridge".len();
    let mut path_long = signed.clone();
    path_long[path_at] = 200;
    cases.push(decode_err("a bridge path count past the end", path_long));
    cases
}

fn jsonrpc() -> Vec<Value> {
    let mut cases = Vec::new();
    let bodies: &[(&str, &str)] = &[
        (
            "1.0 SendMessage with a string id",
            r#"{"jsonrpc":"2.0","id":"req-1","method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#,
        ),
        (
            "1.0 GetTask with an integer id",
            r#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"t-1","historyLength":2}}"#,
        ),
        (
            "1.0 ListTasks without params",
            r#"{"jsonrpc":"2.0","id":8,"method":"ListTasks"}"#,
        ),
        (
            "1.0 CancelTask",
            r#"{"jsonrpc":"2.0","id":9,"method":"CancelTask","params":{"id":"t-1"}}"#,
        ),
        (
            "1.0 SendStreamingMessage",
            r#"{"jsonrpc":"2.0","id":10,"method":"SendStreamingMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#,
        ),
        (
            "1.0 SubscribeToTask",
            r#"{"jsonrpc":"2.0","id":11,"method":"SubscribeToTask","params":{"id":"t-1"}}"#,
        ),
        (
            "0.3 message/send",
            r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}"#,
        ),
        (
            "0.3 message/stream",
            r#"{"jsonrpc":"2.0","id":2,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}"#,
        ),
        (
            "0.3 tasks/get",
            r#"{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"t-1"}}"#,
        ),
        (
            "0.3 tasks/cancel",
            r#"{"jsonrpc":"2.0","id":4,"method":"tasks/cancel","params":{"id":"t-1"}}"#,
        ),
        (
            "0.3 tasks/resubscribe",
            r#"{"jsonrpc":"2.0","id":5,"method":"tasks/resubscribe","params":{"id":"t-1"}}"#,
        ),
        (
            "a null id",
            r#"{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{"id":"t"}}"#,
        ),
        (
            "a fractional id keeps its text",
            r#"{"jsonrpc":"2.0","id":1.50,"method":"GetTask","params":{"id":"t"}}"#,
        ),
        (
            "an id beyond 64 bits keeps its digits",
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"GetTask","params":{"id":"t"}}"#,
        ),
        (
            "unknown members are ignored",
            r#"{"jsonrpc":"2.0","id":"x","method":"GetTask","params":{"id":"t"},"extra":true}"#,
        ),
        (
            "whitespace around the body",
            " \n {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{\"id\":\"t\"}} \n",
        ),
    ];
    for (description, body) in bodies {
        let req = parse_request(body.as_bytes()).unwrap();
        let method = req.method().unwrap();
        cases.push(ok(
            *description,
            json!({"body": body}),
            json!({"method": method.as_str(), "operation": format!("{:?}", method.operation()), "version": method.version().to_string(), "id": req.id.get()}),
        ));
    }
    let bad: &[(&str, &str)] = &[
        ("not JSON", "{"),
        ("an empty body", ""),
        ("not UTF-8", "\u{fffd}"),
        (
            "a JSON array (batches are not supported)",
            r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#,
        ),
        ("a JSON string", r#""GetTask""#),
        ("a JSON number", "42"),
        ("jsonrpc missing", r#"{"id":1,"method":"GetTask"}"#),
        (
            "jsonrpc 1.0",
            r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#,
        ),
        (
            "jsonrpc as a number",
            r#"{"jsonrpc":2.0,"id":"a","method":"GetTask"}"#,
        ),
        ("method missing", r#"{"jsonrpc":"2.0","id":1}"#),
        (
            "an object id (JSON-RPC ids are strings, numbers or null)",
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask","params":{"id":"t"}}"#,
        ),
        (
            "an array id",
            r#"{"jsonrpc":"2.0","id":[1],"method":"GetTask","params":{"id":"t"}}"#,
        ),
        (
            "a boolean id",
            r#"{"jsonrpc":"2.0","id":true,"method":"GetTask","params":{"id":"t"}}"#,
        ),
        (
            "method not a string",
            r#"{"jsonrpc":"2.0","id":1,"method":["GetTask"]}"#,
        ),
        (
            "params a string",
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":"t-1"}"#,
        ),
        (
            "unknown method",
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/list"}"#,
        ),
        (
            "method names are case-sensitive",
            r#"{"jsonrpc":"2.0","id":"c","method":"getTask"}"#,
        ),
    ];
    for (description, body) in bad {
        let body_bytes: Vec<u8> = if *description == "not UTF-8" {
            vec![0xff, 0xfe]
        } else {
            body.as_bytes().to_vec()
        };
        let (code, id) = match parse_request(&body_bytes) {
            Err(bad) => (bad.error.code.code(), bad.id.get().to_owned()),
            Ok(req) => (
                req.method().unwrap_err().code.code(),
                req.id.get().to_owned(),
            ),
        };
        let input = if *description == "not UTF-8" {
            json!({"body_hex": hex(&body_bytes)})
        } else {
            json!({"body": body})
        };
        cases.push(err(*description, input, json!({"code": code, "id": id})));
    }
    for (value, version) in [
        ("1.0", Some("1.0")),
        ("1.0.1", Some("1.0")),
        ("1", Some("1.0")),
        ("0.3", Some("0.3")),
        ("0.3.0", Some("0.3")),
        ("1.1", None),
        ("2.0", None),
        ("0.2", None),
        ("0.5", None),
        ("abc", None),
    ] {
        match version {
            Some(v) => cases.push(ok(
                format!("A2A-Version {value}"),
                json!({"header": value}),
                json!({"version": v}),
            )),
            None => cases.push(err(
                format!("A2A-Version {value} is not served"),
                json!({"header": value}),
                json!({"code": -32009}),
            )),
        }
        let _ = ProtocolVersion::from_header(value);
    }
    for code in ErrorCode::iter() {
        for version in [ProtocolVersion::V1_0, ProtocolVersion::V0_3] {
            let error = RpcError::new(code).with_meta("taskId", "t-1");
            let id = serde_json::value::RawValue::from_string("3".into()).unwrap();
            let body: Value = serde_json::from_slice(&error_body(&id, &error, version)).unwrap();
            cases.push(ok(
                format!("{} rendered for {version}", code.spec().reason),
                json!({"render": {"code": code.code(), "metadata": {"taskId": "t-1"}, "version": version.to_string(), "id": 3}}),
                body,
            ));
        }
    }
    cases
}

fn ids() -> Vec<Value> {
    let inputs = [
        ("", "", "m-1"),
        ("", "alice", "m-1"),
        ("", "bob", "m-1"),
        ("acme", "alice", "m-1"),
        ("", "alice", "m-2"),
        ("", "ab", "c"),
        ("", "a", "bc"),
        (
            "tenant",
            "principal ✓",
            "0196f1e2-7c1a-7000-8000-000000000000",
        ),
    ];
    let mut cases: Vec<Value> = inputs
        .iter()
        .map(|(tenant, principal, message_id)| {
            ok(
                format!("ids for ({tenant:?}, {principal:?}, {message_id:?})"),
                json!({"tenant": tenant, "principal": principal, "messageId": message_id}),
                json!({"taskId": agentlog_wire::ids::task_id(tenant, principal, message_id), "contextId": agentlog_wire::ids::context_id(tenant, principal, message_id)}),
            )
        })
        .collect();
    for (task, turn, attempt, sequence) in [
        ("task-1", "m-1", 1u32, 0u32),
        ("task-1", "m-1", 1, 1),
        ("task-1", "m-1", 2, 0),
        ("task-1", "m-2", 1, 0),
        ("task-1", "m-1", 1, 12),
        ("task-1", "m-1", 11, 2),
    ] {
        cases.push(ok(
            format!("the record id of ({task}, {turn}, attempt {attempt}, sequence {sequence})"),
            json!({"taskId": task, "turn": turn, "attempt": attempt, "sequence": sequence}),
            json!({"recordId": agentlog_wire::ids::record_id(task, turn, attempt, sequence)}),
        ));
    }
    cases
}

fn v03_cases() -> Vec<Value> {
    use agentlog_wire::v03;
    let mut cases = Vec::new();
    let params: &[(&str, Value)] = &[
        (
            "a text message, blocking by default",
            json!({"message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}),
        ),
        (
            "blocking false is returnImmediately",
            json!({"message": {"kind": "message", "messageId": "m2", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}, "configuration": {"blocking": false, "historyLength": 3, "acceptedOutputModes": ["text/plain"]}}),
        ),
        (
            "a follow-up names its task and context",
            json!({"message": {"kind": "message", "messageId": "m3", "taskId": "t-1", "contextId": "c-1", "role": "user", "parts": [{"kind": "text", "text": "paris"}]}}),
        ),
        (
            "file parts with bytes and uri, and a data part",
            json!({"message": {"kind": "message", "messageId": "m4", "role": "user", "parts": [{"kind": "file", "file": {"name": "a.txt", "mimeType": "text/plain", "bytes": "aGk="}}, {"kind": "file", "file": {"uri": "https://example.com/doc.pdf", "mimeType": "application/pdf"}}, {"kind": "data", "data": {"k": 1}}]}}),
        ),
        (
            "metadata is kept",
            json!({"message": {"kind": "message", "messageId": "m5", "role": "user", "parts": [{"kind": "text", "text": "x", "metadata": {"a": 1}}], "metadata": {"b": 2}}, "metadata": {"c": 3}}),
        ),
    ];
    for (description, input) in params {
        let request = v03::send_params_from_v03(input).unwrap();
        cases.push(ok(
            *description,
            json!({"sendParams": input}),
            json!({"v1": request}),
        ));
    }
    let bad: &[(&str, Value)] = &[
        (
            "a message without parts field type",
            json!({"message": {"kind": "message", "messageId": "m1", "role": "user", "parts": "hi"}}),
        ),
        (
            "an unknown role",
            json!({"message": {"kind": "message", "messageId": "m1", "role": "robot", "parts": [{"kind": "text", "text": "hi"}]}}),
        ),
        (
            "an unknown part kind",
            json!({"message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "video", "url": "x"}]}}),
        ),
        (
            "a file part with neither bytes nor uri",
            json!({"message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "file", "file": {"name": "a"}}]}}),
        ),
        ("no message", json!({"configuration": {"blocking": true}})),
        ("params not an object", json!(["message"])),
    ];
    for (description, input) in bad {
        let kind = v03::send_params_from_v03(input).unwrap_err().kind();
        cases.push(err(
            *description,
            json!({"sendParams": input}),
            json!({"kind": kind}),
        ));
    }
    let records = [
        hi_command(),
        status("s-1", 1_700_000_000_010, TaskState::Working, ""),
        rec(
            "task-1",
            "a-1",
            1_700_000_000_020,
            RecordBody::ArtifactUpdate {
                append: false,
                last_chunk: true,
                artifact: r#"{"artifactId":"out","name":"echo","parts":[{"text":"echo: hi"}]}"#
                    .into(),
            },
        ),
        status(
            "t-1",
            1_700_000_000_030,
            TaskState::Completed,
            r#"{"messageId":"t-1","role":"ROLE_AGENT","parts":[{"text":"done"}]}"#,
        ),
    ];
    for n in 1..=records.len() {
        let task = fold(&records[..n]).into_task().unwrap();
        let v1 = serde_json::to_value(&task).unwrap();
        cases.push(ok(
            format!("a {} task in 0.3 shape", task.status.state.as_v03_str()),
            json!({"task": v1}),
            json!({"v03": v03::task_to_v03(&task)}),
        ));
    }
    cases
}
