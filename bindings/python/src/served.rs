//! The `prompts=`, `resources=`, `prompt_completions=` and `resource_completions=` arguments
//! of `agentlog.Worker`: `async def`s taking a `ToolCall` that answer `prompts/get`,
//! `resources/read` of a template's URIs and `completion/complete` through the log, as the
//! SDK's `Tools::prompt`, `Tools::resource`, `Tools::prompt_completion` and
//! `Tools::resource_completion` run them. Type checks and conversion only.

use std::sync::Arc;

use agentlog::worker::{
    CompletionHandler, HandlerError, HandlerResult, PromptHandler, ResourceHandler, ToolCall, Tools,
};
use agentlog_wire::mcp::{Completion, ResourceContents};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{Map, Value};

use crate::aio::{LoopBridge, is_coroutine_function};
use crate::mcp::PyToolCall;
use crate::turn::{Outcome, Ran, run_coroutine};

type Functions = Vec<(String, Arc<Py<PyAny>>)>;

/// The handlers of the four arguments, by prompt name or URI template.
#[derive(Debug, Default)]
pub(crate) struct Served {
    prompts: Functions,
    resources: Functions,
    prompt_completions: Functions,
    resource_completions: Functions,
}

/// `value` (a dict of `key` → `async def` taking a ToolCall), checked; `None` is none.
fn functions(value: Option<&Bound<'_, PyAny>>, argument: &str, key: &str) -> PyResult<Functions> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(Vec::new());
    };
    let dict = value.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{argument} must be a dict of {key} -> `async def` taking a ToolCall, got {}",
            value
                .get_type()
                .name()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string())
        ))
    })?;
    let mut functions = Vec::with_capacity(dict.len());
    for (name, function) in dict.iter() {
        let name: String = name
            .extract()
            .map_err(|_| PyTypeError::new_err(format!("{argument}: a {key} must be a str")))?;
        if !is_coroutine_function(&function)? {
            return Err(PyTypeError::new_err(format!(
                "{argument}[{name:?}] must be an `async def` function taking a ToolCall, got {}",
                function.repr()?
            )));
        }
        functions.push((name, Arc::new(function.unbind())));
    }
    Ok(functions)
}

impl Served {
    /// The four arguments read.
    pub(crate) fn read(
        prompts: Option<&Bound<'_, PyAny>>,
        resources: Option<&Bound<'_, PyAny>>,
        prompt_completions: Option<&Bound<'_, PyAny>>,
        resource_completions: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        Ok(Self {
            prompts: functions(prompts, "prompts", "prompt name")?,
            resources: functions(resources, "resources", "URI template")?,
            prompt_completions: functions(prompt_completions, "prompt_completions", "prompt name")?,
            resource_completions: functions(
                resource_completions,
                "resource_completions",
                "URI template",
            )?,
        })
    }

    /// Whether no handler was given.
    pub(crate) fn is_empty(&self) -> bool {
        self.prompts.is_empty()
            && self.resources.is_empty()
            && self.prompt_completions.is_empty()
            && self.resource_completions.is_empty()
    }

    /// `tools` answering these too, on `event_loop`.
    pub(crate) fn add_to(&self, tools: Tools, event_loop: &Arc<LoopBridge>) -> Tools {
        let handler = |function: &Arc<Py<PyAny>>| PyServed {
            function: function.clone(),
            event_loop: event_loop.clone(),
        };
        let tools = self
            .prompts
            .iter()
            .fold(tools, |tools, (name, f)| tools.prompt(name, handler(f)));
        let tools = self.resources.iter().fold(tools, |tools, (template, f)| {
            tools.resource(template, handler(f))
        });
        let tools = self
            .prompt_completions
            .iter()
            .fold(tools, |tools, (name, f)| {
                tools.prompt_completion(name, handler(f))
            });
        self.resource_completions
            .iter()
            .fold(tools, |tools, (template, f)| {
                tools.resource_completion(template, handler(f))
            })
    }
}

/// A Python `async def` taking a `ToolCall`, as a prompt, resource or completion handler.
struct PyServed {
    function: Arc<Py<PyAny>>,
    event_loop: Arc<LoopBridge>,
}

impl PyServed {
    /// Run the coroutine for `call`: its return value as JSON.
    async fn run(&self, call: ToolCall) -> Result<Value, HandlerError> {
        let task = call.task.clone();
        let argument =
            move |py: Python<'_>| Ok(Py::new(py, PyToolCall::new(py, call)?)?.into_any());
        match run_coroutine(&self.event_loop, &self.function, &task, argument, true).await {
            Ran::Ended(Outcome::Done(value)) => Ok(value.unwrap_or(Value::Null)),
            Ran::Ended(Outcome::Failed(text)) => Err(text.into()),
            // The log says how the turn ended; nothing more is written for it.
            Ran::Ended(Outcome::Cancelled) | Ran::TurnCancelled => Err("cancelled".into()),
            Ran::LoopGone => {
                task.cancellation().cancelled().await;
                Err("cancelled".into())
            }
        }
    }
}

// What the coroutine returned, read as the SDK reads every binding's handler results.
#[async_trait::async_trait]
impl PromptHandler for PyServed {
    async fn get(&self, call: ToolCall) -> Result<Map<String, Value>, HandlerError> {
        Ok(Map::from_value(self.run(call).await?)?)
    }
}

#[async_trait::async_trait]
impl ResourceHandler for PyServed {
    async fn read(&self, call: ToolCall) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(Vec::from_value(self.run(call).await?)?)
    }
}

#[async_trait::async_trait]
impl CompletionHandler for PyServed {
    async fn complete(&self, call: ToolCall) -> Result<Completion, HandlerError> {
        Ok(Completion::from_value(self.run(call).await?)?)
    }
}
