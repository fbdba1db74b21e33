//! The bridge's JSON-RPC answers as the HTTP+JSON binding's: a result is the body as it is
//! (the envelope dropped, not re-encoded), an error a `google.rpc.Status` with an
//! `ErrorInfo` and the HTTP status of the kind (the one error table), a stream SSE frames
//! of bare `StreamResponse`s.

use std::convert::Infallible;

use agentlog_wire::{ErrorCode, RpcError};
use axum::body::Body;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use axum::response::sse::Event;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

use super::params::ID;
use crate::bridge::RpcReply;
use crate::error::{Error, ErrorKind};
use crate::http::errors;
use crate::http::rpc::{result_of, sse, utf8};

/// The response for `reply`, and the JSON-RPC code it stands for (0 for a success or a
/// stream), for the metrics.
pub(super) fn respond(reply: RpcReply) -> (i64, Response) {
    match reply {
        RpcReply::Json(body) => match result_of(&body, ID) {
            Some(result) => (0, errors::json(StatusCode::OK, result.to_vec())),
            None => {
                let (code, response) = from_rpc_body(&body, None);
                (i64::from(code), response)
            }
        },
        RpcReply::Stream(stream) => {
            let frames = futures::stream::unfold(stream, |mut stream| async move {
                let event = stream.events.next().await?;
                let frame = match &event {
                    Ok(event) => {
                        let data = serde_json::to_vec(&event.response).unwrap_or_default();
                        Event::default()
                            .id(event.position.to_string())
                            .data(utf8(data))
                    }
                    Err(error) => {
                        let (_, body) = status_body(&error.to_rpc(), error.kind());
                        Event::default().event("error").data(utf8(body))
                    }
                };
                Some((Ok::<_, Infallible>(frame), stream))
            });
            (0, sse(frames))
        }
        // The binding hands the bridge JSON-RPC bodies only, which never get a typed answer.
        RpcReply::Answer(_) => (
            -32603,
            error(&Error::new(
                ErrorKind::Internal,
                "a typed answer to a JSON-RPC request",
            )),
        ),
    }
}

/// The error response for `error` (a request the binding refused before the bridge).
pub(super) fn error(error: &Error) -> Response {
    let (status, body) = status_body(&error.to_rpc(), error.kind());
    errors::json(status, body)
}

/// The binding's error for a JSON-RPC error body; `status`, when given, is the HTTP status a
/// refusal already chose (a 413, a 401 with its challenge), else the kind's.
fn from_rpc_body(body: &[u8], status: Option<StatusCode>) -> (i32, Response) {
    #[derive(Deserialize)]
    struct Envelope {
        error: Option<WireError>,
    }
    #[derive(Deserialize)]
    struct WireError {
        code: i32,
        message: String,
        #[serde(default)]
        data: Value,
    }
    let error = serde_json::from_slice::<Envelope>(body)
        .ok()
        .and_then(|envelope| envelope.error);
    let Some(error) = error else {
        let error = Error::new(ErrorKind::Internal, "the bridge's answer cannot be read");
        return (ErrorCode::InternalError.code(), self::error(&error));
    };
    let code = ErrorCode::from_code(error.code).unwrap_or(ErrorCode::InternalError);
    let metadata = errors::error_metadata(&error.data);
    let kind = ErrorKind::from_rpc(code, metadata.get("kind").and_then(Value::as_str));
    let rpc = RpcError {
        code,
        message: error.message,
        metadata,
    };
    let (kind_status, body) = status_body(&rpc, kind);
    (
        error.code,
        errors::json(status.unwrap_or(kind_status), body),
    )
}

/// A `google.rpc.Status` body: `code` the HTTP status, `status` the gRPC code's name, and
/// the `ErrorInfo` (A2A reason, domain, metadata) in `details`.
fn status_body(rpc: &RpcError, kind: ErrorKind) -> (StatusCode, Vec<u8>) {
    let info = kind.info();
    let status =
        StatusCode::from_u16(info.http_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let details = rpc.to_json_v1()["data"].clone();
    let body = json!({
        "error": {
            "code": status.as_u16(),
            "status": info.grpc.name(),
            "message": rpc.message,
            "details": details,
        }
    });
    (status, serde_json::to_vec(&body).unwrap_or_default())
}

/// A refusal the HTTP layer made in JSON-RPC's shape (auth, body limits, readiness), in the
/// binding's shape: the same status and headers (a challenge, `Retry-After`, `Connection`).
pub(super) async fn restyle(refusal: Response) -> Response {
    let (mut parts, body) = refusal.into_parts();
    let bytes = axum::body::to_bytes(body, 64 * 1024)
        .await
        .unwrap_or_default();
    let (_, restyled) = from_rpc_body(&bytes, Some(parts.status));
    let (restyled_parts, restyled_body) = restyled.into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    if let Some(length) = restyled_parts.headers.get(CONTENT_LENGTH) {
        parts.headers.insert(CONTENT_LENGTH, length.clone());
    }
    parts
        .headers
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Response::from_parts(parts, Body::new(restyled_body))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agentlog_wire::jsonrpc::{ProtocolVersion, error_body, success_body};
    use serde_json::value::RawValue;

    use super::*;

    async fn body_of(response: Response) -> Value {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn a_result_is_the_body_and_an_error_a_status_with_its_reason() {
        let id = RawValue::from_string(ID.to_owned()).unwrap();
        let result = serde_json::value::to_raw_value(&json!({"id": "t", "status": {}})).unwrap();
        let (code, response) = respond(RpcReply::Json(success_body(&id, &result)));
        assert_eq!((code, response.status()), (0, StatusCode::OK));
        assert_eq!(body_of(response).await, json!({"id": "t", "status": {}}));

        let missing = Error::task_not_found("t").to_rpc();
        let (code, response) = respond(RpcReply::Json(error_body(
            &id,
            &missing,
            ProtocolVersion::V1_0,
        )));
        assert_eq!((code, response.status()), (-32001, StatusCode::NOT_FOUND));
        let body = body_of(response).await;
        assert_eq!(body["error"]["code"], 404);
        assert_eq!(body["error"]["status"], "NOT_FOUND");
        assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(body["error"]["details"][0]["domain"], "a2a-protocol.org");
        assert_eq!(body["error"]["details"][0]["metadata"]["taskId"], "t");

        // Kinds that share a code keep their own status.
        let overloaded = Error::new(ErrorKind::Overloaded, "busy").to_rpc();
        let (_, response) = respond(RpcReply::Json(error_body(
            &id,
            &overloaded,
            ProtocolVersion::V1_0,
        )));
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body_of(response).await["error"]["status"],
            "RESOURCE_EXHAUSTED"
        );
    }
}
