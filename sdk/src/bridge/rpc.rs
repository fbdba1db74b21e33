//! JSON-RPC in, JSON-RPC out: the transport-independent entry point of the bridge.
//!
//! Dispatch follows the method name, as the official Python server does: PascalCase names get
//! 1.0 semantics and shapes, slash names (`message/send`, ...) get 0.3 ones through the 0.3
//! codec. The `A2A-Version` value, when given, must be 1.0 or 0.3 (else -32009); a missing
//! value is accepted for both (the spec reads "missing" as 0.3, but the A2A TCK sends none
//! with 1.0 methods, so we are lenient).

use agentlog_wire::a2a;
use agentlog_wire::jsonrpc::{
    BadRequest, Method, Operation, ProtocolVersion, Request, error_body, parse_request,
    success_body,
};
use agentlog_wire::{ErrorCode, RpcError, WireError, v03};
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use super::Bridge;
use super::stream::TaskStream;
use super::tenant;
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};

/// What to send back for one JSON-RPC request.
#[derive(Debug)]
pub enum RpcReply {
    /// A complete JSON-RPC response body (`application/json`): every answer but a stream,
    /// including an error a streaming method found before its stream started (A2A §3.1.6:
    /// such an error is a plain JSON-RPC error response, not a stream).
    Json(Vec<u8>),
    /// A stream: each event becomes one JSON-RPC response carrying `id`.
    Stream(RpcStream),
}

/// A streaming answer and what is needed to frame its events.
pub struct RpcStream {
    /// The request id, echoed in every frame.
    pub id: Box<RawValue>,
    /// The protocol version of the method (decides the event shape).
    pub version: ProtocolVersion,
    /// The events.
    pub events: TaskStream,
}

impl std::fmt::Debug for RpcStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcStream")
            .field("id", &self.id)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl RpcStream {
    /// The JSON-RPC response body framing one stream event (or a mid-stream error).
    pub fn frame(&self, event: &Result<super::StreamEvent>) -> Vec<u8> {
        match event {
            Ok(event) => match self.version {
                ProtocolVersion::V1_0 => success_body(&self.id, &event.response),
                ProtocolVersion::V0_3 => success_body(
                    &self.id,
                    &v03::stream_response_to_v03(&event.response, event.last),
                ),
            },
            Err(e) => error_body(&self.id, &e.to_rpc(), self.version),
        }
    }

    /// One stream event as a whole Server-Sent Events frame, as the HTTP router sends it:
    /// `id: <log position>` and `data: <`[`frame`](Self::frame)`>`, or for a mid-stream error
    /// `event: error` and its data. For hosts that serve SSE themselves (the bindings).
    pub fn sse_frame(&self, event: &Result<super::StreamEvent>) -> Vec<u8> {
        // The JSON bodies are compact (no newline), so each is one `data:` line.
        let data = self.frame(event);
        let mut out = match event {
            Ok(event) => format!("id: {}\ndata: ", event.position).into_bytes(),
            Err(_) => b"event: error\ndata: ".to_vec(),
        };
        out.extend_from_slice(&data);
        out.extend_from_slice(b"\n\n");
        out
    }

    /// The stream as whole SSE frames ([`sse_frame`](Self::sse_frame)), ending after an
    /// error frame or the event marked `last`: what a binding's `handle_rpc` hands out, the
    /// same shape as an MCP stream's ([`crate::mcp::sse_frames`]).
    pub fn into_sse_frames(self) -> SseFrames {
        let RpcStream {
            id,
            version,
            events,
        } = self;
        let framing = RpcStream {
            id,
            version,
            events: Box::pin(futures::stream::empty()),
        };
        Box::pin(futures::stream::unfold(
            Some((framing, events)),
            |state| async move {
                let (framing, mut events) = state?;
                let event = futures::StreamExt::next(&mut events).await?;
                let frame = framing.sse_frame(&event);
                let more = event.as_ref().is_ok_and(|e| !e.last);
                Some((frame, more.then_some((framing, events))))
            },
        ))
    }
}

/// A stream of whole SSE frames (`id:`/`event:`/`data:` lines and the blank line), ready to
/// write to a `text/event-stream` response.
pub type SseFrames = std::pin::Pin<Box<dyn futures::Stream<Item = Vec<u8>> + Send>>;

/// One request to [`Bridge::handle`]: a JSON-RPC body, who sends it, and what its transport
/// knows besides (the sibling of `McpRequest`).
#[derive(Debug)]
#[non_exhaustive]
pub struct RpcRequest<'a> {
    /// The body, parsed ([`parse_request`]), or why it does not parse: a transport that reads
    /// the method first (for metrics, or to know a stream is coming) parses it once, here.
    pub parsed: std::result::Result<Request<'a>, BadRequest>,
    /// Who calls (edge auth's, or anonymous).
    pub caller: Caller,
    /// The request's `A2A-Version` value, if it had one.
    pub a2a_version: Option<&'a str>,
    /// The extension URIs the request activates (its `A2A-Extensions` header; see
    /// [`extensions`](super::extensions)).
    pub extensions: Vec<String>,
    /// An SSE `Last-Event-ID`: a streaming method continues right after that log position
    /// instead of starting with a snapshot.
    pub resume_after: Option<u64>,
}

impl<'a> RpcRequest<'a> {
    /// The request in `body`, from `caller`, with nothing else known.
    pub fn new(body: &'a [u8], caller: Caller) -> Self {
        Self::parsed(parse_request(body), caller)
    }

    /// A request whose body the transport parsed already.
    pub fn parsed(parsed: std::result::Result<Request<'a>, BadRequest>, caller: Caller) -> Self {
        Self {
            parsed,
            caller,
            a2a_version: None,
            extensions: Vec::new(),
            resume_after: None,
        }
    }

    /// Sets [`RpcRequest::a2a_version`].
    pub fn a2a_version(mut self, version: Option<&'a str>) -> Self {
        self.a2a_version = version;
        self
    }

    /// Sets [`RpcRequest::extensions`].
    pub fn extensions(mut self, extensions: Vec<String>) -> Self {
        self.extensions = extensions;
        self
    }

    /// Sets [`RpcRequest::resume_after`].
    pub fn resume_after(mut self, position: Option<u64>) -> Self {
        self.resume_after = position;
        self
    }
}

/// What the methods need of a request besides its params.
struct RpcOptions<'a> {
    extensions: &'a [String],
    resume_after: Option<u64>,
}

impl Bridge {
    /// Add the extensions `options` activates that the card declares to the request's
    /// message, so the record carries them to the handler. The raw params stay the record's
    /// params unless that changed the message (then the request is encoded again).
    fn activate<'r>(
        &self,
        request: &mut a2a::SendMessageRequest,
        options: &RpcOptions<'_>,
        raw: Option<&'r str>,
    ) -> Option<&'r str> {
        let card = &self.inner.config.card;
        if super::extensions::activate(card, &mut request.message, options.extensions) {
            None
        } else {
            raw
        }
    }

    /// Answer one JSON-RPC request ([`RpcRequest`]): the bridge's one entry, which the HTTP
    /// router and the language bindings call. Never fails: every problem becomes a JSON-RPC
    /// error.
    pub async fn handle(&self, request: RpcRequest<'_>) -> RpcReply {
        let RpcRequest {
            parsed,
            caller,
            a2a_version,
            extensions,
            resume_after,
        } = request;
        let options = RpcOptions {
            extensions: &extensions,
            resume_after,
        };
        let caller = &caller;
        let options = &options;
        let header_version = match a2a_version.map(str::trim).filter(|v| !v.is_empty()) {
            None => None,
            Some(v) => match ProtocolVersion::from_header(v) {
                Some(version) => Some(version),
                None => {
                    let id = match &parsed {
                        Ok(request) => request.id.to_owned(),
                        Err(bad) => bad.id.clone(),
                    };
                    let error = RpcError::with_message(
                        ErrorCode::VersionNotSupported,
                        format!("A2A-Version {v} is not supported; this server speaks 1.0 and 0.3"),
                    )
                    .with_meta("version", v);
                    return RpcReply::Json(error_body(&id, &error, ProtocolVersion::V1_0));
                }
            },
        };
        let request = match parsed {
            Ok(request) => request,
            Err(bad) => {
                let version = header_version.unwrap_or(ProtocolVersion::V1_0);
                return RpcReply::Json(error_body(&bad.id, &bad.error, version));
            }
        };
        let method = match request.method() {
            Ok(method) => method,
            Err(error) => {
                let version = header_version.unwrap_or(ProtocolVersion::V1_0);
                return RpcReply::Json(error_body(request.id, &error, version));
            }
        };
        let version = method.version();
        let id = request.id;
        let params = request.params.map(RawValue::get);
        let result = match params.map(str::trim_start) {
            // JSON-RPC allows positional params; every A2A method names its params.
            Some(raw) if raw.starts_with('[') => Err(Error::new(
                ErrorKind::InvalidParams,
                "Invalid parameters: params must be an object (A2A methods take named params)",
            )
            .with_detail("field", "params")),
            _ => self.dispatch(caller, method, params, options).await,
        };
        match result {
            Ok(Answer::Json(value)) => RpcReply::Json(success_body(id, &value)),
            Ok(Answer::Stream(events)) => RpcReply::Stream(RpcStream {
                id: id.to_owned(),
                version,
                events,
            }),
            Err(error) => RpcReply::Json(error_body(id, &error.to_rpc(), version)),
        }
    }

    async fn dispatch(
        &self,
        caller: &Caller,
        method: Method,
        params: Option<&str>,
        options: &RpcOptions<'_>,
    ) -> Result<Answer> {
        let resume_after = options.resume_after;
        let v1 = method.version() == ProtocolVersion::V1_0;
        match method.operation() {
            Operation::SendMessage => {
                if v1 {
                    let raw = required(params)?;
                    let mut request =
                        parse_v1::<a2a::SendMessageRequest>("SendMessageRequest", raw)?;
                    let caller = &tenant::scoped(caller, request.tenant.as_deref())?;
                    let raw = self.activate(&mut request, options, Some(raw));
                    let response = self.send_message_raw(caller, request, raw).await?;
                    json(&response)
                } else {
                    let mut request = parse_v03(params, v03::send_params_from_v03)?;
                    let caller = &tenant::scoped(caller, request.tenant.as_deref())?;
                    self.activate(&mut request, options, None);
                    let response = self.send_message_raw(caller, request, None).await?;
                    json(&v03::send_response_to_v03(&response))
                }
            }
            Operation::SendStreamingMessage => {
                let (mut request, raw) = if v1 {
                    let raw = required(params)?;
                    (
                        parse_v1::<a2a::SendMessageRequest>("SendMessageRequest", raw)?,
                        Some(raw),
                    )
                } else {
                    (parse_v03(params, v03::send_params_from_v03)?, None)
                };
                let caller = &tenant::scoped(caller, request.tenant.as_deref())?;
                let raw = self.activate(&mut request, options, raw);
                Ok(Answer::Stream(
                    self.send_streaming_message(caller, request, raw, resume_after)
                        .await?,
                ))
            }
            Operation::GetTask => {
                let request = if v1 {
                    parse_v1::<a2a::GetTaskRequest>("GetTaskRequest", required(params)?)?
                } else {
                    parse_v03(params, v03::get_task_params_from_v03)?
                };
                let caller = &tenant::scoped(caller, request.tenant.as_deref())?;
                let task = self.get_task(caller, request).await?;
                if v1 {
                    json(&task)
                } else {
                    json(&v03::task_to_v03(&task))
                }
            }
            Operation::CancelTask => {
                let request = if v1 {
                    parse_v1::<a2a::CancelTaskRequest>("CancelTaskRequest", required(params)?)?
                } else {
                    parse_v03(params, v03::task_id_params_from_v03)?
                };
                let caller = &tenant::scoped(caller, request.tenant.as_deref())?;
                let task = self.cancel_task(caller, request).await?;
                if v1 {
                    json(&task)
                } else {
                    json(&v03::task_to_v03(&task))
                }
            }
            Operation::ListTasks => {
                let request = match params {
                    Some(raw) => parse_v1::<a2a::ListTasksRequest>("ListTasksRequest", raw)?,
                    None => parse_v1::<a2a::ListTasksRequest>("ListTasksRequest", "{}")?,
                };
                let caller = &tenant::scoped(caller, request.tenant.as_deref())?;
                json(&self.list_tasks(caller, request).await?)
            }
            Operation::SubscribeToTask => {
                let request = if v1 {
                    parse_v1::<a2a::SubscribeToTaskRequest>(
                        "SubscribeToTaskRequest",
                        required(params)?,
                    )?
                } else {
                    let r = parse_v03(params, v03::task_id_params_from_v03)?;
                    a2a::SubscribeToTaskRequest {
                        tenant: r.tenant,
                        id: r.id,
                    }
                };
                let caller = &tenant::scoped(caller, request.tenant.as_deref())?;
                Ok(Answer::Stream(
                    self.subscribe_to_task(caller, request, resume_after)
                        .await?,
                ))
            }
            Operation::CreateTaskPushNotificationConfig
            | Operation::GetTaskPushNotificationConfig
            | Operation::ListTaskPushNotificationConfigs
            | Operation::DeleteTaskPushNotificationConfig => Err(Error::new(
                ErrorKind::PushNotificationNotSupported,
                "Push notifications are not supported by this agent",
            )),
            Operation::GetExtendedAgentCard => json(&self.extended_card(caller)?),
        }
    }
}

enum Answer {
    /// The result, already encoded (so it is serialized once, straight into the body).
    Json(Box<RawValue>),
    Stream(TaskStream),
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<Answer> {
    serde_json::value::to_raw_value(value)
        .map(Answer::Json)
        .map_err(|e| Error::new(ErrorKind::Internal, "cannot encode the result").with_source(e))
}

fn required(params: Option<&str>) -> Result<&str> {
    params.ok_or_else(|| {
        Error::new(ErrorKind::InvalidParams, "params are required").with_detail("field", "params")
    })
}

fn invalid_params(e: WireError) -> Error {
    Error::new(ErrorKind::InvalidParams, format!("Invalid parameters: {e}"))
}

fn parse_v1<T: DeserializeOwned>(what: &'static str, raw: &str) -> Result<T> {
    a2a::from_slice(what, raw.as_bytes()).map_err(invalid_params)
}

fn parse_v03<T>(
    params: Option<&str>,
    decode: fn(&Value) -> std::result::Result<T, WireError>,
) -> Result<T> {
    let value: Value = serde_json::from_str(required(params)?)
        .map_err(|e| Error::new(ErrorKind::InvalidParams, format!("Invalid parameters: {e}")))?;
    decode(&value).map_err(invalid_params)
}
