//! The OpenTelemetry export of the spans the SDK makes in this process (a worker's turns, the
//! requests a served bridge answers, their log appends), started at import when the standard
//! `OTEL_*` variables ask for it: `agentlog::telemetry::export`, the rules and the exporter of
//! the `agentlog` command. Flushed by the exit hook (`_at_exit`).

use std::sync::Mutex;

use agentlog::telemetry::export::Export;
use pyo3::exceptions::PyRuntimeWarning;
use pyo3::prelude::*;

/// The export started at import, until the exit hook flushes it.
static EXPORT: Mutex<Option<Export>> = Mutex::new(None);

/// Start exporting if the environment asks. An environment asking for what this build cannot
/// do (another exporter or protocol) is a `RuntimeWarning`, not a failed import: the program
/// runs, untraced.
pub fn start(py: Python<'_>) -> PyResult<()> {
    match Export::from_env("python") {
        Ok(export) if export.is_exporting() => {
            *EXPORT.lock().unwrap_or_else(|e| e.into_inner()) = Some(export);
            Ok(())
        }
        Ok(_) => Ok(()),
        Err(error) => {
            let message = std::ffi::CString::new(format!(
                "agentlog: not exporting traces: {}",
                error.report()
            ))
            .unwrap_or_default();
            PyErr::warn(py, &py.get_type::<PyRuntimeWarning>(), &message, 1)
        }
    }
}

/// Send the spans not sent yet (the exit hook, once the workers and servers stopped).
pub fn finish(py: Python<'_>) {
    let export = EXPORT.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(export) = export {
        // A collector that cannot be reached costs the exporter's timeout, not the GIL.
        let _ = py.detach(|| export.finish());
    }
}
