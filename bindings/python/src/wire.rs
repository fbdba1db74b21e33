//! `agentlog.wire`: the contract functions of the `agentlog-wire` crate (and the signature
//! checks of `agentlog::security` the fixtures exercise), over plain Python data. Every
//! function is a conversion around one Rust function; `fixtures/README.md` describes the
//! JSON forms (a record's JSON form, the fold's result, membership records and their fold).

use agentlog::security::{SigningKey, Trust, VerifyingKey, card_signing, verify_card};
use agentlog_wire::a2a::{AgentCard, ProtectedHeader};
use agentlog_wire::jsonrpc::{ProtocolVersion, error_body, parse_request};
use agentlog_wire::members::{MemberFold, MemberRecord};
use agentlog_wire::{ErrorCode, Record, RpcError, StateCode, TaskState, WireError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::json;

use crate::error::{to_py_err, wire_err};
use crate::json::{serialize_to_py, to_json, to_py};

fn wire(py: Python<'_>) -> impl Fn(WireError) -> PyErr + '_ {
    move |e| wire_err(py, &e)
}

/// A JSON value read as a wire type, refused as `WireError` (`invalid_json`).
fn read<T: serde::de::DeserializeOwned>(
    py: Python<'_>,
    what: &'static str,
    value: &Bound<'_, PyAny>,
) -> PyResult<T> {
    let json = to_json(value, what)?;
    agentlog_wire::a2a::from_json(what, &json).map_err(wire(py))
}

/// What a state code means: `{"v1", "v03", "terminal", "interrupted"}`.
#[pyfunction]
fn state<'py>(py: Python<'py>, code: u8) -> PyResult<Bound<'py, PyAny>> {
    let state = StateCode(code).state().map_err(wire(py))?;
    let info = json!({
        "v1": state.as_str(),
        "v03": state.as_v03_str(),
        "terminal": state.is_terminal(),
        "interrupted": state.is_interrupted(),
    });
    to_py(py, &info)
}

fn parse_state(py: Python<'_>, name: &str) -> PyResult<TaskState> {
    name.parse::<TaskState>().map_err(|_| {
        crate::error::wire_kind(
            py,
            "unknown_state_name",
            &format!("unknown task state name {name:?}"),
        )
    })
}

/// The pinned code of a state name (1.0 `TASK_STATE_WORKING` or 0.3 `working`).
#[pyfunction]
fn state_code(py: Python<'_>, name: &str) -> PyResult<u8> {
    Ok(parse_state(py, name)?.code())
}

/// Whether the transition table allows `from_` -> `to` (state names).
#[pyfunction]
fn can_transition(py: Python<'_>, from_: &str, to: &str) -> PyResult<bool> {
    Ok(parse_state(py, from_)?.can_transition_to(parse_state(py, to)?))
}

/// A record (its JSON form) encoded in the current format.
#[pyfunction]
fn encode_record<'py>(
    py: Python<'py>,
    record: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let json = to_json(record, "record")?;
    let record: Record = serde_json::from_value(json).map_err(|e| {
        crate::error::wire_kind(py, "invalid_json", &format!("invalid record: {e}"))
    })?;
    let bytes = record.encode().map_err(wire(py))?;
    Ok(PyBytes::new(py, &bytes))
}

/// A record's bytes (any format version) decoded to its JSON form.
#[pyfunction]
fn decode_record<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let record = Record::decode(data).map_err(wire(py))?;
    serialize_to_py(py, &record)
}

/// The bytes a record's signature covers.
#[pyfunction]
fn signing_payload<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let record = Record::decode(data).map_err(wire(py))?;
    let payload = record.signing_payload().map_err(wire(py))?;
    Ok(PyBytes::new(py, &payload))
}

/// What a trust (the trust file's JSON, keys inline) says of a record's bytes: `valid`, or
/// the rejection (`unsigned`, `unknown_key`, `retired_key`, `kind_not_allowed`,
/// `bad_signature`).
#[pyfunction]
fn record_verdict(py: Python<'_>, data: &[u8], trust: &Bound<'_, PyAny>) -> PyResult<&'static str> {
    let record = Record::decode(data).map_err(wire(py))?;
    let text = to_json(trust, "trust")?.to_string();
    let trust = Trust::parse(&text, std::path::Path::new(".")).map_err(|e| to_py_err(py, e))?;
    Ok(match trust.check(&record) {
        Ok(()) => "valid",
        Err(rejection) => rejection.as_str(),
    })
}

/// A membership record (its JSON form, `fixtures/members.json`) encoded.
#[pyfunction]
fn encode_member_record<'py>(
    py: Python<'py>,
    record: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let json = to_json(record, "member record")?;
    let record: MemberRecord = serde_json::from_value(json).map_err(|e| {
        crate::error::wire_kind(py, "invalid_json", &format!("invalid member record: {e}"))
    })?;
    let bytes = record.encode().map_err(wire(py))?;
    Ok(PyBytes::new(py, &bytes))
}

/// A membership record's bytes decoded to its JSON form.
#[pyfunction]
fn decode_member_record<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let record = MemberRecord::decode(data).map_err(wire(py))?;
    serialize_to_py(py, &record)
}

/// The bytes a membership record's signature covers.
#[pyfunction]
fn member_signing_payload<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let record = MemberRecord::decode(data).map_err(wire(py))?;
    let payload = record.signing_payload().map_err(wire(py))?;
    Ok(PyBytes::new(py, &payload))
}

/// Fold membership records (JSON forms, in log order) over `partitions` partitions into
/// `{"assignment", "stats"}`.
#[pyfunction]
fn fold_members<'py>(
    py: Python<'py>,
    partitions: u32,
    records: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let json = to_json(records, "member records")?;
    let records: Vec<MemberRecord> = serde_json::from_value(json).map_err(|e| {
        crate::error::wire_kind(py, "invalid_json", &format!("invalid member records: {e}"))
    })?;
    let fold = MemberFold::of(partitions, &records);
    to_py(
        py,
        &json!({"assignment": fold.assignment(), "stats": fold.stats()}),
    )
}

/// A JSON-RPC request body read as the bridge reads it: `{"method", "operation", "version",
/// "id"}`, or for a bad request `{"error": {"code", "message"}, "id"}` (`id` is the raw JSON
/// text echoed, `null` when unknown).
#[pyfunction]
fn parse_rpc_request<'py>(py: Python<'py>, body: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let parsed = match parse_request(body) {
        Err(bad) => Err((bad.error, bad.id.get().to_owned())),
        Ok(request) => {
            let id = request.id.get().to_owned();
            request
                .method()
                .map(|m| (m, id.clone()))
                .map_err(|e| (e, id))
        }
    };
    let value = match parsed {
        Ok((method, id)) => json!({
            "method": method.as_str(),
            "operation": format!("{:?}", method.operation()),
            "version": method.version().to_string(),
            "id": id,
        }),
        Err((error, id)) => json!({
            "error": {"code": error.code.code(), "message": error.message},
            "id": id,
        }),
    };
    to_py(py, &value)
}

/// The protocol version an `A2A-Version` header names (`"1.0"`, `"0.3"`), or `None`.
#[pyfunction]
fn protocol_version(header: &str) -> Option<String> {
    ProtocolVersion::from_header(header).map(|v| v.to_string())
}

/// A JSON-RPC error response body: `code` with `metadata` (ErrorInfo), for a request of
/// `version` (`"1.0"` or `"0.3"`) whose id was the raw JSON text `id`.
#[pyfunction]
fn error_response<'py>(
    py: Python<'py>,
    code: i32,
    metadata: std::collections::BTreeMap<String, String>,
    version: &str,
    id: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let bad = |why: String| crate::error::wire_kind(py, "invalid_field", &why);
    let code = ErrorCode::from_code(code).ok_or_else(|| bad(format!("no error code {code}")))?;
    let version = match version {
        "1.0" => ProtocolVersion::V1_0,
        "0.3" => ProtocolVersion::V0_3,
        other => return Err(bad(format!("no protocol version {other:?}"))),
    };
    let mut error = RpcError::new(code);
    for (key, value) in &metadata {
        error = error.with_meta(key, value.clone());
    }
    let id = serde_json::value::RawValue::from_string(id.to_owned())
        .map_err(|e| bad(format!("the id is not JSON: {e}")))?;
    Ok(PyBytes::new(py, &error_body(&id, &error, version)))
}

/// Fold records (JSON forms, in log order) into `{"task", "answer", "expiresAtMs", "stats"}`.
#[pyfunction]
fn fold<'py>(py: Python<'py>, records: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let json = to_json(records, "records")?;
    let records: Vec<Record> = serde_json::from_value(json).map_err(|e| {
        crate::error::wire_kind(py, "invalid_json", &format!("invalid records: {e}"))
    })?;
    let folded = agentlog_wire::fold::fold(&records);
    let s = folded.stats();
    let value = json!({
        "task": folded.task(),
        "answer": folded.answer(),
        "expiresAtMs": folded.machine().expires_at_ms(),
        "stats": {"applied": s.applied, "orphans": s.orphans, "duplicates": s.duplicates,
                  "afterTerminal": s.after_terminal, "illegalTransitions": s.illegal_transitions,
                  "invalid": s.invalid, "fenced": s.fenced},
    });
    to_py(py, &value)
}

/// The task id derived from (tenant, principal, messageId).
#[pyfunction]
fn task_id(tenant: &str, principal: &str, message_id: &str) -> String {
    agentlog_wire::ids::task_id(tenant, principal, message_id)
}

/// The context id derived from (tenant, principal, messageId).
#[pyfunction]
fn context_id(tenant: &str, principal: &str, message_id: &str) -> String {
    agentlog_wire::ids::context_id(tenant, principal, message_id)
}

/// A worker record's `messageId`.
#[pyfunction]
fn record_id(task_id: &str, turn: &str, attempt: u32, sequence: u32) -> String {
    agentlog_wire::ids::record_id(task_id, turn, attempt, sequence)
}

/// 0.3 `MessageSendParams` as a 1.0 `SendMessageRequest`.
#[pyfunction]
fn send_params_from_v03<'py>(
    py: Python<'py>,
    params: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let json = to_json(params, "params")?;
    let request = agentlog_wire::v03::send_params_from_v03(&json).map_err(wire(py))?;
    serialize_to_py(py, &request)
}

/// A 1.0 `Task` in the 0.3 shape.
#[pyfunction]
fn task_to_v03<'py>(py: Python<'py>, task: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let task: agentlog_wire::a2a::Task = read(py, "Task", task)?;
    to_py(py, &agentlog_wire::v03::task_to_v03(&task))
}

/// A 0.3 task in the 1.0 `Task` shape.
#[pyfunction]
fn task_from_v03<'py>(py: Python<'py>, task: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let json = to_json(task, "task")?;
    let task = agentlog_wire::v03::task_from_v03(&json).map_err(wire(py))?;
    serialize_to_py(py, &task)
}

/// The canonical payload a card's signatures cover (RFC 8785 over its 1.0 fields).
#[pyfunction]
fn card_payload(py: Python<'_>, card: &Bound<'_, PyAny>) -> PyResult<String> {
    let card: AgentCard = read(py, "AgentCard", card)?;
    agentlog_wire::a2a::card_payload(&card).map_err(wire(py))
}

/// A JSON value in RFC 8785 (JCS) form.
#[pyfunction]
fn canonicalize(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    let json = to_json(value, "value")?;
    agentlog_wire::jcs::canonicalize(&json).map_err(wire(py))
}

/// A JWS protected header (base64url) decoded: `{"alg", "kid", "typ", "jku"?}`.
#[pyfunction]
fn decode_protected_header<'py>(py: Python<'py>, protected: &str) -> PyResult<Bound<'py, PyAny>> {
    let header = ProtectedHeader::decode(protected).map_err(wire(py))?;
    serialize_to_py(py, &header)
}

/// A JWS protected header encoded (sorted, compact, base64url).
#[pyfunction]
fn encode_protected_header(py: Python<'_>, header: &Bound<'_, PyAny>) -> PyResult<String> {
    let header: ProtectedHeader = read(py, "ProtectedHeader", header)?;
    header.encode().map_err(wire(py))
}

/// The JWS signing input `<protected>.<base64url(payload)>`.
#[pyfunction]
fn signing_input(protected: &str, payload: &str) -> String {
    agentlog_wire::a2a::signing_input(protected, payload)
}

fn hex32(py: Python<'_>, text: &str, what: &str) -> PyResult<[u8; 32]> {
    let bad = || {
        crate::error::wire_kind(
            py,
            "invalid_field",
            &format!("{what}: 64 hex digits expected"),
        )
    };
    if text.len() != 64 || !text.is_ascii() {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// Check a signed card against an Ed25519 public key (hex) under `kid`: the kid of the
/// signature that verifies, or `UnauthenticatedError` saying why none does.
#[pyfunction]
fn verify_card_signature(
    py: Python<'_>,
    card: &Bound<'_, PyAny>,
    public_key_hex: &str,
    kid: &str,
) -> PyResult<String> {
    let card: AgentCard = read(py, "AgentCard", card)?;
    let key = VerifyingKey::from_bytes(&hex32(py, public_key_hex, "public_key_hex")?)
        .map_err(|e| to_py_err(py, e))?
        .with_kid(kid);
    verify_card(&card, std::slice::from_ref(&key)).map_err(|e| to_py_err(py, e))
}

/// The signature (`{"protected", "signature"}`) an Ed25519 seed (hex) under `kid` makes over
/// a card: deterministic, so a fixture's signature comes out byte for byte.
#[pyfunction]
fn card_signature<'py>(
    py: Python<'py>,
    card: &Bound<'py, PyAny>,
    seed_hex: &str,
    kid: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let card: AgentCard = read(py, "AgentCard", card)?;
    let key = SigningKey::from_seed(hex32(py, seed_hex, "seed_hex")?).with_kid(kid);
    let signature = card_signing::card_signature(&card, &key).map_err(|e| to_py_err(py, e))?;
    serialize_to_py(py, &signature)
}

/// The `wire` submodule.
pub fn module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "wire")?;
    m.add_function(wrap_pyfunction!(state, &m)?)?;
    m.add_function(wrap_pyfunction!(state_code, &m)?)?;
    m.add_function(wrap_pyfunction!(can_transition, &m)?)?;
    m.add_function(wrap_pyfunction!(encode_record, &m)?)?;
    m.add_function(wrap_pyfunction!(decode_record, &m)?)?;
    m.add_function(wrap_pyfunction!(signing_payload, &m)?)?;
    m.add_function(wrap_pyfunction!(record_verdict, &m)?)?;
    m.add_function(wrap_pyfunction!(encode_member_record, &m)?)?;
    m.add_function(wrap_pyfunction!(decode_member_record, &m)?)?;
    m.add_function(wrap_pyfunction!(member_signing_payload, &m)?)?;
    m.add_function(wrap_pyfunction!(fold_members, &m)?)?;
    m.add_function(wrap_pyfunction!(parse_rpc_request, &m)?)?;
    m.add_function(wrap_pyfunction!(protocol_version, &m)?)?;
    m.add_function(wrap_pyfunction!(error_response, &m)?)?;
    m.add_function(wrap_pyfunction!(fold, &m)?)?;
    m.add_function(wrap_pyfunction!(task_id, &m)?)?;
    m.add_function(wrap_pyfunction!(context_id, &m)?)?;
    m.add_function(wrap_pyfunction!(record_id, &m)?)?;
    m.add_function(wrap_pyfunction!(send_params_from_v03, &m)?)?;
    m.add_function(wrap_pyfunction!(task_to_v03, &m)?)?;
    m.add_function(wrap_pyfunction!(task_from_v03, &m)?)?;
    m.add_function(wrap_pyfunction!(card_payload, &m)?)?;
    m.add_function(wrap_pyfunction!(canonicalize, &m)?)?;
    m.add_function(wrap_pyfunction!(decode_protected_header, &m)?)?;
    m.add_function(wrap_pyfunction!(encode_protected_header, &m)?)?;
    m.add_function(wrap_pyfunction!(signing_input, &m)?)?;
    m.add_function(wrap_pyfunction!(verify_card_signature, &m)?)?;
    m.add_function(wrap_pyfunction!(card_signature, &m)?)?;
    Ok(m)
}
