//! `await agentlog.serve(bridge, listen=...)`: the SDK's HTTP router from Python, and with
//! `grpc_listen` its gRPC binding on a listener of its own.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use agentlog::ErrorKind;
use agentlog::grpc::{self, GrpcConfig};
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

/// The task serving HTTP (and gRPC), once: its outcome is taken by the first `join`.
type ServerTask = Arc<tokio::sync::Mutex<Option<JoinHandle<agentlog::Result<()>>>>>;

/// A running server: `url`, `grpc_url`, `close()`, `serve_forever()`, `async with`.
#[pyclass(frozen, module = "agentlog", name = "Server")]
#[derive(Debug)]
pub struct PyServer {
    url: String,
    mcp_url: Option<String>,
    grpc_url: Option<String>,
    stop: CancellationToken,
    task: ServerTask,
}

/// Wait for the server task (once); its error, if it failed.
async fn join(task: ServerTask) -> agentlog::Result<()> {
    let mut task = task.lock().await;
    let Some(handle) = task.as_mut() else {
        return Ok(());
    };
    let result = handle.await;
    *task = None;
    result.unwrap_or_else(|e| {
        Err(agentlog::Error::new(
            ErrorKind::Internal,
            format!("the server stopped: {e}"),
        ))
    })
}

/// Bind `address` for `what` (`listen`, `grpc_listen`): the listener and its local address.
async fn bind(
    address: SocketAddr,
    what: &str,
) -> agentlog::Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(address).await.map_err(|e| {
        agentlog::Error::new(
            ErrorKind::Config,
            format!("cannot listen on {address} ({what}): {e}"),
        )
    })?;
    let local = listener.local_addr().map_err(|e| {
        agentlog::Error::new(
            ErrorKind::Internal,
            format!("cannot read the listening address: {e}"),
        )
    })?;
    Ok((listener, local))
}

/// `listen` as an address, served only on loopback unless `allow_anonymous`.
fn address_of(
    py: Python<'_>,
    listen: &str,
    what: &str,
    allow_anonymous: bool,
) -> PyResult<SocketAddr> {
    let address: SocketAddr = listen.parse().map_err(|e| {
        err(
            py,
            ErrorKind::Config,
            format!("bad {what} address {listen:?} (expected IP:PORT): {e}"),
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
    Ok(address)
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

    /// The gRPC binding's address (`host:port`, as the card lists it) when serving it, else
    /// `None`.
    #[getter]
    fn grpc_url(&self) -> Option<&str> {
        self.grpc_url.as_deref()
    }

    /// Stop accepting (HTTP and gRPC), let open requests finish (up to 10 s), and return.
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
        match &self.grpc_url {
            Some(grpc) => format!("Server(url={:?}, grpc_url={grpc:?})", self.url),
            None => format!("Server(url={:?})", self.url),
        }
    }
}

/// Serve `bridge` over HTTP on `listen` (port 0 picks a free port): A2A JSON-RPC and
/// HTTP+JSON, the agent card (its interfaces at the bound URL, or `public_url`), /healthz,
/// /readyz, /metrics, and with `mcp` the MCP route `/mcp` beside them (as `agentlog serve
/// --tools` merges it: Host and Origin loopback or the URL's host). With `grpc_listen`, A2A's
/// gRPC binding too, on that address (as `agentlog serve --grpc-listen`: the card lists it
/// last, `host:port` with the public URL's host). Every caller is anonymous, so only loopback
/// addresses are served unless `allow_anonymous`. Returns once the server answers and the
/// bridge has replayed the log.
#[pyfunction]
#[pyo3(signature = (bridge, listen = "127.0.0.1:8080".to_owned(), *, public_url = None, allow_anonymous = false, max_connections = DEFAULT_MAX_CONNECTIONS, mcp = None, grpc_listen = None))]
#[allow(clippy::too_many_arguments)]
fn serve<'py>(
    py: Python<'py>,
    bridge: &PyBridge,
    listen: String,
    public_url: Option<String>,
    allow_anonymous: bool,
    max_connections: usize,
    mcp: Option<&PyMcpBridge>,
    grpc_listen: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let address = address_of(py, &listen, "listen", allow_anonymous)?;
    let grpc_address = grpc_listen
        .map(|g| address_of(py, &g, "grpc_listen", allow_anonymous))
        .transpose()?;
    let bridge = bridge.0.clone();
    let mcp = mcp.map(|m| m.0.clone());
    aio::spawn(
        py,
        OnCancel::Finish,
        async move {
            // Both bound before anything serves: a taken port fails the call, not the server.
            let (listener, local) = bind(address, "listen").await?;
            let grpc_bound = match grpc_address {
                Some(address) => Some(bind(address, "grpc_listen").await?),
                None => None,
            };
            let base = base_url(public_url.as_deref(), local)?;
            let url = base.to_string();
            let grpc_interface = grpc_bound
                .as_ref()
                .map(|(_, local)| grpc::card_interface(&base, *local));
            let grpc_url = grpc_interface.as_ref().map(|i| i.url.clone());
            let http = HttpConfig::new()
                .interface_url(url.clone())
                .extra_interfaces(grpc_interface.into_iter().collect())
                .allowed(Allowed::for_base_url(&base));
            let stop = CancellationToken::new();
            let view = bridge.view().clone();
            let grpc_server = grpc_bound.map(|(listener, _)| {
                grpc::serve(
                    listener,
                    bridge.clone(),
                    GrpcConfig::new(),
                    stop.clone().cancelled_owned(),
                )
            });
            let mut app = router(bridge, http);
            let mut mcp_url = None;
            if let Some(mcp) = mcp {
                let (with_mcp, url) = mcp::mount(app, mcp, &base)?;
                (app, mcp_url) = (with_mcp, Some(url));
            }
            let http_server = serve_bounded(
                listener,
                app,
                max_connections,
                stop.clone().cancelled_owned(),
            );
            let task = aio::runtime().spawn(async move {
                let http = async {
                    http_server.await.map_err(|e| {
                        agentlog::Error::new(
                            ErrorKind::Unavailable,
                            format!("the HTTP server failed: {e}"),
                        )
                    })
                };
                let grpc = async {
                    match grpc_server {
                        Some(server) => server.await,
                        None => Ok(()),
                    }
                };
                let (http, grpc) = tokio::join!(http, grpc);
                http.and(grpc)
            });
            view.wait_caught_up().await;
            {
                let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
                live.retain(|t| !t.is_cancelled());
                live.push(stop.clone());
            }
            Ok(PyServer {
                url,
                mcp_url,
                grpc_url,
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
    crate::telemetry::finish(py);
}
