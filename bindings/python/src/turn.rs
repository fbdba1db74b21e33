//! Running one Python coroutine for a worker's turn: posted to the handler's event loop as an
//! asyncio task, its outcome sent back over a oneshot, cancelled with the turn. What
//! `worker`'s handlers and `served`'s prompt, resource and completion handlers share.

use std::sync::{Arc, Mutex};

use agentlog::worker::TaskContext;
use pyo3::prelude::*;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::aio::LoopBridge;
use crate::json::to_json as py_to_json;

/// How a handler's asyncio task ended.
pub(crate) enum Outcome {
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
pub(crate) enum Ran {
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
pub(crate) async fn run_coroutine(
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
    // What the handler calls through this module carries its turn on (`aio::carried`).
    let trace = task.span_context().cloned();
    event_loop.post(Box::new(move |py| {
        let started = (|| -> PyResult<Py<PyAny>> {
            let coroutine = function.bind(py).call1((argument(py)?,))?;
            let asyncio_task = crate::aio::create_task(&bridge, coroutine, trace)?;
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
