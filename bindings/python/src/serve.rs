//! `await agentlog.serve(bridge, listen=...)`: the SDK's HTTP router from Python.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use agentlog::ErrorKind;
use agentlog::http::mcp;
use agentlog::http::{
    Allowed, DEFAULT_MAX_CONNECTIONS, HttpConfig, base_url, router, serve_bounded,
};
use pyo3::prelude::*;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::aio::{self, OnCancel};
use crate::bridge::PyBridge;
use crate::error::err;
use crate::mcp::PyMcpBridge;

/// The servers running now, for the exit hook.
static LIVE: Mutex<Vec<CancellationToken>> = Mutex::new(Vec::new());

/// A running HTTP server: `url`, `close()`, `serve_forever()`, `async with`.
#[pyclass(frozen, module = "agentlog", name = "Server")]
#[derive(Debug)]
pub struct PyServer {
    url: String,
    mcp_url: Option<String>,
    stop: CancellationToken,
    task: Arc<tokio::sync::Mutex<Option<JoinHandle<std::io::Result<()>>>>>,
}

/// Wait for the server task (once); its error, if it failed.
async fn join(
    task: Arc<tokio::sync::Mutex<Option<JoinHandle<std::io::Result<()>>>>>,
) -> agentlog::Result<()> {
    let mut task = task.lock().await;
    let Some(handle) = task.as_mut() else {
        return Ok(());
    };
    let result = handle.await;
    *task = None;
    match result {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(agentlog::Error::new(
            ErrorKind::Unavailable,
            format!("the HTTP server failed: {e}"),
        )),
        Err(e) => Err(agentlog::Error::new(
            ErrorKind::Internal,
            format!("the HTTP server stopped: {e}"),
        )),
    }
}

#[pymethods]
impl PyServer {
    /// The base URL clients use (`http://127.0.0.1:PORT/`); the card lists its endpoint.
    #[getter]
    fn url(&self) -> &str {
        &self.url
    }

    /// The MCP route's URL (`<url>mcp`) when serving an `McpBridge`, else `None`.
    #[getter]
    fn mcp_url(&self) -> Option<&str> {
        self.mcp_url.as_deref()
    }

    /// Stop accepting, let open requests finish (up to 10 s), and return.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.stop.cancel();
        aio::spawn(py, OnCancel::Finish, join(self.task.clone()), aio::none)
    }

    /// Serve until the server stops; cancelling this (Ctrl-C under `asyncio.run`) stops it.
    fn serve_forever<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let guard = self.stop.clone().drop_guard();
        let task = self.task.clone();
        aio::spawn(
            py,
            OnCancel::Drop,
            async move {
                let result = join(task).await;
                drop(guard);
                result
            },
            aio::none,
        )
    }

    fn __aenter__(slf: Py<Self>, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        aio::spawn(py, OnCancel::Finish, async { Ok(()) }, move |_, ()| {
            Ok(slf.into_any())
        })
    }

    #[pyo3(signature = (*_exc))]
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _exc: &Bound<'py, pyo3::types::PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.close(py)
    }

    fn __repr__(&self) -> String {
        format!("Server(url={:?})", self.url)
    }
}

/// Serve `bridge` over HTTP on `listen` (port 0 picks a free port): A2A JSON-RPC, the agent
/// card (its interfaces at the bound URL, or `public_url`), /healthz, /readyz, /metrics,
/// and with `mcp` the MCP route `/mcp` beside them (as `agentlog serve --tools` merges it:
/// Host and Origin loopback or the URL's host). Every caller is anonymous, so only a
/// loopback address is served unless `allow_anonymous`. Returns once the server answers
/// and the bridge has replayed the log.
#[pyfunction]
#[pyo3(signature = (bridge, listen = "127.0.0.1:8080".to_owned(), *, public_url = None, allow_anonymous = false, max_connections = DEFAULT_MAX_CONNECTIONS, mcp = None))]
fn serve<'py>(
    py: Python<'py>,
    bridge: &PyBridge,
    listen: String,
    public_url: Option<String>,
    allow_anonymous: bool,
    max_connections: usize,
    mcp: Option<&PyMcpBridge>,
) -> PyResult<Bound<'py, PyAny>> {
    let address: SocketAddr = listen.parse().map_err(|e| {
        err(
            py,
            ErrorKind::Config,
            format!("bad listen address {listen:?} (expected IP:PORT): {e}"),
        )
    })?;
    if !address.ip().is_loopback() && !allow_anonymous {
        return Err(err(
            py,
            ErrorKind::Config,
            format!(
                "refusing to serve {address} without authentication: every caller would be anonymous and see every task; pass allow_anonymous=True to do it anyway"
            ),
        ));
    }
    let bridge = bridge.0.clone();
    let mcp = mcp.map(|m| m.0.clone());
    aio::spawn(
        py,
        OnCancel::Finish,
        async move {
            let listener = tokio::net::TcpListener::bind(address).await.map_err(|e| {
                agentlog::Error::new(
                    ErrorKind::Config,
                    format!("cannot listen on {address}: {e}"),
                )
            })?;
            let local = listener.local_addr().map_err(|e| {
                agentlog::Error::new(
                    ErrorKind::Internal,
                    format!("cannot read the listening address: {e}"),
                )
            })?;
            let base = base_url(public_url.as_deref(), local)?;
            let url = base.to_string();
            let http = HttpConfig::new()
                .interface_url(url.clone())
                .allowed(Allowed::for_base_url(&base));
            let stop = CancellationToken::new();
            let view = bridge.view().clone();
            let mut app = router(bridge, http);
            let mut mcp_url = None;
            if let Some(mcp) = mcp {
                let (with_mcp, url) = mcp::mount(app, mcp, &base)?;
                (app, mcp_url) = (with_mcp, Some(url));
            }
            let task = aio::runtime().spawn(serve_bounded(
                listener,
                app,
                max_connections,
                stop.clone().cancelled_owned(),
            ));
            view.wait_caught_up().await;
            {
                let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
                live.retain(|t| !t.is_cancelled());
                live.push(stop.clone());
            }
            Ok(PyServer {
                url,
                mcp_url,
                stop,
                task: Arc::new(tokio::sync::Mutex::new(Some(task))),
            })
        },
        |py, server| Ok(Py::new(py, server)?.into_any()),
    )
}

/// At interpreter exit: stop every server still running.
pub fn stop_all() {
    for token in std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner())) {
        token.cancel();
    }
}

/// Add the function and class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyServer>()?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(at_exit, m)?)?;
    Ok(())
}

/// The exit hook `agentlog/__init__.py` registers with `atexit`: stop servers and workers,
/// then let runtime threads finish what they were doing with the interpreter released.
#[pyfunction(name = "_at_exit")]
fn at_exit(py: Python<'_>) {
    stop_all();
    crate::worker::stop_all(py);
    py.detach(|| std::thread::sleep(std::time::Duration::from_millis(50)));
}
