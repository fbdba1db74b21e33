//! The one error mapping: `agentlog::Error` (and the wire crate's errors) to a JS exception.
//!
//! N-API rejections of `async fn`s carry only napi's own status codes, so the kind cannot
//! travel in `err.code`. Every error leaves Rust with its reason set to one JSON object,
//! `{"agentlog": kind, "message": ..., "details": {...}}`, and `index.js` (the only caller of
//! the addon) turns it into an `AgentlogError` with `kind`, the JSON-RPC `code` and
//! `retryable` from [`kinds`], the table built from `ErrorKind::info`, sync or async alike.

use agentlog::{Error, ErrorKind};
use agentlog_wire::WireError;
use napi_derive::napi;
use serde_json::{Map, Value, json};

/// The reason prefix `index.js` recognises.
const MARK: &str = "{\"agentlog\":";

/// `error` as a napi error whose reason `index.js` turns into an `AgentlogError`.
pub fn to_napi(error: Error) -> napi::Error {
    napi::Error::from_reason(reason(&error))
}

/// The reason string `index.js` turns into an `AgentlogError` (also sent as is through the
/// worker's queue).
pub fn reason(error: &Error) -> String {
    let details: Map<String, Value> = error
        .details()
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::String(v.clone())))
        .collect();
    let reason = json!({
        "agentlog": error.kind().as_str(),
        "message": error.report().to_string(),
        "details": details,
    });
    let reason = reason.to_string();
    debug_assert!(reason.starts_with(MARK));
    reason
}

/// Shorthand for a `Result` mapped through [`to_napi`].
pub trait OrThrow<T> {
    /// Map the error through [`to_napi`].
    fn or_throw(self) -> napi::Result<T>;
}

impl<T> OrThrow<T> for agentlog::Result<T> {
    fn or_throw(self) -> napi::Result<T> {
        self.map_err(to_napi)
    }
}

/// Bad input to a binding function: `invalid_params`, the message naming what is wrong.
pub fn invalid(message: impl Into<String>) -> napi::Error {
    to_napi(Error::new(ErrorKind::InvalidParams, message))
}

/// A wire error on input the caller gave: `invalid_params`, with the contract's own name for
/// what was wrong (the fixtures' `kind`: `truncated`, `unknown_state_code`, ...) in
/// `details.wireKind`.
pub fn wire(what: &str, error: WireError) -> napi::Error {
    to_napi(
        Error::new(ErrorKind::InvalidParams, format!("{what}: {error}"))
            .with_detail("wireKind", error.kind()),
    )
}

/// One row of the error table.
#[napi(object)]
pub struct ErrorKindInfo {
    /// The stable snake_case name (`AgentlogError.kind`).
    pub kind: String,
    /// The JSON-RPC error code it is reported as (`AgentlogError.code`).
    pub code: i32,
    /// The HTTP status outside a JSON-RPC body.
    pub http_status: u32,
    /// Whether the same call may succeed if retried unchanged.
    pub retryable: bool,
}

/// Every error kind with its JSON-RPC code, HTTP status and retryability: the SDK's one
/// table (`ErrorKind::info`), read by `index.js` to build `AgentlogError`s.
#[napi]
pub fn error_kinds() -> Vec<ErrorKindInfo> {
    ErrorKind::ALL
        .iter()
        .map(|kind| {
            let info = kind.info();
            ErrorKindInfo {
                kind: info.name.to_owned(),
                code: info.rpc.code(),
                http_status: u32::from(info.http_status),
                retryable: info.retryable,
            }
        })
        .collect()
}
