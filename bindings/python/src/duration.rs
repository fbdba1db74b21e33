//! Seconds from Python, as a `Duration`: a negative or non-finite number is refused.

use std::time::Duration;

use agentlog::ErrorKind;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::error::err;

/// `secs`, the value of the duration argument `name`, as a `Duration`.
pub(crate) fn seconds(name: &str, secs: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(secs)
        .map_err(|_| PyTypeError::new_err(format!("{name} must be >= 0 seconds, got {secs}")))
}

/// An optional setting in seconds; a bad one is `agentlog.InvalidParamsError`.
pub(crate) fn optional_seconds(
    py: Python<'_>,
    value: Option<f64>,
    what: &str,
) -> PyResult<Option<Duration>> {
    value
        .map(|s| {
            Duration::try_from_secs_f64(s).map_err(|_| {
                err(
                    py,
                    ErrorKind::InvalidParams,
                    format!("{what} must be a number of seconds >= 0, got {s}"),
                )
            })
        })
        .transpose()
}
