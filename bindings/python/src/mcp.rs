//! `agentlog.McpBridge`: the SDK's MCP bridge over plain data, and `ToolCall`, what a Python
//! tool handler gets. The tool handlers themselves run in `worker` (`Worker(tools=...)`).

use agentlog::mcp::{McpBridge, McpConfig, McpHeaders, McpReply, McpRequest};
use agentlog::telemetry::carrying;
use agentlog::worker::ToolCall;
use agentlog_wire::trace::TraceContext;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::aio::{self, OnCancel};
use crate::bridge::{RpcFrames, body_bytes, pairs_of};
use crate::context::PyTaskContext;
use crate::json::{serialize_to_py, to_json as py_to_json};
use crate::{PyCaller, PyLog, caller_of};

/// The MCP bridge over the tools' topics: `tools/list`, `tools/call` (a durable task a
/// worker answers), MCP tasks, both protocol eras.
#[pyclass(frozen, module = "agentlog", name = "McpBridge")]
#[derive(Debug, Clone)]
pub struct PyMcpBridge(pub McpBridge);

#[pymethods]
impl PyMcpBridge {
    /// Open the bridge serving `tools` (definitions as `agentlog serve --tools FILE` reads
    /// them: a list of tools, or a dict with one under `"tools"` and `"resources"`,
    /// `"resourceTemplates"` and `"prompts"` beside it) over `log`, creating each tool
    /// agent's topics. A bad definition is a `ConfigError`.
    #[staticmethod]
    #[pyo3(signature = (log, tools, *, name = None, version = None, instructions = None))]
    fn open<'py>(
        py: Python<'py>,
        log: &PyLog,
        tools: &Bound<'py, PyAny>,
        name: Option<String>,
        version: Option<String>,
        instructions: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let tools = py_to_json(tools, "tools")?;
        let log = log.0.clone();
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                let mut config = McpConfig::from_json(tools, None)?;
                if let Some(name) = name {
                    config.name = name;
                }
                if let Some(version) = version {
                    config.version = version;
                }
                config.instructions = instructions;
                McpBridge::open(log, config).await
            },
            |py, bridge| Ok(Py::new(py, PyMcpBridge(bridge))?.into_any()),
        )
    }

    /// Serve `definitions` (as `open` takes them) from now on, keeping this bridge's name,
    /// version and instructions: the streams listening are told which lists changed, and so
    /// is the caller (`{"tools": bool, "prompts": bool, "resources": bool}`). A bad
    /// definition is a `ConfigError` and changes nothing.
    fn reload<'py>(
        &self,
        py: Python<'py>,
        definitions: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let definitions = py_to_json(definitions, "definitions")?;
        let bridge = self.0.clone();
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                let served = bridge.config();
                let mut config = McpConfig::from_json(definitions, None)?;
                config.name = served.name;
                config.version = served.version;
                config.instructions = served.instructions;
                bridge.reload(config).await
            },
            |py, changed| {
                let changed = serde_json::json!({"tools": changed.tools,
                    "prompts": changed.prompts, "resources": changed.resources});
                serialize_to_py(py, &changed).map(Bound::unbind)
            },
        )
    }

    /// The tool definitions served, as given (with `agent` and `taskSupport` filled in).
    #[getter]
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serialize_to_py(py, &self.0.config().tools)
    }

    /// The tool agents (whose workers answer the calls), sorted.
    #[getter]
    fn agents(&self) -> Vec<String> {
        let mut agents: Vec<String> = self.0.bridges().keys().cloned().collect();
        agents.sort();
        agents
    }

    /// Answer one JSON-RPC message (`bytes` or `str`). `headers`: the HTTP request's
    /// headers (a mapping, names in any case), from which `MCP-Protocol-Version`,
    /// `Mcp-Method` and `Mcp-Name` are checked against the body, and whose
    /// `traceparent`/`tracestate` are the caller's trace context (before a calling handler's
    /// turn's and `params._meta`'s; a bad one is ignored); `None` for a transport without
    /// them. `accepts_stream`: the client takes `text/event-stream`.
    #[pyo3(signature = (body, *, headers = None, caller = None, accepts_stream = false))]
    fn handle_rpc<'py>(
        &self,
        py: Python<'py>,
        body: &Bound<'py, PyAny>,
        headers: Option<&Bound<'py, PyAny>>,
        caller: Option<&PyCaller>,
        accepts_stream: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let body = body_bytes(body)?;
        let pairs = pairs_of(headers, "headers")?;
        let pairs = pairs
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str()));
        let trace = TraceContext::from_pairs(pairs.clone());
        let headers = headers
            .filter(|h| !h.is_none())
            .map(|_| McpHeaders::from_pairs(pairs));
        let bridge = self.0.clone();
        let caller = caller_of(caller);
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                let request = McpRequest {
                    body: &body,
                    caller,
                    headers,
                    accepts_stream,
                };
                // The headers' context is the caller's, as on the `/mcp` route; without one,
                // the one `aio::spawn` carries (a handler's turn), else `params._meta`'s.
                Ok(carrying(trace, bridge.handle(request)).await)
            },
            |py, reply| Ok(Py::new(py, PyMcpReply::new(py, reply)?)?.into_any()),
        )
    }

    fn __repr__(&self) -> String {
        format!("McpBridge(tools={})", self.0.config().tools.len())
    }
}

/// What `McpBridge.handle_rpc` answers: the HTTP `status`, and a JSON `body`, or `frames`
/// (an async iterator of SSE frames), or neither (202 Accepted).
#[pyclass(frozen, module = "agentlog", name = "McpReply")]
#[derive(Debug)]
pub struct PyMcpReply {
    status: u16,
    content_type: Option<&'static str>,
    body: Option<Py<PyBytes>>,
    frames: Option<Py<RpcFrames>>,
}

impl PyMcpReply {
    fn new(py: Python<'_>, reply: McpReply) -> PyResult<Self> {
        let (status, content_type) = (reply.status(), reply.content_type());
        let (body, frames) = match reply {
            McpReply::Json { body, .. } => (Some(PyBytes::new(py, &body).unbind()), None),
            McpReply::Accepted => (None, None),
            McpReply::Stream(messages) => (
                None,
                Some(Py::new(
                    py,
                    RpcFrames::new(agentlog::mcp::sse_frames(messages)),
                )?),
            ),
        };
        Ok(Self {
            status,
            content_type,
            body,
            frames,
        })
    }
}

#[pymethods]
impl PyMcpReply {
    /// The HTTP status to answer with.
    #[getter]
    fn status(&self) -> u16 {
        self.status
    }

    /// The response's `Content-Type` (`None` without a body).
    #[getter]
    fn content_type(&self) -> Option<&'static str> {
        self.content_type
    }

    /// The JSON-RPC response, unless the reply is a stream or 202.
    #[getter]
    fn body(&self, py: Python<'_>) -> Option<Py<PyBytes>> {
        self.body.as_ref().map(|b| b.clone_ref(py))
    }

    /// The SSE frames (progress notifications, then the response), for a stream reply.
    #[getter]
    fn frames(&self, py: Python<'_>) -> Option<Py<RpcFrames>> {
        self.frames.as_ref().map(|f| f.clone_ref(py))
    }

    fn __repr__(&self) -> String {
        let kind = if self.frames.is_some() {
            "frames"
        } else if self.body.is_some() {
            "body"
        } else {
            "empty"
        };
        format!("McpReply(status={}, {kind})", self.status)
    }
}

/// One call of a tool, as a tool handler gets it.
#[pyclass(frozen, module = "agentlog", name = "ToolCall")]
#[derive(Debug)]
pub struct PyToolCall {
    call: ToolCall,
    task: Py<PyTaskContext>,
}

impl PyToolCall {
    pub fn new(py: Python<'_>, call: ToolCall) -> PyResult<Self> {
        let task = Py::new(py, PyTaskContext(call.task.clone()))?;
        Ok(Self { call, task })
    }
}

#[pymethods]
impl PyToolCall {
    /// The tool's name.
    #[getter]
    fn name(&self) -> &str {
        &self.call.params.name
    }

    /// The arguments (a dict; empty when the call had none), checked against the tool's
    /// `inputSchema` already.
    #[getter]
    fn arguments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serialize_to_py(py, &self.call.arguments)
    }

    /// The call's params as the client sent them (`name`, `arguments`, `_meta`).
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serialize_to_py(py, &self.call.params)
    }

    /// The client's `inputResponses` when this turn resumes a call that asked for input
    /// (`ask`); on the first turn, the call's own (an MRTR retry without `requestState`), else
    /// `None`.
    #[getter]
    fn input_responses<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serialize_to_py(py, &self.call.input_responses)
    }

    /// The task the call is: `report(...)` progress, watch `cancelled`, carry `hops`.
    #[getter]
    fn task(&self, py: Python<'_>) -> Py<PyTaskContext> {
        self.task.clone_ref(py)
    }

    /// Ask the client for input (`input_requests`: keyed MCP requests, e.g.
    /// `{"confirm": {"method": "elicitation/create", "params": {...}}}`; `text` the status
    /// message). Ends this turn: what the handler returns after is dropped, and the call
    /// runs again with the client's answers in `input_responses`.
    fn ask<'py>(
        &self,
        py: Python<'py>,
        text: String,
        input_requests: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let requests = py_to_json(input_requests, "input_requests")?;
        let call = self.call.clone();
        aio::spawn(
            py,
            OnCancel::Finish,
            async move {
                let requests: serde_json::Map<String, serde_json::Value> =
                    agentlog::bridge::json::from_params("input_requests", &requests)?;
                call.ask(&text, requests).await
            },
            aio::none,
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolCall(name={:?}, task_id={:?})",
            self.call.params.name,
            self.call.task.task_id()
        )
    }
}

/// Add the classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyMcpBridge>()?;
    m.add_class::<PyMcpReply>()?;
    m.add_class::<PyToolCall>()?;
    Ok(())
}
