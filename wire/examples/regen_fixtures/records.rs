//! `records.json`: record encodings in every format version, and malformed bytes.

use agentlog_wire::{Record, RecordBody, RecordHeader, StateCode, TaskState};
use serde_json::{Value, json};

use crate::{SEND_HI, err, header, hex, ok};

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
        ("format 4: a worker's reply (a message answering in its task's place; replies came with format 4)", Record { header: worker_header("r-1", 1, 1_700_000_000_080), body: RecordBody::Reply { message: r#"{"messageId":"r-1","role":"ROLE_AGENT","parts":[{"text":"Direct message response"}]}"#.into() } }),
        ("format 4: a push config registered (push records came with format 4)", Record { header: header("task-1", "push-1", 1_700_000_000_090), body: RecordBody::PushConfig { config: r#"{"id":"p-1","taskId":"task-1","url":"https://example.com/hook","token":"tok","authentication":{"scheme":"Bearer","credentials":"secret"}}"#.into() } }),
        ("format 4: a push config deleted", Record { header: header("task-1", "push-2", 1_700_000_000_095), body: RecordBody::PushConfigDeleted { config_id: "p-1".into() } }),
        ("format 4: a push notification given up (a dead letter)", Record { header: header("task-1", "push-3", 1_700_000_000_099), body: RecordBody::PushDeadLetter { config_id: "p-1".into(), update: 42, attempts: 8, reason: "HTTP 500 Internal Server Error".into() } }),
        ("format 4: a command with a bridge path of one, unsigned", Record { header: RecordHeader { hops: 1, bridge_hops: vec!["agent-a".into()], ..header("task-1", "m-1", 1_700_000_000_000) }, body: RecordBody::Command { params: SEND_HI.into(), retention_ms: 0 } }),
        ("format 4: the push sender's progress with a config whose receiver keeps failing (its notifications before offset 42 done)", Record { header: header("task-1", "push-4", 1_700_000_000_100), body: RecordBody::PushProgress { config_id: "p-1".into(), next: 42 } }),
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

/// Whether a sample record can be written in formats 1 to 3 (no format-4 field set, not a
/// reply nor a push record).
fn old_format(record: &Record) -> bool {
    let h = &record.header;
    h.key_id.is_empty()
        && h.bridge_hops.is_empty()
        && h.signature.is_empty()
        && record.body.kind().code() < agentlog_wire::RecordKind::Reply.code()
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
    let h = &record.header;
    assert!(h.key_id.is_empty() && h.bridge_hops.is_empty() && h.signature.is_empty());
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

pub(crate) fn records() -> Vec<Value> {
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
    for kind in [0u8, 13, 200] {
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
    let reply = sample_records()
        .into_iter()
        .find(|(_, r)| r.body.kind() == agentlog_wire::RecordKind::Reply)
        .unwrap()
        .1;
    let mut v3_reply = v3_bytes(&reply);
    v3_reply[1] = 8;
    cases.push(decode_err(
        "a reply in format 3 (replies came with format 4)",
        v3_reply,
    ));
    let mut v3_push = v3_bytes(&reply);
    v3_push[1] = 9;
    cases.push(decode_err(
        "a push config in format 3 (push records came with format 4)",
        v3_push,
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
