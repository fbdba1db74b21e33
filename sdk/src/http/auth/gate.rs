//! The router's use of [`EdgeAuth`]: credentials, then the method's scope, before the bridge.

use agentlog_wire::jsonrpc::{self, BadRequest, ProtocolVersion, error_body};
use agentlog_wire::{ErrorCode, RpcError};
use axum::http::header::{RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;

use super::{EdgeAuth, Refusal, challenge, token_in_query};
use crate::agent::Caller;
use crate::http::errors::json;

/// The caller of a request `auth` accepts, or the response refusing it (echoing the request's
/// id). The query string is looked at before anything else: a token there is refused even
/// when the headers hold good credentials.
#[allow(clippy::result_large_err)] // the error is the response to send, built rarely
pub(crate) async fn admit(
    auth: &EdgeAuth,
    parts: &Parts,
    parsed: &Result<jsonrpc::Request<'_>, BadRequest>,
) -> Result<Caller, (i32, Response)> {
    let refused = |refusal: Refusal| Err(refuse(auth, parsed, &refusal));
    if token_in_query(parts.uri.query()) {
        return refused(Refusal::Malformed(
            "a token in the query string is refused: send it as `Authorization: Bearer <token>`"
                .to_owned(),
        ));
    }
    let identity = match auth.authenticator.authenticate(&parts.headers).await {
        Ok(identity) => identity,
        Err(refusal) => return refused(refusal),
    };
    // A body that does not parse, or an unknown method, needs no scope: the bridge answers
    // it (to an authenticated caller) with its own error.
    let method = parsed.as_ref().ok().and_then(|r| r.method().ok());
    if let Some(method) = method {
        let scope = auth.scopes.for_operation(method.operation());
        if !identity.has_scope(scope) {
            return Err(insufficient_scope(auth, parsed, scope));
        }
    }
    Ok(identity.caller)
}

/// 401 (400 for malformed credentials, 503 when they cannot be checked now) with a challenge
/// and a JSON-RPC error echoing the request's id.
fn refuse(
    auth: &EdgeAuth,
    parsed: &Result<jsonrpc::Request<'_>, BadRequest>,
    refusal: &Refusal,
) -> (i32, Response) {
    let (status, code, error) = match refusal {
        Refusal::Missing => (StatusCode::UNAUTHORIZED, ErrorCode::Unauthenticated, None),
        Refusal::Malformed(_) => (
            StatusCode::BAD_REQUEST,
            ErrorCode::Unauthenticated,
            Some("invalid_request"),
        ),
        Refusal::Invalid(_) => (
            StatusCode::UNAUTHORIZED,
            ErrorCode::Unauthenticated,
            Some("invalid_token"),
        ),
        Refusal::Unavailable(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::InternalError,
            None,
        ),
    };
    let mut rpc = RpcError::with_message(code, refusal.description());
    if let Some(error) = error {
        rpc = rpc.with_meta("error", error);
    }
    if matches!(refusal, Refusal::Unavailable(_)) {
        rpc = rpc.with_meta("kind", "unavailable");
    }
    let mut response = reply(status, parsed, &rpc);
    let headers = response.headers_mut();
    if matches!(refusal, Refusal::Unavailable(_)) {
        headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
    } else if let Ok(value) = HeaderValue::from_str(&challenge(auth, Some(refusal), None)) {
        headers.insert(WWW_AUTHENTICATE, value);
    }
    (code.code(), response)
}

/// 403: the credentials are good but lack `scope`.
fn insufficient_scope(
    auth: &EdgeAuth,
    parsed: &Result<jsonrpc::Request<'_>, BadRequest>,
    scope: &str,
) -> (i32, Response) {
    let rpc = RpcError::with_message(
        ErrorCode::PermissionDenied,
        format!("this method needs the scope {scope:?}, which the credentials do not grant"),
    )
    .with_meta("error", "insufficient_scope")
    .with_meta("scope", scope);
    let mut response = reply(StatusCode::FORBIDDEN, parsed, &rpc);
    if let Ok(value) = HeaderValue::from_str(&challenge(auth, None, Some(scope))) {
        response.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    (ErrorCode::PermissionDenied.code(), response)
}

/// `error` as the JSON-RPC reply to `parsed`: its id and its protocol version's error shape.
fn reply(
    status: StatusCode,
    parsed: &Result<jsonrpc::Request<'_>, BadRequest>,
    error: &RpcError,
) -> Response {
    let (id, version) = match parsed {
        Ok(request) => (
            request.id,
            request
                .method()
                .map_or(ProtocolVersion::V1_0, |m| m.version()),
        ),
        Err(bad) => (&*bad.id, ProtocolVersion::V1_0),
    };
    json(status, error_body(id, error, version))
}
