//! `agentlog.TaskContext`: one turn of a task, as a Python handler gets it. Each method is
//! one `agentlog::worker::TaskContext` method.

use agentlog::bridge::json::from_params;
use agentlog::worker::TaskContext;
use agentlog_wire::a2a::{Artifact, Part};
use agentlog_wire::mcp::LoggingLevel;
use pyo3::prelude::*;

use crate::PyCaller;
use crate::aio::{self, OnCancel};
use crate::json::{serialize_to_py, to_json as py_to_json};

/// What a handler knows about its task, and how it reports back. Every report is a record
/// on the log; once the turn has ended (or was canceled) reports are skipped.
#[pyclass(frozen, module = "agentlog", name = "TaskContext")]
#[derive(Debug)]
pub struct PyTaskContext(pub TaskContext);

impl PyTaskContext {
    fn write<'py, F, Fut>(&self, py: Python<'py>, call: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(TaskContext) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = agentlog::Result<()>> + Send + 'static,
    {
        let task = self.0.clone();
        aio::spawn(py, OnCancel::Finish, call(task), aio::none)
    }

    /// A follow-up message (or `None`) as plain data.
    fn message_result(
        py: Python<'_>,
        message: Option<agentlog_wire::a2a::Message>,
    ) -> PyResult<Py<PyAny>> {
        match message {
            Some(message) => Ok(serialize_to_py(py, &message)?.unbind()),
            None => Ok(py.None()),
        }
    }
}

#[pymethods]
impl PyTaskContext {
    /// The task's id.
    #[getter]
    fn task_id(&self) -> &str {
        self.0.task_id()
    }

    /// The task's context (conversation) id.
    #[getter]
    fn context_id(&self) -> &str {
        self.0.context_id()
    }

    /// The text parts of the message this turn answers, joined with newlines.
    #[getter]
    fn text(&self) -> String {
        self.0.text()
    }

    /// The message this turn answers (A2A 1.0 `Message`).
    #[getter]
    fn message<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serialize_to_py(py, self.0.message())
    }

    /// The task's history up to and including `message`, oldest first.
    #[getter]
    fn history<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serialize_to_py(py, self.0.history())
    }

    /// The skill the task is for (its first message's `agentlog.skill` or `skillId`
    /// metadata), or `None`.
    #[getter]
    fn skill(&self) -> Option<&str> {
        self.0.skill()
    }

    /// The extension URIs the client activated for this message.
    #[getter]
    fn extensions(&self) -> Vec<String> {
        self.0.extensions().to_vec()
    }

    /// The task's owner.
    #[getter]
    fn caller(&self) -> PyCaller {
        PyCaller(self.0.caller().clone())
    }

    /// Which run of this turn this is: 1, or more after a takeover from a worker that died.
    #[getter]
    fn attempt(&self) -> u32 {
        self.0.attempt()
    }

    /// `attempt > 1`: an earlier run may have done part of the work.
    #[getter]
    fn is_retry(&self) -> bool {
        self.0.is_retry()
    }

    /// `<task id>/<message id>`, the same in every run of the turn: pass it to outside
    /// systems so a side effect happens once.
    #[getter]
    fn idempotency_key(&self) -> String {
        self.0.idempotency_key()
    }

    /// The bridges the message came through (the hop guard).
    #[getter]
    fn hops(&self) -> Vec<String> {
        self.0.hops().to_vec()
    }

    /// The W3C trace context of the call that brought the message, as a carrier dict
    /// (`{"traceparent": ..., "tracestate": ...}`, the state only when there is one) that an
    /// OpenTelemetry propagator extracts; `None` when the call came without one.
    #[getter]
    fn trace_context(&self) -> Option<std::collections::HashMap<&'static str, String>> {
        self.0.trace_context().map(carrier)
    }

    /// The trace context of this turn's own span (a child of `trace_context`, the one the
    /// turn's records carry), as the same kind of carrier dict: the parent of the spans the
    /// handler makes. `None` when the call came untraced and spans are not exported.
    #[getter]
    fn span_context(&self) -> Option<std::collections::HashMap<&'static str, String>> {
        self.0.span_context().map(carrier)
    }

    /// Whether the turn was canceled (the task canceled, the turn taken over, the worker
    /// shutting down): return promptly. The handler's asyncio task is cancelled too.
    #[getter]
    fn cancelled(&self) -> bool {
        self.0.cancellation().is_cancelled()
    }

    /// Wait until the turn is canceled.
    fn wait_cancelled<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let token = self.0.cancellation().clone();
        aio::spawn(
            py,
            OnCancel::Drop,
            async move {
                token.cancelled().await;
                Ok(())
            },
            aio::none,
        )
    }

    /// Report progress: status working, with an optional agent message.
    #[pyo3(signature = (text = None))]
    fn working<'py>(&self, py: Python<'py>, text: Option<String>) -> PyResult<Bound<'py, PyAny>> {
        self.write(py, |t| async move { t.working(text.as_deref()).await })
    }

    /// Report progress (an MCP tool call's `notifications/progress`): status working with a
    /// progress part `{progress, total?, message?}`. `progress` should grow with each report
    /// (the MCP bridge forwards only increasing values).
    #[pyo3(signature = (progress, total = None, message = None))]
    fn report<'py>(
        &self,
        py: Python<'py>,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.write(py, move |t| async move {
            t.report(progress, total, message.as_deref()).await
        })
    }

    /// Log a message (an MCP tool call's `notifications/message`): `level` one of MCP's
    /// (`"debug"` ... `"emergency"`; another is an `InvalidParamsError`), `data` any JSON
    /// value, `logger` the logger's name. The MCP bridge sends it, in order with progress and
    /// before the result, to a client that asked for the level.
    #[pyo3(signature = (level, data, logger = None))]
    fn log<'py>(
        &self,
        py: Python<'py>,
        level: String,
        data: &Bound<'py, PyAny>,
        logger: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let data = py_to_json(data, "data")?;
        self.write(py, move |t| async move {
            let level: LoggingLevel = from_params("level", &serde_json::Value::String(level))?;
            t.log(level, logger.as_deref(), data).await
        })
    }

    /// Add an artifact (A2A 1.0 `Artifact`: `{"artifactId", "parts", "name"?...}`), or with
    /// `append` a chunk to the artifact of that id; `last_chunk` marks its last chunk.
    #[pyo3(signature = (artifact, *, append = false, last_chunk = false))]
    fn artifact<'py>(
        &self,
        py: Python<'py>,
        artifact: &Bound<'py, PyAny>,
        append: bool,
        last_chunk: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let json = py_to_json(artifact, "artifact")?;
        self.write(py, move |t| async move {
            let artifact: Artifact = from_params("Artifact", &json)?;
            t.artifact(artifact, append, last_chunk).await
        })
    }

    /// Ask the client for input; ends the turn (the handler runs again on the answer).
    fn input_required<'py>(&self, py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
        self.write(py, |t| async move { t.input_required(&text).await })
    }

    /// Ask the client to authenticate; ends the turn.
    fn auth_required<'py>(&self, py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
        self.write(py, |t| async move { t.auth_required(&text).await })
    }

    /// Complete the task, with an optional final agent message.
    #[pyo3(signature = (text = None))]
    fn complete<'py>(&self, py: Python<'py>, text: Option<String>) -> PyResult<Bound<'py, PyAny>> {
        self.write(py, |t| async move { t.complete(text.as_deref()).await })
    }

    /// Fail the task with `text`.
    fn fail<'py>(&self, py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
        self.write(py, |t| async move { t.fail(&text).await })
    }

    /// Reject the task with `text`.
    fn reject<'py>(&self, py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
        self.write(py, |t| async move { t.reject(&text).await })
    }

    /// Answer with a message instead of a task (A2A 1.0 `Part` dicts); ends the task.
    fn reply<'py>(
        &self,
        py: Python<'py>,
        parts: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let json = py_to_json(parts, "parts")?;
        self.write(py, move |t| async move {
            let parts: Vec<Part> = from_params("parts", &json)?;
            t.reply(parts).await
        })
    }

    /// `reply` with one text part.
    fn reply_text<'py>(&self, py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
        self.write(py, |t| async move { t.reply_text(&text).await })
    }

    /// Take the oldest follow-up message sent while this turn runs, or `None`.
    fn follow_up<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let task = self.0.clone();
        aio::spawn(
            py,
            OnCancel::Finish,
            async move { task.follow_up().await },
            Self::message_result,
        )
    }

    /// Wait for a follow-up message and take it; `None` once the turn is over.
    fn wait_follow_up<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let task = self.0.clone();
        aio::spawn(
            py,
            OnCancel::Drop,
            async move { task.wait_follow_up().await },
            Self::message_result,
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "TaskContext(task_id={:?}, attempt={})",
            self.0.task_id(),
            self.0.attempt()
        )
    }
}

/// A W3C trace context as a propagator's carrier dict (`tracestate` only when there is one).
fn carrier(
    context: &agentlog_wire::trace::TraceContext,
) -> std::collections::HashMap<&'static str, String> {
    let mut carrier = std::collections::HashMap::new();
    carrier.insert("traceparent", context.traceparent().to_owned());
    if !context.tracestate().is_empty() {
        carrier.insert("tracestate", context.tracestate().to_owned());
    }
    carrier
}
