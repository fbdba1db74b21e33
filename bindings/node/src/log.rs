//! `openLog(url)` and the `Log` handle.

use napi_derive::napi;

use crate::error::OrThrow;

/// A handle to a log (`file://`, `memory://`, `iggy://`): what bridges and workers run on.
/// Cheap to share: every bridge and worker given the same `Log` uses the same backend.
#[napi]
#[derive(Debug)]
pub struct Log {
    pub(crate) inner: agentlog::log::Log,
    url: String,
}

#[napi]
impl Log {
    /// The URL it was opened with, a password in it masked.
    #[napi(getter)]
    pub fn url(&self) -> String {
        agentlog::log::redacted(&self.url)
    }

    /// How long finished tasks created through this log are kept, in milliseconds (the URL's
    /// `retention=`; 0 = forever), or `null` when the URL does not say (7 days then).
    #[napi(getter)]
    pub fn retention_ms(&self) -> Option<f64> {
        self.inner.retention().map(|d| d.as_millis() as f64)
    }

    /// Close the log: flush and release it (a `file://` directory can then be opened again).
    /// Bridges and workers over it fail from then on.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.inner.close().await.or_throw()
    }
}

/// Open the log at `url`: `file:///path` (durable, embedded), `memory://` (in memory),
/// `iggy://user:pass@host:port` (Apache Iggy). A bad URL rejects with `config`, the message
/// listing what is accepted.
#[napi]
pub async fn open_log(url: String) -> napi::Result<Log> {
    let inner = agentlog::log::open(&url).await.or_throw()?;
    Ok(Log { inner, url })
}
