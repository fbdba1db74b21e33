//! `Bridge`: the A2A verbs over a log, values in the A2A 1.0 JSON shape; streams as classes
//! with an async `next()` that `index.js` makes async-iterable.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agentlog::Caller as SdkCaller;
use agentlog::bridge::json::{from_params, to_json};
use agentlog::bridge::{
    Bridge as SdkBridge, BridgeConfig, PulledStream, RpcReply, RpcRequest, SseFrames, TaskStream,
    card_from_file, card_from_json, default_card,
};
use agentlog::telemetry::carrying;
use agentlog_wire::trace::TraceContext;
use futures::StreamExt;
use napi::Env;
use napi::bindgen_prelude::{Buffer, Either, PromiseRaw};
use napi_derive::napi;
use serde_json::Value;
use tokio::sync::Mutex;

use crate::convert::from_js;
use crate::error::{OrThrow, invalid};
use crate::log::Log;
use crate::trace::TraceCarrier;

/// Who is calling: the owner of the tasks a call creates and sees. Leave it out for the
/// anonymous caller.
#[napi(object)]
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// Who (empty or left out: anonymous).
    pub principal: Option<String>,
    /// Which tenant (empty or left out: the default one).
    pub tenant: Option<String>,
}

impl Caller {
    pub(crate) fn of(caller: Option<Caller>) -> SdkCaller {
        let caller = caller.unwrap_or_default();
        SdkCaller {
            principal: caller.principal.unwrap_or_default(),
            tenant: caller.tenant.unwrap_or_default(),
        }
    }

    pub(crate) fn from_sdk(caller: &SdkCaller) -> Caller {
        Caller {
            principal: Some(caller.principal.clone()),
            tenant: Some(caller.tenant.clone()),
        }
    }
}

/// How a bridge is opened.
#[napi(object)]
#[derive(Debug)]
pub struct BridgeOptions {
    /// The agent card: an object in the A2A 1.0 `AgentCard` shape (any subset, laid over the
    /// defaults), or the path of a JSON file holding one. Default: a minimal card.
    #[napi(ts_type = "Partial<AgentCard> | string")]
    pub card: Option<Value>,
    /// How long a blocking `sendMessage` waits for the task to finish or ask for input
    /// before it answers with the task as it is. Default 60 000 ms.
    pub blocking_timeout_ms: Option<f64>,
    /// How long the tasks this bridge creates stay answerable once finished (0: forever).
    /// Default: the log URL's `retention=`, else 7 days.
    pub retention_ms: Option<f64>,
}

/// Options of a typed verb.
#[napi(object)]
#[derive(Debug)]
pub struct CallOptions {
    /// Who is calling (default: anonymous).
    pub caller: Option<Caller>,
    /// Internal, set by index.js (callers leave it out): the calling handler's turn's W3C
    /// trace context, which the call carries on when it has no context of its own.
    #[napi(js_name = "_trace")]
    pub trace: Option<TraceCarrier>,
}

/// Options of a streaming verb.
#[napi(object)]
#[derive(Debug)]
pub struct StreamOptions {
    /// Who is calling (default: anonymous).
    pub caller: Option<Caller>,
    /// Continue right after this log position (an event's `position`) instead of starting
    /// with a snapshot.
    pub resume_after: Option<i64>,
    /// Internal, set by index.js (callers leave it out): the calling handler's turn's W3C
    /// trace context, which the call carries on when it has no context of its own.
    #[napi(js_name = "_trace")]
    pub trace: Option<TraceCarrier>,
}

/// What a transport knows about a JSON-RPC request besides its body.
#[napi(object)]
#[derive(Debug)]
pub struct RpcCallOptions {
    /// Who is calling (default: anonymous).
    pub caller: Option<Caller>,
    /// The request's `A2A-Version` header.
    pub version: Option<String>,
    /// The extension URIs the request activates (its `A2A-Extensions` header).
    pub extensions: Option<Vec<String>>,
    /// An SSE `Last-Event-ID`: a streaming method continues right after that position.
    pub resume_after: Option<i64>,
    /// The request's W3C trace context: an object holding its `traceparent` and
    /// `tracestate` (its headers, or an OpenTelemetry carrier; other keys are ignored). It
    /// is the caller's, before a calling handler's turn's; a bad one is ignored.
    pub trace: Option<HashMap<String, String>>,
    /// Internal, set by index.js (callers leave it out): the calling handler's turn's W3C
    /// trace context, which the call carries on when it has no context of its own.
    #[napi(js_name = "_trace")]
    pub turn: Option<TraceCarrier>,
}

impl CallOptions {
    /// The caller and the trace context of a typed verb's options.
    fn split(options: Option<CallOptions>) -> (SdkCaller, Option<TraceContext>) {
        match options {
            Some(o) => (Caller::of(o.caller), TraceCarrier::context(o.trace)),
            None => (SdkCaller::anonymous(), None),
        }
    }
}

pub(crate) fn millis(value: Option<f64>, what: &str) -> napi::Result<Option<Duration>> {
    value
        .map(|ms| {
            Duration::try_from_secs_f64(ms / 1000.0).map_err(|_| {
                invalid(format!(
                    "{what} must be a number of milliseconds >= 0, got {ms}"
                ))
            })
        })
        .transpose()
}

fn position(value: Option<i64>) -> napi::Result<Option<u64>> {
    value
        .map(|p| {
            u64::try_from(p).map_err(|_| invalid(format!("resumeAfter must be >= 0, got {p}")))
        })
        .transpose()
}

/// Open the bridge of `agent` over `log`: create its topics if needed and replay them
/// (`Bridge.open` in index.js).
#[napi(ts_return_type = "Promise<Bridge>")]
pub fn open_bridge<'env>(
    env: &'env Env,
    log: &Log,
    agent: String,
    options: Option<BridgeOptions>,
) -> napi::Result<PromiseRaw<'env, Bridge>> {
    let mut config = BridgeConfig::new(&agent);
    if let Some(options) = options {
        (config.card, config.skill_schemas) = match options.card {
            None | Some(Value::Null) => (default_card(&agent), Default::default()),
            Some(Value::String(path)) => {
                let path = std::path::Path::new(&path);
                (
                    card_from_file(&agent, path).or_throw()?,
                    agentlog::bridge::skill_schemas_from_file(path).or_throw()?,
                )
            }
            Some(fields) => {
                let fields = from_js(fields);
                (
                    card_from_json(&agent, &fields).or_throw()?,
                    agentlog::bridge::skill_schemas_from_json(&fields).or_throw()?,
                )
            }
        };
        if let Some(timeout) = millis(options.blocking_timeout_ms, "blockingTimeoutMs")? {
            config.blocking_timeout = timeout;
        }
        config.retention = millis(options.retention_ms, "retentionMs")?;
    }
    let log = log.inner.clone();
    env.spawn_future(async move {
        let inner = SdkBridge::open(log, config).await.or_throw()?;
        Ok(Bridge { inner })
    })
}

/// The A2A bridge of one agent over a log: calls become records, answers are folds.
#[napi]
#[derive(Debug, Clone)]
pub struct Bridge {
    pub(crate) inner: SdkBridge,
}

#[napi]
impl Bridge {
    /// The agent's name.
    #[napi(getter)]
    pub fn agent(&self) -> String {
        self.inner.config().topics.agent.clone()
    }

    /// The agent card (A2A 1.0 JSON).
    #[napi(getter, ts_return_type = "AgentCard")]
    pub fn agent_card(&self) -> napi::Result<Value> {
        to_json(self.inner.agent_card()).or_throw()
    }

    /// `SendMessage`: a `SendMessageRequest` in, `{task}` or `{message}` out.
    #[napi(
        ts_args_type = "request: SendMessageRequest, options?: CallOptions",
        ts_return_type = "Promise<SendMessageResponse>"
    )]
    pub async fn send_message(
        &self,
        request: Value,
        options: Option<CallOptions>,
    ) -> napi::Result<Value> {
        let (caller, trace) = CallOptions::split(options);
        let request = from_params("SendMessageRequest", &from_js(request)).or_throw()?;
        let response = carrying(trace, self.inner.send_message(&caller, request))
            .await
            .or_throw()?;
        to_json(&response).or_throw()
    }

    /// `GetTask`: a `GetTaskRequest` (`{id, historyLength?}`) in, the task out.
    #[napi(
        ts_args_type = "request: GetTaskRequest, options?: CallOptions",
        ts_return_type = "Promise<Task>"
    )]
    pub async fn get_task(
        &self,
        request: Value,
        options: Option<CallOptions>,
    ) -> napi::Result<Value> {
        let (caller, trace) = CallOptions::split(options);
        let request = from_params("GetTaskRequest", &from_js(request)).or_throw()?;
        to_json(
            &carrying(trace, self.inner.get_task(&caller, request))
                .await
                .or_throw()?,
        )
        .or_throw()
    }

    /// `CancelTask`: a `CancelTaskRequest` (`{id}`) in, the canceled task out.
    #[napi(
        ts_args_type = "request: CancelTaskRequest, options?: CallOptions",
        ts_return_type = "Promise<Task>"
    )]
    pub async fn cancel_task(
        &self,
        request: Value,
        options: Option<CallOptions>,
    ) -> napi::Result<Value> {
        let (caller, trace) = CallOptions::split(options);
        let request = from_params("CancelTaskRequest", &from_js(request)).or_throw()?;
        to_json(
            &carrying(trace, self.inner.cancel_task(&caller, request))
                .await
                .or_throw()?,
        )
        .or_throw()
    }

    /// `ListTasks`: a `ListTasksRequest` (filters, paging; all optional) in, a page out.
    #[napi(
        ts_args_type = "request?: ListTasksRequest | null, options?: CallOptions",
        ts_return_type = "Promise<ListTasksResponse>"
    )]
    pub async fn list_tasks(
        &self,
        request: Option<Value>,
        options: Option<CallOptions>,
    ) -> napi::Result<Value> {
        let (caller, trace) = CallOptions::split(options);
        let request = match request {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(request) => from_js(request),
        };
        let request = from_params("ListTasksRequest", &request).or_throw()?;
        to_json(
            &carrying(trace, self.inner.list_tasks(&caller, request))
                .await
                .or_throw()?,
        )
        .or_throw()
    }

    /// `SendStreamingMessage`: the task's events (`{position, last, event}`) until it
    /// finishes or asks for input. The stream opens at the first `next()`; errors
    /// (a refused message, ...) reject it.
    #[napi(ts_args_type = "request: SendMessageRequest, options?: StreamOptions")]
    pub fn send_streaming_message(
        &self,
        request: Value,
        options: Option<StreamOptions>,
    ) -> napi::Result<EventStream> {
        let (caller, resume_after, trace) = match options {
            Some(o) => (
                Caller::of(o.caller),
                position(o.resume_after)?,
                TraceCarrier::context(o.trace),
            ),
            None => (SdkCaller::anonymous(), None, None),
        };
        let request = from_js(request);
        let bridge = self.inner.clone();
        Ok(EventStream::new(trace, async move {
            let request = from_params("SendMessageRequest", &request)?;
            bridge
                .send_streaming_message(&caller, request, None, resume_after)
                .await
        }))
    }

    /// `SubscribeToTask`: the task's events until it is terminal (through interruptions).
    #[napi(ts_args_type = "request: SubscribeToTaskRequest, options?: StreamOptions")]
    pub fn subscribe_to_task(
        &self,
        request: Value,
        options: Option<StreamOptions>,
    ) -> napi::Result<EventStream> {
        let (caller, resume_after, trace) = match options {
            Some(o) => (
                Caller::of(o.caller),
                position(o.resume_after)?,
                TraceCarrier::context(o.trace),
            ),
            None => (SdkCaller::anonymous(), None, None),
        };
        let request = from_js(request);
        let bridge = self.inner.clone();
        Ok(EventStream::new(trace, async move {
            let request = from_params("SubscribeToTaskRequest", &request)?;
            bridge
                .subscribe_to_task(&caller, request, resume_after)
                .await
        }))
    }

    /// Answer a JSON-RPC request body: the response body, or for a streaming method the SSE
    /// frames (each a whole `id:`/`data:` frame). Never rejects for a bad request: every
    /// problem is a JSON-RPC error in the body.
    #[napi(ts_return_type = "Promise<Buffer | RpcFrames>")]
    pub async fn handle_rpc(
        &self,
        body: Either<String, Buffer>,
        options: Option<RpcCallOptions>,
    ) -> napi::Result<Either<Buffer, RpcFrames>> {
        let body: Vec<u8> = match body {
            Either::A(text) => text.into_bytes(),
            Either::B(buffer) => buffer.to_vec(),
        };
        let (caller, version, extensions, resume_after, trace, turn) = match options {
            Some(o) => (
                Caller::of(o.caller),
                o.version,
                o.extensions.unwrap_or_default(),
                position(o.resume_after)?,
                o.trace.as_ref().and_then(|pairs| {
                    TraceContext::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                }),
                TraceCarrier::context(o.turn),
            ),
            None => (SdkCaller::anonymous(), None, Vec::new(), None, None, None),
        };
        // The request's own context; without one the SDK takes the carried turn's.
        let request = RpcRequest::new(&body, caller)
            .a2a_version(version.as_deref())
            .extensions(extensions)
            .resume_after(resume_after)
            .trace(trace);
        Ok(match carrying(turn, self.inner.handle(request)).await {
            RpcReply::Json(bytes) => Either::A(bytes.into()),
            RpcReply::Stream(stream) => Either::B(RpcFrames::new(stream.into_sse_frames())),
            // A JSON-RPC body never gets a typed answer.
            RpcReply::Answer(_) => {
                return Err(crate::error::to_napi(agentlog::Error::new(
                    agentlog::ErrorKind::Internal,
                    "a typed answer to a JSON-RPC request",
                )));
            }
        })
    }
}

/// A task's events, each `{position, last, event}`. `for await (const e of stream)` reads
/// them (index.js); `next()` gives `null` at the end.
#[napi]
#[derive(Debug)]
pub struct EventStream {
    stream: Arc<PulledStream>,
}

impl EventStream {
    /// The stream `open` opens at the first `next()`, carrying `trace` on.
    fn new(
        trace: Option<TraceContext>,
        open: impl Future<Output = agentlog::Result<TaskStream>> + Send + 'static,
    ) -> Self {
        Self {
            stream: Arc::new(PulledStream::new(carrying(trace, open))),
        }
    }
}

#[napi]
impl EventStream {
    /// The next event, or `null` once the stream has ended.
    #[napi(ts_return_type = "Promise<StreamEvent | null>")]
    pub async fn next(&self) -> napi::Result<Option<Value>> {
        match self.stream.next().await.map_err(crate::error::to_napi)? {
            Some(event) => event.to_json().map(Some).or_throw(),
            None => Ok(None),
        }
    }

    /// Stop reading: the stream is dropped (its place among the bridge's streams freed).
    #[napi]
    pub async fn close(&self) {
        self.stream.close().await;
    }
}

/// The SSE frames of a streaming answer (an A2A `handleRpc` stream, or an MCP reply's
/// `frames`): each a whole frame, ready to write to an HTTP response. `next()` gives `null`
/// at the end.
#[napi]
pub struct RpcFrames {
    stream: Arc<Mutex<Option<SseFrames>>>,
}

impl std::fmt::Debug for RpcFrames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcFrames").finish_non_exhaustive()
    }
}

impl RpcFrames {
    pub(crate) fn new(frames: SseFrames) -> Self {
        Self {
            stream: Arc::new(Mutex::new(Some(frames))),
        }
    }

    /// Another handle on the same stream.
    pub(crate) fn share(&self) -> Self {
        Self {
            stream: self.stream.clone(),
        }
    }
}

#[napi]
impl RpcFrames {
    /// The next frame, or `null` once the stream has ended.
    #[napi]
    pub async fn next(&self) -> napi::Result<Option<Buffer>> {
        let mut slot = self.stream.lock().await;
        let Some(frames) = slot.as_mut() else {
            return Ok(None);
        };
        let frame = frames.next().await;
        if frame.is_none() {
            *slot = None;
        }
        Ok(frame.map(Buffer::from))
    }

    /// Stop reading: the stream is dropped.
    #[napi]
    pub async fn close(&self) {
        *self.stream.lock().await = None;
    }
}
