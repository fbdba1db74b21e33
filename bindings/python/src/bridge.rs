//! `agentlog.Bridge`: the typed verbs over plain data, `handle_rpc`, and event streams as
//! async iterators.

use std::sync::Arc;

use agentlog::bridge::json::{from_params, to_json};
use agentlog::bridge::{
    PulledStream, RpcReply, RpcRequest, SseFrames, TaskStream, card_from_file, card_from_json,
};
use agentlog::{Bridge, BridgeConfig};
use agentlog_wire::trace::TraceContext;
use futures::StreamExt;
use pyo3::exceptions::PyStopAsyncIteration;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use tokio::sync::Mutex;

use crate::aio::{self, OnCancel};
use crate::duration::optional_seconds;
use crate::error::to_py_err;
use crate::json::{to_json as py_to_json, to_py};
use crate::{PyCaller, PyLog, caller_of};

/// The `(name, value)` pairs of a `str` → `str` mapping (headers, a trace carrier), if given.
pub fn pairs_of(
    mapping: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Option<Vec<(String, String)>>> {
    let Some(mapping) = mapping.filter(|m| !m.is_none()) else {
        return Ok(None);
    };
    let items = mapping.call_method0("items").map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!("{what} must be a mapping of str to str"))
    })?;
    let mut pairs = Vec::new();
    for item in items.try_iter()? {
        pairs.push(item?.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "{what} must be a mapping of str to str"
            ))
        })?);
    }
    Ok(Some(pairs))
}

/// The A2A bridge of one agent over a log.
#[pyclass(frozen, module = "agentlog", name = "Bridge")]
#[derive(Debug, Clone)]
pub struct PyBridge(pub Bridge);

/// A card from what Python gave: a dict (A2A 1.0 `AgentCard` JSON, any subset), a path to
/// such a JSON file, or nothing (the defaults).
pub fn card_of(
    py: Python<'_>,
    agent: &str,
    card: Option<&Bound<'_, PyAny>>,
) -> PyResult<agentlog_wire::a2a::AgentCard> {
    let Some(card) = card.filter(|c| !c.is_none()) else {
        return Ok(agentlog::bridge::default_card(agent));
    };
    let made = if card.is_instance_of::<PyString>() || card.hasattr("__fspath__")? {
        let path: std::path::PathBuf = card.extract()?;
        card_from_file(agent, &path)
    } else {
        card_from_json(agent, &py_to_json(card, "card")?)
    };
    made.map_err(|e| to_py_err(py, e))
}

/// The skills' input schemas of a card given as `card_of` takes it: each skill's
/// `inputSchema` (a dict's, or the file's).
fn skill_schemas_of(
    py: Python<'_>,
    card: Option<&Bound<'_, PyAny>>,
) -> PyResult<std::collections::BTreeMap<String, serde_json::Value>> {
    let Some(card) = card.filter(|c| !c.is_none()) else {
        return Ok(Default::default());
    };
    let schemas = if card.is_instance_of::<PyString>() || card.hasattr("__fspath__")? {
        let path: std::path::PathBuf = card.extract()?;
        agentlog::bridge::skill_schemas_from_file(&path)
    } else {
        agentlog::bridge::skill_schemas_from_json(&py_to_json(card, "card")?)
    };
    schemas.map_err(|e| to_py_err(py, e))
}

/// A JSON-RPC body given as `bytes` or `str`.
pub fn body_bytes(body: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(text) = body.cast::<PyString>() {
        return Ok(text.to_str()?.as_bytes().to_vec());
    }
    body.extract()
}

impl PyBridge {
    /// A typed verb: params from `request`, the result as plain data.
    fn verb<'py, T, R, F, Fut>(
        &self,
        py: Python<'py>,
        what: &'static str,
        request: &Bound<'py, PyAny>,
        caller: Option<&PyCaller>,
        call: F,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        T: serde::de::DeserializeOwned + Send + 'static,
        R: serde::Serialize + Send + 'static,
        F: FnOnce(Bridge, agentlog::Caller, T) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = agentlog::Result<R>> + Send + 'static,
    {
        let params = py_to_json(request, "request")?;
        let bridge = self.0.clone();
        let caller = caller_of(caller);
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                let request: T = from_params(what, &params)?;
                to_json(&call(bridge, caller, request).await?)
            },
            aio::json,
        )
    }
}

#[pymethods]
impl PyBridge {
    /// Open the bridge of `agent` over `log`: create its topics if needed and replay them.
    #[staticmethod]
    #[pyo3(signature = (log, agent, *, card = None, blocking_timeout = None, retention = None))]
    fn open<'py>(
        py: Python<'py>,
        log: &PyLog,
        agent: String,
        card: Option<&Bound<'py, PyAny>>,
        blocking_timeout: Option<f64>,
        retention: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut config = BridgeConfig::new(&agent);
        config.card = card_of(py, &agent, card)?;
        config.skill_schemas = skill_schemas_of(py, card)?;
        if let Some(timeout) = optional_seconds(py, blocking_timeout, "blocking_timeout")? {
            config.blocking_timeout = timeout;
        }
        config.retention = optional_seconds(py, retention, "retention")?;
        let log = log.0.clone();
        aio::spawn(
            py,
            OnCancel::Finish,
            async move { Bridge::open(log, config).await },
            |py, bridge| Ok(Py::new(py, PyBridge(bridge))?.into_any()),
        )
    }

    /// The agent card (A2A 1.0 JSON).
    #[getter]
    fn agent_card<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::json::serialize_to_py(py, self.0.agent_card())
    }

    /// The agent's name.
    #[getter]
    fn agent(&self) -> String {
        self.0.config().topics.agent.clone()
    }

    /// `SendMessage`: a `SendMessageRequest` in, a `SendMessageResponse` (`{"task": ...}` or
    /// `{"message": ...}`) out.
    #[pyo3(signature = (request, *, caller = None))]
    fn send_message<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
        caller: Option<&PyCaller>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(
            py,
            "SendMessageRequest",
            request,
            caller,
            |b, c, r| async move { b.send_message(&c, r).await },
        )
    }

    /// `GetTask`: a `GetTaskRequest` (`{"id": ..., "historyLength"?: n}`) in, the `Task` out.
    #[pyo3(signature = (request, *, caller = None))]
    fn get_task<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
        caller: Option<&PyCaller>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(
            py,
            "GetTaskRequest",
            request,
            caller,
            |b, c, r| async move { b.get_task(&c, r).await },
        )
    }

    /// `CancelTask`: a `CancelTaskRequest` (`{"id": ...}`) in, the `Task` out.
    #[pyo3(signature = (request, *, caller = None))]
    fn cancel_task<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
        caller: Option<&PyCaller>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(
            py,
            "CancelTaskRequest",
            request,
            caller,
            |b, c, r| async move { b.cancel_task(&c, r).await },
        )
    }

    /// `ListTasks`: a `ListTasksRequest` (filters and paging; default none) in, a
    /// `ListTasksResponse` out.
    #[pyo3(signature = (request = None, *, caller = None))]
    fn list_tasks<'py>(
        &self,
        py: Python<'py>,
        request: Option<&Bound<'py, PyAny>>,
        caller: Option<&PyCaller>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let empty = pyo3::types::PyDict::new(py).into_any();
        let request = request.unwrap_or(&empty);
        self.verb(
            py,
            "ListTasksRequest",
            request,
            caller,
            |b, c, r| async move { b.list_tasks(&c, r).await },
        )
    }

    /// `SendStreamingMessage`: an async iterator of events (`{"position", "last", "event"}`);
    /// with `resume_after` (a position seen) it goes on right after it.
    #[pyo3(signature = (request, *, caller = None, resume_after = None))]
    fn send_streaming_message(
        &self,
        py: Python<'_>,
        request: &Bound<'_, PyAny>,
        caller: Option<&PyCaller>,
        resume_after: Option<u64>,
    ) -> PyResult<EventStream> {
        let params = py_to_json(request, "request")?;
        let bridge = self.0.clone();
        let caller = caller_of(caller);
        Ok(EventStream::new(py, async move {
            let request = from_params("SendMessageRequest", &params)?;
            bridge
                .send_streaming_message(&caller, request, None, resume_after)
                .await
        }))
    }

    /// `SubscribeToTask`: an async iterator of the task's events until it ends; with
    /// `resume_after`, the events after that position instead of a snapshot first.
    #[pyo3(signature = (request, *, caller = None, resume_after = None))]
    fn subscribe_to_task(
        &self,
        py: Python<'_>,
        request: &Bound<'_, PyAny>,
        caller: Option<&PyCaller>,
        resume_after: Option<u64>,
    ) -> PyResult<EventStream> {
        let params = py_to_json(request, "request")?;
        let bridge = self.0.clone();
        let caller = caller_of(caller);
        Ok(EventStream::new(py, async move {
            let request = from_params("SubscribeToTaskRequest", &params)?;
            bridge
                .subscribe_to_task(&caller, request, resume_after)
                .await
        }))
    }

    /// Answer a JSON-RPC request body (`bytes` or `str`): the response body as `bytes`, or
    /// for a streaming method an async iterator of SSE frames (`bytes`, each a whole
    /// `id:`/`data:` frame). `version` is the `A2A-Version` header, `extensions` the
    /// `A2A-Extensions` URIs, `resume_after` an SSE `Last-Event-ID`, `trace` a mapping with
    /// the request's `traceparent`/`tracestate` (its headers, or an OpenTelemetry carrier;
    /// other keys ignored): the caller's context, before a calling handler's turn's; a bad
    /// one is ignored.
    #[pyo3(signature = (body, *, caller = None, version = None, extensions = Vec::new(), resume_after = None, trace = None))]
    #[allow(clippy::too_many_arguments)]
    fn handle_rpc<'py>(
        &self,
        py: Python<'py>,
        body: &Bound<'py, PyAny>,
        caller: Option<&PyCaller>,
        version: Option<String>,
        extensions: Vec<String>,
        resume_after: Option<u64>,
        trace: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let body = body_bytes(body)?;
        let trace = pairs_of(trace, "trace")?.and_then(|p| {
            TraceContext::from_pairs(p.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        });
        let bridge = self.0.clone();
        let caller = caller_of(caller);
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                // Without a context of its own the SDK takes the one `aio::spawn` carries (a
                // handler's turn), as a Rust handler's call does.
                let request = RpcRequest::new(&body, caller)
                    .a2a_version(version.as_deref())
                    .extensions(extensions)
                    .resume_after(resume_after)
                    .trace(trace);
                Ok(bridge.handle(request).await)
            },
            |py, reply| match reply {
                RpcReply::Json(bytes) => Ok(PyBytes::new(py, &bytes).into_any().unbind()),
                RpcReply::Stream(stream) => {
                    Ok(Py::new(py, RpcFrames::new(stream.into_sse_frames()))?.into_any())
                }
                // A JSON-RPC body never gets a typed answer.
                RpcReply::Answer(_) => Err(to_py_err(
                    py,
                    agentlog::Error::new(
                        agentlog::ErrorKind::Internal,
                        "a typed answer to a JSON-RPC request",
                    ),
                )),
            },
        )
    }

    /// Benchmark plumbing (`benches/http_bench.py`): `calls` sequential `get_task` calls of
    /// the Rust verb in a Rust loop on this bridge, the seconds they took; what
    /// `await bridge.get_task(...)` costs beyond it is the binding's.
    #[pyo3(name = "_bench_get_task")]
    fn bench_get_task<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
        calls: u32,
    ) -> PyResult<Bound<'py, PyAny>> {
        let params = py_to_json(request, "request")?;
        let bridge = self.0.clone();
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                let request: agentlog_wire::a2a::GetTaskRequest =
                    from_params("GetTaskRequest", &params)?;
                let caller = agentlog::Caller::anonymous();
                let started = std::time::Instant::now();
                for _ in 0..calls {
                    std::hint::black_box(bridge.get_task(&caller, request.clone()).await?);
                }
                Ok(started.elapsed().as_secs_f64())
            },
            |py, seconds| Ok(seconds.into_pyobject(py)?.into_any().unbind()),
        )
    }

    fn __repr__(&self) -> String {
        format!("Bridge(agent={:?})", self.0.config().topics.agent)
    }
}

/// An async iterator of a task's events: `{"position", "last", "event"}` dicts.
#[pyclass(frozen, module = "agentlog", name = "EventStream")]
#[derive(Debug)]
pub struct EventStream {
    stream: Arc<PulledStream>,
}

impl EventStream {
    /// The stream `open` opens at the first read, carrying the trace context of the asyncio
    /// task asking for it (a handler's turn).
    fn new(
        py: Python<'_>,
        open: impl Future<Output = agentlog::Result<TaskStream>> + Send + 'static,
    ) -> Self {
        let open = agentlog::telemetry::carrying(aio::carried(py), open);
        Self {
            stream: Arc::new(PulledStream::new(open)),
        }
    }
}

fn stop_or<T>(
    py: Python<'_>,
    item: Option<T>,
    convert: impl FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    match item {
        Some(item) => convert(py, item),
        None => Err(PyStopAsyncIteration::new_err(())),
    }
}

#[pymethods]
impl EventStream {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = self.stream.clone();
        let next = async move {
            match stream.next().await? {
                Some(event) => event.to_json().map(Some),
                None => Ok(None),
            }
        };
        aio::spawn(py, OnCancel::Drop, next, |py, event| {
            stop_or(py, event, |py, event| Ok(to_py(py, &event)?.unbind()))
        })
    }

    /// Stop the stream (its place under the bridge's limits is given back).
    fn aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = self.stream.clone();
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                stream.close().await;
                Ok(())
            },
            aio::none,
        )
    }
}

/// An async iterator of SSE frames (`bytes`, each a whole frame) answering a streaming
/// request: an A2A `handle_rpc` stream, or an MCP reply's `frames`.
#[pyclass(frozen, module = "agentlog", name = "RpcFrames")]
pub struct RpcFrames {
    stream: Arc<Mutex<Option<SseFrames>>>,
}

impl std::fmt::Debug for RpcFrames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcFrames").finish_non_exhaustive()
    }
}

impl RpcFrames {
    pub fn new(frames: SseFrames) -> Self {
        Self {
            stream: Arc::new(Mutex::new(Some(frames))),
        }
    }
}

#[pymethods]
impl RpcFrames {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = self.stream.clone();
        aio::spawn(
            py,
            OnCancel::Drop,
            async move {
                let mut guard = stream.lock().await;
                let Some(frames) = guard.as_mut() else {
                    return Ok(None);
                };
                let frame = frames.next().await;
                if frame.is_none() {
                    *guard = None;
                }
                Ok(frame)
            },
            |py, frame| {
                stop_or(py, frame, |py, f| {
                    Ok(PyBytes::new(py, &f).into_any().unbind())
                })
            },
        )
    }

    /// Stop the stream.
    fn aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = self.stream.clone();
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                *stream.lock().await = None;
                Ok(())
            },
            aio::none,
        )
    }
}

/// Add the classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBridge>()?;
    m.add_class::<EventStream>()?;
    m.add_class::<RpcFrames>()?;
    Ok(())
}
