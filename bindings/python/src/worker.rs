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

use crate::PyLog;
use crate::aio::{self, LoopBridge, OnCancel, is_coroutine_function};
use crate::bridge::PyBridge;
use crate::context::PyTaskContext;
use crate::duration::seconds;
use crate::error::err;
use crate::mcp::{PyMcpBridge, PyToolCall};
use crate::served::Served;
use crate::skills::skill_functions;
use crate::tools::{input_timeouts, tool_functions};
use crate::turn::{Outcome, Ran, run_coroutine};

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
        /// Prompt, resource and completion handlers beside the tools.
        served: Served,
    },
    /// Skills by id, a default handler, tools: the SDK's `Skills`.
    Skills {
        default: Option<Arc<Py<PyAny>>>,
        skills: Vec<(String, Arc<Py<PyAny>>)>,
        functions: Vec<(String, Arc<Py<PyAny>>)>,
        input_timeouts: Vec<(String, Duration)>,
        served: Served,
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

/// The SDK's `Tools` running `functions` and `served` on `event_loop`, the tools' asks
/// waiting `input_timeouts`.
fn tools_of(
    functions: &[(String, Arc<Py<PyAny>>)],
    input_timeouts: &[(String, Duration)],
    served: &Served,
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
    let tools = served.add_to(tools, event_loop);
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
                served,
            } => Start::Tools(tools_of(functions, input_timeouts, served, &event_loop)),
            Serves::Skills {
                default,
                skills,
                functions,
                input_timeouts,
                served,
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
                if !functions.is_empty() || !served.is_empty() {
                    let tools = tools_of(functions, input_timeouts, served, &event_loop);
                    routed = routed.tools(tools);
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
    /// of tool name → seconds for those tools. `prompts` (prompt name →), `resources` (URI
    /// template →), `prompt_completions` (prompt name →) and `resource_completions` (URI
    /// template →), each `async def` taking a `ToolCall`, answer the prompts, template reads
    /// and completions configured with this agent, beside `tools` (and count as them).
    #[new]
    #[pyo3(signature = (log, agent, handler = None, *, tools = None, skills = None, concurrency = 64, bridge = None, shutdown_timeout = 10.0, input_timeout = None, prompts = None, resources = None, prompt_completions = None, resource_completions = None))]
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
        prompts: Option<&Bound<'_, PyAny>>,
        resources: Option<&Bound<'_, PyAny>>,
        prompt_completions: Option<&Bound<'_, PyAny>>,
        resource_completions: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let handler = handler.filter(|h| !h.is_none());
        let tools = tools.filter(|t| !t.is_none());
        let input_timeout = input_timeout.filter(|t| !t.is_none());
        let skills = skills.filter(|s| !s.is_none());
        let served = Served::read(prompts, resources, prompt_completions, resource_completions)?;
        let mcp = tools.is_some() || !served.is_empty();
        let serves = match (handler, mcp, skills) {
            (None, false, None) => {
                return Err(PyTypeError::new_err(
                    "a worker needs a handler (an `async def` taking a TaskContext), tools= (a dict of tool name -> `async def` taking a ToolCall) or skills= (a dict of skill id -> `async def` taking a TaskContext)",
                ));
            }
            (Some(_), false, None) if input_timeout.is_some() => {
                return Err(PyTypeError::new_err(
                    "input_timeout is how long a tool's ask waits: it needs tools=",
                ));
            }
            (Some(handler), false, None) => Serves::Tasks(coroutine(handler)?),
            (None, true, None) => {
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
                Serves::Tools {
                    functions,
                    input_timeouts,
                    served,
                }
            }
            // Several handlers on one agent: each task to its skill's (the SDK's `Skills`).
            (handler, _, skills) => {
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
                    served,
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

    /// How many records the worker's commands queue holds past what it has read, over the
    /// partitions its group gave it (what `/metrics` calls
    /// `agentlog_worker_queue_lag_records`): near 0 while it keeps up; 0 before `start()`.
    fn queue_lag<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let backlog = self
            .worker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(Worker::backlog);
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                match backlog {
                    Some(backlog) => backlog.records().await,
                    None => Ok(0),
                }
            },
            |py, records| Ok(records.into_pyobject(py)?.into_any().unbind()),
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
