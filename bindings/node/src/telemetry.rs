//! The OpenTelemetry export of the spans the SDK makes in this process (a worker's turns, the
//! requests a served bridge answers, their log appends), started when the addon loads if the
//! standard `OTEL_*` variables ask for it: `agentlog::telemetry::export`, the rules and the
//! exporter of the `agentlog` command. `index.js` starts it and flushes it on `exit`.

use std::sync::Mutex;

use agentlog::telemetry::export::Export;
use napi_derive::napi;

/// The export started at load, until the exit hook flushes it.
static EXPORT: Mutex<Option<Export>> = Mutex::new(None);

/// What starting the export did.
#[napi(object)]
pub struct TelemetryStart {
    /// Spans are exported: flush them at exit (`_finishTelemetry`).
    pub exporting: bool,
    /// The environment asked for what this build cannot do (another exporter or protocol):
    /// why, for a process warning; nothing is exported.
    pub warning: Option<String>,
}

/// Start exporting if the environment asks (index.js, once, at load).
#[napi(js_name = "_startTelemetry")]
pub fn start_telemetry() -> TelemetryStart {
    match Export::from_env("node") {
        Ok(export) => {
            let exporting = export.is_exporting();
            if exporting {
                *EXPORT.lock().unwrap_or_else(|e| e.into_inner()) = Some(export);
            }
            TelemetryStart {
                exporting,
                warning: None,
            }
        }
        Err(error) => TelemetryStart {
            exporting: false,
            warning: Some(format!(
                "agentlog: not exporting traces: {}",
                error.report()
            )),
        },
    }
}

/// Send the spans not sent yet (index.js, on the process's `exit`). Blocking, as an exit
/// hook must be.
#[napi(js_name = "_finishTelemetry")]
pub fn finish_telemetry() {
    let export = EXPORT.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(export) = export {
        let _ = export.finish();
    }
}
