//! The one mapping of `agentlog::Error` onto Python exceptions.
//!
//! `agentlog.Error` is the root; each [`ErrorKind`] has a subclass (`TaskNotFoundError`, ...)
//! made at import from [`ErrorKind::ALL`] and [`ErrorKind::info`], the table every surface
//! reads, so a new kind appears here without an edit. Each class carries, as class
//! attributes, `kind` (the stable snake_case name), `code` (the JSON-RPC code) and
//! `retryable`; each instance has `details` (the facts the error names, such as `taskId`).

use agentlog::{Error, ErrorKind};
use agentlog_wire::WireError;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

pyo3::create_exception!(
    agentlog,
    AgentlogError,
    PyException,
    "The root of every agentlog error: `kind` (stable snake_case name), `code` (JSON-RPC code), `retryable`, `details`."
);

/// The subclass of each kind, in [`ErrorKind::ALL`] order, and the wire crate's error.
struct Classes {
    kinds: Vec<(ErrorKind, Py<PyType>)>,
    wire: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

/// The Python class name of a kind: its name in CamelCase plus `Error`. `timeout` is
/// `DeadlineExceededError`, so that it does not shadow the builtin `TimeoutError`.
pub fn class_name(kind: ErrorKind) -> String {
    if kind == ErrorKind::Timeout {
        return "DeadlineExceededError".to_owned();
    }
    let mut name: String = kind
        .as_str()
        .split('_')
        .map(|word| {
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect();
    name.push_str("Error");
    name
}

fn new_class<'py>(
    py: Python<'py>,
    name: &str,
    doc: &str,
    base: &Bound<'py, PyType>,
    kind: &str,
    code: i32,
    retryable: bool,
) -> PyResult<Bound<'py, PyType>> {
    let attributes = PyDict::new(py);
    attributes.set_item("kind", kind)?;
    attributes.set_item("code", code)?;
    attributes.set_item("retryable", retryable)?;
    attributes.set_item("__module__", "agentlog")?;
    attributes.set_item("__doc__", doc)?;
    let class = py
        .get_type::<PyType>()
        .call1((name, (base,), attributes))?
        .cast_into::<PyType>()?;
    Ok(class)
}

/// Make the classes and add them to `module` (called once, at import).
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let base = py.get_type::<AgentlogError>();
    // The root's defaults: an error raised without a kind is an internal one.
    let internal = ErrorKind::Internal.info();
    base.setattr("kind", internal.name)?;
    base.setattr("code", internal.rpc.code())?;
    base.setattr("retryable", internal.retryable)?;
    module.add("Error", &base)?;
    let mut kinds = Vec::with_capacity(ErrorKind::ALL.len());
    for kind in ErrorKind::ALL {
        let info = kind.info();
        let name = class_name(kind);
        let doc = format!(
            "agentlog error of kind `{}` (JSON-RPC code {}{}).",
            info.name,
            info.rpc.code(),
            if info.retryable { ", retryable" } else { "" }
        );
        let class = new_class(
            py,
            &name,
            &doc,
            &base,
            info.name,
            info.rpc.code(),
            info.retryable,
        )?;
        module.add(name.as_str(), &class)?;
        kinds.push((kind, class.unbind()));
    }
    // A contract violation found by `agentlog.wire` (bad bytes, bad JSON): its `kind` is the
    // wire crate's (`truncated`, `invalid_json`, ...); reported as invalid params, as the
    // bridge reports bad input.
    let invalid = ErrorKind::InvalidParams.info();
    let wire = new_class(
        py,
        "WireError",
        "A record, JSON value or header that breaks the agentlog contract; `kind` names how (`truncated`, `invalid_json`, ...).",
        &base,
        "invalid_params",
        invalid.rpc.code(),
        false,
    )?;
    module.add("WireError", &wire)?;
    let classes = Classes {
        kinds,
        wire: wire.unbind(),
    };
    // A second import of the module in one process (a sub-interpreter) keeps the first set.
    let _ = CLASSES.set(py, classes);
    Ok(())
}

fn raise(class: &Bound<'_, PyType>, message: &str, details: &[(&str, String)]) -> PyErr {
    let py = class.py();
    let made = class.call1((message,)).and_then(|instance| {
        let map = PyDict::new(py);
        for (key, value) in details {
            map.set_item(key, value)?;
        }
        instance.setattr("details", map)?;
        Ok(instance)
    });
    match made {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}

/// The Python exception for `error`: its kind's class, with its message and details.
pub fn to_py_err(py: Python<'_>, error: Error) -> PyErr {
    let Some(classes) = CLASSES.get(py) else {
        return AgentlogError::new_err(error.report().to_string());
    };
    let class = classes
        .kinds
        .iter()
        .find(|(kind, _)| *kind == error.kind())
        .map_or_else(
            || py.get_type::<AgentlogError>(),
            |(_, class)| class.bind(py).clone(),
        );
    raise(&class, &error.report().to_string(), error.details())
}

/// The Python exception for a wire error: `WireError` with the wire crate's kind.
pub fn wire_err(py: Python<'_>, error: &WireError) -> PyErr {
    wire_kind(py, error.kind(), &error.to_string())
}

/// A `WireError` of the wire crate's `kind` for a problem found around a wire call (a name
/// that is no state, a record JSON that does not read).
pub fn wire_kind(py: Python<'_>, kind: &str, message: &str) -> PyErr {
    let Some(classes) = CLASSES.get(py) else {
        return AgentlogError::new_err(message.to_owned());
    };
    let err = raise(classes.wire.bind(py), message, &[]);
    if let Err(e) = err.value(py).setattr("kind", kind) {
        return e;
    }
    err
}

/// An `agentlog.Error` of `kind` for a problem the binding itself finds (a bad argument).
pub fn err(py: Python<'_>, kind: ErrorKind, message: impl Into<String>) -> PyErr {
    to_py_err(py, Error::new(kind, message))
}
