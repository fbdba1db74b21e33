//! `Worker`: an agent's worker whose handler is a JS function, and the one queue per worker
//! into JS that carries its traffic.
//!
//! Crossing into JS is the cost that matters, so a worker makes few crossings: everything
//! bound for JS (a task to start, a context call that finished, a cancellation) goes into
//! one queue, and one call of one threadsafe function drains all that has gathered, however
//! much it is (under load, one crossing carries many events). The context's calls are sync
//! N-API calls that spawn the SDK call and return; their results come back through the same
//! queue, so no call needs a Promise of its own from Rust (each of those is a threadsafe
//! function of its own). The handler's result comes back by a sync call, `_settle`.
//!
//! A worker of MCP tools (`tools`) runs the SDK's `Tools` dispatcher with one `JsTool` per
//! tool name: the same queue, the turn's `TaskContext` carrying the call, the handler's
//! return value coming back through `_settle` as the `CallToolResult`.
//!
//! The threadsafe function is weak: a worker does not keep Node's event loop alive, so a
//! script that ends without `close()` exits (a process that must stay up awaits
//! `worker.closed`, a pending Promise, which does).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use agentlog::ErrorKind;
use agentlog::bridge::json::from_params;
use agentlog::worker::{
    CompletionHandler, Handler, HandlerError, HandlerResult, PromptHandler, ResourceHandler,
    Skills, TaskContext as SdkContext, ToolCall, ToolHandler, Tools, Worker as SdkWorker,
    WorkerConfig,
};
use agentlog_wire::mcp::{CallToolResult, Completion as McpCompletion, ResourceContents};
use napi::bindgen_prelude::{Either, FnArgs, Function, PromiseRaw};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::bridge::{Bridge, millis};
use crate::completion::{Completion, Completions};
use crate::context::{Settled, TaskContext};
use crate::error::{OrThrow, invalid, to_napi};
use crate::log::Log;
use crate::mcp::McpBridge;

/// What waits to be carried into JS.
#[derive(Default)]
struct Pending {
    /// Whether a call of the threadsafe function is on its way (so pushing needs none).
    scheduled: bool,
    tasks: Vec<TaskContext>,
    done: Vec<Completion>,
    cancelled: Vec<u32>,
}

type Batch = FnArgs<(Vec<TaskContext>, Vec<Completion>, Vec<u32>)>;
type Dispatch = ThreadsafeFunction<(), (), Batch, Status, false, true>;

/// One worker's way into JS: the queue and the threadsafe function that drains it.
pub struct Dispatcher {
    pending: Arc<Mutex<Pending>>,
    call: Dispatch,
    handles: AtomicU32,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher").finish_non_exhaustive()
    }
}

impl Dispatcher {
    fn new(function: &Function<'_, (), ()>) -> napi::Result<Self> {
        let pending = Arc::new(Mutex::new(Pending::default()));
        let drain = pending.clone();
        let call = function
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .callee_handled::<false>()
            .build_callback(move |_| {
                let mut p = drain.lock().unwrap_or_else(|e| e.into_inner());
                p.scheduled = false;
                let batch = (
                    std::mem::take(&mut p.tasks),
                    std::mem::take(&mut p.done),
                    std::mem::take(&mut p.cancelled),
                );
                Ok(FnArgs::from(batch))
            })?;
        Ok(Self {
            pending,
            call,
            handles: AtomicU32::new(1),
        })
    }

    /// Add to the queue; call into JS unless a call is on its way already.
    fn push(&self, add: impl FnOnce(&mut Pending)) {
        let call = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            add(&mut p);
            !std::mem::replace(&mut p.scheduled, true)
        };
        if call {
            // Fails only once Node is tearing the environment down: nothing to deliver to.
            let _ = self.call.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

impl Completions for Dispatcher {
    fn done(&self, done: Completion) {
        self.push(|p| p.done.push(done));
    }
}

impl Dispatcher {
    /// Hand `task` (and the tool call it answers, if any) to JS and wait until the handler
    /// settles; `None` when the turn was cancelled first (the log says how it ended; the
    /// handler hears it through its signal).
    async fn run(
        self: &Arc<Self>,
        task: SdkContext,
        tool: Option<ToolCall>,
    ) -> Option<Result<Settled, HandlerError>> {
        let (settle, settled) = oneshot::channel();
        let handle = self.handles.fetch_add(1, Ordering::Relaxed);
        let cancellation = task.cancellation().clone();
        let watched = Arc::new(AtomicBool::new(false));
        let context = TaskContext::new(task, handle, settle, self.clone(), tool, watched.clone());
        self.push(|p| p.tasks.push(context));
        tokio::select! {
            outcome = settled => Some(outcome.map_err(|_| {
                "the JS handler's TaskContext went away before the handler settled".into()
            })),
            () = cancellation.cancelled() => {
                // Every turn's token is cancelled when its task ends: only a handler holding
                // a signal hears of it (one asked for later reads `cancelled`), so most tasks
                // cost JS nothing more.
                if watched.load(Ordering::SeqCst) {
                    self.push(|p| p.cancelled.push(handle));
                }
                None
            }
        }
    }
}

/// The SDK handler that hands each task to JS and waits for `_settle`.
struct JsHandler {
    dispatcher: Arc<Dispatcher>,
}

#[async_trait::async_trait]
impl Handler for JsHandler {
    async fn handle(&self, task: SdkContext) -> Result<(), HandlerError> {
        match self.dispatcher.run(task, None).await {
            None | Some(Ok(Settled::Done(_))) => Ok(()),
            Some(Ok(Settled::Failed(failure))) => Err(failure.into()),
            Some(Err(e)) => Err(e),
        }
    }
}

/// The SDK tool handler of one tool: the call goes to JS the same way, and the handler's
/// return value is its `CallToolResult`. A throw is a protocol failure (a JSON-RPC error).
struct JsTool {
    dispatcher: Arc<Dispatcher>,
}

#[async_trait::async_trait]
impl ToolHandler for JsTool {
    async fn call(&self, call: ToolCall) -> Result<CallToolResult, HandlerError> {
        let task = call.task.clone();
        match self.dispatcher.run(task, Some(call)).await {
            Some(Ok(Settled::Done(value))) => {
                from_params::<CallToolResult>("CallToolResult", &value.unwrap_or(Value::Null))
                    .map_err(|e| format!("the handler returned {}", e.message()).into())
            }
            Some(Ok(Settled::Failed(failure))) => Err(failure.into()),
            Some(Err(e)) => Err(e),
            // The log says how the turn ended; this result is not written (the turn is over).
            None => Ok(CallToolResult::error("cancelled")),
        }
    }
}

/// A JS function answering a prompt, a template's reads or completions (the SDK's
/// `PromptHandler`, `ResourceHandler`, `CompletionHandler`): the call goes to JS as a tool's
/// does, its return value converted here.
struct JsServed {
    dispatcher: Arc<Dispatcher>,
}

impl JsServed {
    async fn run(&self, call: ToolCall) -> Result<Value, HandlerError> {
        let task = call.task.clone();
        match self.dispatcher.run(task, Some(call)).await {
            Some(Ok(Settled::Done(value))) => Ok(value.unwrap_or(Value::Null)),
            Some(Ok(Settled::Failed(failure))) => Err(failure.into()),
            Some(Err(e)) => Err(e),
            // The log says how the turn ended; nothing more is written for it.
            None => Err("cancelled".into()),
        }
    }
}

// What the function returned, read as the SDK reads every binding's handler results.
#[async_trait::async_trait]
impl PromptHandler for JsServed {
    async fn get(&self, call: ToolCall) -> Result<serde_json::Map<String, Value>, HandlerError> {
        Ok(serde_json::Map::from_value(self.run(call).await?)?)
    }
}

#[async_trait::async_trait]
impl ResourceHandler for JsServed {
    async fn read(&self, call: ToolCall) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(Vec::from_value(self.run(call).await?)?)
    }
}

#[async_trait::async_trait]
impl CompletionHandler for JsServed {
    async fn complete(&self, call: ToolCall) -> Result<McpCompletion, HandlerError> {
        Ok(McpCompletion::from_value(self.run(call).await?)?)
    }
}

/// The prompts, URI templates and completions a worker answers beside its tools (each by the
/// name or URI template the definitions give it).
#[napi(object)]
#[derive(Debug, Default)]
pub struct ServedNames {
    /// Prompt names (`prompts/get`).
    pub prompts: Option<Vec<String>>,
    /// URI templates (`resources/read` of their matches).
    pub resources: Option<Vec<String>>,
    /// Prompt names whose arguments it completes.
    pub prompt_completions: Option<Vec<String>>,
    /// URI templates whose variables it completes.
    pub resource_completions: Option<Vec<String>>,
}

impl ServedNames {
    fn is_empty(&self) -> bool {
        [
            &self.prompts,
            &self.resources,
            &self.prompt_completions,
            &self.resource_completions,
        ]
        .iter()
        .all(|names| names.as_ref().is_none_or(Vec::is_empty))
    }

    /// `tools` answering these too, through `dispatcher`.
    fn add_to(self, tools: Tools, dispatcher: &Arc<Dispatcher>) -> Tools {
        let js = || JsServed {
            dispatcher: dispatcher.clone(),
        };
        let mut tools = tools;
        for name in self.prompts.unwrap_or_default() {
            tools = tools.prompt(&name, js());
        }
        for template in self.resources.unwrap_or_default() {
            tools = tools.resource(&template, js());
        }
        for name in self.prompt_completions.unwrap_or_default() {
            tools = tools.prompt_completion(&name, js());
        }
        for template in self.resource_completions.unwrap_or_default() {
            tools = tools.resource_completion(&template, js());
        }
        tools
    }
}

/// How a worker runs.
#[napi(object)]
#[derive(Debug)]
pub struct WorkerOptions {
    /// The most handlers running at once. Default 64.
    pub concurrency: Option<u32>,
    /// How long `close()` lets running handlers finish before it cancels them and releases
    /// their turns to other workers. Default 10 000 ms.
    pub shutdown_timeout_ms: Option<f64>,
}

/// Workers running, by id: held here, not by the JS object, so that a worker whose JS object
/// is garbage collected keeps running until `close()`.
static RUNNING: LazyLock<Mutex<HashMap<u64, SdkWorker>>> = LazyLock::new(Default::default);
static IDS: AtomicU64 = AtomicU64::new(1);

/// A running worker (from `Worker.start`).
#[napi]
#[derive(Debug)]
pub struct Worker {
    id: u64,
    agent: String,
    closed: CancellationToken,
}

/// Start a worker for `agent` over `log` whose turns `dispatch` (index.js's dispatcher)
/// runs; with `bridge`, it shares that bridge's view of the log (no second replay).
/// With `tools` (tool names), the turns are MCP tool calls of those tools (the SDK's
/// `Tools` dispatcher), and with `mcp` the worker shares that MCP bridge's view of `agent`;
/// `input_timeout_ms`: how long the asks of every tool wait, or by tool name for those tools
/// (the others, and all without it: the SDK's default). With `skills` (skill ids), or a
/// handler (`has_handler`) beside tools, the turns are routed by the SDK's `Skills`: each to
/// its skill's handler (index.js picks it by `task.skill`), the tools' calls and skills to
/// the tools, the rest to the handler. `served`: the prompts, templates and completions
/// answered beside the tools (as tools are).
#[napi(
    ts_args_type = "log: Log, agent: string, dispatch: (tasks: TaskContext[], done: Completion[], cancelled: number[]) => void, options?: WorkerOptions | null, bridge?: Bridge | null, mcp?: McpBridge | null, tools?: string[] | null, inputTimeoutMs?: number | { [tool: string]: number } | null, skills?: string[] | null, hasHandler?: boolean | null, served?: ServedNames | null",
    ts_return_type = "Promise<Worker>"
)]
#[allow(clippy::too_many_arguments)]
pub fn start_worker<'env>(
    env: &'env Env,
    log: &Log,
    agent: String,
    dispatch: Function<'_, (), ()>,
    options: Option<WorkerOptions>,
    bridge: Option<&Bridge>,
    mcp: Option<&McpBridge>,
    tools: Option<Vec<String>>,
    input_timeout_ms: Option<Either<f64, HashMap<String, f64>>>,
    skills: Option<Vec<String>>,
    has_handler: Option<bool>,
    served: Option<ServedNames>,
) -> napi::Result<PromiseRaw<'env, Worker>> {
    let served = served.filter(|s| !s.is_empty());
    // Prompts, templates and completions are answered as tools are: by the `Tools` dispatcher.
    let tools = match (tools, &served) {
        (None, Some(_)) => Some(Vec::new()),
        (tools, _) => tools,
    };
    let input_timeouts = input_timeouts(input_timeout_ms, tools.as_deref().unwrap_or_default())?;
    let mut config = WorkerConfig::new(&agent);
    if let Some(options) = options {
        if let Some(n) = options.concurrency {
            config.concurrency = usize::try_from(n.max(1)).unwrap_or(64);
        }
        if let Some(timeout) = millis(options.shutdown_timeout_ms, "shutdownTimeoutMs")? {
            config.shutdown_timeout = timeout;
        }
    }
    config.view = match (bridge, mcp) {
        (Some(b), _) => Some(b.inner.view().clone()),
        (None, Some(mcp)) => {
            let bridges = mcp.inner.bridges();
            let Some(b) = bridges.get(&agent) else {
                let mut agents: Vec<&String> = bridges.keys().collect();
                agents.sort();
                return Err(to_napi(agentlog::Error::new(
                    ErrorKind::Config,
                    format!(
                        "the McpBridge serves no tool on agent {agent:?} (its tool agents: {agents:?})"
                    ),
                )));
            };
            Some(b.view().clone())
        }
        (None, None) => None,
    };
    let dispatcher = Arc::new(Dispatcher::new(&dispatch)?);
    let log = log.inner.clone();
    let has_handler = has_handler.unwrap_or(tools.is_none());
    let routed = skills.is_some() || (has_handler && tools.is_some());
    let tools = tools.map(|names| {
        let tools = names.into_iter().fold(Tools::new(), |tools, name| {
            tools.tool(
                name,
                JsTool {
                    dispatcher: dispatcher.clone(),
                },
            )
        });
        let tools = match served {
            Some(served) => served.add_to(tools, &dispatcher),
            None => tools,
        };
        input_timeouts
            .into_iter()
            .fold(tools, |tools, (name, timeout)| {
                tools.input_timeout(name, timeout)
            })
    });
    env.spawn_future(async move {
        let worker = match tools {
            _ if routed => {
                let handler = || JsHandler {
                    dispatcher: dispatcher.clone(),
                };
                let mut routed = skills
                    .unwrap_or_default()
                    .into_iter()
                    .fold(Skills::new(), |routed, id| routed.skill(id, handler()));
                if has_handler {
                    routed = routed.default_handler(handler());
                }
                if let Some(tools) = tools {
                    routed = routed.tools(tools);
                }
                SdkWorker::start(log, config, routed).await
            }
            None => SdkWorker::start(log, config, JsHandler { dispatcher }).await,
            Some(tools) => SdkWorker::start(log, config, tools).await,
        }
        .or_throw()?;
        let id = IDS.fetch_add(1, Ordering::Relaxed);
        RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, worker);
        Ok(Worker {
            id,
            agent,
            closed: CancellationToken::new(),
        })
    })
}

/// The input timeouts of `inputTimeoutMs`: one for each of `tools`, or by tool name (each one
/// of `tools`: another name is a typo that would keep the default silently).
fn input_timeouts(
    timeout_ms: Option<Either<f64, HashMap<String, f64>>>,
    tools: &[String],
) -> napi::Result<Vec<(String, Duration)>> {
    let of = |ms: f64| -> napi::Result<Duration> {
        Ok(millis(Some(ms), "inputTimeoutMs")?.unwrap_or_default())
    };
    match timeout_ms {
        None => Ok(Vec::new()),
        Some(Either::A(ms)) => {
            let timeout = of(ms)?;
            Ok(tools.iter().map(|name| (name.clone(), timeout)).collect())
        }
        Some(Either::B(per_tool)) => per_tool
            .into_iter()
            .map(|(name, ms)| {
                if !tools.contains(&name) {
                    return Err(invalid(format!(
                        "inputTimeoutMs names tool {name:?}, which tools does not have"
                    )));
                }
                Ok((name, of(ms)?))
            })
            .collect(),
    }
}

#[napi]
impl Worker {
    /// The agent it works for.
    #[napi(getter)]
    pub fn agent(&self) -> String {
        self.agent.clone()
    }

    /// Whether it still takes work (`close()` not called).
    #[napi(getter)]
    pub fn running(&self) -> bool {
        RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&self.id)
    }

    /// How many records the worker's commands queue holds past what it has read, over the
    /// partitions its group gave it (what `/metrics` calls
    /// `agentlog_worker_queue_lag_records`): near 0 while it keeps up; 0 once closed.
    #[napi]
    pub async fn queue_lag(&self) -> napi::Result<i64> {
        let backlog = RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&self.id)
            .map(SdkWorker::backlog);
        let records = match backlog {
            Some(backlog) => backlog.records().await.or_throw()?,
            None => 0,
        };
        Ok(i64::try_from(records).unwrap_or(i64::MAX))
    }

    /// Stop taking work, let running handlers finish (up to `shutdownTimeoutMs`, then
    /// cancel them and release their turns to other workers), and leave the worker group.
    /// Closing twice is a no-op.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        let worker = RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        let result = match worker {
            Some(worker) => worker.shutdown().await.or_throw(),
            None => Ok(()),
        };
        self.closed.cancel();
        result
    }

    /// Resolves once `close()` has finished. Pending, it keeps the process alive: a worker
    /// process awaits it.
    #[napi(js_name = "_waitClosed")]
    pub async fn wait_closed(&self) {
        self.closed.cancelled().await;
    }
}
