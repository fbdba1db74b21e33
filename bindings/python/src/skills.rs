//! The `skills=` argument of `agentlog.Worker`, read into Rust values: each skill's id and
//! `async def` handler. Type checks and conversion only; the routing is the SDK's
//! `worker::Skills`.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::aio::is_coroutine_function;

/// The skill handlers of `skills=`: a dict of skill id → coroutine function taking a
/// `TaskContext`.
pub(crate) fn skill_functions(
    skills: &Bound<'_, PyAny>,
) -> PyResult<Vec<(String, Arc<Py<PyAny>>)>> {
    let skills = skills.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "skills must be a dict of skill id -> `async def` taking a TaskContext, got {}",
            skills
                .get_type()
                .name()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string())
        ))
    })?;
    let mut functions = Vec::with_capacity(skills.len());
    for (id, function) in skills.iter() {
        let id: String = id.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "a skill id must be a str, got {}",
                id.repr().map_or_else(|_| "?".to_owned(), |r| r.to_string())
            ))
        })?;
        if !is_coroutine_function(&function)? {
            return Err(PyTypeError::new_err(format!(
                "the handler of skill {id:?} must be an `async def` function taking a TaskContext, got {}",
                function.repr()?
            )));
        }
        functions.push((id, Arc::new(function.unbind())));
    }
    Ok(functions)
}
