//! `agentlog.Worker`: the SDK's worker runtime running a Python `async def` handler.
//!
//! Per turn the worker (on tokio) posts one job to the handler's event loop: it calls the
//! handler (which only makes the coroutine), wraps it in an asyncio task and adds a done
//! callback that sends the outcome back over a oneshot. Cancellation (the task canceled,
//! the turn taken over, shutdown) cancels the asyncio task. See `aio` for the loop side.
//! With `tools=`, the worker runs the SDK's `Tools` dispatcher instead, with one `PyTool`
//! per tool: the same path, the coroutine's return value (a `CallToolResult` dict) coming
//! back too.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use agentlog::ErrorKind;
use agentlog::bridge::json::from_params;
use agentlog::worker::{
    Handler, HandlerError, Skills, TaskContext, ToolCall, ToolHandler, Tools, Worker, WorkerConfig,
};
use agentlog_wire::mcp::CallToolResult;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::PyLog;
use crate::aio::{self, LoopBridge, OnCancel, is_coroutine_function};
use crate::bridge::PyBridge;
use crate::context::PyTaskContext;
use crate::duration::seconds;
use crate::error::err;
use crate::json::to_json as py_to_json;
use crate::mcp::{PyMcpBridge, PyToolCall};
use crate::skills::skill_functions;
use crate::tools::{input_timeouts, tool_functions};

/// How a handler's asyncio task ended.
enum Outcome {
    /// It returned: its value as JSON when asked for (a tool's result), else `None`.
    Done(Option<Value>),
    /// It raised (or its value did not convert): the exception as `Type: message`.
    Failed(String),
    /// It was cancelled.
    Cancelled,
}

type Reply = Arc<Mutex<Option<oneshot::Sender<Outcome>>>>;

fn send(reply: &Reply, outcome: Outcome) {
    if let Some(tx) = reply.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = tx.send(outcome);
    }
}

/// The asyncio task running a handler, while it runs (to cancel it).
type Running = Arc<Mutex<Option<Py<PyAny>>>>;

/// The done callback of a handler's asyncio task.
#[pyclass(frozen)]
struct HandlerDone {
    reply: Reply,
    running: Running,
    /// Send the coroutine's return value back (a tool handler's result).
    returns: bool,
}

#[pymethods]
impl HandlerDone {
    fn __call__(&self, task: &Bound<'_, PyAny>) -> PyResult<()> {
        drop(
            self.running
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        let outcome = if task.call_method0("cancelled")?.is_truthy()? {
            Outcome::Cancelled
        } else {
            let exception = task.call_method0("exception")?;
            if !exception.is_none() {
                Outcome::Failed(PyErr::from_value(exception).to_string())
            } else if self.returns {
                match py_to_json(&task.call_method0("result")?, "the tool's result") {
                    Ok(value) => Outcome::Done(Some(value)),
                    Err(e) => Outcome::Failed(e.to_string()),
                }
            } else {
                Outcome::Done(None)
            }
        };
        send(&self.reply, outcome);
        Ok(())
    }
}

/// How a coroutine run for a turn ended, as the worker sees it.
enum Ran {
    /// The handler's own end.
    Ended(Outcome),
    /// The turn was cancelled (the task canceled, the turn taken over, shutdown): the
    /// coroutine was cancelled and has stopped.
    TurnCancelled,
    /// Cancelled by its loop (asyncio.run ending) or never started (the loop is gone): not
    /// the handler's failure. The turn is left until the worker's shutdown releases it.
    LoopGone,
}

/// Call `function(argument(py))` on the loop as an asyncio task and wait for it, cancelling
/// it when `task`'s turn is cancelled. `returns`: bring its return value back.
async fn run_coroutine(
    event_loop: &Arc<LoopBridge>,
    function: &Arc<Py<PyAny>>,
    task: &TaskContext,
    argument: impl FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send + 'static,
    returns: bool,
) -> Ran {
    let cancellation = task.cancellation().clone();
    let running: Running = Arc::default();
    let (tx, mut outcome) = oneshot::channel();
    let reply: Reply = Arc::new(Mutex::new(Some(tx)));
    let (function, bridge, slot) = (function.clone(), event_loop.clone(), running.clone());
    event_loop.post(Box::new(move |py| {
        let started = (|| -> PyResult<Py<PyAny>> {
            let coroutine = function.bind(py).call1((argument(py)?,))?;
            let asyncio_task = bridge
                .event_loop(py)
                .call_method1(pyo3::intern!(py, "create_task"), (coroutine,))?;
            asyncio_task.call_method1(
                pyo3::intern!(py, "add_done_callback"),
                (HandlerDone {
                    reply: reply.clone(),
                    running: slot.clone(),
                    returns,
                },),
            )?;
            Ok(asyncio_task.unbind())
        })();
        match started {
            Ok(asyncio_task) => {
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(asyncio_task);
            }
            Err(e) => send(&reply, Outcome::Failed(e.to_string())),
        }
    }));
    let ended = tokio::select! {
        ended = &mut outcome => ended,
        () = cancellation.cancelled() => {
            // The turn is over for this attempt: stop the coroutine and wait for it.
            event_loop.post(Box::new(move |py| {
                if let Some(asyncio_task) = running.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    let _ = asyncio_task.bind(py).call_method0("cancel");
                }
            }));
            let _ = outcome.await;
            return Ran::TurnCancelled;
        }
    };
    match ended {
        Ok(Outcome::Cancelled) | Err(_) => Ran::LoopGone,
        Ok(outcome) => Ran::Ended(outcome),
    }
}

/// The SDK handler that runs a Python coroutine function on its loop.
struct PyHandler {
    function: Arc<Py<PyAny>>,
    event_loop: Arc<LoopBridge>,
}

#[async_trait::async_trait]
impl Handler for PyHandler {
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError> {
        let context = task.clone();
        let argument = move |py: Python<'_>| Ok(Py::new(py, PyTaskContext(context))?.into_any());
        match run_coroutine(&self.event_loop, &self.function, &task, argument, false).await {
            Ran::Ended(Outcome::Failed(text)) => Err(text.into()),
            Ran::Ended(_) | Ran::TurnCancelled => Ok(()),
            Ran::LoopGone => {
                task.cancellation().cancelled().await;
                Ok(())
            }
        }
    }
}

/// The SDK tool handler that runs a Python coroutine function taking a `ToolCall` and
/// returning a `CallToolResult` dict. Raising is a protocol failure (a JSON-RPC error).
struct PyTool {
    function: Arc<Py<PyAny>>,
    event_loop: Arc<LoopBridge>,
}

#[async_trait::async_trait]
impl ToolHandler for PyTool {
    async fn call(&self, call: ToolCall) -> Result<CallToolResult, HandlerError> {
        let task = call.task.clone();
        let argument =
            move |py: Python<'_>| Ok(Py::new(py, PyToolCall::new(py, call)?)?.into_any());
        match run_coroutine(&self.event_loop, &self.function, &task, argument, true).await {
            Ran::Ended(Outcome::Done(value)) => {
                let value = value.unwrap_or(Value::Null);
                from_params::<CallToolResult>("CallToolResult", &value)
                    .map_err(|e| format!("the handler returned {}", e.message()).into())
            }
            Ran::Ended(Outcome::Failed(text)) => Err(text.into()),
            // The log says how the turn ended; this result is not written (the turn is over).
            Ran::Ended(Outcome::Cancelled) | Ran::TurnCancelled => {
                Ok(CallToolResult::error("cancelled"))
            }
            Ran::LoopGone => {
                task.cancellation().cancelled().await;
                Ok(CallToolResult::error("cancelled"))
            }
        }
    }
}

/// What a worker runs: one A2A handler, or tool handlers by tool name.
#[derive(Debug)]
enum Serves {
    Tasks(Arc<Py<PyAny>>),
    Tools {
        functions: Vec<(String, Arc<Py<PyAny>>)>,
        /// How long the asks of these tools wait (the others: the SDK's default).
        input_timeouts: Vec<(String, Duration)>,
    },
    /// Skills by id, a default handler, tools: the SDK's `Skills`.
    Skills {
        default: Option<Arc<Py<PyAny>>>,
        skills: Vec<(String, Arc<Py<PyAny>>)>,
        functions: Vec<(String, Arc<Py<PyAny>>)>,
        input_timeouts: Vec<(String, Duration)>,
    },
}

/// `handler`, checked to be an `async def` function.
fn coroutine(handler: &Bound<'_, PyAny>) -> PyResult<Arc<Py<PyAny>>> {
    if !is_coroutine_function(handler)? {
        return Err(PyTypeError::new_err(format!(
            "the handler must be an `async def` function taking a TaskContext, got {}",
            handler.repr()?
        )));
    }
    Ok(Arc::new(handler.clone().unbind()))
}

/// The workers running now, for the exit hook.
static LIVE: Mutex<Vec<Weak<Mutex<Option<Worker>>>>> = Mutex::new(Vec::new());

/// Runs an agent's handler for the tasks its bridges put on the log.
#[pyclass(frozen, module = "agentlog", name = "Worker")]
#[derive(Debug)]
pub struct PyWorker {
    log: agentlog::log::Log,
    config: Mutex<Option<WorkerConfig>>,
    serves: Serves,
    worker: Arc<Mutex<Option<Worker>>>,
}

/// What `start` builds the SDK worker with.
enum Start {
    Tasks(PyHandler),
    Tools(Tools),
    Skills(Skills),
}

/// The SDK's `Tools` running `functions` on `event_loop`, their asks waiting `input_timeouts`.
fn tools_of(
    functions: &[(String, Arc<Py<PyAny>>)],
    input_timeouts: &[(String, Duration)],
    event_loop: &Arc<LoopBridge>,
) -> Tools {
    let tools = functions
        .iter()
        .fold(Tools::new(), |tools, (name, function)| {
            tools.tool(
                name.clone(),
                PyTool {
                    function: function.clone(),
                    event_loop: event_loop.clone(),
                },
            )
        });
    input_timeouts.iter().fold(tools, |tools, (name, timeout)| {
        tools.input_timeout(name.clone(), *timeout)
    })
}

/// The view a worker of `agent` shares: a `Bridge`'s, or an `McpBridge`'s bridge of that
/// tool agent.
fn view_of(bridge: &Bound<'_, PyAny>, agent: &str) -> PyResult<agentlog::view::TaskView> {
    let py = bridge.py();
    if let Ok(bridge) = bridge.cast::<PyBridge>() {
        return Ok(bridge.get().0.view().clone());
    }
    if let Ok(mcp) = bridge.cast::<PyMcpBridge>() {
        let bridges = mcp.get().0.bridges();
        return match bridges.get(agent) {
            Some(b) => Ok(b.view().clone()),
            None => {
                let mut agents: Vec<&String> = bridges.keys().collect();
                agents.sort();
                Err(err(
                    py,
                    ErrorKind::Config,
                    format!(
                        "the McpBridge serves no tool on agent {agent:?} (its tool agents: {agents:?})"
                    ),
                ))
            }
        };
    }
    Err(PyTypeError::new_err(format!(
        "bridge must be a Bridge or an McpBridge, got {}",
        bridge.repr()?
    )))
}

impl PyWorker {
    fn start_inner<'py>(slf: &Bound<'py, Self>, give_self: bool) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let config = this
            .config
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| err(py, ErrorKind::Config, "this worker was started already"))?;
        let event_loop = aio::current(py)?;
        let start = match &this.serves {
            Serves::Tasks(function) => Start::Tasks(PyHandler {
                function: function.clone(),
                event_loop,
            }),
            Serves::Tools {
                functions,
                input_timeouts,
            } => Start::Tools(tools_of(functions, input_timeouts, &event_loop)),
            Serves::Skills {
                default,
                skills,
                functions,
                input_timeouts,
            } => {
                let handler = |function: &Arc<Py<PyAny>>| PyHandler {
                    function: function.clone(),
                    event_loop: event_loop.clone(),
                };
                let mut routed = skills.iter().fold(Skills::new(), |routed, (id, function)| {
                    routed.skill(id.clone(), handler(function))
                });
                if let Some(function) = default {
                    routed = routed.default_handler(handler(function));
                }
                if !functions.is_empty() {
                    routed = routed.tools(tools_of(functions, input_timeouts, &event_loop));
                }
                Start::Skills(routed)
            }
        };
        let log = this.log.clone();
        let slot = this.worker.clone();
        let me = slf.clone().unbind();
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                let worker = match start {
                    Start::Tasks(handler) => Worker::start(log, config, handler).await?,
                    Start::Tools(tools) => Worker::start(log, config, tools).await?,
                    Start::Skills(skills) => Worker::start(log, config, skills).await?,
                };
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(worker);
                let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
                live.retain(|w| w.strong_count() > 0);
                live.push(Arc::downgrade(&slot));
                Ok(())
            },
            move |py, ()| Ok(if give_self { me.into_any() } else { py.None() }),
        )
    }
}

#[pymethods]
impl PyWorker {
    /// A worker for `agent` over `log` running `handler`, an `async def` taking a
    /// `TaskContext`, or (instead of `handler`) `tools`, a dict of tool name → `async def`
    /// taking a `ToolCall` and returning a `CallToolResult` dict, serving the MCP calls on
    /// the tool agent `agent` (`mcp.<tool>` by default); at most `concurrency` turns at
    /// once. With `skills`, a dict of skill id → `async def` taking a `TaskContext`, each
    /// task runs the handler of the skill its first message names (metadata
    /// `agentlog.skill` or `skillId`), else `handler` (the default), and `tools` answer the
    /// MCP calls on `agent` and the skills named like them; `handler` and `tools` together
    /// work so too. Not running until `start()` (or `async with`). With `bridge` (a `Bridge` of
    /// `agent`, or an `McpBridge` serving tools on `agent`), it shares that bridge's view of
    /// the log (no second replay). `shutdown_timeout`: how long `shutdown()` lets running
    /// handlers finish. `input_timeout` (with `tools`): how long, in seconds, a call answered
    /// on its request whose tool asks (`ToolCall.ask`) waits for the client's retry before
    /// the task is cancelled (default 15 minutes; 0: no deadline), for every tool, or a dict
    /// of tool name → seconds for those tools.
    #[new]
    #[pyo3(signature = (log, agent, handler = None, *, tools = None, skills = None, concurrency = 64, bridge = None, shutdown_timeout = 10.0, input_timeout = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        log: &PyLog,
        agent: &str,
        handler: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
        skills: Option<&Bound<'_, PyAny>>,
        concurrency: usize,
        bridge: Option<&Bound<'_, PyAny>>,
        shutdown_timeout: f64,
        input_timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let handler = handler.filter(|h| !h.is_none());
        let tools = tools.filter(|t| !t.is_none());
        let input_timeout = input_timeout.filter(|t| !t.is_none());
        let skills = skills.filter(|s| !s.is_none());
        let serves = match (handler, tools, skills) {
            (None, None, None) => {
                return Err(PyTypeError::new_err(
                    "a worker needs a handler (an `async def` taking a TaskContext), tools= (a dict of tool name -> `async def` taking a ToolCall) or skills= (a dict of skill id -> `async def` taking a TaskContext)",
                ));
            }
            (Some(_), None, None) if input_timeout.is_some() => {
                return Err(PyTypeError::new_err(
                    "input_timeout is how long a tool's ask waits: it needs tools=",
                ));
            }
            (Some(handler), None, None) => Serves::Tasks(coroutine(handler)?),
            (None, Some(tools), None) => {
                let functions = tool_functions(tools)?;
                let input_timeouts = match input_timeout {
                    Some(timeout) => input_timeouts(timeout, &functions)?,
                    None => Vec::new(),
                };
                Serves::Tools {
                    functions,
                    input_timeouts,
                }
            }
            // Several handlers on one agent: each task to its skill's (the SDK's `Skills`).
            (handler, tools, skills) => {
                let default = handler.map(coroutine).transpose()?;
                let skills = skills.map(skill_functions).transpose()?.unwrap_or_default();
                let functions = tools.map(tool_functions).transpose()?.unwrap_or_default();
                let input_timeouts = match input_timeout {
                    Some(_) if functions.is_empty() => {
                        return Err(PyTypeError::new_err(
                            "input_timeout is how long a tool's ask waits: it needs tools=",
                        ));
                    }
                    Some(timeout) => input_timeouts(timeout, &functions)?,
                    None => Vec::new(),
                };
                Serves::Skills {
                    default,
                    skills,
                    functions,
                    input_timeouts,
                }
            }
        };
        let mut config = WorkerConfig::new(agent);
        config.concurrency = concurrency;
        config.view = match bridge.filter(|b| !b.is_none()) {
            None => None,
            Some(b) => Some(view_of(b, agent)?),
        };
        config.shutdown_timeout = seconds("shutdown_timeout", shutdown_timeout)?;
        Ok(Self {
            log: log.0.clone(),
            config: Mutex::new(Some(config)),
            serves,
            worker: Arc::default(),
        })
    }

    /// Start taking work (call it from a coroutine: the handler runs on that loop).
    fn start<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::start_inner(slf, false)
    }

    /// Stop taking work, let running handlers finish (up to `shutdown_timeout`, then cancel
    /// them and release their turns to other workers), and leave the worker group.
    fn shutdown<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let slot = self.worker.clone();
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                let worker = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                match worker {
                    Some(worker) => worker.shutdown().await,
                    None => Ok(()),
                }
            },
            aio::none,
        )
    }

    /// Whether the worker is running.
    #[getter]
    fn running(&self) -> bool {
        self.worker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::start_inner(slf, true)
    }

    #[pyo3(signature = (*_exc))]
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _exc: &Bound<'py, pyo3::types::PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.shutdown(py)
    }
}

/// At interpreter exit: stop every worker still running, bounded, without the interpreter.
pub fn stop_all(py: Python<'_>) {
    let live: Vec<_> = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    let workers: Vec<Worker> = live
        .iter()
        .filter_map(Weak::upgrade)
        .filter_map(|slot| slot.lock().unwrap_or_else(|e| e.into_inner()).take())
        .collect();
    if workers.is_empty() {
        return;
    }
    py.detach(|| {
        aio::runtime().block_on(async {
            let all = futures::future::join_all(workers.into_iter().map(Worker::shutdown));
            // Their loop is gone: handlers still running cannot finish, so do not wait long.
            let _ = tokio::time::timeout(Duration::from_secs(1), all).await;
        });
    });
}

/// Add the classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyWorker>()?;
    m.add_class::<PyTaskContext>()?;
    Ok(())
}
