//! Regenerates the computed parts of `fixtures/*.json` from the hand-written inputs below.
//!
//! Run `cargo run -p agentlog-wire --example regen_fixtures` after an intentional contract
//! change, review the diff, and commit it with the change. `wire/tests/fixtures.rs` checks
//! every vector on each test run, so an unintended change fails there.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod claims;
mod expiry;
mod folds;
mod members;
mod push;
mod records;
mod replies;
mod trace;

use std::path::PathBuf;

use agentlog_wire::fold::fold;
use agentlog_wire::jsonrpc::{ProtocolVersion, error_body, parse_request};
use agentlog_wire::{ErrorCode, RecordBody, RecordHeader, RpcError, TaskState};
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
        records::records(),
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
        "Fold scenarios: a task's records in log order, the Task they fold to (null when there is none, as when a reply answered in its place), the answering reply, and what was ignored.",
        folds::folds()
            .into_iter()
            .chain(claims::claims())
            .chain(expiry::expiry())
            .chain(replies::replies())
            .chain(push::push())
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
    write(
        &dir,
        "members.json",
        "Membership records on <agent>.members: encodings (with their signing payloads), bytes the decoder must refuse, and histories in log order with the assignment of partitions they fold to.",
        members::members(),
    );
    write(
        &dir,
        "trace_context.json",
        "W3C trace context on records: traceparent and tracestate header values, the context kept and the content type a record written under it gets; record content types and the media-type parameters and context read from them.",
        trace::trace(),
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

pub(crate) fn err(description: impl Into<String>, input: Value, error: Value) -> Value {
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

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
