//! `agentlog.Worker`: the SDK's worker runtime running a Python `async def` handler.
//!
//! Per turn the worker (on tokio) posts one job to the handler's event loop: it calls the
//! handler (which only makes the coroutine), wraps it in an asyncio task and adds a done
//! callback that sends the outcome back over a oneshot. Cancellation (the task canceled,
//! the turn taken over, shutdown) cancels the asyncio task. See `aio` for the loop side.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use agentlog::ErrorKind;
use agentlog::worker::{Handler, HandlerError, TaskContext, Worker, WorkerConfig};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use tokio::sync::oneshot;

use crate::PyLog;
use crate::aio::{self, LoopBridge, OnCancel};
use crate::bridge::PyBridge;
use crate::context::PyTaskContext;
use crate::error::err;

/// How a handler's asyncio task ended.
enum Outcome {
    Done,
    /// It raised: the exception as `Type: message`.
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
            if exception.is_none() {
                Outcome::Done
            } else {
                Outcome::Failed(PyErr::from_value(exception).to_string())
            }
        };
        send(&self.reply, outcome);
        Ok(())
    }
}

/// The SDK handler that runs a Python coroutine function on its loop.
struct PyHandler {
    function: Arc<Py<PyAny>>,
    event_loop: Arc<LoopBridge>,
}

impl PyHandler {
    /// Start the handler for `task` on the loop; the outcome comes on the returned channel.
    fn start(&self, task: TaskContext, running: Running) -> oneshot::Receiver<Outcome> {
        let (tx, rx) = oneshot::channel();
        let reply: Reply = Arc::new(Mutex::new(Some(tx)));
        let function = self.function.clone();
        let event_loop = self.event_loop.clone();
        self.event_loop.post(Box::new(move |py| {
            let started = (|| -> PyResult<Py<PyAny>> {
                let context = Py::new(py, PyTaskContext(task))?;
                let coroutine = function.bind(py).call1((context,))?;
                let asyncio_task = event_loop
                    .event_loop(py)
                    .call_method1(pyo3::intern!(py, "create_task"), (coroutine,))?;
                asyncio_task.call_method1(
                    pyo3::intern!(py, "add_done_callback"),
                    (HandlerDone {
                        reply: reply.clone(),
                        running: running.clone(),
                    },),
                )?;
                Ok(asyncio_task.unbind())
            })();
            match started {
                Ok(asyncio_task) => {
                    *running.lock().unwrap_or_else(|e| e.into_inner()) = Some(asyncio_task);
                }
                Err(e) => send(&reply, Outcome::Failed(e.to_string())),
            }
        }));
        rx
    }
}

#[async_trait::async_trait]
impl Handler for PyHandler {
    async fn handle(&self, task: TaskContext) -> Result<(), HandlerError> {
        let cancellation = task.cancellation().clone();
        let running: Running = Arc::default();
        let mut outcome = self.start(task, running.clone());
        let ended = tokio::select! {
            ended = &mut outcome => ended,
            () = cancellation.cancelled() => {
                // The turn is over for this attempt: stop the coroutine and wait for it.
                self.event_loop.post(Box::new(move |py| {
                    if let Some(asyncio_task) = running.lock().unwrap_or_else(|e| e.into_inner()).take() {
                        let _ = asyncio_task.bind(py).call_method0("cancel");
                    }
                }));
                let _ = outcome.await;
                return Ok(());
            }
        };
        match ended {
            Ok(Outcome::Done) => Ok(()),
            Ok(Outcome::Failed(text)) => Err(text.into()),
            // Cancelled by its loop (asyncio.run ending) or never started (the loop is
            // gone): not the handler's failure. Leave the turn until the worker's shutdown
            // releases it to another worker.
            Ok(Outcome::Cancelled) | Err(_) => {
                cancellation.cancelled().await;
                Ok(())
            }
        }
    }
}

/// The workers running now, for the exit hook.
static LIVE: Mutex<Vec<Weak<Mutex<Option<Worker>>>>> = Mutex::new(Vec::new());

/// Runs an agent's handler for the tasks its bridges put on the log.
#[pyclass(frozen, module = "agentlog", name = "Worker")]
#[derive(Debug)]
pub struct PyWorker {
    log: agentlog::log::Log,
    config: Mutex<Option<WorkerConfig>>,
    function: Arc<Py<PyAny>>,
    worker: Arc<Mutex<Option<Worker>>>,
}

fn is_coroutine_function(function: &Bound<'_, PyAny>) -> PyResult<bool> {
    let inspect = function.py().import("inspect")?;
    let check = inspect.getattr("iscoroutinefunction")?;
    if check.call1((function,))?.is_truthy()? {
        return Ok(true);
    }
    // An object whose __call__ is `async def`.
    match function.getattr("__call__") {
        Ok(call) => check.call1((call,))?.is_truthy(),
        Err(_) => Ok(false),
    }
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
        let handler = PyHandler {
            function: this.function.clone(),
            event_loop: aio::current(py)?,
        };
        let log = this.log.clone();
        let slot = this.worker.clone();
        let me = slf.clone().unbind();
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                let worker = Worker::start(log, config, handler).await?;
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
    /// `TaskContext`, for at most `concurrency` tasks at once. Not running until `start()`
    /// (or `async with`). With `bridge`, it shares that bridge's view of the log (no second
    /// replay). `shutdown_timeout`: how long `shutdown()` lets running handlers finish.
    #[new]
    #[pyo3(signature = (log, agent, handler, *, concurrency = 64, bridge = None, shutdown_timeout = 10.0))]
    fn new(
        log: &PyLog,
        agent: &str,
        handler: &Bound<'_, PyAny>,
        concurrency: usize,
        bridge: Option<&PyBridge>,
        shutdown_timeout: f64,
    ) -> PyResult<Self> {
        if !is_coroutine_function(handler)? {
            return Err(PyTypeError::new_err(format!(
                "the handler must be an `async def` function taking a TaskContext, got {}",
                handler.repr()?
            )));
        }
        let mut config = WorkerConfig::new(agent);
        config.concurrency = concurrency;
        config.view = bridge.map(|b| b.0.view().clone());
        config.shutdown_timeout = Duration::try_from_secs_f64(shutdown_timeout).map_err(|_| {
            PyTypeError::new_err(format!(
                "shutdown_timeout must be >= 0 seconds, got {shutdown_timeout}"
            ))
        })?;
        Ok(Self {
            log: log.0.clone(),
            config: Mutex::new(Some(config)),
            function: Arc::new(handler.clone().unbind()),
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
