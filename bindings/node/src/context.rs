//! `TaskContext`: what a JS handler knows about its task (sync getters), and how it reports
//! back: each report is a sync call that spawns the SDK call and returns; the result comes
//! back through the worker's queue ([`crate::worker`]), where index.js resolves the Promise
//! it handed out.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use agentlog::bridge::json::from_params;
use agentlog::worker::{TaskContext as SdkContext, ToolCall};
use agentlog_wire::a2a::{Artifact, Part};
use agentlog_wire::mcp::LoggingLevel;
use napi_derive::napi;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::bridge::Caller;
use crate::completion::{Completion, Completions};
use crate::convert::{from_js, parse, to_js};
use crate::error::{invalid, reason, to_napi};
use crate::trace::TraceCarrier;

/// How a JS handler settled.
#[derive(Debug)]
pub enum Settled {
    /// It returned: its value (a tool handler's `CallToolResult`), if any.
    Done(Option<Value>),
    /// It threw or rejected: `"<name>: <message>"`.
    Failed(String),
}

/// One turn of a task, as handed to a worker's handler.
#[napi]
pub struct TaskContext {
    ctx: SdkContext,
    handle: u32,
    settle: Mutex<Option<oneshot::Sender<Settled>>>,
    completions: Arc<dyn Completions>,
    /// The MCP tool call this turn answers, when the worker serves tools.
    tool: Option<ToolCall>,
    /// JS holds an AbortSignal for the turn: its cancellation must be carried into JS.
    watched: Arc<AtomicBool>,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("task_id", &self.ctx.task_id())
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

impl TaskContext {
    pub(crate) fn new(
        ctx: SdkContext,
        handle: u32,
        settle: oneshot::Sender<Settled>,
        completions: Arc<dyn Completions>,
        tool: Option<ToolCall>,
        watched: Arc<AtomicBool>,
    ) -> Self {
        Self {
            ctx,
            handle,
            settle: Mutex::new(Some(settle)),
            completions,
            tool,
            watched,
        }
    }

    /// Run `call`; its result goes back to JS as completion `id`. The call is polled once
    /// here first: a report that needs no wait (an append to a `memory://` or `file://`
    /// log) returns its completion at once, sparing a hand-over to the runtime and a
    /// crossing back into JS; one still pending goes on on the runtime and comes back
    /// through the worker's queue.
    fn report<Fut>(&self, id: u32, call: impl FnOnce(SdkContext) -> Fut) -> Option<Completion>
    where
        Fut: Future<Output = agentlog::Result<Option<Value>>> + Send + 'static,
    {
        let mut call = Box::pin(call(self.ctx.clone()));
        let mut now = Context::from_waker(Waker::noop());
        let polled =
            napi::bindgen_prelude::within_runtime_if_available(|| call.as_mut().poll(&mut now));
        if let Poll::Ready(result) = polled {
            return Some(completion(id, result));
        }
        let completions = self.completions.clone();
        napi::bindgen_prelude::spawn(async move {
            completions.done(completion(id, call.await));
        });
        None
    }

    /// `call` for a report that returns nothing.
    fn write<Fut>(&self, id: u32, call: impl FnOnce(SdkContext) -> Fut) -> Option<Completion>
    where
        Fut: Future<Output = agentlog::Result<()>> + Send + 'static,
    {
        self.report(id, |ctx| {
            let call = call(ctx);
            async move { call.await.map(|()| None) }
        })
    }
}

fn completion(id: u32, result: agentlog::Result<Option<Value>>) -> Completion {
    match result {
        Ok(value) => Completion {
            id,
            error: None,
            value,
        },
        Err(e) => Completion {
            id,
            error: Some(reason(&e)),
            value: None,
        },
    }
}

fn message_json(message: Option<agentlog_wire::a2a::Message>) -> agentlog::Result<Option<Value>> {
    message
        .map(|m| agentlog::bridge::json::to_json(&m))
        .transpose()
}

#[napi]
impl TaskContext {
    /// This turn's number among the worker's turns (index.js keys its cancellations by it).
    #[napi(getter, js_name = "_handle")]
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The task's id.
    #[napi(getter)]
    pub fn task_id(&self) -> String {
        self.ctx.task_id().to_owned()
    }

    /// The task's context (conversation) id.
    #[napi(getter)]
    pub fn context_id(&self) -> String {
        self.ctx.context_id().to_owned()
    }

    /// The message's text parts joined with `"\n"`.
    #[napi(getter)]
    pub fn text(&self) -> String {
        self.ctx.text()
    }

    /// The message this turn answers (A2A 1.0 `Message`).
    #[napi(getter, ts_return_type = "Message")]
    pub fn message(&self) -> napi::Result<Value> {
        to_js(self.ctx.message())
    }

    /// The task's history up to and including `message`, oldest first.
    #[napi(getter, ts_return_type = "Message[]")]
    pub fn history(&self) -> napi::Result<Value> {
        to_js(&self.ctx.history())
    }

    /// The skill the task is for: its first message's `agentlog.skill` (or `skillId`)
    /// metadata, or `null`.
    #[napi(getter)]
    pub fn skill(&self) -> Option<String> {
        self.ctx.skill().map(str::to_owned)
    }

    /// The extensions the client activated for this turn's message.
    #[napi(getter)]
    pub fn extensions(&self) -> Vec<String> {
        self.ctx.extensions().to_vec()
    }

    /// The task's owner.
    #[napi(getter)]
    pub fn caller(&self) -> Caller {
        Caller::from_sdk(self.ctx.caller())
    }

    /// Which run of this turn this is: 1, or more after a takeover from a worker that died.
    #[napi(getter)]
    pub fn attempt(&self) -> u32 {
        self.ctx.attempt()
    }

    /// Whether an earlier run of this turn may have done part of its work.
    #[napi(getter)]
    pub fn is_retry(&self) -> bool {
        self.ctx.is_retry()
    }

    /// A key naming this turn, the same in every run of it (`<task id>/<message id>`).
    #[napi(getter)]
    pub fn idempotency_key(&self) -> String {
        self.ctx.idempotency_key()
    }

    /// The bridges the message came through, oldest first (the hop guard).
    #[napi(getter)]
    pub fn hops(&self) -> Vec<String> {
        self.ctx.hops().to_vec()
    }

    /// The W3C trace context of the call that brought the message, a carrier an
    /// OpenTelemetry propagator extracts; `null` when the call came without one.
    #[napi(getter)]
    pub fn trace_context(&self) -> Option<TraceCarrier> {
        self.ctx.trace_context().map(TraceCarrier::of)
    }

    /// The trace context of this turn's own span (a child of `traceContext`, the one the
    /// turn's records carry), the same kind of carrier: the parent of the spans the handler
    /// makes. `null` when the call came untraced and spans are not exported.
    #[napi(getter)]
    pub fn span_context(&self) -> Option<TraceCarrier> {
        self.ctx.span_context().map(TraceCarrier::of)
    }

    /// index.js made the turn's AbortSignal: carry the cancellation into JS from now on.
    /// Call it before reading `cancelled`, so that a cancellation is either seen there or
    /// carried (never neither).
    #[napi(js_name = "_watchCancellation")]
    pub fn watch_cancellation(&self) {
        self.watched.store(true, Ordering::SeqCst);
    }

    /// Whether the task was canceled (or the turn taken over, or shutdown gave up on it).
    #[napi(getter)]
    pub fn cancelled(&self) -> bool {
        self.ctx.cancellation().is_cancelled()
    }

    /// The handler settled: `failure` (the task fails with it as the agent's message; a
    /// tool call answers a JSON-RPC error), or `null` (the turn ends as the handler left
    /// it; a tool call answers `result`).
    #[napi(
        js_name = "_settle",
        ts_args_type = "failure: string | null, result?: unknown"
    )]
    pub fn settle(&self, failure: Option<String>, result: Option<Value>) {
        let sender = self.settle.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(sender) = sender {
            let settled = match failure {
                Some(failure) => Settled::Failed(failure),
                None => Settled::Done(result.map(from_js)),
            };
            // The worker stopped waiting (the task was canceled): nothing to tell.
            let _ = sender.send(settled);
        }
    }

    /// The MCP tool call this turn answers (`{name, arguments, params, inputResponses}`),
    /// or `null` for an A2A task (index.js makes a `ToolCall` of it).
    #[napi(
        getter,
        js_name = "_tool",
        ts_return_type = "{ name: string; arguments: { [key: string]: unknown }; params: { [key: string]: unknown }; inputResponses: { [key: string]: unknown } | null } | null"
    )]
    pub fn tool(&self) -> napi::Result<Option<Value>> {
        let Some(call) = &self.tool else {
            return Ok(None);
        };
        Ok(Some(serde_json::json!({
            "name": call.params.name,
            "arguments": to_js(&call.arguments)?,
            "params": to_js(&call.params)?,
            "inputResponses": to_js(&call.input_responses)?,
        })))
    }

    #[napi(js_name = "_report")]
    pub fn report_progress(
        &self,
        id: u32,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> Option<Completion> {
        self.write(id, move |ctx| async move {
            ctx.report(progress, total, message.as_deref()).await
        })
    }

    /// `level` is parsed by the SDK (another is `invalid_params`, nothing written).
    #[napi(
        js_name = "_log",
        ts_args_type = "id: number, level: LoggingLevel, data: unknown, logger: string | null"
    )]
    pub fn log(
        &self,
        id: u32,
        level: String,
        data: Value,
        logger: Option<String>,
    ) -> napi::Result<Option<Completion>> {
        let level: LoggingLevel = from_params("level", &Value::String(level)).map_err(to_napi)?;
        let data = from_js(data);
        Ok(self.write(id, move |ctx| async move {
            ctx.log(level, logger.as_deref(), data).await
        }))
    }

    #[napi(
        js_name = "_ask",
        ts_args_type = "id: number, text: string, inputRequests: { [key: string]: unknown }"
    )]
    pub fn ask(
        &self,
        id: u32,
        text: String,
        input_requests: Value,
    ) -> napi::Result<Option<Completion>> {
        let Some(call) = self.tool.clone() else {
            return Err(invalid("ask() is for a tool call's turn"));
        };
        let requests: serde_json::Map<String, Value> = parse("inputRequests", input_requests)?;
        Ok(self.write(id, move |_| async move { call.ask(&text, requests).await }))
    }

    #[napi(js_name = "_working")]
    pub fn working(&self, id: u32, text: Option<String>) -> Option<Completion> {
        self.write(id, |ctx| async move { ctx.working(text.as_deref()).await })
    }

    #[napi(
        js_name = "_artifact",
        ts_args_type = "id: number, artifact: Artifact, append: boolean, lastChunk: boolean"
    )]
    pub fn artifact(
        &self,
        id: u32,
        artifact: Value,
        append: bool,
        last_chunk: bool,
    ) -> napi::Result<Option<Completion>> {
        let artifact: Artifact = parse("artifact", artifact)?;
        Ok(self.write(id, move |ctx| async move {
            ctx.artifact(artifact, append, last_chunk).await
        }))
    }

    #[napi(js_name = "_inputRequired")]
    pub fn input_required(&self, id: u32, text: String) -> Option<Completion> {
        self.write(id, |ctx| async move { ctx.input_required(&text).await })
    }

    #[napi(js_name = "_authRequired")]
    pub fn auth_required(&self, id: u32, text: String) -> Option<Completion> {
        self.write(id, |ctx| async move { ctx.auth_required(&text).await })
    }

    #[napi(js_name = "_complete")]
    pub fn complete(&self, id: u32, text: Option<String>) -> Option<Completion> {
        self.write(id, |ctx| async move { ctx.complete(text.as_deref()).await })
    }

    #[napi(js_name = "_fail")]
    pub fn fail(&self, id: u32, text: String) -> Option<Completion> {
        self.write(id, |ctx| async move { ctx.fail(&text).await })
    }

    #[napi(js_name = "_reject")]
    pub fn reject(&self, id: u32, text: String) -> Option<Completion> {
        self.write(id, |ctx| async move { ctx.reject(&text).await })
    }

    #[napi(js_name = "_reply", ts_args_type = "id: number, parts: Part[]")]
    pub fn reply(&self, id: u32, parts: Vec<Value>) -> napi::Result<Option<Completion>> {
        let parts = parts
            .into_iter()
            .map(|p| parse::<Part>("part", p))
            .collect::<napi::Result<Vec<_>>>()?;
        Ok(self.write(id, |ctx| async move { ctx.reply(parts).await }))
    }

    #[napi(js_name = "_replyText")]
    pub fn reply_text(&self, id: u32, text: String) -> Option<Completion> {
        self.write(id, |ctx| async move { ctx.reply_text(&text).await })
    }

    #[napi(js_name = "_followUp")]
    pub fn follow_up(&self, id: u32) -> Option<Completion> {
        self.report(
            id,
            |ctx| async move { message_json(ctx.follow_up().await?) },
        )
    }

    #[napi(js_name = "_waitFollowUp")]
    pub fn wait_follow_up(&self, id: u32) -> Option<Completion> {
        self.report(id, |ctx| async move {
            message_json(ctx.wait_follow_up().await?)
        })
    }
}
