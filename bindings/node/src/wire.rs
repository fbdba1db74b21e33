//! `wire`: the contract functions the shared fixture vectors exercise, over plain JS values
//! (records in their JSON form, A2A objects, bytes as `Buffer`s). Conversion only: every
//! function is one call into `agentlog-wire` (or the SDK's record trust).

use agentlog_wire::a2a::{AgentCard, ProtectedHeader, Task};
use agentlog_wire::fold::fold as fold_records;
use agentlog_wire::jsonrpc::{ProtocolVersion, error_body, parse_request};
use agentlog_wire::members::{MemberFold, MemberRecord};
use agentlog_wire::{ErrorCode, Record, RpcError, StateCode, TaskState};
use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;
use serde_json::{Value, json};

use crate::convert::{from_js, parse, to_js};
use crate::error::{invalid, to_napi, wire};

/// What a task state code means.
#[napi(object, namespace = "wire")]
pub struct StateInfo {
    /// The A2A 1.0 name (`TASK_STATE_COMPLETED`).
    pub v1: String,
    /// The A2A 0.3 name (`completed`).
    pub v03: String,
    /// Whether the task can change no more.
    pub terminal: bool,
    /// Whether the task waits for the client (input or auth required).
    pub interrupted: bool,
}

/// The state with the pinned code `code`; an unknown code throws (`wireKind`
/// `unknown_state_code`).
#[napi(namespace = "wire")]
pub fn state_from_code(code: u32) -> napi::Result<StateInfo> {
    let code = u8::try_from(code).map_err(|_| invalid(format!("{code} is not a u8")))?;
    let state = StateCode(code).state().map_err(|e| wire("task state", e))?;
    Ok(StateInfo {
        v1: state.as_str().to_owned(),
        v03: state.as_v03_str().to_owned(),
        terminal: state.is_terminal(),
        interrupted: state.is_interrupted(),
    })
}

fn state(name: &str) -> napi::Result<TaskState> {
    name.parse::<TaskState>()
        .map_err(|_| invalid(format!("unknown task state name {name:?}")))
}

/// The pinned code of a state named in the 1.0 or the 0.3 spelling.
#[napi(namespace = "wire")]
pub fn state_code(name: String) -> napi::Result<u32> {
    Ok(u32::from(state(&name)?.code()))
}

/// Whether a task may move from state `from` to state `to` (the transition table).
#[napi(namespace = "wire")]
pub fn can_transition(from: String, to: String) -> napi::Result<bool> {
    Ok(state(&from)?.can_transition_to(state(&to)?))
}

fn record_from(value: Value) -> napi::Result<Record> {
    parse("record", value)
}

/// A record (its JSON form, `fixtures/README.md`) in the record encoding.
#[napi(namespace = "wire", ts_args_type = "record: LogRecord")]
pub fn encode_record(record: Value) -> napi::Result<Buffer> {
    let record = record_from(record)?;
    Ok(record.encode().map_err(|e| wire("record", e))?.into())
}

/// Decode record bytes into the record's JSON form; bad bytes throw with the wire kind
/// (`truncated`, `unknown_version`, ...) in `details.wireKind`.
#[napi(namespace = "wire", ts_return_type = "LogRecord")]
pub fn decode_record(bytes: Buffer) -> napi::Result<Value> {
    let record = Record::decode(&bytes).map_err(|e| wire("record bytes", e))?;
    to_js(&record)
}

/// The bytes a record's signature covers.
#[napi(namespace = "wire")]
pub fn signing_payload(bytes: Buffer) -> napi::Result<Buffer> {
    let record = Record::decode(&bytes).map_err(|e| wire("record bytes", e))?;
    Ok(record
        .signing_payload()
        .map_err(|e| wire("record", e))?
        .into())
}

/// Whether the record in `bytes` is admitted by the trust file `trust` (its text, keys
/// inline): `valid`, or the rejection reason (`unsigned`, `unknown_key`, `retired_key`,
/// `kind_not_allowed`, `bad_signature`).
#[napi(namespace = "wire")]
pub fn verify_record(bytes: Buffer, trust: String) -> napi::Result<String> {
    let record = Record::decode(&bytes).map_err(|e| wire("record bytes", e))?;
    let trust =
        agentlog::security::Trust::parse(&trust, std::path::Path::new(".")).map_err(to_napi)?;
    Ok(match trust.check(&record) {
        Ok(()) => "valid".to_owned(),
        Err(rejection) => rejection.as_str().to_owned(),
    })
}

/// Fold records (in log order) into the task they describe: `{task, answer, expiresAtMs,
/// stats}` as in `fixtures/fold.json`.
#[napi(
    namespace = "wire",
    ts_args_type = "records: LogRecord[]",
    ts_return_type = "FoldResult"
)]
pub fn fold(records: Vec<Value>) -> napi::Result<Value> {
    let records = records
        .into_iter()
        .map(record_from)
        .collect::<napi::Result<Vec<_>>>()?;
    let folded = fold_records(&records);
    let s = folded.stats();
    Ok(json!({
        "task": to_js(&folded.task())?,
        "answer": to_js(&folded.answer())?,
        "expiresAtMs": folded.machine().expires_at_ms(),
        "stats": {
            "applied": s.applied, "orphans": s.orphans, "duplicates": s.duplicates,
            "afterTerminal": s.after_terminal, "illegalTransitions": s.illegal_transitions,
            "invalid": s.invalid, "fenced": s.fenced,
        },
    }))
}

fn member_record_from(value: Value) -> napi::Result<MemberRecord> {
    parse("member record", value)
}

/// A membership record (its JSON form, `fixtures/members.json`) in its encoding.
#[napi(namespace = "wire", ts_args_type = "record: MemberRecord")]
pub fn encode_member_record(record: Value) -> napi::Result<Buffer> {
    let record = member_record_from(record)?;
    Ok(record
        .encode()
        .map_err(|e| wire("member record", e))?
        .into())
}

/// Decode membership record bytes into the record's JSON form; bad bytes throw with the
/// wire kind in `details.wireKind`.
#[napi(namespace = "wire", ts_return_type = "MemberRecord")]
pub fn decode_member_record(bytes: Buffer) -> napi::Result<Value> {
    let record = MemberRecord::decode(&bytes).map_err(|e| wire("member record bytes", e))?;
    to_js(&record)
}

/// The bytes a membership record's signature covers.
#[napi(namespace = "wire")]
pub fn member_signing_payload(bytes: Buffer) -> napi::Result<Buffer> {
    let record = MemberRecord::decode(&bytes).map_err(|e| wire("member record bytes", e))?;
    Ok(record
        .signing_payload()
        .map_err(|e| wire("member record", e))?
        .into())
}

/// Fold membership records (in log order) over `partitions` partitions: `{assignment,
/// stats}` as in `fixtures/members.json`.
#[napi(
    namespace = "wire",
    ts_args_type = "partitions: number, records: MemberRecord[]",
    ts_return_type = "MembersFoldResult"
)]
pub fn fold_members(partitions: u32, records: Vec<Value>) -> napi::Result<Value> {
    let records = records
        .into_iter()
        .map(member_record_from)
        .collect::<napi::Result<Vec<_>>>()?;
    let fold = MemberFold::of(partitions, &records);
    Ok(json!({
        "assignment": to_js(fold.assignment())?,
        "stats": to_js(&fold.stats())?,
    }))
}

/// The task id derived from (tenant, principal, messageId).
#[napi(namespace = "wire")]
pub fn task_id(tenant: String, principal: String, message_id: String) -> String {
    agentlog_wire::ids::task_id(&tenant, &principal, &message_id)
}

/// The context id derived from (tenant, principal, messageId).
#[napi(namespace = "wire")]
pub fn context_id(tenant: String, principal: String, message_id: String) -> String {
    agentlog_wire::ids::context_id(&tenant, &principal, &message_id)
}

/// A worker record's `messageId`: (task, turn, attempt, sequence).
#[napi(namespace = "wire")]
pub fn record_id(task_id: String, turn: String, attempt: u32, sequence: u32) -> String {
    agentlog_wire::ids::record_id(&task_id, &turn, attempt, sequence)
}

/// A parsed JSON-RPC request.
#[napi(object, namespace = "wire")]
pub struct ParsedRequest {
    /// The method name as sent.
    pub method: String,
    /// The A2A operation (`SendMessage`, `GetTask`, ...).
    pub operation: String,
    /// The protocol version of the method name (`1.0` or `0.3`).
    pub version: String,
    /// The request id's raw JSON text.
    pub id: String,
}

/// Parse a JSON-RPC request body; a bad one throws with the JSON-RPC `code` (-32700,
/// -32600, -32601) and the raw id in `details.id`.
#[napi(namespace = "wire")]
pub fn parse_rpc_request(body: Either<String, Buffer>) -> napi::Result<ParsedRequest> {
    let bytes: &[u8] = match &body {
        Either::A(text) => text.as_bytes(),
        Either::B(buffer) => buffer,
    };
    let request = parse_request(bytes).map_err(|bad| rpc_error(&bad.error, bad.id.get()))?;
    let id = request.id.get().to_owned();
    let method = request.method().map_err(|e| rpc_error(&e, &id))?;
    Ok(ParsedRequest {
        method: method.as_str().to_owned(),
        operation: format!("{:?}", method.operation()),
        version: method.version().to_string(),
        id,
    })
}

/// A protocol error as an `AgentlogError`: the kind the SDK reports that code as.
fn rpc_error(error: &RpcError, id: &str) -> napi::Error {
    let kind = agentlog::ErrorKind::ALL
        .into_iter()
        .find(|k| k.info().rpc == error.code)
        .unwrap_or(agentlog::ErrorKind::Internal);
    to_napi(agentlog::Error::new(kind, error.message.clone()).with_detail("id", id))
}

/// The protocol version an `A2A-Version` header value names; an unsupported one throws
/// (`version_not_supported`, -32009).
#[napi(namespace = "wire")]
pub fn protocol_version(header: String) -> napi::Result<String> {
    ProtocolVersion::from_header(&header)
        .map(|v| v.to_string())
        .ok_or_else(|| {
            to_napi(agentlog::Error::new(
                agentlog::ErrorKind::VersionNotSupported,
                format!("A2A-Version {header} is not supported"),
            ))
        })
}

/// What a JSON-RPC error response is made of.
#[napi(object, namespace = "wire")]
pub struct ErrorToRender {
    /// The JSON-RPC error code.
    pub code: i32,
    /// `ErrorInfo.metadata` entries.
    pub metadata: Option<std::collections::HashMap<String, String>>,
    /// `1.0` or `0.3`.
    pub version: String,
    /// The request id (any JSON value).
    #[napi(ts_type = "string | number | null")]
    pub id: Value,
}

/// The whole JSON-RPC error response for `error`.
#[napi(namespace = "wire", ts_return_type = "JsonRpcErrorResponse")]
pub fn render_error(error: ErrorToRender) -> napi::Result<Value> {
    let code = ErrorCode::from_code(error.code)
        .ok_or_else(|| invalid(format!("{} is not an error code of A2A", error.code)))?;
    let mut rpc = RpcError::new(code);
    let mut metadata: Vec<_> = error.metadata.unwrap_or_default().into_iter().collect();
    metadata.sort();
    for (key, value) in metadata {
        rpc = rpc.with_meta(&key, value);
    }
    let version = match error.version.as_str() {
        "1.0" => ProtocolVersion::V1_0,
        "0.3" => ProtocolVersion::V0_3,
        other => return Err(invalid(format!("version {other:?}: 1.0 or 0.3"))),
    };
    let id = serde_json::value::RawValue::from_string(from_js(error.id).to_string())
        .map_err(|e| invalid(format!("id: {e}")))?;
    serde_json::from_slice(&error_body(&id, &rpc, version))
        .map_err(|e| invalid(format!("rendered error: {e}")))
}

/// A 0.3 `MessageSendParams` as the 1.0 `SendMessageRequest`.
#[napi(
    namespace = "wire",
    ts_args_type = "params: object",
    ts_return_type = "SendMessageRequest"
)]
pub fn send_params_from_v03(params: Value) -> napi::Result<Value> {
    let request = agentlog_wire::v03::send_params_from_v03(&from_js(params))
        .map_err(|e| wire("sendParams", e))?;
    to_js(&request)
}

/// A 1.0 task in the 0.3 shape.
#[napi(
    namespace = "wire",
    ts_args_type = "task: Task",
    ts_return_type = "object"
)]
pub fn task_to_v03(task: Value) -> napi::Result<Value> {
    let task: Task =
        agentlog_wire::a2a::from_json("Task", &from_js(task)).map_err(|e| wire("task", e))?;
    Ok(agentlog_wire::v03::task_to_v03(&task))
}

/// A 0.3 task in the 1.0 shape.
#[napi(
    namespace = "wire",
    ts_args_type = "task: object",
    ts_return_type = "Task"
)]
pub fn task_from_v03(task: Value) -> napi::Result<Value> {
    let task = agentlog_wire::v03::task_from_v03(&from_js(task)).map_err(|e| wire("task", e))?;
    to_js(&task)
}

/// The canonical payload an agent card's signatures cover (A2A §8.4).
#[napi(namespace = "wire", ts_args_type = "card: AgentCard")]
pub fn card_payload(card: Value) -> napi::Result<String> {
    let card: AgentCard =
        agentlog_wire::a2a::from_json("AgentCard", &from_js(card)).map_err(|e| wire("card", e))?;
    agentlog_wire::a2a::card_payload(&card).map_err(|e| wire("card", e))
}

/// The JWS signing input of a protected header and a payload.
#[napi(namespace = "wire")]
pub fn signing_input(protected_header: String, payload: String) -> String {
    agentlog_wire::a2a::signing_input(&protected_header, &payload)
}

/// A JWS protected header (base64url) decoded: `{alg, kid, typ, jku?}`.
#[napi(namespace = "wire", ts_return_type = "ProtectedHeader")]
pub fn decode_protected_header(protected_header: String) -> napi::Result<Value> {
    let header =
        ProtectedHeader::decode(&protected_header).map_err(|e| wire("protected header", e))?;
    to_js(&header)
}

/// A protected header encoded (sorted, compact JSON, base64url).
#[napi(namespace = "wire", ts_args_type = "header: ProtectedHeader")]
pub fn encode_protected_header(header: Value) -> napi::Result<String> {
    let header: ProtectedHeader = parse("protected header", header)?;
    header.encode().map_err(|e| wire("protected header", e))
}

/// Any JSON value in its RFC 8785 canonical form.
#[napi(namespace = "wire", ts_args_type = "value: unknown")]
pub fn canonicalize(value: Value) -> napi::Result<String> {
    agentlog_wire::jcs::canonicalize(&from_js(value)).map_err(|e| wire("value", e))
}
