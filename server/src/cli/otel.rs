//! OpenTelemetry export of `serve`, `worker`, `pusher` and the client commands (`send`,
//! `get`, `cancel`, `list`): the library's spans sent over OTLP/HTTP when the standard
//! variables ask for it (`agentlog::telemetry::export`, which has the rules; the bindings
//! start the same).

use agentlog::telemetry::export::Export;

use super::{CliError, CliResult};

/// Start exporting if the environment asks for it; `command` names the subcommand (the
/// `agentlog.command` resource attribute).
pub(super) fn start(command: &'static str) -> CliResult<Export> {
    let export = Export::from_env(command).map_err(CliError::from)?;
    // A server says so; a client command (`send`) keeps its stderr for what it was asked.
    if export.is_exporting() && matches!(command, "serve" | "worker" | "pusher") {
        tracing::info!(target: "agentlog::cli", command, "exporting OpenTelemetry traces over OTLP/HTTP");
    }
    Ok(export)
}

/// Send what is left and stop (blocking: call it outside the runtime).
pub(super) fn finish(export: Export) {
    if let Err(error) = export.finish() {
        tracing::warn!(target: "agentlog::cli", error = %error.report(), "could not export the last spans");
    }
}
