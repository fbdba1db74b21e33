//! [`McpBridge::handle`]: one JSON-RPC message in, one reply out; the era, header and status
//! rules of the Streamable HTTP transport that do not need HTTP itself.

use std::collections::BTreeMap;
use std::pin::Pin;

use agentlog_wire::jsonrpc::parse_request;
use agentlog_wire::mcp::{Era, MODERN_VERSION, is_legacy_version};
use agentlog_wire::trace::{TRACEPARENT, TRACESTATE, TraceContext};
use futures::Stream;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::McpBridge;
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};

/// The MCP headers of an HTTP request, as sent (non-ASCII values already decoded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpHeaders {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// `Mcp-Method`.
    pub method: Option<String>,
    /// `Mcp-Name`.
    pub name: Option<String>,
    /// The `Mcp-Param-{Name}` headers (SEP-2243), keyed by `{Name}` in ASCII lowercase
    /// (header names compare case-insensitively): the value decoded, or `None` when it does
    /// not decode (characters a header value may not carry, a malformed `=?base64?…?=`, or
    /// the header sent twice), which fails the check of a tool that mirrors that name.
    pub params: BTreeMap<String, Option<String>>,
    /// `Mcp-Session-Id`: the legacy session a request belongs to (its resource subscriptions).
    pub session_id: Option<String>,
}

impl McpHeaders {
    /// The MCP headers among `pairs` of HTTP header names (any case) and values, as a
    /// transport received them: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, each
    /// trimmed and a `=?base64?…?=` value decoded (how MCP clients send non-ASCII values;
    /// one that does not decode to UTF-8 counts as not sent), and every `Mcp-Param-*`
    /// header into [`McpHeaders::params`]. Other headers are ignored.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut headers = Self::default();
        for (name, value) in pairs {
            if let Some(param) = name
                .get(..PARAM_PREFIX.len())
                .filter(|p| p.eq_ignore_ascii_case(PARAM_PREFIX))
                .and_then(|_| name.get(PARAM_PREFIX.len()..))
                .filter(|p| !p.is_empty())
            {
                let key = param.to_ascii_lowercase();
                // A repeated header is refused: readers taking the first and the last copy
                // would disagree.
                let decoded = (!headers.params.contains_key(&key))
                    .then(|| decode_param(value))
                    .flatten();
                headers.params.insert(key, decoded);
                continue;
            }
            let slot = if name.eq_ignore_ascii_case("mcp-protocol-version") {
                &mut headers.protocol_version
            } else if name.eq_ignore_ascii_case("mcp-method") {
                &mut headers.method
            } else if name.eq_ignore_ascii_case("mcp-name") {
                &mut headers.name
            } else if name.eq_ignore_ascii_case("mcp-session-id") {
                &mut headers.session_id
            } else {
                continue;
            };
            // The first value of a repeated header, as `HeaderMap::get` reads it.
            if slot.is_none() {
                *slot = decode_value(value);
            }
        }
        headers
    }
}

/// The name prefix of the headers mirroring tool arguments.
const PARAM_PREFIX: &str = "mcp-param-";

/// An `Mcp-Param-*` value: a `=?base64?…?=` one decoded (strict base64: padded, canonical),
/// else the plain value, which may hold only visible ASCII, spaces and tabs (RFC 9110).
fn decode_param(value: &str) -> Option<String> {
    let value = value.trim_matches([' ', '\t']);
    if value.starts_with("=?base64?") && value.ends_with("?=") {
        return decode_value(value);
    }
    value
        .bytes()
        .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
        .then(|| value.to_owned())
}

/// A header value, a `=?base64?…?=` one decoded.
fn decode_value(value: &str) -> Option<String> {
    use base64::Engine as _;
    let value = value.trim();
    if let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        return String::from_utf8(bytes).ok();
    }
    Some(value.to_owned())
}

/// One request to [`McpBridge::handle`].
#[derive(Debug, Clone)]
pub struct McpRequest<'a> {
    /// The JSON-RPC body.
    pub body: &'a [u8],
    /// Who calls (from edge auth, or anonymous).
    pub caller: Caller,
    /// The MCP headers when the request came over HTTP (`None`: a transport without them,
    /// whose requests are not checked against headers).
    pub headers: Option<McpHeaders>,
    /// The client takes an event stream (`Accept: text/event-stream`): a call with a
    /// progress token is then answered as one.
    pub accepts_stream: bool,
}

/// A stream of JSON-RPC messages: notifications, then the response, then its end.
pub type McpStream = Pin<Box<dyn Stream<Item = Vec<u8>> + Send>>;

/// What [`McpBridge::handle`] answers.
pub enum McpReply {
    /// One JSON-RPC response and the HTTP status to send it with.
    Json {
        /// The HTTP status.
        status: u16,
        /// The response.
        body: Vec<u8>,
    },
    /// A notification (or response) was accepted: HTTP 202, no body.
    Accepted,
    /// Progress notifications, then the response (HTTP 200 `text/event-stream`).
    Stream(McpStream),
}

impl std::fmt::Debug for McpReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpReply::Json { status, body } => f
                .debug_struct("Json")
                .field("status", status)
                .field("body", &String::from_utf8_lossy(body))
                .finish(),
            McpReply::Accepted => f.write_str("Accepted"),
            McpReply::Stream(_) => f.write_str("Stream"),
        }
    }
}

impl McpReply {
    /// The HTTP status to answer with (`Json`'s own, 202, or 200 for a stream).
    pub fn status(&self) -> u16 {
        match self {
            McpReply::Json { status, .. } => *status,
            McpReply::Accepted => 202,
            McpReply::Stream(_) => 200,
        }
    }

    /// The response's `Content-Type` (`None`: no body).
    pub fn content_type(&self) -> Option<&'static str> {
        match self {
            McpReply::Json { .. } => Some("application/json"),
            McpReply::Accepted => None,
            McpReply::Stream(_) => Some("text/event-stream"),
        }
    }
}

/// `messages` as whole SSE frames, one `data:` frame per JSON-RPC message (the framing of
/// the `/mcp` route), for a transport that writes frames itself (the bindings'
/// `handle_rpc`). The messages are compact JSON, so each is one `data:` line.
pub fn sse_frames(messages: McpStream) -> crate::bridge::SseFrames {
    use futures::StreamExt as _;
    Box::pin(messages.map(|message| {
        let mut frame = Vec::with_capacity(message.len() + 8);
        frame.extend_from_slice(b"data: ");
        frame.extend_from_slice(&message);
        frame.extend_from_slice(b"\n\n");
        frame
    }))
}

/// What a method needs to know about its request.
pub(super) struct Ctx<'a> {
    pub(super) id: &'a RawValue,
    /// The request's method.
    pub(super) method: &'a str,
    pub(super) caller: &'a Caller,
    pub(super) era: Era,
    pub(super) accepts_stream: bool,
    /// The MCP headers, when the request came over HTTP.
    pub(super) headers: Option<&'a McpHeaders>,
    /// The partitions a task listing covers here, when bridges share them (`super::shares`).
    pub(super) share: Option<&'a super::ListShare>,
}

/// A success body.
pub(super) fn success(id: &RawValue, result: &Map<String, Value>) -> Vec<u8> {
    agentlog_wire::jsonrpc::success_body(id, result)
}

/// An error body with the MCP error object.
pub(super) fn error_body(id: &RawValue, error: &Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "error": error})).unwrap_or_default()
}

/// The reply carrying `error`, with its status in the request's era (the error table's
/// [`mcp_status`](crate::error::KindInfo::mcp_status) columns).
pub(super) fn error_reply(id: &RawValue, error: &Error, modern: bool) -> McpReply {
    let info = error.kind().info();
    McpReply::Json {
        status: if modern {
            info.mcp_status
        } else {
            info.mcp_legacy_status
        },
        body: error_body(id, &error.to_mcp()),
    }
}

impl McpBridge {
    /// Answer one JSON-RPC message (see the module docs of [`crate::mcp`]) with the
    /// definitions served when it arrives.
    pub async fn handle(&self, request: McpRequest<'_>) -> McpReply {
        self.current().answer(request, None).await
    }

    /// [`handle`](Self::handle), a task listing covering `share` (bridges sharing the agents'
    /// partitions: `http::forward`'s fan-out).
    pub(crate) async fn handle_in(
        &self,
        request: McpRequest<'_>,
        share: Option<super::ListShare>,
    ) -> McpReply {
        self.current().answer(request, share.as_ref()).await
    }

    async fn answer(&self, request: McpRequest<'_>, share: Option<&super::ListShare>) -> McpReply {
        let parsed = match parse_request(request.body) {
            Ok(parsed) => parsed,
            // A client's response to a request relayed on a call's stream (`super::relay`).
            Err(_) if let Some(response) = super::relay::ClientResponse::of(request.body) => {
                return match self.take_response(&request.caller, response).await {
                    Ok(()) => McpReply::Accepted,
                    Err(error) => error_reply(&null_id(), &error, false),
                };
            }
            Err(bad) => {
                let error = json!({"code": bad.error.code.code(), "message": bad.error.message});
                return McpReply::Json {
                    status: 400,
                    body: error_body(&bad.id, &error),
                };
            }
        };
        let id = parsed.id;
        let params: Option<Map<String, Value>> = match parsed.params {
            None => None,
            Some(raw) => match serde_json::from_str(raw.get()) {
                Ok(params) => Some(params),
                Err(_) => {
                    let error = Error::new(ErrorKind::InvalidParams, "params must be an object");
                    return error_reply(id, &error, false);
                }
            },
        };
        let era = match Era::of(params.as_ref()) {
            Ok(era) => era,
            Err(e) => {
                let error = Error::new(ErrorKind::InvalidParams, e).with_detail("field", "_meta");
                return error_reply(id, &error, true);
            }
        };
        if let Err(error) = check_version_and_headers(
            &era,
            &parsed.method,
            params.as_ref(),
            request.headers.as_ref(),
        ) {
            // These refusals are the modern transport's: its statuses (400) apply.
            return error_reply(id, &error, true);
        }
        // A context the transport carried (its headers, or a handler's turn calling in
        // process) is the call's own; else the one in `params._meta`, MCP's carrier.
        let meta = match crate::telemetry::carried() {
            Some(_) => None,
            None => trace_in_meta(params.as_ref()),
        };
        let answered = self.answer_checked(&request, &parsed, params, era, share);
        match meta {
            Some(context) => crate::telemetry::carrying(Some(context), answered).await,
            None => answered.await,
        }
    }

    /// [`answer`](Self::answer) once the request parsed and passed the era's checks.
    async fn answer_checked(
        &self,
        request: &McpRequest<'_>,
        parsed: &agentlog_wire::jsonrpc::Request<'_>,
        params: Option<Map<String, Value>>,
        era: Era,
        share: Option<&super::ListShare>,
    ) -> McpReply {
        let id = parsed.id;
        let modern = era.is_modern();
        if parsed.method.starts_with("notifications/") {
            // Notifications have no answer. A modern call is cancelled by its client going
            // away, a task by tasks/cancel; a legacy sync call by this notification.
            if parsed.method == "notifications/cancelled" && !modern {
                // On a task of its own, not awaited: a client that goes away before the 202
                // (as one closing right after its cancel does) must not drop the cancel, and
                // one waiting for the 202 need not wait for the call to be found.
                let (bridge, caller) = (self.clone(), request.caller.clone());
                let cancel = async move { bridge.cancel_request(&caller, params.as_ref()).await };
                tokio::spawn(crate::telemetry::current().bind(cancel));
            }
            return McpReply::Accepted;
        }
        let ctx = Ctx {
            id,
            method: &parsed.method,
            caller: &request.caller,
            era,
            accepts_stream: request.accepts_stream,
            headers: request.headers.as_ref(),
            share,
        };
        let result = match parsed.method.as_ref() {
            "server/discover" => Ok(self.discover()),
            "initialize" if !modern => Ok(self.initialize(params.as_ref())),
            "ping" if !modern => Ok(Map::new()),
            "logging/setLevel" if !modern => set_level(params.as_ref()),
            "tools/list" => self.list_tools(params.as_ref(), modern),
            "resources/list" => self.list_resources(&ctx, params.as_ref()).await,
            "resources/templates/list" => self.list_resource_templates(params.as_ref(), modern),
            "resources/read" => match self.resource_call(params.as_ref()) {
                // A template a worker answers (`super::served`).
                Some(raw) => {
                    let call = serde_json::from_str(&raw).ok();
                    return self.call_tool(&ctx, &raw, call).await;
                }
                None => self.read_resource(&ctx, params.as_ref()).await,
            },
            // Legacy: 2026-07-28 subscribes through subscriptions/listen.
            "resources/subscribe" if !modern => {
                self.change_subscription(&ctx, params.as_ref(), true).await
            }
            "resources/unsubscribe" if !modern => {
                self.change_subscription(&ctx, params.as_ref(), false).await
            }
            "prompts/list" => self.list_prompts(params.as_ref(), modern),
            "prompts/get" if self.worker_prompt(params.as_ref()) => {
                return match self.prompt_call(params.as_ref().unwrap_or(&Map::new())) {
                    Ok(raw) => {
                        let call = serde_json::from_str(&raw).ok();
                        self.call_tool(&ctx, &raw, call).await
                    }
                    Err(error) => error_reply(id, &error, modern),
                };
            }
            "prompts/get" => self.get_prompt(params.as_ref()),
            "completion/complete" => match self.completion_call(params.as_ref()) {
                // A worker completes it (`super::served`).
                Some(raw) => {
                    let call = serde_json::from_str(&raw).ok();
                    return self.call_tool(&ctx, &raw, call).await;
                }
                None => self.complete(params.as_ref()),
            },
            "subscriptions/listen" if modern => return self.listen(&ctx, params.as_ref()).await,
            "tools/call" => {
                let raw = parsed.params.map(RawValue::get).unwrap_or("{}");
                return self.call_tool(&ctx, raw, params).await;
            }
            method if method.starts_with("tasks/") => {
                return match self.task_method(&ctx, method, params.as_ref()).await {
                    Ok(result) if modern => McpReply::Json {
                        status: 200,
                        body: success(id, &self.modern_result(result, "complete")),
                    },
                    Ok(result) => McpReply::Json {
                        status: 200,
                        body: success(id, &result),
                    },
                    Err(error) => error_reply(id, &error, modern),
                };
            }
            method => Err(Error::new(
                ErrorKind::MethodNotFound,
                format!("Method not found: {method}"),
            )
            .with_detail("method", method)),
        };
        match result {
            Ok(result) if modern => McpReply::Json {
                status: 200,
                body: success(id, &self.modern_result(result, "complete")),
            },
            Ok(result) => McpReply::Json {
                status: 200,
                body: success(id, &result),
            },
            Err(error) => error_reply(id, &error, modern),
        }
    }
}

/// The W3C trace context a request's `params._meta` carries (`traceparent`, `tracestate`:
/// the keys MCP reserves for it, SEP-414), if a valid one.
pub(crate) fn trace_in_meta(params: Option<&Map<String, Value>>) -> Option<TraceContext> {
    let meta = params?.get("_meta")?.as_object()?;
    let parent = meta.get(TRACEPARENT)?.as_str()?;
    TraceContext::parse(parent, meta.get(TRACESTATE).and_then(Value::as_str))
}

/// The id of an answer to no request.
fn null_id() -> Box<RawValue> {
    RawValue::NULL.to_owned()
}

/// Legacy `logging/setLevel {level}`: the level checked, then `{}`. It would set a session's
/// level, and the bridge keeps no session, so legacy calls get every level (the spec lets a
/// server choose what to send when no level was set); a modern request asks its level in its
/// own `_meta` instead (this method is gone there: -32601).
fn set_level(params: Option<&Map<String, Value>>) -> Result<Map<String, Value>> {
    let level = params.and_then(|p| p.get("level"));
    match level
        .and_then(Value::as_str)
        .map(str::parse::<agentlog_wire::mcp::LoggingLevel>)
    {
        Some(Ok(_)) => Ok(Map::new()),
        Some(Err(e)) => Err(Error::new(ErrorKind::InvalidParams, e).with_detail("field", "level")),
        None => Err(
            Error::new(ErrorKind::InvalidParams, "logging/setLevel needs a level")
                .with_detail("field", "level"),
        ),
    }
}

/// The modern version must be one we serve and, over HTTP, every MCP header must match the
/// body; a legacy request's `MCP-Protocol-Version`, when sent, must be a legacy version.
fn check_version_and_headers(
    era: &Era,
    method: &str,
    params: Option<&Map<String, Value>>,
    headers: Option<&McpHeaders>,
) -> Result<()> {
    match era {
        Era::Modern { version, .. } => {
            let unsupported = || {
                Error::new(
                    ErrorKind::VersionNotSupported,
                    format!("Unsupported protocol version: {version}"),
                )
                .with_data(json!({"supported": [MODERN_VERSION], "requested": version}))
            };
            let Some(headers) = headers else {
                return if version == MODERN_VERSION {
                    Ok(())
                } else {
                    Err(unsupported())
                };
            };
            // The header first: a body disagreeing with its header is a mismatch (-32020),
            // whatever the version; both agreeing on one we do not serve is -32022.
            header_matches(
                "MCP-Protocol-Version",
                headers.protocol_version.as_deref(),
                version,
            )?;
            if version != MODERN_VERSION {
                return Err(unsupported());
            }
            header_matches("Mcp-Method", headers.method.as_deref(), method)?;
            let named = match method {
                "tools/call" | "prompts/get" => Some("name"),
                "resources/read" => Some("uri"),
                "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
                _ => None,
            };
            if let Some(member) = named {
                let expected = params
                    .and_then(|p| p.get(member))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                header_matches("Mcp-Name", headers.name.as_deref(), expected)?;
            }
            Ok(())
        }
        // A version header that is no legacy one, on a request without the modern `_meta`:
        // a modern request missing what it must carry (or a version we do not know).
        Era::Legacy => match headers.and_then(|h| h.protocol_version.as_deref()) {
            Some(version) if method != "initialize" && !is_legacy_version(version) => {
                Err(missing_meta().with_detail("header", "MCP-Protocol-Version"))
            }
            _ if method == "server/discover" => Err(missing_meta()),
            _ => Ok(()),
        },
    }
}

fn missing_meta() -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        format!(
            "Invalid params: a {MODERN_VERSION} request carries params._meta with io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"
        ),
    )
    .with_detail("field", "_meta")
}

fn header_matches(header: &'static str, sent: Option<&str>, expected: &str) -> Result<()> {
    match sent {
        Some(value) if value == expected => Ok(()),
        Some(value) => Err(Error::new(
            ErrorKind::HeaderMismatch,
            format!("Header mismatch: {header} is {value:?}, the body says {expected:?}"),
        )
        .with_detail("header", header)),
        None => Err(Error::new(
            ErrorKind::HeaderMismatch,
            format!("Header mismatch: {header} is required (the body says {expected:?})"),
        )
        .with_detail("header", header)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use futures::StreamExt as _;

    #[tokio::test]
    async fn a_stream_reply_is_data_frames_and_each_reply_has_its_status() {
        let messages: McpStream = Box::pin(futures::stream::iter([
            br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#.to_vec(),
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec(),
        ]));
        let frames: Vec<Vec<u8>> = sse_frames(messages).collect().await;
        assert_eq!(
            frames,
            [
                b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n".to_vec(),
                b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n".to_vec(),
            ]
        );
        let json = McpReply::Json {
            status: 400,
            body: Vec::new(),
        };
        assert_eq!(
            (json.status(), json.content_type()),
            (400, Some("application/json"))
        );
        let accepted = McpReply::Accepted;
        assert_eq!((accepted.status(), accepted.content_type()), (202, None));
        let stream = McpReply::Stream(Box::pin(futures::stream::empty()));
        assert_eq!(
            (stream.status(), stream.content_type()),
            (200, Some("text/event-stream"))
        );
    }
}

#[cfg(test)]
mod trace_tests;
