//! Tools: the worker runtime serving MCP tool calls ([`Tools`], a [`Handler`] dispatching
//! each call to the [`ToolHandler`] of its tool).
//!
//! A tool call reaches a worker as any task does (the MCP bridge records it as a command on
//! the tool's topics: `agentlog_wire::mcp::call`), with the same claims, attempts, leases and
//! cancellation. [`Tools`] reads the call out of the command's message, runs the tool's
//! handler, and ends the task with the handler's [`CallToolResult`] (a completed status,
//! also for `isError: true`: a tool failure is a result). A handler that returns `Err`, or a
//! call naming a tool this worker does not serve, fails the task with a JSON-RPC error
//! (a protocol failure), which the bridge answers the client with.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agentlog_wire::TaskState;
use agentlog_wire::a2a::Part;
use agentlog_wire::mcp::call::{
    ERROR_MEDIA_TYPE, INPUT_REQUESTS_MEDIA_TYPE, RESULT_MEDIA_TYPE, call_of, typed_part,
};
use agentlog_wire::mcp::input::responses_of;
use agentlog_wire::mcp::{CallToolParams, CallToolResult, META_CLIENT_CAPABILITIES, PendingInput};
use serde_json::{Map, Value, json};

use super::{Handler, HandlerError, TaskContext};

/// One call of a tool, as a [`ToolHandler`] gets it.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The call's params as the client sent them (name, arguments, `_meta`).
    pub params: CallToolParams,
    /// The arguments (an empty object when the call had none), already checked against the
    /// tool's `inputSchema` by the bridge.
    pub arguments: Map<String, Value>,
    /// The client's `inputResponses` when this turn resumes a call that asked for input:
    /// after [`ToolCall::ask`], one response per key asked, gathered over every
    /// `tasks/update` that answered it (the call does not run again until all are in);
    /// after a plain [`TaskContext::input_required`], the update's responses. On the call's
    /// first turn, the call's own `inputResponses` (an MRTR retry that came without
    /// `requestState`, answered as a new call), else `None`.
    pub input_responses: Option<Map<String, Value>>,
    /// The task the call is: report progress with [`TaskContext::report`], watch
    /// [`TaskContext::cancellation`], carry [`TaskContext::hops`] on calls it makes.
    pub task: TaskContext,
    /// How long an ask of this call waits for the client ([`Tools::input_timeout`]).
    input_timeout: Duration,
}

impl ToolCall {
    /// A call of a tool handler made by the worker (the A2A side of a tool: `super::skills`).
    pub(super) fn new(
        params: CallToolParams,
        input_responses: Option<Map<String, Value>>,
        task: TaskContext,
        input_timeout: Duration,
    ) -> Self {
        Self {
            arguments: params.arguments.clone().unwrap_or_default(),
            params,
            input_responses,
            task,
            input_timeout,
        }
    }

    /// The client capabilities the call declared (modern era; an empty object for a legacy
    /// call): a sync call's [`ToolCall::ask`] may only ask for kinds declared here
    /// (`elicitation`, `sampling`, `roots`), else the call fails with -32021. A task's turns
    /// see its first call's.
    pub fn client_capabilities(&self) -> Map<String, Value> {
        self.params
            .meta
            .as_ref()
            .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }

    /// Ask the client for input: the task becomes `input_required`, `tasks/get` shows
    /// `input_requests` (keyed MCP requests, e.g. `{"confirm": {"method": "elicitation/create",
    /// "params": {...}}}`) and `text` as its status message. Ends this turn (whatever the
    /// handler returns after is dropped); the call runs again once the client's
    /// `tasks/update`s (or, for a sync call, its MRTR retries) have answered every key, with
    /// the responses in [`ToolCall::input_responses`]. Keys must be new within the task (the
    /// extension's rule). A modern sync call answers `input_required` with these requests
    /// when [`ToolCall::client_capabilities`] declares their kinds (-32021 otherwise); a
    /// legacy one answers a tool error, and its task is cancelled. A call answered on its
    /// request records a deadline ([`Tools::input_timeout`]): past it the workers cancel the
    /// task and a retry is refused as expired; a task waits without one.
    pub async fn ask(&self, text: &str, input_requests: Map<String, Value>) -> crate::Result<()> {
        let metadata = super::expiry::ask_metadata(&self.task, self.input_timeout);
        self.task
            .finish_with_metadata(
                TaskState::InputRequired,
                vec![
                    typed_part(
                        json!({"inputRequests": input_requests}),
                        INPUT_REQUESTS_MEDIA_TYPE,
                    ),
                    Part::text(text),
                ],
                metadata,
            )
            .await
    }
}

/// A tool's code: answers one call with a result. `Err` is a protocol failure (the client
/// gets a JSON-RPC error); a failure the model should read is `Ok(CallToolResult::error(..))`.
#[async_trait::async_trait]
pub trait ToolHandler: Send + Sync + 'static {
    /// Answer one call.
    async fn call(&self, call: ToolCall) -> Result<CallToolResult, HandlerError>;
}

/// Build a [`ToolHandler`] from an async closure.
pub fn tool_fn<F, Fut>(f: F) -> impl ToolHandler
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CallToolResult, HandlerError>> + Send,
{
    FnTool(f)
}

struct FnTool<F>(F);

#[async_trait::async_trait]
impl<F, Fut> ToolHandler for FnTool<F>
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CallToolResult, HandlerError>> + Send,
{
    async fn call(&self, call: ToolCall) -> Result<CallToolResult, HandlerError> {
        (self.0)(call).await
    }
}

/// A [`Handler`] serving tool calls: one [`ToolHandler`] per tool name.
#[derive(Clone, Default)]
pub struct Tools {
    handlers: BTreeMap<String, Arc<dyn ToolHandler>>,
    /// Per tool, how long its asks wait (others: [`DEFAULT_INPUT_TIMEOUT`](super::DEFAULT_INPUT_TIMEOUT)).
    input_timeouts: BTreeMap<String, Duration>,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools")
            .field("tools", &self.handlers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Tools {
    /// No tools yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serve tool `name` with `handler` (replacing any earlier handler of that name).
    pub fn tool(mut self, name: impl Into<String>, handler: impl ToolHandler) -> Self {
        self.handlers.insert(name.into(), Arc::new(handler));
        self
    }

    /// How long an ask ([`ToolCall::ask`]) of tool `name`'s calls answered on their request
    /// waits for the client's retry before the task is cancelled (default
    /// [`DEFAULT_INPUT_TIMEOUT`](super::DEFAULT_INPUT_TIMEOUT), 15 minutes; zero: for ever,
    /// until its owner cancels it). The deadline is written with the ask, so it holds on
    /// every worker and across restarts whatever they are configured with. Calls that run as
    /// tasks have none.
    pub fn input_timeout(mut self, name: impl Into<String>, timeout: Duration) -> Self {
        self.input_timeouts.insert(name.into(), timeout);
        self
    }

    /// The handler of tool `name`, if this serves it.
    pub(super) fn handler(&self, name: &str) -> Option<Arc<dyn ToolHandler>> {
        self.handlers.get(name).cloned()
    }

    fn input_timeout_of(&self, name: &str) -> Duration {
        self.input_timeouts
            .get(name)
            .copied()
            .unwrap_or(super::DEFAULT_INPUT_TIMEOUT)
    }

    /// The tools served, by name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.handlers.keys().map(String::as_str)
    }
}

#[async_trait::async_trait]
impl Handler for Tools {
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError> {
        // A turn resuming a call that asked for input answers the call in the task's first
        // message, once every key the tool asked for has its response (a partial
        // `tasks/update` asks again with the same requests: `agentlog_wire::mcp::input`).
        let input_responses = match responses_of(task.message()) {
            None => None,
            Some(responses) => match PendingInput::of(task.history()) {
                Some(pending) if !pending.is_answered() => {
                    let parts = pending.ask.map(|ask| ask.parts).unwrap_or_default();
                    // An answer came: the ask waits its whole timeout again.
                    let name = call_of(task.history().first().unwrap_or(task.message()))
                        .and_then(std::result::Result::ok)
                        .map(|call| call.name)
                        .unwrap_or_default();
                    let timeout = self.input_timeout_of(&name);
                    let metadata = super::expiry::ask_metadata(&task, timeout);
                    task.finish_with_metadata(TaskState::InputRequired, parts, metadata)
                        .await?;
                    return Ok(());
                }
                Some(pending) => Some(pending.responses),
                None => Some(responses.clone()),
            },
        };
        let first = task.history().first().unwrap_or(task.message());
        let params = match call_of(first) {
            Some(Ok(params)) => params,
            Some(Err(e)) => {
                return fail(&task, -32602, &format!("invalid tools/call params: {e}")).await;
            }
            None => return fail(&task, -32602, "the message is not an MCP tool call").await,
        };
        let Some(handler) = self.handlers.get(&params.name).cloned() else {
            let text = format!("Unknown tool: {}", params.name);
            return fail(&task, -32602, &text).await;
        };
        let call = ToolCall {
            arguments: params.arguments.clone().unwrap_or_default(),
            input_responses: input_responses.or_else(|| {
                let first_turn = task.message().message_id == first.message_id;
                first_turn.then(|| params.input_responses.clone()).flatten()
            }),
            input_timeout: self.input_timeout_of(&params.name),
            params,
            task: task.clone(),
        };
        match handler.call(call).await {
            Ok(result) => {
                let data = serde_json::to_value(&result)?;
                task.finish_with(
                    TaskState::Completed,
                    vec![typed_part(data, RESULT_MEDIA_TYPE)],
                )
                .await?;
                Ok(())
            }
            Err(e) => fail(&task, -32603, &format!("the tool failed: {e}")).await,
        }
    }
}

/// Fail the task with a JSON-RPC error `{code, message}` (and the message as text, for A2A
/// readers).
async fn fail(task: &TaskContext, code: i32, message: &str) -> Result<(), HandlerError> {
    let error = json!({"code": code, "message": message});
    task.finish_with(
        TaskState::Failed,
        vec![typed_part(error, ERROR_MEDIA_TYPE), Part::text(message)],
    )
    .await?;
    Ok(())
}
