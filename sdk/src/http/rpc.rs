//! `POST {rpc_path}`: JSON-RPC in, JSON or SSE out; and the way from a JSON-RPC body to the
//! bridge's answer ([`call`]) that the HTTP+JSON binding takes too.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use agentlog_wire::ErrorCode;
use agentlog_wire::jsonrpc::{self, BadRequest, ProtocolVersion, error_body, parse_request};
use axum::body::Body;

use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use serde::Deserialize;

use super::AppState;
use super::body::{read_body_within, refuse_unread};
use super::errors::{json, rpc_refusal};
use super::forward::Route;
use super::metrics::UNKNOWN_METHOD;
use crate::agent::Caller;
use crate::bridge::{RpcReply, RpcRequest, extensions};
use crate::error::{Error, ErrorKind};

const A2A_VERSION: HeaderName = HeaderName::from_static("a2a-version");
const A2A_EXTENSIONS: HeaderName = HeaderName::from_static("a2a-extensions");
/// 0.3's name for `A2A-Extensions` (the official JS SDK still sends it).
const X_A2A_EXTENSIONS: HeaderName = HeaderName::from_static("x-a2a-extensions");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");

/// The request content types of the JSON-RPC binding (A2A §5: `application/json`; the
/// HTTP+JSON binding's `application/a2a+json` is accepted too).
pub(super) const ACCEPTED_TYPES: [&str; 2] = ["application/json", "application/a2a+json"];

/// How often an idle SSE stream gets a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// `refusal`, once the unread body is out of the connection's way ([`refuse_unread`]).
pub(super) async fn refuse(
    state: &AppState,
    parts: &Parts,
    body: Body,
    refusal: Response,
) -> Response {
    let inner = &state.inner;
    refuse_unread(
        &parts.headers,
        body,
        refusal,
        inner.body_limit,
        inner.body_timeout,
    )
    .await
}

/// One JSON-RPC request.
pub(super) async fn rpc(state: AppState, parts: Parts, body: Body) -> Response {
    let start = Instant::now();
    let inner = &state.inner;
    let metrics = &inner.metrics;
    if let Some(refusal) = super::health::gate(&state) {
        metrics.observe(
            UNKNOWN_METHOD,
            i64::from(ErrorCode::InternalError.code()),
            start.elapsed(),
        );
        return refuse(&state, &parts, body, refusal).await;
    }
    if !accepted_content_type(&parts.headers) {
        metrics.observe(
            UNKNOWN_METHOD,
            i64::from(ErrorCode::ContentTypeNotSupported.code()),
            start.elapsed(),
        );
        let refusal = rpc_refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::ContentTypeNotSupported,
            format!(
                "Content-Type must be {} or {}",
                ACCEPTED_TYPES[0], ACCEPTED_TYPES[1]
            ),
        );
        return refuse(&state, &parts, body, refusal).await;
    }
    let read = read_body_within(&parts.headers, body, inner.body_limit, inner.body_timeout);
    let body = match read.await {
        Ok(body) => body,
        Err(refusal) => {
            metrics.observe(
                UNKNOWN_METHOD,
                i64::from(ErrorCode::InvalidRequest.code()),
                start.elapsed(),
            );
            return refusal;
        }
    };

    match call(&state, &parts, &body, &body, start).await {
        Err(NotCalled::Refused(response) | NotCalled::Piped(response)) => response,
        Ok(called) => {
            let response = respond(called.reply, &called.probe, &state, start);
            echo_extensions(response, &called.activated)
        }
    }
}

/// A request the bridge answered, and what the transport needs to reply.
pub(super) struct Called<'a> {
    pub(super) reply: RpcReply,
    pub(super) probe: Probe<'a>,
    /// The extensions to echo in `A2A-Extensions` (A2A §4.6).
    pub(super) activated: String,
}

/// Why [`call`] has no answer of the bridge's.
pub(super) enum NotCalled {
    /// A refusal (a JSON-RPC error body, which the HTTP+JSON binding restyles).
    Refused(Response),
    /// A peer's answer to a forwarded request, as it came (in the request's own binding).
    Piped(Response),
}

/// A JSON-RPC `body` through to the bridge's answer: who calls (a refusal, counted, if edge
/// auth says no), where it is served (another bridge's partition is forwarded: the `raw`
/// body as received goes on), `A2A-Version`, `Last-Event-ID` and `A2A-Extensions`. Both HTTP
/// bindings go through it, so they authenticate and answer alike.
pub(super) async fn call<'a>(
    state: &AppState,
    parts: &Parts,
    raw: &[u8],
    body: &'a [u8],
    start: Instant,
) -> Result<Called<'a>, NotCalled> {
    let inner = &state.inner;
    // One borrowing parse: the metrics label, the id and the streaming flag come from it, and
    // the bridge answers from it.
    let parsed = parse_request(body);
    let probe = Probe::of(&parsed);
    // The body is read first so that a refusal can echo the request's id; nothing is looked
    // up before the caller is known.
    let caller = match &inner.auth {
        None => Caller::anonymous(),
        Some(auth) => match super::auth::gate::admit(auth, parts, &parsed).await {
            Ok(caller) => caller,
            Err((code, refusal)) => {
                inner
                    .metrics
                    .observe(probe.method, i64::from(code), start.elapsed());
                return Err(NotCalled::Refused(refusal));
            }
        },
    };
    let mut partitions = None;
    let mut fanned = None;
    if let Some(forwarder) = &inner.forward {
        let metrics = &inner.metrics;
        let route = forwarder.route(inner, parts, raw, &parsed, &caller, probe.method);
        match route.await {
            Route::Here => {}
            Route::Share(only) => partitions = Some(only),
            Route::Piped(answer) => return Err(NotCalled::Piped(answer)),
            Route::Refused(refusal) => {
                let code = i64::from(ErrorCode::InternalError.code());
                metrics.observe(probe.method, code, start.elapsed());
                return Err(NotCalled::Refused(refusal));
            }
            Route::FanOut(plan) => {
                let rpc_path = inner.rpc_paths.first().map_or("/", String::as_str);
                match plan.fetch(forwarder, &parts.headers, rpc_path, body).await {
                    Ok(pages) => {
                        let mut local = plan.local().to_vec();
                        local.extend(&pages.stand_in);
                        partitions = Some(local);
                        let id = parsed.as_ref().ok().map(|r| r.id.to_owned());
                        fanned = id.map(|id| (id, pages));
                    }
                    Err(refusal) => {
                        let code = i64::from(ErrorCode::InternalError.code());
                        metrics.observe(probe.method, code, start.elapsed());
                        return Err(NotCalled::Refused(refusal));
                    }
                }
            }
        }
    }
    let version = parts
        .headers
        .get(A2A_VERSION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()));
    let resume_after = match (probe.streaming, parts.headers.get(LAST_EVENT_ID)) {
        (true, Some(value)) => match parse_last_event_id(value) {
            Some(position) => Some(position),
            None => {
                let reply = RpcReply::Json(bad_last_event_id(body, value));
                return Ok(Called {
                    reply,
                    probe,
                    activated: String::new(),
                });
            }
        },
        _ => None,
    };
    let requested = requested_extensions(&parts.headers);
    let activated = extensions::activated(inner.bridge.agent_card(), &requested).join(", ");
    let request = RpcRequest::parsed(parsed, caller)
        .a2a_version(version.as_deref())
        .extensions(requested)
        .resume_after(resume_after)
        .trace(super::trace_of(&parts.headers))
        .partitions(partitions);
    let reply = match (inner.bridge.handle(request).await, fanned) {
        (RpcReply::Json(local), Some((id, pages))) => {
            RpcReply::Json(super::forward::merge(&id, local, pages))
        }
        (reply, _) => reply,
    };
    Ok(Called {
        reply,
        probe,
        activated,
    })
}

/// `response` with the activated extensions echoed, if any.
pub(super) fn echo_extensions(mut response: Response, activated: &str) -> Response {
    if !activated.is_empty()
        && let Ok(value) = HeaderValue::from_str(activated)
    {
        response.headers_mut().insert(A2A_EXTENSIONS, value);
    }
    response
}

/// The extension URIs of every `A2A-Extensions` (and 0.3 `X-A2A-Extensions`) header.
fn requested_extensions(headers: &HeaderMap) -> Vec<String> {
    [A2A_EXTENSIONS, X_A2A_EXTENSIONS]
        .iter()
        .flat_map(|name| headers.get_all(name))
        .filter_map(|value| value.to_str().ok())
        .flat_map(extensions::parse_header)
        .map(str::to_owned)
        .collect()
}

/// What the handler needs to know about a request before the bridge answers it.
pub(super) struct Probe<'a> {
    /// The method name when A2A defines it, else `unknown`.
    pub(super) method: &'static str,
    streaming: bool,
    /// The raw id, to recognise a success reply by its prefix.
    id: Option<&'a str>,
}

impl<'a> Probe<'a> {
    fn of(parsed: &Result<jsonrpc::Request<'a>, BadRequest>) -> Self {
        match parsed {
            Ok(request) => {
                let method = request.method().ok();
                Probe {
                    method: method.map_or(UNKNOWN_METHOD, |m| m.as_str()),
                    streaming: method.is_some_and(|m| m.operation().is_streaming()),
                    id: Some(request.id.get()),
                }
            }
            Err(_) => Probe {
                method: UNKNOWN_METHOD,
                streaming: false,
                id: None,
            },
        }
    }
}

fn respond(reply: RpcReply, probe: &Probe<'_>, state: &AppState, start: Instant) -> Response {
    let metrics = &state.inner.metrics;
    let (code, response) = match reply {
        RpcReply::Json(body) => (reply_code(&body, probe.id), json(StatusCode::OK, body)),
        RpcReply::Stream(stream) => {
            // Each event: `id: <log position>` + `data: <JSON-RPC response>`; an error (the
            // stream's last): `event: error` + `data: <JSON-RPC error response>`.
            // (`RpcStream` is not re-exported by `bridge`, hence the inline closure.)
            let frames = futures::stream::unfold(stream, |mut stream| async move {
                let event = stream.events.next().await?;
                let data = utf8(stream.frame(&event));
                let frame = match &event {
                    Ok(event) => Event::default().id(event.position.to_string()).data(data),
                    Err(_) => Event::default().event("error").data(data),
                };
                Some((Ok::<_, Infallible>(frame), stream))
            });
            (0, sse(frames))
        }
        // The router hands the bridge JSON-RPC bodies only, which never get a typed answer.
        RpcReply::Answer(_) => (
            i64::from(ErrorCode::InternalError.code()),
            rpc_refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::InternalError,
                "a typed answer to a JSON-RPC request".to_owned(),
            ),
        ),
    };
    metrics.observe(probe.method, code, start.elapsed());
    response
}

pub(super) fn sse(
    events: impl Stream<Item = Result<Event, Infallible>> + Send + 'static,
) -> Response {
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // Ask buffering proxies (nginx) to pass frames through as they come.
    response
        .headers_mut()
        .insert(ACCEL_BUFFERING, HeaderValue::from_static("no"));
    response
}

/// JSON text as a `String` (serde_json writes UTF-8, so this never copies lossily).
pub(super) fn utf8(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The JSON-RPC code of a reply: 0 for a success, else `error.code`.
///
/// A success body written by `success_body` starts with `{"jsonrpc":"2.0","id":<id>,"result"`;
/// when it does, the body is not parsed. Anything else is parsed for `error.code` only.
fn reply_code(body: &[u8], id: Option<&str>) -> i64 {
    if id.is_some_and(|id| result_of(body, id).is_some()) {
        return 0;
    }
    #[derive(Deserialize)]
    struct Reply {
        error: Option<Code>,
    }
    #[derive(Deserialize)]
    struct Code {
        code: i64,
    }
    match serde_json::from_slice::<Reply>(body) {
        Ok(Reply { error: Some(e) }) => e.code,
        Ok(Reply { error: None }) => 0,
        Err(_) => i64::from(ErrorCode::InternalError.code()),
    }
}

/// The result inside a success body `success_body` wrote for the request id `id` (raw JSON),
/// borrowed; `None` for anything else (an error body).
pub(super) fn result_of<'b>(body: &'b [u8], id: &str) -> Option<&'b [u8]> {
    const PREFIX: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &[u8] = br#","result":"#;
    body.strip_prefix(PREFIX)?
        .strip_prefix(id.as_bytes())?
        .strip_prefix(RESULT)?
        .strip_suffix(b"}")
}

pub(super) fn accepted_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return false;
    };
    let Ok(value) = value.to_str() else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    ACCEPTED_TYPES
        .iter()
        .any(|accepted| essence.eq_ignore_ascii_case(accepted))
}

fn parse_last_event_id(value: &HeaderValue) -> Option<u64> {
    value.to_str().ok()?.trim().parse().ok()
}

/// The -32602 error body for a `Last-Event-ID` that is not a log position.
fn bad_last_event_id(body: &[u8], value: &HeaderValue) -> Vec<u8> {
    let shown = String::from_utf8_lossy(value.as_bytes()).into_owned();
    let error = Error::new(
        ErrorKind::InvalidParams,
        format!("Last-Event-ID must be a log position (a decimal integer), got {shown:?}"),
    )
    .with_detail("field", "Last-Event-ID");
    match parse_request(body) {
        Ok(request) => {
            let version = request
                .method()
                .map_or(ProtocolVersion::V1_0, |m| m.version());
            error_body(request.id, &error.to_rpc(), version)
        }
        Err(bad) => error_body(&bad.id, &error.to_rpc(), ProtocolVersion::V1_0),
    }
}
