//! Runs every vector in `fixtures/*.json` against this crate.
//!
//! The Python and TypeScript test suites read the same files. A vector is
//! `{description, input, expected}` or, for a negative one, `{description, input, error}`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use agentlog_wire::fold::{Change, TaskMachine, fold, fold_content};
use agentlog_wire::jsonrpc::{ProtocolVersion, error_body, parse_request};
use agentlog_wire::members::{MemberFold, MemberRecord};
use agentlog_wire::{ErrorCode, Record, RpcError, StateCode, TaskState};
use serde_json::{Value, json};

#[derive(Default)]
struct Tally {
    positive: usize,
    negative: usize,
}

#[test]
fn every_fixture_vector_holds() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut tally = Tally::default();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|e| panic!("{name} is not JSON: {e}"));
        let run: fn(&Value) -> Result<(), String> = match name.as_str() {
            "task_states.json" => task_state,
            "records.json" => record,
            "signed_records.json" => signed_record,
            "jsonrpc.json" => jsonrpc,
            "fold.json" => fold_case,
            "ids.json" => ids_case,
            "v03.json" => v03_case,
            "card_signatures.json" => card_signature_case,
            "trace_context.json" => trace_context_case,
            "members.json" => members_case,
            other => panic!("no runner for fixtures/{other}: add one here"),
        };
        for case in file["cases"].as_array().expect("a cases array") {
            let description = case["description"].as_str().unwrap_or("?");
            if let Err(why) = run(case) {
                panic!("fixtures/{name}: {description}: {why}");
            }
            if case.get("error").is_some() {
                tally.negative += 1;
            } else {
                tally.positive += 1;
            }
        }
    }
    println!(
        "fixtures: {} vectors ({} negative) in {} files",
        tally.positive + tally.negative,
        tally.negative,
        files.len()
    );
    assert!(
        tally.positive + tally.negative >= 100,
        "at least 100 vectors"
    );
    assert!(tally.negative >= 30, "at least 30 negative vectors");
}

fn check(cond: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if cond { Ok(()) } else { Err(why()) }
}

fn task_state(case: &Value) -> Result<(), String> {
    let input = &case["input"];
    if let Some(code) = input.get("code") {
        let code = u8::try_from(code.as_u64().unwrap()).unwrap();
        return match (StateCode(code).state(), case.get("error")) {
            (Ok(state), None) => {
                let e = &case["expected"];
                check(state.as_str() == e["v1"], || {
                    format!("v1 name {}", state.as_str())
                })?;
                check(state.as_v03_str() == e["v03"], || {
                    format!("v03 name {}", state.as_v03_str())
                })?;
                check(json!(state.is_terminal()) == e["terminal"], || {
                    "terminal".into()
                })?;
                check(json!(state.is_interrupted()) == e["interrupted"], || {
                    "interrupted".into()
                })
            }
            (Err(err), Some(expected)) => {
                check(err.kind() == expected["kind"], || err.kind().into())
            }
            (got, _) => Err(format!("got {got:?}")),
        };
    }
    if let Some(name) = input.get("name") {
        let parsed = name.as_str().unwrap().parse::<TaskState>();
        let via_json = serde_json::from_value::<TaskState>(name.clone());
        return match (parsed, case.get("error")) {
            (Ok(state), None) => {
                check(json!(state.code()) == case["expected"]["code"], || {
                    format!("code {}", state.code())
                })?;
                check(via_json.ok() == Some(state), || {
                    "JSON disagrees with FromStr".into()
                })
            }
            (Err(_), Some(expected)) => {
                check(expected["kind"] == "unknown_state_name", || {
                    "error kind".into()
                })?;
                check(via_json.is_err(), || "JSON accepted an unknown name".into())
            }
            (got, _) => Err(format!("got {got:?}")),
        };
    }
    let from: TaskState = serde_json::from_value(input["from"].clone()).unwrap();
    let to: TaskState = serde_json::from_value(input["to"].clone()).unwrap();
    let legal = from.can_transition_to(to);
    check(json!(legal) == case["expected"]["legal"], || {
        format!("legal = {legal}")
    })
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn record(case: &Value) -> Result<(), String> {
    if let Some(expected) = case.get("error") {
        let bytes = unhex(case["input"]["hex"].as_str().unwrap());
        return match Record::decode(&bytes) {
            Ok(record) => Err(format!("decoded {record:?}")),
            Err(err) => check(err.kind() == expected["kind"], || {
                format!("error kind {}", err.kind())
            }),
        };
    }
    if let Some(hex_in) = case["input"].get("hex") {
        // A record in an older format version: it decodes to the record (and re-encodes in
        // the current version).
        let decoded =
            Record::decode(&unhex(hex_in.as_str().unwrap())).map_err(|e| e.to_string())?;
        return check(
            serde_json::to_value(&decoded).unwrap() == case["expected"]["record"],
            || format!("decoded {decoded:?}"),
        );
    }
    let record: Record =
        serde_json::from_value(case["input"]["record"].clone()).map_err(|e| e.to_string())?;
    let bytes = record.encode().map_err(|e| e.to_string())?;
    let expected_hex = case["expected"]["hex"].as_str().unwrap();
    check(hex(&bytes) == expected_hex, || {
        format!("encoded {}", hex(&bytes))
    })?;
    let decoded = Record::decode(&unhex(expected_hex)).map_err(|e| e.to_string())?;
    check(decoded == record, || format!("decoded {decoded:?}"))?;
    check(
        serde_json::to_value(&decoded).unwrap() == case["input"]["record"],
        || "JSON form differs".into(),
    )
}

/// A signed record: its bytes decode to the record and re-encode to the same bytes, and its
/// signing payload is the one given. The verdicts need ed25519: the sdk's runner checks them.
fn signed_record(case: &Value) -> Result<(), String> {
    let bytes = unhex(case["input"]["hex"].as_str().unwrap());
    let decoded = Record::decode(&bytes).map_err(|e| e.to_string())?;
    let expected: Record =
        serde_json::from_value(case["expected"]["record"].clone()).map_err(|e| e.to_string())?;
    check(decoded == expected, || format!("decoded {decoded:?}"))?;
    check(decoded.encode().unwrap() == bytes, || {
        "re-encoded differently".into()
    })?;
    check(
        decoded.is_signed() == (case["expected"]["verdict"] != "unsigned"),
        || "signed or not".into(),
    )?;
    let payload = hex(&decoded.signing_payload().unwrap());
    check(payload == case["expected"]["signingPayloadHex"], || {
        format!("signing payload {payload}")
    })
}

/// A membership record's bytes and signing payload, bytes the decoder refuses, or a history
/// and the assignment it folds to.
fn members_case(case: &Value) -> Result<(), String> {
    let input = &case["input"];
    if let Some(expected) = case.get("error") {
        let bytes = unhex(input["hex"].as_str().unwrap());
        return match MemberRecord::decode(&bytes) {
            Ok(record) => Err(format!("decoded {record:?}")),
            Err(err) => check(err.kind() == expected["kind"], || {
                format!("error kind {}", err.kind())
            }),
        };
    }
    if let Some(records) = input.get("records") {
        let records: Vec<MemberRecord> =
            serde_json::from_value(records.clone()).map_err(|e| e.to_string())?;
        let partitions = u32::try_from(input["partitions"].as_u64().unwrap()).unwrap();
        let fold = MemberFold::of(partitions, &records);
        let got = json!({"assignment": fold.assignment(), "stats": fold.stats()});
        return check(got == case["expected"], || format!("folded to {got}"));
    }
    let record: MemberRecord =
        serde_json::from_value(input["record"].clone()).map_err(|e| e.to_string())?;
    let bytes = record.encode().map_err(|e| e.to_string())?;
    check(hex(&bytes) == case["expected"]["hex"], || {
        format!("encoded {}", hex(&bytes))
    })?;
    let decoded = MemberRecord::decode(&bytes).map_err(|e| e.to_string())?;
    check(decoded == record, || format!("decoded {decoded:?}"))?;
    check(
        serde_json::to_value(&decoded).unwrap() == input["record"],
        || "JSON form differs".into(),
    )?;
    let payload = hex(&record.signing_payload().unwrap());
    check(payload == case["expected"]["signingPayloadHex"], || {
        format!("signing payload {payload}")
    })
}

fn jsonrpc(case: &Value) -> Result<(), String> {
    let input = &case["input"];
    if let Some(header) = input.get("header") {
        let version = ProtocolVersion::from_header(header.as_str().unwrap());
        return match (version, case.get("error")) {
            (Some(v), None) => check(v.to_string() == case["expected"]["version"], || {
                v.to_string()
            }),
            (None, Some(e)) => check(e["code"] == ErrorCode::VersionNotSupported.code(), || {
                "code".into()
            }),
            (got, _) => Err(format!("got {got:?}")),
        };
    }
    if let Some(render) = input.get("render") {
        let code =
            ErrorCode::from_code(i32::try_from(render["code"].as_i64().unwrap()).unwrap()).unwrap();
        let mut error = RpcError::new(code);
        for (k, v) in render["metadata"].as_object().unwrap() {
            error = error.with_meta(k, v.as_str().unwrap());
        }
        let version = match render["version"].as_str().unwrap() {
            "1.0" => ProtocolVersion::V1_0,
            _ => ProtocolVersion::V0_3,
        };
        let id = serde_json::value::RawValue::from_string(render["id"].to_string()).unwrap();
        let body: Value = serde_json::from_slice(&error_body(&id, &error, version)).unwrap();
        return check(body == case["expected"], || format!("rendered {body}"));
    }
    let body = match input.get("body_hex") {
        Some(h) => unhex(h.as_str().unwrap()),
        None => input["body"].as_str().unwrap().as_bytes().to_vec(),
    };
    let parsed = parse_request(&body).map_err(|bad| (bad.error, bad.id.get().to_owned()));
    let parsed = parsed.and_then(|req| {
        let id = req.id.get().to_owned();
        req.method().map(|m| (m, id.clone())).map_err(|e| (e, id))
    });
    match (parsed, case.get("error")) {
        (Ok((method, id)), None) => {
            let e = &case["expected"];
            check(method.as_str() == e["method"], || method.as_str().into())?;
            check(
                format!("{:?}", method.operation()) == e["operation"],
                || "operation".into(),
            )?;
            check(method.version().to_string() == e["version"], || {
                "version".into()
            })?;
            check(id == e["id"], || format!("id {id}"))
        }
        (Err((error, id)), Some(e)) => {
            check(error.code.code() == e["code"], || {
                format!("code {}", error.code.code())
            })?;
            check(id == e["id"], || format!("id {id}"))
        }
        (got, _) => Err(format!("got {:?}", got.map(|(m, _)| m).map_err(|(e, _)| e))),
    }
}

fn fold_case(case: &Value) -> Result<(), String> {
    let records: Vec<Record> =
        serde_json::from_value(case["input"]["records"].clone()).map_err(|e| e.to_string())?;
    let f = fold(&records);
    let task = serde_json::to_value(f.task()).unwrap();
    check(task == case["expected"]["task"], || format!("task {task}"))?;
    let answer = serde_json::to_value(f.answer()).unwrap();
    check(answer == case["expected"]["answer"], || {
        format!("answer {answer}")
    })?;
    // The bridge's view reads back only the records with content and folds them with the
    // status its machine ended on: the same task. (The view routes records by task id.)
    let own = f.task().map(|t| t.id.as_str());
    let mut machine = TaskMachine::new();
    let mut content: Vec<&Record> = Vec::new();
    for record in records
        .iter()
        .filter(|r| Some(r.header.task_id.as_str()) == own)
    {
        match machine.apply(record) {
            // A new incarnation (rule 14): what the reader kept of the old one goes.
            Ok(Change::Created(_)) => content = vec![record],
            Ok(change) if change.has_content() => content.push(record),
            _ => {}
        }
    }
    // An answered task (rule 15) has no task: the reader answers it as not found.
    let from_content = machine
        .status()
        .filter(|_| !machine.is_answered())
        .and_then(|status| fold_content(content, status));
    let from_content = serde_json::to_value(from_content).unwrap();
    check(from_content == task, || {
        format!("task from the content records {from_content}")
    })?;
    let expires = json!(f.machine().expires_at_ms());
    check(expires == case["expected"]["expiresAtMs"], || {
        format!("expires at {expires}")
    })?;
    let s = f.stats();
    let stats = json!({"applied": s.applied, "orphans": s.orphans, "duplicates": s.duplicates, "afterTerminal": s.after_terminal, "illegalTransitions": s.illegal_transitions, "invalid": s.invalid, "fenced": s.fenced});
    check(stats == case["expected"]["stats"], || {
        format!("stats {stats}")
    })
}

fn ids_case(case: &Value) -> Result<(), String> {
    let i = &case["input"];
    if let Some(turn) = i.get("turn") {
        let id = agentlog_wire::ids::record_id(
            i["taskId"].as_str().unwrap(),
            turn.as_str().unwrap(),
            u32::try_from(i["attempt"].as_u64().unwrap()).unwrap(),
            u32::try_from(i["sequence"].as_u64().unwrap()).unwrap(),
        );
        return check(id == case["expected"]["recordId"], || {
            format!("record id {id}")
        });
    }
    let (tenant, principal, message_id) = (
        i["tenant"].as_str().unwrap(),
        i["principal"].as_str().unwrap(),
        i["messageId"].as_str().unwrap(),
    );
    let task = agentlog_wire::ids::task_id(tenant, principal, message_id);
    let context = agentlog_wire::ids::context_id(tenant, principal, message_id);
    check(task == case["expected"]["taskId"], || {
        format!("task id {task}")
    })?;
    check(context == case["expected"]["contextId"], || {
        format!("context id {context}")
    })
}

fn v03_case(case: &Value) -> Result<(), String> {
    use agentlog_wire::v03;
    let input = &case["input"];
    if let Some(params) = input.get("sendParams") {
        return match (v03::send_params_from_v03(params), case.get("error")) {
            (Ok(request), None) => {
                let got = serde_json::to_value(&request).unwrap();
                check(got == case["expected"]["v1"], || {
                    format!("converted to {got}")
                })
            }
            (Err(e), Some(expected)) => check(e.kind() == expected["kind"], || e.kind().into()),
            (got, _) => Err(format!("got {got:?}")),
        };
    }
    let task: agentlog_wire::a2a::Task =
        serde_json::from_value(input["task"].clone()).map_err(|e| e.to_string())?;
    let got = v03::task_to_v03(&task);
    check(got == case["expected"]["v03"], || {
        format!("converted to {got}")
    })?;
    let back = v03::task_from_v03(&got).map_err(|e| e.to_string())?;
    check(back == task, || format!("round trip gave {back:?}"))
}

/// The canonical payload, JCS and protected-header vectors; whether a signature is valid
/// (`expected.valid`) needs ed25519, so the sdk's `security::card_signing` tests check it.
fn card_signature_case(case: &Value) -> Result<(), String> {
    use agentlog_wire::a2a::{AgentCard, ProtectedHeader, card_payload, signing_input};
    let input = &case["input"];
    if let Some(card) = input.get("card") {
        let card: AgentCard =
            agentlog_wire::a2a::from_json("AgentCard", card).map_err(|e| e.to_string())?;
        let payload = card_payload(&card).map_err(|e| e.to_string())?;
        let expected = &case["expected"];
        check(payload == expected["payload"], || {
            format!("payload {payload}")
        })?;
        if let Some(header) = expected.get("header") {
            let signature = card
                .signatures
                .first()
                .ok_or("a signed case has a signature")?;
            let decoded =
                ProtectedHeader::decode(&signature.protected).map_err(|e| e.to_string())?;
            let decoded = serde_json::to_value(decoded).unwrap();
            check(&decoded == header, || format!("header {decoded}"))?;
            let input = signing_input(&signature.protected, &payload);
            check(input == expected["signingInput"], || {
                format!("signing input {input}")
            })?;
        }
        return Ok(());
    }
    if let Some(value) = input.get("jcs") {
        let text = agentlog_wire::jcs::canonicalize(value).map_err(|e| e.to_string())?;
        return check(text == case["expected"]["canonical"], || {
            format!("canonical {text}")
        });
    }
    let protected = input["protected"]
        .as_str()
        .ok_or("an input kind this runner knows")?;
    match (ProtectedHeader::decode(protected), case.get("error")) {
        (Ok(header), None) => {
            let got = serde_json::to_value(&header).unwrap();
            check(got == case["expected"]["header"], || {
                format!("header {got}")
            })?;
            // Encoding the header gives the same (sorted, compact) text back.
            let again = header.encode().map_err(|e| e.to_string())?;
            check(again == protected, || format!("re-encoded as {again}"))
        }
        (Err(e), Some(expected)) => check(e.kind() == expected["kind"], || e.kind().into()),
        (got, _) => Err(format!("got {got:?}")),
    }
}

/// Header values to the context and the content type a record gets; a content type to its
/// parameters and the context read back (wire/README.md, "Trace context").
fn trace_context_case(case: &Value) -> Result<(), String> {
    use agentlog_wire::trace::{TraceContext, parameters};
    let (input, expected) = (&case["input"], &case["expected"]);
    let as_json = |c: Option<TraceContext>| {
        c.map_or(
            Value::Null,
            |c| json!({"traceparent": c.traceparent(), "tracestate": c.tracestate()}),
        )
    };
    if let Some(parent) = input["traceparent"].as_str() {
        let context = TraceContext::parse(parent, input["tracestate"].as_str());
        let content_type = context
            .as_ref()
            .map(|c| c.in_content_type("application/json"));
        check(as_json(context.clone()) == expected["context"], || {
            format!("context {:?}", context)
        })?;
        check(json!(content_type) == expected["contentType"], || {
            format!("content type {content_type:?}")
        })?;
        if let Some(content_type) = &content_type {
            let back = TraceContext::from_content_type(content_type);
            check(back == context, || format!("read back as {back:?}"))?;
        }
        return Ok(());
    }
    let content_type = input["contentType"].as_str().ok_or("no input")?;
    let params: serde_json::Map<String, Value> = parameters(content_type)
        .into_iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), Value::String(value)))
        .collect();
    check(
        Value::Object(params.clone()) == expected["parameters"],
        || format!("parameters {params:?}"),
    )?;
    let context = TraceContext::from_content_type(content_type);
    check(as_json(context.clone()) == expected["context"], || {
        format!("context {context:?}")
    })
}
