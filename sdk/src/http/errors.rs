//! The router's own error responses: JSON-RPC bodies for refusals at the transport level
//! (415, 413) and a `google.rpc.Status`-shaped JSON body for routing errors (404, 405).

use agentlog_wire::jsonrpc::{ProtocolVersion, error_body};
use agentlog_wire::{ErrorCode, RpcError};
use axum::http::header::{ALLOW, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub(super) const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// A complete `application/json` response.
pub(super) fn json(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(CONTENT_TYPE, JSON)], body).into_response()
}

/// A JSON-RPC error response with `id: null` (the body was not read or not parsed), sent
/// with an HTTP status because the refusal is the transport's.
pub(super) fn rpc_refusal(status: StatusCode, code: ErrorCode, message: String) -> Response {
    rpc_error_refusal(status, &RpcError::with_message(code, message))
}

/// [`rpc_refusal`] of a whole JSON-RPC error (with its metadata).
pub(super) fn rpc_error_refusal(status: StatusCode, error: &RpcError) -> Response {
    let body = match null_id() {
        Some(null) => error_body(&null, error, ProtocolVersion::V1_0),
        None => Vec::new(), // `null` always serializes
    };
    json(status, body)
}

/// `{"error":{"code":404,"status":"NOT_FOUND","message":...}}`, the REST binding's error
/// shape, for requests that reach no endpoint.
pub(super) fn route_error(status: StatusCode, message: String) -> Response {
    let body = serde_json::json!({
        "error": {
            "code": status.as_u16(),
            "status": status_name(status),
            "message": message,
        }
    });
    json(status, serde_json::to_vec(&body).unwrap_or_default())
}

/// `404` for a path no route serves.
pub(super) fn not_found(method: &str, path: &str) -> Response {
    route_error(
        StatusCode::NOT_FOUND,
        format!("no route for {method} {path}"),
    )
}

/// `405` for a method the path does not serve, with `Allow`.
pub(super) fn method_not_allowed(method: &str, path: &str, allow: &'static str) -> Response {
    let mut response = route_error(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} is not allowed on {path}; use {allow}"),
    );
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    response
}

fn status_name(status: StatusCode) -> &'static str {
    match status {
        StatusCode::NOT_FOUND => "NOT_FOUND",
        StatusCode::METHOD_NOT_ALLOWED => "METHOD_NOT_ALLOWED",
        StatusCode::PAYLOAD_TOO_LARGE => "PAYLOAD_TOO_LARGE",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "UNSUPPORTED_MEDIA_TYPE",
        StatusCode::SERVICE_UNAVAILABLE => "UNAVAILABLE",
        StatusCode::REQUEST_TIMEOUT => "DEADLINE_EXCEEDED",
        _ => "UNKNOWN",
    }
}

/// Raw `null`, for callers that need an id before a request was parsed.
pub(super) fn null_id() -> Option<Box<RawValue>> {
    serde_json::value::to_raw_value(&serde_json::Value::Null).ok()
}

/// The metadata of a JSON-RPC error's `data`: a 1.0 error carries one ErrorInfo there, a 0.3
/// one the metadata object itself.
pub(super) fn error_metadata(data: &Value) -> Map<String, Value> {
    match data {
        Value::Array(details) => details
            .iter()
            .find_map(|d| d.get("metadata"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        Value::Object(metadata) => metadata.clone(),
        _ => Map::new(),
    }
}
