//! `agentlog._agentlog`: the Python binding of the agentlog crate.
//!
//! Binding glue only: converting values ([`json`]), mapping errors ([`error`]) and bridging
//! tokio and asyncio ([`aio`]). What anything means lives in the `agentlog` crate; a method
//! here calls one SDK function. `skills/bindings/SKILL.md` has the rules.

/// Rust's allocations in the module (Python keeps its own): glibc's malloc under load spends
/// its time in arena locks (`tests/benches/README.md`, the allocator notes).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod aio;
mod bridge;
mod context;
mod duration;
mod error;
mod json;
mod mcp;
mod push;
mod serve;
mod served;
mod skills;
mod telemetry;
mod tools;
mod turn;
mod wire;
mod worker;

use agentlog::log::Log;
use pyo3::prelude::*;

/// A caller: the principal and tenant a call is made as (anonymous by default), as the
/// HTTP edge would set them from a verified token.
#[pyclass(frozen, module = "agentlog", name = "Caller")]
#[derive(Debug, Clone)]
pub struct PyCaller(pub agentlog::Caller);

#[pymethods]
impl PyCaller {
    #[new]
    #[pyo3(signature = (principal = String::new(), tenant = String::new()))]
    fn new(principal: String, tenant: String) -> Self {
        Self(agentlog::Caller { principal, tenant })
    }

    /// Who (empty: anonymous).
    #[getter]
    fn principal(&self) -> &str {
        &self.0.principal
    }

    /// Which tenant (empty: the default one).
    #[getter]
    fn tenant(&self) -> &str {
        &self.0.tenant
    }

    fn __repr__(&self) -> String {
        format!(
            "Caller(principal={:?}, tenant={:?})",
            self.0.principal, self.0.tenant
        )
    }
}

/// The caller of a call: the one given, else the anonymous caller.
pub fn caller_of(caller: Option<&PyCaller>) -> agentlog::Caller {
    caller.map(|c| c.0.clone()).unwrap_or_default()
}

/// An open log (`await agentlog.open_log(url)`): the embedded log or Apache Iggy.
#[pyclass(frozen, module = "agentlog", name = "Log")]
#[derive(Debug, Clone)]
pub struct PyLog(pub Log);

#[pymethods]
impl PyLog {
    /// Close the log: flush and release it (an embedded directory can then be opened again).
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let log = self.0.clone();
        aio::spawn(
            py,
            aio::OnCancel::Finish,
            async move { log.close().await },
            aio::none,
        )
    }

    fn __repr__(&self) -> String {
        "Log(...)".to_owned()
    }
}

/// Open the log a URL names: `file:///dir`, `memory://`, `iggy://user:pass@host:port`, with
/// the options of `docs/operations.md`, "Log URLs" (`?retention=7d`, `?fsync=always`, ...).
#[pyfunction]
fn open_log(py: Python<'_>, url: String) -> PyResult<Bound<'_, PyAny>> {
    aio::spawn(
        py,
        aio::OnCancel::Finish,
        async move { agentlog::log::open(&url).await },
        |py, log| Ok(Py::new(py, PyLog(log))?.into_any()),
    )
}

#[pymodule]
fn _agentlog(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    error::register(m)?;
    m.add_class::<PyCaller>()?;
    m.add_class::<PyLog>()?;
    m.add_function(wrap_pyfunction!(open_log, m)?)?;
    bridge::register(m)?;
    mcp::register(m)?;
    worker::register(m)?;
    serve::register(m)?;
    push::register(m)?;
    m.add_submodule(&wire::module(py)?)?;
    telemetry::start(py)?;
    Ok(())
}
