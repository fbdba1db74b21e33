//! The asyncio bridge: Rust futures awaited from Python, Python coroutines run for Rust.
//!
//! Each event loop gets one [`LoopBridge`]: a queue of jobs to run on the loop's thread and a
//! pipe the loop watches (`loop.add_reader`). A tokio thread that has something for Python
//! (a finished call's result, a handler to start) pushes a job and, only when the queue was
//! empty, writes one byte to the pipe; the loop wakes, takes every queued job and runs them
//! attached to the interpreter. So:
//!
//! - tokio threads never attach to the interpreter (no GIL wait on a runtime thread, no
//!   blocking-pool hop per call, nothing of Python touched while the interpreter finalises:
//!   the exit crash of the notes came from that);
//! - results that finish together wake the loop once (the queue is drained whole);
//! - a call costs one `loop.create_future()`, one tokio spawn and one job.
//!
//! `skills/bindings/SKILL.md` has why this is not pyo3-async-runtimes' per-call path, with
//! the measurements.

use std::cell::RefCell;
use std::future::Future;
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::sync::{Arc, Mutex, OnceLock};

use agentlog_wire::trace::TraceContext;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::IntoPyDict;
use tokio::runtime::Runtime;

use crate::error::to_py_err;

/// Work for the loop's thread.
pub type Job = Box<dyn FnOnce(Python<'_>) + Send>;

/// The runtime every binding future runs on (multi-threaded: SDK code spawns tasks).
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        #[allow(clippy::expect_used)]
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("agentlog-tokio")
            .on_thread_start(keep_signals_for_python)
            .enable_all()
            .build()
            // Without a runtime the module can do nothing; a process that cannot start
            // threads has bigger trouble.
            .expect("cannot start the agentlog tokio runtime")
    })
}

/// Block SIGINT and SIGTERM in a runtime thread (and the threads it starts), so the kernel
/// hands them to a thread of Python's. Python runs its handlers on the main thread only, and
/// a process-directed signal may go to any thread that does not block it (Linux prefers the
/// main thread; POSIX does not promise it): one taken by a tokio thread would not wake the
/// asyncio loop, and Ctrl-C would wait for the loop's next wake-up.
fn keep_signals_for_python() {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    if let Err(e) = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None) {
        eprintln!("agentlog: cannot block signals in a runtime thread: {e}");
    }
}

/// One event loop's side of the bridge.
pub struct LoopBridge {
    event_loop: Py<PyAny>,
    queue: Mutex<Vec<Job>>,
    wake: PipeWriter,
    woken: Mutex<PipeReader>,
}

impl std::fmt::Debug for LoopBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopBridge").finish_non_exhaustive()
    }
}

impl LoopBridge {
    /// Run `job` on the loop's thread. If the loop never runs again (it was closed), the job
    /// is never run.
    pub fn post(&self, job: Job) {
        let first = {
            let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            queue.push(job);
            queue.len() == 1
        };
        if first {
            // At most one byte per drain is outstanding, so the pipe never fills.
            let _ = (&self.wake).write(&[1]);
        }
    }

    /// The loop.
    pub fn event_loop<'py>(&self, py: Python<'py>) -> &Bound<'py, PyAny> {
        self.event_loop.bind(py)
    }

    fn drain(&self, py: Python<'_>) {
        let mut bytes = [0u8; 64];
        let _ = self
            .woken
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .read(&mut bytes);
        let jobs = std::mem::take(&mut *self.queue.lock().unwrap_or_else(|e| e.into_inner()));
        for job in jobs {
            job(py);
        }
    }
}

/// The callback the loop runs when the pipe is readable.
#[pyclass(frozen)]
struct Drain(Arc<LoopBridge>);

#[pymethods]
impl Drain {
    fn __call__(&self, py: Python<'_>) {
        self.0.drain(py);
    }
}

/// Holds a loop's bridge in the registry.
#[pyclass(frozen)]
struct Registered(Arc<LoopBridge>);

thread_local! {
    /// The last loop this thread asked for, and its bridge (one loop per thread is the rule).
    static LAST: RefCell<Option<Arc<LoopBridge>>> = const { RefCell::new(None) };
}

fn asyncio_get_running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    static GET: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    GET.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("asyncio")?.getattr("get_running_loop")?.unbind())
    })?
    .bind(py)
    .call0()
}

/// The bridge of the running loop (made on first use). Fails outside a coroutine.
pub fn current(py: Python<'_>) -> PyResult<Arc<LoopBridge>> {
    let running = asyncio_get_running_loop(py)?;
    if let Some(bridge) = LAST.with_borrow(|last| {
        last.as_ref()
            .filter(|b| b.event_loop.bind(py).is(&running))
            .cloned()
    }) {
        return Ok(bridge);
    }
    // Another loop on this thread (a new `asyncio.run`): find or make its bridge. The
    // registry holds loops weakly, so a finished loop's bridge goes with it.
    static REGISTRY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let registry = REGISTRY
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(
                py.import("weakref")?
                    .getattr("WeakKeyDictionary")?
                    .call0()?
                    .unbind(),
            )
        })?
        .bind(py);
    let bridge = match registry.get_item(&running) {
        Ok(found) => found.cast::<Registered>()?.get().0.clone(),
        Err(_) => {
            let (woken, wake) = std::io::pipe().map_err(|e| {
                pyo3::exceptions::PyOSError::new_err(format!("cannot make a pipe: {e}"))
            })?;
            let fd = std::os::fd::AsRawFd::as_raw_fd(&woken);
            let bridge = Arc::new(LoopBridge {
                event_loop: running.clone().unbind(),
                queue: Mutex::new(Vec::new()),
                wake,
                woken: Mutex::new(woken),
            });
            running.call_method1("add_reader", (fd, Drain(bridge.clone())))?;
            registry.set_item(&running, Registered(bridge.clone()))?;
            bridge
        }
    };
    LAST.with_borrow_mut(|last| *last = Some(bridge.clone()));
    Ok(bridge)
}

/// Cancels the Rust side of a call when its asyncio future is cancelled.
#[pyclass(frozen)]
struct AbortOnCancel(tokio::task::AbortHandle);

#[pymethods]
impl AbortOnCancel {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.0.abort();
        }
        Ok(())
    }
}

/// Whether a call's Rust future stops when the awaiting Python side is cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnCancel {
    /// It finishes anyway (short calls: a report, a read); its result is dropped.
    Finish,
    /// It is dropped (long calls: serving, waiting for a stream's next event).
    Drop,
}

/// An asyncio future for `future`, run on the runtime; `convert` turns its value into Python
/// on the loop's thread, and an error becomes its kind's exception.
pub fn spawn<'py, F, T, C>(
    py: Python<'py>,
    on_cancel: OnCancel,
    future: F,
    convert: C,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = agentlog::Result<T>> + Send + 'static,
    T: Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let bridge = current(py)?;
    let awaitable = bridge
        .event_loop(py)
        .call_method0(pyo3::intern!(py, "create_future"))?;
    let target = awaitable.clone().unbind();
    let poster = bridge.clone();
    // A call a handler makes carries its turn on, as a Rust handler's does.
    let trace = carried(py);
    let handle = runtime().spawn(async move {
        let result = agentlog::telemetry::carrying(trace, future).await;
        poster.post(Box::new(move |py| {
            let target = target.bind(py);
            let outcome = result
                .map_err(|e| to_py_err(py, e))
                .and_then(|v| convert(py, v));
            settle(target, outcome);
        }));
    });
    if on_cancel == OnCancel::Drop {
        awaitable.call_method1(
            pyo3::intern!(py, "add_done_callback"),
            (AbortOnCancel(handle.abort_handle()),),
        )?;
    }
    Ok(awaitable)
}

/// The trace context of the work in progress on the loop: a handler's turn, carried by the
/// asyncio task that runs it (a context variable, so the tasks it starts have it too).
#[pyclass(frozen)]
struct Carried(TraceContext);

/// The context variable holding the [`Carried`] context of the running asyncio task.
fn trace_var(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static VAR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    Ok(VAR
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(
                py.import("contextvars")?
                    .getattr("ContextVar")?
                    .call(
                        ("agentlog_trace",),
                        Some(&[("default", py.None())].into_py_dict(py)?),
                    )?
                    .unbind(),
            )
        })?
        .bind(py))
}

/// The trace context the running asyncio task carries (a handler's turn), if any.
pub fn carried(py: Python<'_>) -> Option<TraceContext> {
    let value = trace_var(py)
        .ok()?
        .call_method0(pyo3::intern!(py, "get"))
        .ok()?;
    Some(value.cast::<Carried>().ok()?.get().0.clone())
}

/// Start `coroutine` as an asyncio task on `bridge`'s loop carrying `trace` (the calls it
/// makes through this module carry it on: [`carried`]); none carried without one.
pub fn create_task<'py>(
    bridge: &LoopBridge,
    coroutine: Bound<'py, PyAny>,
    trace: Option<TraceContext>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = coroutine.py();
    let create = bridge
        .event_loop(py)
        .getattr(pyo3::intern!(py, "create_task"))?;
    let var = trace_var(py)?;
    // The loop's callbacks run in the context they were registered from: say "none" too
    // when one is set there, so that no other turn's context leaks into this task.
    if trace.is_none() && var.call_method0(pyo3::intern!(py, "get"))?.is_none() {
        return create.call1((coroutine,));
    }
    let context = py.import("contextvars")?.call_method0("copy_context")?;
    let value = match trace {
        Some(trace) => Py::new(py, Carried(trace))?.into_any(),
        None => py.None(),
    };
    context.call_method1(pyo3::intern!(py, "run"), (var.getattr("set")?, value))?;
    // A task copies the context current when it is made: this one.
    context.call_method1(pyo3::intern!(py, "run"), (create, coroutine))
}

/// Give an asyncio future its result or exception (unless it was cancelled meanwhile).
pub fn settle(target: &Bound<'_, PyAny>, outcome: PyResult<Py<PyAny>>) {
    let py = target.py();
    let done = target
        .call_method0(pyo3::intern!(py, "done"))
        .and_then(|d| d.is_truthy())
        .unwrap_or(true);
    if done {
        return;
    }
    let set = match outcome {
        Ok(value) => target.call_method1(pyo3::intern!(py, "set_result"), (value,)),
        Err(error) => target.call_method1(pyo3::intern!(py, "set_exception"), (error.value(py),)),
    };
    if let Err(e) = set {
        e.write_unraisable(py, Some(target));
    }
}

/// `None`, for calls that give nothing back.
pub fn none(py: Python<'_>, (): ()) -> PyResult<Py<PyAny>> {
    Ok(py.None())
}

/// A JSON value as plain Python data.
pub fn json(py: Python<'_>, value: serde_json::Value) -> PyResult<Py<PyAny>> {
    Ok(crate::json::to_py(py, &value)?.unbind())
}

pub(crate) fn is_coroutine_function(function: &Bound<'_, PyAny>) -> PyResult<bool> {
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
