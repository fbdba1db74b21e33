//! The transport-independent entry point of the bridge: a JSON-RPC body in and JSON-RPC out,
//! or a typed 1.0 [`Call`] in and its [`Answer`] out; both through one dispatch
//! ([`super::call`]).
//!
//! JSON-RPC dispatch follows the method name, as the official Python server does: PascalCase
//! names get 1.0 semantics and shapes, slash names (`message/send`, ...) get 0.3 ones through
//! the 0.3 codec. The `A2A-Version` value, when given, must be 1.0 or 0.3 (else -32009); a
//! missing value is accepted for both (the spec reads "missing" as 0.3, but the A2A TCK sends
//! none with 1.0 methods, so we are lenient). A typed call is 1.0: a version other than 1.0
//! is refused, a missing one accepted (a binding with its own rule applies it first).

use agentlog_wire::a2a;
use agentlog_wire::jsonrpc::{
    BadRequest, Method, Operation, ProtocolVersion, Request, error_body, parse_request,
    success_body,
};
use agentlog_wire::{WireError, v03};
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use super::Bridge;
use super::call::{Answer, Call, CallOptions};
use super::stream::TaskStream;
use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};

/// What to send back for one request.
#[derive(Debug)]
// Made and moved once per request: a box would only add an allocation to each.
#[allow(clippy::large_enum_variant)]
pub enum RpcReply {
    /// A complete JSON-RPC response body (`application/json`): every answer to a JSON-RPC
    /// body but a stream, including an error a streaming method found before its stream
    /// started (A2A §3.1.6: such an error is a plain JSON-RPC error response, not a stream).
    Json(Vec<u8>),
    /// A stream: each event becomes one JSON-RPC response carrying `id`.
    Stream(RpcStream),
    /// The answer to a typed call ([`RpcBody::Call`]), or why it failed; a JSON-RPC body
    /// never gets this.
    Answer(Result<Answer>),
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

/// What a request to [`Bridge::handle`] carries.
#[derive(Debug)]
// Made and moved once per request: a box would only add an allocation to each.
#[allow(clippy::large_enum_variant)]
pub enum RpcBody<'a> {
    /// A JSON-RPC body, parsed ([`parse_request`]), or why it does not parse: a transport that
    /// reads the method first (for metrics, or to know a stream is coming) parses it once.
    Json(std::result::Result<Request<'a>, BadRequest>),
    /// A typed A2A 1.0 call, from a binding that decoded its own wire format: answered with
    /// [`RpcReply::Answer`].
    Call(Call),
}

/// One request to [`Bridge::handle`]: a JSON-RPC body or a typed call, who sends it, and what
/// its transport knows besides (the sibling of `McpRequest`).
#[derive(Debug)]
#[non_exhaustive]
pub struct RpcRequest<'a> {
    /// The request itself.
    pub body: RpcBody<'a>,
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
    /// The W3C trace context the request came with (`traceparent`, `tracestate`): the
    /// records written for it carry it ([`trace`](super::trace)).
    pub trace: Option<agentlog_wire::trace::TraceContext>,
    /// A `ListTasks` over these partitions only, which the view holds or holds on demand: the
    /// share of one bridge in a fan-out over the bridges sharing the agent
    /// (`skills/a2a-bridge/partitions.md`). `None`: every partition the view holds.
    pub partitions: Option<Vec<u32>>,
}

impl<'a> RpcRequest<'a> {
    /// The JSON-RPC request in `body`, from `caller`, with nothing else known.
    pub fn new(body: &'a [u8], caller: Caller) -> Self {
        Self::parsed(parse_request(body), caller)
    }

    /// A JSON-RPC request whose body the transport parsed already.
    pub fn parsed(parsed: std::result::Result<Request<'a>, BadRequest>, caller: Caller) -> Self {
        Self::of(RpcBody::Json(parsed), caller)
    }

    /// A typed 1.0 call, answered with [`RpcReply::Answer`].
    pub fn call(call: Call, caller: Caller) -> Self {
        Self::of(RpcBody::Call(call), caller)
    }

    fn of(body: RpcBody<'a>, caller: Caller) -> Self {
        Self {
            body,
            caller,
            a2a_version: None,
            extensions: Vec::new(),
            resume_after: None,
            trace: None,
            partitions: None,
        }
    }

    /// Sets [`RpcRequest::partitions`].
    pub fn partitions(mut self, partitions: Option<Vec<u32>>) -> Self {
        self.partitions = partitions;
        self
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

    /// Sets [`RpcRequest::trace`].
    pub fn trace(mut self, context: Option<agentlog_wire::trace::TraceContext>) -> Self {
        self.trace = context;
        self
    }

    /// Sets [`RpcRequest::resume_after`].
    pub fn resume_after(mut self, position: Option<u64>) -> Self {
        self.resume_after = position;
        self
    }
}

impl Bridge {
    /// Answer one request ([`RpcRequest`]): the bridge's one entry, which the HTTP router, the
    /// gRPC binding and the language bindings call. Never fails: every problem becomes a
    /// JSON-RPC error, or for a typed call the [`RpcReply::Answer`]'s error.
    pub async fn handle(&self, request: RpcRequest<'_>) -> RpcReply {
        let RpcRequest {
            body,
            caller,
            a2a_version,
            extensions,
            resume_after,
            trace,
            partitions,
        } = request;
        let options = CallOptions {
            extensions: &extensions,
            resume_after,
            partitions: partitions.as_deref(),
        };
        let version = a2a_version.map(str::trim).filter(|v| !v.is_empty());
        let answer = async {
            match body {
                RpcBody::Call(call) => {
                    let served = version.is_none_or(|v| {
                        ProtocolVersion::from_header(v) == Some(ProtocolVersion::V1_0)
                    });
                    RpcReply::Answer(match (served, version) {
                        (false, Some(v)) => Err(version_not_supported(v, "it speaks 1.0")),
                        _ => self.dispatch(&caller, call, None, &options).await,
                    })
                }
                RpcBody::Json(parsed) => self.handle_json(&caller, parsed, version, &options).await,
            }
        };
        // A call without a context of its own, made by a handler's turn in this process (a
        // call to another agent's bridge), continues the turn's trace.
        let trace = trace.or_else(super::trace::current);
        // Under a span of its own, the records the call writes carry that span's context.
        let span = super::trace::request_span(&self.inner.config.topics.agent, trace.as_ref());
        let trace = span.trace_context(trace.as_ref()).or(trace);
        span.in_scope(super::trace::traced(trace, answer)).await
    }

    async fn handle_json(
        &self,
        caller: &Caller,
        parsed: std::result::Result<Request<'_>, BadRequest>,
        header: Option<&str>,
        options: &CallOptions<'_>,
    ) -> RpcReply {
        let header_version = match header {
            None => None,
            Some(v) => match ProtocolVersion::from_header(v) {
                Some(version) => Some(version),
                None => {
                    let id = match &parsed {
                        Ok(request) => request.id.to_owned(),
                        Err(bad) => bad.id.clone(),
                    };
                    let error = version_not_supported(v, "this server speaks 1.0 and 0.3");
                    return RpcReply::Json(error_body(&id, &error.to_rpc(), ProtocolVersion::V1_0));
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
            _ => match json_call(method, params) {
                Ok((call, raw)) => self.dispatch(caller, call, raw, options).await,
                Err(error) => Err(error),
            },
        };
        match result.and_then(|answer| encode(answer, version)) {
            Ok(Encoded::Json(value)) => RpcReply::Json(success_body(id, &value)),
            Ok(Encoded::Stream(events)) => RpcReply::Stream(RpcStream {
                id: id.to_owned(),
                version,
                events,
            }),
            Err(error) => RpcReply::Json(error_body(id, &error.to_rpc(), version)),
        }
    }
}

/// -32009 for an `A2A-Version` value not served; `served` says what is.
fn version_not_supported(version: &str, served: &str) -> Error {
    Error::new(
        ErrorKind::VersionNotSupported,
        format!("A2A-Version {version} is not supported; {served}"),
    )
    .with_detail("version", version)
}

/// The typed call a JSON-RPC method's params stand for, and the params' text when the
/// command record may carry it as received (a 1.0 send).
fn json_call(method: Method, params: Option<&str>) -> Result<(Call, Option<&str>)> {
    let v1 = method.version() == ProtocolVersion::V1_0;
    let operation = method.operation();
    let call = match operation {
        Operation::SendMessage | Operation::SendStreamingMessage => {
            let (request, raw) = if v1 {
                let raw = required(params)?;
                (
                    parse_v1::<a2a::SendMessageRequest>("SendMessageRequest", raw)?,
                    Some(raw),
                )
            } else {
                (parse_v03(params, v03::send_params_from_v03)?, None)
            };
            let call = match operation {
                Operation::SendMessage => Call::SendMessage(request),
                _ => Call::SendStreamingMessage(request),
            };
            return Ok((call, raw));
        }
        Operation::GetTask if v1 => Call::GetTask(parse_v1("GetTaskRequest", required(params)?)?),
        Operation::GetTask => Call::GetTask(parse_v03(params, v03::get_task_params_from_v03)?),
        Operation::CancelTask if v1 => {
            Call::CancelTask(parse_v1("CancelTaskRequest", required(params)?)?)
        }
        Operation::CancelTask => Call::CancelTask(parse_v03(params, v03::task_id_params_from_v03)?),
        Operation::ListTasks => {
            Call::ListTasks(parse_v1("ListTasksRequest", params.unwrap_or("{}"))?)
        }
        Operation::SubscribeToTask if v1 => {
            Call::SubscribeToTask(parse_v1("SubscribeToTaskRequest", required(params)?)?)
        }
        Operation::SubscribeToTask => {
            let r = parse_v03(params, v03::task_id_params_from_v03)?;
            Call::SubscribeToTask(a2a::SubscribeToTaskRequest {
                tenant: r.tenant,
                id: r.id,
            })
        }
        // 0.3's push params nest the config and name the task `id`; a config without an id
        // is the task's one (0.3's default config id is the task id).
        Operation::CreateTaskPushNotificationConfig if !v1 => {
            let mut config = parse_v03(params, v03::push_config_from_v03)?;
            if config.id.as_deref().is_none_or(str::is_empty) {
                config.id.clone_from(&config.task_id);
            }
            Call::CreateTaskPushNotificationConfig(config)
        }
        Operation::GetTaskPushNotificationConfig if !v1 => Call::GetTaskPushNotificationConfig(
            parse_v03(params, v03::push_config_id_params_from_v03)?,
        ),
        Operation::DeleteTaskPushNotificationConfig if !v1 => {
            let r = parse_v03(params, v03::push_config_id_params_from_v03)?;
            Call::DeleteTaskPushNotificationConfig(a2a::DeleteTaskPushNotificationConfigRequest {
                tenant: r.tenant,
                task_id: r.task_id,
                id: r.id,
            })
        }
        Operation::ListTaskPushNotificationConfigs if !v1 => Call::ListTaskPushNotificationConfigs(
            parse_v03(params, v03::list_push_configs_params_from_v03)?,
        ),
        Operation::CreateTaskPushNotificationConfig => Call::CreateTaskPushNotificationConfig(
            parse_v1("TaskPushNotificationConfig", required(params)?)?,
        ),
        Operation::GetTaskPushNotificationConfig => Call::GetTaskPushNotificationConfig(parse_v1(
            "GetTaskPushNotificationConfigRequest",
            required(params)?,
        )?),
        Operation::ListTaskPushNotificationConfigs => Call::ListTaskPushNotificationConfigs(
            parse_v1("ListTaskPushNotificationConfigsRequest", required(params)?)?,
        ),
        Operation::DeleteTaskPushNotificationConfig => Call::DeleteTaskPushNotificationConfig(
            parse_v1("DeleteTaskPushNotificationConfigRequest", required(params)?)?,
        ),
        // Its params hold a tenant at most; anything else in them is not looked at.
        Operation::GetExtendedAgentCard => Call::GetExtendedAgentCard {
            tenant: params
                .and_then(|raw| serde_json::from_str::<TenantOnly>(raw).ok())
                .and_then(|p| p.tenant),
        },
    };
    Ok((call, None))
}

#[derive(serde::Deserialize)]
struct TenantOnly {
    #[serde(default)]
    tenant: Option<String>,
}

/// An answer in JSON-RPC's terms.
enum Encoded {
    /// The result, encoded once, straight into the body.
    Json(Box<RawValue>),
    Stream(TaskStream),
}

/// `answer` as the `result` of a method of `version`.
fn encode(answer: Answer, version: ProtocolVersion) -> Result<Encoded> {
    let v1 = version == ProtocolVersion::V1_0;
    match answer {
        Answer::Stream(events) => Ok(Encoded::Stream(events)),
        Answer::Send(response) if v1 => json(&response),
        Answer::Send(response) => json(&v03::send_response_to_v03(&response)),
        Answer::Task(task) if v1 => json(&task),
        Answer::Task(task) => json(&v03::task_to_v03(&task)),
        Answer::Tasks(page) => json(&page),
        Answer::Card(card) => json(&card),
        Answer::PushConfig(config) if v1 => json(&config),
        Answer::PushConfig(config) => json(&v03::push_config_to_v03(&config)),
        Answer::PushConfigs(page) if v1 => json(&page),
        // 0.3 lists a bare array.
        Answer::PushConfigs(page) => json(
            &page
                .configs
                .iter()
                .map(v03::push_config_to_v03)
                .collect::<Vec<_>>(),
        ),
        Answer::Deleted if v1 => json(&serde_json::Map::new()),
        Answer::Deleted => json(&Value::Null),
    }
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<Encoded> {
    serde_json::value::to_raw_value(value)
        .map(Encoded::Json)
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
