//! Plain Python data <-> JSON: dicts, lists, str, int, float, bool and None are the A2A 1.0
//! JSON values they look like. Every value crossing the binding goes through these two
//! functions; what a value means is the SDK's business (`agentlog::bridge::json`).

use agentlog::ErrorKind;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use crate::error::err;

/// How deep a value may nest: deeper is refused rather than overflowing the stack.
const MAX_DEPTH: usize = 128;

/// A Python value as JSON; `what` names it in the error (`params`, `card`, ...).
pub fn to_json(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    convert(value, what, 0)
}

fn convert(value: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Value> {
    let py = value.py();
    if depth > MAX_DEPTH {
        return Err(err(
            py,
            ErrorKind::InvalidParams,
            format!("{what}: nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    if value.is_none() {
        return Ok(Value::Null);
    }
    // bool before int: Python's bool is an int.
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if value.is_instance_of::<PyInt>() {
        if let Ok(n) = value.extract::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        if let Ok(n) = value.extract::<u64>() {
            return Ok(Value::Number(n.into()));
        }
        return Err(err(
            py,
            ErrorKind::InvalidParams,
            format!("{what}: the integer {value} does not fit in 64 bits"),
        ));
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| {
                err(
                    py,
                    ErrorKind::InvalidParams,
                    format!("{what}: {value} is not a JSON number"),
                )
            });
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, item) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(err(
                    py,
                    ErrorKind::InvalidParams,
                    format!("{what}: a dict key is not a str ({key:?})"),
                ));
            };
            map.insert(key.to_str()?.to_owned(), convert(&item, what, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = value.cast::<PyList>() {
        return list
            .iter()
            .map(|item| convert(&item, what, depth + 1))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return tuple
            .iter()
            .map(|item| convert(&item, what, depth + 1))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    let type_name = value
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string());
    Err(err(
        py,
        ErrorKind::InvalidParams,
        format!(
            "{what}: a {type_name} is not JSON data (dict, list, str, int, float, bool or None)"
        ),
    ))
}

/// JSON as plain Python data.
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// A serializable Rust value as plain Python data.
pub fn serialize_to_py<'py, T: serde::Serialize + ?Sized>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value).map_err(|e| {
        err(
            py,
            ErrorKind::Internal,
            format!("cannot encode a result as JSON: {e}"),
        )
    })?;
    to_py(py, &json)
}
