//! The `tools=` and `input_timeout=` arguments of `agentlog.Worker`, read into Rust values:
//! each tool's name and `async def` handler, and how long each tool's asks wait. Type checks
//! and conversion only; the dispatching is the SDK's `worker::Tools`.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::aio::is_coroutine_function;
use crate::duration::seconds;

/// The tool handlers of `tools=`: a dict of tool name → coroutine function.
pub(crate) fn tool_functions(tools: &Bound<'_, PyAny>) -> PyResult<Vec<(String, Arc<Py<PyAny>>)>> {
    let tools = tools.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "tools must be a dict of tool name -> `async def` taking a ToolCall, got {}",
            tools
                .get_type()
                .name()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string())
        ))
    })?;
    if tools.is_empty() {
        return Err(PyTypeError::new_err("tools must name at least one tool"));
    }
    let mut functions = Vec::with_capacity(tools.len());
    for (name, function) in tools.iter() {
        let name: String = name.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "a tool name must be a str, got {}",
                name.repr()
                    .map_or_else(|_| "?".to_owned(), |r| r.to_string())
            ))
        })?;
        if !is_coroutine_function(&function)? {
            return Err(PyTypeError::new_err(format!(
                "the handler of tool {name:?} must be an `async def` function taking a ToolCall, got {}",
                function.repr()?
            )));
        }
        functions.push((name, Arc::new(function.unbind())));
    }
    Ok(functions)
}

/// The input timeouts of `input_timeout=`: seconds for each tool of `tools`, or a dict of
/// tool name → seconds (each a tool of `tools`: another name is a typo that would keep the
/// default silently).
pub(crate) fn input_timeouts(
    timeout: &Bound<'_, PyAny>,
    tools: &[(String, Arc<Py<PyAny>>)],
) -> PyResult<Vec<(String, Duration)>> {
    let secs_of = |value: &Bound<'_, PyAny>| -> PyResult<Duration> {
        let secs: f64 = value.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "input_timeout must be seconds or a dict of tool name -> seconds, got {}",
                value
                    .repr()
                    .map_or_else(|_| "?".to_owned(), |r| r.to_string())
            ))
        })?;
        seconds("input_timeout", secs)
    };
    let Ok(per_tool) = timeout.cast::<PyDict>() else {
        let timeout = secs_of(timeout)?;
        return Ok(tools
            .iter()
            .map(|(name, _)| (name.clone(), timeout))
            .collect());
    };
    let mut timeouts = Vec::with_capacity(per_tool.len());
    for (name, secs) in per_tool.iter() {
        let name: String = name.extract()?;
        if !tools.iter().any(|(served, _)| *served == name) {
            return Err(PyTypeError::new_err(format!(
                "input_timeout names tool {name:?}, which tools= does not have"
            )));
        }
        timeouts.push((name, secs_of(&secs)?));
    }
    Ok(timeouts)
}
